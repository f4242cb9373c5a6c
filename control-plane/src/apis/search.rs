//! WSO2's API search: `attribute:value` criteria, ANDed; values match as substrings
//! (case-insensitive) unless double-quoted; no attribute means the name.

use super::records::StoredApi;

/// One criterion of a search query.
#[derive(Debug)]
pub struct Criterion {
    attribute: String,
    value: String,
    exact: bool,
}

/// Parses a query string into criteria.
pub fn parse(query: &str) -> Result<Vec<Criterion>, String> {
    query
        .split_whitespace()
        .map(|term| {
            let (attribute, value) = term.split_once(':').unwrap_or(("name", term));
            let attribute = match attribute.to_ascii_lowercase().as_str() {
                "tag" => "tags".to_string(),
                a @ ("name" | "version" | "context" | "status" | "description" | "provider"
                | "tags" | "subcontext" | "doc" | "label") => a.to_string(),
                other => return Err(format!("Invalid search attribute '{other}'")),
            };
            if value.is_empty() {
                return Err("Search term is missing. Try again with valid search query.".into());
            }
            let exact = value.len() >= 2 && value.starts_with('"') && value.ends_with('"');
            let value = value.trim_matches('"').to_string();
            let value = if attribute == "provider" {
                value.replace("-AT-", "@")
            } else {
                value
            };
            Ok(Criterion {
                attribute,
                value,
                exact,
            })
        })
        .collect()
}

/// `text` with LIKE's wildcards and the escape character taken literally.
fn escape_like(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

impl Criterion {
    /// The condition on a column that checks this criterion in SQL, with `$n` for its
    /// value, and the value; `None` for criteria on the record's fields. Case is
    /// folded by the database's `LOWER`.
    pub fn sql(&self, n: usize) -> Option<(String, String)> {
        let column = match self.attribute.as_str() {
            "name" | "version" | "status" | "provider" => self.attribute.as_str(),
            "context" | "subcontext" => "context",
            _ => return None,
        };
        Some(if self.exact {
            (format!("LOWER({column}) = LOWER(${n})"), self.value.clone())
        } else {
            let pattern = format!("%{}%", escape_like(&self.value));
            (
                format!("LOWER({column}) LIKE LOWER(${n}) ESCAPE '\\'"),
                pattern,
            )
        })
    }

    /// Whether an API satisfies this criterion.
    pub fn matches(&self, api: &StoredApi) -> bool {
        let candidates: Vec<String> = match self.attribute.as_str() {
            "name" => vec![api.name.clone()],
            "version" => vec![api.version.clone()],
            "context" | "subcontext" => vec![api.context.clone()],
            "status" => vec![api.status.clone()],
            "description" => vec![api.record.description.clone().unwrap_or_default()],
            "provider" => vec![api.provider.clone()],
            "tags" => api.record.tags.clone().unwrap_or_default(),
            _ => vec![],
        };
        candidates.iter().any(|c| {
            if self.exact {
                c.eq_ignore_ascii_case(&self.value)
            } else {
                c.to_ascii_lowercase()
                    .contains(&self.value.to_ascii_lowercase())
            }
        })
    }
}
