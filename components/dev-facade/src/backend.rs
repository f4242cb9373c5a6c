//! The legacy SOAP service as the facade sees it: where it is (settings), how a call
//! travels (the host's outbound HTTP), and what each answer means for the REST side.

use apim_http::{Outbound, Response, SendError, split_url};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::errors::ApiError;
use crate::records::{Developer, Repo};
use crate::soap::{self, Call, Fault, Reply};

/// Names of the settings the facade reads.
pub mod settings {
    /// URL of the SOAP endpoint, e.g. `http://127.0.0.1:8291/ws`.
    pub const SOAP_URL: &str = "dev_soap_url";
    /// HTTP Basic user name for the SOAP endpoint (none: no Authorization header).
    pub const SOAP_USER: &str = "dev_soap_user";
    /// HTTP Basic password for the SOAP endpoint.
    pub const SOAP_PASSWORD: &str = "dev_soap_password";
    /// Connect and first-byte timeout of SOAP calls in milliseconds (default 10000).
    pub const SOAP_TIMEOUT_MS: &str = "dev_soap_timeout_ms";
    /// Path prefix the facade is mounted under, should it be; none by default (and none
    /// on Spin, where it is private and reached at `http://dev-facade.spin.internal/`).
    pub const BASE_PATH: &str = "dev_facade_base_path";
}

/// Used when `dev_soap_timeout_ms` is absent or not a number.
const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// What the facade asks of its host.
pub trait Host {
    /// A setting (see [`settings`]).
    fn setting(&self, name: &str) -> Option<String>;
    /// Sends a request and reads the whole response.
    fn send(&self, request: Outbound) -> Result<Response, SendError>;
}

/// What `getDeveloper` answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The developer.
    Found(Developer),
    /// A SOAP `Server` fault. The service answers an unknown user name with one (it
    /// throws while looking the record up, and the fault's text is whatever the runtime
    /// says, not a stable message), but so does a service that is failing: the caller
    /// tells them apart by whether the service answers `getRepo` right after.
    Faulted(Fault),
}

/// The SOAP service reached through a host.
pub struct Backend<'h, H: Host> {
    host: &'h H,
    url: String,
    authorization: Option<String>,
    timeout_ms: u64,
}

impl<'h, H: Host> Backend<'h, H> {
    /// The backend the host's settings describe.
    pub fn new(host: &'h H) -> Result<Self, ApiError> {
        let url = host.setting(settings::SOAP_URL).ok_or_else(|| {
            ApiError::BadGateway(format!(
                "The facade has no SOAP backend configured ({})",
                settings::SOAP_URL
            ))
        })?;
        let authorization = host.setting(settings::SOAP_USER).map(|user| {
            let password = host.setting(settings::SOAP_PASSWORD).unwrap_or_default();
            format!("Basic {}", STANDARD.encode(format!("{user}:{password}")))
        });
        let timeout_ms = host
            .setting(settings::SOAP_TIMEOUT_MS)
            .and_then(|v| v.parse().ok())
            .filter(|ms| *ms > 0)
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        Ok(Backend {
            host,
            url,
            authorization,
            timeout_ms,
        })
    }

    /// What `getDeveloper` answers for `username`: the developer, or the Server fault the
    /// service answers both for a user name it does not know and when it is failing (see
    /// [`Lookup::Faulted`]). Any other fault, or an answer outside the contract, is a 502.
    pub fn developer(&self, username: &str) -> Result<Lookup, ApiError> {
        let call = Call::GetDeveloper(username);
        match self.call(&call)? {
            Reply::Payload(payload) => soap::developer_in(&payload)
                .map_err(contract_broken)?
                .map(Lookup::Found)
                .ok_or_else(|| contract_broken("getDeveloperResponse has no developer".into())),
            Reply::Fault(fault) if fault.is_server() => Ok(Lookup::Faulted(fault)),
            Reply::Fault(fault) => Err(unexpected(&call, &fault)),
        }
    }

    /// The developer's repositories (none for an unknown developer: the service answers
    /// `getRepo` for any user name, which is what makes it a health probe).
    pub fn repos(&self, username: &str) -> Result<Vec<Repo>, ApiError> {
        let call = Call::GetRepo(username);
        match self.call(&call)? {
            Reply::Payload(payload) => soap::repos_in(&payload, "repos").map_err(contract_broken),
            Reply::Fault(fault) => Err(unexpected(&call, &fault)),
        }
    }

