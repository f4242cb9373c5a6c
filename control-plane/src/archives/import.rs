//! A WSO2 2.6 project made into an API of this platform, as the import/export service's
//! `import-api` does: `Meta-information/api.yaml` (read first, as WSO2 does) or
//! `api.json` with `swagger.json`, the sequences it names, `Docs/`, the thumbnail
//! (`Image/`, the first file named `icon...`), the WSDL and the endpoint certificates,
//! written in one transaction: a project refused anywhere leaves nothing behind. A
//! project imported over an existing API (apimcli's `--update`) replaces its record and
//! what it carries. What a project holds that this platform does not take is named,
//! never dropped silently.

use std::collections::BTreeSet;

use apim_archive::{ApiJson, DocJson, Project};
use base64::Engine as _;
use serde_json::Value;

use crate::apis::ApiRecord;
use crate::apis::create::{self, Creator};
use crate::apis::update;
use crate::certificates::{CarriedCertificate, Checked};
use crate::documents::{Content, Document};
use crate::error::{Error, Result};
use crate::manifest::{Touched, Touches};
use crate::mediation::records::{Mediation, MediationRow};
use crate::state::AppState;
use crate::users::{User, tenant_of};

/// What an import did.
#[derive(Debug)]
pub struct Imported {
    /// The new API's id.
    pub id: String,
    /// What the project holds that was not taken: files by path, members of WSO2's model
    /// by name.
    pub not_taken: Vec<String>,
    /// What gateways must learn.
    pub touches: Touches,
}

/// The project's files, marked as they are taken; those left are reported.
struct Reading<'a> {
    project: &'a Project,
    taken: BTreeSet<&'a str>,
}

impl<'a> Reading<'a> {
    fn new(project: &'a Project) -> Self {
        Self {
            project,
            taken: BTreeSet::new(),
        }
    }

    /// The first of `paths` the project has, taken.
    fn take(&mut self, paths: &[&str]) -> Option<(&'a str, &'a [u8])> {
        let (path, bytes) = paths
            .iter()
            .find_map(|p| self.project.files.get_key_value(*p))?;
        self.taken.insert(path.as_str());
        Some((path.as_str(), bytes.as_slice()))
    }

    /// Files under `folder` (with its `/`), not yet taken, in path order.
    fn under(&self, folder: &str) -> Vec<(&'a str, &'a [u8])> {
        self.project
            .files
            .range(folder.to_string()..)
            .take_while(|(path, _)| path.starts_with(folder))
            .filter(|(path, _)| !self.taken.contains(path.as_str()))
            .map(|(path, bytes)| (path.as_str(), bytes.as_slice()))
            .collect()
    }

    fn mark(&mut self, path: &'a str) {
        self.taken.insert(path);
    }

    /// Every file not taken.
    fn left(&self) -> impl Iterator<Item = String> + '_ {
        self.project
            .files
            .keys()
            .filter(|path| !self.taken.contains(path.as_str()))
            .cloned()
    }
}

/// The project uploaded as the multipart part `file`, unzipped off the server's threads
/// (both services take a project so); none when the form has no such part.
pub async fn uploaded_project(
    state: &AppState,
    request: axum::extract::Request,
) -> Result<Option<Project>> {
    let max = apim_archive::MAX_ARCHIVE_BYTES;
    let fields = crate::http::multipart::read_form(request, state, &["file"], max).await?;
    let Some(file) = fields.into_iter().find(|f| f.name == "file") else {
        return Ok(None);
    };
    let read = tokio::task::spawn_blocking(move || Project::from_zip(&file.bytes))
        .await
        .map_err(|err| Error::Internal(err.into()))?;
    read.map(Some).map_err(|refusal| Error::Invalid(refusal.0))
}

/// A file of WSO2's as JSON, or YAML when its path says so.
fn parse_model<T: serde::de::DeserializeOwned>(path: &str, bytes: &[u8]) -> Result<T> {
    apim_archive::from_file(path, bytes).map_err(Error::Invalid)
}

