//! An API's thumbnail (WSO2 v0.14): what an image may be (`image`), its row and queries
//! (`store`), the publisher's and the store's resources (`handlers`).

mod handlers;
mod image;
mod store;

pub use handlers::router;
