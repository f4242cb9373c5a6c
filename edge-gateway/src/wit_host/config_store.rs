//! `wasi:config/store@0.2.0-draft-2024-09-27`: read-only variables for the component.
//!
//! The variables are fixed at start-up (from `--var` and the dedicated
//! settings) and shared by every instance.

use std::collections::BTreeMap;
use std::sync::Arc;

use wasmtime::component::{HasData, Linker};

use crate::wit_host::bindings::wasi::config::store as wit;

/// Named string values readable by the component.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variables(BTreeMap<String, String>);

impl Variables {
    /// Sets `name` to `value`, returning the previous value if there was one.
    pub fn insert(&mut self, name: String, value: String) -> Option<String> {
        self.0.insert(name, value)
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// All variables, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The number of variables.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no variable is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Parses `NAME=VALUE`. The name is trimmed and must be non-empty and made of
/// ASCII letters, digits, `_`, `-` and `.`; the value is kept verbatim and may
/// contain `=`.
pub fn parse_variable(raw: &str) -> Result<(String, String), String> {
    let (name, value) = raw
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, got {raw:?}"))?;
    let name = name.trim();
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() || !name.chars().all(valid) {
        return Err(format!(
            "invalid variable name {name:?}: use letters, digits, '_', '-' or '.'"
        ));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// What the `wasi:config/store` host functions see of a store's data.
pub struct ConfigView<'a> {
    /// The shared variables.
    pub vars: &'a Arc<Variables>,
}

/// [`HasData`] marker selecting [`ConfigView`] for the linker.
pub struct ConfigData;

impl HasData for ConfigData {
    type Data<'a> = ConfigView<'a>;
}

impl wit::Host for ConfigView<'_> {
    fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, wit::Error>> {
        Ok(Ok(self.vars.get(&key).map(str::to_owned)))
    }

    fn get_all(&mut self) -> wasmtime::Result<Result<Vec<(String, String)>, wit::Error>> {
        let all = self
            .vars
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Ok(Ok(all))
    }
}

/// Adds `wasi:config/store` to `linker`, reading variables through `view`.
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> ConfigView<'_>,
) -> wasmtime::Result<()> {
    wit::add_to_linker::<T, ConfigData>(linker, view)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wit_host::bindings::wasi::config::store::Host as _;

    #[test]
    fn parses_name_value_pairs() {
        assert_eq!(
            parse_variable(" key_1 =a=b ").unwrap(),
            ("key_1".to_owned(), "a=b ".to_owned())
        );
        assert_eq!(
            parse_variable("empty=").unwrap(),
            ("empty".to_owned(), String::new())
        );
        assert!(parse_variable("missing").is_err());
        assert!(parse_variable("=x").is_err());
        assert!(parse_variable("bad name=x").is_err());
    }

    #[test]
    fn host_functions_expose_the_variables() {
        let mut vars = Variables::default();
        vars.insert("b".into(), "2".into());
        vars.insert("a".into(), "1".into());
        let vars = Arc::new(vars);
        let mut view = ConfigView { vars: &vars };
        assert_eq!(view.get("a".into()).unwrap().unwrap().as_deref(), Some("1"));
        assert_eq!(view.get("zz".into()).unwrap().unwrap(), None);
        let all = view.get_all().unwrap().unwrap();
        assert_eq!(
            all,
            vec![("a".into(), "1".into()), ("b".into(), "2".into())]
        );
    }
}
