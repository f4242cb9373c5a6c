//! Published APIs: the record and its row (`records`), its rules (`rules`, `claim`,
//! `lifecycle`), its queries (`queries`, `routes` for the route owners), the search
//! language (`search`), a definition read as WSO2 reads it (`swagger_json`), who sees an
//! API in the store (`visibility`), and the publisher's and the store's
//! resources (`publisher`, `publisher_copy`, `store_api`, `store_api_swagger`,
//! `store_api_tags`).

mod checks;
mod claim;
pub mod create;
pub mod lifecycle;
pub(crate) mod publisher;
pub(crate) mod publisher_copy;
pub(crate) mod queries;
pub(crate) mod records;
pub mod routes;
pub(crate) mod rules;
mod search;
pub(crate) mod store_api;
pub(crate) mod store_api_swagger;
pub(crate) mod store_api_tags;
mod swagger_json;
pub mod update;
mod visibility;

pub use checks::{check_deployable, check_deployable_with, tenant_api};
pub use queries::{
    all_rows, find, records_with_password, replace_record, revisions, rows_of, tenant_apis,
};
pub use records::{
    API_COLUMNS, ApiRecord, ApiRow, BusinessInformation, CorsConfiguration, DEFAULT_CACHE_TIMEOUT,
    EndpointSecurity, MASKED_PASSWORD, MaxTps, Sequence, StoredApi,
};
pub use rules::{
    AUTH_TYPES, EndpointPolicy, METHODS, check_context_length, check_tenant_context,
    normalise_context, swagger_operations, validate_endpoint_config, validate_swagger,
};
pub use visibility::{StoreListing, Viewer, visible_api, visible_apis};
