//! APIs served as MCP servers by the gateways (our extension of the publisher's API): the
//! provider's settings (`records`), what the API's operations come to as tools and what a
//! setting must be (`rules`), Swagger's schemas as the tools' JSON Schemas (`schema`),
//! the `apis.mcp` column (`queries`), the publisher's resource (`publisher`) and the
//! store's (`store_api`).

pub(crate) mod publisher;
mod queries;
pub(crate) mod records;
pub(crate) mod rules;
mod schema;
pub(crate) mod store_api;

pub use records::McpSettings;
pub use rules::ENDPOINT_PATH;
