//! API management control plane: client registration, the OAuth 2.0 token service, the
//! publisher and the store, speaking WSO2 API Manager's REST API v0.14.

pub mod analytics;
pub mod apis;
pub mod app;
pub mod applications;
pub mod authorizations;
pub mod certificates;
pub mod clients;
pub mod config;
pub mod db;
pub mod documents;
pub mod environments;
pub mod error;
pub mod fleet;
pub mod http;
pub mod keys;
pub mod listener;
pub mod manifest;
pub mod mediation;
pub mod openapi;
pub mod ops;
pub mod scopes;
pub mod secrets;
pub mod server;
pub mod sessions;
pub mod signing;
pub mod state;
pub mod subscriptions;
pub mod thumbnails;
pub mod tiers;
pub mod tokens;
pub mod users;
pub mod web;
pub mod workflows;
pub mod wsdl;
pub mod xml;
