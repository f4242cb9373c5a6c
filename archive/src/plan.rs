//! What importing a project would change in an API as it is: two projects of one API
//! (one kept in git, one exported from the estate) compared field by field, as the REST
//! API's record each comes to, with WSO2's defaults filled in where a model leaves a
//! member out, so that a default is never reported as a change. Lifecycle state and ids
//! are not compared (an import over an API keeps its state; ids are each stack's own).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::model::{ApiJson, DocJson};
use crate::project::Project;

/// One difference: a member of the record (`endpointConfig.production_endpoints.url`)
/// or a file of the project (`file:Docs/InlineContents/How to`), as it is and as the
/// project would make it (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub path: String,
    pub from: Option<Value>,
    pub to: Option<Value>,
}

/// WSO2 2.6's defaults of the record's members, as the publisher fills them in.
fn defaults() -> Map<String, Value> {
    let defaults = serde_json::json!({
        "description": "",
        "cacheTimeout": 300,
        "responseCaching": "Disabled",
        "visibility": "PUBLIC",
        "visibleRoles": [],
        "visibleTenants": [],
        "transport": ["http", "https"],
        "subscriptionAvailability": "current_tenant",
        "subscriptionAvailableTenants": [],
        "accessControl": "NONE",
        "accessControlRoles": [],
        "additionalProperties": {},
        "gatewayEnvironments": "Production and Sandbox",
        "isDefaultVersion": false,
        "tags": [],
        "sequences": [],
        "type": "HTTP",
    });
    match defaults {
        Value::Object(members) => members,
        _ => Map::new(),
    }
}

/// A project's model and definition, JSON or YAML (YAML first, as WSO2 reads them).
pub fn model_of(project: &Project) -> Result<(ApiJson, Option<Value>), String> {
    let model = read_either(project, "Meta-information/api")?
        .ok_or("the project has no Meta-information/api.yaml or api.json")?;
    let swagger = read_either(project, "Meta-information/swagger")?;
    Ok((model, swagger))
}

fn read_either<T: serde::de::DeserializeOwned>(
    project: &Project,
    stem: &str,
) -> Result<Option<T>, String> {
    for path in [format!("{stem}.yaml"), format!("{stem}.json")] {
        if let Some(bytes) = project.file(&path) {
            return crate::model::from_file(&path, bytes).map(Some);
        }
    }
    Ok(None)
}

/// The record a project's API comes to: WSO2's defaults where the model says nothing,
/// the definition and endpoint configuration as JSON rather than text.
pub fn normalised_record(project: &Project) -> Result<Map<String, Value>, String> {
    let (model, swagger) = model_of(project)?;
    record_of(&model, swagger)
}

/// [`normalised_record`] of a model and its definition.
fn record_of(model: &ApiJson, swagger: Option<Value>) -> Result<Map<String, Value>, String> {
    let swagger = swagger.map(|s| s.to_string());
    let (record, _) = model.to_record(swagger.as_deref());
    let Value::Object(mut record) = record else {
        return Err("the model is not an object".into());
    };
    for (member, value) in defaults() {
        let absent = record.get(&member).is_none_or(Value::is_null);
        if absent {
            record.insert(member, value);
        }
    }
    for member in ["apiDefinition", "endpointConfig"] {
        let parsed = record
            .get(member)
            .and_then(Value::as_str)
            .and_then(|text| serde_json::from_str::<Value>(text).ok());
        if let Some(parsed) = parsed {
            record.insert(member.into(), parsed);
        }
    }
    // An import over an API keeps its lifecycle state, context and provider (as WSO2's
    // update does): they are no change an apply could make.
    for kept in ["status", "context", "provider"] {
        record.remove(kept);
    }
    Ok(record)
}

/// What importing `local` over the API `remote` was exported from would change.
pub fn changes(local: &Project, remote: &Project) -> Result<Vec<Change>, String> {
    Ok(Compared::of(local)?.changes_from(&Compared::of(remote)?))
}

