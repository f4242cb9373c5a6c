//! Endpoints and secrets per environment, from a parameters file kept beside the
//! projects (TOML), never written into a project:
//!
//! ```toml
//! [prod."Pets-v1.0.0"]
//! endpoint = "https://pets.prod.example/"          # production, and sandbox unless given
//! sandbox_endpoint = "https://pets.sandbox.example/"
//! backend_password_env = "PETS_BACKEND_PASSWORD"   # the backend password, read from it
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use apim_archive::Project;
use serde::Deserialize;
use serde_json::Value;

/// One project's parameters in one environment.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub endpoint: Option<String>,
    pub sandbox_endpoint: Option<String>,
    pub backend_password_env: Option<String>,
}

/// Each environment's parameters, by project (`<Name>-<Version>`).
pub type ParamsFile = BTreeMap<String, BTreeMap<String, Params>>;

/// The parameters of `env` in `file`, if a file is given.
pub fn load(file: Option<&Path>, env: &str) -> anyhow::Result<BTreeMap<String, Params>> {
    let Some(file) = file else {
        return Ok(BTreeMap::new());
    };
    let text = std::fs::read_to_string(file).with_context(|| format!("{}", file.display()))?;
    let mut all: ParamsFile =
        toml::from_str(&text).with_context(|| format!("{}", file.display()))?;
    Ok(all.remove(env).unwrap_or_default())
}

/// `project` with its endpoints as `params` give them.
pub fn apply(project: &mut Project, params: &Params) -> anyhow::Result<()> {
    if params.endpoint.is_none() && params.sandbox_endpoint.is_none() {
        return Ok(());
    }
    let (path, yaml) = match project.file("Meta-information/api.yaml") {
        Some(_) => ("Meta-information/api.yaml", true),
        None => ("Meta-information/api.json", false),
    };
    let bytes = project.file(path).context("the project has no model")?;
    let mut model: Value = if yaml {
        serde_norway::from_slice(bytes)?
    } else {
        serde_json::from_slice(bytes)?
    };
    let config = model["endpointConfig"].as_str().unwrap_or("{}");
    let mut config: Value = serde_json::from_str(config).context("endpointConfig is not JSON")?;
    let sandbox = params
        .sandbox_endpoint
        .as_ref()
        .or(params.endpoint.as_ref());
    for (key, url) in [
        ("production_endpoints", params.endpoint.as_ref()),
        ("sandbox_endpoints", sandbox),
    ] {
        let Some(url) = url else { continue };
        match &mut config[key] {
            Value::Array(list) if list.len() > 1 => {
                bail!(
                    "{}: {key} lists several endpoints; a parameter sets one",
                    project.root
                )
            }
            Value::Array(list) if list.len() == 1 => list[0]["url"] = Value::from(url.clone()),
            slot => *slot = serde_json::json!({"url": url, "config": null}),
        }
    }
    model["endpointConfig"] = Value::from(config.to_string());
    let written = if yaml {
        serde_norway::to_string(&model)?.into_bytes()
    } else {
        serde_json::to_vec_pretty(&model)?
    };
    project.add(path, written);
    Ok(())
}

/// The backend password `params` name, read from its variable.
pub fn backend_password(params: &Params) -> anyhow::Result<Option<String>> {
    let Some(variable) = &params.backend_password_env else {
        return Ok(None);
    };
    std::env::var(variable)
        .map(Some)
        .with_context(|| format!("{variable}, which the parameters name, is not set"))
}
