//! What gateways read from the control plane: pages of the manifest (for a gateway that
//! starts, or catches up after missed pushes) and the public key pages are signed with;
//! and where they report a pulled page they could not take.

use apim_manifest::PageReport;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::sync as fleet;
use crate::error::{Error, Result};
use crate::http::auth::bearer_token;
use crate::http::error::closing;
use crate::http::extract::{QueryParams, parse_json};
use crate::http::routes::{Routes, get, post};
use crate::manifest;
use crate::manifest::Touches;
use crate::state::AppState;

pub fn router() -> Routes {
    Routes::new()
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

/// The paths only gateways may call (the manifest key is public); introspection is the
/// token service's, but only for gateways. So is every path under
/// `CONTROL_PLANE_POLICIES` (tenants' policies, by digest).
const GATEWAY_ONLY: [&str; 5] = [
    apim_manifest::paths::CONTROL_PLANE_MANIFEST,
    apim_manifest::paths::CONTROL_PLANE_CHANGES,
    apim_manifest::paths::CONTROL_PLANE_REPORT,
    apim_manifest::paths::CONTROL_PLANE_INTROSPECT,
    apim_manifest::paths::CONTROL_PLANE_ANALYTICS,
];

/// Refuses (401) a call of a gateway-only path without the gateway secret as its bearer
/// token, from the head: it runs before any layer reads a body, so a caller without the
/// secret cannot make the control plane read (or wait for) one.
pub async fn require_gateway_secret(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path();
    let gateway_only = GATEWAY_ONLY.contains(&path)
        || path.starts_with(apim_manifest::paths::CONTROL_PLANE_POLICIES);
    if gateway_only && !proves_secret(request.headers(), &state.gateway_secret) {
        return closing(Error::Unauthenticated.into_response());
    }
    next.run(request).await
}

/// Whether the bearer token is `secret`; an empty token proves nothing, whatever the
/// secret (the start refuses short ones).
fn proves_secret(headers: &HeaderMap, secret: &str) -> bool {
    let presented = bearer_token(headers).unwrap_or_default();
    !presented.is_empty() && bool::from(presented.as_bytes().ct_eq(secret.as_bytes()))
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
#[utoipa::path(
    get,
    path = "/internal/gateway/manifest",
    tag = "Gateways",
    params(
        ("after" = Option<u64>, Query, description = "The version the gateway holds (or its snapshot has reached)"),
        ("snapshot" = Option<bool>, Query, description = "Whether `after` is the progress of a snapshot"),
        ("gateway" = Option<String>, Query, description = "The gateway's id, to record it"),
        ("environment" = Option<String>, Query, description = "Its environment")
    ),
    responses(
        (status = 200, description = "The next page of the manifest, a compact JWS", content_type = "application/jwt", body = String,
            headers(("x-manifest-version" = u64, description = "The version the page brings the gateway to"))),
        (status = 503, description = "The manifest is not compiled yet", content_type = "text/plain", body = String)
    ),
    security(("gateway_secret" = []))
)]
async fn manifest_page(
    State(state): State<AppState>,
    QueryParams(query): QueryParams<PageQuery>,
) -> Result<Response> {
    let started = std::time::SystemTime::now();
    let (after, snapshot) = (query.after.unwrap_or(0), query.snapshot.unwrap_or(false));
    // Midway through a snapshot a gateway holds nothing it serves yet.
    let held = if snapshot { 0 } else { after };
    let gateway = query.gateway.clone().unwrap_or_else(|| "pull".into());
    check_in(&state, query.gateway, query.environment, held).await?;
    let page = manifest::read_page(&state.db, after, snapshot).await?;
    let Some(page) = page else {
        return Ok((StatusCode::SERVICE_UNAVAILABLE, "manifest not compiled yet").into_response());
    };
    let jws = manifest::sign(&state.manifest_keys, &page)?;
    if page.upto > held {
        let compile = state
            .shared::<super::hub::ManifestHub>()
            .compile_of(held, page.upto);
        crate::ops::trace::delivered(compile, &gateway, page.upto, started);
    }
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
#[utoipa::path(
    get,
    path = "/internal/gateway/changes",
    tag = "Gateways",
    params(
        ("after" = Option<u64>, Query, description = "The version the gateway holds"),
        ("wait" = Option<u64>, Query, description = "Seconds to hold the request while nothing is newer (at most 30)"),
        ("gateway" = Option<String>, Query, description = "The gateway's id, to record it"),
        ("environment" = Option<String>, Query, description = "Its environment")
    ),
    responses((status = 200, description = "The newest manifest version", body = crate::openapi::shapes::LatestVersion)),
    security(("gateway_secret" = []))
)]
async fn changes(
    State(state): State<AppState>,
    QueryParams(query): QueryParams<ChangesQuery>,
) -> Result<Json<serde_json::Value>> {
    let after = query.after.unwrap_or(0);
    check_in(&state, query.gateway, query.environment, after).await?;
    let wait = std::time::Duration::from_secs(query.wait.unwrap_or(0));
    let (known, closing) = (
        state.shared::<super::hub::ManifestHub>().subscribe(),
        state.shared::<super::hub::ManifestHub>().closing(),
    );
    let latest = fleet::wait_for_version_after(known, closing, after, wait).await;
    Ok(Json(serde_json::json!({ "latest": latest })))
}

