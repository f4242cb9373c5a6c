//! `apimctl`: the platform's command line, speaking only its public interfaces (dynamic
//! client registration, the token endpoint, the publisher API and the import/export
//! service). Environments and their tokens are kept in the user's configuration folder,
//! owner-only; a directory of API projects kept in git is planned against an
//! environment and applied exactly as planned.
//!
//! Exit codes a pipeline can act on: 0 done (or, for `plan`, nothing to change), 2
//! `plan` found changes, 1 an error.

mod cli;
mod client;
mod config;
mod estate;
mod output;
mod params;

use std::process::ExitCode;

use clap::Parser as _;

use cli::{Cli, Command};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let output = output::Output::new(cli.output);
    match run(cli, &output).await {
        Ok(code) => code,
        Err(err) => {
            output.error(&err);
            ExitCode::from(1)
        }
    }
}

async fn run(cli: Cli, output: &output::Output) -> anyhow::Result<ExitCode> {
    let folder = config::Folder::locate(cli.config_dir.as_deref())?;
    match cli.command {
        Command::Env(command) => config::env_command(&folder, command, output),
        Command::Login(login) => client::login(&folder, login, output).await,
        Command::Logout { env } => {
            folder.forget_token(&env)?;
            output.done(&format!("Logged out of {env}"));
            Ok(ExitCode::SUCCESS)
        }
        Command::Export(export) => estate::export(&folder, export, output).await,
        Command::Import(import) => estate::import(&folder, import, output).await,
        Command::Plan(plan) => estate::plan(&folder, plan, output).await,
        Command::Apply(apply) => estate::apply(&folder, apply, output).await,
        Command::Completions { shell } => {
            cli::completions(shell);
            Ok(ExitCode::SUCCESS)
        }
    }
}
