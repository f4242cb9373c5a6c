//! WSO2's leniency where WSO2 is lenient: optional and defaulted
//! properties a client leaves out get WSO2 2.6's values, and a `PUT` keeps an API's
//! identity as stored; each next to the strictness it must not weaken.

use harness::stack::ALL_SCOPES;
use harness::steps::{Steps, keys_request};
use harness::{PUBLISHER, STORE, spec_api_record};
use serde_json::{Value, json};

use crate::InProcess;

async fn admin_token(env: &InProcess) -> String {
    env.api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await
}

/// `record` without `properties`.
fn without(mut record: Value, properties: &[&str]) -> Value {
    for property in properties {
        record.as_object_mut().unwrap().remove(*property);
    }
    record
}

/// `record` with `changes` merged in (nulls kept as nulls).
fn with(mut record: Value, changes: Value) -> Value {
    for (key, value) in changes.as_object().unwrap() {
        record[key] = value.clone();
    }
    record
}

async fn api_count(env: &InProcess, token: &str) -> i64 {
    let list = env
        .api
        .get(&format!("{PUBLISHER}/apis"), token)
        .await
        .expect(200);
    list.body["pagination"]["total"].as_i64().unwrap()
}

/// Every property WSO2 fills in when a client leaves it out.
const DEFAULTED: &[&str] = &[
    "type",
    "isDefaultVersion",
    "transport",
    "visibility",
    "responseCaching",
    "cacheTimeout",
    "subscriptionAvailability",
    "accessControl",
    "tags",
];

/// A record with only what WSO2 cannot do without: name, context, version, tiers, the
/// endpoints and the definition.
fn minimal_record() -> Value {
    let mut record = without(
        spec_api_record(),
        &[
            "description",
            "provider",
            "status",
            "wsdlUri",
            "destinationStatsEnabled",
            "maxTps",
            "visibleRoles",
            "endpointSecurity",
            "gatewayEnvironments",
            "sequences",
            "businessInformation",
            "corsConfiguration",
        ],
    );
    record = without(record, DEFAULTED);
    record["name"] = json!("Minimal");
    record["context"] = json!("/minimal");
    record
}

fn assert_defaults(record: &Value) {
    let expected = json!({
        "type": "HTTP",
        "isDefaultVersion": false,
        "transport": ["http", "https"],
        "visibility": "PUBLIC",
        "responseCaching": "Disabled",
        "cacheTimeout": 300,
        "subscriptionAvailability": "current_tenant",
        "accessControl": "NONE",
        "tags": [],
        // WSO2's default, switched off: gateways answer no CORS for the API.
        "corsConfiguration": {
            "corsConfigurationEnabled": false,
            "accessControlAllowOrigins": ["*"],
            "accessControlAllowCredentials": false,
            "accessControlAllowHeaders":
                ["authorization", "Access-Control-Allow-Origin", "Content-Type", "SOAPAction"],
            "accessControlAllowMethods": ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"],
        },
    });
    for (property, value) in expected.as_object().unwrap() {
        assert_eq!(&record[property], value, "{property} in {record}");
    }
}

