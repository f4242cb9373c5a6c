//! The global mediation policies every API may name in its `sequences`: those WSO2 2.6
//! ships in `repository/resources/customsequences` (the ids of the five in WSO2's example
//! answer kept, so that clients comparing them find them). Read-only: they are part of
//! the product, not of the database. Each says what gateways do with it: the steps of
//! WSO2's sequence where this gateway's mediators express it (the message's format
//! included); nothing yet where WSO2's logs the body, validates it or tunes the
//! transport.

use super::records::MediationInfo;

/// A global policy: id, name, flow, and its sequence in this gateway's mediators when
/// gateways apply it.
pub struct GlobalPolicy {
    pub id: &'static str,
    pub name: &'static str,
    pub flow: &'static str,
    /// What gateways run; `None` while it is listed and may be named but does nothing.
    pub sequence: Option<&'static str>,
}

/// WSO2's `preserve_accept_header`: the client's `Accept` kept in a property (for
/// `apply_accept_header`) and not sent to the backend.
const PRESERVE_ACCEPT_HEADER: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="preserve_accept_header">
  <property name="WSO2_AM_API_ACCEPT_MESSAGE_TYPE" expression="get-property('transport', 'Accept')"/>
  <property name="Accept" scope="transport" action="remove"/>
</sequence>"#;

/// WSO2's `json_fault`: on a backend failure, its log line, and the fault as JSON with
/// status 500 (or `CUSTOM_HTTP_SC`, when an earlier sequence set it), instead of the
/// gateway's own answer (WSO2's replaces the default fault sequence, CORS handler
/// included).
const JSON_FAULT: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="json_fault">
  <log level="custom">
    <property name="STATUS" value="Executing custom 'fault' sequence"/>
    <property name="ERROR_CODE" expression="get-property('ERROR_CODE')"/>
    <property name="ERROR_MESSAGE" expression="get-property('ERROR_MESSAGE')"/>
  </log>
  <payloadFactory media-type="json">
    <format>{"fault":{"code":$1,"type":"Status report","message":"Runtime Error","description":"$2"}}</format>
    <args>
      <arg expression="$ctx:ERROR_CODE"/>
      <arg expression="$ctx:ERROR_MESSAGE"/>
    </args>
  </payloadFactory>
  <filter source="$ctx:CUSTOM_HTTP_SC" regex="[1-5][0-9][0-9]">
    <then><property name="HTTP_SC" expression="$ctx:CUSTOM_HTTP_SC" scope="axis2"/></then>
    <else><property name="HTTP_SC" value="500" scope="axis2"/></else>
  </filter>
  <respond/>
</sequence>"#;

/// WSO2's five format policies: each sets `messageType` (the in flow's the backend's
/// request, the out flow's the client's answer), `apply_accept_header` to the `Accept`
/// that `preserve_accept_header` kept.
const JSON_TO_XML_IN_MESSAGE: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="json_to_xml_in_message">
  <property name="messageType" value="application/xml" scope="axis2"/>
</sequence>"#;
const XML_TO_JSON_IN_MESSAGE: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="xml_to_json_in_message">
  <property name="messageType" value="application/json" scope="axis2"/>
</sequence>"#;
const JSON_TO_XML_OUT_MESSAGE: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="json_to_xml_out_message">
  <property name="messageType" value="application/xml" scope="axis2"/>
</sequence>"#;
const XML_TO_JSON_OUT_MESSAGE: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="xml_to_json_out_message">
  <property name="messageType" value="application/json" scope="axis2"/>
</sequence>"#;
const APPLY_ACCEPT_HEADER: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="apply_accept_header">
  <property name="messageType" expression="get-property('default', 'WSO2_AM_API_ACCEPT_MESSAGE_TYPE')" scope="axis2"/>
</sequence>"#;

const fn applied(
    id: &'static str,
    name: &'static str,
    flow: &'static str,
    sequence: &'static str,
) -> GlobalPolicy {
    GlobalPolicy {
        id,
        name,
        flow,
        sequence: Some(sequence),
    }
}

