//! The proxies edge-gateway is compared with, set up from `tools/fixtures/bench`: nginx
//! (plain reverse proxy) and Envoy (our policy), each pinned to CPU 1 with one worker, on
//! plain HTTP or behind TLS with a certificate of the run (HTTP/1.1 or h2 by ALPN).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use harness::tls::Listening;
use serde_json::{Value, json};

use super::platform::{BASE, RESOURCES, Resource};

/// A proxy process of ours, stopped by [`Proxy::stop`] (or killed when dropped).
pub struct Proxy {
    /// `http://127.0.0.1:<port>` (`https://` behind TLS).
    pub url: String,
    /// `127.0.0.1:<port>`.
    pub addr: String,
    child: tokio::process::Child,
    log: PathBuf,
}

impl Proxy {
    /// Its process id (nginx's master; its worker is a child).
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or_default()
    }

    /// Asks it to exit and waits.
    pub async fn stop(mut self) {
        self.ask_to_exit();
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }

    /// SIGTERM, while it runs: nginx's master takes its worker along, where SIGKILL
    /// would leave the worker running, still bound to CPU 1.
    fn ask_to_exit(&self) -> bool {
        let Some(pid) = self.child.id() else {
            return false;
        };
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        true
    }

    async fn wait_until_listening(&mut self) {
        let addr = self.addr.clone();
        for _ in 0..500 {
            if tokio::net::TcpStream::connect(&addr).await.is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "proxy exited ({status}):\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("nothing listens on {addr}");
    }
}

