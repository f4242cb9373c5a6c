//! What a request came to, as the component's verdict says it: its `call` record read
//! once into borrowed text for the metrics, the access log, the spans and the analytics.

use crate::wit_host::bindings::exports::apim::gateway::policy::Call;

/// What a request came to, read from the component's `call` record and borrowed from it
/// (each text empty when the request did not get that far: no API matched, no resource,
/// no token).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Called<'a> {
    /// The API's name.
    pub api: &'a str,
    /// The API's id.
    pub api_id: &'a str,
    /// The API's version.
    pub version: &'a str,
    /// The matched resource's URL template.
    pub resource: &'a str,
    /// The calling application's id.
    pub application: &'a str,
    /// `PRODUCTION` or `SANDBOX`.
    pub key_type: &'a str,
    /// The token's end user (never a metric label).
    pub user: &'a str,
    /// Answered from the response cache.
    pub cached: bool,
}

impl<'a> Called<'a> {
    /// The record's texts; an empty record (a request the component did not decide
    /// about) is nothing known, as is one that cannot be read (no component of ours packs
    /// it so).
    pub fn of(call: &'a Call) -> Self {
        if call.texts.is_empty() {
            return Called::default();
        }
        match apim_http::packed::unpack_texts(&call.texts) {
            Ok([api, api_id, version, resource, application, key_type, user]) => Called {
                api,
                api_id,
                version,
                resource,
                application,
                key_type,
                user,
                cached: call.cached,
            },
            Err(_) => {
                tracing::warn!("the component's call record could not be read");
                Called::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_record_is_read_borrowed_and_an_unreadable_one_is_nothing() {
        let texts = [
            "Pets",
            "pets-id",
            "v1",
            "/pets/{id}",
            "app-1",
            "PRODUCTION",
            "eve",
        ];
        let call = Call {
            texts: apim_http::packed::pack_texts(&texts),
            cached: true,
        };
        let called = Called::of(&call);
        assert_eq!(
            (called.api, called.api_id, called.version, called.resource),
            ("Pets", "pets-id", "v1", "/pets/{id}")
        );
        assert_eq!(
            (
                called.application,
                called.key_type,
                called.user,
                called.cached
            ),
            ("app-1", "PRODUCTION", "eve", true)
        );
        let empty = Call {
            texts: Vec::new(),
            cached: false,
        };
        assert_eq!(Called::of(&empty), Called::default());
        // Six texts, or seven cut short: nothing known, and no panic.
        let six = Call {
            texts: apim_http::packed::pack_texts(&texts[..6]),
            cached: false,
        };
        assert_eq!(Called::of(&six), Called::default());
        let mut cut = call.texts.clone();
        cut.pop();
        let cut = Call {
            texts: cut,
            cached: true,
        };
        assert_eq!(Called::of(&cut), Called::default());
    }
}
