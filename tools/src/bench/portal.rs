//! The developer portal at scale (`--only portal`): a control plane (the release build,
//! SQLite) with `--portal-apis` published APIs, each with a description and two tags.
//! Eight clients at once ask each page `--portal-requests` times in all: the catalogue's
//! first page, a search (`tag:` with the store's syntax), a deep page, an API's page,
//! anonymous and signed in (the session cookie of a real sign-in through the pages). Then
//! what a page ships of script: the portal's one script, raw and gzip-compressed.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::task::JoinSet;

use super::Options;
use super::report::{int, section_head};
use super::stats::Latencies;
use harness::signin::{Browser, control_plane_at_its_issuer};
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, Backend, Client};

/// Clients asking at once.
const CLIENTS: usize = 8;
/// The bound the issue sets on the catalogue's p99, ms.
const P99_BOUND_MS: f64 = 50.0;
/// Most script a page may ship, compressed, bytes.
const SCRIPT_BOUND: usize = 100 * 1024;

/// One page measured.
pub struct PageRun {
    /// What was asked.
    pub label: String,
    pub latencies: Latencies,
    /// Answers a second.
    pub rate: f64,
    /// The page's HTML, bytes.
    pub bytes: usize,
}

/// What the part measured.
pub struct PortalRuns {
    pub apis: usize,
    /// How long publishing them took, s.
    pub publish_seconds: f64,
    pub pages: Vec<PageRun>,
    /// The portal's script: raw and gzip'd bytes.
    pub script: (usize, usize),
}

/// Runs the part.
pub async fn measure(options: &Options) -> PortalRuns {
    let data_dir = harness::temp_dir();
    let control_plane = control_plane_at_its_issuer(&Backend::Sqlite, &data_dir, &[]).await;
    let api = Client::new(&control_plane.url);
    let admin = api
        .login("admin", ADMIN_PASSWORD, harness::stack::ALL_SCOPES)
        .await;
    let started = Instant::now();
    let mut first = String::new();
    for n in 0..options.portal_apis {
        let mut record = harness::stack::api_record(&format!("Api{n:04}"), "http://127.0.0.1:9/");
        record["context"] = json!(format!("/api{n:04}"));
        record["description"] = json!(format!("API number {n}, for the portal's benchmark"));
        record["tags"] = json!([format!("group{}", n % 10), "bench"]);
        let id = Steps::new(&api, &admin).publish_api(&record).await.unwrap();
        if n == 0 {
            first = id;
        }
    }
    let publish_seconds = started.elapsed().as_secs_f64();
    api.add_user("reader", "reader-pw-1", &["subscriber"]).await;
    let cookie = signed_in_cookie(&control_plane.url, "reader", "reader-pw-1").await;
    let last_page = options.portal_apis.div_ceil(24).max(1);
    let targets = [
        (
            "catalogue, first page".to_string(),
            "/devportal".to_string(),
        ),
        (
            "search `tag:group3`".into(),
            "/devportal?q=tag%3Agroup3".into(),
        ),
        (
            format!("catalogue, page {last_page}"),
            format!("/devportal?page={last_page}"),
        ),
        ("an API's page".into(), format!("/devportal/apis/{first}")),
    ];
    let mut pages = Vec::new();
    for (who, cookie) in [("anonymous", None), ("signed in", Some(cookie.as_str()))] {
        for (label, path) in &targets {
            let url = format!("{}{path}", control_plane.url);
            let mut run = measure_page(&url, cookie, options.portal_requests).await;
            run.label = format!("{label}, {who}");
            pages.push(run);
        }
    }
    let script = script_sizes(&format!("{}/devportal/console.js", control_plane.url)).await;
    control_plane.stop().await;
    PortalRuns {
        apis: options.portal_apis,
        publish_seconds,
        pages,
        script,
    }
}

/// The portal's session cookie (`name=value`) of `user` after a sign-in through the pages.
async fn signed_in_cookie(base: &str, user: &str, password: &str) -> String {
    let browser = Browser::new(base);
    let started = browser.open("/devportal/login?next=%2Fdevportal").await;
    let authorize = browser.follow(started).await;
    let callback = browser.sign_in_and_allow(authorize, user, password).await;
    let back = browser.open(callback.as_str()).await;
    back.headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("apim_devportal="))
        .and_then(|v| v.split(';').next())
        .expect("the sign-in sets the portal's session cookie")
        .to_string()
}