impl Drop for Proxy {
    /// A run that panics still ends its proxies the way [`Proxy::stop`] does, before
    /// `kill_on_drop`'s SIGKILL; synchronously, as drop cannot wait on the runtime.
    fn drop(&mut self) {
        if !self.ask_to_exit() {
            return;
        }
        for _ in 0..250 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// nginx with one worker on CPU 1, in front of `backend` (`http://host:port`); with `tls`,
/// its listener speaks TLS (HTTP/1.1 or h2 by ALPN) with the default certificate of `tls`.
pub async fn nginx(dir: &Path, backend: &str, tls: Option<&Listening>) -> Proxy {
    let prefix = dir.join(if tls.is_some() { "nginx-tls" } else { "nginx" });
    std::fs::create_dir_all(&prefix).expect("nginx prefix");
    let listen = format!("127.0.0.1:{}", harness::free_port());
    let user = harness::machine::output("id", &["-un"]);
    let prefix_text = prefix.display().to_string();
    let config = nginx_config(&user, &prefix_text, backend, &listen, tls);
    let conf = prefix.join("nginx.conf");
    std::fs::write(&conf, config).expect("write nginx.conf");
    let args = [
        "-p",
        &prefix_text,
        "-e",
        &format!("{prefix_text}/error.log"),
        "-c",
        &conf.display().to_string(),
        "-g",
        "daemon off;",
    ];
    start(
        "nginx",
        &args,
        &listen,
        tls.is_some(),
        prefix.join("stderr.log"),
    )
    .await
}

/// `tools/fixtures/bench/nginx.conf` filled in: run as `user` in `prefix`, listening on
/// `listen` (`host:port`), with `ssl http2` and the default certificate of `tls` if any.
fn nginx_config(
    user: &str,
    prefix: &str,
    backend: &str,
    listen: &str,
    tls: Option<&Listening>,
) -> String {
    let (listen_options, tls_directives) = match tls {
        Some(tls) => (
            " ssl http2",
            // nginx before 1.23.4 (Debian 12's 1.22) leaves TLS 1.3 off unless named.
            format!(
                "ssl_protocols TLSv1.2 TLSv1.3;\n        ssl_certificate {};\n        \
                 ssl_certificate_key {};",
                tls.default_cert.display(),
                tls.default_key.display()
            ),
        ),
        None => ("", String::new()),
    };
    fill(
        include_str!("../../fixtures/bench/nginx.conf"),
        &[
            ("user", user),
            ("prefix", prefix),
            ("backend", backend.trim_start_matches("http://")),
            ("listen", &format!("{listen}{listen_options}")),
            ("tls", &tls_directives),
            ("base", BASE),
        ],
    )
}

/// Envoy with one worker on CPU 1 in front of `backend`, enforcing our policy: tokens of
/// `issuer` signed by a key of `jwks` on the authenticated resources, a local rate limit.
/// With `tls`, its listener speaks TLS (HTTP/1.1 or h2 by ALPN) with the default
/// certificate of `tls`.
pub async fn envoy(
    dir: &Path,
    backend: &str,
    issuer: &str,
    jwks: &str,
    tls: Option<&Listening>,
) -> Proxy {
    let listen = format!("127.0.0.1:{}", harness::free_port());
    let config = envoy_config(&listen, backend, issuer, jwks, tls);
    let conf = dir.join(if tls.is_some() {
        "envoy-tls.yaml"
    } else {
        "envoy.yaml"
    });
    std::fs::write(&conf, config).expect("write envoy.yaml");
    let envoy = super::tools::envoy_binary().expect("envoy");
    let args = [
        "-c",
        &conf.display().to_string(),
        "--concurrency",
        "1",
        "--disable-hot-restart",
        "--log-level",
        "warn",
    ];
    let log = conf.with_extension("log");
    start(
        &envoy.display().to_string(),
        &args,
        &listen,
        tls.is_some(),
        log,
    )
    .await
}

/// `tools/fixtures/bench/envoy.yaml` filled in: listening on `listen` (`host:port`), in
/// front of `backend`, the policy of `issuer` and `jwks`, behind TLS with the default
/// certificate of `tls` if any.
fn envoy_config(
    listen: &str,
    backend: &str,
    issuer: &str,
    jwks: &str,
    tls: Option<&Listening>,
) -> String {
    let port = |addr: &str| addr.rsplit(':').next().expect("port").to_string();
    let (transport_socket, codec) = match tls {
        Some(tls) => (envoy_tls(tls), "AUTO"),
        None => (envoy_plain(), "HTTP1"),
    };
    fill(
        include_str!("../../fixtures/bench/envoy.yaml"),
        &[
            ("listen_port", &port(listen)),
            ("transport_socket", &transport_socket.to_string()),
            ("codec", codec),
            ("backend_port", &port(backend)),
            ("routes", &envoy_routes().to_string()),
            ("rules", &envoy_rules().to_string()),
            ("issuer", &json!(issuer).to_string()),
            ("jwks", &json!(jwks).to_string()),
        ],
    )
}

/// Envoy's default transport socket, named: plain TCP.
fn envoy_plain() -> Value {
    json!({
        "name": "envoy.transport_sockets.raw_buffer",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer"
        }
    })
}

/// TLS with the default certificate of `tls`, h2 or HTTP/1.1 by ALPN (Envoy's defaults
/// otherwise: TLS 1.2 and 1.3, session tickets).
fn envoy_tls(tls: &Listening) -> Value {
    let file = |path: &Path| json!({"filename": path.display().to_string()});
    json!({
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
            "common_tls_context": {
                "tls_certificates": [{
                    "certificate_chain": file(&tls.default_cert),
                    "private_key": file(&tls.default_key),
                }],
                "alpn_protocols": ["h2", "http/1.1"],
            }
        }
    })
}

/// Starts `program` on CPU 1, its output in `log`, and waits for its listener (`https`
/// in its URL when it speaks TLS).
async fn start(program: &str, args: &[&str], listen: &str, tls: bool, log: PathBuf) -> Proxy {
    let output = std::fs::File::create(&log).expect("proxy log");
    let child = tokio::process::Command::new("taskset")
        .args(["-c", "1", program])
        .args(args)
        .stdin(Stdio::null())
        .stdout(output.try_clone().expect("log"))
        .stderr(output)
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("start {program}: {e}"));
    let scheme = if tls { "https" } else { "http" };
    let mut proxy = Proxy {
        url: format!("{scheme}://{listen}"),
        addr: listen.to_string(),
        child,
        log,
    };
    proxy.wait_until_listening().await;
    proxy
}

