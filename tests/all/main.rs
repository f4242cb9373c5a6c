//! One test binary for every end-to-end scenario, each against the real binaries. The
//! scenarios named in the two `on_both!` lists run on SQLite and again on PostgreSQL; the
//! rest are declared in their modules and run on SQLite, their subject being the gateway
//! rather than the database (docs/testing.md lists which run where).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use harness::services::{Service, available};
use harness::{Backend, Client, ControlPlane};

mod access;
mod analytics;
mod apimctl;
mod archives;
mod authz;
mod backend_jwt;
mod backends;
mod blocks;
mod bodies;
mod bounds;
mod catalogue;
mod component;
mod content;
mod contract;
mod credentials;
mod dev_facade;
mod devportal;
mod endpoints;
mod faults;
mod fleet;
mod flow;
mod gateway;
mod legacy_soap;
mod leniency;
mod mcp;
mod mediation;
mod observability;
mod openapi;
mod ordering;
mod protected_resource;
mod publisher;
mod publisher_console;
mod registration;
mod restart;
mod secrets;
mod security;
mod signin;
mod store;
mod tenants;
mod throttling;
mod tls;
mod token_types;
mod tokens;
mod traces;
mod transports;
mod wasm_policies;
mod websocket;
mod workflows;

/// What a scenario gets: a running control plane and a client for it.
pub struct Env {
    /// Its database.
    pub backend: Backend,
    /// Its data directory.
    pub data_dir: PathBuf,
    /// The process.
    pub control_plane: ControlPlane,
    /// A client for its management listener.
    pub api: Client,
}

impl Env {
    /// Stops the control plane gracefully and starts it again on the same data.
    pub async fn restart(&mut self) {
        self.restart_with(&[]).await;
    }

    /// Like [`Env::restart`], with more of the control plane's settings (`APIM_*`).
    pub async fn restart_with(&mut self, settings: &[(&str, String)]) {
        let replacement =
            harness::start_control_plane(&self.backend, &self.data_dir, settings).await;
        let old = std::mem::replace(&mut self.control_plane, replacement);
        old.stop().await;
        self.api = Client::new(&self.control_plane.url);
    }
}

/// What an in-process scenario gets: a control plane in the test's own process, driven
/// through its router without a socket, for rules that need no process around them.
pub struct InProcess {
    /// Its database.
    pub backend: Backend,
    /// Its data directory.
    pub data_dir: PathBuf,
    /// A client answered by its router.
    pub api: Client,
}

enum Kind {
    Sqlite,
    Postgres,
}

type Scenario = fn(Env) -> BoxedRun;
type StackScenario = fn(Backend) -> BoxedRun;
type InProcessScenario = fn(InProcess) -> BoxedRun;
type BoxedRun = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs a scenario with a control plane of its own on the `kind` of database.
async fn run(kind: Kind, name: &str, scenario: Scenario) {
    let with_control_plane = move |backend: Backend| -> BoxedRun {
        Box::pin(async move {
            let data_dir = harness::temp_dir();
            let control_plane = harness::start_control_plane(&backend, &data_dir, &[]).await;
            let api = Client::new(&control_plane.url);
            let env = Env {
                backend,
                data_dir: data_dir.clone(),
                control_plane,
                api,
            };
            scenario(env).await;
            let _ = std::fs::remove_dir_all(&data_dir);
        })
    };
    on_database(kind, name, with_control_plane).await;
}

/// Runs a scenario with a control plane of its own in this process on the `kind` of database.
async fn run_in_process(kind: Kind, name: &str, scenario: InProcessScenario) {
    let in_process = move |backend: Backend| -> BoxedRun {
        Box::pin(async move {
            let data_dir = harness::temp_dir();
            let api = harness::in_process_control_plane(&backend, &data_dir).await;
            scenario(InProcess {
                backend,
                data_dir: data_dir.clone(),
                api,
            })
            .await;
            let _ = std::fs::remove_dir_all(&data_dir);
        })
    };
    on_database(kind, name, in_process).await;
}

