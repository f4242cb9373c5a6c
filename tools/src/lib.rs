//! The platform's tools, each started through the one launcher in `harness`: the
//! benchmark (`bench`), the fault command (`faults`), the stand-in for the customer's
//! legacy SOAP service (`legacy`) and the publication of the developer-management facade
//! (`dev_api`, used by `local-stack` and `publish-dev-api`), and Spin's outbound TLS from
//! the control plane's certificates (`spin_tls`, `spin-client-tls`).

pub mod bench;
pub mod dev_api;
pub mod faults;
pub mod legacy;
pub mod spin_tls;
