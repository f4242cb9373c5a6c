//! An API made into a WSO2 2.6 project: `Meta-information/api.json` and `swagger.json`,
//! its documents (`Docs/docs.json`, inline contents and files), thumbnail
//! (`Image/icon.<ext>`), WSDL (`WSDL/<Name>-<Version>.wsdl`) and the sequences it names
//! (its own under `Sequences/<flow>-sequence/Custom/`, WSO2's global ones beside), as
//! WSO2's export lays them out.

use base64::Engine as _;

use apim_archive::{DocJson, Project};

use super::records::model_of;
use crate::apis::records::StoredApi;
use crate::error::Result;
use crate::state::AppState;

/// The project of `api`.
pub async fn project_of(state: &AppState, api: &StoredApi) -> Result<Project> {
    let record = api.full_record().masked();
    let root = format!("{}-{}", api.name, api.version);
    let mut project = Project::new(&root);
    let meta = model_of(&record);
    project.add("Meta-information/api.json", pretty(&meta)?);
    if let Some(swagger) = &record.api_definition {
        let parsed: serde_json::Value =
            serde_json::from_str(swagger).map_err(anyhow::Error::from)?;
        project.add("Meta-information/swagger.json", pretty(&parsed)?);
    }
    add_documents(state, api, &mut project).await?;
    if let Some(icon) = crate::thumbnails::find_thumbnail(&state.db, &api.id).await? {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&icon.image)
            .map_err(anyhow::Error::from)?;
        project.add(
            &format!("Image/icon.{}", extension_of(&icon.media_type)),
            bytes,
        );
    }
    if let Some(wsdl) = crate::wsdl::find_wsdl(&state.db, &api.id).await? {
        project.add(&format!("WSDL/{root}.wsdl"), wsdl.definition.into_bytes());
    }
    add_sequences(state, api, &record, &mut project).await?;
    let urls = endpoint_urls(record.endpoint_config.as_deref().unwrap_or_default());
    let certificates = crate::certificates::carried_for(state, &api.tenant, &urls).await?;
    if !certificates.is_empty() {
        project.add(
            "Meta-information/endpoint_certificates.json",
            pretty(&certificates)?,
        );
    }
    Ok(project)
}

/// Every endpoint URL of an `endpointConfig`: production and sandbox, with failovers.
pub fn endpoint_urls(config: &str) -> Vec<String> {
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(config) else {
        return Vec::new();
    };
    let mut urls = Vec::new();
    for key in [
        "production_endpoints",
        "sandbox_endpoints",
        "production_failovers",
        "sandbox_failovers",
    ] {
        let endpoints = match doc.get(key) {
            Some(serde_json::Value::Array(list)) => list.iter().collect(),
            Some(endpoint) => vec![endpoint],
            None => Vec::new(),
        };
        urls.extend(
            endpoints
                .into_iter()
                .filter_map(|e| e.get("url")?.as_str().map(str::to_string)),
        );
    }
    urls
}

/// `Docs/docs.json` and the contents it names.
async fn add_documents(state: &AppState, api: &StoredApi, project: &mut Project) -> Result<()> {
    let documents = crate::documents::all_with_content(&state.db, &api.id).await?;
    if documents.is_empty() {
        return Ok(());
    }
    let mut listed = Vec::with_capacity(documents.len());
    for (row, content) in documents {
        let mut doc = DocJson {
            id: Some(row.id.clone()),
            doc_type: row.doc_type.clone(),
            name: row.name.clone(),
            summary: row.summary.clone(),
            source_type: row.source_type.clone(),
            source_url: row.source_url.clone(),
            visibility: Some(row.visibility.clone()),
            file_path: None,
            other_type_name: row.other_type_name.clone(),
        };
        match (row.source_type.as_str(), content) {
            ("INLINE" | "MARKDOWN", Some(text)) => {
                let file = file_name_of(&row.name);
                project.add(&format!("Docs/InlineContents/{file}"), text.into_bytes());
            }
            ("FILE", Some(encoded)) => {
                let file = file_name_of(row.file_name.as_deref().unwrap_or(&row.name));
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .map_err(anyhow::Error::from)?;
                project.add(&format!("Docs/FileContents/{file}"), bytes);
                doc.file_path = Some(file);
            }
            _ => {}
        }
        listed.push(doc);
    }
    project.add("Docs/docs.json", pretty(&listed)?);
    Ok(())
}

/// The sequences the API names: its own policies under `Custom/`, WSO2's global ones
/// that have a sequence beside (the others travel by name only, as every WSO2 has them).
async fn add_sequences(
    state: &AppState,
    api: &StoredApi,
    record: &crate::apis::records::ApiRecord,
    project: &mut Project,
) -> Result<()> {
    let own = crate::mediation::queries::of_apis(&state.db, &[&api.id]).await?;
    for (name, flow) in record.sequence_names() {
        let folder = format!("Sequences/{flow}-sequence");
        match own.iter().find(|p| p.name == name && p.flow == flow) {
            Some(policy) if policy.wasm().is_none() => {
                let path = format!("{folder}/Custom/{name}.xml");
                project.add(&path, policy.config.clone().into_bytes());
            }
            // A WebAssembly policy has no place in WSO2's layout: the name travels alone.
            Some(_) => {}
            None => {
                if let Some(sequence) =
                    crate::mediation::global(&name, &flow).and_then(|g| g.sequence)
                {
                    project.add(
                        &format!("{folder}/{name}.xml"),
                        sequence.as_bytes().to_vec(),
                    );
                }
            }
        }
    }
    Ok(())
}

/// A name (a document's, an application's) as one file name of a project: what could
/// leave its folder in whoever unzips it (`/`, `\\`, `:`, a name of dots alone, control
/// characters) made `_`. WSO2 writes a document's name as it is; a name so changed no
/// longer finds its content on WSO2's import, which is better than a file written
/// elsewhere.
pub(super) fn file_name_of(name: &str) -> String {
    let plain: String = name
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if plain.is_empty() || plain.chars().all(|c| c == '.') {
        return apim_http::joined(["_", plain.as_str()]);
    }
    plain
}

/// The file extension WSO2 gives a thumbnail of `media_type`.
fn extension_of(media_type: &str) -> &'static str {
    match media_type {
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/bmp" => "bmp",
        "image/svg+xml" => "svg",
        _ => "png",
    }
}

/// JSON as Gson's pretty printer writes it (two spaces).
fn pretty(value: &impl serde::Serialize) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec_pretty(value).map_err(anyhow::Error::from)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_names_stay_in_their_folder() {
        assert_eq!(file_name_of("How to"), "How to");
        assert_eq!(file_name_of("../../.bashrc"), ".._.._.bashrc");
        assert_eq!(file_name_of(".."), "_..");
        assert_eq!(file_name_of("a\\b:c\n"), "a_b_c_");
        assert_eq!(file_name_of(""), "_");
    }
}
