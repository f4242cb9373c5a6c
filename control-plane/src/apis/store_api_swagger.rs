//! The store's Swagger of an API, `GET /apis/{apiId}/swagger`, with where to call it
//! filled in; and SDK generation (`POST /apis/generate-sdk`), which this platform does
//! not do and says so (501) rather than answering a silent 404.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::records::StoredApi;
use super::visibility::visible_api;
use crate::environments::{self, Endpoints};
use crate::error::{Error, Result};
use crate::http::STORE;
use crate::http::extract::QueryParams;
use crate::http::routes::{Routes, get, post};
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;
use crate::tokens::MaybeCaller;

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{STORE}/apis/{{api_id}}/swagger"),
            get(get_swagger),
        )
        .route(&format!("{STORE}/apis/generate-sdk"), post(generate_sdk))
}

/// `GET /apis/{apiId}/swagger` (anonymous allowed): the definition with `host`, `basePath`
/// (`<context>/<version>`) and `schemes` of the gateways, as WSO2's store serves it.
async fn get_swagger(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    Path(api_id): Path<String>,
) -> Result<Response> {
    let api = visible_api(&state, caller.as_ref(), &api_id).await?;
    let endpoints = environments::endpoints(&state.config);
    let definition = with_gateway(&api, &endpoints);
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        definition.to_string(),
    )
        .into_response())
}

/// The API's definition, where to call it filled in: the schemes of its transports the
/// gateways listen on (all of those when none match), the host of the first of them.
fn with_gateway(api: &StoredApi, endpoints: &Endpoints) -> Value {
    let text = api.record.api_definition.as_deref().unwrap_or("{}");
    let mut definition: Value = serde_json::from_str(text).unwrap_or_else(|_| json!({}));
    if !definition.is_object() {
        definition = json!({});
    }
    let transports = api.record.transport.clone().unwrap_or_default();
    let mut schemes: Vec<&str> = ["https", "http"]
        .into_iter()
        .filter(|s| transports.iter().any(|t| t.eq_ignore_ascii_case(s)))
        .filter(|s| endpoints.of(s).is_some())
        .collect();
    if schemes.is_empty() {
        schemes = ["https", "http"]
            .into_iter()
            .filter(|s| endpoints.of(s).is_some())
            .collect();
    }
    let host = schemes
        .first()
        .and_then(|s| endpoints.of(s))
        .and_then(|url| url.split_once("://"))
        .map(|(_, host)| host.split('/').next().unwrap_or(host).to_string());
    if let Some(host) = host {
        definition["host"] = json!(host);
    }
    definition["basePath"] = json!(format!("{}/{}", api.context, api.version));
    definition["schemes"] = json!(schemes);
    definition
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SdkQuery {
    api_id: Option<String>,
    language: Option<String>,
}

/// `POST /apis/generate-sdk?apiId&language` (`apim:subscribe`): 400 without both, 404 for
/// an API the caller does not see, else 501: no SDK generator is part of this platform.
async fn generate_sdk(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<SdkQuery>,
) -> Result<Json<Value>> {
    caller.require(&state, Scope::Subscribe)?;
    let (Some(api_id), Some(language)) = (q.api_id, q.language.filter(|l| !l.trim().is_empty()))
    else {
        return Err(Error::Invalid(
            "Query parameters apiId and language are required".into(),
        ));
    };
    visible_api(&state, Some(&caller), &api_id).await?;
    Err(Error::NotImplemented(format!(
        "SDK generation ({language}) is not available on this platform"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::ApiRecord;

    fn api(transport: &[&str]) -> StoredApi {
        let record: ApiRecord = serde_json::from_value(json!({
            "apiDefinition": r#"{"swagger":"2.0","paths":{},"host":"backend:9","schemes":["ws"]}"#,
            "transport": transport,
        }))
        .unwrap();
        StoredApi {
            id: "id".into(),
            tenant: "carbon.super".into(),
            provider: "admin".into(),
            name: "Pets".into(),
            version: "v1".into(),
            context: "/t/acme.com/pets".into(),
            status: "PUBLISHED".into(),
            record,
            mcp: None,
        }
    }

    #[test]
    fn the_gateway_replaces_the_backend_in_the_definition() {
        let endpoints = Endpoints {
            http: Some("http://gw:8280".into()),
            https: Some("https://gw.example:8243".into()),
        };
        let both = with_gateway(&api(&["http", "https"]), &endpoints);
        assert_eq!(both["host"], "gw.example:8243");
        assert_eq!(both["basePath"], "/t/acme.com/pets/v1");
        assert_eq!(both["schemes"], json!(["https", "http"]));
        let http_only = with_gateway(&api(&["http"]), &endpoints);
        assert_eq!(http_only["host"], "gw:8280");
        assert_eq!(http_only["schemes"], json!(["http"]));
        let plain = Endpoints {
            http: Some("http://gw:8280".into()),
            https: None,
        };
        let fallback = with_gateway(&api(&["https"]), &plain);
        assert_eq!(fallback["host"], "gw:8280");
        assert_eq!(fallback["schemes"], json!(["http"]));
    }
}