/// An API created with only its required core gets WSO2's defaults for everything else,
/// stored (a read shows them) and live (the store lists it as PUBLIC); an explicit null
/// where WSO2's validation refuses one, an empty transport list, no tiers, no definition
/// or no endpoints are still refused, and create nothing. Key generation without
/// `accessAllowDomains` gets none, as WSO2's request model starts with an empty list.
pub async fn omitted_fields_get_wso2_defaults(env: InProcess) {
    let api = &env.api;
    let token = admin_token(&env).await;
    let apis = format!("{PUBLISHER}/apis");
    let refused: Vec<(Value, &str)> = vec![
        (
            with(minimal_record(), json!({"isDefaultVersion": null})),
            "isDefaultVersion: may not be null",
        ),
        (
            with(minimal_record(), json!({"visibility": null})),
            "visibility: may not be null",
        ),
        (
            with(minimal_record(), json!({"transport": null})),
            "transport: may not be null",
        ),
        (
            with(minimal_record(), json!({"transport": []})),
            "At least one transport",
        ),
        (
            with(minimal_record(), json!({"visibility": "public"})),
            "Invalid value 'public' for visibility",
        ),
        (
            without(minimal_record(), &["tiers"]),
            "No tier defined for the API",
        ),
        (
            without(minimal_record(), &["apiDefinition"]),
            "apiDefinition: may not be null",
        ),
        (
            without(minimal_record(), &["endpointConfig"]),
            "endpointConfig: may not be null",
        ),
        (without(minimal_record(), &["context"]), "400_context"),
    ];
    for (record, why) in &refused {
        api.post_json(&apis, &token, record)
            .await
            .expect_error(400, why);
    }
    assert_eq!(
        api_count(&env, &token).await,
        0,
        "a refusal created nothing"
    );

    let created = api
        .post_json(&apis, &token, &minimal_record())
        .await
        .expect(201);
    assert_defaults(&created.body);
    assert_eq!(created.body["provider"], "admin");
    let id = created.str("id");
    let read = api.get(&format!("{apis}/{id}"), &token).await.expect(200);
    assert_defaults(&read.body);

    // PUBLIC by default: published, the store shows it to anyone.
    let steps = Steps::new(api, &token);
    steps.lifecycle(&id, "Publish").await.unwrap();
    api.get(&format!("{STORE}/apis/{id}"), "").await.expect(200);

    // Keys without accessAllowDomains; an explicit null, or no validityTime, refused.
    let app = steps
        .create_application("Lenient", "Unlimited")
        .await
        .unwrap();
    let generate = format!("{STORE}/applications/generate-keys?applicationId={app}");
    api.post_json(
        &generate,
        &token,
        &with(keys_request(), json!({"accessAllowDomains": null})),
    )
    .await
    .expect_error(400, "accessAllowDomains: may not be null");
    api.post_json(
        &generate,
        &token,
        &without(keys_request(), &["validityTime"]),
    )
    .await
    .expect_error(400, "validityTime: may not be null");
    let keys = api
        .post_json(
            &generate,
            &token,
            &without(keys_request(), &["accessAllowDomains"]),
        )
        .await
        .expect(200);
    assert!(!keys.str("consumerKey").is_empty());
}

/// Padded values: WSO2's REST layer does not trim an API's name, version or context nor an
/// application's name (its `APIConsumerImpl` refuses a padded one), so neither do we: a
/// padded value is refused as before and creates nothing, the same value unpadded works.
pub async fn padded_values_stay_refused(env: InProcess) {
    let api = &env.api;
    let token = admin_token(&env).await;
    let apis = format!("{PUBLISHER}/apis");
    for (property, padded) in [
        ("name", " Minimal "),
        ("version", " v1.0.0"),
        ("context", "/minimal "),
    ] {
        api.post_json(
            &apis,
            &token,
            &with(minimal_record(), json!({ property: padded })),
        )
        .await
        .expect(400);
    }
    // Tier names are compared as given (WSO2's RestApiUtil.getInvalidTierNames): padded,
    // a tier is unknown.
    api.post_json(
        &apis,
        &token,
        &with(
            minimal_record(),
            json!({"name": "Tiered", "context": "/tiered", "tiers": [" Unlimited"]}),
        ),
    )
    .await
    .expect_error(400, "Specified tier(s) [ Unlimited] are invalid");
    assert_eq!(api_count(&env, &token).await, 0);
    let id = api
        .post_json(&apis, &token, &minimal_record())
        .await
        .expect(201)
        .str("id");

    let apps = format!("{STORE}/applications");
    api.post_json(
        &apps,
        &token,
        &json!({"name": " Padded ", "throttlingTier": "Unlimited"}),
    )
    .await
    .expect_error(400, "leading or trailing");
    let created = api
        .post_json(
            &apps,
            &token,
            &json!({"name": "Padded", "throttlingTier": "Unlimited"}),
        )
        .await
        .expect(201);
    assert_eq!(created.body["name"], "Padded");
    let app = created.str("applicationId");

    // An application's tier (WSO2's ApplicationsApiServiceImpl: "Specified tier .. is
    // invalid") and a subscription's (not among the API's tiers: 403) are not trimmed.
    api.post_json(
        &apps,
        &token,
        &json!({"name": "TierPadded", "throttlingTier": " Unlimited"}),
    )
    .await
    .expect_error(400, "Specified tier  Unlimited is invalid");
    Steps::new(api, &token)
        .lifecycle(&id, "Publish")
        .await
        .unwrap();
    let subscribe = format!("{STORE}/subscriptions");
    let subscription =
        |tier: &str| json!({"tier": tier, "apiIdentifier": id, "applicationId": app});
    api.post_json(&subscribe, &token, &subscription("Unlimited "))
        .await
        .expect_error(403, "Tier Unlimited  is not allowed");
    api.post_json(&subscribe, &token, &subscription("Unlimited"))
        .await
        .expect(201);
}

