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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wit_host::bindings::exports::apim::gateway::policy::{
        Balance, EndpointSettings, ReplacedHeaders, Target,
    };

    fn target(path_with_query: &str) -> Target {
        Target {
            scheme: "http".into(),
            authority: "backend:80".into(),
            path_with_query: path_with_query.into(),
            timeout_ms: 1,
            key: String::new(),
            settings: EndpointSettings {
                discard_on_timeout: false,
                suspend_codes: vec![],
                suspend_ms: 0,
                suspend_max_ms: 0,
                factor: 1.0,
                retry_codes: vec![],
                retries: 0,
                retry_delay_ms: 0,
            },
        }
    }

    fn plan(paths: &[&str]) -> Forward {
        Forward {
            method: None,
            targets: paths.iter().map(|p| target(p)).collect(),
            balance: Balance::LoadBalance,
            list: String::new(),
            replaced: ReplacedHeaders::ApiCall,
            removed_headers: vec![],
            added_headers: vec![("authorization".into(), b"Basic x".to_vec())],
            response_removed: vec![],
            response_headers: vec![],
            cache: None,
            upgrade: false,
            body: None,
            mediation: None,
            tool_reply: None,
            tenant_policy: None,
        }
    }

    fn changes(set: &[(&str, &[u8])], path: Option<&str>) -> Changes {
        Changes {
            set_headers: set
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_vec()))
                .collect(),
            remove_headers: vec![],
            path_with_query: path.map(str::to_string),
            body: None,
        }
    }

    #[test]
    fn a_path_replaces_the_resource_of_every_endpoint() {
        let mut forward = plan(&["/a/pets/1?x=1", "/b/v2/pets/1?x=1"]);
        apply(&mut forward, "/pets/1?x=1", changes(&[], Some("/dogs?y=2"))).unwrap();
        let paths: Vec<&str> = forward
            .targets
            .iter()
            .map(|t| t.path_with_query.as_str())
            .collect();
        assert_eq!(paths, ["/a/dogs?y=2", "/b/v2/dogs?y=2"]);
        // At the API's root, as REST_URL_POSTFIX joins.
        for (path, resource, set, joined) in [
            ("/api", "", "/x", "/api/x"),
            ("/", "", "/x", "/x"),
            ("/api/?q=1", "?q=1", "?z=1", "/api/?z=1"),
        ] {
            let mut forward = plan(&[path]);
            apply(&mut forward, resource, changes(&[], Some(set))).unwrap();
            assert_eq!(forward.targets[0].path_with_query, joined, "{path} {set}");
        }
        let mut forward = plan(&["/a/pets"]);
        let refused = apply(&mut forward, "/pets", changes(&[], Some("/../etc")));
        assert_eq!(refused, Err(PolicyFailure::BadPath));
        assert_eq!(forward.targets[0].path_with_query, "/a/pets");
    }

    #[test]
    fn headers_set_replace_the_gateways_and_the_clients() {
        let mut forward = plan(&["/a"]);
        apply(
            &mut forward,
            "",
            changes(&[("X-Tag", b"1"), ("authorization", b"Bearer y")], None),
        )
        .unwrap();
        assert_eq!(
            forward.added_headers,
            vec![
                ("x-tag".to_string(), b"1".to_vec()),
                ("authorization".to_string(), b"Bearer y".to_vec())
            ]
        );
        assert!(forward.removed_headers.contains(&"x-tag".to_string()));
        for refused in [
            changes(&[("host", b"evil")], None),
            changes(&[("content-length", b"1")], None),
            changes(&[("bad name", b"1")], None),
            changes(&[("x-a", b"line\nbreak")], None),
        ] {
            let mut forward = plan(&["/a"]);
            assert_eq!(
                apply(&mut forward, "", refused),
                Err(PolicyFailure::BadChange)
            );
        }
        let many: Vec<(String, Vec<u8>)> = (0..65).map(|i| (format!("x-{i}"), vec![])).collect();
        let too_many = Changes {
            set_headers: many,
            ..changes(&[], None)
        };
        assert_eq!(
            apply(&mut plan(&["/a"]), "", too_many),
            Err(PolicyFailure::BadChange)
        );
    }

    #[test]
    fn answers_are_checked_like_changes() {
        let answer = |status| Answer {
            status,
            headers: vec![("content-type".into(), b"text/plain".to_vec())],
            body: b"no".to_vec(),
        };
        assert_eq!(super::answer(answer(403)).unwrap().status, 403);
        for status in [101, 199, 600, 0] {
            assert_eq!(
                super::answer(answer(status)).unwrap_err(),
                PolicyFailure::BadChange
            );
        }
    }
}
