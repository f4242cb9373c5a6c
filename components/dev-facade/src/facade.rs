//! The REST resources of spec 4.6 and how each maps onto SOAP calls.

use apim_http::{Request, Response, header};
use percent_encoding::percent_decode_str;
use serde_json::json;

use crate::backend::{
    Backend, Host, Lookup, developer_exists, no_such_developer, repo_exists, settings,
};
use crate::errors::ApiError;
use crate::records::{Developer, Repo};
use crate::xml::is_xml_char;

/// A resource of the facade.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resource {
    /// `/devs`
    Developers,
    /// `/devs/{username}`
    Developer(String),
    /// `/devs/{username}/repos`
    DeveloperRepos(String),
    /// `/repos`
    Repos,
}

impl Resource {
    /// The resource a path names, below `base_path`.
    fn of(path_with_query: &str, base_path: &str) -> Result<Self, ApiError> {
        let path = path_with_query.split(['?', '#']).next().unwrap_or_default();
        let not_found = || ApiError::NotFound(format!("No resource at {path}"));
        let relative = path
            .strip_prefix(base_path.trim_end_matches('/'))
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .ok_or_else(not_found)?;
        let segments: Vec<&str> = relative.trim_matches('/').split('/').collect();
        match segments.as_slice() {
            ["devs"] => Ok(Resource::Developers),
            ["devs", username] => Ok(Resource::Developer(username_in(username)?)),
            ["devs", username, "repos"] => Ok(Resource::DeveloperRepos(username_in(username)?)),
            ["repos"] => Ok(Resource::Repos),
            _ => Err(not_found()),
        }
    }

    /// The methods the resource answers, as an `Allow` header value.
    fn allowed(&self) -> &'static str {
        match self {
            Resource::Developers | Resource::Repos => "POST",
            Resource::Developer(_) => "GET, DELETE",
            Resource::DeveloperRepos(_) => "GET",
        }
    }
}

/// A path segment decoded into a user name the SOAP service can be asked about.
fn username_in(segment: &str) -> Result<String, ApiError> {
    let username = percent_decode_str(segment)
        .decode_utf8()
        .map_err(|_| ApiError::BadRequest("The user name in the path is not UTF-8".into()))?;
    if username.trim().is_empty() || !username.chars().all(is_xml_char) {
        return Err(ApiError::BadRequest(
            "The user name in the path is empty or has control characters".into(),
        ));
    }
    Ok(username.into_owned())
}

/// Answers one request.
pub fn handle(host: &impl Host, request: &Request) -> Response {
    serve(host, request).unwrap_or_else(|err| err.response())
}

fn serve(host: &impl Host, request: &Request) -> Result<Response, ApiError> {
    let base_path = host.setting(settings::BASE_PATH).unwrap_or_default();
    let resource = Resource::of(&request.path_with_query, &base_path)?;
    let method = request.method.as_str();
    let backend = || Backend::new(host);
    match (method, &resource) {
        ("GET", Resource::Developer(username)) => get_developer(&backend()?, username),
        ("DELETE", Resource::Developer(username)) => delete_developer(&backend()?, username),
        ("GET", Resource::DeveloperRepos(username)) => get_repos(&backend()?, username),
        ("POST", Resource::Developers) => add_developer(&backend()?, request),
        ("POST", Resource::Repos) => add_repo(&backend()?, request),
        _ => Err(ApiError::MethodNotAllowed(resource.allowed())),
    }
}

fn get_developer<H: Host>(backend: &Backend<'_, H>, username: &str) -> Result<Response, ApiError> {
    match backend.developer(username)? {
        Lookup::Found(developer) => Ok(Response::json(200, &json!(developer))),
        Lookup::Faulted(_) => {
            backend.repos(username)?;
            Err(no_such_developer(username))
        }
    }
}

/// The repositories of a developer the service knows (`getRepo` alone cannot tell: it
/// answers for any user name, and repositories may outlive or precede their owner since
/// `addRepo` checks none).
fn get_repos<H: Host>(backend: &Backend<'_, H>, username: &str) -> Result<Response, ApiError> {
    let repos = known_developer_repos(backend, username)?;
    Ok(Response::json(200, &json!(repos)))
}

