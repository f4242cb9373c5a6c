//! Documents of an API (WSO2 v0.14): the record and its row (`records`), its rules
//! (`rules`), its queries (`queries`), its content's upload and download (`content`), and
//! the publisher's and the store's resources (`publisher`, `store_api`).

mod content;
pub(crate) mod publisher;
mod queries;
mod records;
mod rules;
pub(crate) mod store_api;

pub use content::untrusted;
pub use records::DOCUMENT_TYPES;

pub use queries::{
    Content, all_with_content, apis_with_documents_like, copy_documents_to_version,
    delete_all_of as delete_documents, insert as insert_document, set_content,
};
pub use records::{Document, DocumentRow};
pub use rules::{MAX_FILE_BYTES, MAX_INLINE_BYTES, check as check_document, check_text};