/// A digest of what [`changes`] compares of `project`, and of its lifecycle state (which
/// a creation takes): equal digests, no change between them. An apply checks that the
/// estate and the directory are still what its plan saw.
pub fn fingerprint(project: &Project) -> Result<String, String> {
    Ok(Compared::of(project)?.fingerprint())
}

/// What a plan compares of a project, read once: the record it comes to, its lifecycle
/// state and the files an import takes.
pub struct Compared {
    record: Map<String, Value>,
    status: String,
    files: std::collections::BTreeMap<String, Vec<u8>>,
}

impl Compared {
    pub fn of(project: &Project) -> Result<Self, String> {
        let (model, swagger) = model_of(project)?;
        Ok(Self {
            record: record_of(&model, swagger)?,
            status: model.status.unwrap_or_default(),
            files: taken_files(project)?,
        })
    }

    /// What importing this project over the API `remote` is would change.
    pub fn changes_from(&self, remote: &Compared) -> Vec<Change> {
        let mut found = Vec::new();
        diff_members("", &remote.record, &self.record, &mut found);
        file_changes(&self.files, &remote.files, &mut found);
        found
    }

    /// The lifecycle state the project says (empty when it says none).
    pub fn status(&self) -> &str {
        &self.status
    }

    /// See [`fingerprint`].
    pub fn fingerprint(&self) -> String {
        use sha2::Digest as _;
        let mut hash = sha2::Sha256::new();
        hash.update(serde_json::to_string(&self.record).unwrap_or_default());
        hash.update([0]);
        hash.update(&self.status);
        for (key, bytes) in &self.files {
            hash.update([0]);
            hash.update(key.as_bytes());
            hash.update([0]);
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        }
        format!("{:x}", hash.finalize())
    }
}

/// The files an import takes, under names that say what they are rather than where the
/// project put them (`Image/icon`, `WSDL/definition`, `Sequences/<flow>/<name>`,
/// `Docs/documents` as its documents without ids), and the endpoint certificates by
/// alias (`certificates/<alias>`). Anything else a project holds is not taken, so not
/// compared; nor are WSO2's global sequences written beside an API's own (every gateway
/// has them).
fn taken_files(project: &Project) -> Result<std::collections::BTreeMap<String, Vec<u8>>, String> {
    let mut taken = std::collections::BTreeMap::new();
    let files = &project.files;
    if let Some((_, icon)) = files.iter().find(|(path, _)| {
        path.strip_prefix("Image/")
            .is_some_and(|name| !name.contains('/') && name.contains("icon"))
    }) {
        taken.insert("Image/icon".to_string(), icon.clone());
    }
    if let Some((_, wsdl)) = files
        .iter()
        .find(|(path, _)| path.starts_with("WSDL/") && path.ends_with(".wsdl"))
    {
        taken.insert("WSDL/definition".to_string(), wsdl.clone());
    }
    for (path, bytes) in files {
        if let Some((flow, name)) = path
            .strip_prefix("Sequences/")
            .and_then(|rest| rest.split_once("-sequence/Custom/"))
        {
            let name = name.strip_suffix(".xml").unwrap_or(name);
            taken.insert(format!("Sequences/{flow}/{name}"), bytes.clone());
        }
        let content = path
            .strip_prefix("Docs/InlineContents/")
            .or_else(|| path.strip_prefix("Docs/FileContents/"));
        if let Some(name) = content {
            taken.insert(format!("Docs/{name}"), bytes.clone());
        }
    }
    for stem in ["Docs/docs.yaml", "Docs/docs.json"] {
        if let Some(bytes) = project.file(stem) {
            let listed = serde_json::to_vec(&documents(stem, bytes)?).unwrap_or_default();
            taken.insert("Docs/documents".to_string(), listed);
            break;
        }
    }
    for certificate in certificates(project)? {
        let key = format!("certificates/{}", certificate.0);
        taken.insert(key, certificate.1.into_bytes());
    }
    Ok(taken)
}

