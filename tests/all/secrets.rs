//! Secrets at rest and in transit: private data files, secrets
//! encrypted in the database, backend credentials write-only over the REST API and sealed
//! for the gateways (manifest pages, key-value store), the data key's rotation, and no
//! secret in `--help`, `ps` or the logs of a whole run.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use harness::stack::Stack;
use harness::{Backend, Client, PUBLISHER, STORE, eventually, spec_api_record};
use serde_json::{Value, json};
use sqlx::Connection;
use tokio::io::AsyncWriteExt;

use crate::Env;

/// What `GET /apis/{id}` shows of a backend password.
const MASK: &str = "********";

/// The mode bits of a file or directory.
#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Asserts the data directory and its subdirectories are 0700 and every file in them
/// (database, its -wal and -shm, keys, gateway secret) 0600.
#[cfg(unix)]
fn assert_private(data_dir: &Path) {
    assert_eq!(mode(data_dir), 0o700, "{}", data_dir.display());
    for dir in ["keys", "manifest-keys", "data-keys"] {
        assert_eq!(mode(&data_dir.join(dir)), 0o700, "{dir}");
    }
    let files = files_under(data_dir);
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n == "gateway-secret"), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with(".key")), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with(".pem")), "{names:?}");
}

/// The data directory is the owner's alone: created so, and narrowed at start when an
/// earlier version left it (and the files in it) readable by others.
#[cfg(unix)]
pub async fn data_files_are_private(mut env: Env) {
    let token = env
        .api
        .login("admin", harness::ADMIN_PASSWORD, "mgr:api_create")
        .await;
    env.api
        .post_json(&format!("{PUBLISHER}/apis"), &token, &spec_api_record())
        .await
        .expect(201);
    let sqlite = matches!(env.backend, Backend::Sqlite);
    if sqlite {
        for file in ["apim.db", "apim.db-wal", "apim.db-shm"] {
            assert!(env.data_dir.join(file).exists(), "{file}");
        }
    }
    assert_private(&env.data_dir);

    // As earlier versions left them: everything readable by everyone.
    set_mode(&env.data_dir, 0o755);
    for dir in ["keys", "manifest-keys", "data-keys"] {
        set_mode(&env.data_dir.join(dir), 0o755);
    }
    for file in files_under(&env.data_dir) {
        set_mode(&file, 0o644);
    }
    env.restart().await;
    env.api
        .login("admin", harness::ADMIN_PASSWORD, "mgr:api_view")
        .await;
    assert_private(&env.data_dir);

    // A data directory that does not exist yet is created private, with everything in it.
    let fresh = env.data_dir.join("fresh").join("data");
    let other = harness::start_control_plane(&Backend::Sqlite, &fresh, &[]).await;
    answered(&other).await;
    other.stop().await;
    assert_eq!(mode(&env.data_dir.join("fresh")), 0o700);
    assert_private(&fresh);
    assert_eq!(mode(&fresh.join("apim.db")), 0o600);
}

#[cfg(not(unix))]
pub async fn data_files_are_private(_env: Env) {}

/// Waits for a control plane to have answered a request: it stops gracefully only once
/// it serves (a SIGTERM before that ends it at once).
async fn answered(control_plane: &harness::ControlPlane) {
    Client::new(&control_plane.url)
        .get("/oauth2/jwks", "")
        .await
        .expect(200);
}

/// Everything that can hold the database's contents as bytes: the SQLite file with its
/// write-ahead log, or every row of every table on PostgreSQL, as text.
async fn database_contents(backend: &Backend, data_dir: &Path) -> String {
    match backend {
        Backend::Sqlite => ["apim.db", "apim.db-wal", "apim.db-shm"]
            .iter()
            .filter_map(|f| std::fs::read(data_dir.join(f)).ok())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .collect(),
        Backend::Postgres { url, .. } => {
            let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
            let tables: Vec<(String,)> = sqlx::query_as(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'",
            )
            .fetch_all(&mut conn)
            .await
            .unwrap();
            let mut contents = String::new();
            for (table,) in tables {
                let rows: Vec<(String,)> =
                    sqlx::query_as(&format!("SELECT t::text FROM \"{table}\" t"))
                        .fetch_all(&mut conn)
                        .await
                        .unwrap();
                for (row,) in rows {
                    contents.push_str(&row);
                    contents.push('\n');
                }
            }
            contents
        }
    }
}

