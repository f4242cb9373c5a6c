//! What the publisher stores per API beside its record: documents and their
//! content, thumbnails, the store's tags, WSDLs and mediation policies; each refusal
//! next to the legitimate request that must still work, the store's visibility rules,
//! and all of it gone with its API.

use harness::stack::ALL_SCOPES;
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, PUBLISHER, Reply, STORE, spec_api_record};
use reqwest::Method;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::InProcess;
use harness::Download;

/// The users of these scenarios and their tokens.
struct Users {
    /// The administrator, with the four management scopes.
    admin: String,
    /// A publisher: `api_view`, not `api_create`.
    viewer: String,
    /// A subscriber: no publisher scope at all.
    subscriber: String,
    /// A creator of another tenant.
    tenant: String,
}

async fn users(env: &InProcess) -> Users {
    let api = &env.api;
    api.add_user("paula", "paula-pw", &["publisher"]).await;
    api.add_user("sam", "sam-pw", &["subscriber"]).await;
    api.add_user("tina@acme.com", "tina-pw", &["creator", "subscriber"])
        .await;
    Users {
        admin: api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await,
        viewer: api.login("paula", "paula-pw", ALL_SCOPES).await,
        subscriber: api.login("sam", "sam-pw", ALL_SCOPES).await,
        tenant: api.login("tina@acme.com", "tina-pw", ALL_SCOPES).await,
    }
}

/// Creates an API named `name` (context `/<name lowercase>`) with `changes`; its id.
async fn create_api(env: &InProcess, token: &str, name: &str, changes: Value) -> String {
    let mut record = spec_api_record();
    record["name"] = json!(name);
    record["context"] = json!(format!("/{}", name.to_lowercase()));
    for (key, value) in changes.as_object().unwrap() {
        record[key] = value.clone();
    }
    Steps::new(&env.api, token)
        .create_api(&record)
        .await
        .unwrap()
}

async fn publish(env: &InProcess, token: &str, id: &str) {
    Steps::new(&env.api, token)
        .lifecycle(id, "Publish")
        .await
        .unwrap();
}

/// A multipart request.
async fn upload(env: &InProcess, method: Method, path: &str, token: &str, form: Form) -> Reply {
    env.api
        .send(env.api.request(method, path, token).multipart(form))
        .await
}

/// A form with one file part.
fn file_form(field: &str, bytes: Vec<u8>, file_name: &str, media_type: &str) -> Form {
    let part = Part::bytes(bytes)
        .file_name(file_name.to_string())
        .mime_str(media_type)
        .unwrap();
    Form::new().part(field.to_string(), part)
}

async fn download(env: &InProcess, path: &str, token: &str) -> Download {
    env.api.download(path, token).await
}

/// How many rows of `table` belong to API `api_id`, read from the database itself.
async fn rows_of_api(env: &InProcess, table: &str, api_id: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table} WHERE api_id = $1");
    query_one(env, &sql, api_id).await
}

/// The route manifest's version, read from the database itself.
async fn manifest_version(env: &InProcess) -> i64 {
    query_one(env, "SELECT version FROM manifest_state WHERE id = $1", "1").await
}

async fn query_one(env: &InProcess, sql: &str, bind: &str) -> i64 {
    use sqlx::Connection as _;
    match env.backend.database_url() {
        "" => {
            let options = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(env.data_dir.join("apim.db"))
                .read_only(true);
            let mut db = sqlx::SqliteConnection::connect_with(&options)
                .await
                .unwrap();
            let sql = sql.replace("$1", "?");
            let query = sqlx::query_as::<_, (i64,)>(&sql);
            let query = match bind.parse::<i64>() {
                Ok(number) => query.bind(number),
                Err(_) => query.bind(bind),
            };
            query.fetch_one(&mut db).await.unwrap().0
        }
        url => {
            let mut db = sqlx::PgConnection::connect(url).await.unwrap();
            let query = sqlx::query_as::<_, (i64,)>(sql);
            let query = match bind.parse::<i64>() {
                Ok(number) => query.bind(number),
                Err(_) => query.bind(bind),
            };
            query.fetch_one(&mut db).await.unwrap().0
        }
    }
}

/// The manifest's version once no compile is pending.
async fn settled_manifest_version(env: &InProcess) -> i64 {
    let mut version = manifest_version(env).await;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        let now = manifest_version(env).await;
        if now == version {
            return now;
        }
        version = now;
    }
}

fn doc(name: &str, source_type: &str, visibility: &str) -> Value {
    json!({"name": name, "type": "HOWTO", "summary": format!("About {name}"),
           "sourceType": source_type, "visibility": visibility})
}

