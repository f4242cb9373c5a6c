//! One type for what goes wrong while the host serves a request ([`Failure`]), after
//! Pingora's `pingora-error`: whom it is down to ([`ErrorSource`]: the client, a backend,
//! or the host and its component), what it was ([`Kind`]), and the error behind it,
//! chained as its [`std::error::Error::source`].
//!
//! A failure is told apart once, where it happens (a backend's connection in
//! `backend_pool`, a call into the component in `wit_host`); whoever answers the client,
//! counts it, or tells a component (`outbound`'s `wasi:http` error codes) matches on its
//! kind rather than looking into the errors behind it.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;

use apim_http::endpoints;

/// An error behind a failure.
pub type Cause = Box<dyn StdError + Send + Sync>;

/// Whom a failure is down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorSource {
    /// The client: what it sent is refused.
    Downstream,
    /// A backend: it could not be reached, or did not answer in time, or not in HTTP.
    Upstream,
    /// The host, or the component it runs.
    Internal,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// No connection to the backend within the connect timeout (or its socket timed out).
    ConnectTimedOut,
    /// The backend's response head, or the next part of its body, did not come in time.
    ReadTimedOut,
    /// The host's egress policy lets no connection go where the backend is.
    EgressRefused,
    /// The backend refused the connection.
    ConnectionRefused,
    /// The backend closed or reset the connection before the exchange was over.
    ConnectionClosed,
    /// The backend's name did not resolve; the resolver's answer.
    NameNotResolved(String),
    /// The backend's certificate did not verify, or it presented none.
    InvalidCertificate,
    /// The backend ended the TLS handshake with this alert.
    TlsAlert(rustls::AlertDescription),
    /// TLS failed otherwise.
    Tls,
    /// What the backend sent is not HTTP, or not what the request asked for; or the URL's
    /// scheme is not one a backend is reached by.
    Protocol,
    /// No connection to the backend could be opened, for another reason.
    Unreachable,
    /// The exchange with the backend failed otherwise.
    Exchange,
    /// The backend's URL is not one a request can go to.
    InvalidUrl,
    /// The client's request body grew past the gateway's limit.
    BodyTooLarge,
    /// The component ran past the request's deadline.
    Deadline,
    /// No instance of the component could be made (every slot taken); a retry may find one.
    NoInstance,
    /// The component failed otherwise: it trapped, or did not answer.
    Component,
}

impl Kind {
    /// Whom a failure of this kind is down to.
    pub fn source(&self) -> ErrorSource {
        match self {
            Kind::EgressRefused
            | Kind::InvalidUrl
            | Kind::Deadline
            | Kind::NoInstance
            | Kind::Component => ErrorSource::Internal,
            Kind::BodyTooLarge => ErrorSource::Downstream,
            _ => ErrorSource::Upstream,
        }
    }

    /// Whether the backend took too long (to connect, or to answer).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Kind::ConnectTimedOut | Kind::ReadTimedOut)
    }
}

/// How a backend failed a forwarded call, as WSO2 tells failures apart (and endpoint
/// settings name them by its error codes): it was too slow, or it was not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendFailure {
    /// It did not answer in time.
    TimedOut,
    /// It could not be reached, or broke the exchange off.
    Unreachable,
}

impl BackendFailure {
    /// WSO2's error code for it, as endpoint settings list them.
    pub fn code(self) -> u32 {
        match self {
            BackendFailure::TimedOut => endpoints::codes::TIMED_OUT,
            BackendFailure::Unreachable => endpoints::codes::CONNECTION_FAILED,
        }
    }
}

/// What went wrong, what the host was doing, and the error behind it.
pub struct Failure {
    kind: Kind,
    /// What the host was doing, or what went wrong, in a few words.
    context: Cow<'static, str>,
    cause: Option<Cause>,
}

impl Failure {
    /// A failure of `kind` that `context` tells, with no error behind it.
    pub fn new(kind: Kind, context: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind,
            context: context.into(),
            cause: None,
        }
    }

    /// A failure of `kind` while the host was doing what `context` says, because of `cause`.
    pub fn because(
        kind: Kind,
        context: impl Into<Cow<'static, str>>,
        cause: impl Into<Cause>,
    ) -> Self {
        Self {
            cause: Some(cause.into()),
            ..Self::new(kind, context)
        }
    }

    /// The component ran past the request's deadline (raised in it by the epoch callback,
    /// or met while the host waited for it).
    pub fn deadline() -> Self {
        Self::new(Kind::Deadline, "guest exceeded its execution deadline")
    }

    /// No instance of the component could be made, because of `cause`.
    pub fn no_instance(cause: impl Into<Cause>) -> Self {
        Self::because(Kind::NoInstance, "no component instance available", cause)
    }

    /// What went wrong.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// Whom it is down to.
    pub fn error_source(&self) -> ErrorSource {
        self.kind.source()
    }

    /// How the backend failed, for a failure of a forwarded call: a timeout, or anything
    /// else that left the call unanswered.
    pub fn backend_failure(&self) -> BackendFailure {
        if self.kind.is_timeout() {
            BackendFailure::TimedOut
        } else {
            BackendFailure::Unreachable
        }
    }

    /// The failure of a call into the component: the one the host raised in it (its
    /// deadline, met by the epoch callback), found under wasmtime's context, or else the
    /// component's own.
    pub fn of_component(err: wasmtime::Error) -> Self {
        match err.downcast_ref::<Failure>().map(Failure::kind) {
            Some(kind) => Self::because(kind.clone(), "calling the component", err),
            None => Self::because(Kind::Component, "the component failed", err),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.context)?;
        match &self.cause {
            Some(cause) => write!(f, ": {cause}"),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} {:?}: {}",
            self.error_source(),
            self.kind,
            self.context
        )?;
        match &self.cause {
            Some(cause) => write!(f, "\n\nCaused by: {cause:?}"),
            None => Ok(()),
        }
    }
}

impl StdError for Failure {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.cause
            .as_deref()
            .map(|cause| cause as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_raised_in_the_component_is_found_under_wasmtimes_context() {
        let deep = wasmtime::Error::new(Failure::deadline()).context("while handling");
        let found = Failure::of_component(deep);
        assert_eq!(found.kind(), &Kind::Deadline);
        assert_eq!(found.error_source(), ErrorSource::Internal);
        let trap = Failure::of_component(wasmtime::Error::msg("trap"));
        assert_eq!(trap.kind(), &Kind::Component);
    }

    #[test]
    fn a_failure_tells_its_context_then_its_cause() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let failure = Failure::because(Kind::ConnectionRefused, "connecting", refused);
        assert_eq!(failure.to_string(), "connecting: refused");
        assert_eq!(StdError::source(&failure).unwrap().to_string(), "refused");
        assert_eq!(failure.error_source(), ErrorSource::Upstream);
        let alone = Failure::new(Kind::InvalidUrl, "no host");
        assert_eq!(alone.to_string(), "no host");
        assert!(StdError::source(&alone).is_none());
    }

    #[test]
    fn only_timeouts_are_timed_out_backends() {
        let failure = |kind| Failure::new(kind, "forwarding");
        for kind in [Kind::ConnectTimedOut, Kind::ReadTimedOut] {
            assert_eq!(failure(kind).backend_failure(), BackendFailure::TimedOut);
        }
        for kind in [Kind::ConnectionRefused, Kind::Protocol, Kind::InvalidUrl] {
            assert_eq!(failure(kind).backend_failure(), BackendFailure::Unreachable);
        }
        assert_eq!(BackendFailure::TimedOut.code(), endpoints::codes::TIMED_OUT);
    }
}
