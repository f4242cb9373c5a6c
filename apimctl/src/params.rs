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
    let mut model: Value = apim_archive::from_file(path, bytes).map_err(anyhow::Error::msg)?;
    let root = project.root.clone();
    let Some(members) = model.as_object_mut() else {
        bail!("{root}: {path} is not an object");
    };
    let text = members
        .get("endpointConfig")
        .and_then(Value::as_str)
        .unwrap_or("{}");
    let mut config: Value = serde_json::from_str(text).context("endpointConfig is not JSON")?;
    let Some(endpoints) = config.as_object_mut() else {
        bail!("{root}: endpointConfig is not an object");
    };
    let sandbox = params
        .sandbox_endpoint
        .as_ref()
        .or(params.endpoint.as_ref());
    for (key, url) in [
        ("production_endpoints", params.endpoint.as_ref()),
        ("sandbox_endpoints", sandbox),
    ] {
        let Some(url) = url else { continue };
        set_endpoint(&root, endpoints, key, url)?;
    }
    members.insert("endpointConfig".into(), Value::from(config.to_string()));
    let written = if yaml {
        serde_norway::to_string(&model)?.into_bytes()
    } else {
        serde_json::to_vec_pretty(&model)?
    };
    project.add(path, written);
    Ok(())
}

/// Sets the one endpoint of `key` in an endpoint configuration to `url`.
fn set_endpoint(
    root: &str,
    endpoints: &mut serde_json::Map<String, Value>,
    key: &str,
    url: &str,
) -> anyhow::Result<()> {
    let one = || serde_json::json!({"url": url, "config": null});
    match endpoints.get_mut(key) {
        Some(Value::Array(list)) if list.len() > 1 => {
            bail!("{root}: {key} lists several endpoints; a parameter sets one")
        }
        Some(Value::Array(list)) => match list.first_mut().and_then(Value::as_object_mut) {
            Some(endpoint) => {
                endpoint.insert("url".into(), Value::from(url));
            }
            None => *list = vec![one()],
        },
        Some(Value::Object(endpoint)) => {
            endpoint.insert("url".into(), Value::from(url));
        }
        _ => {
            endpoints.insert(key.into(), one());
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn project(config: Value) -> Project {
        let mut project = Project::new("Pets-1.0.0");
        let model = serde_json::json!({"endpointConfig": config.to_string()});
        project.add("Meta-information/api.json", model.to_string().into_bytes());
        project
    }

    fn endpoints_of(project: &Project) -> Value {
        let model: Value =
            serde_json::from_slice(project.file("Meta-information/api.json").unwrap()).unwrap();
        serde_json::from_str(model["endpointConfig"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn endpoints_are_set_whatever_shape_they_had() {
        let params = Params {
            endpoint: Some("http://prod/".into()),
            ..Params::default()
        };
        for config in [
            serde_json::json!({"production_endpoints": {"url": "http://a/"}}),
            serde_json::json!({"production_endpoints": [{"url": "http://a/"}]}),
            serde_json::json!({"production_endpoints": ["http://a/"]}),
            serde_json::json!({"production_endpoints": 7}),
            serde_json::json!({}),
        ] {
            let mut project = project(config.clone());
            apply(&mut project, &params).unwrap();
            let endpoints = endpoints_of(&project);
            let production = &endpoints["production_endpoints"];
            let url = production["url"].as_str().or(production[0]["url"].as_str());
            assert_eq!(url, Some("http://prod/"), "{config}");
            assert_eq!(
                endpoints["sandbox_endpoints"]["url"], "http://prod/",
                "{config}"
            );
        }
        let mut two = project(serde_json::json!({"production_endpoints": [{}, {}]}));
        assert!(apply(&mut two, &params).is_err());
        let mut not_an_object = project(serde_json::json!([1]));
        assert!(apply(&mut not_an_object, &params).is_err());
    }
}
