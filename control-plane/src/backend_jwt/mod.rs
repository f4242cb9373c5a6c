//! WSO2's backend JWT (its "JWT generation"): gateways tell an API's backend who called
//! in an `X-JWT-Assertion` header they sign. Here are a tenant's switch (`queries`,
//! `admin`: `/api/am/admin/v0.14/backend-jwt`), the rotation of the signing key, and the
//! published public keys (`oauth`: `/oauth2/backend-jwks`); the manifest carries the key,
//! sealed, and the tenants that switched it on.

pub(crate) mod admin;
pub(crate) mod oauth;
pub mod queries;