pub async fn documents_in_publisher_and_store(env: InProcess) {
    let users = users(&env).await;
    let (admin, api) = (users.admin.as_str(), &env.api);
    let id = create_api(&env, admin, "Docs", json!({})).await;
    let docs = format!("{PUBLISHER}/apis/{id}/documents");
    let before = settled_manifest_version(&env).await;

    // Create: 201 with Location and the document; the same name again is 409.
    let created = api
        .post_json(&docs, admin, &doc("Intro", "INLINE", "API_LEVEL"))
        .await
        .expect(201);
    let intro = created.str("documentId");
    assert_eq!(
        created.headers["location"],
        format!("{PUBLISHER}/apis/{id}/documents/{intro}").as_str()
    );
    assert_eq!(created.body["sourceType"], "INLINE");
    assert_eq!(created.body["sourceUrl"], Value::Null);
    api.post_json(&docs, admin, &doc("Intro", "FILE", "API_LEVEL"))
        .await
        .expect_error(409, "Requested document 'Intro' already exists");

    // Bad bodies: 400 (or 415), and nothing stored.
    for (body, problem) in [
        (
            json!({"name": "X", "sourceType": "INLINE", "visibility": "API_LEVEL"}),
            "400_type",
        ),
        (
            json!({"name": "X", "type": "HOWTO", "sourceType": "PDF", "visibility": "API_LEVEL"}),
            "Invalid sourceType",
        ),
        (
            json!({"name": "X", "type": "OTHER", "sourceType": "INLINE", "visibility": "API_LEVEL"}),
            "otherTypeName cannot be empty",
        ),
        (
            json!({"name": "X", "type": "HOWTO", "sourceType": "URL", "sourceUrl": "javascript:alert(1)", "visibility": "API_LEVEL"}),
            "sourceUrl",
        ),
        (
            json!({"name": "X", "type": "HOWTO", "sourceType": "URL", "visibility": "API_LEVEL"}),
            "sourceUrl",
        ),
        (
            json!({"name": "X\u{0}", "type": "HOWTO", "sourceType": "INLINE", "visibility": "API_LEVEL"}),
            "control",
        ),
        (
            json!({"name": "X", "type": "HOWTO", "sourceType": "INLINE", "visibility": "PUBLIC"}),
            "Invalid visibility",
        ),
        (
            json!({"name": "X", "type": "HOWTO", "sourceType": "INLINE", "visibility": "API_LEVEL", "owner": "me"}),
            "Unrecognized property 'owner'",
        ),
    ] {
        api.post_json(&docs, admin, &body)
            .await
            .expect_error(400, problem);
    }
    let form_body = api
        .send(
            api.request(Method::POST, &docs, admin)
                .form(&[("name", "X")]),
        )
        .await;
    form_body.expect(415);
    let all = api.get(&docs, admin).await.expect(200);
    assert_eq!(all.body["count"], 1);

    // Who may: a publisher reads but does not write; a subscriber does neither; another
    // tenant's creator finds no such API; an unknown API is 404.
    api.get(&docs, &users.viewer).await.expect(200);
    api.post_json(&docs, &users.viewer, &doc("V", "INLINE", "API_LEVEL"))
        .await
        .expect_error(401, "Unauthenticated");
    api.get(&docs, &users.subscriber).await.expect(401);
    api.get(&docs, "").await.expect(401);
    api.get(&docs, &users.tenant)
        .await
        .expect_error(404, &format!("Requested API with Id '{id}' not found"));
    api.post_json(&docs, &users.tenant, &doc("T", "INLINE", "API_LEVEL"))
        .await
        .expect(404);
    api.get(&format!("{PUBLISHER}/apis/no-such-api/documents"), admin)
        .await
        .expect(404);

    // Every source type.
    let mut url_doc = doc("Online", "URL", "API_LEVEL");
    url_doc["sourceUrl"] = json!("https://docs.example.com/online?page=1");
    let online = api
        .post_json(&docs, admin, &url_doc)
        .await
        .expect(201)
        .str("documentId");
    let file = api
        .post_json(&docs, admin, &doc("Guide", "FILE", "API_LEVEL"))
        .await
        .expect(201)
        .str("documentId");
    let notes = api
        .post_json(&docs, admin, &doc("Notes", "MARKDOWN", "PRIVATE"))
        .await
        .expect(201)
        .str("documentId");

    // Paging, by name.
    let page = api
        .get(&format!("{docs}?limit=2&offset=1"), admin)
        .await
        .expect(200);
    assert_eq!(page.body["count"], 2);
    assert_eq!(page.body["pagination"]["total"], 4);
    assert_eq!(page.body["list"][0]["name"], "Intro");
    assert_eq!(
        page.body["next"],
        format!("/apis/{id}/documents?limit=2&offset=3").as_str()
    );
    assert_eq!(
        page.body["previous"],
        format!("/apis/{id}/documents?limit=2&offset=0").as_str()
    );
    api.get(&format!("{docs}?limit=0"), admin).await.expect(400);

    check_content_uploads(&env, admin, &docs, &intro, &file, &notes).await;

    // A URL document's content is a redirect to it.
    let redirect = download(&env, &format!("{docs}/{online}/content"), admin).await;
    assert_eq!(redirect.status, 303);
    assert_eq!(
        redirect.header("location"),
        "https://docs.example.com/online?page=1"
    );

    // Update: the metadata changes but for the name, which stays (as in WSO2 2.6); a bad
    // body changes nothing; an unknown document is 404.
    let mut changed = doc("Renamed", "INLINE", "API_LEVEL");
    changed["summary"] = json!("Now longer");
    let updated = api
        .put_json(&format!("{docs}/{intro}"), admin, &changed)
        .await
        .expect(200);
    assert_eq!(updated.body["name"], "Intro");
    assert_eq!(updated.body["summary"], "Now longer");
    changed["type"] = json!("NOTES");
    api.put_json(&format!("{docs}/{intro}"), admin, &changed)
        .await
        .expect_error(400, "Invalid type");
    api.put_json(&format!("{docs}/{intro}"), &users.viewer, &changed)
        .await
        .expect(401);
    let read = api.get(&format!("{docs}/{intro}"), admin).await.expect(200);
    assert_eq!(read.body["type"], "HOWTO");
    assert_eq!(read.body["summary"], "Now longer");
    api.get(&format!("{docs}/no-such-doc"), admin)
        .await
        .expect_error(404, "Requested Document with Id 'no-such-doc' not found");
    // The inline content is still there.
    let text = download(&env, &format!("{docs}/{intro}/content"), admin).await;
    assert_eq!(text.bytes, b"Hello *docs*");

    // None of it changed what gateways are sent.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(manifest_version(&env).await, before);

    check_store_documents(&env, &users, &id, &intro, &online, &notes).await;

    // A document of one API is not found under another.
    let other = create_api(&env, admin, "Other", json!({})).await;
    api.get(
        &format!("{PUBLISHER}/apis/{other}/documents/{intro}"),
        admin,
    )
    .await
    .expect(404);
    api.delete(
        &format!("{PUBLISHER}/apis/{other}/documents/{intro}"),
        admin,
    )
    .await
    .expect(404);

    // Delete: 200, then 404; the API's deletion takes its documents with it.
    api.delete(&format!("{docs}/{notes}"), &users.viewer)
        .await
        .expect(401);
    api.delete(&format!("{docs}/{notes}"), admin)
        .await
        .expect(200);
    api.delete(&format!("{docs}/{notes}"), admin)
        .await
        .expect(404);
    assert_eq!(rows_of_api(&env, "api_documents", &id).await, 3);
    let apis = format!("{PUBLISHER}/apis/{id}");
    api.delete(&apis, admin).await.expect(200);
    assert_eq!(rows_of_api(&env, "api_documents", &id).await, 0);
    api.get(&docs, admin).await.expect(404);
}