/// A project's endpoint certificates: alias, and endpoint with certificate.
fn certificates(project: &Project) -> Result<Vec<(String, String)>, String> {
    let stem = "Meta-information/endpoint_certificates";
    let Some(listed) = read_either::<Vec<Value>>(project, stem)? else {
        return Ok(Vec::new());
    };
    Ok(listed
        .iter()
        .map(|c| {
            let text = |key: &str| c[key].as_str().unwrap_or_default().to_string();
            (
                text("alias"),
                format!("{} {}", text("hostName"), text("certificate")),
            )
        })
        .collect())
}

/// Differences between `from` and `to` under `path`: objects member by member, anything
/// else whole.
fn diff(path: &str, from: &Value, to: &Value, found: &mut Vec<Change>) {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => diff_members(path, a, b, found),
        (a, b) if a != b => found.push(Change {
            path: path.to_string(),
            from: Some(a.clone()),
            to: Some(b.clone()),
        }),
        _ => {}
    }
}

/// [`diff`] of two objects, member by member.
fn diff_members(
    path: &str,
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    found: &mut Vec<Change>,
) {
    let members: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for member in members {
        let inner = if path.is_empty() {
            member.clone()
        } else {
            format!("{path}.{member}")
        };
        match (a.get(member), b.get(member)) {
            (Some(x), Some(y)) => diff(&inner, x, y, found),
            (x, y) => found.push(Change {
                path: inner,
                from: x.cloned(),
                to: y.cloned(),
            }),
        }
    }
}

/// The files an import takes compared as [`taken_files`] names them; an endpoint
/// certificate only when the project brings it (an export also carries the tenant's
/// others bound to the API's endpoints, which an import leaves as they are).
fn file_changes(
    ours: &std::collections::BTreeMap<String, Vec<u8>>,
    theirs: &std::collections::BTreeMap<String, Vec<u8>>,
    found: &mut Vec<Change>,
) {
    let keys: BTreeSet<&String> = ours
        .keys()
        .chain(
            theirs
                .keys()
                .filter(|key| !key.starts_with("certificates/")),
        )
        .collect();
    for key in keys {
        let (a, b) = (ours.get(key), theirs.get(key));
        if a != b {
            found.push(Change {
                path: format!("file:{key}"),
                from: b.map(|bytes| summary(bytes)),
                to: a.map(|bytes| summary(bytes)),
            });
        }
    }
}

/// A project's documents without the ids each stack gives them, in name order.
fn documents(path: &str, bytes: &[u8]) -> Result<Vec<Value>, String> {
    let parsed: Vec<DocJson> = crate::model::from_file(path, bytes)?;
    let mut listed: Vec<Value> = parsed
        .into_iter()
        .map(|mut doc| {
            doc.id = None;
            // What the import gives a document that says none.
            doc.visibility.get_or_insert_with(|| "API_LEVEL".into());
            serde_json::to_value(doc).unwrap_or_default()
        })
        .collect();
    listed.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Ok(listed)
}