    /// Deletes the developer; `false` when the service did not know them.
    pub fn delete_developer(&self, username: &str) -> Result<bool, ApiError> {
        let call = Call::DeleteDeveloper(username);
        let message = match self.call(&call)? {
            Reply::Payload(payload) => soap::message_in(&payload).map_err(contract_broken)?,
            Reply::Fault(fault) => return Err(unexpected(&call, &fault)),
        };
        match message.trim() {
            "Success" => Ok(true),
            m if m.to_ascii_lowercase().contains("not found") => Ok(false),
            other => Err(ApiError::BadGateway(format!(
                "deleteDeveloper answered {other:?}"
            ))),
        }
    }

    /// Adds the developer: the stored record as the service echoes it, or `None` when
    /// the user name is taken (the service then answers without a `developer` and leaves
    /// the stored record as it was).
    pub fn add_developer(&self, developer: &Developer) -> Result<Option<Developer>, ApiError> {
        let call = Call::AddDeveloper(developer);
        match self.call(&call)? {
            Reply::Payload(payload) => soap::developer_in(&payload).map_err(contract_broken),
            Reply::Fault(fault) => Err(unexpected(&call, &fault)),
        }
    }

    /// Adds the repository (the service checks neither owner nor duplicates); the stored
    /// record as the service echoes it.
    pub fn add_repo(&self, repo: &Repo) -> Result<Repo, ApiError> {
        let call = Call::AddRepo(repo);
        match self.call(&call)? {
            Reply::Payload(payload) => soap::repos_in(&payload, "repo")
                .map_err(contract_broken)?
                .pop()
                .ok_or_else(|| contract_broken("addRepoResponse has no repo".into())),
            Reply::Fault(fault) => Err(unexpected(&call, &fault)),
        }
    }

    /// Posts the call's envelope and reads the answer.
    fn call(&self, call: &Call<'_>) -> Result<Reply, ApiError> {
        let answer = self
            .host
            .send(self.request(call)?)
            .map_err(|err| match err {
                SendError::Timeout(why) => ApiError::GatewayTimeout(format!(
                    "The SOAP backend did not answer {} in time ({why})",
                    call.operation()
                )),
                SendError::Unreachable(why) => {
                    ApiError::BadGateway(format!("The SOAP backend could not be reached ({why})"))
                }
            })?;
        if matches!(answer.status, 401 | 403) {
            return Err(ApiError::BadGateway(format!(
                "The SOAP backend refused the facade's credentials ({})",
                answer.status
            )));
        }
        soap::read_reply(call, &answer.body).map_err(|why| {
            ApiError::BadGateway(format!(
                "The SOAP backend's answer to {} (HTTP {}) is not usable: {why}",
                call.operation(),
                answer.status
            ))
        })
    }

    fn request(&self, call: &Call<'_>) -> Result<Outbound, ApiError> {
        let body = call.envelope().into_bytes();
        let (scheme, authority, path) = split_url(&self.url).ok_or_else(|| {
            ApiError::BadGateway(format!("{} is not an http(s) URL", settings::SOAP_URL))
        })?;
        let mut headers = vec![
            (
                "content-type".to_string(),
                b"text/xml; charset=utf-8".to_vec(),
            ),
            ("accept".to_string(), b"text/xml".to_vec()),
            ("soapaction".to_string(), b"\"\"".to_vec()),
            // Framed by length, never chunked: SOAP stacks and the appliances in front
            // of them often refuse chunked requests (the WASI glue sets it too).
            (
                "content-length".to_string(),
                body.len().to_string().into_bytes(),
            ),
        ];
        if let Some(authorization) = &self.authorization {
            headers.push((
                "authorization".to_string(),
                authorization.clone().into_bytes(),
            ));
        }
        Ok(Outbound {
            method: "POST".into(),
            scheme: scheme.into(),
            authority: authority.into(),
            path_with_query: if path.is_empty() {
                "/".into()
            } else {
                path.into()
            },
            headers,
            body,
            timeout_ms: self.timeout_ms,
        })
    }
}

/// 404 for a developer the service does not know.
pub fn no_such_developer(username: &str) -> ApiError {
    ApiError::NotFound(format!("Developer '{username}' not found"))
}

/// 409 for a user name that is taken.
pub fn developer_exists(username: &str) -> ApiError {
    ApiError::Conflict(format!("Developer '{username}' already exists"))
}

/// 409 for a repository the developer has already.
pub fn repo_exists(repo: &Repo) -> ApiError {
    ApiError::Conflict(format!(
        "Developer '{}' already has a repository '{}'",
        repo.username, repo.name
    ))
}

fn unexpected(call: &Call<'_>, fault: &Fault) -> ApiError {
    ApiError::BadGateway(format!(
        "The SOAP backend answered {} with a fault: {} {}",
        call.operation(),
        fault.code,
        fault.reason
    ))
}

fn contract_broken(why: String) -> ApiError {
    ApiError::BadGateway(format!(
        "The SOAP backend's answer breaks its contract: {why}"
    ))
}