/// Records a gateway that named itself as it asked, with the version it holds.
async fn check_in(
    state: &AppState,
    gateway: Option<String>,
    environment: Option<String>,
    version: u64,
) -> Result<()> {
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
#[utoipa::path(
    get,
    path = "/internal/gateway/manifest-key",
    tag = "Gateways",
    responses((status = 200, description = "The key manifest pages are signed with", body = crate::openapi::shapes::JwkSet))
)]
async fn manifest_key(State(state): State<AppState>) -> impl IntoResponse {
    Json(state.manifest_keys.jwks())
}

/// A gateway could not take a page it pulled (too large to read, unparsable, or not
/// signed by the key it knows): kept with the refused pages, 204. The secret was checked
/// from the head ([`require_gateway_secret`]). Nothing for gateways changes, so nothing
/// is compiled.
#[utoipa::path(
    post,
    path = "/internal/gateway/report",
    tag = "Gateways",
    request_body = crate::openapi::shapes::PageReport,
    responses((status = 204, description = "The refusal is kept with the refused pages")),
    security(("gateway_secret" = []))
)]
async fn page_report(State(state): State<AppState>, body: Bytes) -> Result<(Touches, StatusCode)> {
    let report: PageReport = parse_json(&body)?;
    state
        .shared::<super::hub::ManifestHub>()
        .page_refused("pull", report);
    Ok((Touches::nothing(), StatusCode::NO_CONTENT))
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(manifest_page, changes, manifest_key, page_report))]
pub struct Api;

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use clap::Parser;

    use super::*;
    use crate::config::Config;
    use crate::fleet::ManifestHub;
    use crate::signing::KeyRing;

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
            issuers: vec!["issuer".into()],
            id_token_keys: keys.clone(),
            backend_jwt_keys: keys.clone(),
            manifest_keys: keys,
            gateway_secret: secret.into(),
            store_users: Arc::default(),
            shared: crate::app::shared(
                manifests,
                crate::clients::ClientCache::new(data_keys.clone()),
                Default::default(),
                crate::apis::EndpointPolicy {
                    egress: Default::default(),
                    listener: "127.0.0.1:9763".parse().unwrap(),
                },
                Default::default(),
            ),
            data_keys,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, crate::app::app(state)).await });
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

    #[tokio::test]
    async fn an_empty_secret_proves_nothing() {
        let page = |url: String, bearer: Option<&'static str>| async move {
            let request = reqwest::Client::new().get(format!(
                "{url}{}",
                apim_manifest::paths::CONTROL_PLANE_MANIFEST
            ));
            let request = match bearer {
                Some(bearer) => request.header("authorization", format!("Bearer {bearer}")),
                None => request,
            };
            request.send().await.unwrap().status()
        };
        let open = serve(ManifestHub::new(), "").await;
        assert_eq!(page(open.clone(), None).await, 401);
        assert_eq!(page(open, Some("")).await, 401);
        // The legitimate twin: the secret itself gets past the check.
        let guarded = serve(ManifestHub::new(), "s3cret").await;
        assert_eq!(page(guarded.clone(), None).await, 401);
        assert_ne!(page(guarded, Some("s3cret")).await, 401);
    }

    /// A report's head, announcing a body it does not send yet.
    async fn report_head(url: &str, bearer: &str) -> tokio::net::TcpStream {
        use tokio::io::AsyncWriteExt as _;
        let addr = url.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST {} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {bearer}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n",
            apim_manifest::paths::CONTROL_PLANE_REPORT,
            REPORT_BODY.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream
    }

    const REPORT_BODY: &str = r#"{"after":1,"snapshot":false,"reason":"unparsable"}"#;

    /// What the control plane answers on `stream` within `within`, if anything.
    async fn answer_within(stream: &mut tokio::net::TcpStream, within: Duration) -> String {
        use tokio::io::AsyncReadExt as _;
        let mut answer = vec![0; 4096];
        match tokio::time::timeout(within, stream.read(&mut answer)).await {
            Ok(Ok(read)) => String::from_utf8_lossy(&answer[..read]).into_owned(),
            _ => String::new(),
        }
    }

    #[tokio::test]
    async fn gateway_credentials_are_checked_before_the_body_is_read() {
        use tokio::io::AsyncWriteExt as _;
        let manifests = ManifestHub::new();
        let url = serve(manifests.clone(), "s3cret").await;
        // Without the secret: refused from the head, the body never awaited (the body
        // timeout is 30 s) and the connection closed.
        let mut stranger = report_head(&url, "wrong").await;
        let refusal = answer_within(&mut stranger, Duration::from_secs(10)).await;
        assert!(refusal.starts_with("HTTP/1.1 401"), "{refusal:?}");
        assert!(
            refusal.to_ascii_lowercase().contains("connection: close"),
            "{refusal}"
        );
        // With it: the control plane waits for the body, then takes the report.
        let mut gateway = report_head(&url, "s3cret").await;
        let early = answer_within(&mut gateway, Duration::from_millis(300)).await;
        assert_eq!(early, "", "answered before the body came");
        gateway.write_all(REPORT_BODY.as_bytes()).await.unwrap();
        let taken = answer_within(&mut gateway, Duration::from_secs(10)).await;
        assert!(taken.starts_with("HTTP/1.1 204"), "{taken:?}");
        assert_eq!(manifests.refused_pages().len(), 1);
    }
}