/// The project's API as the record `POST /apis` takes, its own policies, and the
/// members of WSO2's model not taken.
fn record_of(reading: &mut Reading<'_>) -> Result<(ApiRecord, String, Vec<String>)> {
    let Some((path, bytes)) =
        reading.take(&["Meta-information/api.yaml", "Meta-information/api.json"])
    else {
        return Err(Error::Invalid(
            "The project has no Meta-information/api.yaml or api.json".into(),
        ));
    };
    let model: ApiJson = parse_model(path, bytes)?;
    let swagger = match reading.take(&[
        "Meta-information/swagger.yaml",
        "Meta-information/swagger.json",
    ]) {
        Some((path, bytes)) => Some(parse_model::<Value>(path, bytes)?.to_string()),
        None => None,
    };
    let (record, not_taken) = model.to_record(swagger.as_deref());
    let record: ApiRecord = serde_json::from_value(record)
        .map_err(|why| Error::Invalid(format!("{path} cannot be read: {why}")))?;
    let status = model.status.clone().unwrap_or_else(|| "CREATED".into());
    Ok((record, status, not_taken))
}

/// Who provides the imported API. With `preserve_provider` the project's provider, who
/// must be of the importer's tenant; otherwise the importer, the context moved out of
/// the project's tenant (`/t/<domain>`) into theirs.
fn provide_as(record: &mut ApiRecord, user: &User, preserve_provider: bool) -> Result<()> {
    let named = record.provider.clone().unwrap_or_default();
    if preserve_provider {
        if tenant_of(&named) != user.tenant {
            return Err(Error::Forbidden(
                "Tenant mismatch! Please enable preserveProvider property for cross tenant API Import"
                    .into(),
            ));
        }
        return Ok(());
    }
    if let Some(context) = record.context.as_deref() {
        let own = context
            .strip_prefix(&format!("/t/{}", tenant_of(&named)))
            .filter(|rest| rest.starts_with('/'))
            .unwrap_or(context);
        record.context = Some(own.to_string());
    }
    record.provider = Some(user.username.clone());
    Ok(())
}

/// The sequences the record names that the project carries: `Custom/<name>[.xml]`
/// under the flow's folder, or `<name>[.xml]` beside it unless it is WSO2's global one
/// of that name (which every gateway has). Each checked as an upload is; `api_id` is
/// filled in once the API has one.
fn own_sequences(reading: &mut Reading<'_>, record: &ApiRecord) -> Result<Vec<MediationRow>> {
    let mut own = Vec::new();
    for (name, flow) in record.sequence_names() {
        let folder = format!("Sequences/{flow}-sequence");
        let custom = [
            format!("{folder}/Custom/{name}.xml"),
            format!("{folder}/Custom/{name}"),
        ];
        let beside = [format!("{folder}/{name}.xml"), format!("{folder}/{name}")];
        let is_global = crate::mediation::global(&name, &flow).is_some();
        let found = match reading.take(&[&custom[0], &custom[1]]) {
            Some(found) => Some(found),
            None => {
                let found = reading.take(&[&beside[0], &beside[1]]);
                found.filter(|_| !is_global)
            }
        };
        let Some((path, bytes)) = found else {
            continue;
        };
        let config = std::str::from_utf8(bytes)
            .map_err(|_| Error::Invalid(format!("{path} is not UTF-8 text")))?;
        let checked = crate::mediation::check_policy(Mediation {
            id: None,
            name: Some(name.clone()),
            flow: Some(flow.clone()),
            config: Some(config.to_string()),
            wasm: None,
        })
        .map_err(|err| in_file(path, err))?;
        own.push(MediationRow {
            id: uuid::Uuid::new_v4().to_string(),
            api_id: String::new(),
            name: checked.name,
            flow: checked.flow,
            config: checked.config,
            wasm_digest: None,
            wasm_size: None,
            body_bytes: None,
        });
    }
    Ok(own)
}

