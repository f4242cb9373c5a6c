//! A stored thumbnail as an answer: the image with its type, under the headers of
//! untrusted content (`documents::untrusted`).

use axum::http::{HeaderValue, header};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::queries;
use crate::documents::untrusted;
use crate::error::{Error, Result};
use crate::state::AppState;

/// The image with its type; 404 when the API has none.
pub(super) async fn thumbnail(state: &AppState, api_id: &str) -> Result<Response> {
    let Some(row) = queries::find(&state.db, api_id).await? else {
        return Err(Error::NotFoundWhy(format!(
            "The API {api_id} has no thumbnail"
        )));
    };
    let bytes = STANDARD
        .decode(&row.image)
        .map_err(|e| anyhow::anyhow!("stored thumbnail of API {api_id}: {e}"))?;
    let media_type = HeaderValue::from_str(&row.media_type)
        .map_err(|e| anyhow::anyhow!("stored thumbnail type of API {api_id}: {e}"))?;
    Ok(untrusted(([(header::CONTENT_TYPE, media_type)], bytes)))
}
