//! Per-API analytics for providers: the gateways' per-minute totals of requests, errors
//! and latencies per API and application (`queries`, `records`), what a report and a query
//! may be (`rules`), how long they are kept (`retention`), and the resources that take reports
//! (`gateway_api`) and answer queries (`admin`: an API's; `store_api`: a consumer's own
//! application's).

pub(crate) mod admin;
pub(crate) mod gateway_api;
mod queries;
mod records;
pub(crate) mod retention;
mod rules;
pub(crate) mod store_api;