/// Runs an in-process scenario on SQLite and on PostgreSQL at once: each waits mostly on
/// its database and its clock, so the two overlap; a failure says on which it failed.
async fn run_in_process_on_both(name: &'static str, scenario: InProcessScenario) {
    let on = |kind| tokio::spawn(run_in_process(kind, name, scenario));
    let (sqlite, postgres) = tokio::join!(on(Kind::Sqlite), on(Kind::Postgres));
    for (database, outcome) in [("SQLite", sqlite), ("PostgreSQL", postgres)] {
        if let Err(err) = outcome {
            eprintln!("{name} failed on {database}");
            std::panic::resume_unwind(err.into_panic());
        }
    }
}

/// Runs a scenario that starts a whole stack (gateway too) on the `kind` of database.
async fn run_stack(kind: Kind, name: &str, scenario: StackScenario) {
    on_database(kind, name, scenario).await;
}

/// Runs `scenario` on a database of `kind` (a fresh one on PostgreSQL, dropped after).
async fn on_database(kind: Kind, name: &str, scenario: impl FnOnce(Backend) -> BoxedRun) {
    let database = match kind {
        Kind::Sqlite => Backend::Sqlite,
        Kind::Postgres if !available(Service::Postgres, name) => return,
        Kind::Postgres => Backend::fresh_postgres().await,
    };
    let outcome = tokio::spawn(scenario(database.clone())).await;
    database.cleanup().await;
    if let Err(err) = outcome {
        std::panic::resume_unwind(err.into_panic());
    }
}

/// Declares each scenario as a test on SQLite (in module `$sqlite`) and one on
/// PostgreSQL (in `$postgres`), run by `$runner`.
macro_rules! on_both {
    ($runner:ident, $sqlite:ident, $postgres:ident; $($module:ident :: $name:ident),* $(,)?) => {
        mod $sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::$runner(crate::Kind::Sqlite, stringify!($name), |x| Box::pin(crate::$module::$name(x))).await;
                }
            )*
        }
        mod $postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::$runner(crate::Kind::Postgres, stringify!($name), |x| Box::pin(crate::$module::$name(x))).await;
                }
            )*
        }
    };
}

on_both!(
    run, sqlite, postgres;
    flow::spec_flow_end_to_end,
    publisher::oversized_bodies_are_refused_on_the_socket,
    restart::restart_keeps_records_and_keys,
    dev_facade::facade_serves_every_operation_directly_and_through_the_gateway,
    credentials::management_clients_cannot_call_apis,
    credentials::lifetimes_are_bounded,
    credentials::failed_logins_lock_until_an_admin_unlocks,
    credentials::failed_logins_are_throttled_per_address,
    credentials::unknown_users_cost_what_wrong_passwords_do,
    credentials::saturated_password_checks_get_503,
    credentials::slow_clients_are_cut,
    secrets::data_files_are_private,
    secrets::secrets_stay_sealed_end_to_end,
    secrets::data_key_rotation,
    secrets::add_user_keeps_passwords_out_of_ps,
    observability::control_plane_health_and_metrics,
);

/// Declares each in-process scenario as one test, `rules::<name>`, that runs it on SQLite
/// and on PostgreSQL at once.
macro_rules! on_both_at_once {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod rules {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::run_in_process_on_both(stringify!($name), |x| Box::pin(crate::$module::$name(x))).await;
                }
            )*
        }
    };
}

