//! An API's thumbnail in the store: `GET /apis/{apiId}/thumbnail`, for an API the caller
//! sees (anonymously too).

use axum::extract::{Path, State};
use axum::response::Response;

use super::answer::thumbnail;
use crate::apis::visible_api;
use crate::error::Result;
use crate::http::STORE;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::tokens::MaybeCaller;

pub fn router() -> Routes {
    Routes::new().route(
        &format!("{STORE}/apis/{{api_id}}/thumbnail"),
        get(store_thumbnail),
    )
}

/// `GET /apis/{apiId}/thumbnail` (store).
async fn store_thumbnail(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    Path(api_id): Path<String>,
) -> Result<Response> {
    let api = visible_api(&state, caller.as_ref(), &api_id).await?;
    thumbnail(&state, &api.id).await
}
