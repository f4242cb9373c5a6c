//! WSO2 2.6's import/export service (`/api-import-export-2.6.0-v0`), as `apimcli` 2.x
//! calls it: HTTP Basic, plain-text refusals, an API's project zipped in WSO2's layout.

use harness::stack::ALL_SCOPES;
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, Backend, Client, PUBLISHER, STORE, spec_api_record};
use reqwest::Method;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use tools::dev_api::{self, Target};
use tools::legacy::Framing;

use crate::dev_facade::{Facade, exercise, wait_for_route};
use crate::{Env, InProcess};

/// An exported project: its root folder and its files by path under it.
struct Project {
    root: String,
    files: std::collections::BTreeMap<String, Vec<u8>>,
}

impl Project {
    /// Every entry of the zip; they must all be files under one folder.
    fn from_zip(bytes: &[u8]) -> Result<Self, String> {
        use std::io::Read as _;
        let mut archive =
            zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| e.to_string())?;
        let mut project = Project {
            root: String::new(),
            files: Default::default(),
        };
        for index in 0..archive.len() {
            let mut entry = archive.by_index(index).map_err(|e| e.to_string())?;
            assert!(entry.is_file(), "{} is not a file", entry.name());
            let (root, path) = entry.name().split_once('/').expect("under a folder");
            let (root, path) = (root.to_string(), path.to_string());
            assert!(project.root.is_empty() || project.root == root);
            project.root = root;
            let mut contents = Vec::new();
            entry
                .read_to_end(&mut contents)
                .map_err(|e| e.to_string())?;
            project.files.insert(path, contents);
        }
        Ok(project)
    }

    fn file(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }
}

const EXPORT: &str = "/api-import-export-2.6.0-v0/export-api";
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
const PDF: &[u8] = b"%PDF-1.4\n%guide\n";
const WSDL: &str = r#"<?xml version="1.0"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" name="Pets"
    targetNamespace="urn:pets"><wsdl:message name="Get"/></wsdl:definitions>"#;
const IN_SEQUENCE: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="add_header"><header name="X-A" scope="transport" value="1"/></sequence>"#;

/// An export as apimcli 2.x sends it: product-apim-tooling `import-export-cli/cmd/
/// exportAPI.go` (`ExportAPI`: `GET <endpoint>/export-api?name&version&provider`,
/// `Authorization: Basic`, `Accept: application/zip`); it takes only 200 as success.
fn export_request(
    env: &InProcess,
    query: &str,
    credentials: Option<(&str, &str)>,
) -> reqwest::RequestBuilder {
    let request = env
        .api
        .request(Method::GET, &format!("{EXPORT}?{query}"), "")
        .header("accept", "application/zip");
    match credentials {
        Some((user, password)) => request.basic_auth(user, Some(password)),
        None => request,
    }
}

/// An API with everything a project carries: a backend password, its own in-sequence
/// and WSO2's fault one, an inline and a file document, a thumbnail, a WSDL and an
/// endpoint certificate; its id.
pub(crate) async fn populated_api(api: &Client, admin: &str) -> String {
    let mut record = spec_api_record();
    record["name"] = json!("Pets");
    record["context"] = json!("/pets");
    record["endpointSecurity"] =
        json!({"type": "basic", "username": "svc", "password": "s3cret-pw"});
    let id = Steps::new(api, admin).create_api(&record).await.unwrap();
    let policies = format!("{PUBLISHER}/apis/{id}/policies/mediation");
    let policy = json!({"name": "add_header", "type": "in", "config": IN_SEQUENCE});
    api.post_json(&policies, admin, &policy).await.expect(200);
    let path = format!("{PUBLISHER}/apis/{id}");
    let mut stored: Value = api.get(&path, admin).await.expect(200).body;
    stored["sequences"] = json!([
        {"name": "add_header", "type": "in"},
        {"name": "json_fault", "type": "fault"}
    ]);
    api.put_json(&path, admin, &stored).await.expect(200);
    let docs = format!("{path}/documents");
    let doc = json!({"name": "How to", "type": "HOWTO", "sourceType": "INLINE",
                     "visibility": "API_LEVEL", "summary": "Start here"});
    let doc_id = api
        .post_json(&docs, admin, &doc)
        .await
        .expect(201)
        .str("documentId");
    let inline = Form::new().text("inlineContent", "Call GET /devs.");
    let content = api
        .request(Method::POST, &format!("{docs}/{doc_id}/content"), admin)
        .multipart(inline);
    api.send(content).await.expect(200);
    let png = Part::bytes(PNG.to_vec())
        .file_name("logo.png")
        .mime_str("image/png")
        .unwrap();
    let thumbnail = api
        .request(Method::POST, &format!("{path}/thumbnail"), admin)
        .multipart(Form::new().part("file", png));
    api.send(thumbnail).await.expect(200);
    let file_doc = json!({"name": "Guide", "type": "HOWTO", "sourceType": "FILE",
                          "visibility": "API_LEVEL"});
    let file_id = api
        .post_json(&docs, admin, &file_doc)
        .await
        .expect(201)
        .str("documentId");
    let pdf = Part::bytes(PDF.to_vec()).file_name("guide.pdf");
    let file_content = api
        .request(Method::POST, &format!("{docs}/{file_id}/content"), admin)
        .multipart(Form::new().part("file", pdf));
    api.send(file_content).await.expect(200);
    let wsdl = json!({"name": "pets.wsdl", "wsdlDefinition": WSDL});
    api.post_json(&format!("{path}/wsdl"), admin, &wsdl)
        .await
        .expect(200);
    let certificate = Form::new()
        .part(
            "certificate",
            Part::bytes(backend_certificate().into_bytes()).file_name("backend.pem"),
        )
        .text("alias", "pets-backend")
        .text("endpoint", "https://127.0.0.1:8080");
    let upload = api
        .request(Method::POST, &format!("{PUBLISHER}/certificates"), admin)
        .multipart(certificate);
    api.send(upload).await.expect(200);
    id
}

/// The backend's certificate, the same for every run of a test.
fn backend_certificate() -> String {
    static PEM: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PEM.get_or_init(|| harness::tls::Authority::new("Pets backend").ca_pem)
        .clone()
}

