//! Token audiences and lifetimes, refresh families, and credential protection, each
//! hostile request beside the legitimate one it must not disturb.

use std::time::{Duration, Instant};

use harness::stack::ALL_SCOPES;
use harness::steps::Steps;
use harness::{Client, PUBLISHER, Reply, STORE};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{Env, InProcess};

const ADMIN: &str = "/api/am/admin/v0.14";

/// A registered (management) client of the administrator: (id, secret).
async fn management_client(api: &Client, name: &str) -> (String, String) {
    let client = api
        .register("admin", harness::ADMIN_PASSWORD, name)
        .await
        .expect(200);
    (client.str("clientId"), client.str("clientSecret"))
}

/// Restarts the control plane with `settings` (`APIM_*`); a management client on it.
async fn reconfigured(env: &mut Env, settings: &[(&str, &str)], name: &str) -> (String, String) {
    let settings: Vec<(&str, String)> = settings.iter().map(|(k, v)| (*k, v.to_string())).collect();
    env.restart_with(&settings).await;
    management_client(&env.api, name).await
}

fn password_form<'a>(user: &'a str, password: &'a str, scope: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("grant_type", "password"),
        ("username", user),
        ("password", password),
        ("scope", scope),
    ]
}

fn refresh_form(refresh_token: &str) -> Vec<(&str, &str)> {
    vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
    ]
}

pub(crate) async fn revoke(api: &Client, (id, secret): &(String, String), token: &str) -> Reply {
    api.send(
        reqwest::Client::new()
            .post(format!("{}/oauth2/revoke", api.base))
            .basic_auth(id, Some(secret))
            .form(&[("token", token)]),
    )
    .await
}

/// The API record of the spec named `name`, pointing at `endpoint`, declaring `scopes`
/// in its Swagger definition as WSO2 2.6 does.
fn api_declaring(name: &str, endpoint: &str, scopes: Value) -> Value {
    let mut record = harness::stack::api_record(name, endpoint);
    let mut definition: Value =
        serde_json::from_str(record["apiDefinition"].as_str().unwrap()).unwrap();
    definition["x-wso2-security"] = json!({"apim": {"x-wso2-scopes": scopes}});
    record["apiDefinition"] = json!(definition.to_string());
    record
}

/// Creates and publishes an API; its id.
async fn published(api: &Client, token: &str, record: &Value) -> String {
    Steps::new(api, token).publish_api(record).await.unwrap()
}

async fn application(api: &Client, token: &str, name: &str) -> String {
    let steps = Steps::new(api, token);
    steps.create_application(name, "Unlimited").await.unwrap()
}

async fn subscribe(api: &Client, token: &str, app: &str, api_id: &str) {
    let steps = Steps::new(api, token);
    steps.subscribe(app, api_id, "Unlimited").await.unwrap();
}

async fn generate_keys(api: &Client, token: &str, app: &str, body: Value) -> Reply {
    api.post_json(
        &format!("{STORE}/applications/generate-keys?applicationId={app}"),
        token,
        &body,
    )
    .await
}

fn keys_request(validity: Value) -> Value {
    json!({"validityTime": validity, "keyType": "PRODUCTION", "accessAllowDomains": ["ALL"]})
}

/// A client_credentials token of `client` asking for `scope` (200).
async fn client_credentials(api: &Client, client: &(String, String), scope: &str) -> Reply {
    let form = [("grant_type", "client_credentials"), ("scope", scope)];
    api.token(&client.0, &client.1, &form).await.expect(200)
}

/// A password grant of the administrator through `client` asking for `scope` (200).
async fn admin_password_grant(api: &Client, client: &(String, String), scope: &str) -> Reply {
    let form = password_form("admin", harness::ADMIN_PASSWORD, scope);
    api.token(&client.0, &client.1, &form).await.expect(200)
}

/// The scopes of a token response.
fn scope(reply: &Reply) -> String {
    reply.str("scope")
}