// The control plane's rules, in the test's own process (its router answers each request
// without a socket), on SQLite and on PostgreSQL.
on_both_at_once!(
    publisher::api_validation_and_conflicts,
    publisher::lifecycle_state_machine,
    publisher::update_list_search_and_delete,
    publisher::wso2_clients_leniency,
    publisher::first_publish_applies_the_checklist,
    publisher::forwarding_keeps_a_subscription_made_meanwhile,
    content::documents_in_publisher_and_store,
    content::thumbnails_and_tags,
    content::wsdl_is_xml_without_doctype,
    content::mediation_policies,
    content::copies_carry_their_content,
    registration::registration_follows_wso2,
    tokens::token_service_grants_and_errors,
    tokens::refresh_and_revocation,
    tokens::scopes_follow_roles,
    catalogue::environments_store_swagger_and_sdks,
    catalogue::copy_api_and_default_version,
    catalogue::certificates_per_tenant,
    catalogue::tiers_per_tenant,
    credentials::application_keys_get_application_scopes_only,
    credentials::revoking_any_token_revokes_its_family,
    credentials::concurrent_refreshes_redeem_once,
    token_types::opaque_tokens_and_introspection,
    analytics::reports_add_up_once_and_queries_are_bounded,
    leniency::omitted_fields_get_wso2_defaults,
    leniency::padded_values_stay_refused,
    leniency::put_keeps_identity_fields,
    leniency::wso2_rest_tests_as_sent,
    store::applications_and_default_application,
    store::subscription_rules,
    store::key_generation,
    tenants::tenant_users_and_unique_names,
    authz::tenant_routes_cannot_be_squatted,
    authz::tenant_admin_is_confined,
    authz::creator_cannot_deploy_or_impersonate,
    authz::visibility_and_availability,
    access::publisher_lists_blocks_and_unblocks_subscriptions,
    access::publisher_reads_applications_of_its_tenant,
    access::key_grants_and_secrets_change,
    access::application_scopes_and_batch_subscriptions,
    workflows::approvals_per_tenant,
    contract::every_operation_of_wso2s_contracts_is_served,
    mcp::mcp_settings_are_checked_and_stored,
    archives::api_projects_export_as_wso2_lays_them_out,
    archives::api_projects_import_as_wso2_takes_them,
    archives::wso2_projects_import_with_what_they_carry,
    archives::applications_export_and_import_as_wso2s_admin_api,
);

/// Declares each scenario as a test on SQLite only (in module `$sqlite`), run by `$runner`.
macro_rules! on_sqlite {
    ($runner:ident, $sqlite:ident; $($module:ident :: $name:ident),* $(,)?) => {
        mod $sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::$runner(crate::Kind::Sqlite, stringify!($name), |x| Box::pin(crate::$module::$name(x))).await;
                }
            )*
        }
    };
}

// The seed flow and the gateway's scenarios with the components' WASIp3 artefacts, hosted
// with instance reuse as on Spin 4.1 (and `gateway::spec_flow_with_the_p3_artefact`); on
// SQLite, their subject being the component rather than the database.
// apimctl and apimcli against a control plane: their subject is the client, not the
// database.
on_sqlite!(
    run, apimctl_sqlite;
    apimctl::gitops_plans_and_applies_exactly,
    archives::apimcli_2x_requests_replayed,
);
on_sqlite!(
    run, p3_sqlite;
    dev_facade::facade_serves_every_operation_on_the_p3_artefacts,
);
on_sqlite!(
    run_stack, p3_stack_sqlite;
    security::paths_are_canonical_on_the_p3_artefact,
    security::framing_is_kept_on_the_p3_artefact,
    access::blocks_and_new_secrets_reach_the_p3_artefact,
    endpoints::load_balance_and_failover_on_the_p3_artefact,
    endpoints::timeouts_and_suspension_on_the_p3_artefact,
    token_types::token_types_at_the_gateway_on_the_p3_artefact,
);

on_both!(
    run_stack, backend_jwt_sqlite, backend_jwt_postgres;
    backend_jwt::backend_jwt_on_the_host_path,
);
on_sqlite!(
    run_stack, backend_jwt_component_sqlite;
    backend_jwt::backend_jwt_on_the_component_path,
);

on_both!(
    run_stack, mediation_sqlite, mediation_postgres;
    mediation::sequences_on_the_host_path,
);
on_sqlite!(
    run_stack, mediation_component_sqlite;
    mediation::sequences_on_the_component_path,
);
on_both!(
    run_stack, mediation_bodies_sqlite, mediation_bodies_postgres;
    mediation::bodies_on_the_host_path,
);
on_sqlite!(
    run_stack, mediation_bodies_component_sqlite;
    mediation::bodies_on_the_component_path,
);
on_both!(
    run_stack, wasm_policies_sqlite, wasm_policies_postgres;
    wasm_policies::wasm_policies_on_the_host_path,
);
on_sqlite!(
    run_stack, wasm_policies_component_sqlite;
    wasm_policies::wasm_policies_on_the_component_path,
);