/// `requests` GETs of `url` by [`CLIENTS`] clients at once, one after another each.
async fn measure_page(url: &str, cookie: Option<&str>, requests: usize) -> PageRun {
    let http = reqwest::Client::new();
    // Warm: the first answers fill caches as any visitor's would.
    let mut bytes = 0;
    for _ in 0..20 {
        bytes = get(&http, url, cookie).await.1;
    }
    let started = Instant::now();
    let mut clients = JoinSet::new();
    for _ in 0..CLIENTS {
        let (http, url, cookie) = (http.clone(), url.to_string(), cookie.map(str::to_string));
        let each = requests / CLIENTS;
        clients.spawn(async move {
            let mut samples = Vec::with_capacity(each);
            for _ in 0..each {
                samples.push(get(&http, &url, cookie.as_deref()).await.0);
            }
            samples
        });
    }
    let mut samples: Vec<Duration> = Vec::new();
    while let Some(done) = clients.join_next().await {
        samples.extend(done.expect("a client"));
    }
    let seconds = started.elapsed().as_secs_f64();
    PageRun {
        label: String::new(),
        rate: samples.len() as f64 / seconds,
        latencies: Latencies::of(&samples),
        bytes,
    }
}

/// One GET: how long its whole answer took, and its size; a page that is not 200 stops
/// the run.
async fn get(http: &reqwest::Client, url: &str, cookie: Option<&str>) -> (Duration, usize) {
    let started = Instant::now();
    let mut request = http.get(url);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.expect("the control plane answers");
    let status = response.status();
    let body = response.bytes().await.expect("a body");
    assert_eq!(status, 200, "{url}: {}", String::from_utf8_lossy(&body));
    (started.elapsed(), body.len())
}

/// The script's size as served and gzip'd (`gzip -9`, as a server compressing it would
/// send it at best).
async fn script_sizes(url: &str) -> (usize, usize) {
    let script = reqwest::get(url)
        .await
        .expect("the script")
        .bytes()
        .await
        .expect("its bytes");
    let path = harness::temp_dir().join("console.js");
    std::fs::write(&path, &script).expect("written");
    let compressed = std::process::Command::new("gzip")
        .args(["-9", "-c"])
        .arg(&path)
        .output()
        .expect("gzip runs");
    (script.len(), compressed.stdout.len())
}

/// The part's section of `BENCHMARKS.md`.
pub fn section(options: &Options, runs: &PortalRuns) -> String {
    let title = format!(
        "The developer portal with {} published APIs",
        int(runs.apis as f64)
    );
    let mut out = section_head(&title, "--only portal");
    let _ = writeln!(
        out,
        "{} published APIs (SQLite; publishing them took {:.0} s). {CLIENTS} clients at once, \
         {} requests a page; each latency is a whole answer, client side, over loopback.\n",
        int(runs.apis as f64),
        runs.publish_seconds,
        int(options.portal_requests as f64)
    );
    out.push_str("| page | p50 ms | p99 ms | max ms | answers/s | HTML bytes |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|\n");
    for page in &runs.pages {
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.1} | {} | {} |",
            page.label,
            page.latencies.p50_ms,
            page.latencies.p99_ms,
            page.latencies.max_ms,
            int(page.rate),
            int(page.bytes as f64)
        );
    }
    let worst = runs
        .pages
        .iter()
        .map(|p| p.latencies.p99_ms)
        .fold(0.0, f64::max);
    let (raw, gzipped) = runs.script;
    let _ = writeln!(
        out,
        "\nWorst p99: {worst:.1} ms against the bound of {P99_BOUND_MS:.0} ms ({}). Script: \
         the catalogue, the API pages without the console, the document pages and every \
         publisher console page ship none; an API's page with the try-it console ships the \
         portal's one script, `console.js`, {} bytes ({} gzip'd), against the bound of {} KB \
         ({}).",
        if worst <= P99_BOUND_MS {
            "held"
        } else {
            "MISSED"
        },
        int(raw as f64),
        int(gzipped as f64),
        SCRIPT_BOUND / 1024,
        if gzipped <= SCRIPT_BOUND {
            "held"
        } else {
            "MISSED"
        },
    );
    out
}