pub async fn application_keys_get_application_scopes_only(env: InProcess) {
    let api = &env.api;
    let admin = api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await;
    let app = application(api, &admin, "Audience").await;
    let mut request = keys_request(json!("3600"));
    request["scopes"] = json!(["mgr:subscribe", "apim:subscribe", "default"]);
    let keys = generate_keys(api, &admin, &app, request).await.expect(200);
    // The token that comes with the keys: no management scope.
    assert_eq!(
        keys.body["token"]["tokenScopes"],
        json!(["default", "am_application_scope"])
    );
    let consumer = (keys.str("consumerKey"), keys.str("consumerSecret"));
    let (key, secret) = (consumer.0.as_str(), consumer.1.as_str());

    // Hostile: every grant of the consumer key asks for management scopes, and gets none.
    let asked = "mgr:subscribe mgr:api_view apim:subscribe apim:api_create";
    let cc = client_credentials(api, &consumer, asked).await;
    assert_eq!(scope(&cc), "default am_application_scope");
    let pw = admin_password_grant(api, &consumer, asked).await;
    assert_eq!(scope(&pw), "default");
    let refreshed = api
        .token(key, secret, &refresh_form(&pw.str("refresh_token")))
        .await
        .expect(200);
    assert_eq!(scope(&refreshed), "default");
    let refresh_token = refreshed.str("refresh_token");
    let mut narrowing = refresh_form(&refresh_token);
    narrowing.push(("scope", "mgr:subscribe"));
    let narrowed = api.token(key, secret, &narrowing).await.expect(200);
    assert_eq!(scope(&narrowed), "default");
    // Nor does an application token open the management API, whatever it says.
    for token in [cc.str("access_token"), pw.str("access_token")] {
        api.get(&format!("{STORE}/applications"), &token)
            .await
            .expect_error(401, "Unauthenticated request");
    }
    // Legitimate: the owner's management client gets the management scope and uses it.
    let managing_client = management_client(api, "audience").await;
    let managing = admin_password_grant(api, &managing_client, "mgr:subscribe").await;
    assert_eq!(scope(&managing), "mgr:subscribe");
    api.get(
        &format!("{STORE}/applications"),
        &managing.str("access_token"),
    )
    .await
    .expect(200);

    // API scopes: granted once the application subscribes to an API declaring them, for
    // the roles the API names; a management scope an API declares is never granted.
    let record = api_declaring(
        "Scoped",
        "http://127.0.0.1:9/",
        json!([
            {"key": "devs_read", "name": "read", "roles": "admin"},
            {"key": "devs_write", "name": "write", "roles": "creator"},
            {"key": "mgr:subscribe", "name": "sneaky", "roles": ""},
        ]),
    );
    let api_id = published(api, &admin, &record).await;
    let asked = "devs_read devs_write mgr:subscribe";
    let cc = client_credentials(api, &consumer, asked).await;
    assert_eq!(scope(&cc), "default am_application_scope");
    subscribe(api, &admin, &app, &api_id).await;
    let cc = client_credentials(api, &consumer, asked).await;
    assert_eq!(scope(&cc), "devs_read am_application_scope");
    let pw = admin_password_grant(api, &consumer, asked).await;
    assert_eq!(scope(&pw), "devs_read");
    // Another application, not subscribed, does not get them.
    let other = application(api, &admin, "Unsubscribed").await;
    let other_keys = generate_keys(api, &admin, &other, keys_request(json!("3600")))
        .await
        .expect(200);
    let other_consumer = (
        other_keys.str("consumerKey"),
        other_keys.str("consumerSecret"),
    );
    let unsubscribed = client_credentials(api, &other_consumer, asked).await;
    assert_eq!(scope(&unsubscribed), "default am_application_scope");
}

