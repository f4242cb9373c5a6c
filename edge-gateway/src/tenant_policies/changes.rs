//! What a policy decided, checked and applied to the call's plan: headers it sets must be
//! valid HTTP that passes on (never hop-by-hop, `host` or `content-length`) and bounded,
//! a path it sets canonical, a body or answer no larger than the gateway mediates.

use apim_http::bodies::MAX_MEDIATED_BYTES;
use apim_http::endpoints;
use http::{HeaderName, HeaderValue};

use super::{Answer, Changes};
use crate::wit_host::bindings::exports::apim::gateway::policy::{Forward, PolicyFailure, Response};

/// Most headers a policy sets on a request or an answer.
const MAX_HEADERS: usize = 64;
/// Most bytes of names and values those headers hold together.
const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Most headers a policy removes.
const MAX_REMOVED: usize = 256;

/// Applies `changes` to `plan`, whose targets' paths are each an endpoint's path joined
/// with `resource` (`apim_http::endpoints::join_path`).
pub fn apply(plan: &mut Forward, resource: &str, changes: Changes) -> Result<(), PolicyFailure> {
    let set = checked_headers(changes.set_headers)?;
    if changes.remove_headers.len() > MAX_REMOVED {
        return Err(PolicyFailure::BadChange);
    }
    if let Some(body) = &changes.body
        && body.len() > MAX_MEDIATED_BYTES
    {
        return Err(PolicyFailure::BadChange);
    }
    if let Some(path) = changes.path_with_query {
        let postfix = apim_manifest::canon::backend_postfix(&path).ok_or(PolicyFailure::BadPath)?;
        for target in &mut plan.targets {
            let base = endpoints::endpoint_base(&target.path_with_query, resource)
                .ok_or(PolicyFailure::BadChange)?;
            target.path_with_query = endpoints::join_path(base, &postfix);
        }
    }
    let mut removed: Vec<String> = changes
        .remove_headers
        .iter()
        .map(|name| name.to_ascii_lowercase())
        .collect();
    removed.extend(set.iter().map(|(name, _)| name.clone()));
    apim_http::remove_headers(&mut plan.added_headers, &removed);
    plan.added_headers.extend(set);
    plan.removed_headers.extend(removed);
    if let Some(body) = changes.body {
        plan.body = Some(body);
    }
    Ok(())
}

/// The answer a policy gave, as the client gets it.
pub fn answer(answer: Answer) -> Result<Response, PolicyFailure> {
    if !(200..=599).contains(&answer.status) || answer.body.len() > MAX_MEDIATED_BYTES {
        return Err(PolicyFailure::BadChange);
    }
    Ok(Response {
        status: answer.status,
        headers: checked_headers(answer.headers)?,
        body: answer.body,
        fault_code: 0,
    })
}

/// Headers a policy set, lower-case, each valid HTTP that passes on, within the bounds.
fn checked_headers(
    headers: Vec<(String, Vec<u8>)>,
) -> Result<Vec<(String, Vec<u8>)>, PolicyFailure> {
    let bytes: usize = headers.iter().map(|(n, v)| n.len() + v.len()).sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return Err(PolicyFailure::BadChange);
    }
    headers
        .into_iter()
        .map(|(name, value)| {
            let name = name.to_ascii_lowercase();
            let valid = HeaderName::from_bytes(name.as_bytes()).is_ok()
                && HeaderValue::from_bytes(&value).is_ok()
                && !apim_http::is_hop_by_hop(&name, &[]);
            if valid {
                Ok((name, value))
            } else {
                Err(PolicyFailure::BadChange)
            }
        })
        .collect()
}

/// The path and query a policy is shown: `resource` as the backend's path after the
/// endpoint's, `/` first.
pub fn shown_path(resource: &str) -> String {
    if resource.starts_with('/') {
        resource.to_string()
    } else {
        apim_http::joined(["/", resource])
    }
}