/// Content uploads: inline text, a file, each refusal beside them.
async fn check_content_uploads(
    env: &InProcess,
    admin: &str,
    docs: &str,
    intro: &str,
    file: &str,
    notes: &str,
) {
    let inline_form = || Form::new().text("inlineContent", "Hello *docs*");
    // No content yet: 404.
    download(env, &format!("{docs}/{intro}/content"), admin)
        .await
        .status
        .eq(&404)
        .then_some(())
        .expect("no content yet is 404");
    let uploaded = upload(
        env,
        Method::POST,
        &format!("{docs}/{intro}/content"),
        admin,
        inline_form(),
    )
    .await
    .expect(200);
    assert_eq!(uploaded.body["documentId"], intro);
    assert!(
        uploaded.headers["location"]
            .to_str()
            .unwrap()
            .ends_with("/content")
    );
    let text = download(env, &format!("{docs}/{intro}/content"), admin).await;
    assert_eq!(text.status, 200);
    assert_eq!(text.header("content-type"), "text/plain; charset=utf-8");
    assert_eq!(text.bytes, b"Hello *docs*");
    upload(
        env,
        Method::POST,
        &format!("{docs}/{notes}/content"),
        admin,
        Form::new().text("inlineContent", "# Notes"),
    )
    .await
    .expect(200);
    // Inline text is capped at 1 MiB: 413, and the earlier text stays.
    let long = Form::new().text("inlineContent", "x".repeat(1024 * 1024 + 1));
    upload(
        env,
        Method::POST,
        &format!("{docs}/{notes}/content"),
        admin,
        long,
    )
    .await
    .expect(413);
    let markdown = download(env, &format!("{docs}/{notes}/content"), admin).await;
    assert_eq!(markdown.bytes, b"# Notes");
    assert_eq!(
        markdown.header("content-type"),
        "text/markdown; charset=utf-8"
    );

    // The wrong field for the source type, both fields, neither, not a form: 400.
    let pdf = b"%PDF-1.4\n%\xe4\xfc\xf6\xdf\n1 0 obj\n<<>>\nendobj\n%%EOF".to_vec();
    let pdf_form = |name: &str| file_form("file", pdf.clone(), name, "application/pdf");
    upload(
        env,
        Method::POST,
        &format!("{docs}/{intro}/content"),
        admin,
        pdf_form("a.pdf"),
    )
    .await
    .expect_error(400, "is not FILE");
    upload(
        env,
        Method::POST,
        &format!("{docs}/{file}/content"),
        admin,
        inline_form(),
    )
    .await
    .expect_error(400, "is not INLINE");
    let both = pdf_form("a.pdf").text("inlineContent", "x");
    upload(
        env,
        Method::POST,
        &format!("{docs}/{file}/content"),
        admin,
        both,
    )
    .await
    .expect_error(400, "Only one of");
    upload(
        env,
        Method::POST,
        &format!("{docs}/{file}/content"),
        admin,
        Form::new().text("other", "x"),
    )
    .await
    .expect_error(400, "Either 'file' or 'inlineContent'");
    env.api
        .post_json(
            &format!("{docs}/{file}/content"),
            admin,
            &json!({"file": "x"}),
        )
        .await
        .expect_error(400, "multipart/form-data");
    // Path traversal and header injection in the file name.
    for name in ["../../etc/passwd", "..\\..\\boot.ini", "a\"; x=\"y.pdf"] {
        upload(
            env,
            Method::POST,
            &format!("{docs}/{file}/content"),
            admin,
            pdf_form(name),
        )
        .await
        .expect_error(400, "Invalid file name");
    }
    // The legitimate upload, and its download as an attachment that is not sniffed.
    upload(
        env,
        Method::POST,
        &format!("{docs}/{file}/content"),
        admin,
        pdf_form("guide v1.pdf"),
    )
    .await
    .expect(200);
    let got = download(env, &format!("{docs}/{file}/content"), admin).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.bytes, pdf);
    assert_eq!(got.header("content-type"), "application/pdf");
    assert!(
        got.header("content-disposition")
            .starts_with("attachment; filename=\"guide v1.pdf\"")
    );
    assert_eq!(got.header("x-content-type-options"), "nosniff");
    // Larger than a document file may be (4 MiB): 413, and the earlier file stays.
    let oversized = file_form(
        "file",
        vec![b'x'; 4 * 1024 * 1024 + 1],
        "big.pdf",
        "application/pdf",
    );
    upload(
        env,
        Method::POST,
        &format!("{docs}/{file}/content"),
        admin,
        oversized,
    )
    .await
    .expect(413);
    let kept = download(env, &format!("{docs}/{file}/content"), admin).await;
    assert_eq!(kept.bytes, pdf);
}