/// Every value under a namespace of the Redis key-value store.
async fn redis_contents(namespace: &str) -> String {
    let client = redis::Client::open("redis://127.0.0.1:6379/0").unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{namespace}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        !keys.is_empty(),
        "the gateway wrote nothing under {namespace}"
    );
    let mut contents = String::new();
    for key in &keys {
        let value: Option<Vec<u8>> = redis::cmd("GET")
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap();
        contents.push_str(key);
        contents.push_str(&String::from_utf8_lossy(&value.unwrap_or_default()));
        contents.push('\n');
    }
    let _: () = redis::cmd("DEL")
        .arg(&keys)
        .query_async(&mut conn)
        .await
        .unwrap();
    contents
}

/// Every manifest page from version 0 as the control plane serves it to gateways, their
/// JWS payloads decoded.
async fn manifest_pages(mgmt: &Client, gateway_secret: &str) -> String {
    let mut pages = String::new();
    let mut after = 0;
    loop {
        let reply = mgmt
            .get(
                &format!("/internal/gateway/manifest?after={after}&snapshot=true"),
                gateway_secret,
            )
            .await
            .expect(200);
        let jws = reply.body.as_str().unwrap_or_default().to_string();
        let payload = jws.split('.').nth(1).expect("a signed page");
        let page: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        pages.push_str(&page.to_string());
        let (upto, latest) = (
            page["upto"].as_u64().unwrap(),
            page["latest"].as_u64().unwrap(),
        );
        if upto >= latest || upto == after {
            return pages;
        }
        after = upto;
    }
}

/// Asserts that none of `secrets` is in `text`, naming the place and the secret found.
#[track_caller]
fn assert_none_in(place: &str, text: &str, secrets: &[(&str, String)]) {
    for (name, secret) in secrets {
        assert!(
            !text.contains(secret.as_str()),
            "the {name} is readable in {place}"
        );
    }
}

/// HTTP Basic credentials as a backend receives them.
fn basic(user: &str, password: &str) -> String {
    format!("Basic {}", STANDARD.encode(format!("{user}:{password}")))
}

