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

/// Every management scope, the ones an administrator alone holds included.
const EVERY_SCOPE: &str = "mgr:api_view mgr:api_create mgr:api_publish mgr:subscribe \
    mgr:tier_view mgr:tier_manage mgr:subscription_view mgr:subscription_block \
    mgr:mediation_policy_view mgr:api_workflow";

/// The operations listener's paths, described under a server of their own.
const OPERATIONS_PATHS: &str = "^/(healthz|readyz|metrics)$";

/// schemathesis (PyPI; run-tests installs it) on the served document, against the
/// listeners it names, as an administrator of every scope, with every check and a bounded
/// number of examples per operation. It must find no server error (ST101, ST102), no
/// status the document leaves out (ST103) and no answer that differs from its schema,
/// media type or headers (ST104 to ST110), and none of its method, deletion,
/// creation or authentication checks may fail. What it reports of requests the document
/// allows and a rule beyond it refuses (ST202), or the reverse (ST201), is printed, not
/// failed: docs/testing.md lists those rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_answer_the_document_does_not_describe() {
    let data_dir = harness::temp_dir();
    let ops = crate::observability::ops_setting();
    let control_plane =
        harness::start_control_plane(&harness::Backend::Sqlite, &data_dir, &[ops]).await;
    let api = harness::Client::new(&control_plane.url);
    let token = api
        .login("admin", harness::ADMIN_PASSWORD, EVERY_SCOPE)
        .await;
    let document = format!("{}{}", control_plane.url, harness::openapi::PATH);
    let config = data_dir.join("schemathesis.toml");
    std::fs::write(
        &config,
        "headers = { Authorization = \"Bearer ${APIM_SCHEMATHESIS_TOKEN}\" }\n",
    )
    .expect("config written");
    let management = [
        "--url",
        &control_plane.url,
        "--exclude-path-regex",
        OPERATIONS_PATHS,
    ];
    let ops_url = crate::observability::ops_url(&control_plane);
    let operations = ["--url", &ops_url, "--include-path-regex", OPERATIONS_PATHS];
    let mut tolerated = Vec::new();
    for (listener, selection) in [("management", management), ("operations", operations)] {
        let run = Command::new("python3")
            .args(["-m", "schemathesis.cli", "--no-color", "--config-file"])
            .arg(&config)
            .args(["run", &document, "--checks", "all", "--max-examples", "5"])
            .args([
                "--seed",
                "1",
                "--workers",
                "1",
                "--output-truncate",
                "false",
            ])
            .args(["--phases", "examples,coverage,fuzzing"])
            .args(selection)
            .env("APIM_SCHEMATHESIS_TOKEN", &token)
            .current_dir(&data_dir)
            .output()
            .expect("python3 runs: install Python 3 (run-tests does)");
        let said = String::from_utf8_lossy(&run.stdout).into_owned();
        assert!(
            said.contains("Test cases:"),
            "schemathesis did not run on the {listener} listener (pip install schemathesis; \
             run-tests does):\n{said}{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let (refused, beyond): (Vec<String>, Vec<String>) = findings(&said)
            .into_iter()
            .partition(|finding| !finding.starts_with("ST201") && !finding.starts_with("ST202"));
        assert!(
            refused.is_empty(),
            "schemathesis on the {listener} listener found {refused:?}:\n{said}"
        );
        tolerated.extend(beyond.iter().map(|f| format!("{listener}: {f}")));
    }
    eprintln!("requests whose answer a rule beyond the document decides: {tolerated:#?}");
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// The failures a schemathesis report lists, each `STnnn title` after the operation it
/// was found on (the report heads each operation's `____ METHOD /path ____`).
fn findings(report: &str) -> Vec<String> {
    let mut operation = "";
    let mut found = Vec::new();
    for line in report.lines() {
        if line.starts_with('_') && line.ends_with('_') {
            operation = line.trim_matches(|c| c == '_' || c == ' ');
        } else if let Some(finding) = line.strip_prefix("- ").filter(|f| is_finding(f)) {
            found.push(format!("{finding} ({operation})"));
        }
    }
    found
}

/// Whether a line is a finding: `STnnn ` and its title.
fn is_finding(line: &str) -> bool {
    line.len() > 6 && line.starts_with("ST") && line[2..5].bytes().all(|b| b.is_ascii_digit())
}
