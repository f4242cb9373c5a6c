//! The store's APIs, `/api/am/store/v0.14/apis`, and who sees and subscribes to each
//! (WSO2 2.6's visibility and subscription availability).
//!
//! - `visibility`: `PUBLIC` is seen by anyone, anonymous callers and other tenants
//!   included; `PRIVATE` by users of the API's tenant; `RESTRICTED` by users of its
//!   tenant holding one of `visibleRoles` (and by its provider and the tenant's
//!   administrators); `CONTROLLED` by its tenant and the tenants in `visibleTenants`.
//! - `subscriptionAvailability`: users of other tenants subscribe only to an API they
//!   see that is available to `all_tenants`, or to `specific_tenants` naming theirs
//!   (`current_tenant`, the default, keeps it to the API's tenant).
//!
//! An API the caller may not see answers exactly as a missing one does (404).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;

use super::queries::{find as find_api, tenant_apis};
use super::records::StoredApi;
use crate::error::{Error, Result};
use crate::state::AppState;
use crate::tokens::Caller;
use crate::users;

/// Lifecycle states the store lists.
pub const STORE_STATES: &[&str] = &["PUBLISHED", "PROTOTYPED"];

/// Lifecycle states of an API the store shows when asked for it by id: those it lists,
/// and a DEPRECATED version, which its subscribers still call (new subscriptions to it are
/// refused), as WSO2's store shows it.
const STORE_STATES_BY_ID: &[&str] = &["PUBLISHED", "PROTOTYPED", "DEPRECATED"];

/// Who is looking: a user's tenant, name and roles, or no one (anonymous).
#[derive(Debug, Default)]
pub struct Viewer {
    user: Option<(String, String, Vec<String>)>,
}

impl Viewer {
    /// The viewer a caller is: its roles as they are now.
    pub async fn of(state: &AppState, caller: Option<&Caller>) -> Result<Self> {
        let Some(caller) = caller else {
            return Ok(Viewer::default());
        };
        let roles = users::find(&state.db, caller.username())
            .await?
            .map(|user| user.roles)
            .unwrap_or_default();
        Ok(Viewer {
            user: Some((
                caller.tenant().to_string(),
                caller.username().to_string(),
                roles,
            )),
        })
    }

    fn tenant(&self) -> Option<&str> {
        self.user.as_ref().map(|(tenant, _, _)| tenant.as_str())
    }

    /// Whether the viewer sees the API (its visibility alone, whatever its state).
    pub fn sees(&self, api: &StoredApi) -> bool {
        let record = &api.record;
        let home = self.tenant() == Some(api.tenant.as_str());
        match record.visibility.as_deref().unwrap_or("PUBLIC") {
            "PUBLIC" => true,
            "PRIVATE" => home,
            "CONTROLLED" => {
                home || self.tenant().is_some_and(|tenant| {
                    record.visible_tenants.iter().flatten().any(|t| t == tenant)
                })
            }
            // RESTRICTED, and anything unknown, to the roles named.
            _ => home && self.holds_a_visible_role(api),
        }
    }

    fn holds_a_visible_role(&self, api: &StoredApi) -> bool {
        let Some((_, username, roles)) = &self.user else {
            return false;
        };
        let visible_roles = api.record.visible_roles.iter().flatten();
        *username == api.provider
            || roles.iter().any(|r| r == "admin")
            || visible_roles
                .map(|role| role.strip_prefix("Internal/").unwrap_or(role))
                .any(|role| roles.iter().any(|r| r == role))
    }

    /// Whether the viewer may subscribe to the API: sees it, and is of its tenant or of
    /// one its subscription availability opens it to.
    pub fn may_subscribe(&self, api: &StoredApi) -> bool {
        let Some(tenant) = self.tenant() else {
            return false;
        };
        if !self.sees(api) {
            return false;
        }
        tenant == api.tenant
            || match api.record.subscription_availability.as_deref() {
                Some("all_tenants") => true,
                Some("specific_tenants") => api
                    .record
                    .subscription_available_tenants
                    .iter()
                    .flatten()
                    .any(|t| t == tenant),
                _ => false,
            }
    }
}

/// The API if the caller sees it in the store (its state and visibility); 404 as for a
/// missing one otherwise. Every store resource under `/apis/{apiId}` finds its API so.
pub async fn visible_api(
    state: &AppState,
    caller: Option<&Caller>,
    api_id: &str,
) -> Result<StoredApi> {
    let viewer = Viewer::of(state, caller).await?;
    match find_api(&state.db, api_id).await? {
        Some(api) if STORE_STATES_BY_ID.contains(&api.status.as_str()) && viewer.sees(&api) => {
            Ok(api)
        }
        _ => Err(Error::NotFound("API", api_id.to_string())),
    }
}

/// The APIs of the store's tenant (see [`crate::tokens::store_tenant`]) the caller sees,
/// by name and version.
pub async fn visible_apis(
    state: &AppState,
    caller: Option<&Caller>,
    headers: &HeaderMap,
) -> Result<Vec<Arc<StoredApi>>> {
    let viewer = Viewer::of(state, caller).await?;
    let tenant = crate::tokens::store_tenant(headers, caller);
    let listed = state.shared::<StoreListing>().apis(state, &tenant).await?;
    Ok(listed
        .iter()
        .filter(|api| viewer.sees(api))
        .cloned()
        .collect())
}

/// How long a tenant's listed APIs are reused at most: what another control plane of the
/// platform changed shows within this (this one's own changes show at once).
const LISTING_FRESH_FOR: Duration = Duration::from_secs(1);
/// Tenants whose listings are kept at once; past it all are dropped and read again.
const MAX_LISTED_TENANTS: usize = 1024;

/// Each tenant's APIs in the store's states, read from the database and parsed once and
/// reused by every store listing (catalogue pages, searches, tags) until a change
/// succeeds on this control plane (`changed`) or a second passes: read whole for every
/// page, a thousand records cost the catalogue most of its time.
#[derive(Default)]
pub struct StoreListing {
    generation: AtomicU64,
    tenants: Mutex<HashMap<String, Listed>>,
}

/// A tenant's listing: the generation and time it was read at, and its APIs.
struct Listed {
    generation: u64,
    read_at: Instant,
    apis: Arc<Vec<Arc<StoredApi>>>,
}

impl StoreListing {
    /// Forgets every listing: a change succeeded.
    pub fn changed(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The tenant's APIs in the store's states, by name and version.
    async fn apis(&self, state: &AppState, tenant: &str) -> Result<Arc<Vec<Arc<StoredApi>>>> {
        let generation = self.generation.load(Ordering::SeqCst);
        if let Some(listed) = self.tenants.lock().expect("listing lock").get(tenant)
            && listed.generation == generation
            && listed.read_at.elapsed() < LISTING_FRESH_FOR
        {
            return Ok(listed.apis.clone());
        }
        let apis: Vec<Arc<StoredApi>> = tenant_apis(&state.db, tenant, STORE_STATES)
            .await?
            .into_iter()
            .map(Arc::new)
            .collect();
        let apis = Arc::new(apis);
        let mut tenants = self.tenants.lock().expect("listing lock");
        if tenants.len() >= MAX_LISTED_TENANTS {
            tenants.clear();
        }
        // Read before a change that raced it, it is kept under the older generation and
        // never served after that change.
        tenants.insert(
            tenant.to_string(),
            Listed {
                generation,
                read_at: Instant::now(),
                apis: apis.clone(),
            },
        );
        Ok(apis)
    }
}