pub async fn management_clients_cannot_call_apis(env: Env) {
    let api = &env.api;
    let backend = harness::EchoBackend::start().await;
    let admin = api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await;
    let record = harness::stack::api_record("Guarded", &format!("{}/", backend.url));
    let api_id = published(api, &admin, &record).await;
    let app = application(api, &admin, "Caller").await;
    subscribe(api, &admin, &app, &api_id).await;
    let keys = generate_keys(api, &admin, &app, keys_request(json!("3600")))
        .await
        .expect(200);
    let app_token = keys.body["token"]["accessToken"]
        .as_str()
        .unwrap()
        .to_string();
    // The gateway pulls the manifest as it starts.
    let gateway =
        harness::start_edge_gateway(&env.control_plane, &env.data_dir, "127.0.0.1:0", &[]).await;
    let gw = Client::new(&gateway.url);
    let path = "/guarded/v1.0.0/devs/alice";
    let deadline = Instant::now() + Duration::from_secs(15);
    // Legitimate: the application's token calls the API.
    loop {
        let reply = gw.get(path, &app_token).await;
        if reply.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "{} {}", reply.status, reply.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Hostile: a management token with every scope is not an application's: refused.
    for reply in [
        gw.get(path, &admin).await,
        gw.send(
            gw.request(reqwest::Method::GET, path, &admin)
                .header("accept", "application/json"),
        )
        .await,
    ] {
        assert_eq!(reply.status, 403, "{}", reply.body);
        assert!(reply.body.to_string().contains("900908"), "{}", reply.body);
    }
    assert_eq!(backend.hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}

pub async fn lifetimes_are_bounded(mut env: Env) {
    let admin = env
        .api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await;
    let api = &env.api;
    let app = application(api, &admin, "Lifetimes").await;
    // Hostile: a 10,000-year key, one past i64, nonsense, negative and zero: 400, no key.
    for validity in [
        json!("315360000000"),
        json!(315360000000u64),
        json!("9223372036854775807"),
        json!(1e300),
        json!("31536001"),
        json!("-1"),
        json!(0),
        json!("soon"),
    ] {
        generate_keys(api, &admin, &app, keys_request(validity.clone()))
            .await
            .expect_error(400, "validityTime");
    }
    api.get(
        &format!("{STORE}/applications/{app}/keys/PRODUCTION"),
        &admin,
    )
    .await
    .expect(404);
    // Legitimate: the maximum itself (a year by default).
    let keys = generate_keys(api, &admin, &app, keys_request(json!("31536000")))
        .await
        .expect(200);
    assert_eq!(keys.body["token"]["validityTime"], 31536000);
    let (key, secret) = (keys.str("consumerKey"), keys.str("consumerSecret"));

    // The token endpoint's validity_period likewise.
    let client = management_client(api, "lifetimes").await;
    for period in ["315360000000", "9223372036854775807", "31536001", "0", "-5"] {
        let mut form = password_form("admin", harness::ADMIN_PASSWORD, "mgr:api_view");
        form.push(("validity_period", period));
        api.token(&client.0, &client.1, &form)
            .await
            .expect_oauth_error(400, "invalid_request");
    }
    let mut form = password_form("admin", harness::ADMIN_PASSWORD, "mgr:api_view");
    form.push(("validity_period", "31536000"));
    let year = api.token(&client.0, &client.1, &form).await.expect(200);
    assert_eq!(year.body["expires_in"], 31536000);
    let claims = harness::jwt_claims(&year.str("access_token"));
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        31536000
    );

    // A lower maximum holds keys stored with a longer validity to it.
    reconfigured(
        &mut env,
        &[("APIM_MAX_TOKEN_VALIDITY", "7200")],
        "lifetimes",
    )
    .await;
    let api = &env.api;
    let reply = api
        .token(&key, &secret, &[("grant_type", "client_credentials")])
        .await
        .expect(200);
    assert_eq!(reply.body["expires_in"], 7200);
    let admin = api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await;
    let other = application(api, &admin, "Shorter").await;
    generate_keys(api, &admin, &other, keys_request(json!("7201")))
        .await
        .expect_error(400, "from 1 to 7200");
    generate_keys(api, &admin, &other, keys_request(json!("7200")))
        .await
        .expect(200);
}

pub async fn revoking_any_token_revokes_its_family(env: InProcess) {
    let api = &env.api;
    let client = management_client(api, "families").await;
    let (id, secret) = (&client.0, &client.1);
    let login = || async {
        api.token(
            id,
            secret,
            &password_form("admin", harness::ADMIN_PASSWORD, "mgr:api_view"),
        )
        .await
        .expect(200)
    };
    let refresh = |reply: Reply| async move {
        api.token(id, secret, &refresh_form(&reply.str("refresh_token")))
            .await
            .expect(200)
    };
    let works = |reply: &Reply| {
        let token = reply.str("access_token");
        async move { api.get(&format!("{PUBLISHER}/apis"), &token).await.status == 200 }
    };
    let refreshes = |reply: &Reply| {
        let token = reply.str("refresh_token");
        async move { api.token(id, secret, &refresh_form(&token)).await.status == 200 }
    };
    // Whether a family's latest tokens are dead: its access token refused, its refresh
    // token too.
    let dead = |latest: Reply| async move { !works(&latest).await && !refreshes(&latest).await };
    let revoke_as_client = |token: String| {
        let client = client.clone();
        async move { revoke(api, &client, &token).await.expect(200) }
    };
    // A family nobody revokes keeps working throughout (the legitimate one).
    let bystander = login().await;

    // Revoking the access token in use revokes its refresh token.
    let first = login().await;
    let second = refresh(first.clone()).await;
    assert!(
        !works(&first).await,
        "a refresh revokes the access token it replaces"
    );
    revoke_as_client(second.str("access_token")).await;
    assert!(
        dead(second).await,
        "the refresh token goes with its access token"
    );

    // Revoking a spent refresh token revokes the family's current tokens.
    let first = login().await;
    let second = refresh(first.clone()).await;
    revoke_as_client(first.str("refresh_token")).await;
    assert!(dead(second).await);

    // So does revoking an access token the family has already replaced.
    let first = login().await;
    let third = refresh(refresh(first.clone()).await).await;
    revoke_as_client(first.str("access_token")).await;
    assert!(dead(third).await);

    // Another client's revocation touches nothing of this client's.
    let family = login().await;
    let stranger = management_client(api, "stranger").await;
    revoke(api, &stranger, &family.str("access_token"))
        .await
        .expect(200);
    revoke(api, &stranger, &family.str("refresh_token"))
        .await
        .expect(200);
    assert!(works(&family).await);
    let family = refresh(family).await;
    assert!(works(&family).await);

    assert!(works(&bystander).await);
    let bystander = refresh(bystander).await;
    assert!(works(&bystander).await);
}

pub async fn concurrent_refreshes_redeem_once(env: InProcess) {
    let api = &env.api;
    let client = management_client(api, "racing").await;
    let first = api
        .token(
            &client.0,
            &client.1,
            &password_form("admin", harness::ADMIN_PASSWORD, "mgr:api_view"),
        )
        .await
        .expect(200);
    let refresh_token = first.str("refresh_token");
    let attempts = (0..20).map(|_| {
        let (api, client, token) = (api.clone(), client.clone(), refresh_token.clone());
        tokio::spawn(async move { api.token(&client.0, &client.1, &refresh_form(&token)).await })
    });
    let mut winners = Vec::new();
    for attempt in attempts.collect::<Vec<_>>() {
        let reply = attempt.await.unwrap();
        match reply.status {
            200 => winners.push(reply),
            _ => {
                reply.expect_oauth_error(400, "invalid_grant");
            }
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "exactly one of 20 concurrent refreshes wins"
    );
    // The winner's tokens work, and its refresh token is redeemable once more.
    let winner = winners.remove(0);
    api.get(&format!("{PUBLISHER}/apis"), &winner.str("access_token"))
        .await
        .expect(200);
    let next = api
        .token(
            &client.0,
            &client.1,
            &refresh_form(&winner.str("refresh_token")),
        )
        .await
        .expect(200);
    api.get(&format!("{PUBLISHER}/apis"), &next.str("access_token"))
        .await
        .expect(200);
}

/// A password grant for `user` through the administrator's registered client.
async fn password_login(
    api: &Client,
    client: &(String, String),
    user: &str,
    password: &str,
) -> Reply {
    api.token(
        &client.0,
        &client.1,
        &password_form(user, password, "default"),
    )
    .await
}

/// A registration with HTTP Basic of `user`.
async fn basic_login(api: &Client, user: &str, password: &str) -> Reply {
    api.register(user, password, "basic-login").await
}

/// Tries `times` password logins, each refused exactly as a wrong password is.
async fn refused_logins(
    api: &Client,
    client: &(String, String),
    user: &str,
    password: &str,
    times: usize,
) {
    for _ in 0..times {
        let reply = password_login(api, client, user, password)
            .await
            .expect_oauth_error(400, "invalid_grant");
        assert_eq!(
            reply.body["error_description"],
            format!("Authentication failed for {user}")
        );
    }
}

pub async fn failed_logins_lock_until_an_admin_unlocks(mut env: Env) {
    // The address throttle is not what this is about.
    let settings = [("APIM_LOGIN_ADDRESS_MAX_FAILURES", "0")];
    let client = reconfigured(&mut env, &settings, "lockout").await;
    let api = env.api.clone();
    api.add_user("target", "target-pw", &["subscriber"]).await;
    api.add_user("bystander", "bystander-pw", &["subscriber"])
        .await;

    // Hostile: five wrong passwords lock the user name, for the password grant and for
    // HTTP Basic alike; then even the right password is refused exactly as a wrong one.
    refused_logins(&api, &client, "target", "guess", 5).await;
    refused_logins(&api, &client, "target", "target-pw", 1).await;
    basic_login(&api, "target", "target-pw")
        .await
        .expect_error(401, "Unauthenticated request");
    // An unknown user name answers the same before and after as many failures.
    refused_logins(&api, &client, "ghost", "guess", 6).await;
    basic_login(&api, "ghost", "guess")
        .await
        .expect_error(401, "Unauthenticated request");
    // Legitimate: another user is not affected; failures below the limit are forgotten at a
    // success.
    refused_logins(&api, &client, "bystander", "typo", 4).await;
    password_login(&api, &client, "bystander", "bystander-pw")
        .await
        .expect(200);
    refused_logins(&api, &client, "bystander", "typo", 4).await;
    basic_login(&api, "bystander", "bystander-pw")
        .await
        .expect(200);

    // The lock is in the database: it holds after a restart and in another control plane
    // on the same database.
    reconfigured(&mut env, &settings, "lockout").await;
    let api = env.api.clone();
    refused_logins(&api, &client, "target", "target-pw", 1).await;
    let other = harness::start_control_plane(
        &env.backend,
        &env.data_dir,
        &[("APIM_LOGIN_ADDRESS_MAX_FAILURES", "0".to_string())],
    )
    .await;
    let other_api = Client::new(&other.url);
    refused_logins(&other_api, &client, "target", "target-pw", 1).await;

    // Only an administrator lifts it; unknown users are 404.
    let unlock = |who: &str, password: &str, user: &str| {
        reqwest::Client::new()
            .post(format!("{}{ADMIN}/users/{user}/unlock", api.base))
            .basic_auth(who, Some(password))
    };
    api.send(unlock("bystander", "bystander-pw", "target"))
        .await
        .expect(403);
    api.send(unlock("target", "target-pw", "target"))
        .await
        .expect_error(401, "Unauthenticated request");
    api.send(unlock("admin", harness::ADMIN_PASSWORD, "nobody"))
        .await
        .expect(404);
    let unlocked = api
        .send(unlock("admin", harness::ADMIN_PASSWORD, "target"))
        .await
        .expect(200);
    assert_eq!(unlocked.body["username"], "target");
    password_login(&api, &client, "target", "target-pw")
        .await
        .expect(200);
    basic_login(&api, "target", "target-pw").await.expect(200);
    // The other control plane sees the lift too.
    password_login(&other_api, &client, "target", "target-pw")
        .await
        .expect(200);
    other.stop().await;

    // The last administrator locked out: the command line lifts it, beside the running
    // control plane; a user name that was not locked is only told so.
    refused_logins(&api, &client, "admin", "guess", 5).await;
    basic_login(&api, "admin", harness::ADMIN_PASSWORD)
        .await
        .expect_error(401, "Unauthenticated request");
    let cli = crate::secrets::command_env(&env.backend, &env.data_dir);
    let unlock = ["unlock-user", "--username", "admin"];
    let (ok, stdout, stderr) = crate::secrets::control_plane_command(&unlock, &cli, "").await;
    assert!(ok && stdout.contains("admin unlocked"), "{stdout}{stderr}");
    basic_login(&api, "admin", harness::ADMIN_PASSWORD)
        .await
        .expect(200);
    let again = crate::secrets::control_plane_command(&unlock, &cli, "").await;
    assert!(again.0 && again.1.contains("was not locked"), "{again:?}");
}

pub async fn failed_logins_are_throttled_per_address(mut env: Env) {
    // 127.0.0.1 (the test) is a trusted proxy: X-Forwarded-For names the client.
    let settings = [
        ("APIM_LOGIN_ADDRESS_MAX_FAILURES", "3"),
        ("APIM_LOGIN_MAX_FAILURES", "0"),
        ("APIM_TRUSTED_PROXIES", "127.0.0.1"),
    ];
    let client = reconfigured(&mut env, &settings, "throttle").await;
    let api = &env.api;
    let from = |address: &str, user: &str, password: &str| {
        reqwest::Client::new()
            .post(format!("{}/oauth2/token", api.base))
            .basic_auth(&client.0, Some(&client.1))
            .header("x-forwarded-for", format!("203.0.113.99, {address}"))
            .form(&password_form(user, password, "default"))
    };
    let basic_from = |address: &str, user: &str, password: &str| {
        reqwest::Client::new()
            .post(format!("{}/client-registration/v0.14/register", api.base))
            .basic_auth(user, Some(password))
            .header("x-forwarded-for", address)
            .json(&json!({"clientName": "t", "owner": user, "grantType": "password", "saasApp": true}))
    };
    // Hostile: three failures (any user names) from one address, then every login from it
    // is refused, the right password included, without a password check.
    for user in ["a", "b", "admin"] {
        api.send(from("198.51.100.7", user, "guess"))
            .await
            .expect_oauth_error(400, "invalid_grant");
    }
    let throttled = api
        .send(from("198.51.100.7", "admin", harness::ADMIN_PASSWORD))
        .await
        .expect_oauth_error(429, "temporarily_unavailable");
    let retry_after: u64 = throttled.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=300).contains(&retry_after), "{retry_after}");
    let basic = api
        .send(basic_from("198.51.100.7", "admin", harness::ADMIN_PASSWORD))
        .await
        .expect_error(429, "Too many failed logins");
    assert_eq!(basic.body["code"], 429);
    assert!(basic.headers.contains_key("retry-after"));
    // Legitimate: another address, and this proxy's own requests, log in.
    api.send(from("198.51.100.8", "admin", harness::ADMIN_PASSWORD))
        .await
        .expect(200);
    api.send(basic_from("198.51.100.8", "admin", harness::ADMIN_PASSWORD))
        .await
        .expect(200);
    api.token(
        &client.0,
        &client.1,
        &password_form("admin", harness::ADMIN_PASSWORD, "default"),
    )
    .await
    .expect(200);
    // IPv6 clients are counted by their /64.
    for suffix in ["1", "2", "3"] {
        api.send(from(&format!("2001:db8::{suffix}"), "a", "guess"))
            .await
            .expect_oauth_error(400, "invalid_grant");
    }
    api.send(from("2001:db8::ffff", "admin", harness::ADMIN_PASSWORD))
        .await
        .expect_oauth_error(429, "temporarily_unavailable");
    api.send(from("2001:db8:0:1::1", "admin", harness::ADMIN_PASSWORD))
        .await
        .expect(200);
}