/// The whole flow through the gateway, its key-value store in Redis: backend passwords are
/// write-only over the REST API and reach the backend right; client and consumer secrets
/// and backend passwords are in neither the database, the manifest pages nor the
/// key-value store; and the logs of both processes hold none of the run's secrets.
pub async fn secrets_stay_sealed_end_to_end(env: Env) {
    let test = "secrets_stay_sealed_end_to_end";
    if !harness::services::available(harness::services::Service::Redis, test) {
        return;
    }
    let Env {
        backend,
        data_dir,
        control_plane,
        ..
    } = env;
    // The scenario's control plane makes way for a whole stack on the same data.
    answered(&control_plane).await;
    control_plane.stop().await;
    let namespace = format!("apim-secrets-{}", uuid::Uuid::new_v4().simple());
    let gateway_settings = [
        ("APIM_KV_URL", "redis://127.0.0.1:6379/0".to_string()),
        ("APIM_KV_NAMESPACE", namespace.clone()),
        ("RUST_LOG", "debug,cranelift=info,wasmtime=info".to_string()),
    ];
    let control_plane_settings = [("RUST_LOG", "debug".to_string())];
    let stack = Stack::start_on(
        &backend,
        data_dir.clone(),
        &[],
        &gateway_settings,
        &control_plane_settings,
    )
    .await;
    let mgmt = stack.mgmt.clone();
    let admin = stack.admin.clone();
    let password = format!("pw-{}", uuid::Uuid::new_v4().simple());
    let new_password = format!("pw2-{}", uuid::Uuid::new_v4().simple());

    // Written with a password, answered masked (create, get, update).
    let security = json!({"type": "basic", "username": "backend", "password": password});
    let mut record = harness::stack::api_record("Sealed", &format!("{}/", stack.backend.url));
    record["endpointSecurity"] = security.clone();
    let created = mgmt
        .post_json(&format!("{PUBLISHER}/apis"), &admin, &record)
        .await
        .expect(201);
    assert_eq!(created.body["endpointSecurity"]["password"], MASK);
    assert_eq!(created.body["endpointSecurity"]["username"], "backend");
    let id = created.str("id");
    let path = format!("{PUBLISHER}/apis/{id}");
    let fetched = mgmt.get(&path, &admin).await.expect(200);
    assert_eq!(fetched.body["endpointSecurity"]["password"], MASK);
    assert!(!fetched.body.to_string().contains(&password));
    stack.lifecycle(&id, "Publish").await;

    // The mask cannot stand for a password an API does not have; nothing is created.
    let mut masked = harness::stack::api_record("Masked", &format!("{}/", stack.backend.url));
    masked["endpointSecurity"] = json!({"type": "basic", "username": "backend", "password": MASK});
    mgmt.post_json(&format!("{PUBLISHER}/apis"), &admin, &masked)
        .await
        .expect_error(400, "endpointSecurity.password");
    let listed = mgmt
        .get(&format!("{PUBLISHER}/apis?query=name:Masked"), &admin)
        .await
        .expect(200);
    assert_eq!(listed.body["count"], 0);

    // The legitimate flow: the backend receives the right credentials.
    let (app, key, consumer_secret, _) = stack.application("SealedApp", "Unlimited", &[&id]).await;
    let reply = stack
        .gw
        .token_at(
            "/token",
            &key,
            &consumer_secret,
            &[
                ("grant_type", "password"),
                ("username", "admin"),
                ("password", harness::ADMIN_PASSWORD),
                ("scope", "default"),
            ],
        )
        .await
        .expect(200);
    let (app_token, app_refresh) = (reply.str("access_token"), reply.str("refresh_token"));
    let call = "/sealed/v1.0.0/devs/alice";
    let get = reqwest::Method::GET;
    let seen = eventually(&stack.gw, get.clone(), call, &app_token, |r| {
        r.status == 200
    })
    .await;
    assert_eq!(
        seen.body["headers"]["authorization"],
        basic("backend", &password).as_str()
    );

    // An update that sends the mask back keeps the password; a new one replaces it.
    let mut update = fetched.body.clone();
    update["description"] = json!("kept");
    let updated = mgmt.put_json(&path, &admin, &update).await.expect(200);
    assert_eq!(updated.body["endpointSecurity"]["password"], MASK);
    let seen = stack.gw.get(call, &app_token).await.expect(200);
    assert_eq!(
        seen.body["headers"]["authorization"],
        basic("backend", &password).as_str()
    );
    update["endpointSecurity"]["password"] = json!(new_password);
    let updated = mgmt.put_json(&path, &admin, &update).await.expect(200);
    assert_eq!(updated.body["endpointSecurity"]["password"], MASK);
    let expected = basic("backend", &new_password);
    eventually(&stack.gw, get, call, &app_token, |r| {
        r.body["headers"]["authorization"] == expected.as_str()
    })
    .await;

    // Secrets the store and registration answer with are still there, decrypted.
    let keys = mgmt
        .get(
            &format!("{STORE}/applications/{app}/keys/PRODUCTION"),
            &admin,
        )
        .await
        .expect(200);
    assert_eq!(keys.str("consumerSecret"), consumer_secret);
    let client = mgmt
        .register("admin", harness::ADMIN_PASSWORD, "gateway_e2e")
        .await
        .expect(200);
    let client_secret = client.str("clientSecret");
    let admin_reply = mgmt
        .password_token(&client, "admin", harness::ADMIN_PASSWORD, "mgr:api_view")
        .await
        .expect(200);
    let (admin_token, admin_refresh) = (
        admin_reply.str("access_token"),
        admin_reply.str("refresh_token"),
    );
    mgmt.get(&path, &admin_token).await.expect(200);

    let gateway_secret = std::fs::read_to_string(data_dir.join("gateway-secret"))
        .unwrap()
        .trim()
        .to_string();
    let at_rest = [
        ("client secret", client_secret.clone()),
        ("consumer secret", consumer_secret.clone()),
        ("backend password", password.clone()),
        ("new backend password", new_password.clone()),
        ("backend credentials", basic("backend", &password)),
        ("new backend credentials", basic("backend", &new_password)),
        ("access token", admin_token.clone()),
        ("refresh token", admin_refresh.clone()),
        ("application token", app_token.clone()),
        ("application refresh token", app_refresh.clone()),
        ("gateway secret", gateway_secret.clone()),
    ];
    let pages = manifest_pages(&mgmt, &gateway_secret).await;
    assert!(pages.contains("sealed_backend_authorization"), "{pages}");
    assert_none_in("the manifest pages", &pages, &at_rest);
    assert_none_in(
        "the key-value store (Redis)",
        &redis_contents(&namespace).await,
        &at_rest,
    );

    assert_none_in(
        "the database (while running)",
        &database_contents(&backend, &data_dir).await,
        &at_rest,
    );

    // Both processes' logs of the whole run, after a clean stop.
    let Stack {
        control_plane,
        gateway,
        ..
    } = stack;
    let (control_plane, gateway_log) = (control_plane.unwrap(), gateway.output());
    let control_plane_log = control_plane.output();
    gateway.stop().await;
    control_plane.stop().await;
    assert_none_in(
        "the database",
        &database_contents(&backend, &data_dir).await,
        &at_rest,
    );
    assert!(
        control_plane_log.contains("DEBUG") && gateway_log.contains("INFO"),
        "logs captured:\n{control_plane_log}\n{gateway_log}"
    );
    let mut everything = at_rest.to_vec();
    everything.push((
        "administrator password",
        harness::ADMIN_PASSWORD.to_string(),
    ));
    everything.push(("stack's administrator token", admin));
    assert_none_in("the control plane's log", &control_plane_log, &everything);
    assert_none_in("the gateway's log", &gateway_log, &everything);
}