/// The repositories of `username`, or 404 when the service does not know them.
///
/// The service answers a user name it does not know with a `Server` fault whose text is
/// not stable, and a failing service answers faults too; a fault to `getDeveloper` means
/// "unknown" only when the service answers `getRepo` for the same name, which it does
/// for any name when it works. That call is needed here anyway, so telling the two apart
/// costs nothing more.
fn known_developer_repos<H: Host>(
    backend: &Backend<'_, H>,
    username: &str,
) -> Result<Vec<Repo>, ApiError> {
    let lookup = backend.developer(username)?;
    let repos = backend.repos(username)?;
    match lookup {
        Lookup::Found(_) => Ok(repos),
        Lookup::Faulted(_) => Err(no_such_developer(username)),
    }
}

fn delete_developer<H: Host>(
    backend: &Backend<'_, H>,
    username: &str,
) -> Result<Response, ApiError> {
    if !backend.delete_developer(username)? {
        return Err(no_such_developer(username));
    }
    Ok(Response::json(
        200,
        &json!({"message": "Success", "username": username}),
    ))
}

/// One call: the service never overwrites a user name, and says so by answering without
/// a developer.
fn add_developer<H: Host>(
    backend: &Backend<'_, H>,
    request: &Request,
) -> Result<Response, ApiError> {
    let developer = Developer::from_json(json_body(request)?)?;
    let stored = backend
        .add_developer(&developer)?
        .ok_or_else(|| developer_exists(&developer.username))?;
    let location = format!("/devs/{}", path_segment(&stored.username));
    Ok(Response::json(201, &json!(stored)).with_header("location", location))
}

/// The service adds any repository, so the facade checks first that the owner exists
/// and has no repository of that name (one lookup of each, see [`known_developer_repos`]).
fn add_repo<H: Host>(backend: &Backend<'_, H>, request: &Request) -> Result<Response, ApiError> {
    let repo = Repo::from_json(json_body(request)?)?;
    let existing = known_developer_repos(backend, &repo.username)?;
    if existing.iter().any(|r| r.name == repo.name) {
        return Err(repo_exists(&repo));
    }
    let stored = backend.add_repo(&repo)?;
    let location = format!("/devs/{}/repos", path_segment(&stored.username));
    Ok(Response::json(201, &json!(stored)).with_header("location", location))
}

/// The body, when the request says it is JSON or says nothing.
fn json_body(request: &Request) -> Result<&[u8], ApiError> {
    match header(&request.headers, "content-type") {
        Some(kind) if !kind.to_ascii_lowercase().contains("json") => {
            Err(ApiError::UnsupportedMediaType)
        }
        _ => Ok(&request.body),
    }
}

fn path_segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_resources() {
        let of = |path| Resource::of(path, "");
        assert_eq!(of("/devs").unwrap(), Resource::Developers);
        assert_eq!(of("/devs/").unwrap(), Resource::Developers);
        assert_eq!(
            of("/devs/Zo%C3%AB?x=1").unwrap(),
            Resource::Developer("Zoë".into())
        );
        assert_eq!(
            of("/devs/a/repos").unwrap(),
            Resource::DeveloperRepos("a".into())
        );
        assert_eq!(of("/repos").unwrap(), Resource::Repos);
        for path in ["/", "/devs/a/b", "/other", "/devs/a/repos/x"] {
            assert!(matches!(of(path), Err(ApiError::NotFound(_))), "{path}");
        }
        for path in ["/devs/%FF", "/devs/%00", "/devs/%20"] {
            assert!(matches!(of(path), Err(ApiError::BadRequest(_))), "{path}");
        }
    }

    #[test]
    fn a_base_path_is_stripped() {
        let of = |path| Resource::of(path, "/dev-backend/");
        assert_eq!(of("/dev-backend/repos").unwrap(), Resource::Repos);
        for path in ["/repos", "/dev-backendx/repos"] {
            assert!(matches!(of(path), Err(ApiError::NotFound(_))), "{path}");
        }
    }
}