/// The store: API_LEVEL documents of an API the caller sees, anonymously too.
async fn check_store_documents(
    env: &InProcess,
    users: &Users,
    id: &str,
    intro: &str,
    online: &str,
    notes: &str,
) {
    let api = &env.api;
    let store_docs = format!("{STORE}/apis/{id}/documents");
    // Not published yet: the store has no such API.
    api.get(&store_docs, "")
        .await
        .expect_error(404, &format!("Requested API with Id '{id}' not found"));
    publish(env, &users.admin, id).await;
    let listed = api.get(&store_docs, "").await.expect(200);
    assert_eq!(listed.body["count"], 3, "the PRIVATE document is not shown");
    let names: Vec<&str> = listed.body["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Guide", "Intro", "Online"]);
    api.get(&format!("{store_docs}/{intro}"), &users.subscriber)
        .await
        .expect(200);
    api.get(&format!("{store_docs}/{notes}"), "")
        .await
        .expect_error(404, "Requested Document");
    assert_eq!(
        download(env, &format!("{store_docs}/{notes}/content"), "")
            .await
            .status,
        404
    );
    let text = download(env, &format!("{store_docs}/{intro}/content"), "").await;
    assert_eq!(
        (text.status, text.bytes.as_slice()),
        (200, &b"Hello *docs*"[..])
    );
    let redirect = download(env, &format!("{store_docs}/{online}/content"), "").await;
    assert_eq!(redirect.status, 303);

    // A PRIVATE API's documents: its tenant sees them, anonymous callers and other
    // tenants get 404 as for a missing API.
    let private = create_api(
        env,
        &users.admin,
        "Hidden",
        json!({"visibility": "PRIVATE"}),
    )
    .await;
    let hidden_docs = format!("{PUBLISHER}/apis/{private}/documents");
    let hidden = api
        .post_json(
            &hidden_docs,
            &users.admin,
            &doc("Secret", "INLINE", "API_LEVEL"),
        )
        .await
        .expect(201)
        .str("documentId");
    publish(env, &users.admin, &private).await;
    let store_hidden = format!("{STORE}/apis/{private}/documents");
    api.get(&store_hidden, &users.subscriber).await.expect(200);
    api.get(&store_hidden, "").await.expect(404);
    api.get(&store_hidden, &users.tenant).await.expect(404);
    api.get(&format!("{store_hidden}/{hidden}"), &users.tenant)
        .await
        .expect(404);
    assert_eq!(
        download(env, &format!("{store_hidden}/{hidden}/content"), "")
            .await
            .status,
        404
    );
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0\xff\xd9";