const fn listed(id: &'static str, name: &'static str, flow: &'static str) -> GlobalPolicy {
    GlobalPolicy {
        id,
        name,
        flow,
        sequence: None,
    }
}

/// The global policies, by flow and name.
pub const GLOBAL_POLICIES: &[GlobalPolicy] = &[
    GlobalPolicy {
        id: "f9c36f4d-a2b6-41e7-b311-d358a47916be",
        name: "json_fault",
        flow: "fault",
        sequence: Some(JSON_FAULT),
    },
    listed(
        "f59d0d71-80df-422c-bee8-ba5fcb0602fe",
        "debug_json_fault",
        "fault",
    ),
    listed(
        "ea48da2f-7aa7-4989-b3d4-74ffb4e765da",
        "debug_in_flow",
        "in",
    ),
    listed(
        "6fc49e6c-d94c-4c39-82a8-16d30e7e0d27",
        "disable_chunking",
        "in",
    ),
    applied(
        "3921225b-7918-4b95-a851-22c4e4e3e911",
        "json_to_xml_in_message",
        "in",
        JSON_TO_XML_IN_MESSAGE,
    ),
    listed(
        "58305b90-2a1d-4c85-981b-62b91157a98d",
        "json_validator",
        "in",
    ),
    listed(
        "788e9ee7-1a9f-46b0-b1c1-076a5bc7c4e9",
        "log_in_message",
        "in",
    ),
    GlobalPolicy {
        id: "3776b215-b3bc-40b6-bdcb-06efa7de64be",
        name: "preserve_accept_header",
        flow: "in",
        sequence: Some(PRESERVE_ACCEPT_HEADER),
    },
    listed("a0309961-067c-4f22-b7ab-687780b65339", "regex_policy", "in"),
    applied(
        "c51e68d5-04d6-4360-a88c-b7739f7823ee",
        "xml_to_json_in_message",
        "in",
        XML_TO_JSON_IN_MESSAGE,
    ),
    listed(
        "8db06ce0-8569-4d9d-85b2-8c5160c0ce0b",
        "xml_validator",
        "in",
    ),
    applied(
        "15c17c2f-33e3-4c37-a262-04dfa49983a4",
        "apply_accept_header",
        "out",
        APPLY_ACCEPT_HEADER,
    ),
    listed(
        "0f614a61-eb09-4564-8b36-0155548eba42",
        "debug_out_flow",
        "out",
    ),
    listed(
        "f90eac95-8c7d-4edc-83a2-d05ce2160cb5",
        "disable_chunking",
        "out",
    ),
    applied(
        "be21dea2-5f42-4a33-87f6-4242c4ae2bc6",
        "json_to_xml_out_message",
        "out",
        JSON_TO_XML_OUT_MESSAGE,
    ),
    listed(
        "4ae419b0-fd35-41ea-a539-cca3964c3d55",
        "log_out_message",
        "out",
    ),
    applied(
        "2af75853-ed75-4d25-81aa-0ebbeca691ea",
        "xml_to_json_out_message",
        "out",
        XML_TO_JSON_OUT_MESSAGE,
    ),
];

/// The global policy of this name and flow, if any.
pub fn global(name: &str, flow: &str) -> Option<&'static GlobalPolicy> {
    GLOBAL_POLICIES
        .iter()
        .find(|p| p.name == name && p.flow == flow)
}

impl GlobalPolicy {
    /// Its list item.
    pub fn info(&self) -> MediationInfo {
        MediationInfo {
            name: self.name.to_string(),
            id: self.id.to_string(),
            flow: self.flow.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::synapse::{Flow, compile};
    use super::*;

    #[test]
    fn the_applied_global_policies_compile_in_their_flow() {
        for policy in GLOBAL_POLICIES {
            let flow = Flow::named(policy.flow).expect(policy.flow);
            if let Some(sequence) = policy.sequence {
                assert!(
                    !compile(sequence, flow).unwrap().is_empty(),
                    "{}",
                    policy.name
                );
            }
        }
        let ids: std::collections::HashSet<&str> = GLOBAL_POLICIES.iter().map(|p| p.id).collect();
        assert_eq!(ids.len(), GLOBAL_POLICIES.len());
    }
}
