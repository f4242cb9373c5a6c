//! Documents of an API (WSO2 v0.14): the record and its row (`records`), its rules
//! (`rules`), its queries (`store`), its content's upload and download (`content`), and
//! the publisher's and the store's resources (`handlers`, `store_handlers`).

mod content;
mod handlers;
mod records;
mod rules;
mod store;
mod store_handlers;

pub use content::untrusted;
pub use handlers::router as publisher_router;
pub use store_handlers::router as store_router;
