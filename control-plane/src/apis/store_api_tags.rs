//! The store's tags, `GET /api/am/store/v0.14/tags`: the tags of the APIs the caller
//! sees in the store, each with how many of them carry it (WSO2's `TagList`).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};

use super::records::StoredApi;
use super::visibility::visible_apis;
use crate::error::Result;
use crate::http::STORE;
use crate::http::extract::QueryParams;
use crate::http::pagination::{ListEnvelope, Page};
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::tokens::MaybeCaller;

pub fn router() -> Routes {
    Routes::new().route(&format!("{STORE}/tags"), get(list_tags))
}

/// WSO2's `Tag`: a tag and the number of visible APIs that carry it.
#[derive(Debug, Serialize, PartialEq, Eq)]
struct Tag {
    name: String,
    weight: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<i64>,
    offset: Option<i64>,
}

/// `GET /tags`: anonymous callers see the tags of public APIs, as WSO2 does.
async fn list_tags(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    headers: HeaderMap,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<Tag>>> {
    let page = Page::new(q.limit, q.offset)?;
    let tags = count_tags(&visible_apis(&state, caller.as_ref(), &headers).await?);
    let total = tags.len() as i64;
    let link = |limit, offset| format!("/tags?limit={limit}&offset={offset}");
    Ok(Json(ListEnvelope::new(page.slice(tags), total, page, link)))
}

/// Every tag of `apis` by name, weighted by the APIs carrying it (an API naming a tag
/// twice counts once).
fn count_tags(apis: &[std::sync::Arc<StoredApi>]) -> Vec<Tag> {
    let mut weights: BTreeMap<&str, i64> = BTreeMap::new();
    for api in apis {
        let mut tags: Vec<&str> = api
            .record
            .tags
            .iter()
            .flatten()
            .map(String::as_str)
            .collect();
        tags.sort_unstable();
        tags.dedup();
        for tag in tags.into_iter().filter(|t| !t.trim().is_empty()) {
            *weights.entry(tag).or_default() += 1;
        }
    }
    weights
        .into_iter()
        .map(|(name, weight)| Tag {
            name: name.to_string(),
            weight,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::ApiRecord;

    fn api(tags: &[&str]) -> StoredApi {
        StoredApi {
            id: String::new(),
            tenant: String::new(),
            provider: String::new(),
            name: String::new(),
            version: String::new(),
            context: String::new(),
            status: String::new(),
            record: ApiRecord {
                tags: Some(tags.iter().map(|t| t.to_string()).collect()),
                ..ApiRecord::default()
            },
            mcp: None,
        }
    }

    #[test]
    fn tags_are_counted_once_per_api() {
        let apis = [
            api(&["phone", "mobile", "phone"]).into(),
            api(&["mobile", " "]).into(),
        ];
        let tags = count_tags(&apis);
        let tag = |name: &str, weight| Tag {
            name: name.into(),
            weight,
        };
        assert_eq!(tags, vec![tag("mobile", 2), tag("phone", 1)]);
    }
}