/// A refusal that names the project's file it came from.
fn in_file(path: &str, err: Error) -> Error {
    match err {
        Error::Invalid(why) => Error::Invalid(format!("{path}: {why}")),
        Error::InvalidFields(fields) => Error::Invalid(format!(
            "{path}: {}",
            fields
                .iter()
                .map(|(field, problem)| format!("{field} {problem}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Error::PayloadTooLarge => Error::Invalid(format!("{path} is too large")),
        other => other,
    }
}

/// A project read and checked, before anything is written.
struct Read<'a> {
    reading: Reading<'a>,
    record: ApiRecord,
    /// Its lifecycle state, as the project says.
    status: String,
    /// The sequences it carries, checked; their `api_id` still empty.
    own: Vec<MediationRow>,
    /// The endpoint certificates new to the tenant, checked.
    certificates: Vec<crate::certificates::CertificateRow>,
    not_taken: Vec<String>,
}

/// Reads `project` for `user`: its model and definition, who provides it, its own
/// sequences and its endpoint certificates, each checked.
async fn read<'a>(
    state: &AppState,
    user: &User,
    project: &'a Project,
    preserve_provider: bool,
) -> Result<Read<'a>> {
    let mut reading = Reading::new(project);
    let (mut record, status, mut not_taken) = record_of(&mut reading)?;
    provide_as(&mut record, user, preserve_provider)?;
    let own = own_sequences(&mut reading, &record)?;
    let (certificates, mut refused) =
        checked_certificates(state, &mut reading, &user.tenant).await?;
    not_taken.append(&mut refused);
    Ok(Read {
        reading,
        record,
        status,
        own,
        certificates,
        not_taken,
    })
}

/// Writes what `read` carries for API `api_id` in `tx`: its own sequences, documents,
/// thumbnail, WSDL and the certificates new to the tenant; what gateways must learn of
/// the certificates.
async fn write_carried(
    read: &mut Read<'_>,
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    api_id: &str,
) -> Result<Vec<Touched>> {
    for row in &mut read.own {
        row.api_id = api_id.to_string();
        crate::mediation::queries::insert(tx, row).await?;
    }
    add_documents(&mut read.reading, tx, api_id).await?;
    add_thumbnail(&mut read.reading, tx, api_id).await?;
    add_wsdl(&mut read.reading, tx, api_id).await?;
    let mut touched = Vec::new();
    for row in &read.certificates {
        if let Some((host, port)) = crate::certificates::add_carried(tx, row).await? {
            touched.push(Touched::Trust { host, port });
        }
    }
    Ok(touched)
}

/// Imports `project` as a new API of `user`'s, in the lifecycle state it says.
pub async fn import_project(
    state: &AppState,
    user: &User,
    project: &Project,
    preserve_provider: bool,
) -> Result<Imported> {
    let mut read = read(state, user, project, preserve_provider).await?;
    let creator = Creator {
        username: &user.username,
        tenant: &user.tenant,
    };
    let record = create::prepared(state, creator, read.record.clone(), &read.own).await?;
    let mut tx = state.db.begin().await?;
    let (id, demoted) = create::insert(&mut tx, &user.tenant, &record).await?;
    let trusted = write_carried(&mut read, &mut tx, &id).await?;
    let status = status_for(user, &mut read);
    create::restore_status(&mut tx, &id, &status).await?;
    tx.commit().await?;
    Ok(imported(user, id, demoted, trusted, read))
}

/// The lifecycle state an import restores: the project's, when the importer may change
/// lifecycle states (as `change-lifecycle` asks); CREATED otherwise, and said.
fn status_for(user: &User, read: &mut Read<'_>) -> String {
    let may_publish = user.has_role("admin") || user.has_role("publisher");
    if may_publish || read.status.eq_ignore_ascii_case("CREATED") {
        return read.status.clone();
    }
    read.not_taken.push(format!(
        "status {} (the importer may not change lifecycle states: imported as CREATED)",
        read.status
    ));
    "CREATED".into()
}

/// Imports `project` over API `api_id` of `user`'s tenant (apimcli's `--update`): its
/// record replaced (name, version, context, provider and lifecycle state stay), and its
/// own sequences, documents, thumbnail and WSDL replaced by the project's.
pub async fn import_over(
    state: &AppState,
    user: &User,
    project: &Project,
    preserve_provider: bool,
    api_id: &str,
) -> Result<Imported> {
    let api = crate::apis::find(&state.db, api_id)
        .await?
        .filter(|api| api.id == api_id && api.tenant == user.tenant)
        .ok_or_else(|| Error::NotFoundWhy(format!("Unable to find the API {api_id}")))?;
    let mut read = read(state, user, project, preserve_provider).await?;
    let named = (read.record.name.as_deref(), read.record.version.as_deref());
    if named != (Some(api.name.as_str()), Some(api.version.as_str())) {
        return Err(Error::Invalid(format!(
            "The project is of API {} {}, not of {} {}",
            named.0.unwrap_or_default(),
            named.1.unwrap_or_default(),
            api.name,
            api.version
        )));
    }
    let mut record = read.record.clone();
    keep_stored_password(&mut record, &api.record);
    let record = update::prepared(state, &api, record, &read.own).await?;
    let mut tx = state.db.begin().await?;
    let demoted = update::save(&mut tx, &api, &record).await?;
    crate::mediation::queries::delete_all_of(&mut tx, &api.id).await?;
    crate::documents::delete_documents(&mut tx, &api.id).await?;
    crate::thumbnails::delete_thumbnail(&mut tx, &api.id).await?;
    crate::wsdl::delete_wsdl(&mut tx, &api.id).await?;
    let trusted = write_carried(&mut read, &mut tx, &api.id).await?;
    tx.commit().await?;
    Ok(imported(user, api.id, demoted, trusted, read))
}

/// A project never carries the backend password: over an API that has one, the stored
/// password stays (as the publisher keeps it for a masked one) rather than being lost.
fn keep_stored_password(record: &mut ApiRecord, stored: &ApiRecord) {
    if record.stored_backend_password().is_none() && stored.stored_backend_password().is_some() {
        record.set_backend_password(crate::apis::MASKED_PASSWORD.to_string());
    }
}

/// What an import did: the API, what gateways must learn, what was not taken.
fn imported(
    user: &User,
    id: String,
    demoted: Vec<String>,
    trusted: Vec<Touched>,
    read: Read<'_>,
) -> Imported {
    let mut not_taken = read.not_taken;
    not_taken.extend(read.reading.left());
    let mut touched: Vec<Touched> = std::iter::once(id.clone())
        .chain(demoted)
        .map(Touched::Api)
        .collect();
    touched.extend(trusted);
    tracing::info!(api = %id, user = %user.username, not_taken = not_taken.len(), "API imported");
    Imported {
        id,
        not_taken,
        touches: Touches(touched),
    }
}

/// `Docs/docs.json` and the contents it names: `InlineContents/<name>` for an inline or
/// Markdown document, `FileContents/<filePath>` for a file.
async fn add_documents(
    reading: &mut Reading<'_>,
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    api_id: &str,
) -> Result<()> {
    let Some((path, bytes)) = reading.take(&["Docs/docs.yaml", "Docs/docs.json"]) else {
        return Ok(());
    };
    let listed: Vec<DocJson> = parse_model(path, bytes)?;
    let mut names = BTreeSet::new();
    for doc in listed {
        if !names.insert(doc.name.clone()) {
            return Err(Error::Invalid(format!(
                "{path} lists the document '{}' twice",
                doc.name.escape_default()
            )));
        }
        let checked = crate::documents::check_document(Document {
            document_id: None,
            name: Some(doc.name.clone()),
            doc_type: Some(doc.doc_type.clone()),
            summary: doc.summary.clone(),
            source_type: Some(doc.source_type.clone()),
            source_url: doc.source_url.clone(),
            other_type_name: doc.other_type_name.clone(),
            visibility: Some(doc.visibility.clone().unwrap_or_else(|| "API_LEVEL".into())),
        })
        .map_err(|err| in_file(path, err))?;
        let row = checked.into_row(uuid::Uuid::new_v4().to_string(), api_id.to_string());
        crate::documents::insert_document(&mut **tx, &row).await?;
        add_document_content(reading, tx, &row, &doc).await?;
    }
    Ok(())
}

async fn add_document_content(
    reading: &mut Reading<'_>,
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    row: &crate::documents::DocumentRow,
    doc: &DocJson,
) -> Result<()> {
    let content = match row.source_type.as_str() {
        "INLINE" | "MARKDOWN" => {
            let Some((path, bytes)) = reading.take(&[&format!("Docs/InlineContents/{}", row.name)])
            else {
                return Ok(());
            };
            if bytes.len() > crate::documents::MAX_INLINE_BYTES {
                return Err(Error::Invalid(format!("{path} is too large")));
            }
            let text = std::str::from_utf8(bytes)
                .map_err(|_| Error::Invalid(format!("{path} is not UTF-8 text")))?;
            crate::documents::check_text("inlineContent", text, crate::documents::MAX_INLINE_BYTES)
                .map_err(|err| in_file(path, err))?;
            (text.to_string(), None)
        }
        "FILE" => {
            let file = doc.file_path.as_deref().unwrap_or(&row.name);
            let Some((path, bytes)) = reading.take(&[&format!("Docs/FileContents/{file}")]) else {
                return Ok(());
            };
            if bytes.len() > crate::documents::MAX_FILE_BYTES {
                return Err(Error::Invalid(format!("{path} is too large")));
            }
            let name = path.rsplit('/').next().unwrap_or(file);
            let stored = base64::engine::general_purpose::STANDARD.encode(bytes);
            (stored, Some(name.to_string()))
        }
        _ => return Ok(()),
    };
    let (stored, file_name) = content;
    let media_type = file_name.as_deref().map(media_type_of);
    crate::documents::set_content(
        &mut **tx,
        &row.api_id,
        &row.id,
        &row.source_type,
        Content {
            stored: &stored,
            file_name: file_name.as_deref(),
            media_type,
        },
    )
    .await?;
    Ok(())
}

/// A document file's media type, from its extension; what it cannot tell is bytes.
fn media_type_of(file: &str) -> &'static str {
    let extension = file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match extension.as_deref() {
        Some("pdf") => "application/pdf",
        Some("txt") => "text/plain",
        Some("md") => "text/markdown",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("xml") => "application/xml",
        Some("zip") => "application/zip",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        _ => "application/octet-stream",
    }
}