pub async fn api_projects_export_as_wso2_lays_them_out(env: InProcess) {
    let api = &env.api;
    api.add_user("sam", "sam-pw", &["subscriber"]).await;
    api.add_user("tina@acme.com", "tina-pw", &["creator"]).await;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let id = populated_api(api, &admin).await;

    // Refusals, as the service words them.
    let query = "name=Pets&version=v1.0.0&provider=admin";
    let none = api.send(export_request(&env, query, None)).await;
    assert_eq!(none.status, 401);
    assert!(none.body.to_string().contains("No username or password"));
    let wrong = api
        .send(export_request(&env, query, Some(("admin", "nope"))))
        .await;
    assert_eq!(wrong.status, 401);
    assert!(
        wrong
            .body
            .to_string()
            .contains("User Authentication Failed")
    );
    let subscriber = api
        .send(export_request(&env, query, Some(("sam", "sam-pw"))))
        .await;
    assert_eq!(subscriber.status, 403);
    let admin_login = Some(("admin", ADMIN_PASSWORD));
    let partial = api
        .send(export_request(
            &env,
            "name=Pets&version=v1.0.0",
            admin_login,
        ))
        .await;
    assert_eq!(partial.status, 400);
    assert!(partial.body.to_string().contains("Invalid API Information"));
    let missing = "name=Nope&version=v1.0.0&provider=admin";
    let unknown = api.send(export_request(&env, missing, admin_login)).await;
    assert_eq!(unknown.status, 404);
    let other_tenant = api
        .send(export_request(
            &env,
            query,
            Some(("tina@acme.com", "tina-pw")),
        ))
        .await;
    assert_eq!(
        other_tenant.status, 404,
        "another tenant's API is not found"
    );

    // The project: WSO2's layout, WSO2's model, no secret.
    let download = env
        .api
        .download_request(export_request(&env, query, admin_login))
        .await;
    assert_eq!(download.status, 200);
    assert_eq!(download.header("content-type"), "application/zip");
    let project = Project::from_zip(&download.bytes).unwrap();
    assert_eq!(project.root, "Pets-v1.0.0");
    let meta: Value =
        serde_json::from_slice(project.file("Meta-information/api.json").unwrap()).unwrap();
    assert_eq!(
        meta["id"],
        json!({"providerName": "admin", "apiName": "Pets", "version": "v1.0.0"})
    );
    assert_eq!(meta["context"], "/pets/v1.0.0");
    assert_eq!(meta["contextTemplate"], "/pets/{version}");
    assert_eq!(meta["transports"], "http,https");
    assert_eq!(meta["inSequence"], "add_header");
    assert_eq!(meta["faultSequence"], "json_fault");
    assert_eq!(meta["endpointSecured"], true);
    assert_eq!(meta["endpointUTUsername"], "svc");
    assert_eq!(meta["endpointUTPassword"], "");
    assert_eq!(meta["status"], "CREATED");
    assert_eq!(meta["accessControl"], "all");
    assert_eq!(meta["visibility"], "public");
    assert!(meta["endpointConfig"].is_string());
    assert!(meta["availableTiers"][0]["name"].is_string());
    for (path, bytes) in &project.files {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains("s3cret-pw"), "{path} carries the password");
    }
    let swagger: Value =
        serde_json::from_slice(project.file("Meta-information/swagger.json").unwrap()).unwrap();
    assert_eq!(swagger["swagger"], "2.0");
    let listed: Value = serde_json::from_slice(project.file("Docs/docs.json").unwrap()).unwrap();
    let how_to = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|doc| doc["name"] == "How to")
        .unwrap();
    assert_eq!(how_to["sourceType"], "INLINE");
    assert_eq!(
        project.file("Docs/InlineContents/How to"),
        Some(&b"Call GET /devs."[..])
    );
    assert_eq!(project.file("Image/icon.png"), Some(PNG));
    assert_eq!(
        project.file("Sequences/in-sequence/Custom/add_header.xml"),
        Some(IN_SEQUENCE.as_bytes())
    );
    assert!(
        project
            .file("Sequences/fault-sequence/json_fault.xml")
            .is_some()
    );

    // preserveStatus=false exports a published API as CREATED; otherwise as it is.
    Steps::new(api, &admin)
        .lifecycle(&id, "Publish")
        .await
        .unwrap();
    for (extra, status) in [("", "PUBLISHED"), ("&preserveStatus=false", "CREATED")] {
        let request = export_request(&env, &format!("{query}{extra}"), admin_login);
        let project = Project::from_zip(&env.api.download_request(request).await.bytes).unwrap();
        let meta: Value =
            serde_json::from_slice(project.file("Meta-information/api.json").unwrap()).unwrap();
        assert_eq!(meta["status"], status, "{extra}");
    }
}

const IMPORT: &str = "/api-import-export-2.6.0-v0/import-api";

/// An import as apimcli 2.x sends it: product-apim-tooling `import-export-cli/cmd/
/// importAPI.go` (`ImportAPI`: `POST <endpoint>import-api?preserveProvider=<bool>`;
/// `NewFileUploadRequest`: the zip as the multipart part `file` named after its file,
/// Basic credentials, `Accept: */*`); it takes 201 or 200 as success.
fn import_request(
    client: &Client,
    query: &str,
    zip: Vec<u8>,
    credentials: (&str, &str),
) -> reqwest::RequestBuilder {
    project_upload(
        client,
        Method::POST,
        &format!("{IMPORT}?{query}"),
        zip,
        credentials,
    )
}

/// A project's zip sent as apimcli's `NewFileUploadRequest` sends it.
fn project_upload(
    client: &Client,
    method: Method,
    path: &str,
    zip: Vec<u8>,
    (user, password): (&str, &str),
) -> reqwest::RequestBuilder {
    let part = Part::bytes(zip)
        .file_name("Pets-v1.0.0.zip")
        .mime_str("application/octet-stream")
        .unwrap();
    client
        .request(method, path, "")
        .header("accept", "*/*")
        .basic_auth(user, Some(password))
        .multipart(Form::new().part("file", part))
}