pub async fn thumbnails_and_tags(env: InProcess) {
    let users = users(&env).await;
    let (admin, api) = (users.admin.as_str(), &env.api);
    let id = create_api(
        &env,
        admin,
        "Pics",
        json!({"tags": ["mobile", "phone", "mobile"]}),
    )
    .await;
    let thumb = format!("{PUBLISHER}/apis/{id}/thumbnail");
    let store_thumb = format!("{STORE}/apis/{id}/thumbnail");
    let before = settled_manifest_version(&env).await;
    api.get(&thumb, admin)
        .await
        .expect_error(404, "has no thumbnail");

    // A PNG: 200 with WSO2's FileInfo; read back from the publisher.
    let png = || file_form("file", PNG.to_vec(), "logo.png", "image/png");
    let uploaded = upload(&env, Method::POST, &thumb, admin, png())
        .await
        .expect(200);
    assert_eq!(
        uploaded.body["relativePath"],
        format!("/apis/{id}/thumbnail").as_str()
    );
    assert_eq!(uploaded.body["mediaType"], "image/png");
    assert_eq!(uploaded.headers["location"], thumb.as_str());
    let got = download(&env, &thumb, admin).await;
    assert_eq!((got.status, got.header("content-type")), (200, "image/png"));
    assert_eq!(got.bytes, PNG);
    assert_eq!(got.header("x-content-type-options"), "nosniff");

    // What is not a PNG, JPEG or GIF, or not what it says it is, or too large: refused,
    // and the thumbnail stays.
    for (bytes, media_type, problem) in [
        (
            b"<html><script>alert(1)</script></html>".to_vec(),
            "image/png",
            "PNG, JPEG or GIF",
        ),
        (
            b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>".to_vec(),
            "image/svg+xml",
            "PNG, JPEG or GIF",
        ),
        (JPEG.to_vec(), "image/png", "does not match"),
        (PNG.to_vec(), "text/html", "does not match"),
    ] {
        upload(
            &env,
            Method::POST,
            &thumb,
            admin,
            file_form("file", bytes, "x.png", media_type),
        )
        .await
        .expect_error(400, problem);
    }
    let oversized = [PNG, &vec![0; 1024 * 1024]].concat();
    upload(
        &env,
        Method::POST,
        &thumb,
        admin,
        file_form("file", oversized, "big.png", "image/png"),
    )
    .await
    .expect(413);
    upload(
        &env,
        Method::POST,
        &thumb,
        admin,
        Form::new().text("image", "x"),
    )
    .await
    .expect_error(400, "400_file");
    api.post_json(&thumb, admin, &json!({"file": "x"}))
        .await
        .expect_error(400, "multipart/form-data");
    upload(&env, Method::POST, &thumb, &users.viewer, png())
        .await
        .expect(401);
    upload(&env, Method::POST, &thumb, &users.tenant, png())
        .await
        .expect(404);
    api.get(&thumb, &users.tenant).await.expect(404);
    api.get(&thumb, &users.subscriber).await.expect(401);
    upload(
        &env,
        Method::POST,
        &format!("{PUBLISHER}/apis/nope/thumbnail"),
        admin,
        png(),
    )
    .await
    .expect(404);
    assert_eq!(download(&env, &thumb, admin).await.bytes, PNG);

    // A JPEG sent as WSO2's own clients send files (application/octet-stream) replaces it.
    let jpeg = file_form(
        "file",
        JPEG.to_vec(),
        "logo.jpg",
        "application/octet-stream",
    );
    let replaced = upload(&env, Method::POST, &thumb, admin, jpeg)
        .await
        .expect(200);
    assert_eq!(replaced.body["mediaType"], "image/jpeg");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        manifest_version(&env).await,
        before,
        "thumbnails change no gateway"
    );

    // The store: once published, to anyone who sees the API.
    assert_eq!(download(&env, &store_thumb, "").await.status, 404);
    publish(&env, admin, &id).await;
    let stored = download(&env, &store_thumb, "").await;
    assert_eq!(
        (stored.status, stored.header("content-type")),
        (200, "image/jpeg")
    );
    assert_eq!(stored.bytes, JPEG);
    let private = create_api(
        &env,
        admin,
        "Secret",
        json!({"visibility": "PRIVATE", "tags": ["secret", "phone"]}),
    )
    .await;
    upload(
        &env,
        Method::POST,
        &format!("{PUBLISHER}/apis/{private}/thumbnail"),
        admin,
        png(),
    )
    .await
    .expect(200);
    publish(&env, admin, &private).await;
    let private_thumb = format!("{STORE}/apis/{private}/thumbnail");
    assert_eq!(download(&env, &private_thumb, "").await.status, 404);
    assert_eq!(
        download(&env, &private_thumb, &users.tenant).await.status,
        404
    );
    assert_eq!(
        download(&env, &private_thumb, &users.subscriber)
            .await
            .status,
        200
    );

    // Tags of the APIs the caller sees in the store, with counts: published ones only.
    create_api(&env, admin, "Draft", json!({"tags": ["draft"]})).await;
    let other = create_api(&env, admin, "Other", json!({"tags": ["mobile"]})).await;
    publish(&env, admin, &other).await;
    let tags = |reply: Reply| -> Vec<(String, i64)> {
        reply.body["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    t["weight"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    let pair = |name: &str, weight| (name.to_string(), weight);
    let anonymous = api.get(&format!("{STORE}/tags"), "").await.expect(200);
    assert_eq!(anonymous.body["count"], 2);
    assert_eq!(tags(anonymous), [pair("mobile", 2), pair("phone", 1)]);
    let home = api
        .get(&format!("{STORE}/tags"), &users.subscriber)
        .await
        .expect(200);
    assert_eq!(
        tags(home),
        [pair("mobile", 2), pair("phone", 2), pair("secret", 1)]
    );
    // Another tenant's user: its own store is empty; the super tenant's shows the public.
    let own = api
        .get(&format!("{STORE}/tags"), &users.tenant)
        .await
        .expect(200);
    assert_eq!(own.body["count"], 0);
    let visiting = api
        .send(
            api.request(Method::GET, &format!("{STORE}/tags"), &users.tenant)
                .header("X-WSO2-Tenant", "carbon.super"),
        )
        .await
        .expect(200);
    assert_eq!(tags(visiting), [pair("mobile", 2), pair("phone", 1)]);
    let paged = api
        .get(&format!("{STORE}/tags?limit=1&offset=1"), "")
        .await
        .expect(200);
    assert_eq!(tags(paged.clone()), [pair("phone", 1)]);
    assert_eq!(paged.body["previous"], "/tags?limit=1&offset=0");
    assert_eq!(paged.body["next"], "");
    api.get(&format!("{STORE}/tags?limit=-1"), "")
        .await
        .expect(400);
    api.get(&format!("{STORE}/tags?tag=x"), "")
        .await
        .expect(400);

    // The API's deletion takes its thumbnail with it.
    assert_eq!(rows_of_api(&env, "api_thumbnails", &id).await, 1);
    api.delete(&format!("{PUBLISHER}/apis/{id}"), admin)
        .await
        .expect(200);
    assert_eq!(rows_of_api(&env, "api_thumbnails", &id).await, 0);
}

const WSDL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" name="Calculator"
    targetNamespace="urn:calculator">
  <wsdl:message name="AddRequest"><wsdl:part name="a" type="xsd:int"/></wsdl:message>
</wsdl:definitions>"#;

pub async fn wsdl_is_xml_without_doctype(env: InProcess) {
    let users = users(&env).await;
    let (admin, api) = (users.admin.as_str(), &env.api);
    let id = create_api(&env, admin, "Soap", json!({})).await;
    let wsdl = format!("{PUBLISHER}/apis/{id}/wsdl");
    let before = settled_manifest_version(&env).await;
    api.get(&wsdl, admin).await.expect_error(404, "has no WSDL");

    // POST as the contract says; 200 with no body; read back.
    let body = |name: &str, definition: &str| json!({"name": name, "wsdlDefinition": definition});
    let stored = api
        .post_json(&wsdl, admin, &body("calc.wsdl", WSDL))
        .await
        .expect(200);
    assert_eq!(stored.body, Value::Null);
    let read = api.get(&wsdl, &users.viewer).await.expect(200);
    assert_eq!(read.body, body("calc.wsdl", WSDL));
    // PUT replaces it too.
    let second = WSDL.replace("Calculator", "Calculator2");
    api.put_json(&wsdl, admin, &body("calc2.wsdl", &second))
        .await
        .expect(200);

    // Hostile or broken definitions: 400, and the WSDL stays.
    let laughs = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><definitions>&lol2;</definitions>"#;
    let external = r#"<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><definitions>&x;</definitions>"#;
    for (name, definition, problem) in [
        ("a.wsdl", laughs, "DOCTYPE"),
        ("a.wsdl", external, "DOCTYPE"),
        (
            "a.wsdl",
            "<definitions>&x;</definitions>",
            "undefined entity",
        ),
        (
            "a.wsdl",
            "<wsdl:description xmlns:wsdl='http://www.w3.org/ns/wsdl'/>",
            "must be 'definitions'",
        ),
        ("a.wsdl", "{\"not\": \"xml\"}", "Invalid WSDL"),
        ("a.wsdl", "<definitions>", "not closed"),
        ("../../etc/a.wsdl", WSDL, "Invalid file name"),
    ] {
        api.post_json(&wsdl, admin, &body(name, definition))
            .await
            .expect_error(400, problem);
    }
    api.post_json(&wsdl, admin, &json!({"wsdlDefinition": WSDL}))
        .await
        .expect_error(400, "400_name");
    api.post_json(
        &wsdl,
        admin,
        &json!({"name": "a.wsdl", "wsdlDefinition": WSDL, "url": "x"}),
    )
    .await
    .expect_error(400, "Unrecognized property 'url'");
    let xml_body = api
        .send(
            api.request(Method::POST, &wsdl, admin)
                .header("content-type", "text/xml")
                .body(WSDL),
        )
        .await;
    xml_body.expect(415);
    let huge = format!("<definitions>{}</definitions>", " ".repeat(1024 * 1024));
    api.post_json(&wsdl, admin, &body("big.wsdl", &huge))
        .await
        .expect(413);
    api.post_json(&wsdl, &users.viewer, &body("calc.wsdl", WSDL))
        .await
        .expect(401);
    api.post_json(&wsdl, &users.tenant, &body("calc.wsdl", WSDL))
        .await
        .expect(404);
    api.get(&wsdl, &users.tenant).await.expect(404);
    api.get(&wsdl, &users.subscriber).await.expect(401);
    api.get(&format!("{PUBLISHER}/apis/nope/wsdl"), admin)
        .await
        .expect(404);
    let kept = api.get(&wsdl, admin).await.expect(200);
    assert_eq!(kept.body, body("calc2.wsdl", &second));
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        manifest_version(&env).await,
        before,
        "a WSDL changes no gateway"
    );

    // The API's deletion takes its WSDL with it.
    api.delete(&format!("{PUBLISHER}/apis/{id}"), admin)
        .await
        .expect(200);
    assert_eq!(rows_of_api(&env, "api_wsdls", &id).await, 0);
}

