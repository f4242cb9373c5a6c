//! A document of an API (WSO2's `Document`) and the `api_documents` row that holds it.

use serde::{Deserialize, Serialize};

/// WSO2's document types.
pub const DOCUMENT_TYPES: &[&str] = &[
    "HOWTO",
    "SAMPLES",
    "PUBLIC_FORUM",
    "SUPPORT_FORUM",
    "API_MESSAGE_FORMAT",
    "SWAGGER_DOC",
    "OTHER",
];

/// Where a document's content is: typed in (`INLINE`, `MARKDOWN`: WSO2 2.6's publisher
/// writes Markdown documents, which the v0.14 swagger does not list yet), at a URL, or
/// an uploaded file.
pub const SOURCE_TYPES: &[&str] = &["INLINE", "MARKDOWN", "URL", "FILE"];

/// Who sees a document. The store shows `API_LEVEL` documents (to whoever sees the API);
/// `PRIVATE` and `OWNER_ONLY` ones stay in the publisher.
pub const VISIBILITIES: &[&str] = &["OWNER_ONLY", "PRIVATE", "API_LEVEL"];

/// The visibility the store shows.
pub const STORE_VISIBILITY: &str = "API_LEVEL";

/// WSO2's `Document`, as sent and as answered (absent members answered as null, as
/// WSO2 does).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Document {
    pub document_id: Option<String>,
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub doc_type: Option<String>,
    pub summary: Option<String>,
    pub source_type: Option<String>,
    pub source_url: Option<String>,
    pub other_type_name: Option<String>,
    pub visibility: Option<String>,
}

/// A row of `api_documents` without its content (read apart, as it may be large).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DocumentRow {
    pub id: String,
    pub api_id: String,
    pub name: String,
    pub doc_type: String,
    pub other_type_name: Option<String>,
    pub summary: Option<String>,
    pub source_type: String,
    pub source_url: Option<String>,
    pub visibility: String,
    pub file_name: Option<String>,
    pub media_type: Option<String>,
}

/// The columns of [`DocumentRow`], in its order.
pub const DOCUMENT_COLUMNS: &str = "id, api_id, name, doc_type, other_type_name, summary, \
     source_type, source_url, visibility, file_name, media_type";

impl DocumentRow {
    /// Whether its content is text typed in (`INLINE` or `MARKDOWN`).
    pub fn is_inline(&self) -> bool {
        matches!(self.source_type.as_str(), "INLINE" | "MARKDOWN")
    }
}

impl From<DocumentRow> for Document {
    fn from(row: DocumentRow) -> Self {
        Document {
            document_id: Some(row.id),
            name: Some(row.name),
            doc_type: Some(row.doc_type),
            summary: row.summary,
            source_type: Some(row.source_type),
            source_url: row.source_url,
            other_type_name: row.other_type_name,
            visibility: Some(row.visibility),
        }
    }
}
