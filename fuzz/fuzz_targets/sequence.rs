//! Mediation sequences as the publisher compiles them for each flow: no sequence panics.
#![no_main]

use control_plane::mediation::synapse::{Flow, compile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        for flow in [Flow::In, Flow::Out, Flow::Fault] {
            let _ = compile(text, flow);
        }
    }
});
