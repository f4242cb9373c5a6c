//! A tool's input schema and a call's arguments, both as a hostile manifest page and a
//! hostile caller could make them: the schema read and the arguments checked. Nothing may
//! panic, loop or recurse without bound.
#![no_main]

use gateway::input_schema::InputSchema;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first line is the schema, the rest the instance.
    let text = String::from_utf8_lossy(data);
    let (schema, instance) = text.split_once('\n').unwrap_or((&text, "null"));
    let Ok(schema) = InputSchema::parse(schema) else {
        return;
    };
    if let Ok(instance) = serde_json::from_str::<serde_json::Value>(instance) {
        let _ = schema.check(&instance);
    }
});
