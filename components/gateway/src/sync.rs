//! Receiving pushed manifest pages and pulling the missing ones from the control plane,
//! telling it of a pulled page that could not be taken.

use apim_manifest::{Page, PageReport, Position, paths};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::json;

use crate::host::{
    Headers, Host, MAX_BODY_BYTES, Outbound, Request, Response, SendError, split_url,
};
use crate::state::{self, Refusal};

// The control plane keeps every signed page within this bound: the gateway must take it.
const _: () = assert!(apim_manifest::bounds::MAX_PAGE_BYTES <= MAX_BODY_BYTES);

/// What [`Host::send`] fails with when the control plane answered but its body could not
/// be read whole: larger than [`MAX_BODY_BYTES`], or cut short (`apim_http::wasi::send`).
const UNREADABLE_BODY: &str = "response body";

pub use apim_http::contract::{DEFAULT_CATCH_UP_MS, DEFAULT_GATEWAY_ID, settings};

/// Default timeout of outbound requests.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The outbound timeout in effect.
pub fn timeout_ms(host: &dyn Host) -> u64 {
    host.setting(settings::BACKEND_TIMEOUT_MS)
        .and_then(|v| v.trim().parse().ok())
        .filter(|v| *v > 0)
        .unwrap_or(DEFAULT_TIMEOUT_MS)
}

/// Most pages one pull applies (a snapshot of a very large manifest may need more
/// pulls; each carries on where the last stopped).
const MAX_PAGES_PER_PULL: usize = 10_000;

/// `POST /_apim/manifest`: applies a signed page on top of what the store holds; answers
/// with the position held afterwards (200 when applied, 409 when the page does not start
/// there, 400 when invalid, 503 with `Retry-After` when another page is being applied or
/// the store failed).
pub fn receive_push(host: &dyn Host, request: &Request) -> Response {
    let Some(public_key) = host.setting(settings::MANIFEST_PUBLIC_KEY) else {
        return Response::json(
            503,
            &json!({"error": "manifest_public_key is not configured"}),
        );
    };
    let page = match verify(&String::from_utf8_lossy(&request.body), &public_key) {
        Ok(page) => page,
        Err(err) => return Response::json(400, &json!({"error": err})),
    };
    match state::apply(host, &page, host.now_millis()) {
        Ok(position) => position_response(200, position),
        Err(refusal) => refusal_response(refusal),
    }
}

/// `GET /_apim/manifest`: the position the store holds.
pub fn status(host: &dyn Host) -> Response {
    position_response(200, state::position(host))
}

fn position_response(status: u16, position: Position) -> Response {
    Response::json(status, &serde_json::to_value(position).unwrap_or_default())
}

fn refusal_response(refusal: Refusal) -> Response {
    match refusal {
        Refusal::OutOfOrder(position) => position_response(409, position),
        Refusal::Busy => unavailable("another page is being applied".into()),
        Refusal::Store(err) => unavailable(format!("could not store the manifest: {err}")),
    }
}

/// 503 for a refusal that passes: the sender may try again in a second.
fn unavailable(error: String) -> Response {
    Response::json(503, &json!({ "error": error })).with_header("retry-after", "1")
}

/// Verifies a signed page with the configured public key.
pub fn verify(jws: &str, public_key: &str) -> Result<Page, String> {
    let key = DecodingKey::from_ed_components(public_key.trim())
        .map_err(|e| format!("manifest_public_key is not an Ed25519 key: {e}"))?;
    let mut validation = Validation::new(Algorithm::EdDSA);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    jsonwebtoken::decode::<Page>(jws.trim(), &key, &validation)
        .map(|data| data.claims)
        .map_err(|e| format!("manifest page signature or content invalid: {e}"))
}

/// `POST /_apim/sync`: pulls what the store misses now.
pub fn sync_now(host: &dyn Host) -> Response {
    match pull(host) {
        Ok(position) => position_response(200, position),
        Err(PullError::Busy) => refusal_response(Refusal::Busy),
        Err(err) => Response::json(502, &json!({"error": err.to_string()})),
    }
}

/// Why a pull stopped short.
#[derive(Debug)]
pub enum PullError {
    /// Another instance is applying pages.
    Busy,
    /// The control plane could not be asked, or its answer was not a valid page.
    Failed(String),
}

impl std::fmt::Display for PullError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PullError::Busy => f.write_str("another page is being applied"),
            PullError::Failed(reason) => f.write_str(reason),
        }
    }
}

impl From<String> for PullError {
    fn from(reason: String) -> Self {
        PullError::Failed(reason)
    }
}

/// Catches up with the control plane on a request's arrival, at most once per
/// [`settings::CATCH_UP_MS`] across the instances sharing the store: for hosts that run
/// no loop of their own (Spin), called once the request's answer is sent. When it was
/// last done is in the head ([`state::Head::encode_caught_up`]), which the request has
/// read already (`head`, as stored), so that a request pays nothing unless it is the one
/// whose turn it is; that one claims the turn (compare-and-swap of the head, so one
/// instance does it) and pulls.
pub fn catch_up_if_due(host: &dyn Host, head: Option<Vec<u8>>) {
    let interval = host
        .setting(settings::CATCH_UP_MS)
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(DEFAULT_CATCH_UP_MS);
    if interval <= 0 || host.setting(settings::CONTROL_PLANE_URL).is_none() {
        return;
    }
    let stored = match head {
        Some(stored) => stored,
        None => match host.kv_get(state::HEAD_KEY) {
            Ok(Some(stored)) => stored,
            // No manifest yet: the request has just tried to pull the first one.
            _ => return,
        },
    };
    let Some((head, caught_up)) = state::Head::decode_caught_up(&stored) else {
        return;
    };
    let now = host.now_millis();
    if caught_up.is_some_and(|at| now.saturating_sub(at) < interval) {
        return;
    }
    let marked = head.encode_caught_up(now);
    let claimed = host.kv_compare_and_swap(state::HEAD_KEY, Some(&stored), marked.as_bytes());
    if claimed != Ok(true) {
        return;
    }
    match pull(host) {
        Ok(_) | Err(PullError::Busy) => {}
        Err(err) => eprintln!("catching up with the control plane failed: {err}"),
    }
}

