//! The command line, as clap reads it.

use std::path::PathBuf;

use clap::{Args, CommandFactory as _, Parser, Subcommand, ValueEnum};

/// The API management platform's command line.
#[derive(Debug, Parser)]
#[command(name = "apimctl", version)]
pub struct Cli {
    /// Where environments and tokens are kept (default: $XDG_CONFIG_HOME/apimctl or
    /// ~/.config/apimctl).
    #[arg(long, global = true, env = "APIMCTL_CONFIG_DIR")]
    pub config_dir: Option<PathBuf>,
    /// How results are written.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Environments: the control planes apimctl talks to.
    #[command(subcommand)]
    Env(EnvCommand),
    /// Registers a client with an environment and keeps its token.
    Login(Login),
    /// Forgets an environment's token.
    Logout {
        /// The environment.
        env: String,
    },
    /// Exports APIs as projects (`<Name>-<Version>/` folders), and with `--applications`
    /// the tenant's applications: the whole tenant.
    Export(Export),
    /// Imports projects (folders or zips) into an environment.
    Import(Import),
    /// Shows what applying a directory of projects would change, changing nothing. Exit
    /// code 0: no change; 2: changes; 1: an error.
    Plan(Plan),
    /// Applies a directory of projects: exactly a saved plan (`--plan`), or what a plan
    /// made now finds.
    Apply(Apply),
    /// Writes a shell's completions to standard output.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// Adds (or replaces) an environment.
    Add {
        /// Its name.
        name: String,
        /// The control plane's management URL.
        #[arg(long)]
        url: String,
        /// Its scopes' prefix, when it sets one of its own (`APIM_SCOPE_PREFIX`).
        #[arg(long)]
        scope_prefix: Option<String>,
    },
    /// Lists the environments.
    List,
    /// Removes an environment and its token.
    Remove {
        /// Its name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct Login {
    /// The environment.
    pub env: String,
    /// The user, for the password grant; the password is read from standard input, or
    /// from APIMCTL_PASSWORD (never from a flag: `ps` shows flags).
    #[arg(long, short)]
    pub username: Option<String>,
    /// Reads the password from standard input.
    #[arg(long)]
    pub password_stdin: bool,
    /// Uses the client credentials grant with APIMCTL_CLIENT_ID and
    /// APIMCTL_CLIENT_SECRET instead of a user's password.
    #[arg(long)]
    pub client_credentials: bool,
}

#[derive(Debug, Args)]
pub struct Export {
    /// The environment.
    #[arg(long, short)]
    pub env: String,
    /// Only the API of this name (every API of the tenant otherwise).
    #[arg(long)]
    pub name: Option<String>,
    /// Its version.
    #[arg(long, requires = "name")]
    pub version: Option<String>,
    /// Where the projects are written.
    #[arg(long, short, default_value = ".")]
    pub dir: PathBuf,
    /// The tenant's applications too, under `applications/<owner>/` (administrators).
    #[arg(long)]
    pub applications: bool,
}

#[derive(Debug, Args)]
pub struct Import {
    /// The environment.
    #[arg(long, short)]
    pub env: String,
    /// Projects: folders or zips of APIs or applications, or directories of them (a
    /// whole tenant as `export --applications` writes it: APIs first, then
    /// `applications/<owner>/<Name>/`).
    #[arg(required = true)]
    pub projects: Vec<PathBuf>,
    /// The importer provides the APIs instead of the projects' providers.
    #[arg(long)]
    pub no_preserve_provider: bool,
    /// A project of an existing API updates it (created otherwise); an application the
    /// owner has already is left as it is.
    #[arg(long)]
    pub update: bool,
    /// Endpoints and secrets per environment (see `docs/apimctl.md`).
    #[arg(long)]
    pub params: Option<PathBuf>,
}

/// A directory of projects and the environment it is planned against.
#[derive(Debug, Args)]
pub struct Estate {
    /// The environment.
    #[arg(long, short)]
    pub env: String,
    /// The directory of projects (one folder each; `apimctl.toml` may say which APIs it
    /// manages).
    pub dir: PathBuf,
    /// Deletions too: managed APIs no project of the directory is.
    #[arg(long)]
    pub prune: bool,
    /// Endpoints and secrets per environment.
    #[arg(long)]
    pub params: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct Plan {
    #[command(flatten)]
    pub estate: Estate,
    /// Saves the plan here, for `apply --plan`.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct Apply {
    #[command(flatten)]
    pub estate: Estate,
    /// A plan saved by `plan --out`: applied exactly (its `--prune` with it), refused if
    /// the estate or the directory moved since.
    #[arg(long)]
    pub plan: Option<PathBuf>,
}

/// Writes `shell`'s completions of apimctl to standard output.
pub fn completions(shell: clap_complete::Shell) {
    clap_complete::generate(
        shell,
        &mut Cli::command(),
        "apimctl",
        &mut std::io::stdout(),
    );
}
