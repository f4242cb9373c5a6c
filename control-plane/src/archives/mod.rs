//! API archives as WSO2 API Manager 2.6's import/export service writes and reads them
//! (its `api-import-export` web application, which `apimcli` 2.x speaks to): each API a
//! project, `<Name>-<Version>/` with `Meta-information/api.json` (WSO2's API model, not
//! the REST API's), `swagger.json`, `Docs/`, `Image/`, `Sequences/` and `WSDL/`, zipped.
//! The project and WSO2's model are `apim_archive`'s; here, WSO2's model made from our
//! records (`records`), an API made into a project (`export`) and a project into an API
//! (`import`), and the service's handlers (`import_export`); applications' export and
//! import as WSO2 2.6's admin API has them (`applications`, handlers in `admin`).

pub(crate) mod admin;
pub(crate) mod applications;
pub(crate) mod export;
pub(crate) mod import;
pub(crate) mod import_export;
pub mod records;