/// `PUT /apis/{apiId}` keeps name, version, context, provider and status as stored, as the
/// contract says: a body that repeats them, changes them or leaves them out gets the
/// stored ones back with 200 and its other changes applied. Beside it: a PUT without the
/// scope, one to another tenant's API, or one with an unknown tier changes nothing.
pub async fn put_keeps_identity_fields(env: InProcess) {
    let api = &env.api;
    let token = admin_token(&env).await;
    let apis = format!("{PUBLISHER}/apis");
    let created = api
        .post_json(&apis, &token, &spec_api_record())
        .await
        .expect(201);
    let id = created.str("id");
    let path = format!("{apis}/{id}");
    let identity = |record: &Value| {
        ["name", "version", "context", "provider", "status", "id"]
            .map(|property| record[property].clone())
    };
    let stored = identity(&created.body);

    // Repeated as read.
    let mut body = created.body.clone();
    body["description"] = json!("repeated");
    let reply = api.put_json(&path, &token, &body).await.expect(200);
    assert_eq!(identity(&reply.body), stored);
    assert_eq!(reply.body["description"], "repeated");

    // Changed: ignored, the rest applies.
    let changed = with(
        created.body.clone(),
        json!({"name": "Renamed", "version": "v9", "context": "/elsewhere",
               "provider": "someone", "status": "PUBLISHED", "description": "changed"}),
    );
    let reply = api.put_json(&path, &token, &changed).await.expect(200);
    assert_eq!(identity(&reply.body), stored);
    assert_eq!(reply.body["description"], "changed");

    // Left out: the stored ones too.
    let bare = with(
        without(
            created.body.clone(),
            &["name", "version", "context", "provider", "status", "id"],
        ),
        json!({"description": "bare"}),
    );
    let reply = api.put_json(&path, &token, &bare).await.expect(200);
    assert_eq!(identity(&reply.body), stored);
    let read = api.get(&path, &token).await.expect(200);
    assert_eq!(identity(&read.body), stored);
    assert_eq!(read.body["description"], "bare");
    // The old route is the API's still: nothing was re-claimed under the ignored context.
    let search = api
        .get(&format!("{apis}?query=context:/elsewhere"), &token)
        .await
        .expect(200);
    assert_eq!(search.body["count"], 0, "{}", search.body);

    // Strictness beside it.
    let viewer = api
        .login("admin", harness::ADMIN_PASSWORD, "apim:api_view")
        .await;
    let attempt = with(bare.clone(), json!({"description": "no scope"}));
    api.put_json(&path, &viewer, &attempt).await.expect(401);
    api.put_json(
        &path,
        &token,
        &with(bare.clone(), json!({"tiers": ["Nope"]})),
    )
    .await
    .expect_error(400, "Specified tier(s) [Nope] are invalid");
    api.put_json(&format!("{apis}/not-an-api"), &token, &bare)
        .await
        .expect(404);
    let read = api.get(&path, &token).await.expect(200);
    assert_eq!(read.body["description"], "bare");
    assert_eq!(read.body["tiers"], created.body["tiers"]);

    // Applications: the id and subscriber stay whatever the body says of them.
    let steps = Steps::new(api, &token);
    let app = steps
        .create_application("Identity", "Unlimited")
        .await
        .unwrap();
    let reply = api
        .put_json(
            &format!("{STORE}/applications/{app}"),
            &token,
            &json!({"applicationId": "another", "subscriber": "someone",
                    "name": "Identity", "throttlingTier": "Unlimited",
                    "description": "kept"}),
        )
        .await
        .expect(200);
    assert_eq!(reply.body["applicationId"], app.as_str());
    assert_eq!(reply.body["subscriber"], "admin");
    assert_eq!(reply.body["description"], "kept");
}

/// A definition with one operation, `get /*`, at `tier`.
fn definition_with_tier(tier: &str) -> String {
    json!({"swagger": "2.0", "info": {"title": "Tiered", "version": "v1"},
           "paths": {"/*": {"get": {"x-auth-type": "Application & Application User",
                                    "x-throttling-tier": tier,
                                    "responses": {"200": {"description": "OK"}}}}}})
    .to_string()
}

/// An endpoint config with this production URL.
fn endpoint_config(url: &str) -> String {
    json!({"endpoint_type": "http", "production_endpoints": {"url": url, "config": null}})
        .to_string()
}

