//! Pages in a real browser: Debian's Chromium, headless, driven by chromedriver over
//! WebDriver (fantoccini), and axe-core (npm, `tests/browser/`) run in the page for
//! accessibility. A test that needs them fails, saying what to install, when they are
//! missing: `run-tests` installs both.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::{Child, Command};

/// Where chromedriver and Chromium are on Debian.
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

/// A headless Chromium, and the chromedriver that drives it (ended on drop).
pub struct Chromium {
    /// The WebDriver session.
    pub client: fantoccini::Client,
    driver: Child,
}

impl Drop for Chromium {
    /// Ends chromedriver and the Chromium it started (its process group), also when a
    /// test fails before it closes the session: killed alone, chromedriver would leave
    /// Chromium running.
    fn drop(&mut self) {
        if let Some(pid) = self.driver.id() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.driver.start_kill();
    }
}

/// axe-core's script, as `npm ci --prefix tests/browser` installs it.
fn axe_script() -> String {
    let path: PathBuf =
        crate::workspace_root().join("tests/browser/node_modules/axe-core/axe.min.js");
    std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!("axe-core is missing at {} ({err}): run `npm ci --prefix tests/browser` (run-tests does)", path.display())
    })
}

impl Chromium {
    /// Starts chromedriver on a free port and a headless Chromium session through it.
    pub async fn start() -> Self {
        for binary in [CHROMEDRIVER, CHROMIUM] {
            assert!(
                std::path::Path::new(binary).exists(),
                "{binary} is missing: apt-get install chromium chromium-driver (run-tests does)"
            );
        }
        let port = crate::free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver starts");
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": CHROMIUM,
                // Root in a container has no user namespace for Chromium's sandbox.
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,900"],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let mut last = None;
        for _ in 0..100 {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match fantoccini::ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&url)
                .await
            {
                Ok(client) => return Chromium { client, driver },
                Err(err) => last = Some(err),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("chromedriver did not start a session: {last:?}");
    }

    /// Opens `url` and waits for the page to load.
    pub async fn open(&self, url: &str) {
        self.client.goto(url).await.expect("the page opens");
    }

    /// axe-core's violations on the page shown whose impact is serious or critical, each
    /// `id: help (nodes)`.
    pub async fn serious_accessibility_violations(&self) -> Vec<String> {
        self.client
            .execute(&axe_script(), vec![])
            .await
            .expect("axe-core loads into the page");
        let run = r#"
            const done = arguments[arguments.length - 1];
            axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']}})
               .then(result => done(result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.html)}))))
               .catch(error => done([{id: 'axe-error', impact: 'critical', help: String(error), nodes: []}]));
        "#;
        let violations = self
            .client
            .execute_async(run, vec![])
            .await
            .expect("axe-core runs");
        violations
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
            .map(describe)
            .collect()
    }

    /// The page's HTML.
    pub async fn source(&self) -> String {
        self.client.source().await.expect("the page's source")
    }

    /// Fills the field `id` with `text`.
    pub async fn fill(&self, id: &str, text: &str) {
        let field = self
            .client
            .find(fantoccini::Locator::Id(id))
            .await
            .unwrap_or_else(|err| panic!("a field #{id}: {err}"));
        field.send_keys(text).await.expect("typed");
    }

    /// Replaces what the field `id` holds with `text`.
    pub async fn replace(&self, id: &str, text: &str) {
        let field = self
            .client
            .find(fantoccini::Locator::Id(id))
            .await
            .unwrap_or_else(|err| panic!("a field #{id}: {err}"));
        field.clear().await.expect("cleared");
        field.send_keys(text).await.expect("typed");
    }

    /// Chooses the option labelled `label` of the list `id`.
    pub async fn choose(&self, id: &str, label: &str) {
        let list = self
            .client
            .find(fantoccini::Locator::Id(id))
            .await
            .unwrap_or_else(|err| panic!("a list #{id}: {err}"));
        list.select_by_label(label)
            .await
            .unwrap_or_else(|err| panic!("an option '{label}' of #{id}: {err}"));
    }

    /// Clicks the button whose text is `label`.
    pub async fn click_button(&self, label: &str) {
        let xpath = format!("//button[normalize-space(.)='{label}']");
        let button = self
            .client
            .find(fantoccini::Locator::XPath(&xpath))
            .await
            .unwrap_or_else(|err| panic!("a button '{label}': {err}"));
        button.click().await.expect("clicked");
    }

    /// Waits (ten seconds at most) until the page holds `text`.
    pub async fn wait_for_text(&self, text: &str) {
        for _ in 0..200 {
            if self.source().await.contains(text) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the page never held {text:?}: {}", self.source().await);
    }

    /// Waits (ten seconds at most) until the browser is at a URL starting with `prefix`.
    pub async fn wait_for_url(&self, prefix: &str) {
        for _ in 0..200 {
            if self.current_url().await.starts_with(prefix) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "the browser never went to {prefix}: it is at {}",
            self.current_url().await
        );
    }

    /// The URL the browser is at.
    pub async fn current_url(&self) -> String {
        self.client.current_url().await.expect("a URL").to_string()
    }

    /// Every URL the page shown has loaded or called since it opened (the Resource Timing
    /// entries: scripts, styles, images, fetches), and the page's own.
    pub async fn requested_urls(&self) -> Vec<String> {
        let urls = self
            .client
            .execute(
                "return [location.href].concat(performance.getEntriesByType('resource').map(e => e.name));",
                vec![],
            )
            .await
            .expect("the page's resource entries");
        urls.as_array()
            .into_iter()
            .flatten()
            .filter_map(|url| url.as_str().map(str::to_string))
            .collect()
    }

    /// Saves what the window shows as a PNG at `path`.
    pub async fn screenshot(&self, path: &std::path::Path) {
        let png = self.client.screenshot().await.expect("a screenshot");
        std::fs::write(path, png).unwrap_or_else(|err| panic!("write {}: {err}", path.display()));
    }

    /// Ends the session.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

fn describe(violation: &Value) -> String {
    format!(
        "{}: {} ({})",
        violation["id"].as_str().unwrap_or_default(),
        violation["help"].as_str().unwrap_or_default(),
        violation["nodes"]
    )
}