/// The first file under `Image/` whose name says `icon`, checked as an upload is.
async fn add_thumbnail(
    reading: &mut Reading<'_>,
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    api_id: &str,
) -> Result<()> {
    let icon = reading
        .under("Image/")
        .into_iter()
        .find(|(path, _)| path.rsplit('/').next().is_some_and(|f| f.contains("icon")));
    let Some((path, bytes)) = icon else {
        return Ok(());
    };
    reading.mark(path);
    let media_type = crate::thumbnails::image_type(bytes, "application/octet-stream")
        .map_err(|err| in_file(path, err))?;
    let row = crate::thumbnails::ThumbnailRow {
        media_type: media_type.to_string(),
        image: base64::engine::general_purpose::STANDARD.encode(bytes),
    };
    crate::thumbnails::put_thumbnail(&mut **tx, api_id, &row).await
}

/// The first `.wsdl` file under `WSDL/`, checked as an upload is.
async fn add_wsdl(
    reading: &mut Reading<'_>,
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    api_id: &str,
) -> Result<()> {
    let wsdl = reading
        .under("WSDL/")
        .into_iter()
        .find(|(path, _)| path.ends_with(".wsdl"));
    let Some((path, bytes)) = wsdl else {
        return Ok(());
    };
    reading.mark(path);
    let name = path.rsplit('/').next().unwrap_or(path).to_string();
    let definition = String::from_utf8(bytes.to_vec())
        .map_err(|_| Error::Invalid(format!("{path} is not UTF-8 text")))?;
    let row =
        crate::wsdl::check_wsdl(Some(name), Some(definition)).map_err(|err| in_file(path, err))?;
    crate::wsdl::put_wsdl(&mut **tx, api_id, &row).await
}

