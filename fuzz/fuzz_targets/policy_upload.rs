//! Bytes uploaded as a tenant's WebAssembly policy: the check the control plane and the
//! gateways run never panics, and whatever it takes is a component of at most the bound
//! whose digest names it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if apim_policy_world::check(data).is_ok() {
        assert!(data.len() <= apim_policy_world::MAX_POLICY_BYTES);
        assert!(apim_policy_world::is_digest(&apim_policy_world::digest(data)));
    }
});
