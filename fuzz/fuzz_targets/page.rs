//! Manifest pages as a gateway receives them: a signed page (JWS) verified, and a page's
//! JSON with its entries read as the gateway reads them. Nothing may panic.
#![no_main]

use apim_manifest::{ApiRoute, Meta, Page};
use libfuzzer_sys::fuzz_target;

/// Any Ed25519 public key (base64url): verification must fail cleanly on garbage.
const KEY: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = gateway::sync::verify(text, KEY);
    }
    if let Ok(page) = serde_json::from_slice::<Page>(data) {
        for change in page.changes {
            if let Some(value) = change.value {
                let _ = serde_json::from_str::<ApiRoute>(value.get());
                let _ = serde_json::from_str::<Meta>(value.get());
            }
        }
    }
});