/// Milliseconds `attempt` takes, asserting it is refused like a wrong password.
async fn refusal_ms(attempt: impl std::future::Future<Output = Reply>) -> f64 {
    let started = Instant::now();
    let reply = attempt.await;
    let elapsed = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(reply.status, 400, "{}", reply.body);
    elapsed
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    let middle = times.len() / 2;
    (times[middle - 1] + times[middle]) / 2.0
}

/// Within the stated tolerance: 35 % of the larger, or 15 ms.
fn about_equal(a: f64, b: f64) -> bool {
    let difference = (a - b).abs();
    difference <= 15.0 || difference <= 0.35 * a.max(b)
}

pub async fn unknown_users_cost_what_wrong_passwords_do(mut env: Env) {
    let settings = [("APIM_LOGIN_ADDRESS_MAX_FAILURES", "0")];
    let client = reconfigured(&mut env, &settings, "timing").await;
    let api = &env.api;
    const TRIES: usize = 10;
    for i in 0..TRIES {
        api.add_user(&format!("known{i}"), "right-pw", &["subscriber"])
            .await;
    }
    api.add_user("locked", "right-pw", &["subscriber"]).await;
    // Warm the connection and the caches.
    for _ in 0..2 {
        password_login(api, &client, "warm-up", "guess").await;
    }
    for _ in 0..5 {
        password_login(api, &client, "locked", "guess").await;
    }
    // Interleaved, so that whatever else the machine does weighs on all three alike.
    let (mut unknown, mut wrong, mut locked) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..TRIES {
        let (stranger, user) = (format!("unknown{i}"), format!("known{i}"));
        unknown.push(refusal_ms(password_login(api, &client, &stranger, "guess")).await);
        wrong.push(refusal_ms(password_login(api, &client, &user, "guess")).await);
        locked.push(refusal_ms(password_login(api, &client, "locked", "right-pw")).await);
    }
    let (unknown, wrong, locked) = (median(unknown), median(wrong), median(locked));
    let right = {
        let started = Instant::now();
        password_login(api, &client, "known0", "right-pw")
            .await
            .expect(200);
        started.elapsed().as_secs_f64() * 1000.0
    };
    eprintln!(
        "login medians over {TRIES} tries: unknown user {unknown:.1} ms, wrong password \
         {wrong:.1} ms, locked user {locked:.1} ms (a right password: {right:.1} ms)"
    );
    assert!(
        about_equal(unknown, wrong),
        "unknown {unknown} ms, wrong {wrong} ms"
    );
    assert!(
        about_equal(unknown, locked),
        "unknown {unknown} ms, locked {locked} ms"
    );
}

