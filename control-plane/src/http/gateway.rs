//! What gateways read from the control plane: pages of the manifest (for a gateway that
//! starts, or catches up after missed pushes) and the public key pages are signed with;
//! and where they report a pulled page they could not take.

use apim_manifest::PageReport;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::auth::bearer_token;
use super::error::{ApiError, ApiResult};
use super::extract::{QueryParams, parse_json};
use super::{AppState, Touches};
use crate::{fleet, manifest};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            apim_manifest::paths::CONTROL_PLANE_MANIFEST,
            get(manifest_page),
        )
        .route("/internal/gateway/manifest-key", get(manifest_key))
        .route(apim_manifest::paths::CONTROL_PLANE_CHANGES, get(changes))
        .route(
            apim_manifest::paths::CONTROL_PLANE_REPORT,
            post(page_report),
        )
}

/// Refuses (401) a request without the gateway secret as its bearer token.
fn require_gateway_secret(state: &AppState, headers: &HeaderMap) -> ApiResult<()> {
    let presented = bearer_token(headers).unwrap_or_default();
    if bool::from(presented.as_bytes().ct_eq(state.gateway_secret.as_bytes())) {
        Ok(())
    } else {
        Err(ApiError::Unauthenticated)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    /// The version the gateway holds (or its snapshot has reached); 0 or absent: none.
    after: Option<u64>,
    /// Whether `after` is the progress of a snapshot.
    snapshot: Option<bool>,
    /// The gateway's id, to record it (a gateway that only pulls, as on Spin).
    gateway: Option<String>,
    /// Its environment.
    environment: Option<String>,
}

/// The page after `?after=`, as a compact JWS; needs the gateway secret (entries carry
/// backend credentials).
async fn manifest_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    QueryParams(query): QueryParams<PageQuery>,
) -> ApiResult<Response> {
    require_gateway_secret(&state, &headers)?;
    let (after, snapshot) = (query.after.unwrap_or(0), query.snapshot.unwrap_or(false));
    // Midway through a snapshot a gateway holds nothing it serves yet.
    let held = if snapshot { 0 } else { after };
    check_in(&state, query.gateway, query.environment, held).await?;
    let page = manifest::read_page(&state.db, after, snapshot).await?;
    let Some(page) = page else {
        return Ok((StatusCode::SERVICE_UNAVAILABLE, "manifest not compiled yet").into_response());
    };
    let jws = manifest::sign(&state.manifest_keys, &page)?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/jwt".to_string()),
            (
                header::HeaderName::from_static("x-manifest-version"),
                page.upto.to_string(),
            ),
        ],
        jws,
    )
        .into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangesQuery {
    /// The version the gateway holds.
    after: Option<u64>,
    /// Seconds to hold the request while nothing is newer (at most 30).
    wait: Option<u64>,
    /// The gateway's id, to record it.
    gateway: Option<String>,
    /// Its environment.
    environment: Option<String>,
}

/// A gateway's long poll: `{"latest": n}` once the manifest is past the version it holds
/// (at once when it already is), or when the wait runs out. Gateways connect out this
/// way, so one that starts, restarts or reconnects is current as soon as it reaches
/// the control plane, whatever the pushes did meanwhile. Needs the gateway secret.
async fn changes(
    State(state): State<AppState>,
    headers: HeaderMap,
    QueryParams(query): QueryParams<ChangesQuery>,
) -> ApiResult<Json<serde_json::Value>> {
    require_gateway_secret(&state, &headers)?;
    let after = query.after.unwrap_or(0);
    check_in(&state, query.gateway, query.environment, after).await?;
    let wait = std::time::Duration::from_secs(query.wait.unwrap_or(0));
    let (known, closing) = (state.manifests.subscribe(), state.manifests.closing());
    let latest = fleet::wait_for_version_after(known, closing, after, wait).await;
    Ok(Json(serde_json::json!({ "latest": latest })))
}

/// Records a gateway that named itself as it asked, with the version it holds.
async fn check_in(
    state: &AppState,
    gateway: Option<String>,
    environment: Option<String>,
    version: u64,
) -> ApiResult<()> {
    let Some(id) = gateway.filter(|id| !id.is_empty()) else {
        return Ok(());
    };
    let checkin = fleet::Checkin {
        id: &id,
        environment: environment.as_deref().unwrap_or_default(),
        version,
    };
    Ok(fleet::record(&state.db, &checkin).await?)
}

/// The manifest signing key as a JWK set (public; gateways are configured with its `x`).
async fn manifest_key(State(state): State<AppState>) -> impl IntoResponse {
    Json(state.manifest_keys.jwks())
}

/// A gateway could not take a page it pulled (too large to read, unparsable, or not
/// signed by the key it knows): kept with the refused pages, 204. The secret is checked
/// before the body is read. Nothing for gateways changes, so nothing is compiled.
async fn page_report(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<(Touches, StatusCode)> {
    require_gateway_secret(&state, &headers)?;
    let report: PageReport = parse_json(&body)?;
    state.manifests.page_refused("pull", report);
    Ok((Touches::nothing(), StatusCode::NO_CONTENT))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use clap::Parser;

    use super::*;
    use crate::config::Config;
    use crate::gateways::ManifestHub;
    use crate::keys::KeyRing;

    /// The management listener on a free port, with `secret` as the gateway secret.
    async fn serve(manifests: Arc<ManifestHub>, secret: &str) -> String {
        let dir = std::env::temp_dir().join(format!("apim-report-{}", uuid::Uuid::new_v4()));
        let keys = Arc::new(KeyRing::load_or_create(&dir).unwrap());
        let data_keys = Arc::new(crate::secrets::DataKeys::ephemeral());
        let state = AppState {
            db: crate::db::connect("sqlite::memory:").await.unwrap(),
            keys: keys.clone(),
            config: Arc::new(Config::parse_from(["control-plane"])),
            scopes: crate::scopes::ScopeNames::new("mgr"),
            issuer: "issuer".into(),
            manifests,
            manifest_keys: keys,
            gateway_secret: secret.into(),
            store_users: Arc::default(),
            clients: Arc::new(crate::clients::ClientCache::new(data_keys.clone())),
            logins: Arc::default(),
            endpoints: Arc::new(crate::apis::EndpointPolicy {
                egress: Default::default(),
                listener: "127.0.0.1:9763".parse().unwrap(),
            }),
            data_keys,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, super::super::app(state)).await });
        url
    }

    #[tokio::test]
    async fn gateways_report_pages_they_could_not_take() {
        let manifests = ManifestHub::new();
        let url = serve(manifests.clone(), "s3cret").await;
        let report = PageReport {
            after: 7,
            snapshot: true,
            reason: "the page is larger than 10485760 bytes".into(),
            environment: Some("Production and Sandbox".into()),
        };
        let post = |bearer: &str| {
            reqwest::Client::new()
                .post(format!(
                    "{url}{}",
                    apim_manifest::paths::CONTROL_PLANE_REPORT
                ))
                .bearer_auth(bearer)
                .json(&report)
                .send()
        };
        assert_eq!(post("wrong").await.unwrap().status(), 401);
        assert!(manifests.refused_pages().is_empty());
        assert_eq!(post("s3cret").await.unwrap().status(), 204);
        let refused = manifests.refused_pages();
        assert_eq!(refused.len(), 1);
        assert_eq!(
            (refused[0].gateway.as_str(), &refused[0].report),
            ("pull", &report)
        );
    }
}