/// A file as a change shows it: its size, never its content (it may be large, or binary).
fn summary(bytes: &[u8]) -> Value {
    Value::from(format!("{} bytes", bytes.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(model: Value) -> Project {
        let mut project = Project::new("Pets-1.0.0");
        project.add(
            "Meta-information/api.json",
            serde_json::to_vec(&model).unwrap(),
        );
        project
    }

    fn model() -> Value {
        serde_json::json!({
            "id": {"providerName": "admin", "apiName": "Pets", "version": "1.0.0"},
            "context": "/pets/1.0.0", "contextTemplate": "/pets/{version}",
            "availableTiers": [{"name": "Gold"}], "status": "PUBLISHED",
            "endpointConfig": "{\"production_endpoints\":{\"url\":\"http://a/\"}}"
        })
    }

    #[test]
    fn a_default_said_or_left_out_is_no_change() {
        let mut said = model();
        said["visibility"] = "public".into();
        said["transports"] = "http,https".into();
        said["cacheTimeout"] = 300.into();
        said["subscriptionAvailability"] = "current_tenant".into();
        said["status"] = "CREATED".into();
        said["uuid"] = "x".into();
        let found = changes(&project(model()), &project(said)).unwrap();
        assert_eq!(found, []);
    }

    #[test]
    fn one_edited_field_is_that_field() {
        let mut edited = model();
        edited["endpointConfig"] = "{\"production_endpoints\":{\"url\":\"http://b/\"}}".into();
        let found = changes(&project(edited), &project(model())).unwrap();
        assert_eq!(
            found,
            [Change {
                path: "endpointConfig.production_endpoints.url".into(),
                from: Some("http://a/".into()),
                to: Some("http://b/".into()),
            }]
        );
    }

    #[test]
    fn files_are_compared_and_documents_without_their_ids() {
        let (mut ours, mut theirs) = (project(model()), project(model()));
        ours.add(
            "Docs/docs.json",
            br#"[{"id":"1","type":"HOWTO","name":"A","sourceType":"INLINE"}]"#.to_vec(),
        );
        theirs.add(
            "Docs/docs.json",
            br#"[{"id":"9","type":"HOWTO","name":"A","sourceType":"INLINE"}]"#.to_vec(),
        );
        ours.add("Docs/InlineContents/A", b"new".to_vec());
        theirs.add("Docs/InlineContents/A", b"old".to_vec());
        ours.add("Image/icon.png", b"png".to_vec());
        let found = changes(&ours, &theirs).unwrap();
        let paths: Vec<&str> = found.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["file:Docs/A", "file:Image/icon"]);
        assert_eq!(found[1].from, None);
    }

    #[test]
    fn what_an_export_writes_its_own_way_is_no_change() {
        let (mut ours, mut theirs) = (project(model()), project(model()));
        ours.add("Image/icon.jpeg", b"jpg".to_vec());
        theirs.add("Image/icon.jpg", b"jpg".to_vec());
        ours.add("WSDL/pets.wsdl", b"<definitions/>".to_vec());
        theirs.add("WSDL/Pets-1.0.0.wsdl", b"<definitions/>".to_vec());
        ours.add("Sequences/in-sequence/Custom/a", b"<sequence/>".to_vec());
        theirs.add(
            "Sequences/in-sequence/Custom/a.xml",
            b"<sequence/>".to_vec(),
        );
        theirs.add(
            "Sequences/fault-sequence/json_fault.xml",
            b"<global/>".to_vec(),
        );
        ours.add("Meta-information/client_certificates.json", b"[]".to_vec());
        ours.add(
            "Docs/docs.json",
            br#"[{"type":"HOWTO","name":"A","sourceType":"INLINE"}]"#.to_vec(),
        );
        theirs.add(
            "Docs/docs.json",
            br#"[{"id":"9","type":"HOWTO","name":"A","sourceType":"INLINE","visibility":"API_LEVEL"}]"#.to_vec(),
        );
        theirs.add(
            "Meta-information/endpoint_certificates.json",
            br#"[{"hostName":"https://a","alias":"other","certificate":"AAAA"}]"#.to_vec(),
        );
        let mut moved = model();
        moved["context"] = "/elsewhere/1.0.0".into();
        moved["contextTemplate"] = "/elsewhere/{version}".into();
        ours.add(
            "Meta-information/api.json",
            serde_json::to_vec(&moved).unwrap(),
        );
        assert_eq!(changes(&ours, &theirs).unwrap(), []);
    }

    #[test]
    fn a_fingerprint_sees_the_lifecycle_state() {
        let mut published = model();
        published["status"] = "PUBLISHED".into();
        let mut created = model();
        created["status"] = "CREATED".into();
        assert_ne!(
            fingerprint(&project(published)).unwrap(),
            fingerprint(&project(created.clone())).unwrap()
        );
        assert_eq!(
            fingerprint(&project(created.clone())).unwrap(),
            fingerprint(&project(created)).unwrap()
        );
    }
}