on_both!(
    run_stack, devportal_sqlite, devportal_postgres;
    devportal::the_portal_shows_each_visitor_what_their_token_sees,
    devportal::applications_keys_and_subscriptions_in_the_portal,
    devportal::an_expired_session_is_renewed_with_its_refresh_token,
);
on_both!(
    run_stack, publisher_console_sqlite, publisher_console_postgres;
    publisher_console::the_console_offers_each_user_what_their_roles_allow,
    publisher_console::an_api_from_a_url_with_its_scopes_wsdl_and_certificates,
);
on_both!(
    run_stack, devportal_browser_sqlite, devportal_browser_postgres;
    devportal::the_portal_in_chromium,
    devportal::a_provider_publishes_and_blocks_while_a_consumer_tries_it,
);

on_both!(
    run_stack, mcp_sqlite, mcp_postgres;
    mcp::agents_call_tools_on_the_host_path,
);
on_sqlite!(
    run_stack, mcp_paths_sqlite;
    mcp::agents_call_tools_on_the_component_path,
    mcp::agents_call_tools_in_the_spin_like_mode,
);

on_both!(
    run_stack, signin_sqlite, signin_postgres;
    signin::authorization_code_through_the_pages,
);
on_sqlite!(
    run_stack, signin_attacks_sqlite;
    signin::attacks_on_the_flow_are_refused,
    signin::tokens_of_the_former_issuer_still_verify,
    signin::sign_in_pages_in_chromium,
    signin::a_resource_binds_the_token_to_its_api,
    signin::clients_named_by_their_metadata_documents,
);

on_both!(
    run_stack, stack_sqlite, stack_postgres;
    security::paths_are_canonical_on_the_host_path,
    security::paths_are_canonical_on_the_component_path,
    security::framing_is_kept_on_the_host_path,
    security::framing_is_kept_on_the_component_path,
    security::the_gateways_own_endpoints_need_its_secret,
    security::a_request_that_has_passed_the_gateway_is_a_loop,
    security::backends_are_reached_only_where_the_egress_policy_allows,
    bounds::oversized_apis_are_refused_and_changes_keep_reaching_gateways,
    access::blocks_and_new_secrets_reach_the_host_path,
    access::blocks_and_new_secrets_reach_the_component_path,
    access::blocks_and_new_secrets_reach_the_spin_like_mode,
    blocks::a_block_outlives_the_deleted_subscription,
    catalogue::copied_version_becomes_the_default_route,
    catalogue::a_new_tier_is_enforced_without_a_restart,
    workflows::a_subscription_on_hold_is_refused_until_approved,
    endpoints::load_balance_and_failover_on_the_host_path,
    endpoints::load_balance_and_failover_on_the_component_path,
    endpoints::timeouts_and_suspension_on_the_host_path,
    endpoints::timeouts_and_suspension_on_the_component_path,
    token_types::token_types_at_the_gateway_on_the_host_path,
    token_types::token_types_at_the_gateway_on_the_component_path,
    token_types::token_types_at_the_gateway_in_the_spin_like_mode,
    backends::endpoint_certificates_on_the_host_path,
    backends::endpoint_certificates_on_the_component_path,
    analytics::gateway_traffic_is_charted_per_api_and_application,
    tls::seed_flow_over_tls_on_the_host_path,
    tls::seed_flow_over_tls_on_the_component_path,
    tls::seed_flow_over_h2c_on_the_host_path,
    tls::seed_flow_over_h2c_on_the_component_path,
    websocket::websocket_apis_on_the_host_path,
    websocket::websocket_messages_count_against_the_tiers,
    websocket::websocket_handshakes_are_refused_on_the_component_path,
    websocket::websocket_connections_close_with_1001_when_the_gateway_stops,
);
