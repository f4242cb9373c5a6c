//! An API's thumbnail (WSO2 v0.14): what an image may be (`image`), its row and queries
//! (`queries`), the publisher's and the store's resources (`handlers`).

pub(crate) mod handlers;
mod image;
mod queries;
