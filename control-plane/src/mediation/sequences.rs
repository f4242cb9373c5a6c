//! An API's `sequences` (each a name and a flow) resolved into what gateways run: each
//! names one of the API's own policies of that flow, or else a global one; one per flow,
//! as WSO2 deploys one in, out and fault sequence per API. An `in` policy may be a
//! tenant's WebAssembly policy, which the plan names by digest.

use apim_manifest::mediation::{MAX_STEPS, Mediation, WasmPolicy, size};

use super::defaults::global;
use super::records::MediationRow;
use super::synapse::{self, Flow};

/// Why an API's sequences cannot be applied; said as a 400.
pub type Refusal = String;

/// The plan of the sequences named (name, flow), given the API's own policies; `None`
/// when no step is left to run.
pub fn plan(
    named: &[(String, String)],
    own: &[MediationRow],
) -> Result<Option<Mediation>, Refusal> {
    let mut plan = Mediation::default();
    let mut seen: Vec<&str> = Vec::new();
    for (name, flow_name) in named {
        let flow = Flow::named(flow_name).ok_or_else(|| {
            format!(
                "Invalid sequence type '{}' of '{}': in, out or fault",
                flow_name.escape_default(),
                name.escape_default()
            )
        })?;
        if seen.contains(&flow_name.as_str()) {
            return Err(format!(
                "More than one '{flow_name}' sequence: an API has at most one per flow"
            ));
        }
        seen.push(flow_name);
        let mine = own.iter().find(|p| p.name == *name && p.flow == *flow_name);
        if let Some(wasm) = mine.and_then(MediationRow::wasm) {
            plan.wasm = Some(WasmPolicy {
                digest: wasm.digest,
                size: u64::try_from(wasm.size).unwrap_or_default(),
                body_bytes: u64::try_from(wasm.body_bytes).unwrap_or_default(),
            });
            continue;
        }
        let config = match mine {
            Some(policy) => Some(policy.config.as_str()),
            None => {
                global(name, flow_name)
                    .ok_or_else(|| {
                        format!(
                            "Unknown mediation policy '{}' of type '{flow_name}': neither the API's own nor a global one",
                            name.escape_default()
                        )
                    })?
                    .sequence
            }
        };
        if let Some(config) = config {
            let steps = synapse::compile(config, flow)
                .map_err(|why| format!("The sequence '{name}' cannot run: {why}"))?;
            *flow.steps_of(&mut plan) = steps;
        }
    }
    let (count, _) = size(&plan.request);
    let total = count + size(&plan.response).0 + size(&plan.fault).0;
    if total > MAX_STEPS {
        return Err(format!(
            "The API's sequences hold {total} mediators; at most {MAX_STEPS} are allowed"
        ));
    }
    Ok((!plan.is_empty()).then_some(plan))
}

/// Whether the sequences name the policy `name` of `flow`.
pub fn names(named: &[(String, String)], name: &str, flow: &str) -> bool {
    named.iter().any(|(n, f)| n == name && f == flow)
}

#[cfg(test)]
mod tests {
    use apim_manifest::mediation::{Step, Value};

    use super::*;

    fn own(name: &str, flow: &str, body: &str) -> MediationRow {
        MediationRow {
            id: "p".into(),
            api_id: "a".into(),
            name: name.into(),
            flow: flow.into(),
            config: format!(
                r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="{name}">{body}</sequence>"#
            ),
            wasm_digest: None,
            wasm_size: None,
            body_bytes: None,
        }
    }

    fn named(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, f)| (n.to_string(), f.to_string()))
            .collect()
    }

    #[test]
    fn own_policies_come_before_global_ones_of_the_same_name() {
        let header = r#"<header name="X-A" value="1" scope="transport"/>"#;
        let rows = [own("preserve_accept_header", "in", header)];
        let plan = plan(&named(&[("preserve_accept_header", "in")]), &rows)
            .unwrap()
            .unwrap();
        assert_eq!(
            plan.request,
            vec![Step::SetHeader {
                name: "x-a".into(),
                value: Value::Text("1".into())
            }]
        );
        let global = plan_of(&[("preserve_accept_header", "in")]);
        assert_eq!(global.request.len(), 2);
        assert!(global.response.is_empty());
    }

    fn plan_of(pairs: &[(&str, &str)]) -> Mediation {
        plan(&named(pairs), &[]).unwrap().unwrap()
    }

    #[test]
    fn the_seeds_global_sequences_are_known_and_change_nothing_yet() {
        let seed = named(&[("json_validator", "in"), ("log_out_message", "out")]);
        assert_eq!(plan(&seed, &[]), Ok(None));
    }

    #[test]
    fn unknown_names_flows_and_twice_a_flow_are_refused() {
        let rows = [own("mine", "in", "")];
        for (pairs, says) in [
            (vec![("nope", "in")], "Unknown mediation policy 'nope'"),
            (
                vec![("mine", "out")],
                "Unknown mediation policy 'mine' of type 'out'",
            ),
            (vec![("json_fault", "in")], "Unknown"),
            (vec![("mine", "request")], "Invalid sequence type"),
            (
                vec![("mine", "in"), ("preserve_accept_header", "in")],
                "at most one per flow",
            ),
        ] {
            let refusal = plan(&named(&pairs), &rows).unwrap_err();
            assert!(refusal.contains(says), "{pairs:?}: {refusal}");
        }
        let broken = [own("broken", "in", "<send/>")];
        assert!(
            plan(&named(&[("broken", "in")]), &broken)
                .unwrap_err()
                .contains("'send'")
        );
        assert_eq!(plan(&named(&[("mine", "in")]), &rows), Ok(None));
    }
}
