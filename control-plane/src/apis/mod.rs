//! Published APIs: the record and its row (`records`), its rules (`rules`, `claim`,
//! `lifecycle`), its queries (`queries`, `routes` for the route owners), the search
//! language (`search`), and the publisher's and the store's resources (`handlers`,
//! `store_handlers`, `tags`).

mod checks;
mod claim;
mod copy;
mod handlers;
pub mod lifecycle;
mod queries;
mod records;
pub mod routes;
mod rules;
mod search;
mod store_handlers;
mod store_swagger;
mod tags;

pub use checks::tenant_api;
pub use handlers::{BASE as PUBLISHER, router as publisher_router};
pub use queries::{
    all_rows, find, records_with_password, replace_record, revisions, rows_of, tenant_apis,
};
pub use records::{
    API_COLUMNS, ApiRecord, ApiRow, BusinessInformation, CorsConfiguration, DEFAULT_CACHE_TIMEOUT,
    EndpointSecurity, MASKED_PASSWORD, MaxTps, Sequence, StoredApi,
};
pub use rules::{
    AUTH_TYPES, EndpointPolicy, METHODS, check_context_length, check_tenant_context,
    normalise_context, validate_endpoint_config, validate_swagger,
};
pub use store_handlers::{Viewer, router as store_router, visible_api, visible_apis};
pub use tags::router as tags_router;
