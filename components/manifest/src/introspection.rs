//! What the control plane's introspection endpoint (RFC 7662, `POST /oauth2/introspect`,
//! for gateways) answers about a token, and what a gateway reads of it: one definition for
//! both sides.

use serde::{Deserialize, Deserializer, Serialize};

/// An introspection answer. Inactive tokens (unknown, expired, revoked, of a deleted
/// application) are `{"active":false}` and nothing else (RFC 7662 §2.2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Introspection {
    /// Whether the token may be used now.
    pub active: bool,
    /// Granted scopes, space separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The consumer key it was issued to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The end user (the application's owner for client credentials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Always `Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// Expiry, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    /// Issued at, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    /// The end user, as a JWT's `sub`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// The token's id, which revocations name (as they name a JWT's `jti`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// The store application of the consumer key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_id: Option<String>,
    /// PRODUCTION or SANDBOX.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_type: Option<String>,
    /// The audience the token was issued for (RFC 8707 resource indicators), absent for a
    /// token issued without one. Written as a list; read as RFC 7662 allows, a string or
    /// a list.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "string_or_list"
    )]
    pub aud: Option<Vec<String>>,
}

/// An audience written as one string or a list of them (RFC 7519 §4.1.3).
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// Reads `aud` as a list, whether written as a string or a list.
fn string_or_list<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<String>>, D::Error> {
    Ok(
        Option::<OneOrMany>::deserialize(deserializer)?.map(|aud| match aud {
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_audience_reads_as_a_string_or_a_list_and_is_left_out_when_absent() {
        let read = |text: &str| serde_json::from_str::<Introspection>(text).unwrap().aud;
        assert_eq!(read(r#"{"active":true}"#), None);
        assert_eq!(read(r#"{"active":true,"aud":null}"#), None);
        assert_eq!(
            read(r#"{"active":true,"aud":"http://gw/a/1"}"#),
            Some(vec!["http://gw/a/1".into()])
        );
        assert_eq!(
            read(r#"{"active":true,"aud":["http://gw/a/1","http://gw/b/1"]}"#),
            Some(vec!["http://gw/a/1".into(), "http://gw/b/1".into()])
        );
        assert!(serde_json::from_str::<Introspection>(r#"{"active":true,"aud":7}"#).is_err());
        let inactive = serde_json::to_string(&Introspection::default()).unwrap();
        assert_eq!(inactive, r#"{"active":false}"#);
        let with = Introspection {
            active: true,
            aud: Some(vec!["http://gw/a/1".into()]),
            ..Introspection::default()
        };
        assert!(
            serde_json::to_string(&with)
                .unwrap()
                .contains(r#""aud":["http://gw/a/1"]"#)
        );
    }
}
