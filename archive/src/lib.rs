//! API projects as WSO2 API Manager 2.6's import/export service writes and reads them:
//! each API a folder `<Name>-<Version>/` with `Meta-information/api.json` (WSO2's model of
//! the API), `swagger.json`, `Docs/`, `Image/`, `Sequences/` and `WSDL/`, zipped. The
//! project in memory and its zip, bounded both ways (`project`), and WSO2's model read as
//! the REST API's record (`model`), for the control plane's import/export service; and
//! what importing a project over an API would change (`plan`), for `apimctl`.

pub mod model;
pub mod plan;
pub mod project;

pub use model::{
    ApiIdentifier, ApiJson, DocJson, TierName, check_plain_yaml, from_file, from_yaml,
    provider_in_project,
};
pub use project::{MAX_ARCHIVE_BYTES, Project, Refusal};
