//! Per-API analytics for providers: the gateways' per-minute totals of requests, errors
//! and latencies per API and application (`queries`, `records`), what a report and a query
//! may be (`rules`), and the resources that take reports and answer queries (`handlers`).

pub(crate) mod handlers;
mod queries;
mod records;
mod rules;
