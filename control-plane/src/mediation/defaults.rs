//! The global mediation policies every API may use, as WSO2 2.6 ships some of its own
//! (the ids are those of WSO2's example answer, kept so that clients comparing them
//! find them). Read-only: they are part of the product, not of the database.

use super::records::MediationInfo;

/// A global policy: id, name and flow (the contract lists them only; their sequences
/// are WSO2's Synapse configuration, which this platform does not run).
pub struct GlobalPolicy {
    pub id: &'static str,
    pub name: &'static str,
    pub flow: &'static str,
}

/// The global policies, by flow and name.
pub const GLOBAL_POLICIES: &[GlobalPolicy] = &[
    GlobalPolicy {
        id: "f9c36f4d-a2b6-41e7-b311-d358a47916be",
        name: "json_fault",
        flow: "fault",
    },
    GlobalPolicy {
        id: "3921225b-7918-4b95-a851-22c4e4e3e911",
        name: "json_to_xml_in_message",
        flow: "in",
    },
    GlobalPolicy {
        id: "3776b215-b3bc-40b6-bdcb-06efa7de64be",
        name: "preserve_accept_header",
        flow: "in",
    },
    GlobalPolicy {
        id: "15c17c2f-33e3-4c37-a262-04dfa49983a4",
        name: "apply_accept_header",
        flow: "out",
    },
    GlobalPolicy {
        id: "2af75853-ed75-4d25-81aa-0ebbeca691ea",
        name: "xml_to_json_out_message",
        flow: "out",
    },
];

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