/// A control plane's `APIM_DATABASE_URL` and data directory, for its command line.
pub fn command_env(backend: &Backend, data_dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("APIM_DATA_DIR", data_dir.display().to_string()),
        ("APIM_DATABASE_URL", backend.database_url().to_string()),
    ]
}

/// Runs a control-plane command with `env` and `stdin`; its output (stdout, stderr).
pub async fn control_plane_command(
    args: &[&str],
    env: &[(&str, String)],
    stdin: &str,
) -> (bool, String, String) {
    let mut child = tokio::process::Command::new(harness::binary("control-plane"))
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let output = child.wait_with_output().await.unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A connection to the scenario's database, beside the control plane's.
async fn connect(backend: &Backend, data_dir: &Path) -> sqlx::AnyConnection {
    let url = match backend {
        Backend::Sqlite => format!("sqlite://{}", data_dir.join("apim.db").display()),
        Backend::Postgres { url, .. } => url.clone(),
    };
    sqlx::any::install_default_drivers();
    sqlx::AnyConnection::connect(&url).await.unwrap()
}

/// A client's secret as the database holds it.
async fn stored_client_secret(backend: &Backend, data_dir: &Path, client_id: &str) -> String {
    let mut conn = connect(backend, data_dir).await;
    sqlx::query_as::<_, (String,)>("SELECT client_secret FROM oauth_clients WHERE client_id = $1")
        .bind(client_id)
        .fetch_one(&mut conn)
        .await
        .unwrap()
        .0
}

/// Stored client secrets and backend passwords, as the database holds them.
async fn stored_secrets(backend: &Backend, data_dir: &Path) -> Vec<String> {
    let mut conn = connect(backend, data_dir).await;
    let mut stored: Vec<String> = sqlx::query_as::<_, (String,)>(
        "SELECT client_secret FROM oauth_clients ORDER BY client_id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap()
    .into_iter()
    .map(|(s,)| s)
    .collect();
    let records: Vec<(String,)> = sqlx::query_as("SELECT record FROM apis ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    for (record,) in records {
        let record: Value = serde_json::from_str(&record).unwrap();
        if let Some(password) = record["endpointSecurity"]["password"].as_str() {
            stored.push(password.to_string());
        }
    }
    stored
}

/// Runs SQL on the scenario's database (as an earlier version, or an attacker, would).
async fn execute(backend: &Backend, data_dir: &Path, sql: &str, values: &[&str]) {
    let mut conn = connect(backend, data_dir).await;
    let mut query = sqlx::query(sql);
    for value in values {
        query = query.bind(*value);
    }
    query.execute(&mut conn).await.unwrap();
}

/// The key id of a stored value (`enc:v1:<id>:...`); `None` in clear.
fn key_id(stored: &str) -> Option<&str> {
    stored.strip_prefix("enc:v1:")?.split(':').next()
}

/// Values of earlier versions (in clear) are read, then encrypted at start; a rotation
/// re-encrypts everything under a new key while a running control plane keeps working;
/// the operator's key takes over with one more rotation; a value moved to another row
/// does not decrypt.
pub async fn data_key_rotation(mut env: Env) {
    let token = env
        .api
        .login(
            "admin",
            harness::ADMIN_PASSWORD,
            "mgr:api_create mgr:api_view mgr:subscribe",
        )
        .await;
    let api_id = env
        .api
        .post_json(&format!("{PUBLISHER}/apis"), &token, &spec_api_record())
        .await
        .expect(201)
        .str("id");
    let client = env
        .api
        .register("admin", harness::ADMIN_PASSWORD, "rotating")
        .await
        .expect(200);
    let (client_id, client_secret) = (client.str("clientId"), client.str("clientSecret"));
    let stored = stored_secrets(&env.backend, &env.data_dir).await;
    let first_key = key_id(&stored[0]).expect("encrypted").to_string();
    assert!(
        stored.iter().all(|s| key_id(s) == Some(first_key.as_str())),
        "{stored:?}"
    );
    let works = |api: Client, client: harness::Reply| async move {
        api.password_token(&client, "admin", harness::ADMIN_PASSWORD, "mgr:api_view")
            .await
            .expect(200);
    };

    // As an earlier version stored them: in clear. Read as they are, encrypted at start.
    execute(
        &env.backend,
        &env.data_dir,
        "UPDATE oauth_clients SET client_secret = $1 WHERE client_id = $2",
        &[&client_secret, &client_id],
    )
    .await;
    let mut legacy = spec_api_record();
    legacy["id"] = json!(api_id);
    legacy["context"] = json!("/dev-management");
    execute(
        &env.backend,
        &env.data_dir,
        "UPDATE apis SET record = $1 WHERE id = $2",
        &[&legacy.to_string(), &api_id],
    )
    .await;
    env.restart().await;
    works(env.api.clone(), client.clone()).await;
    let stored = stored_secrets(&env.backend, &env.data_dir).await;
    assert!(
        stored.iter().all(|s| key_id(s) == Some(first_key.as_str())),
        "{stored:?}"
    );
    assert_none_in(
        "the database",
        &database_contents(&env.backend, &env.data_dir).await,
        &[
            ("client secret", client_secret.clone()),
            ("backend password", "backend-secret".to_string()),
        ],
    );
    let fetched = env
        .api
        .get(&format!("{PUBLISHER}/apis/{api_id}"), &token)
        .await
        .expect(200);
    assert_eq!(fetched.body["endpointSecurity"]["password"], MASK);

    // Rotation from the command line, the control plane running: it finds the new key.
    let cli = command_env(&env.backend, &env.data_dir);
    let (ok, stdout, stderr) = control_plane_command(&["rotate-data-key"], &cli, "").await;
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("re-encrypted"), "{stdout}");
    let stored = stored_secrets(&env.backend, &env.data_dir).await;
    let second_key = key_id(&stored[0]).unwrap().to_string();
    assert_ne!(second_key, first_key);
    assert!(
        stored
            .iter()
            .all(|s| key_id(s) == Some(second_key.as_str())),
        "{stored:?}"
    );
    env.api
        .register("admin", harness::ADMIN_PASSWORD, "after-rotation")
        .await
        .expect(200);
    let repeated = env
        .api
        .register("admin", harness::ADMIN_PASSWORD, "rotating")
        .await
        .expect(200);
    assert_eq!(repeated.str("clientSecret"), client_secret);
    works(env.api.clone(), client.clone()).await;

    // The operator's key: one more rotation moves everything under it.
    let key_file = env.data_dir.join("operator-data-key");
    std::fs::write(&key_file, STANDARD.encode([42u8; 32])).unwrap();
    let mut with_key = cli.clone();
    with_key.push(("APIM_DATA_KEY_FILE", key_file.display().to_string()));
    let (ok, stdout, stderr) = control_plane_command(&["rotate-data-key"], &with_key, "").await;
    assert!(ok, "{stdout}{stderr}");
    let stored = stored_secrets(&env.backend, &env.data_dir).await;
    let operator_key = key_id(&stored[0]).unwrap().to_string();
    assert!(operator_key.starts_with("op-"), "{operator_key}");
    assert!(
        stored
            .iter()
            .all(|s| key_id(s) == Some(operator_key.as_str()))
    );
    env.restart_with(&with_key[2..]).await;
    works(env.api.clone(), client.clone()).await;

    // A secret moved to another row (a hostile write to the database) does not decrypt:
    // the client authenticates with neither secret (401, as an unknown client, and the
    // control plane logs it; never a 500), and nothing else breaks.
    let other = env
        .api
        .register("admin", harness::ADMIN_PASSWORD, "other")
        .await
        .expect(200);
    let sealed_of_first = stored_client_secret(&env.backend, &env.data_dir, &client_id).await;
    assert!(key_id(&sealed_of_first).is_some(), "{sealed_of_first}");
    execute(
        &env.backend,
        &env.data_dir,
        "UPDATE oauth_clients SET client_secret = $1 WHERE client_id = $2",
        &[&sealed_of_first, &other.str("clientId")],
    )
    .await;
    env.restart_with(&with_key[2..]).await;
    env.api
        .password_token(&other, "admin", harness::ADMIN_PASSWORD, "mgr:api_view")
        .await
        .expect_oauth_error(401, "invalid_client");
    // The log is read from the process's pipe, which may trail its answer.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let logged = env.control_plane.output().contains("does not decrypt");
        if logged {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the alteration is logged"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    works(env.api.clone(), client).await;
}

/// `add-user` takes the password from a file, standard input or the environment, never
/// needing it on the command line; `--password` still works, with a warning.
pub async fn add_user_keeps_passwords_out_of_ps(env: Env) {
    let cli = command_env(&env.backend, &env.data_dir);
    let file = env.data_dir.join("new-password");
    std::fs::write(&file, "from-file-pw\n").unwrap();
    let file_arg = file.display().to_string();
    let mut with_env = cli.clone();
    with_env.push(("APIM_NEW_USER_PASSWORD", "from-env-pw".to_string()));
    // User, arguments, environment, standard input, the password it gets.
    type Case<'a> = (
        &'a str,
        Vec<&'a str>,
        &'a [(&'a str, String)],
        &'a str,
        &'a str,
    );
    let cases: [Case; 4] = [
        (
            "filed",
            vec!["--password-file", &file_arg],
            &cli,
            "",
            "from-file-pw",
        ),
        (
            "piped",
            vec!["--password-file", "-"],
            &cli,
            "from-stdin-pw\n",
            "from-stdin-pw",
        ),
        ("environed", vec![], &with_env, "", "from-env-pw"),
        (
            "implicit",
            vec![],
            &cli,
            "plain-stdin-pw\n",
            "plain-stdin-pw",
        ),
    ];
    for (user, args, env_vars, stdin, password) in cases {
        let mut all = vec!["add-user", "--username", user, "--roles", "subscriber"];
        all.extend(args);
        let (ok, stdout, stderr) = control_plane_command(&all, env_vars, stdin).await;
        assert!(ok, "{user}: {stdout}{stderr}");
        assert!(!stderr.contains("warning"), "{stderr}");
        env.api.login(user, password, "mgr:subscribe").await;
    }
    let (ok, _, stderr) = control_plane_command(
        &["add-user", "--username", "flagged", "--password", "flag-pw"],
        &cli,
        "",
    )
    .await;
    assert!(ok && stderr.contains("shows in `ps`"), "{stderr}");
    env.api.login("flagged", "flag-pw", "mgr:subscribe").await;
    // No password at all is refused, and stores nothing.
    let (ok, _, stderr) =
        control_plane_command(&["add-user", "--username", "empty"], &cli, "").await;
    assert!(!ok && stderr.contains("must not be empty"), "{stderr}");
    let (_, help, _) = control_plane_command(&["add-user", "--help"], &cli, "").await;
    assert!(
        help.contains("--password-file") && !help.contains("--password <"),
        "{help}"
    );
}

/// `--help` of both binaries shows no secret given in the environment.
#[test]
fn help_shows_no_secret() {
    let secret = "help-secret-7f3a";
    let env = [
        (
            "APIM_VARS",
            format!("gateway_secret={secret},dev_soap_password={secret}"),
        ),
        ("APIM_GATEWAY_SECRET", secret.to_string()),
        ("APIM_KV_URL", format!("redis://:{secret}@127.0.0.1:6379/0")),
        ("APIM_ADMIN_PASSWORD", secret.to_string()),
        ("APIM_NEW_USER_PASSWORD", secret.to_string()),
        (
            "APIM_DATABASE_URL",
            format!("postgres://u:{secret}@127.0.0.1/db"),
        ),
    ];
    for (binary, args) in [
        ("edge-gateway", &["--help"][..]),
        ("control-plane", &["--help"]),
        ("control-plane", &["add-user", "--help"]),
    ] {
        let output = std::process::Command::new(harness::binary(binary))
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(help.contains("APIM_"), "{binary} {args:?}: {help}");
        assert!(
            !help.contains(secret),
            "{binary} {args:?} shows a secret:\n{help}"
        );
    }
}
