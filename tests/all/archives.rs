//! WSO2 2.6's import/export service (`/api-import-export-2.6.0-v0`), as `apimcli` 2.x
//! calls it: HTTP Basic, plain-text refusals, an API's project zipped in WSO2's layout.

use harness::stack::ALL_SCOPES;
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, PUBLISHER, spec_api_record};
use reqwest::Method;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::InProcess;

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
const IN_SEQUENCE: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="add_header"><header name="X-A" scope="transport" value="1"/></sequence>"#;

/// An export as apimcli sends it (`Accept: application/zip`, Basic credentials).
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

pub async fn api_projects_export_as_wso2_lays_them_out(env: InProcess) {
    let api = &env.api;
    api.add_user("sam", "sam-pw", &["subscriber"]).await;
    api.add_user("tina@acme.com", "tina-pw", &["creator"]).await;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let mut record = spec_api_record();
    record["name"] = json!("Pets");
    record["context"] = json!("/pets");
    record["endpointSecurity"] =
        json!({"type": "basic", "username": "svc", "password": "s3cret-pw"});
    let id = Steps::new(api, &admin).create_api(&record).await.unwrap();
    let policies = format!("{PUBLISHER}/apis/{id}/policies/mediation");
    let policy = json!({"name": "add_header", "type": "in", "config": IN_SEQUENCE});
    api.post_json(&policies, &admin, &policy).await.expect(200);
    let path = format!("{PUBLISHER}/apis/{id}");
    let mut stored: Value = api.get(&path, &admin).await.expect(200).body;
    stored["sequences"] = json!([
        {"name": "add_header", "type": "in"},
        {"name": "json_fault", "type": "fault"}
    ]);
    api.put_json(&path, &admin, &stored).await.expect(200);
    let docs = format!("{path}/documents");
    let doc = json!({"name": "How to", "type": "HOWTO", "sourceType": "INLINE",
                     "visibility": "API_LEVEL", "summary": "Start here"});
    let doc_id = api
        .post_json(&docs, &admin, &doc)
        .await
        .expect(201)
        .str("documentId");
    let inline = Form::new().text("inlineContent", "Call GET /devs.");
    let content = api
        .request(Method::POST, &format!("{docs}/{doc_id}/content"), &admin)
        .multipart(inline);
    api.send(content).await.expect(200);
    let png = Part::bytes(PNG.to_vec())
        .file_name("logo.png")
        .mime_str("image/png")
        .unwrap();
    let thumbnail = api
        .request(Method::POST, &format!("{path}/thumbnail"), &admin)
        .multipart(Form::new().part("file", png));
    api.send(thumbnail).await.expect(200);

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
    assert_eq!(listed[0]["name"], "How to");
    assert_eq!(listed[0]["sourceType"], "INLINE");
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
