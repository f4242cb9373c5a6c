//! WSO2 2.6's model of an API (`apim_archive::ApiJson`) made from our records, for an
//! export.

use apim_archive::{ApiIdentifier, ApiJson, TierName, provider_in_project};
use serde_json::{Map, Value};

use crate::apis::records::ApiRecord;

/// WSO2's model of an API whose record is `record` (as the publisher answers it, its
/// backend password masked): the password itself never goes in.
pub fn model_of(record: &ApiRecord) -> ApiJson {
    let name = record.name.clone().unwrap_or_default();
    let version = record.version.clone().unwrap_or_default();
    let provider = record.provider.clone().unwrap_or_default();
    let context = record.context.clone().unwrap_or_default();
    let template = if context.contains("{version}") {
        context.clone()
    } else {
        format!("{}/{{version}}", context.trim_end_matches('/'))
    };
    let sequence = |flow: &str| {
        record
            .sequence_names()
            .into_iter()
            .find(|(_, f)| f == flow)
            .map(|(n, _)| n)
    };
    let security = record.backend_security();
    let business = record.business_information.as_ref();
    let max_tps = record.max_tps_limits();
    ApiJson {
        id: Some(ApiIdentifier {
            provider_name: provider_in_project(&provider),
            api_name: name,
            version: version.clone(),
        }),
        uuid: record.id.clone(),
        description: record.description.clone(),
        api_type: Some(
            record
                .api_type
                .clone()
                .unwrap_or_else(|| "HTTP".into())
                .to_uppercase(),
        ),
        context: Some(template.replace("{version}", &version)),
        context_template: Some(template),
        tags: record.tags.clone().unwrap_or_default(),
        documents: Vec::new(),
        available_tiers: (record.tiers.clone().unwrap_or_default())
            .into_iter()
            .map(|name| TierName {
                display_name: Some(name.clone()),
                name,
            })
            .collect(),
        api_level_policy: record.api_level_policy.clone(),
        status: record.status.clone(),
        technical_owner: text_of(business, "technicalOwner"),
        technical_owner_email: text_of(business, "technicalOwnerEmail"),
        business_owner: text_of(business, "businessOwner"),
        business_owner_email: text_of(business, "businessOwnerEmail"),
        production_max_tps: max_tps
            .as_ref()
            .and_then(|m| m.production)
            .map(|n| n.to_string()),
        sandbox_max_tps: max_tps
            .as_ref()
            .and_then(|m| m.sandbox)
            .map(|n| n.to_string()),
        visibility: record.visibility.as_deref().map(str::to_lowercase),
        visible_roles: joined(record.visible_roles.as_ref()),
        visible_tenants: joined(record.visible_tenants.as_ref()),
        endpoint_secured: security.is_some(),
        endpoint_auth_digest: security
            .as_ref()
            .and_then(|s| s.security_type.as_deref())
            .is_some_and(|t| t.eq_ignore_ascii_case("digest")),
        endpoint_ut_username: security.as_ref().and_then(|s| s.username.clone()),
        endpoint_ut_password: security.as_ref().map(|_| String::new()),
        transports: joined(record.transport.as_ref()),
        in_sequence: sequence("in"),
        out_sequence: sequence("out"),
        fault_sequence: sequence("fault"),
        // WSO2's model always says it; an API that does not is its tenant's alone.
        subscription_availability: Some(
            record
                .subscription_availability
                .as_deref()
                .unwrap_or("current_tenant")
                .to_lowercase(),
        ),
        subscription_available_tenants: joined(record.subscription_available_tenants.as_ref()),
        cors_configuration: record.cors_configuration.clone(),
        endpoint_config: record.endpoint_config.clone(),
        response_cache: Some(
            if record
                .response_caching
                .as_deref()
                .is_some_and(|c| c.eq_ignore_ascii_case("enabled"))
            {
                "Enabled".into()
            } else {
                "Disabled".into()
            },
        ),
        cache_timeout: record.cache_timeout,
        implementation: Some("ENDPOINT".into()),
        authorization_header: record.authorization_header.clone(),
        scopes: Vec::new(),
        is_default_version: record.is_default_version.unwrap_or(false),
        is_published_default_version: false,
        environments: record
            .gateway_environments
            .as_deref()
            .map(|e| {
                e.split(',')
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        additional_properties: record.additional_properties.clone().unwrap_or_default(),
        access_control: record
            .access_control
            .as_deref()
            .map(access_control_in_model),
        access_control_roles: joined(record.access_control_roles.as_ref()),
        other: Map::new(),
    }
}

/// The REST API's `accessControl` (`NONE`, `RESTRICTED`) as WSO2's model has it (`all`,
/// `restricted`).
fn access_control_in_model(rest: &str) -> String {
    if rest.eq_ignore_ascii_case("NONE") {
        "all".into()
    } else {
        rest.to_lowercase()
    }
}

/// A list as WSO2's model keeps it: comma-separated, none when empty.
fn joined(list: Option<&Vec<String>>) -> Option<String> {
    list.filter(|l| !l.is_empty()).map(|l| l.join(","))
}

fn text_of(value: Option<&Value>, member: &str) -> Option<String> {
    value?.get(member)?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> ApiRecord {
        serde_json::from_value(serde_json::json!({
            "name": "Pets", "version": "1.0.0", "provider": "ann@acme.com",
            "context": "/t/acme.com/pets", "type": "HTTP", "tags": ["pets"],
            "tiers": ["Gold", "Unlimited"], "visibility": "RESTRICTED",
            "visibleRoles": ["a", "b"], "transport": ["http", "https"],
            "endpointConfig": "{\"endpoint_type\":\"http\"}", "responseCaching": "Enabled",
            "cacheTimeout": 60, "isDefaultVersion": true, "accessControl": "NONE",
            "gatewayEnvironments": "Production and Sandbox",
            "sequences": [{"name": "add_header", "type": "in"}],
            "maxTps": {"production": 100, "sandbox": 10},
            "businessInformation": {"businessOwner": "Jane"},
            "endpointSecurity": {"type": "basic", "username": "svc", "password": "pw"}
        }))
        .unwrap()
    }

    #[test]
    fn wso2s_model_says_what_the_record_says() {
        let model = model_of(&record());
        let json = serde_json::to_value(&model).unwrap();
        assert_eq!(json["id"]["providerName"], "ann-AT-acme.com");
        assert_eq!(json["context"], "/t/acme.com/pets/1.0.0");
        assert_eq!(json["contextTemplate"], "/t/acme.com/pets/{version}");
        assert_eq!(json["visibleRoles"], "a,b");
        assert_eq!(json["productionMaxTps"], "100");
        assert_eq!(json["responseCache"], "Enabled");
        assert_eq!(json["endpointUTPassword"], "");
        assert!(!json.to_string().contains("\"pw\""));
    }

    #[test]
    fn the_record_comes_back_from_wso2s_model() {
        let model = model_of(&record());
        let (back, not_taken) = model.to_record(Some("{\"swagger\":\"2.0\"}"));
        assert_eq!(back["provider"], "ann@acme.com");
        assert_eq!(back["context"], "/t/acme.com/pets");
        assert_eq!(back["visibility"], "RESTRICTED");
        assert_eq!(back["visibleRoles"], serde_json::json!(["a", "b"]));
        assert_eq!(
            back["maxTps"],
            serde_json::json!({"production": 100, "sandbox": 10})
        );
        assert_eq!(back["accessControl"], "NONE");
        assert_eq!(
            back["sequences"],
            serde_json::json!([{"name": "add_header", "type": "in"}])
        );
        assert_eq!(back["apiDefinition"], "{\"swagger\":\"2.0\"}");
        assert_eq!(
            back["endpointSecurity"],
            serde_json::json!({"type": "basic", "username": "svc"})
        );
        assert_eq!(not_taken, vec!["endpointUTPassword".to_string()]);
    }
}
