//! The user's configuration folder: `config.toml` (the environments) and `tokens/<env>.json`
//! (each environment's client and token), the folder and the tokens owner-only.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use crate::cli::EnvCommand;
use crate::output::Output;

/// An environment: a control plane.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    /// Its management URL.
    pub url: String,
    /// Its scopes' prefix (`APIM_SCOPE_PREFIX`), when it is neither of the two in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_prefix: Option<String>,
}

impl Environment {
    /// The scopes apimctl asks for: the publisher's reads and writes, and the
    /// administrators' (applications; granted to administrators only), under the
    /// environment's prefix, or under both WSO2's `apim` and our default `mgr` (the token
    /// endpoint grants those it has).
    pub fn scopes(&self) -> String {
        let prefixes = match &self.scope_prefix {
            Some(prefix) => vec![prefix.as_str()],
            None => vec!["apim", "mgr"],
        };
        prefixes
            .iter()
            .flat_map(|prefix| {
                ["api_view", "api_create", "api_publish", "admin"]
                    .map(|scope| format!("{prefix}:{scope}"))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Settings {
    #[serde(default)]
    environments: BTreeMap<String, Environment>,
}

/// A registered client and its token for one environment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Token {
    pub client_id: String,
    pub client_secret: String,
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Unix seconds.
    pub expires_at: u64,
}

/// The configuration folder.
pub struct Folder(PathBuf);

impl Folder {
    /// `given`, else `$XDG_CONFIG_HOME/apimctl`, else `~/.config/apimctl`.
    pub fn locate(given: Option<&Path>) -> anyhow::Result<Self> {
        let path = match given {
            Some(path) => path.to_path_buf(),
            None => match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
                Some(base) => PathBuf::from(base).join("apimctl"),
                None => {
                    let home = std::env::var_os("HOME").context("HOME is not set")?;
                    PathBuf::from(home).join(".config/apimctl")
                }
            },
        };
        Ok(Self(path))
    }

    fn settings(&self) -> anyhow::Result<Settings> {
        let file = self.0.join("config.toml");
        match std::fs::read_to_string(&file) {
            Ok(text) => toml::from_str(&text).with_context(|| format!("{}", file.display())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(err) => Err(err).with_context(|| format!("{}", file.display())),
        }
    }

    fn save_settings(&self, settings: &Settings) -> anyhow::Result<()> {
        self.make()?;
        let text = toml::to_string(settings)?;
        write_private(&self.0.join("config.toml"), text.as_bytes())
    }

    /// The folder, owner-only.
    fn make(&self) -> anyhow::Result<()> {
        std::fs::create_dir_all(self.0.join("tokens"))
            .with_context(|| format!("{}", self.0.display()))?;
        for dir in [self.0.clone(), self.0.join("tokens")] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }

    /// The environment of `name`.
    pub fn environment(&self, name: &str) -> anyhow::Result<Environment> {
        match self.settings()?.environments.remove(name) {
            Some(environment) => Ok(environment),
            None => {
                bail!("No environment '{name}': add it with `apimctl env add {name} --url <url>`")
            }
        }
    }

    fn token_file(&self, env: &str) -> PathBuf {
        self.0.join("tokens").join(format!("{env}.json"))
    }

    /// The environment's kept token.
    pub fn token(&self, env: &str) -> anyhow::Result<Token> {
        let file = self.token_file(env);
        let text = std::fs::read(&file)
            .with_context(|| format!("Not logged in to {env}: run `apimctl login {env}`"))?;
        Ok(serde_json::from_slice(&text)?)
    }

    /// Keeps the environment's token, owner-only.
    pub fn keep_token(&self, env: &str, token: &Token) -> anyhow::Result<()> {
        self.make()?;
        write_private(&self.token_file(env), &serde_json::to_vec_pretty(token)?)
    }

    pub fn forget_token(&self, env: &str) -> anyhow::Result<()> {
        match std::fs::remove_file(self.token_file(env)) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err.into()),
            _ => Ok(()),
        }
    }
}

/// Writes `bytes` to `file` readable and writable by its owner alone, replacing it.
fn write_private(file: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let temporary = file.with_extension("tmp");
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .with_context(|| format!("{}", temporary.display()))?;
    out.write_all(bytes)?;
    out.sync_all()?;
    std::fs::rename(&temporary, file)?;
    Ok(())
}

/// `env add|list|remove`.
pub fn env_command(
    folder: &Folder,
    command: EnvCommand,
    output: &Output,
) -> anyhow::Result<ExitCode> {
    let mut settings = folder.settings()?;
    match command {
        EnvCommand::Add {
            name,
            url,
            scope_prefix,
        } => {
            let parsed =
                reqwest::Url::parse(&url).with_context(|| format!("'{url}' is not a URL"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                bail!("'{url}' is not an http:// or https:// URL");
            }
            let url = url.trim_end_matches('/').to_string();
            settings
                .environments
                .insert(name.clone(), Environment { url, scope_prefix });
            folder.save_settings(&settings)?;
            output.done(&format!("Environment {name} added"));
        }
        EnvCommand::List => {
            let listed: Vec<serde_json::Value> = settings
                .environments
                .iter()
                .map(|(name, env)| serde_json::json!({"name": name, "url": env.url}))
                .collect();
            output.list(&listed, |item| {
                format!(
                    "{}\t{}",
                    item["name"].as_str().unwrap_or_default(),
                    item["url"].as_str().unwrap_or_default()
                )
            });
        }
        EnvCommand::Remove { name } => {
            if settings.environments.remove(&name).is_none() {
                bail!("No environment '{name}'");
            }
            folder.save_settings(&settings)?;
            folder.forget_token(&name)?;
            output.done(&format!("Environment {name} removed"));
        }
    }
    Ok(ExitCode::SUCCESS)
}