/// Replaces each `@name@` of `template`; every name must occur.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    values
        .iter()
        .fold(template.to_string(), |text, (name, value)| {
            let token = format!("@{name}@");
            assert!(text.contains(&token), "template lacks {token}");
            text.replace(&token, value)
        })
}

/// One route for the API, `/<context>/<version>` dropped as the gateway forwards it:
/// Envoy's usual layout for an API behind a prefix.
fn envoy_routes() -> Value {
    let rewrite =
        json!({"pattern": {"regex": format!("^{}", regex_escape(BASE))}, "substitution": ""});
    json!([{
        "match": {"prefix": format!("{BASE}/")},
        "route": {"cluster": "backend", "regex_rewrite": rewrite},
    }])
}

/// The open resources first, without a requirement; then a token everywhere else in the
/// API (jwt_authn takes the first rule that matches).
fn envoy_rules() -> Value {
    let open = RESOURCES
        .iter()
        .filter(|r| !r.authenticated)
        .map(|resource| json!({"match": route_match(resource)}));
    let everything_else =
        json!({"match": {"prefix": format!("{BASE}/")}, "requires": {"provider_name": "apim"}});
    open.chain([everything_else]).collect()
}

fn route_match(resource: &Resource) -> Value {
    let path = format!("{BASE}{}", resource.template);
    let method = json!([{"name": ":method", "string_match": {"exact": resource.method}}]);
    if path.contains('{') {
        json!({"safe_regex": {"regex": template_regex(&path)}, "headers": method})
    } else {
        json!({"path": path, "headers": method})
    }
}

/// `/a/{id}/b` as an anchored regex with one path segment per parameter.
fn template_regex(template: &str) -> String {
    let segments: Vec<String> = template
        .split('/')
        .map(|s| {
            if s.starts_with('{') {
                "[^/]+".to_string()
            } else {
                regex_escape(s)
            }
        })
        .collect();
    format!("^{}$", segments.join("/"))
}

/// `text` with regex metacharacters escaped.
fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = ".+*?()[]{}|^$\\".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_become_anchored_regexes() {
        assert_eq!(
            template_regex("/bench/v1.0.0/items/{id}"),
            "^/bench/v1\\.0\\.0/items/[^/]+$"
        );
    }

    #[test]
    fn fills_every_value() {
        assert_eq!(fill("a @x@ b @y@", &[("x", "1"), ("y", "2")]), "a 1 b 2");
    }

    /// A `@name@` left in a filled template: a value the code forgot.
    fn unfilled(config: &str) -> Option<&str> {
        let between: Vec<&str> = config.split('@').collect();
        let inner = between.len().saturating_sub(2);
        between.into_iter().skip(1).take(inner).find(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        })
    }

    #[test]
    fn the_proxies_configurations_fill_plain_and_behind_tls() {
        let dir = harness::temp_dir();
        let tls = Listening::new(&dir);
        let backend = "http://127.0.0.1:2";
        for tls in [None, Some(&tls)] {
            let nginx = nginx_config("me", "/p", backend, "127.0.0.1:1", tls);
            let envoy = envoy_config("127.0.0.1:1", backend, "iss", "{}", tls);
            assert_eq!(unfilled(&nginx), None, "{nginx}");
            assert_eq!(unfilled(&envoy), None, "{envoy}");
            let cert = dir.join("listener.crt").display().to_string();
            assert_eq!(
                nginx.contains("listen 127.0.0.1:1 ssl http2;"),
                tls.is_some()
            );
            assert_eq!(nginx.contains(&cert), tls.is_some());
            assert_eq!(envoy.contains("DownstreamTlsContext"), tls.is_some());
            assert_eq!(envoy.contains(&cert), tls.is_some());
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
