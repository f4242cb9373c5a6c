//! WSO2's API lifecycle (APILifeCycle.xml): states and the actions that move between them.

/// Lifecycle states, as the REST `status` field spells them.
pub const STATES: &[&str] = &[
    "CREATED",
    "PROTOTYPED",
    "PUBLISHED",
    "BLOCKED",
    "DEPRECATED",
    "RETIRED",
];

/// Every transition: (from, action, to), in the order APILifeCycle.xml lists them.
const TRANSITIONS: &[(&str, &str, &str)] = &[
    ("CREATED", "Publish", "PUBLISHED"),
    ("CREATED", "Deploy as a Prototype", "PROTOTYPED"),
    ("PROTOTYPED", "Publish", "PUBLISHED"),
    ("PROTOTYPED", "Demote to Created", "CREATED"),
    ("PROTOTYPED", "Deploy as a Prototype", "PROTOTYPED"),
    ("PUBLISHED", "Block", "BLOCKED"),
    ("PUBLISHED", "Deploy as a Prototype", "PROTOTYPED"),
    ("PUBLISHED", "Demote to Created", "CREATED"),
    ("PUBLISHED", "Deprecate", "DEPRECATED"),
    ("PUBLISHED", "Publish", "PUBLISHED"),
    ("BLOCKED", "Deprecate", "DEPRECATED"),
    ("BLOCKED", "Re-Publish", "PUBLISHED"),
    ("DEPRECATED", "Retire", "RETIRED"),
];

/// The state an action leads to from `from`, or the actions allowed there.
pub fn next_state(from: &str, action: &str) -> Result<&'static str, Vec<&'static str>> {
    TRANSITIONS
        .iter()
        .find(|(f, a, _)| *f == from && *a == action)
        .map(|(_, _, to)| *to)
        .ok_or_else(|| allowed_actions(from))
}

/// Actions allowed from a state.
pub fn allowed_actions(from: &str) -> Vec<&'static str> {
    TRANSITIONS
        .iter()
        .filter(|(f, _, _)| *f == from)
        .map(|(_, a, _)| *a)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_wso2_state_machine() {
        assert_eq!(next_state("CREATED", "Publish"), Ok("PUBLISHED"));
        assert_eq!(next_state("PUBLISHED", "Block"), Ok("BLOCKED"));
        assert_eq!(next_state("BLOCKED", "Re-Publish"), Ok("PUBLISHED"));
        assert_eq!(next_state("DEPRECATED", "Retire"), Ok("RETIRED"));
        assert_eq!(
            next_state("CREATED", "Retire"),
            Err(vec!["Publish", "Deploy as a Prototype"])
        );
        assert_eq!(next_state("RETIRED", "Publish"), Err(vec![]));
        assert!(next_state("PROTOTYPED", "Demote to Prototyped").is_err());
    }
}
