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

/// What a `lifecycleChecklist` (`item:true,item:false`) asks of a first publish. WSO2's
/// APILifeCycle.xml names its two items as below; its REST contract documents the short
/// names; both are taken, in any case, and other items are ignored, as WSO2 ignores them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checklist {
    /// Older published versions of the API become DEPRECATED.
    pub deprecate_old_versions: bool,
    /// Older versions' subscriptions stay behind (else the new version gets them).
    pub require_resubscription: bool,
}

const DEPRECATE_ITEMS: [&str; 2] = [
    "Deprecate old versions after publish the API",
    "Deprecate Old Versions",
];
const RESUBSCRIBE_ITEMS: [&str; 2] = [
    "Requires re-subscription when publish the API",
    "Require Re-Subscription",
];

impl Checklist {
    /// Reads the query parameter; an item's value is true only when it says `true`, as
    /// Java's `Boolean.parseBoolean` has it.
    pub fn parse(list: Option<&str>) -> Self {
        let mut checklist = Checklist::default();
        for item in list.unwrap_or_default().split(',') {
            let Some((name, value)) = item.rsplit_once(':') else {
                continue;
            };
            let (name, checked) = (name.trim(), value.trim().eq_ignore_ascii_case("true"));
            let named = |names: &[&str]| names.iter().any(|n| n.eq_ignore_ascii_case(name));
            if named(&DEPRECATE_ITEMS) {
                checklist.deprecate_old_versions = checked;
            } else if named(&RESUBSCRIBE_ITEMS) {
                checklist.require_resubscription = checked;
            }
        }
        checklist
    }
}

/// Whether moving `from` to `to` is a first publish, where WSO2 applies the checklist
/// (its `APIExecutor` does so from CREATED or PROTOTYPED to PUBLISHED).
pub fn is_first_publish(from: &str, to: &str) -> bool {
    matches!(from, "CREATED" | "PROTOTYPED") && to == "PUBLISHED"
}

/// Orders versions as WSO2's `APIVersionStringComparator`: dot-separated parts, numbers
/// (a leading `v` aside) by value, other parts as text; a version with more parts after
/// equal ones is the newer.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Vec<String> {
        v.trim_start_matches(['v', 'V'])
            .split('.')
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (parts(a), parts(b));
    for (x, y) in a.iter().zip(&b) {
        let order = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => x.cmp(y),
        };
        if order.is_ne() {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checklists_take_both_spellings_of_the_two_items() {
        let long = Checklist::parse(Some(
            "Deprecate old versions after publish the API:true,Requires re-subscription when publish the API:false",
        ));
        assert!(long.deprecate_old_versions && !long.require_resubscription);
        let short = Checklist::parse(Some(
            " Deprecate Old Versions : TRUE , Require Re-Subscription:true",
        ));
        assert!(short.deprecate_old_versions && short.require_resubscription);
        for none in [
            None,
            Some(""),
            Some("Deprecate Old Versions"),
            Some("Other:true"),
            Some("Deprecate Old Versions:yes"),
        ] {
            assert_eq!(Checklist::parse(none), Checklist::default(), "{none:?}");
        }
        assert!(
            is_first_publish("CREATED", "PUBLISHED") && is_first_publish("PROTOTYPED", "PUBLISHED")
        );
        assert!(
            !is_first_publish("PUBLISHED", "PUBLISHED")
                && !is_first_publish("BLOCKED", "PUBLISHED")
        );
    }

    #[test]
    fn versions_compare_as_wso2_compares_them() {
        use std::cmp::Ordering::*;
        assert_eq!(compare_versions("v1.0.0", "v2.0.0"), Less);
        assert_eq!(compare_versions("1.10", "1.9"), Greater);
        assert_eq!(compare_versions("v2", "2"), Equal);
        assert_eq!(compare_versions("1.0", "1.0.1"), Less);
        assert_eq!(compare_versions("1.0-beta", "1.0-alpha"), Greater);
    }

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
