//! An API's thumbnail (WSO2 v0.14): what an image may be (`image`), its row and queries
//! (`queries`), the stored image as an answer (`answer`), the publisher's and the store's resources
//! (`publisher`, `store_api`).

mod answer;
mod image;
pub(crate) mod publisher;
mod queries;
pub(crate) mod store_api;

pub use image::image_type;
pub use queries::{
    ThumbnailRow, copy_thumbnail_to_version, delete_of as delete_thumbnail, find as find_thumbnail,
    put as put_thumbnail,
};
