//! The developer facade's XML reader over whatever a SOAP service might answer.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = dev_facade::xml::parse(data);
});