const SEQUENCE: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="add_custom_header">
    <property name="CustomHeader" scope="transport" value="example"/>
</sequence>"#;

pub async fn mediation_policies(env: InProcess) {
    let users = users(&env).await;
    let (admin, api) = (users.admin.as_str(), &env.api);
    let id = create_api(&env, admin, "Mediated", json!({})).await;
    let policies = format!("{PUBLISHER}/apis/{id}/policies/mediation");
    let before = settled_manifest_version(&env).await;
    let policy = |name: &str, flow: &str, config: &str| json!({"name": name, "type": flow, "config": config});

    // Create: 200 (the contract's status) with Location and the policy, content kept.
    let created = api
        .post_json(
            &policies,
            admin,
            &policy("add_custom_header", "in", SEQUENCE),
        )
        .await
        .expect(200);
    let first = created.str("id");
    assert_eq!(
        created.headers["location"],
        format!("{policies}/{first}").as_str()
    );
    assert_eq!(created.body["config"], SEQUENCE);
    api.post_json(
        &policies,
        admin,
        &policy("add_custom_header", "in", SEQUENCE),
    )
    .await
    .expect_error(409, "already exists");
    // The same name in another flow is another policy.
    let fault = api
        .post_json(
            &policies,
            admin,
            &policy("add_custom_header", "fault", SEQUENCE),
        )
        .await
        .expect(200)
        .str("id");

    // Bad bodies: 400 (or 413, 415), nothing stored.
    let laughs =
        r#"<!DOCTYPE s [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><sequence>&b;</sequence>"#;
    for (body, status, problem) in [
        (policy("x", "in", laughs), 400, "DOCTYPE"),
        (
            policy("x", "in", "<sequence><log></sequence>"),
            400,
            "not well formed",
        ),
        (
            policy("x", "in", "<definitions/>"),
            400,
            "must be 'sequence'",
        ),
        (
            policy("x", "in", "plain text"),
            400,
            "Invalid mediation policy",
        ),
        (policy("x", "request", SEQUENCE), 400, "Invalid type"),
        (
            policy("../../out/x", "in", SEQUENCE),
            400,
            "Invalid mediation policy name",
        ),
        (json!({"name": "x", "type": "in"}), 400, "400_config"),
        (
            json!({"name": "x", "type": "in", "config": SEQUENCE, "shared": true}),
            400,
            "Unrecognized property 'shared'",
        ),
    ] {
        api.post_json(&policies, admin, &body)
            .await
            .expect_error(status, problem);
    }
    let huge = format!("<sequence>{}</sequence>", " ".repeat(256 * 1024));
    api.post_json(&policies, admin, &policy("big", "in", &huge))
        .await
        .expect(413);
    api.send(
        api.request(Method::POST, &policies, admin)
            .header("content-type", "application/xml")
            .body(SEQUENCE),
    )
    .await
    .expect(415);

    // Who may: a publisher reads, does not write; a subscriber neither; another tenant
    // finds no such API.
    api.get(&policies, &users.viewer).await.expect(200);
    api.post_json(&policies, &users.viewer, &policy("v", "in", SEQUENCE))
        .await
        .expect(401);
    api.delete(&format!("{policies}/{first}"), &users.viewer)
        .await
        .expect(401);
    api.get(&policies, &users.subscriber).await.expect(401);
    api.get(&policies, &users.tenant).await.expect(404);
    api.get(&format!("{policies}/{first}"), &users.tenant)
        .await
        .expect(404);
    api.post_json(&policies, &users.tenant, &policy("t", "in", SEQUENCE))
        .await
        .expect(404);
    api.get(&format!("{PUBLISHER}/apis/nope/policies/mediation"), admin)
        .await
        .expect(404);

    // List, paged, by type and name; query is accepted and ignored, as in WSO2.
    let listed = api
        .get(&format!("{policies}?limit=1&query=x"), admin)
        .await
        .expect(200);
    assert_eq!(listed.body["count"], 1);
    assert_eq!(
        listed.body["list"][0],
        json!({"name": "add_custom_header", "id": fault, "type": "fault"})
    );
    assert!(listed.body["next"].as_str().unwrap().contains("offset=1"));
    api.get(&format!("{policies}?sort=name"), admin)
        .await
        .expect(400);

    // Read, update (rename; onto a taken name and type is 409), delete.
    let read = api
        .get(&format!("{policies}/{first}"), &users.viewer)
        .await
        .expect(200);
    assert_eq!(read.body["config"], SEQUENCE);
    api.get(&format!("{policies}/no-such"), admin)
        .await
        .expect_error(
            404,
            "Requested Mediation Policy with Id 'no-such' not found",
        );
    let changed = SEQUENCE.replace("example", "changed");
    let updated = api
        .put_json(
            &format!("{policies}/{first}"),
            admin,
            &policy("renamed", "out", &changed),
        )
        .await
        .expect(200);
    assert_eq!(
        updated.body,
        json!({"id": first, "name": "renamed", "type": "out", "config": changed})
    );
    api.put_json(
        &format!("{policies}/{first}"),
        admin,
        &policy("add_custom_header", "fault", SEQUENCE),
    )
    .await
    .expect_error(409, "already exists");
    api.put_json(
        &format!("{policies}/{first}"),
        admin,
        &policy("renamed", "out", laughs),
    )
    .await
    .expect_error(400, "DOCTYPE");
    api.put_json(
        &format!("{policies}/no-such"),
        admin,
        &policy("n", "in", SEQUENCE),
    )
    .await
    .expect(404);
    let kept = api
        .get(&format!("{policies}/{first}"), admin)
        .await
        .expect(200);
    assert_eq!(kept.body["config"], changed.as_str());
    api.delete(&format!("{policies}/{fault}"), admin)
        .await
        .expect(200);
    api.delete(&format!("{policies}/{fault}"), admin)
        .await
        .expect(404);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        manifest_version(&env).await,
        before,
        "mediation policies change no gateway"
    );

    // The global policies: for mediation_policy_view, which only administrators get.
    let global = format!("{PUBLISHER}/policies/mediation");
    api.get(&global, admin)
        .await
        .expect_error(401, "Unauthenticated");
    let viewer = api
        .login(
            "paula",
            "paula-pw",
            "mgr:api_view mgr:mediation_policy_view",
        )
        .await;
    api.get(&global, &viewer).await.expect(401);
    let mediation_admin = api
        .login("admin", ADMIN_PASSWORD, "mgr:mediation_policy_view")
        .await;
    let all = api.get(&global, &mediation_admin).await.expect(200);
    let names: Vec<&str> = all.body["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for name in [
        "json_to_xml_in_message",
        "xml_to_json_out_message",
        "preserve_accept_header",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let paged = api
        .get(&format!("{global}?limit=2&offset=2"), &mediation_admin)
        .await
        .expect(200);
    assert_eq!(paged.body["count"], 2);
    assert_eq!(
        paged.body["previous"],
        "/policies/mediation?limit=2&offset=0"
    );

    // The API's deletion takes its policies with it.
    assert_eq!(rows_of_api(&env, "api_mediation_policies", &id).await, 1);
    api.delete(&format!("{PUBLISHER}/apis/{id}"), admin)
        .await
        .expect(200);
    assert_eq!(rows_of_api(&env, "api_mediation_policies", &id).await, 0);
}

