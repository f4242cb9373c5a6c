//! Secrets on the command line: a flag's value shows in `ps` to every user of the machine,
//! so each secret-bearing setting (one whose value `--help` hides) given as a flag is named
//! with the environment variable that should carry it instead.

use clap::parser::ValueSource;
use clap::{ArgMatches, Command, CommandFactory, FromArgMatches};

/// A secret given as a flag: the flag's long name and the environment variable to use.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SecretFlag {
    pub flag: String,
    pub variable: String,
}

/// The secret-bearing arguments of `command` that `matches` took from the command line.
pub fn secrets_given_as_flags(command: &Command, matches: &ArgMatches) -> Vec<SecretFlag> {
    let from_command_line = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
    command
        .get_arguments()
        .filter(|arg| arg.is_hide_env_values_set() && from_command_line(arg.get_id().as_str()))
        .map(|arg| SecretFlag {
            flag: arg.get_long().unwrap_or_default().to_string(),
            variable: arg
                .get_env()
                .map(|env| env.to_string_lossy().into_owned())
                .unwrap_or_default(),
        })
        .collect()
}

/// Parses the process's command line and environment into `C`, first warning on stderr of
/// each secret given as a flag; exits as clap does on a bad command line.
pub fn parse_warning_of_secrets<C: CommandFactory + FromArgMatches>() -> C {
    let command = C::command();
    let matches = command.clone().get_matches();
    for SecretFlag { flag, variable } in secrets_given_as_flags(&command, &matches) {
        eprintln!(
            "warning: --{flag} shows in `ps` to every user of this machine; set {variable} instead"
        );
    }
    C::from_arg_matches(&matches).unwrap_or_else(|err| err.exit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Settings {
        #[arg(long, env = "T_PASSWORD", hide_env_values = true)]
        password: Option<String>,
        #[arg(long, env = "T_USER")]
        user: Option<String>,
    }

    fn given(args: &[&str]) -> Vec<SecretFlag> {
        let command = Settings::command();
        let matches = command.clone().try_get_matches_from(args).unwrap();
        secrets_given_as_flags(&command, &matches)
    }

    /// A secret given as a flag is named with its variable; a plain flag is not.
    #[test]
    fn a_secret_flag_is_named_and_a_plain_one_is_not() {
        let named = given(&["t", "--password", "pw", "--user", "root"]);
        let expected = SecretFlag {
            flag: "password".into(),
            variable: "T_PASSWORD".into(),
        };
        assert_eq!(named, vec![expected]);
        assert!(given(&["t", "--user", "root"]).is_empty());
        assert!(given(&["t"]).is_empty());
    }
}
