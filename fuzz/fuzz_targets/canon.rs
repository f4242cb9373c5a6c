//! The request-target canonicaliser and the template matcher: no input panics, canonical
//! targets are fixed points and carry nothing a backend could read two ways.
#![no_main]

use apim_manifest::canon::{Target, canonical_path};
use apim_manifest::{compile_template, matches};
use libfuzzer_sys::fuzz_target;

const TEMPLATES: [&str; 5] = ["/devs/{username}", "/devs/admin", "/files/*", "/{a}/{b}", "/"];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(target) = Target::parse(text) else {
        return;
    };
    assert_eq!(canonical_path(&target.path).as_ref(), Ok(&target.path));
    assert!(target.path.starts_with('/'));
    assert!(!target.path.contains(['?', '#', '\\', ';']));
    assert!(!target.path.to_ascii_lowercase().contains("%2f"));
    for segment in target.path.split('/') {
        assert!(segment != "." && segment != "..");
    }
    for template in TEMPLATES {
        let _ = matches(&compile_template(template), &target.path);
    }
});
