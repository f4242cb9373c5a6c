//! What a mediation policy may be: a name fit for a file (WSO2 keeps each as
//! `<type>/<name>.xml` in its registry), one of the three flows, and a Synapse
//! `sequence` as well-formed XML without a DOCTYPE (see `crate::xml`), at most 256 KiB,
//! whose mediators gateways run in that flow (`synapse`); or a tenant's WebAssembly
//! policy (`wit/policy/world.wit`) for the `in` flow, as `apim-policy-world` checks it.

use apim_http::bodies::MAX_MEDIATED_BYTES;

use super::records::{FLOWS, Mediation};
use super::synapse::{self, Flow};
use crate::error::{Error, Result};

/// Largest policy, bytes.
pub const MAX_CONFIG_BYTES: usize = 256 * 1024;
const MAX_NAME_CHARS: usize = 255;

/// A checked policy: name, flow and config, or its WebAssembly.
pub struct CheckedPolicy {
    pub name: String,
    pub flow: String,
    pub config: String,
    pub wasm: Option<WasmUpload>,
}

/// A WebAssembly policy as uploaded, checked.
pub struct WasmUpload {
    pub digest: String,
    pub bytes: Vec<u8>,
    /// The most body bytes it is given; 0: the head only.
    pub body_bytes: u64,
}

/// Checks a `Mediation` body (its `id`, when given, is ignored: the path names it).
pub fn check(body: Mediation) -> Result<CheckedPolicy> {
    crate::error::require_present(&[
        ("name", body.name.is_none()),
        ("type", body.flow.is_none()),
        ("config", body.config.is_none()),
    ])?;
    let name = checked_name(body.name.unwrap_or_default())?;
    let flow = body.flow.unwrap_or_default();
    let Some(runs_in) = Flow::named(&flow) else {
        return Err(invalid_flow(&flow));
    };
    let config = body.config.unwrap_or_default();
    if config.len() > MAX_CONFIG_BYTES {
        return Err(Error::PayloadTooLarge);
    }
    if config.contains('\0') {
        return Err(Error::Invalid(
            "The mediation policy must not contain NUL characters".into(),
        ));
    }
    crate::xml::check_document(&config, "sequence")
        .and_then(|()| synapse::compile(&config, runs_in).map(drop))
        .map_err(|problem| Error::Invalid(format!("Invalid mediation policy: {problem}")))?;
    Ok(CheckedPolicy {
        name,
        flow,
        config,
        wasm: None,
    })
}

/// Checks a WebAssembly policy uploaded as `name` for `flow` (only `in`: it decides
/// about the request), given at most `body_bytes` of the client's body.
pub fn check_wasm(
    name: &str,
    flow: &str,
    body_bytes: u64,
    bytes: Vec<u8>,
) -> Result<CheckedPolicy> {
    let name = checked_name(name.to_string())?;
    if Flow::named(flow).is_none() {
        return Err(invalid_flow(flow));
    }
    if flow != "in" {
        return Err(Error::Invalid(format!(
            "A WebAssembly policy runs in the in flow only, not '{flow}'"
        )));
    }
    if body_bytes > MAX_MEDIATED_BYTES as u64 {
        return Err(Error::Invalid(format!(
            "bodyBytes {body_bytes} is past the {MAX_MEDIATED_BYTES} bytes a policy may be given"
        )));
    }
    apim_policy_world::check(&bytes)
        .map_err(|why| Error::Invalid(format!("Invalid WebAssembly policy: {why}")))?;
    Ok(CheckedPolicy {
        name,
        flow: flow.to_string(),
        config: String::new(),
        wasm: Some(WasmUpload {
            digest: apim_policy_world::digest(&bytes),
            bytes,
            body_bytes,
        }),
    })
}

fn invalid_flow(flow: &str) -> Error {
    Error::Invalid(format!(
        "Invalid type '{}': one of {}",
        flow.escape_default(),
        FLOWS.join(", ")
    ))
}

/// A name fit for a file: letters, digits, `_`, `-` and `.`, never `..`.
fn checked_name(name: String) -> Result<String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || !name.chars().all(plain)
        || name.contains("..")
    {
        return Err(Error::Invalid(format!(
            "Invalid mediation policy name '{}': use letters, digits, '_', '-' and '.'",
            name.escape_default()
        )));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(name: &str, flow: &str, config: &str) -> Mediation {
        Mediation {
            id: None,
            name: Some(name.into()),
            flow: Some(flow.into()),
            config: Some(config.into()),
            wasm: None,
        }
    }

    #[test]
    fn policies_are_named_sequences() {
        let sequence = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="h"><property name="a" value="b"/></sequence>"#;
        assert!(check(body("add_header-1.xml", "fault", sequence)).is_ok());
        for (name, flow, config) in [
            ("../in/x", "in", sequence),
            ("a b", "in", sequence),
            ("", "in", sequence),
            ("h", "IN", sequence),
            ("h", "request", sequence),
            ("h", "in", "<definitions/>"),
            ("h", "in", "<!DOCTYPE s><sequence/>"),
            ("h", "in", "<sequence><send/></sequence>"),
            ("h", "out", "<sequence><respond/></sequence>"),
            (
                "h",
                "fault",
                "<sequence><property name=\"a\" expression=\"json-eval($.a)\"/></sequence>",
            ),
        ] {
            assert!(
                matches!(check(body(name, flow, config)), Err(Error::Invalid(_))),
                "{name} {flow} {config}"
            );
        }
        assert!(matches!(
            check(Mediation::default()),
            Err(Error::InvalidFields(missing)) if missing.len() == 3
        ));
    }

    #[test]
    fn wasm_policies_run_in_the_in_flow_within_the_body_bound() {
        let junk = || b"\0asm\x0d\0\x01\0".to_vec();
        for (name, flow, body_bytes, says) in [
            ("p", "out", 0, "in flow only"),
            ("p", "fault", 0, "in flow only"),
            ("p", "request", 0, "Invalid type"),
            ("../p", "in", 0, "Invalid mediation policy name"),
            ("p", "in", (MAX_MEDIATED_BYTES + 1) as u64, "bodyBytes"),
            ("p", "in", 0, "does not export 'on-request'"),
        ] {
            let refused = check_wasm(name, flow, body_bytes, junk());
            let Err(Error::Invalid(why)) = refused else {
                panic!("{name} {flow} {body_bytes}: not refused");
            };
            assert!(why.contains(says), "{why}");
        }
    }
}
