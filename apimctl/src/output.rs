//! What apimctl writes: text for people, or one JSON document (`--output json`) for
//! pipelines; errors on standard error either way.

use crate::cli::Format;

pub struct Output {
    format: Format,
}

impl Output {
    pub fn new(format: Format) -> Self {
        Self { format }
    }

    pub fn is_json(&self) -> bool {
        self.format == Format::Json
    }

    /// A command done.
    pub fn done(&self, said: &str) {
        match self.format {
            Format::Text => println!("{said}"),
            Format::Json => println!("{}", serde_json::json!({"result": said})),
        }
    }

    /// A list: each item a line of `line` in text, the array in JSON.
    pub fn list(&self, items: &[serde_json::Value], line: impl Fn(&serde_json::Value) -> String) {
        match self.format {
            Format::Text => items.iter().for_each(|item| println!("{}", line(item))),
            Format::Json => println!("{}", serde_json::Value::from(items.to_vec())),
        }
    }

    /// A document: `text` for people, `value` in JSON.
    pub fn document(&self, text: &str, value: &serde_json::Value) {
        match self.format {
            Format::Text => print!("{text}"),
            Format::Json => println!("{value}"),
        }
    }

    pub fn error(&self, err: &anyhow::Error) {
        match self.format {
            Format::Text => eprintln!("error: {err:#}"),
            Format::Json => eprintln!("{}", serde_json::json!({"error": format!("{err:#}")})),
        }
    }

    /// A bar for `total` steps of bulk work, drawn only on a terminal in text mode.
    pub fn progress(&self, total: usize) -> indicatif::ProgressBar {
        use std::io::IsTerminal as _;
        if self.is_json() || !std::io::stderr().is_terminal() {
            return indicatif::ProgressBar::hidden();
        }
        indicatif::ProgressBar::new(total as u64)
    }
}