/// Sends bursts of 24 concurrent failing logins (up to five) until one is answered 503;
/// that answer. Every other must be the refusal of a wrong password (400 or 401).
async fn bursts_until_busy<F, Fut>(attempt: F) -> Option<Reply>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Reply> + Send + 'static,
{
    for _ in 0..5 {
        let burst: Vec<_> = (0..24).map(|i| tokio::spawn(attempt(i))).collect();
        let mut busy = None;
        for reply in burst {
            let reply = reply.await.unwrap();
            match reply.status {
                503 => busy = Some(reply),
                status => assert!(status == 400 || status == 401, "{}", reply.body),
            }
        }
        if busy.is_some() {
            return busy;
        }
    }
    None
}

pub async fn saturated_password_checks_get_503(mut env: Env) {
    // No waiting room: only as many checks as cores at once.
    let settings = [
        ("APIM_ARGON2_QUEUE", "0"),
        ("APIM_LOGIN_ADDRESS_MAX_FAILURES", "0"),
        ("APIM_LOGIN_MAX_FAILURES", "0"),
    ];
    let client = reconfigured(&mut env, &settings, "saturation").await;
    let api = &env.api;
    let busy = bursts_until_busy(|i| {
        let (api, client) = (api.clone(), client.clone());
        async move { password_login(&api, &client, &format!("nobody{i}"), "guess").await }
    })
    .await
    .expect("a burst of 24 logins on 0 waiting places")
    .expect_oauth_error(503, "temporarily_unavailable");
    assert_eq!(busy.headers["retry-after"], "1");
    // HTTP Basic alike, in WSO2's error body.
    let busy = bursts_until_busy(|i| {
        let api = api.clone();
        async move { basic_login(&api, &format!("nobody{i}"), "guess").await }
    })
    .await
    .expect("a burst of 24 Basic logins on 0 waiting places")
    .expect_error(503, "retry shortly");
    assert_eq!(busy.body["code"], 503);
    assert_eq!(busy.headers["retry-after"], "1");
    // Legitimate: once the burst is over, logins work.
    password_login(api, &client, "admin", harness::ADMIN_PASSWORD)
        .await
        .expect(200);
}