/// What WSO2 2.6's own REST tests send and WSO2 accepts: a subscription tier (made with
/// `POST /tiers/api`) named as an operation's `x-throttling-tier`, an endpoint URL padded
/// with spaces (trimmed, as WSO2's gateway trims an address URI), a definition missing a
/// comma (json-simple's reading), and paths with a trailing slash. Beside each, what
/// stays refused: a tier the tenant has at no level, an endpoint URL with a space inside
/// or of another scheme, a definition with a bare word, and a path nothing serves.
pub async fn wso2_rest_tests_as_sent(env: InProcess) {
    let api = &env.api;
    let token = api
        .login(
            "admin",
            harness::ADMIN_PASSWORD,
            harness::stack::TIER_SCOPES,
        )
        .await;
    let apis = format!("{PUBLISHER}/apis");
    let tier = json!({"name": "TwentyPerMin", "tierPlan": "FREE", "requestCount": 20,
                      "unitTime": 60000, "stopOnQuotaReach": true});
    api.post_json(&format!("{PUBLISHER}/tiers/api"), &token, &tier)
        .await
        .expect(201);

    let tiered = |name: &str, context: &str, tier: &str| {
        with(
            minimal_record(),
            json!({"name": name, "context": context, "tiers": ["TwentyPerMin"],
                   "apiDefinition": definition_with_tier(tier)}),
        )
    };
    api.post_json(&apis, &token, &tiered("Tiered", "/tiered", "TwentyPerMin"))
        .await
        .expect(201);
    api.post_json(&apis, &token, &tiered("Nowhere", "/nowhere", "NoSuchTier"))
        .await
        .expect_error(
            400,
            "x-throttling-tier of get /* is not a known resource tier",
        );

    let padded = with(
        minimal_record(),
        json!({"endpointConfig": endpoint_config("  http://127.0.0.1:8080/devs ")}),
    );
    let created = api.post_json(&apis, &token, &padded).await.expect(201);
    let stored: Value = serde_json::from_str(created.str("endpointConfig").as_str()).unwrap();
    assert_eq!(
        stored["production_endpoints"]["url"],
        "http://127.0.0.1:8080/devs"
    );
    let id = created.str("id");
    for (url, refusal) in [
        ("http://127.0.0.1:8080/de vs", "has no host"),
        (
            " ftp://127.0.0.1/devs",
            "must be an http:// or https:// URL",
        ),
    ] {
        let changed = with(
            created.body.clone(),
            json!({"endpointConfig": endpoint_config(url)}),
        );
        api.put_json(&format!("{apis}/{id}"), &token, &changed)
            .await
            .expect_error(400, refusal);
    }
    let read = api.get(&format!("{apis}/{id}"), &token).await.expect(200);
    assert_eq!(
        read.body["endpointConfig"], created.body["endpointConfig"],
        "a refused update changes nothing"
    );

    // A definition missing a comma, as WSO2's tests send one, is read as json-simple
    // reads it and kept as the JSON it means; one with a bare word is still refused.
    let missing_comma = r#"{"swagger":"2.0","info":{"title":"Commas","version":"v1"},"paths":{"/*":{"get":{"x-auth-type":"Application & Application User" "x-throttling-tier":"Unlimited","responses":{"200":{"description":"OK"}}}}}}"#;
    let commas = with(
        minimal_record(),
        json!({"name": "Commas", "context": "/commas", "apiDefinition": missing_comma}),
    );
    let created_commas = api.post_json(&apis, &token, &commas).await.expect(201);
    let kept: Value = serde_json::from_str(&created_commas.str("apiDefinition")).unwrap();
    assert_eq!(kept["paths"]["/*"]["get"]["x-throttling-tier"], "Unlimited");
    let bare = with(
        minimal_record(),
        json!({"name": "Bare", "context": "/bare",
               "apiDefinition": missing_comma.replace("\"OK\"", "OK")}),
    );
    api.post_json(&apis, &token, &bare)
        .await
        .expect_error(400, "not a valid JSON document");

    // A trailing slash is served as without it, on any operation.
    let environments = api
        .get(&format!("{PUBLISHER}/environments/?apiId={id}"), &token)
        .await
        .expect(200);
    assert!(environments.body["count"].as_i64().unwrap() >= 1);
    api.get(&format!("{apis}/{id}/"), &token).await.expect(200);
    api.get(&format!("{apis}/?limit=1"), &token)
        .await
        .expect(200);
    api.get(&format!("{STORE}/apis/{id}/"), &token)
        .await
        .expect(404);
    api.get(&format!("{PUBLISHER}/no-such-resource/"), &token)
        .await
        .expect(404);
    assert_eq!(api_count(&env, &token).await, 3);
}