/// A zip of `files` under `root`, as apimcli zips a project folder.
fn zip_of(root: &str, files: &std::collections::BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    use std::io::Write as _;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for (path, bytes) in files {
        zip.start_file(format!("{root}/{path}"), options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// The APIs of `name` a publisher sees.
async fn count_named(client: &Client, token: &str, name: &str) -> u64 {
    let query = format!("{PUBLISHER}/apis?query=name:{name}");
    let listed = client.get(&query, token).await.expect(200);
    listed.body["count"].as_u64().unwrap()
}

pub async fn api_projects_import_as_wso2_takes_them(env: InProcess) {
    let api = &env.api;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let id = populated_api(api, &admin).await;
    Steps::new(api, &admin)
        .lifecycle(&id, "Publish")
        .await
        .unwrap();
    let admin_login = ("admin", ADMIN_PASSWORD);
    let query = "name=Pets&version=v1.0.0&provider=admin";
    let exported = env
        .api
        .download_request(export_request(&env, query, Some(admin_login)))
        .await
        .bytes;

    // Into another control plane (SQLite): the API and all it carries come across.
    let dir = harness::temp_dir();
    let other = harness::in_process_control_plane(&Backend::Sqlite, &dir).await;
    let imported = other
        .send(import_request(
            &other,
            "preserveProvider=true",
            exported.clone(),
            admin_login,
        ))
        .await;
    assert_eq!(imported.status, 201, "{}", imported.body);
    let said = imported.body.to_string();
    assert!(said.contains("API imported successfully."), "{said}");
    assert!(said.contains("endpointUTPassword"), "{said}");
    let location = imported.header("location").unwrap().to_string();
    let other_admin = other.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let original: Value = api
        .get(&format!("{PUBLISHER}/apis/{id}"), &admin)
        .await
        .expect(200)
        .body;
    let copy: Value = other.get(&location, &other_admin).await.expect(200).body;
    for field in [
        "name",
        "version",
        "context",
        "provider",
        "status",
        "tiers",
        "sequences",
        "endpointConfig",
        "maxTps",
        "businessInformation",
        "transport",
        "tags",
        "visibility",
        "corsConfiguration",
        "isDefaultVersion",
    ] {
        assert_eq!(copy[field], original[field], "{field}");
    }
    assert_eq!(copy["status"], "PUBLISHED");
    let definition = |record: &Value| -> Value {
        serde_json::from_str(record["apiDefinition"].as_str().unwrap()).unwrap()
    };
    assert_eq!(definition(&copy), definition(&original));
    assert_eq!(copy["endpointSecurity"]["username"], "svc");
    assert!(
        !copy.to_string().contains("s3cret-pw"),
        "no password came across"
    );

    // Exported again, the copy is the same project but for its ids.
    let new_id = location.rsplit('/').next().unwrap();
    let again = other
        .download_request(
            other
                .request(Method::GET, &format!("{EXPORT}?{query}"), "")
                .basic_auth("admin", Some(ADMIN_PASSWORD)),
        )
        .await;
    let (before, after) = (
        Project::from_zip(&exported).unwrap(),
        Project::from_zip(&again.bytes).unwrap(),
    );
    assert_eq!(
        before.files.keys().collect::<Vec<_>>(),
        after.files.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &before.files {
        if path == "Meta-information/api.json" || path == "Docs/docs.json" {
            let ids = |bytes: &[u8]| -> Value {
                let mut doc: Value = serde_json::from_slice(bytes).unwrap();
                strip_ids(&mut doc);
                doc
            };
            assert_eq!(ids(bytes), ids(after.file(path).unwrap()), "{path}");
        } else {
            assert_eq!(Some(bytes.as_slice()), after.file(path), "{path}");
        }
    }
    let file_docs = other
        .get(
            &format!("{PUBLISHER}/apis/{new_id}/documents"),
            &other_admin,
        )
        .await
        .expect(200);
    assert_eq!(file_docs.body["count"], 2);
    let cert = other
        .download(
            &format!("{PUBLISHER}/certificates/pets-backend/content"),
            &other_admin,
        )
        .await;
    assert_eq!(
        String::from_utf8_lossy(&cert.bytes)
            .split_whitespace()
            .collect::<String>(),
        backend_certificate().split_whitespace().collect::<String>()
    );

    // The same project again is a duplicate: refused, nothing changed.
    let duplicate = other
        .send(import_request(&other, "", exported.clone(), admin_login))
        .await;
    assert_eq!(duplicate.status, 409, "{}", duplicate.body);
    assert_eq!(count_named(&other, &other_admin, "Pets").await, 1);

    // Another tenant's creator: refused unless the provider is not kept.
    other
        .add_user("tina@acme.com", "tina-pw", &["creator"])
        .await;
    let tina = ("tina@acme.com", "tina-pw");
    let mismatch = other
        .send(import_request(
            &other,
            "preserveProvider=true",
            exported.clone(),
            tina,
        ))
        .await;
    assert_eq!(mismatch.status, 403);
    assert!(mismatch.body.to_string().contains("Tenant mismatch"));
    let theirs = other
        .send(import_request(
            &other,
            "preserveProvider=false",
            exported.clone(),
            tina,
        ))
        .await;
    assert_eq!(theirs.status, 201, "{}", theirs.body);
    let tina_token = other.login("tina@acme.com", "tina-pw", ALL_SCOPES).await;
    let moved = other
        .get(theirs.header("location").unwrap(), &tina_token)
        .await
        .expect(200);
    assert_eq!(moved.body["provider"], "tina@acme.com");
    assert_eq!(moved.body["context"], "/t/acme.com/pets");
    assert_eq!(
        moved.body["status"], "CREATED",
        "a creator may not publish by importing"
    );
    assert!(theirs.body.to_string().contains("status PUBLISHED"));

    updates_replace_what_the_project_carries(&other, &other_admin, &before).await;
    bad_projects_are_refused_whole(&other, &other_admin, &before).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `uuid` and documents' `id`, which differ from stack to stack.
fn strip_ids(doc: &mut Value) {
    match doc {
        Value::Object(members) => {
            members.remove("uuid");
            if members.get("id").is_some_and(Value::is_string) {
                members.remove("id");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_ids),
        _ => {}
    }
}

/// An update as apimcli 2.x's `--update` makes it (import-export-cli/cmd/importAPI.go:
/// `getApiID` finds the API with the publisher's list, `query=name:N version:V
/// provider:P`, then `ImportAPI` sends the project as for an import, but `PUT
/// <endpoint><apiId>?preserveProvider=<bool>`).
fn update_request(
    client: &Client,
    api_id: &str,
    zip: Vec<u8>,
    credentials: (&str, &str),
) -> reqwest::RequestBuilder {
    let path = format!("/api-import-export-2.6.0-v0/{api_id}?preserveProvider=true");
    project_upload(client, Method::PUT, &path, zip, credentials)
}

/// The project, edited, over the API it came from: the record and what it carries are
/// the project's, its lifecycle state stays; a project of another API, or an API the
/// tenant does not have, is refused.
async fn updates_replace_what_the_project_carries(client: &Client, token: &str, good: &Project) {
    let admin_login = ("admin", ADMIN_PASSWORD);
    let search = format!("{PUBLISHER}/apis?query=name:Pets%20version:v1.0.0%20provider:admin");
    let found = client.get(&search, token).await.expect(200);
    assert_eq!(found.body["count"], 1, "{}", found.body);
    let id = found.body["list"][0]["id"].as_str().unwrap().to_string();
    let mut edited = good.files.clone();
    let mut meta: Value = serde_json::from_slice(&edited["Meta-information/api.json"]).unwrap();
    meta["description"] = json!("Pets, updated");
    meta["status"] = json!("CREATED");
    edited.insert(
        "Meta-information/api.json".into(),
        serde_json::to_vec(&meta).unwrap(),
    );
    edited.remove("Image/icon.png");
    let docs: Vec<Value> = serde_json::from_slice(&edited["Docs/docs.json"]).unwrap();
    let kept: Vec<&Value> = docs.iter().filter(|doc| doc["name"] == "How to").collect();
    edited.insert("Docs/docs.json".into(), serde_json::to_vec(&kept).unwrap());
    edited.remove("Docs/FileContents/guide.pdf");
    let updated = client
        .send(update_request(
            client,
            &id,
            zip_of(&good.root, &edited),
            admin_login,
        ))
        .await;
    assert_eq!(updated.status, 201, "{}", updated.body);
    assert!(
        updated
            .body
            .to_string()
            .contains("API updated successfully.")
    );
    let path = format!("{PUBLISHER}/apis/{id}");
    let record = client.get(&path, token).await.expect(200).body;
    assert_eq!(record["description"], "Pets, updated");
    assert_eq!(
        record["status"], "PUBLISHED",
        "an update keeps the lifecycle state"
    );
    let documents = client
        .get(&format!("{path}/documents"), token)
        .await
        .expect(200);
    assert_eq!(documents.body["count"], 1);
    let thumbnail = client.get(&format!("{path}/thumbnail"), token).await;
    assert_eq!(thumbnail.status, 404, "the project has none now");

    let mut other = edited.clone();
    meta["id"]["apiName"] = json!("Cats");
    other.insert(
        "Meta-information/api.json".into(),
        serde_json::to_vec(&meta).unwrap(),
    );
    let wrong = client
        .send(update_request(
            client,
            &id,
            zip_of(&good.root, &other),
            admin_login,
        ))
        .await;
    assert_eq!(wrong.status, 400);
    assert!(
        wrong
            .body
            .to_string()
            .contains("The project is of API Cats")
    );
    let unknown = client
        .send(update_request(
            client,
            "0b3c1e2d-0000-4b6c-8d7e-9f0a1b2c3d4e",
            zip_of(&good.root, &edited),
            admin_login,
        ))
        .await;
    assert_eq!(unknown.status, 404);
}

/// Each bad archive or project refused with why, and none of it kept.
async fn bad_projects_are_refused_whole(client: &Client, token: &str, good: &Project) {
    let admin_login = ("admin", ADMIN_PASSWORD);
    let send = |zip: Vec<u8>| client.send(import_request(client, "", zip, admin_login));
    let renamed = |name: &str| {
        let mut files = good.files.clone();
        let mut meta: Value = serde_json::from_slice(&files["Meta-information/api.json"]).unwrap();
        meta["id"]["apiName"] = json!(name);
        meta["context"] = json!(format!("/{}/v1.0.0", name.to_lowercase()));
        meta["contextTemplate"] = json!(format!("/{}/{{version}}", name.to_lowercase()));
        files.insert(
            "Meta-information/api.json".into(),
            serde_json::to_vec(&meta).unwrap(),
        );
        files
    };

    let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("not a zip", b"PK not really".to_vec(), "not a zip"),
        (
            "a path outside its folder",
            zip_of(
                "Bad1-1",
                &[("../../etc/passwd".to_string(), b"x".to_vec())].into(),
            ),
            "outside its folder",
        ),
        (
            "no model",
            zip_of(
                "Bad2-1",
                &[("Docs/docs.json".to_string(), b"[]".to_vec())].into(),
            ),
            "no Meta-information/api.yaml or api.json",
        ),
    ];
    let yaml_bomb = [(
        "Meta-information/api.yaml".to_string(),
        b"a: &x [0, 0, 0, 0]\nb: [*x, *x, *x, *x]\n".to_vec(),
    )];
    cases.push((
        "a YAML model with aliases",
        zip_of("Bomb-1", &yaml_bomb.into()),
        "aliases",
    ));
    let mut symlink = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    symlink
        .add_symlink(
            "Bad3-1/link",
            "/etc/passwd",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
    cases.push((
        "a symbolic link",
        symlink.finish().unwrap().into_inner(),
        "symbolic link",
    ));
    let mut deep = renamed("Bad4");
    deep.insert("a/b/c/d/e/f/g/h/i".into(), b"x".to_vec());
    cases.push(("a deep path", zip_of("Bad4-v1.0.0", &deep), "nested deeper"));
    // Refused after the API's row is written: the transaction takes it back.
    let mut bad_wsdl = renamed("Bad5");
    bad_wsdl.insert(
        "WSDL/Pets-v1.0.0.wsdl".into(),
        b"<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><definitions/>".to_vec(),
    );
    cases.push((
        "a WSDL with a DOCTYPE",
        zip_of("Bad5-v1.0.0", &bad_wsdl),
        "WSDL/Pets-v1.0.0.wsdl",
    ));
    let mut unknown_sequence = renamed("Bad6");
    unknown_sequence.remove("Sequences/in-sequence/Custom/add_header.xml");
    cases.push((
        "a sequence it does not carry",
        zip_of("Bad6-v1.0.0", &unknown_sequence),
        "add_header",
    ));
    let mut bad_doc = renamed("Bad7");
    bad_doc.insert(
        "Docs/docs.json".into(),
        br#"[{"name":"x","type":"NOPE","sourceType":"INLINE"}]"#.to_vec(),
    );
    cases.push((
        "a document of no type",
        zip_of("Bad7-v1.0.0", &bad_doc),
        "Docs/docs.json",
    ));
    let mut bad_cert = renamed("Bad8");
    bad_cert.insert(
        "Meta-information/endpoint_certificates.json".into(),
        br#"[{"hostName":"https://127.0.0.1:8080","alias":"evil","certificate":"LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t"}]"#.to_vec(),
    );
    cases.push((
        "a private key as a certificate",
        zip_of("Bad8-v1.0.0", &bad_cert),
        "private key",
    ));
    for (what, zip, says) in cases {
        let refused = send(zip).await;
        assert_eq!(refused.status, 400, "{what}: {}", refused.body);
        assert!(
            refused.body.to_string().contains(says),
            "{what}: {}",
            refused.body
        );
    }
    for name in ["Bad4", "Bad5", "Bad6", "Bad7", "Bad8"] {
        assert_eq!(
            count_named(client, token, name).await,
            0,
            "{name} half-imported"
        );
    }
    let evil = client
        .get(&format!("{PUBLISHER}/certificates/evil"), token)
        .await;
    assert_eq!(evil.status, 404);

    // The same project, renamed, is taken: the refusals were the bad parts alone.
    let fine = send(zip_of("Fine-v1.0.0", &renamed("Fine"))).await;
    assert_eq!(fine.status, 201, "{}", fine.body);

    // Without credentials, or as a subscriber, or without the file.
    let anonymous = client
        .send(
            client
                .request(Method::POST, IMPORT, "")
                .multipart(Form::new().text("file", "x")),
        )
        .await;
    assert_eq!(anonymous.status, 401);
    client.add_user("sam", "sam-pw", &["subscriber"]).await;
    let subscriber = client
        .send(import_request(
            client,
            "",
            zip_of("S-1", &good.files),
            ("sam", "sam-pw"),
        ))
        .await;
    assert_eq!(subscriber.status, 403);
    let no_file = client
        .send(
            client
                .request(Method::POST, IMPORT, "")
                .basic_auth("admin", Some(ADMIN_PASSWORD))
                .multipart(Form::new().text("other", "x")),
        )
        .await;
    assert_eq!(no_file.status, 400);
}

/// A stack of the tests': a control plane on `backend`, pushing to an edge gateway that
/// hosts the developer-management facade in front of a SOAP stand-in of its own.
struct Estate {
    backend: Backend,
    data_dir: std::path::PathBuf,
    control_plane: harness::ControlPlane,
    facade: Facade,
}

impl Estate {
    async fn start(backend: Backend) -> Self {
        let data_dir = harness::temp_dir();
        let soap_dir = data_dir.join("soap");
        std::fs::create_dir_all(&soap_dir).unwrap();
        let gateway_addr = format!("127.0.0.1:{}", harness::free_port());
        let push = [("APIM_GATEWAYS", format!("http://{gateway_addr}"))];
        let control_plane = harness::start_control_plane(&backend, &data_dir, &push).await;
        let facade = Facade::start(
            &control_plane,
            &data_dir,
            &soap_dir,
            None,
            &gateway_addr,
            Framing::Strict,
            false,
        )
        .await;
        Self {
            backend,
            data_dir,
            control_plane,
            facade,
        }
    }

    fn api(&self) -> Client {
        Client::new(&self.control_plane.url)
    }

    async fn stop(self) {
        self.facade.stop().await;
        self.control_plane.stop().await;
        self.backend.cleanup().await;
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// Every API of `estate`, exported: each project's zip.
async fn export_every_api(estate: &Estate, token: &str) -> Vec<Vec<u8>> {
    let api = estate.api();
    let listed = api
        .get(&format!("{PUBLISHER}/apis?limit=100"), token)
        .await
        .expect(200);
    let mut zips = Vec::new();
    for item in listed.body["list"].as_array().unwrap() {
        let query = format!(
            "name={}&version={}&provider={}",
            item["name"].as_str().unwrap(),
            item["version"].as_str().unwrap(),
            item["provider"].as_str().unwrap()
        );
        let request = api
            .request(Method::GET, &format!("{EXPORT}?{query}"), "")
            .basic_auth("admin", Some(ADMIN_PASSWORD));
        let download = api.download_request(request).await;
        assert_eq!(download.status, 200, "{query}");
        zips.push(download.bytes);
    }
    zips
}

/// `zip` with every endpoint URL `from` made `to`, as apimcli 2.x gives a project the
/// endpoints of the environment it goes to (`--inject`: `mergeAPI` in
/// import-export-cli/cmd/importAPI.go rewrites api.json's `endpointConfig` before it
/// zips the project).
fn with_endpoints(zip: &[u8], from: &str, to: &str) -> Vec<u8> {
    let mut project = Project::from_zip(zip).unwrap();
    let path = "Meta-information/api.json";
    let mut meta: Value = serde_json::from_slice(project.file(path).unwrap()).unwrap();
    if let Some(config) = meta["endpointConfig"].as_str() {
        meta["endpointConfig"] = json!(config.replace(from, to));
    }
    project
        .files
        .insert(path.into(), serde_json::to_vec_pretty(&meta).unwrap());
    zip_of(&project.root, &project.files)
}

/// The Done-when of estates moving: every API of a populated stack on SQLite, exported
/// and imported into a fresh stack on PostgreSQL, serves there: the seed's flow on the
/// imported DevManagement API (application, subscription, keys, token, every facade
/// operation through the gateway), and the other API's documents, thumbnail,
/// sequences, WSDL and certificate came across.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estates_move_from_sqlite_to_postgres() {
    if !harness::services::available(
        harness::services::Service::Postgres,
        "estates_move_from_sqlite_to_postgres",
    ) {
        return;
    }
    let source = Estate::start(Backend::Sqlite).await;
    let target_database = Backend::fresh_postgres().await;
    let source_token = source
        .api()
        .login("admin", ADMIN_PASSWORD, ALL_SCOPES)
        .await;
    let published = dev_api::publish(&Target {
        management_url: source.control_plane.url.clone(),
        gateway_url: source.facade.gateway.url.clone(),
        user: "admin".into(),
        password: ADMIN_PASSWORD.into(),
        facade_url: source.facade.url.clone(),
    })
    .await
    .expect("publish DevManagement");
    let pets = populated_api(&source.api(), &source_token).await;
    Steps::new(&source.api(), &source_token)
        .lifecycle(&pets, "Publish")
        .await
        .unwrap();
    let zips = export_every_api(&source, &source_token).await;
    assert_eq!(zips.len(), 2);
    let source_facade = source.facade.url.clone();
    source.stop().await;

    let target = Estate::start(target_database).await;
    let target_facade_url = target.facade.url.clone();
    let mgmt = target.api();
    for zip in &zips {
        let moved = with_endpoints(zip, &source_facade, &target_facade_url);
        let imported = mgmt
            .send(import_request(
                &mgmt,
                "preserveProvider=true",
                moved,
                ("admin", ADMIN_PASSWORD),
            ))
            .await;
        assert_eq!(imported.status, 201, "{}", imported.body);
    }
    let token = mgmt.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let find = |name: &'static str| {
        let mgmt = &mgmt;
        let token = &token;
        async move {
            let listed = mgmt
                .get(&format!("{PUBLISHER}/apis?query=name:{name}"), token)
                .await
                .expect(200);
            let id = listed.body["list"][0]["id"].as_str();
            id.unwrap_or_else(|| panic!("{name}: {}", listed.body))
                .to_string()
        }
    };
    let dev_management = find("DevManagement").await;
    assert_ne!(
        dev_management, published.api_id,
        "a new id on the new stack"
    );
    let steps = Steps::new(&mgmt, &token);
    let application = steps
        .subscribed_application("Moved", "Unlimited", &[&dev_management])
        .await
        .unwrap();
    let gateway = Client::new(&target.facade.gateway.url);
    let access_token =
        harness::steps::client_credentials_token(&mgmt, "/oauth2/token", &application.keys)
            .await
            .unwrap();
    let through = Client::new(&format!("{}/dev-management/v1.0.0", gateway.url("")));
    wait_for_route(&through, &access_token).await;
    exercise(
        &through,
        &access_token,
        "moved",
        &target.facade.soap_endpoint,
    )
    .await;

    // What the other API carries came across to PostgreSQL.
    let pets = find("Pets").await;
    let path = format!("{PUBLISHER}/apis/{pets}");
    let documents = mgmt
        .get(&format!("{path}/documents"), &token)
        .await
        .expect(200);
    assert_eq!(documents.body["count"], 2);
    let thumbnail = mgmt.download(&format!("{path}/thumbnail"), &token).await;
    assert_eq!(thumbnail.bytes, PNG);
    let wsdl = mgmt.get(&format!("{path}/wsdl"), &token).await.expect(200);
    assert_eq!(wsdl.body["wsdlDefinition"], WSDL);
    let policies = mgmt
        .get(&format!("{path}/policies/mediation"), &token)
        .await
        .expect(200);
    assert_eq!(policies.body["list"][0]["name"], "add_header");
    mgmt.get(&format!("{PUBLISHER}/certificates/pets-backend"), &token)
        .await
        .expect(200);
    target.stop().await;
}

/// A project as WSO2 2.6 exports one (its documented layout: `Meta-information/` with
/// WSO2's model of the API (Gson, absent members left out) or its YAML, `swagger.json`
/// and `endpoint_certificates.json`; `Docs/`; `Image/icon.<ext>`; `Sequences/` with the
/// API's own under `Custom/` and WSO2's global ones beside), holding besides what this
/// platform does not take.
fn wso2_project(certificate_der_base64: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    let model = json!({
        "id": {"providerName": "admin", "apiName": "PizzaShackAPI", "version": "1.0.0"},
        "uuid": "0b3c1e2d-4f5a-4b6c-8d7e-9f0a1b2c3d4e",
        "description": "Pizzas, ordered online.",
        "type": "HTTP",
        "context": "/pizzashack/1.0.0",
        "contextTemplate": "/pizzashack/{version}",
        "tags": ["pizza"],
        "documents": [],
        "lastUpdated": "Mar 26, 2019 10:34:16 AM",
        "availableTiers": [{
            "name": "Unlimited", "displayName": "Unlimited",
            "description": "Allows unlimited requests", "requestsPerMin": 2147483647,
            "requestCount": 2147483647, "unitTime": 0, "timeUnit": "ms",
            "tierPlan": "FREE", "stopOnQuotaReached": true
        }],
        "availableSubscriptionLevelPolicies": [],
        "uriTemplates": [{"uriTemplate": "/menu", "httpVerb": "GET", "authType": "Any"}],
        "apiHeaderChanged": false,
        "apiResourcePatternsChanged": false
    });
    let rest = json!({
        "status": "PUBLISHED",
        "technicalOwner": "Ann", "technicalOwnerEmail": "ann@pizza.example",
        "businessOwner": "Bob", "businessOwnerEmail": "bob@pizza.example",
        "visibility": "public",
        "endpointSecured": false,
        "endpointAuthDigest": false,
        "transports": "http,https",
        "inSequence": "pizza_in",
        "outSequence": "log_out_message",
        "advertiseOnly": false,
        "corsConfiguration": {
            "corsConfigurationEnabled": false, "accessControlAllowOrigins": ["*"],
            "accessControlAllowCredentials": false,
            "accessControlAllowHeaders": ["authorization", "Content-Type"],
            "accessControlAllowMethods": ["GET", "POST"]
        },
        "endpointConfig": "{\"production_endpoints\":{\"url\":\"https://127.0.0.1:9443/pizzashack/\",\"config\":null},\"endpoint_type\":\"http\"}",
        "responseCache": "Disabled",
        "cacheTimeout": 300,
        "implementation": "ENDPOINT",
        "scopes": [],
        "isDefaultVersion": false,
        "isPublishedDefaultVersion": false,
        "environments": ["Production and Sandbox"],
        "createdTime": "1552985189708",
        "additionalProperties": {},
        "environmentList": ["SANDBOX", "PRODUCTION"],
        "accessControl": "all",
        "rating": 0.0,
        "isLatest": true,
        "gatewayLabels": []
    });
    let mut model = model;
    for (member, value) in rest.as_object().unwrap() {
        model[member] = value.clone();
    }
    let swagger = json!({
        "swagger": "2.0",
        "info": {"title": "PizzaShackAPI", "version": "1.0.0"},
        "paths": {"/menu": {"get": {
            "responses": {"200": {"description": "The menu"}},
            "x-auth-type": "Application & Application User",
            "x-throttling-tier": "Unlimited"
        }}}
    });
    let docs = json!([
        {"id": "7", "type": "HOWTO", "name": "Ordering", "summary": "How to order",
         "sourceType": "INLINE", "visibility": "API_LEVEL"},
        {"id": "8", "type": "PUBLIC_FORUM", "name": "Forum", "sourceType": "URL",
         "sourceUrl": "https://forum.pizza.example/", "visibility": "API_LEVEL"}
    ]);
    let certificates = json!([{"hostName": "https://127.0.0.1:9443", "alias": "pizzashack",
                               "certificate": certificate_der_base64}]);
    let in_sequence = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="pizza_in"><header name="X-Pizza" scope="transport" value="hot"/></sequence>"#;
    let log_out = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="log_out_message"><log level="full"/></sequence>"#;
    let pretty = |value: &Value| serde_json::to_vec_pretty(value).unwrap();
    [
        ("Meta-information/api.json", pretty(&model)),
        ("Meta-information/swagger.json", pretty(&swagger)),
        (
            "Meta-information/endpoint_certificates.json",
            pretty(&certificates),
        ),
        ("Meta-information/client_certificates.json", b"[]".to_vec()),
        ("Docs/docs.json", pretty(&docs)),
        (
            "Docs/InlineContents/Ordering",
            b"Call GET /menu first.".to_vec(),
        ),
        ("Image/icon.jpg", b"\xff\xd8\xff\xe0\0\x10JFIF\0".to_vec()),
        (
            "Sequences/in-sequence/Custom/pizza_in.xml",
            in_sequence.as_bytes().to_vec(),
        ),
        (
            "Sequences/out-sequence/log_out_message.xml",
            log_out.as_bytes().to_vec(),
        ),
    ]
    .into_iter()
    .map(|(path, bytes)| (path.to_string(), bytes))
    .collect()
}

/// The same project with its model in YAML, as apimcli may keep it.
fn as_yaml(
    files: &std::collections::BTreeMap<String, Vec<u8>>,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut yaml = files.clone();
    let json = yaml.remove("Meta-information/api.json").unwrap();
    let model: Value = serde_json::from_slice(&json).unwrap();
    yaml.insert(
        "Meta-information/api.yaml".into(),
        serde_norway::to_string(&model).unwrap().into_bytes(),
    );
    yaml
}

pub async fn wso2_projects_import_with_what_they_carry(env: InProcess) {
    use base64::Engine as _;
    let api = &env.api;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let pem = harness::tls::Authority::new("Pizza backend").ca_pem;
    let der = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect::<String>();
    let der = base64::engine::general_purpose::STANDARD.encode(
        base64::engine::general_purpose::STANDARD
            .decode(der)
            .unwrap(),
    );
    let project = wso2_project(&der);

    let imported = api
        .send(import_request(
            api,
            "preserveProvider=true",
            zip_of("PizzaShackAPI-1.0.0", &project),
            ("admin", ADMIN_PASSWORD),
        ))
        .await;
    assert_eq!(imported.status, 201, "{}", imported.body);
    let said = imported.body.to_string();
    for reported in ["gatewayLabels", "Meta-information/client_certificates.json"] {
        assert!(said.contains(reported), "{reported} not reported: {said}");
    }
    for taken in [
        "uriTemplates",
        "lastUpdated",
        "rating",
        "Ordering",
        "icon.jpg",
    ] {
        assert!(!said.contains(taken), "{taken} reported: {said}");
    }
    let location = imported.header("location").unwrap().to_string();
    let record = api.get(&location, &admin).await.expect(200).body;
    assert_eq!(record["name"], "PizzaShackAPI");
    assert_eq!(record["context"], "/pizzashack");
    assert_eq!(record["status"], "PUBLISHED");
    assert_eq!(record["tiers"], json!(["Unlimited"]));
    assert_eq!(record["visibility"], "PUBLIC");
    assert_eq!(record["businessInformation"]["businessOwner"], "Bob");
    assert_eq!(
        record["sequences"],
        json!([{"name": "pizza_in", "type": "in"}, {"name": "log_out_message", "type": "out"}])
    );
    let policies = api
        .get(&format!("{location}/policies/mediation"), &admin)
        .await
        .expect(200);
    assert_eq!(
        policies.body["count"], 1,
        "WSO2's global sequence stays global"
    );
    assert_eq!(policies.body["list"][0]["name"], "pizza_in");
    let docs = api
        .get(&format!("{location}/documents"), &admin)
        .await
        .expect(200);
    assert_eq!(docs.body["count"], 2);
    let ordering = docs.body["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|doc| doc["name"] == "Ordering")
        .unwrap();
    let content = api
        .download(
            &format!(
                "{location}/documents/{}/content",
                ordering["documentId"].as_str().unwrap()
            ),
            &admin,
        )
        .await;
    assert_eq!(content.bytes, b"Call GET /menu first.");
    let icon = api.download(&format!("{location}/thumbnail"), &admin).await;
    assert_eq!(icon.header("content-type"), "image/jpeg");
    let certificate = api
        .get(&format!("{PUBLISHER}/certificates/pizzashack"), &admin)
        .await
        .expect(200);
    assert!(
        certificate.body["subject"]
            .as_str()
            .unwrap()
            .contains("Pizza backend")
    );

    // Its model in YAML imports the same (after the JSON one is gone).
    let id = location.rsplit('/').next().unwrap();
    let deleted = api
        .send(api.request(Method::DELETE, &format!("{PUBLISHER}/apis/{id}"), &admin))
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let yaml = api
        .send(import_request(
            api,
            "",
            zip_of("PizzaShackAPI-1.0.0", &as_yaml(&project)),
            ("admin", ADMIN_PASSWORD),
        ))
        .await;
    assert_eq!(yaml.status, 201, "{}", yaml.body);
    let record = api
        .get(yaml.header("location").unwrap(), &admin)
        .await
        .expect(200)
        .body;
    assert_eq!(record["name"], "PizzaShackAPI");
    assert_eq!(record["status"], "PUBLISHED");
}

/// An export of applications as WSO2 2.6's admin API answers it
/// (`GET /export/applications?appName&appOwner`, Basic credentials).
fn app_export(client: &Client, query: &str) -> reqwest::RequestBuilder {
    client
        .request(
            Method::GET,
            &format!("/api/am/admin/v0.14/export/applications?{query}"),
            "",
        )
        .basic_auth("admin", Some(ADMIN_PASSWORD))
}

/// An import of an application's zip (`POST /import/applications`, multipart `file`).
fn app_import(client: &Client, query: &str, zip: Vec<u8>) -> reqwest::RequestBuilder {
    let part = Part::bytes(zip).file_name("exported-application.zip");
    client
        .request(
            Method::POST,
            &format!("/api/am/admin/v0.14/import/applications?{query}"),
            "",
        )
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .multipart(Form::new().part("file", part))
}

pub async fn applications_export_and_import_as_wso2s_admin_api(env: InProcess) {
    let api = &env.api;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let pets = populated_api(api, &admin).await;
    let steps = Steps::new(api, &admin);
    steps.lifecycle(&pets, "Publish").await.unwrap();
    steps
        .subscribed_application("Mobile", "Unlimited", &[&pets])
        .await
        .unwrap();

    // Refusals, then the zip as WSO2 lays it out: the model, its subscription, no keys.
    let missing = api.send(app_export(api, "appName=Mobile")).await;
    assert_eq!(missing.status, 400);
    let unknown = api
        .send(app_export(api, "appName=Nope&appOwner=admin"))
        .await;
    assert_eq!(unknown.status, 404);
    assert!(
        unknown
            .body
            .to_string()
            .contains("No application found with name Nope")
    );
    let across = api
        .send(app_export(api, "appName=Mobile&appOwner=tina@acme.com"))
        .await;
    assert_eq!(across.status, 403);
    let download = api
        .download_request(app_export(api, "appName=Mobile&appOwner=admin"))
        .await;
    assert_eq!(download.status, 200);
    assert!(
        download
            .header("content-disposition")
            .contains("exported-application.zip")
    );
    let project = Project::from_zip(&download.bytes).unwrap();
    assert_eq!(project.root, "Mobile");
    let model: Value = serde_json::from_slice(project.file("Mobile.json").unwrap()).unwrap();
    assert_eq!(model["owner"], "admin");
    assert_eq!(model["tier"], "Unlimited");
    assert_eq!(model["keys"], json!([]));
    assert_eq!(
        model["subscribedAPIs"][0]["apiId"],
        json!({"providerName": "admin", "apiName": "Pets", "version": "v1.0.0"})
    );

    // Into another control plane that has the API: the application and its subscription.
    let dir = harness::temp_dir();
    let other = harness::in_process_control_plane(&Backend::Sqlite, &dir).await;
    let query = "name=Pets&version=v1.0.0&provider=admin";
    let api_zip = api
        .download_request(export_request(&env, query, Some(("admin", ADMIN_PASSWORD))))
        .await
        .bytes;
    let admin_login = ("admin", ADMIN_PASSWORD);
    other
        .send(import_request(&other, "", api_zip, admin_login))
        .await
        .expect(201);
    let imported = other
        .send(app_import(
            &other,
            "preserveOwner=true",
            download.bytes.clone(),
        ))
        .await;
    assert_eq!(imported.status, 201, "{}", imported.body);
    assert_eq!(imported.body["name"], "Mobile");
    assert_eq!(imported.body["subscriber"], "admin");
    let app_id = imported.str("applicationId");
    assert_eq!(
        imported.header("location"),
        Some(format!("/applications/{app_id}").as_str())
    );
    let other_admin = other.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let subscriptions = other
        .get(
            &format!("{STORE}/subscriptions?applicationId={app_id}"),
            &other_admin,
        )
        .await
        .expect(200);
    assert_eq!(subscriptions.body["count"], 1, "{}", subscriptions.body);
    assert_eq!(subscriptions.body["list"][0]["tier"], "Unlimited");
    let again = other
        .send(app_import(
            &other,
            "preserveOwner=true",
            download.bytes.clone(),
        ))
        .await;
    assert_eq!(again.status, 409, "{}", again.body);

    // For an owner whose roles may not use the tier, the subscription is skipped, as the
    // store refuses it.
    other.add_user("sue", "sue-pw", &["subscriber"]).await;
    let tier_admin = other
        .login("admin", ADMIN_PASSWORD, harness::stack::TIER_SCOPES)
        .await;
    let permission =
        format!("{PUBLISHER}/tiers/update-permission?tierName=Unlimited&tierLevel=api");
    let deny = |roles: &[&str]| json!({"permissionType": "deny", "roles": roles});
    other
        .post_json(&permission, &tier_admin, &deny(&["subscriber"]))
        .await
        .expect(200);
    let not_permitted = other
        .send(app_import(&other, "appOwner=sue", download.bytes.clone()))
        .await;
    assert_eq!(not_permitted.status, 207, "{}", not_permitted.body);
    other
        .post_json(&permission, &tier_admin, &deny(&["creator"]))
        .await
        .expect(200);

    // For another owner, the subscription skipped when the API is not published there.
    other.add_user("sam", "sam-pw", &["subscriber"]).await;
    let listed = other
        .get(&format!("{PUBLISHER}/apis?query=name:Pets"), &other_admin)
        .await
        .expect(200);
    let other_pets = listed.body["list"][0]["id"].as_str().unwrap().to_string();
    Steps::new(&other, &other_admin)
        .lifecycle(&other_pets, "Block")
        .await
        .unwrap();
    let partial = other
        .send(app_import(&other, "appOwner=sam", download.bytes.clone()))
        .await;
    assert_eq!(partial.status, 207, "{}", partial.body);
    assert_eq!(
        partial.body["list"],
        json!([{"name": "Pets", "version": "v1.0.0", "provider": "admin"}])
    );

    // Refused: another tenant's owner, an owner who is no user, no file, junk, a subscriber.
    let across = other
        .send(app_import(
            &other,
            "appOwner=tina@acme.com",
            download.bytes.clone(),
        ))
        .await;
    assert_eq!(across.status, 403);
    assert!(
        across
            .body
            .to_string()
            .contains("Cross Tenant Imports are not allowed")
    );
    let nobody = other
        .send(app_import(
            &other,
            "appOwner=nobody",
            download.bytes.clone(),
        ))
        .await;
    assert_eq!(nobody.status, 400);
    let junk = other
        .send(app_import(&other, "", b"not a zip".to_vec()))
        .await;
    assert_eq!(junk.status, 400);
    let sam = other
        .send(
            other
                .request(Method::POST, "/api/am/admin/v0.14/import/applications", "")
                .basic_auth("sam", Some("sam-pw"))
                .multipart(Form::new().part("file", Part::bytes(download.bytes.clone()))),
        )
        .await;
    assert!(matches!(sam.status, 401 | 403), "{}", sam.status);
    let _ = std::fs::remove_dir_all(&dir);
}

/// apimcli 2.x against a control plane with WSO2's scope names (`APIM_SCOPE_PREFIX=apim`,
/// as the README says WSO2's clients need), each request as its source builds it:
/// login (`utils/tokenManagement.go`: `GetClientIDSecret`'s registration body and
/// `GetOAuthTokens`' password grant), `export-api` (`cmd/exportAPI.go`: `ExportAPI`),
/// `import-api` (`cmd/importAPI.go`: `ImportAPI`, `NewFileUploadRequest`) and `--update`
/// (`getApiID`'s list query, `url.QueryEscape`d, with the bearer token; then `PUT
/// <endpoint><apiId>`); each gets the status apimcli takes as success.
pub async fn apimcli_2x_requests_replayed(mut env: Env) {
    env.restart_with(&[("APIM_SCOPE_PREFIX", "apim".to_string())])
        .await;
    let api = &env.api;
    let http = harness::http_client();
    let registration = "{\"clientName\": \"rest_api_import_export\",\n\
        \t\"callbackUrl\": \"www.google.lk\",\n\
        \t\"grantType\":\"password refresh_token\",\n\
        \t\"saasApp\": true,\n\
        \t\"owner\": \"admin\",\n\
        \t\"tokenScope\": \"Production\"\n\
        }";
    let registered = http
        .post(api.url("/client-registration/v0.14/register"))
        .header("content-type", "application/json")
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .body(registration)
        .send()
        .await
        .unwrap();
    assert!(matches!(registered.status().as_u16(), 200 | 201));
    let client: Value = registered.json().await.unwrap();
    let (id, secret) = (
        client["clientId"].as_str().unwrap(),
        client["clientSecret"].as_str().unwrap(),
    );
    let form = format!(
        "grant_type=password&username=admin&password={ADMIN_PASSWORD}\
         &scope=apim:api_view+apim:app_import_export+apim:app_owner_change+apim:subscribe\
         +apim:api_publish+apim:api_import_export"
    );
    let granted = http
        .post(api.url("/oauth2/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .basic_auth(id, Some(secret))
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(granted.status(), 200);
    let token: Value = granted.json().await.unwrap();
    let token = token["access_token"].as_str().unwrap().to_string();
    assert!(
        harness::jwt_claims(&token)["scope"]
            .as_str()
            .unwrap()
            .contains("apim:api_view")
    );

    // An API to move, then export, import (409: it is there), update as apimcli does.
    let publisher = api
        .login(
            "admin",
            ADMIN_PASSWORD,
            "apim:api_view apim:api_create apim:api_publish",
        )
        .await;
    let mut record = spec_api_record();
    record["name"] = json!("Pets");
    record["context"] = json!("/pets");
    Steps::new(api, &publisher)
        .create_api(&record)
        .await
        .unwrap();
    let exported = http
        .get(api.url(&format!("{EXPORT}?name=Pets&version=v1.0.0&provider=admin")))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .header("accept", "application/zip")
        .send()
        .await
        .unwrap();
    assert_eq!(exported.status(), 200);
    let zip = exported.bytes().await.unwrap().to_vec();
    let credentials = ("admin", ADMIN_PASSWORD);
    let again = api
        .send(import_request(
            api,
            "preserveProvider=true",
            zip.clone(),
            credentials,
        ))
        .await;
    assert_eq!(again.status, 409, "{}", again.body);
    let query = "name%3APets+version%3Av1.0.0+provider%3Aadmin";
    let found = http
        .get(api.url(&format!("{PUBLISHER}/apis?query={query}")))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(found.status(), 200);
    let found: Value = found.json().await.unwrap();
    assert_eq!(found["count"], 1, "{found}");
    let api_id = found["list"][0]["id"].as_str().unwrap();
    let updated = api
        .send(update_request(api, api_id, zip, credentials))
        .await;
    assert_eq!(updated.status, 201, "{}", updated.body);
}
