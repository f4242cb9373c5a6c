//! Swagger 2.0 definitions as the publisher validates them: no document panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = control_plane::apis::validate_swagger(text);
    }
});
