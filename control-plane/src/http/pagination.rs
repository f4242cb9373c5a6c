//! `limit`/`offset` paging and WSO2's list envelope `{count, next, previous, list}`.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Page size when none is asked for.
const DEFAULT_LIMIT: i64 = 25;

/// A page of a list: where it starts and how long it is.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    /// Items per page.
    pub limit: i64,
    /// Items skipped.
    pub offset: i64,
}

impl Page {
    /// Checks the query's `limit` and `offset`.
    pub fn new(limit: Option<i64>, offset: Option<i64>) -> Result<Self> {
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        let offset = offset.unwrap_or(0);
        if limit < 1 || offset < 0 {
            return Err(Error::Invalid(
                "limit must be at least 1 and offset must not be negative".into(),
            ));
        }
        Ok(Page { limit, offset })
    }

    /// This page's slice of all matching items.
    pub fn slice<T>(&self, items: Vec<T>) -> Vec<T> {
        items
            .into_iter()
            .skip(self.offset as usize)
            .take(self.limit as usize)
            .collect()
    }
}

/// `pagination` of WSO2's APIList.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Pagination {
    offset: i64,
    limit: i64,
    total: i64,
}

/// A list response.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ListEnvelope<T> {
    count: usize,
    next: String,
    previous: String,
    list: Vec<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pagination: Option<Pagination>,
}

impl<T> ListEnvelope<T> {
    /// One page of `total` matches; `link` renders the URL of the page at an offset
    /// (missing links are empty strings, as in WSO2).
    pub fn new(list: Vec<T>, total: i64, page: Page, link: impl Fn(i64, i64) -> String) -> Self {
        let end = page.offset.saturating_add(page.limit);
        let next = if end < total {
            link(page.limit, end)
        } else {
            String::new()
        };
        let previous = if page.offset > 0 {
            link(page.limit, (page.offset - page.limit).max(0))
        } else {
            String::new()
        };
        ListEnvelope {
            count: list.len(),
            next,
            previous,
            list,
            pagination: None,
        }
    }

    /// Adds the `pagination` member the APIList has.
    pub fn with_pagination(mut self, total: i64, page: Page) -> Self {
        self.pagination = Some(Pagination {
            offset: page.offset,
            limit: page.limit,
            total,
        });
        self
    }
}
