//! What a mediation policy may be: a name fit for a file (WSO2 keeps each as
//! `<type>/<name>.xml` in its registry), one of the three flows, and a Synapse
//! `sequence` as well-formed XML without a DOCTYPE (see `crate::xml`), at most 256 KiB,
//! whose mediators gateways run in that flow (`synapse`).

use super::records::{FLOWS, Mediation};
use super::synapse::{self, Flow};
use crate::error::{Error, Result};

/// Largest policy, bytes.
pub const MAX_CONFIG_BYTES: usize = 256 * 1024;
const MAX_NAME_CHARS: usize = 255;

/// A checked policy: name, flow and config.
pub struct CheckedPolicy {
    pub name: String,
    pub flow: String,
    pub config: String,
}

/// Checks a `Mediation` body (its `id`, when given, is ignored: the path names it).
pub fn check(body: Mediation) -> Result<CheckedPolicy> {
    crate::error::require_present(&[
        ("name", body.name.is_none()),
        ("type", body.flow.is_none()),
        ("config", body.config.is_none()),
    ])?;
    let name = body.name.unwrap_or_default();
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
    let flow = body.flow.unwrap_or_default();
    let Some(runs_in) = Flow::named(&flow) else {
        return Err(Error::Invalid(format!(
            "Invalid type '{}': one of {}",
            flow.escape_default(),
            FLOWS.join(", ")
        )));
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
    Ok(CheckedPolicy { name, flow, config })
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
}