/// `Meta-information/endpoint_certificates.(yaml|json)`, each checked for the tenant
/// before anything is written: those to add, and the aliases left as they are because
/// they name another certificate here.
async fn checked_certificates(
    state: &AppState,
    reading: &mut Reading<'_>,
    tenant: &str,
) -> Result<(Vec<crate::certificates::CertificateRow>, Vec<String>)> {
    let Some((path, bytes)) = reading.take(&[
        "Meta-information/endpoint_certificates.yaml",
        "Meta-information/endpoint_certificates.json",
    ]) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let carried: Vec<CarriedCertificate> = parse_model(path, bytes)?;
    let (mut new, mut refused) = (Vec::new(), Vec::new());
    for certificate in &carried {
        match crate::certificates::check_carried(state, tenant, certificate, &new)
            .await
            .map_err(|err| in_file(path, err))?
        {
            Checked::New(row) => new.push(row),
            Checked::Kept => {}
            Checked::AliasTaken => refused.push(format!(
                "endpoint certificate '{}' (the alias is another certificate's here, or bound to another endpoint)",
                certificate.alias
            )),
        }
    }
    Ok((new, refused))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> User {
        User {
            username: name.into(),
            roles: vec!["admin".into()],
            tenant: tenant_of(name).into(),
            disabled: false,
        }
    }

    fn record(provider: &str, context: &str) -> ApiRecord {
        serde_json::from_value(serde_json::json!({"provider": provider, "context": context}))
            .unwrap()
    }

    #[test]
    fn the_provider_is_kept_within_its_tenant_or_replaced() {
        let mut kept = record("ann@acme.com", "/t/acme.com/pets");
        provide_as(&mut kept, &user("bob@acme.com"), true).unwrap();
        assert_eq!(kept.provider.as_deref(), Some("ann@acme.com"));
        let mut across = record("ann@acme.com", "/t/acme.com/pets");
        let refused = provide_as(&mut across, &user("admin"), true).unwrap_err();
        assert!(matches!(refused, Error::Forbidden(why) if why.contains("Tenant mismatch")));
        let mut moved = record("ann@acme.com", "/t/acme.com/pets");
        provide_as(&mut moved, &user("admin"), false).unwrap();
        assert_eq!(moved.provider.as_deref(), Some("admin"));
        assert_eq!(moved.context.as_deref(), Some("/pets"));
        let mut plain = record("admin", "/pets");
        provide_as(&mut plain, &user("tina@acme.com"), false).unwrap();
        assert_eq!(plain.context.as_deref(), Some("/pets"));
    }

    #[test]
    fn files_not_taken_are_left_to_report() {
        let mut project = Project::new("Pets-1.0.0");
        project.add("Meta-information/api.json", b"{}".to_vec());
        project.add("Meta-information/api.yaml", b"{}".to_vec());
        project.add("Image/icon.png", b"x".to_vec());
        project.add("Image/other.png", b"x".to_vec());
        let mut reading = Reading::new(&project);
        let (path, _) = reading
            .take(&["Meta-information/api.yaml", "Meta-information/api.json"])
            .unwrap();
        assert_eq!(path, "Meta-information/api.yaml", "YAML first, as WSO2");
        assert_eq!(reading.under("Image/").len(), 2);
        reading.mark("Image/icon.png");
        let left: Vec<String> = reading.left().collect();
        assert_eq!(left, ["Image/other.png", "Meta-information/api.json"]);
    }

    #[test]
    fn document_files_get_a_media_type_by_extension() {
        assert_eq!(media_type_of("guide.PDF"), "application/pdf");
        assert_eq!(media_type_of("notes"), "application/octet-stream");
    }
}
