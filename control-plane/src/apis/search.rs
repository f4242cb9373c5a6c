//! WSO2's API search: `attribute:value` criteria, ANDed; values match as substrings
//! (case-insensitive) unless double-quoted, `*` standing for any text (WSO2's
//! `APIUtil.getSingleSearchCriteria` wraps a value in `*`s and hands it to the registry's
//! wildcard search); no attribute means the name. `label:` matches a label's name
//! exactly; `doc:` matches APIs with a document whose name, summary or text has the value.

use std::collections::HashSet;

use super::records::StoredApi;

/// One criterion of a search query.
#[derive(Debug)]
pub struct Criterion {
    attribute: String,
    value: String,
    exact: bool,
    /// For `doc:`, the APIs whose documents match, once looked up ([`Criterion::on_documents`]).
    documented: Option<HashSet<String>>,
}

/// Parses a query string into criteria. A `doc:` criterion stands alone, as in WSO2
/// ("AND based search is not supported for doc"): each is a scan of documents' text.
pub fn parse(query: &str) -> Result<Vec<Criterion>, String> {
    let criteria = parse_terms(query)?;
    if criteria.len() > 1 && criteria.iter().any(|c| c.attribute == "doc") {
        return Err("AND based search is not supported for doc".into());
    }
    Ok(criteria)
}

fn parse_terms(query: &str) -> Result<Vec<Criterion>, String> {
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
                documented: None,
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

/// Looks up, for each `doc:` criterion, the `tenant`'s APIs whose documents match it; in
/// the store (`store_only`) only the documents it shows count.
pub async fn look_up_documents(
    db: &sqlx::AnyPool,
    criteria: &mut [Criterion],
    tenant: &str,
    store_only: bool,
) -> sqlx::Result<()> {
    for criterion in criteria.iter_mut() {
        if let Some(text) = criterion.on_documents() {
            let pattern = like_pattern(&text.to_ascii_lowercase());
            let apis = crate::documents::apis_with_documents_like(db, tenant, &pattern, store_only)
                .await?;
            criterion.set_documented(apis);
        }
    }
    Ok(())
}

/// A `LIKE` pattern for `value` anywhere in a text, its `*`s standing for any text.
fn like_pattern(value: &str) -> String {
    let pieces: Vec<String> = value.split('*').map(escape_like).collect();
    format!("%{}%", pieces.join("%"))
}

/// Whether `text` holds `pattern`'s `*`-separated pieces in order (ignoring ASCII case).
fn contains_pieces(text: &str, pattern: &str) -> bool {
    // ASCII folding, as SQLite's LOWER folds, so that both databases and the store's
    // in-memory matching agree.
    let text = text.to_ascii_lowercase();
    let mut rest = text.as_str();
    for piece in pattern.to_ascii_lowercase().split('*') {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

impl Criterion {
    /// The text a `doc:` criterion looks for in documents, if this is one.
    pub fn on_documents(&self) -> Option<&str> {
        (self.attribute == "doc").then_some(self.value.as_str())
    }

    /// Gives a `doc:` criterion the APIs whose documents match it.
    pub fn set_documented(&mut self, apis: HashSet<String>) {
        self.documented = Some(apis);
    }

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
            let pattern = like_pattern(&self.value);
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
            "label" => {
                let names = api.record.labels.iter().flatten();
                let wanted = self.value.trim_matches('*');
                return names
                    .filter_map(|label| label["name"].as_str())
                    .any(|name| name.eq_ignore_ascii_case(wanted));
            }
            "doc" => {
                return self
                    .documented
                    .as_ref()
                    .is_some_and(|apis| apis.contains(&api.id));
            }
            _ => vec![],
        };
        candidates.iter().any(|c| {
            if self.exact {
                c.eq_ignore_ascii_case(&self.value)
            } else {
                contains_pieces(c, &self.value)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(name: &str, provider: &str, labels: serde_json::Value) -> StoredApi {
        let record = serde_json::from_value(serde_json::json!({"labels": labels})).unwrap();
        StoredApi {
            id: format!("{name}-id"),
            tenant: "carbon.super".into(),
            provider: provider.into(),
            name: name.into(),
            version: "v1".into(),
            context: format!("/{name}"),
            status: "PUBLISHED".into(),
            record,
            mcp: None,
        }
    }

    fn matching(query: &str, api: &StoredApi) -> bool {
        parse(query).unwrap().iter().all(|c| c.matches(api))
    }

    /// `*` stands for any text, within the implicit substring; LIKE's own wildcards stay
    /// literal; a quoted value is exact.
    #[test]
    fn stars_are_wildcards_and_like_wildcards_are_not() {
        let pets = api("PetStore", "wso2admin", serde_json::json!(null));
        assert!(matching("provider:wso2*", &pets));
        assert!(matching("name:Pet*Store", &pets));
        assert!(matching("name:p*t", &pets));
        assert!(!matching("name:Store*Pet", &pets));
        assert!(!matching("name:Pet_Store", &pets));
        assert!(!matching("name:\"Pet*\"", &pets));
        assert_eq!(like_pattern("a*b%"), "%a%b\\%%");
        let (condition, value) = parse("provider:wso2*").unwrap()[0].sql(2).unwrap();
        assert!(condition.contains("LIKE LOWER($2)"), "{condition}");
        assert_eq!(value, "%wso2%%");
    }

    /// A label matches by its name, exactly (ignoring case); `doc:` matches only the APIs
    /// looked up for it.
    #[test]
    fn labels_match_by_name_and_documents_by_lookup() {
        let labelled = api(
            "Edge",
            "admin",
            serde_json::json!([{"name": "Public-Edge"}]),
        );
        assert!(matching("label:public-edge", &labelled));
        assert!(!matching("label:Public", &labelled));
        assert!(!matching(
            "label:Public-Edge",
            &api("Bare", "admin", serde_json::json!(null))
        ));
        assert!(parse("doc:guide name:x").is_err(), "doc: stands alone");
        let mut criteria = parse("doc:guide").unwrap();
        assert_eq!(criteria[0].on_documents(), Some("guide"));
        assert!(!criteria[0].matches(&labelled), "nothing looked up yet");
        criteria[0].set_documented(HashSet::from(["Edge-id".to_string()]));
        assert!(criteria[0].matches(&labelled));
    }
}