/// Gives the API at `base` (its publisher path) what a copy must carry: a document with
/// inline content, a PNG thumbnail, a WSDL and a mediation sequence for each flow. The
/// document's id.
pub async fn add_content(api: &harness::Client, admin: &str, base: &str) -> String {
    let send = |path: String, form: Form| {
        api.send(api.request(Method::POST, &path, admin).multipart(form))
    };
    let doc_id = api
        .post_json(
            &format!("{base}/documents"),
            admin,
            &doc("Guide", "INLINE", "API_LEVEL"),
        )
        .await
        .expect(201)
        .str("documentId");
    let text = Form::new().text("inlineContent", "How to call it");
    send(format!("{base}/documents/{doc_id}/content"), text)
        .await
        .expect(200);
    let png = file_form("file", PNG.to_vec(), "logo.png", "image/png");
    send(format!("{base}/thumbnail"), png).await.expect(200);
    let wsdl = json!({"name": "calc.wsdl", "wsdlDefinition": WSDL});
    api.post_json(&format!("{base}/wsdl"), admin, &wsdl)
        .await
        .expect(200);
    for flow in ["in", "out", "fault"] {
        let policy = json!({"name": "add_custom_header", "type": flow, "config": SEQUENCE});
        api.post_json(&format!("{base}/policies/mediation"), admin, &policy)
            .await
            .expect(200);
    }
    doc_id
}

