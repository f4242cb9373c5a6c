//! A stand-in for the customer's legacy SOAP service, "RepoDeWS" (a Spring-WS app): the
//! `legacy-soap` binary, and helpers for tests that run it and check what clients send it.
//!
//! Its contract lives in `tools/fixtures/legacy-soap/`: `developers.xsd` (the customer's
//! schema), `data.sql` (seed rows), `soapui-project.xml` (their SoapUI requests), and
//! `soap-envelope.xsd` (ours: a SOAP 1.1 envelope whose payload developers.xsd checks).
//!
//! It answers as the running original does (`../shared/reference/legacy-soap-repodews/
//! BEHAVIOUR.md`), not as kindly as its contract might allow: getDeveloper of an unknown
//! user name is a Server fault with the runtime's text, addDeveloper of a taken one
//! answers without a developer and changes nothing, addRepo adds whatever it is given.
//! And by default it reads request bodies as strict SOAP stacks do, only with
//! Content-Length ([`Framing`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Once;

use harness::ServerProcess;

pub mod config;
pub mod service;
pub mod soap;
pub mod store;
pub mod wsdl;

/// HTTP Basic user the service expects by default.
pub const SOAP_USER: &str = "hydrogen";
/// HTTP Basic password the service expects by default.
pub const SOAP_PASSWORD: &str = "pandaAsthma";

/// How the stand-in reads request bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Only with Content-Length; a chunked body gets 411 (the default).
    Strict,
    /// Chunked bodies too, as Tomcat does.
    AcceptChunked,
}

/// Starts `legacy-soap` (strict) on a free port with its database at
/// `data_dir/developers.db` (seeded when new), recording request bodies in `record_dir` if
/// given. Its endpoint is `format!("{}/ws", process.url)`.
pub async fn start_legacy_soap(data_dir: &Path, record_dir: Option<&Path>) -> ServerProcess {
    start_legacy_soap_at("127.0.0.1:0", data_dir, record_dir).await
}

/// Like [`start_legacy_soap`], on a given address (e.g. one from [`harness::free_port`]).
pub async fn start_legacy_soap_at(
    addr: &str,
    data_dir: &Path,
    record_dir: Option<&Path>,
) -> ServerProcess {
    start_legacy_soap_framed(addr, data_dir, record_dir, Framing::Strict).await
}

/// Like [`start_legacy_soap_at`], reading bodies as `framing` says.
pub async fn start_legacy_soap_framed(
    addr: &str,
    data_dir: &Path,
    record_dir: Option<&Path>,
    framing: Framing,
) -> ServerProcess {
    let db = data_dir.join("developers.db");
    let mut env = vec![
        ("LEGACY_SOAP_ADDR", addr.to_string()),
        ("LEGACY_SOAP_DB", db.display().to_string()),
        (
            "LEGACY_SOAP_ACCEPT_CHUNKED",
            (framing == Framing::AcceptChunked).to_string(),
        ),
    ];
    if let Some(dir) = record_dir {
        env.push(("LEGACY_SOAP_RECORD_DIR", dir.display().to_string()));
    }
    ServerProcess::start(&harness::binary("legacy-soap"), &env).await
}

/// Takes the database of a running `legacy-soap` (started on `data_dir`) away from it, as
/// when the customer's database is down: every operation then answers a Server fault
/// ("Internal error"). [`restore_database`] gives it back.
pub async fn break_database(data_dir: &Path) {
    alter_tables(data_dir, "", "_down").await;
}

/// Undoes [`break_database`].
pub async fn restore_database(data_dir: &Path) {
    alter_tables(data_dir, "_down", "").await;
}

async fn alter_tables(data_dir: &Path, from: &str, to: &str) {
    let options =
        sqlx::sqlite::SqliteConnectOptions::new().filename(data_dir.join("developers.db"));
    let pool = sqlx::SqlitePool::connect_with(options)
        .await
        .expect("open the stand-in's database");
    for table in ["developer", "repo"] {
        sqlx::raw_sql(&format!("ALTER TABLE {table}{from} RENAME TO {table}{to}"))
            .execute(&pool)
            .await
            .expect("rename a table");
    }
    pool.close().await;
}

/// Sends one SOAP 1.1 request (`text/xml`, empty SOAPAction, HTTP Basic); returns the
/// status and the body.
pub async fn soap_call(
    endpoint: &str,
    user: &str,
    password: &str,
    envelope: &str,
) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(endpoint)
        .basic_auth(user, Some(password))
        .header("Content-Type", "text/xml; charset=utf-8")
        .header("SOAPAction", "\"\"")
        .body(envelope.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("SOAP call to {endpoint}: {e}"));
    let status = response.status().as_u16();
    (status, response.text().await.expect("SOAP response body"))
}

/// The request bodies a `legacy-soap` started with `record_dir` received, in order.
pub fn recorded_requests(record_dir: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(record_dir)
        .map(|entries| {
            entries
                .filter_map(|entry| {
                    let path = entry.ok()?.path();
                    Some((service::record_number(path.file_name()?)?, path))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .map(|(_, path)| std::fs::read(&path).expect("recorded request"))
        .collect()
}

/// Checks a whole SOAP 1.1 envelope with `xmllint --schema` against
/// `tools/fixtures/legacy-soap/soap-envelope.xsd`, so that the Body payload is checked by
/// the customer's developers.xsd. Requests, responses and faults all pass it when valid.
/// Returns xmllint's messages when it is not.
pub fn validate_soap_request(xml: &[u8]) -> Result<(), String> {
    let schema = fixture("soap-envelope.xsd");
    xmllint(
        &[
            "--noout",
            "--nonet",
            "--schema",
            &schema.display().to_string(),
        ],
        xml,
    )
}

/// Checks that `xml` is well-formed, with `xmllint --noout`.
pub fn check_well_formed(xml: &[u8]) -> Result<(), String> {
    xmllint(&["--noout", "--nonet"], xml)
}

/// A file of `tools/fixtures/legacy-soap/`.
pub fn fixture(name: &str) -> PathBuf {
    harness::workspace_root()
        .join("tools/fixtures/legacy-soap")
        .join(name)
}

/// Runs xmllint on `input` (as its standard input); its messages when it fails.
fn xmllint(args: &[&str], input: &[u8]) -> Result<(), String> {
    static READY: Once = Once::new();
    READY.call_once(ensure_xmllint);
    let mut child = Command::new("xmllint")
        .args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run xmllint");
    // A failed write means xmllint stopped early; its exit status tells why.
    let _ = std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), input);
    let output = child.wait_with_output().expect("xmllint output");
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// Installs xmllint (Debian's libxml2-utils) when it is not on PATH; panics if it cannot.
pub fn ensure_xmllint() {
    let present = || {
        Command::new("xmllint")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if present() {
        return;
    }
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    let install = || apt(&["install", "-y", "-qq", "libxml2-utils"]);
    let installed = install() || (apt(&["update", "-qq"]) && install());
    assert!(
        installed && present(),
        "xmllint is needed to validate SOAP messages and could not be installed: \
         run `apt-get install libxml2-utils`"
    );
}
