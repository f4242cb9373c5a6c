//! An API's thumbnail in the publisher: `GET`/`POST /apis/{apiId}/thumbnail`
//! (`apim:api_view`/`apim:api_create`, the caller's tenant). Uploading one changes nothing
//! gateways see, so it asks for no compile.

use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;

use super::answer::thumbnail;
use super::image::{MAX_IMAGE_BYTES, image_type};
use super::queries::{self, ThumbnailRow};
use crate::apis::tenant_api;
use crate::error::{Error, Result};
use crate::http::PUBLISHER;
use crate::http::multipart::{declared_media_type, read_form};
use crate::http::routes::{Routes, get};
use crate::manifest::Touches;
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;

pub fn router() -> Routes {
    Routes::new().route(
        &format!("{PUBLISHER}/apis/{{api_id}}/thumbnail"),
        get(publisher_thumbnail).post(upload_thumbnail),
    )
}

/// WSO2's `FileInfo`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FileInfo {
    relative_path: String,
    media_type: String,
}

/// `POST /apis/{apiId}/thumbnail`: the form field `file`, a PNG, JPEG or GIF image of at
/// most 1 MiB (see `image`); 200 with `Location` and its `FileInfo`.
async fn upload_thumbnail(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
    request: Request,
) -> Result<Response> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let form = read_form(request, &state, &["file"], MAX_IMAGE_BYTES).await?;
    let Some(file) = form.into_iter().next() else {
        return Err(Error::InvalidFields(vec![(
            "file".into(),
            "may not be null".into(),
        )]));
    };
    let declared = match file.content_type.as_deref() {
        None => String::new(),
        given => declared_media_type(given),
    };
    let media_type = image_type(&file.bytes, &declared)?;
    let row = ThumbnailRow {
        media_type: media_type.to_string(),
        image: STANDARD.encode(&file.bytes),
    };
    queries::put(&state.db, &api.id, &row).await?;
    tracing::info!(api = %api.id, media_type, "thumbnail uploaded");
    let relative_path = format!("/apis/{}/thumbnail", api.id);
    Ok((
        Touches::nothing(),
        [(header::LOCATION, format!("{PUBLISHER}{relative_path}"))],
        Json(FileInfo {
            relative_path,
            media_type: media_type.to_string(),
        }),
    )
        .into_response())
}

/// `GET /apis/{apiId}/thumbnail` (publisher).
async fn publisher_thumbnail(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
) -> Result<Response> {
    caller.require(&state, Scope::ApiView)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    thumbnail(&state, &api.id).await
}