/// Opens a connection and sends `bytes` one at a time, `pause` apart, until the server
/// closes it; how many bytes went before it did, and what came back.
async fn trickle(base: &str, bytes: &[u8], pause: Duration) -> (usize, String) {
    let mut stream = tokio::net::TcpStream::connect(base.trim_start_matches("http://"))
        .await
        .unwrap();
    let mut sent = 0;
    let mut answer = Vec::new();
    for byte in bytes {
        if stream.write_all(&[*byte]).await.is_err() {
            break;
        }
        sent += 1;
        let mut buffer = [0u8; 4096];
        match tokio::time::timeout(pause, stream.read(&mut buffer)).await {
            Err(_) => {}
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => answer.extend_from_slice(&buffer[..n]),
        }
    }
    if sent == bytes.len() {
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    }
    (sent, String::from_utf8_lossy(&answer).to_string())
}

pub async fn slow_clients_are_cut(mut env: Env) {
    let settings = [
        ("APIM_MGMT_HEADER_TIMEOUT_MS", "1000"),
        ("APIM_MGMT_BODY_TIMEOUT_MS", "1000"),
    ];
    let client = reconfigured(&mut env, &settings, "prompt").await;
    let api = &env.api;
    let host = env
        .control_plane
        .url
        .trim_start_matches("http://")
        .to_string();
    // Hostile: a request head trickled over 4 s is cut after 1 s, unanswered.
    let head = format!(
        "GET /oauth2/jwks HTTP/1.1\r\nHost: {host}\r\nX-Slow: {}\r\n\r\n",
        "z".repeat(10)
    );
    let (sent, answer) = trickle(
        &env.control_plane.url,
        head.as_bytes(),
        Duration::from_millis(80),
    )
    .await;
    assert!(
        sent < head.len(),
        "the whole head went through ({sent} bytes): {answer}"
    );
    assert!(!answer.contains(" 200 "), "{answer}");
    // So is a connection that never sends anything.
    let mut idle = tokio::net::TcpStream::connect(&host).await.unwrap();
    let mut buffer = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(10), idle.read(&mut buffer)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    // A body trickled over 4 s gets 408 after 1 s.
    let body = "grant_type=password&username=admin&password=x&scope=default";
    let request = format!(
        "POST /oauth2/token HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(&host).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    for byte in body.as_bytes() {
        if stream.write_all(&[*byte]).await.is_err() {
            break;
        }
        let mut buffer = [0u8; 4096];
        match tokio::time::timeout(Duration::from_millis(80), stream.read(&mut buffer)).await {
            Err(_) => {}
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => answer.extend_from_slice(&buffer[..n]),
        }
    }
    let answer = String::from_utf8_lossy(&answer).to_string();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"code\":408"), "{answer}");
    // Legitimate: the same requests sent at once are answered.
    api.get("/oauth2/jwks", "").await.expect(200);
    api.token(
        &client.0,
        &client.1,
        &password_form("admin", harness::ADMIN_PASSWORD, "default"),
    )
    .await
    .expect(200);
    // And a request taking its time within the limits goes through.
    let (_, answer) = trickle(
        &env.control_plane.url,
        format!("GET /oauth2/jwks HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
        Duration::from_millis(5),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
