//! The `workflow_settings` and `workflows` rows.

use serde::{Deserialize, Serialize};

/// Which requests of a tenant wait for an approval (a `workflow_settings` row; none: no
/// request waits, as with WSO2's default executors).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    sqlx::FromRow,
    utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowSettings {
    #[sqlx(try_from = "i64")]
    pub application_creation: Flag,
    #[sqlx(try_from = "i64")]
    pub subscription_creation: Flag,
    #[sqlx(try_from = "i64")]
    pub production_key_generation: Flag,
    #[sqlx(try_from = "i64")]
    pub sandbox_key_generation: Flag,
}

/// A switch stored as 0 or 1 (the integer both databases share), shown as a boolean.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
pub struct Flag(pub bool);

impl From<i64> for Flag {
    fn from(stored: i64) -> Self {
        Flag(stored != 0)
    }
}

impl Flag {
    pub(super) fn stored(self) -> i64 {
        i64::from(self.0)
    }
}

impl WorkflowSettings {
    /// Whether requests of this kind wait for an approval.
    pub fn requires(&self, kind: Kind) -> bool {
        match kind {
            Kind::ApplicationCreation => self.application_creation.0,
            Kind::SubscriptionCreation => self.subscription_creation.0,
            Kind::ProductionKeys => self.production_key_generation.0,
            Kind::SandboxKeys => self.sandbox_key_generation.0,
        }
    }
}

/// What waits for an approval, named as WSO2's workflow types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A new application (subject: the application), `CREATED` until approved.
    ApplicationCreation,
    /// A new subscription (subject: the subscription), `ON_HOLD` until approved.
    SubscriptionCreation,
    /// Production keys of an application (subject: the application).
    ProductionKeys,
    /// Sandbox keys of an application (subject: the application).
    SandboxKeys,
}

impl Kind {
    /// WSO2's name of the workflow type, as stored.
    pub fn name(self) -> &'static str {
        match self {
            Kind::ApplicationCreation => "AM_APPLICATION_CREATION",
            Kind::SubscriptionCreation => "AM_SUBSCRIPTION_CREATION",
            Kind::ProductionKeys => "AM_APPLICATION_REGISTRATION_PRODUCTION",
            Kind::SandboxKeys => "AM_APPLICATION_REGISTRATION_SANDBOX",
        }
    }

    /// The kind of a stored name.
    pub fn of_name(name: &str) -> Option<Kind> {
        [
            Kind::ApplicationCreation,
            Kind::SubscriptionCreation,
            Kind::ProductionKeys,
            Kind::SandboxKeys,
        ]
        .into_iter()
        .find(|kind| kind.name() == name)
    }

    /// The kind of a key generation for a key type (`PRODUCTION` or `SANDBOX`).
    pub fn keys(key_type: &str) -> Kind {
        if key_type == "SANDBOX" {
            Kind::SandboxKeys
        } else {
            Kind::ProductionKeys
        }
    }
}

/// A request that waits for (or got) an approval.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Workflow {
    pub reference_id: String,
    pub tenant: String,
    pub kind: String,
    pub subject: String,
    pub status: String,
    pub payload: String,
    /// Unix seconds.
    pub created_at: i64,
}

/// The columns of [`Workflow`], in its order.
pub(super) const WORKFLOW_COLUMNS: &str =
    "reference_id, tenant, kind, subject, status, payload, created_at";

/// Status of a workflow waiting for its decision (WSO2's `WorkflowStatus.CREATED`).
pub const WAITING: &str = "CREATED";
/// Approved.
pub const APPROVED: &str = "APPROVED";
/// Rejected.
pub const REJECTED: &str = "REJECTED";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_stored_by_wso2_names() {
        for kind in [
            Kind::ApplicationCreation,
            Kind::SubscriptionCreation,
            Kind::ProductionKeys,
            Kind::SandboxKeys,
        ] {
            assert_eq!(Kind::of_name(kind.name()), Some(kind));
        }
        assert_eq!(Kind::of_name("AM_API_STATE"), None);
        assert_eq!(Kind::keys("SANDBOX"), Kind::SandboxKeys);
        assert_eq!(Kind::keys("PRODUCTION"), Kind::ProductionKeys);
    }

    #[test]
    fn nothing_waits_by_default() {
        let settings = WorkflowSettings::default();
        assert!(!settings.requires(Kind::ApplicationCreation));
        assert!(!settings.requires(Kind::SubscriptionCreation));
        let keys = WorkflowSettings {
            sandbox_key_generation: Flag(true),
            ..WorkflowSettings::default()
        };
        assert!(keys.requires(Kind::SandboxKeys));
        assert!(!keys.requires(Kind::ProductionKeys));
    }
}