/// Checks that API `id` has what [`add_content`] gave its source (whose document was
/// `source_doc`): the document and its content and the thumbnail in the store, the WSDL
/// through the publisher (the store's contract has no WSDL operation).
pub async fn check_content_in_store(
    api: &harness::Client,
    admin: &str,
    id: &str,
    source_doc: &str,
) {
    let store = format!("{STORE}/apis/{id}");
    let docs = api
        .get(&format!("{store}/documents"), admin)
        .await
        .expect(200);
    assert_eq!(docs.body["count"], 1, "{}", docs.body);
    let copied_doc = docs.body["list"][0]["documentId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(copied_doc, source_doc, "a copy is a document of its own");
    let content = api
        .download(&format!("{store}/documents/{copied_doc}/content"), admin)
        .await;
    assert_eq!(
        (content.status, content.bytes.as_slice()),
        (200, b"How to call it".as_slice())
    );
    let thumbnail = api.download(&format!("{store}/thumbnail"), "").await;
    assert_eq!((thumbnail.status, thumbnail.bytes.as_slice()), (200, PNG));
    let read = api
        .get(&format!("{PUBLISHER}/apis/{id}/wsdl"), admin)
        .await
        .expect(200);
    assert_eq!(
        read.body,
        json!({"name": "calc.wsdl", "wsdlDefinition": WSDL})
    );
}

/// `copy-api` takes what the publisher stores beside the record to the new version, in
/// the same transaction: documents with their content, the thumbnail, the WSDL and the
/// mediation policies; the store shows them once the copy is published. The source keeps
/// its own, and a refused copy (the version exists) adds nothing.
pub async fn copies_carry_their_content(env: InProcess) {
    let api = &env.api;
    let admin = &api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let v1 = create_api(&env, admin, "Carried", json!({})).await;
    let base = format!("{PUBLISHER}/apis/{v1}");
    let doc_id = add_content(api, admin, &base).await;

    let copy = format!("{PUBLISHER}/apis/copy-api?apiId={v1}&newVersion=v2.0.0");
    let v2 = api.post_empty(&copy, admin).await.expect(201).str("id");
    api.post_empty(&copy, admin).await.expect(409);
    for table in ["api_documents", "api_mediation_policies"] {
        assert_eq!(
            rows_of_api(&env, table, &v2).await,
            rows_of_api(&env, table, &v1).await,
            "{table}"
        );
    }
    publish(&env, admin, &v2).await;

    check_content_in_store(api, admin, &v2, &doc_id).await;
    let policies = api
        .get(&format!("{PUBLISHER}/apis/{v2}/policies/mediation"), admin)
        .await
        .expect(200);
    assert_eq!(policies.body["count"], 3, "{}", policies.body);
    // The source's own are untouched.
    assert_eq!(rows_of_api(&env, "api_documents", &v1).await, 1);

    // `doc:` finds APIs by their documents' text: both versions in the publisher, the
    // published one in the store; text no document has finds none.
    let found = |path: String| async move {
        api.get(&path, admin).await.expect(200).body["count"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(
        found(format!("{PUBLISHER}/apis?query=doc:to*call")).await,
        2
    );
    assert_eq!(found(format!("{STORE}/apis?query=doc:to*call")).await, 1);
    assert_eq!(
        found(format!("{PUBLISHER}/apis?query=doc:nowhere")).await,
        0
    );
}
