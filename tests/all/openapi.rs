//! The control plane's own OpenAPI 3.1 document: served unauthenticated at
//! `/api/am/openapi.json`, the same the harness checks every answer against, and valid by
//! openapi-spec-validator (PyPI; `run-tests` installs it). Which routes it describes is
//! checked in the control plane's unit tests, against the router itself.

use std::process::Command;

use crate::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_document_is_the_checked_one_and_valid() {
    crate::run(crate::Kind::Sqlite, "openapi_document", |env| {
        Box::pin(served_document(env))
    })
    .await;
}

async fn served_document(env: Env) {
    let reply = env.api.get(harness::openapi::PATH, "").await.expect(200);
    assert_eq!(
        reply.headers["content-type"], "application/json",
        "the document is JSON"
    );
    assert_eq!(&reply.body, harness::openapi::document());
    let file = env.data_dir.join("openapi.json");
    std::fs::write(&file, reply.body.to_string()).expect("document written");
    let validation = Command::new("python3")
        .args(["-m", "openapi_spec_validator", "--schema", "3.1"])
        .arg(&file)
        .output()
        .expect("python3 runs: install Python 3 (run-tests does)");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&validation.stdout),
        String::from_utf8_lossy(&validation.stderr)
    );
    assert!(
        validation.status.success(),
        "openapi-spec-validator refused the document (pip install openapi-spec-validator if it \
         is missing; run-tests does):\n{said}"
    );
    assert!(said.contains("OK"), "{said}");
}