/// Pulls and applies pages from where the store is until the control plane has nothing
/// newer; the position held afterwards. Each request names the gateway and its
/// environment, so that the control plane lists it among the gateways that sync.
pub fn pull(host: &dyn Host) -> Result<Position, PullError> {
    let public_key = host
        .setting(settings::MANIFEST_PUBLIC_KEY)
        .ok_or("manifest_public_key is not configured".to_string())?;
    let secret = host.setting(settings::GATEWAY_SECRET).unwrap_or_default();
    let mut position = state::position(host);
    let identity = form_urlencoded::Serializer::new(String::new())
        .append_pair(
            "gateway",
            &host
                .setting(settings::GATEWAY_ID)
                .unwrap_or_else(|| DEFAULT_GATEWAY_ID.to_string()),
        )
        .append_pair(
            "environment",
            &host
                .setting(settings::GATEWAY_ENVIRONMENT)
                .unwrap_or_default(),
        )
        .finish();
    for _ in 0..MAX_PAGES_PER_PULL {
        let (after, snapshot) = position.next_after();
        let query = format!(
            "{}?after={after}&snapshot={snapshot}&{identity}",
            paths::CONTROL_PLANE_MANIFEST
        );
        let authorization = format!("Bearer {secret}").into_bytes();
        let request = to_control_plane(
            host,
            "GET",
            &query,
            vec![("authorization".into(), authorization)],
            vec![],
        )?;
        let response = match host.send(request) {
            Ok(response) => response,
            Err(SendError::Unreachable(reason)) if reason == UNREADABLE_BODY => {
                let reason = format!(
                    "the page could not be read whole (larger than {MAX_BODY_BYTES} bytes, or cut short)"
                );
                return Err(report_refused(host, after, snapshot, reason).into());
            }
            Err(err) => return Err(format!("control plane unreachable: {err:?}").into()),
        };
        if response.status != 200 {
            return Err(format!("control plane answered {}", response.status).into());
        }
        let page = verify(&String::from_utf8_lossy(&response.body), &public_key)
            .map_err(|reason| report_refused(host, after, snapshot, reason))?;
        let last = page.is_last();
        position = match state::apply(host, &page, host.now_millis()) {
            Ok(position) => position,
            Err(Refusal::Busy) => return Err(PullError::Busy),
            // Someone else moved the store on meanwhile: carry on from there.
            Err(Refusal::OutOfOrder(now)) if now != position => now,
            Err(Refusal::OutOfOrder(now)) => {
                return Err(format!(
                    "the control plane's page ({} to {} of {}) does not fit what the store holds ({now:?})",
                    page.after, page.upto, page.latest
                )
                .into());
            }
            Err(Refusal::Store(err)) => {
                return Err(format!("could not store the manifest: {err}").into());
            }
        };
        if last && position.snapshot.is_none() && position.version >= page.latest {
            return Ok(position);
        }
    }
    Ok(position)
}

/// Tells the control plane that the page after `after` could not be taken, so that it is
/// seen where it can be fixed (best effort: the pull fails either way, and the next one
/// asks again); `reason`, for the pull's error.
fn report_refused(host: &dyn Host, after: u64, snapshot: bool, reason: String) -> String {
    let report = PageReport {
        after,
        snapshot,
        reason,
        environment: host.setting(settings::GATEWAY_ENVIRONMENT),
    };
    let secret = host.setting(settings::GATEWAY_SECRET).unwrap_or_default();
    let headers = vec![
        (
            "authorization".into(),
            format!("Bearer {secret}").into_bytes(),
        ),
        ("content-type".into(), b"application/json".to_vec()),
    ];
    let body = serde_json::to_vec(&report).unwrap_or_default();
    let sent = to_control_plane(host, "POST", paths::CONTROL_PLANE_REPORT, headers, body)
        .and_then(|request| host.send(request).map_err(|e| format!("{e:?}")));
    match sent {
        Ok(response) if response.status < 300 => {}
        Ok(response) => eprintln!(
            "the control plane answered {} to a page report",
            response.status
        ),
        Err(err) => eprintln!("could not report a refused page: {err}"),
    }
    report.reason
}

/// A request to the control plane at `path_with_query` (below `control_plane_url`), with
/// the configured timeout.
pub fn to_control_plane(
    host: &dyn Host,
    method: &str,
    path_with_query: &str,
    headers: Headers,
    body: Vec<u8>,
) -> Result<Outbound, String> {
    let url = host
        .setting(settings::CONTROL_PLANE_URL)
        .ok_or("control_plane_url is not configured")?;
    let (scheme, authority, base) =
        split_url(&url).ok_or("control_plane_url is not an http(s) URL")?;
    Ok(Outbound {
        method: method.to_string(),
        scheme: scheme.to_string(),
        authority: authority.to_string(),
        path_with_query: format!("{}{path_with_query}", base.trim_end_matches('/')),
        headers,
        body,
        timeout_ms: timeout_ms(host),
    })
}
