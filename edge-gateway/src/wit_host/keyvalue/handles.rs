//! The host side of `wasi:keyvalue`'s resources, which the bindings name
//! ([`crate::wit_host::bindings`]).

use std::sync::Arc;

use crate::kv::CasSnapshot;

/// The host side of a `bucket` resource.
#[derive(Debug, Clone)]
pub struct BucketHandle {
    pub(super) name: Arc<str>,
}

/// The host side of a `cas` resource.
#[derive(Debug, Clone)]
pub struct CasHandle {
    pub(super) bucket: Arc<str>,
    pub(super) key: String,
    pub(super) snapshot: CasSnapshot,
}
