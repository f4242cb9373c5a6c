//! Signing in through the control plane's pages as a browser does: cookies kept, each
//! redirect seen, forms read from the HTML and sent back with their hidden fields and the
//! headers a browser adds (`Origin`, `Sec-Fetch-Site`). Every answer is checked against
//! the control plane's OpenAPI document, as [`crate::Client`]'s are.

use reqwest::header::{HeaderMap, LOCATION};
use scraper::{Html, Selector};
use serde_json::Value;

/// A browser of the control plane's pages.
pub struct Browser {
    http: reqwest::Client,
    /// The control plane's base URL (`http://127.0.0.1:9763`).
    pub base: String,
}

/// An answer as a browser sees it.
#[derive(Debug)]
pub struct Seen {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
    /// The URL it answered.
    pub url: String,
}

impl Seen {
    /// A header's value, `""` when absent.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// Where a redirect goes, resolved against the page's URL.
    pub fn location(&self) -> Option<url::Url> {
        let location = self.headers.get(LOCATION)?.to_str().ok()?;
        url::Url::parse(&self.url).ok()?.join(location).ok()
    }

    /// The page's form that posts to `action`.
    pub fn form(&self, action: &str) -> Option<Form> {
        form_of(&self.body, action)
    }
}

/// A form of a page: where it posts and its fields as the page filled them.
#[derive(Debug, Clone)]
pub struct Form {
    pub action: String,
    pub fields: Vec<(String, String)>,
}

impl Form {
    /// The form with `name` set to `value` (added when it has no such field).
    pub fn with(mut self, name: &str, value: &str) -> Self {
        match self.fields.iter_mut().find(|(n, _)| n == name) {
            Some(field) => field.1 = value.to_string(),
            None => self.fields.push((name.to_string(), value.to_string())),
        }
        self
    }

    /// The form without the field `name`.
    pub fn without(mut self, name: &str) -> Self {
        self.fields.retain(|(n, _)| n != name);
        self
    }
}

/// The form posting to `action` in `html`: its inputs' names and values as a browser would
/// send them untouched (its selects and text areas left out).
pub fn form_of(html: &str, action: &str) -> Option<Form> {
    let document = Html::parse_document(html);
    let forms = Selector::parse("form").expect("selector");
    let inputs = Selector::parse("input[name]").expect("selector");
    let form = document
        .select(&forms)
        .find(|form| form.value().attr("action") == Some(action))?;
    // As a browser sends it: a checkbox or radio button only when checked ("on" when
    // it has no value).
    let fields = form
        .select(&inputs)
        .filter_map(|input| {
            let element = input.value();
            let choice = matches!(element.attr("type"), Some("checkbox" | "radio"));
            if choice && element.attr("checked").is_none() {
                return None;
            }
            let default = if choice { "on" } else { "" };
            let value = element.attr("value").unwrap_or(default);
            Some((
                element.attr("name").unwrap_or_default().to_string(),
                value.to_string(),
            ))
        })
        .collect();
    Some(Form {
        action: action.to_string(),
        fields,
    })
}

/// Whether every input and button of `html` has an accessible name: a `<label for>`, an
/// `aria-label`, its text (buttons), or it is hidden.
pub fn every_control_is_named(html: &str) -> Result<(), String> {
    let document = Html::parse_document(html);
    let labels = Selector::parse("label[for]").expect("selector");
    let named: Vec<&str> = document
        .select(&labels)
        .filter_map(|l| l.value().attr("for"))
        .collect();
    let controls = Selector::parse("input, button, select, textarea").expect("selector");
    for control in document.select(&controls) {
        let element = control.value();
        let hidden = element.attr("type") == Some("hidden");
        let labelled = element.attr("id").is_some_and(|id| named.contains(&id))
            || element.attr("aria-label").is_some()
            || (element.name() == "button"
                && !control.text().collect::<String>().trim().is_empty());
        if !hidden && !labelled {
            return Err(format!(
                "a control has no accessible name: {}",
                control.html()
            ));
        }
    }
    Ok(())
}

impl Browser {
    /// A browser of the control plane at `base`.
    pub fn new(base: &str) -> Self {
        let http = reqwest::Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("HTTP client");
        Browser {
            http,
            base: base.trim_end_matches('/').to_string(),
        }
    }

    fn absolute(&self, url: &str) -> String {
        if url.starts_with("http://") || url.starts_with("https://") {
            url.to_string()
        } else {
            format!("{}{url}", self.base)
        }
    }

    /// Opens `url` (absolute, or a path of the control plane's).
    pub async fn open(&self, url: &str) -> Seen {
        let url = self.absolute(url);
        let request = self.http.get(&url).header("sec-fetch-site", "none");
        self.seen("GET", &url, request).await
    }

    /// Sends `form` as the page's browser would.
    pub async fn submit(&self, form: &Form) -> Seen {
        let url = self.absolute(&form.action);
        let request = self
            .http
            .post(&url)
            .header("origin", &self.base)
            .header("sec-fetch-site", "same-origin")
            .form(&form.fields);
        self.seen("POST", &url, request).await
    }

    /// Sends `form` as `multipart/form-data`, with `file` (field name, file name, bytes)
    /// as its file field, as a page's browser sends a form with a file input.
    pub async fn submit_with_file(&self, form: &Form, file: (&str, &str, Vec<u8>)) -> Seen {
        let url = self.absolute(&form.action);
        let mut body = reqwest::multipart::Form::new();
        for (name, value) in &form.fields {
            body = body.text(name.clone(), value.clone());
        }
        let (field, file_name, bytes) = file;
        // As a browser names a file's type: by its extension.
        let mime = match file_name.rsplit('.').next() {
            Some("json") => "application/json",
            Some("png") => "image/png",
            Some("md") => "text/markdown",
            _ => "application/octet-stream",
        };
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(file_name.to_string())
            .mime_str(mime)
            .expect("a MIME type");
        body = body.part(field.to_string(), part);
        let request = self
            .http
            .post(&url)
            .header("origin", &self.base)
            .header("sec-fetch-site", "same-origin")
            .multipart(body);
        self.seen("POST", &url, request).await
    }

    async fn seen(&self, method: &str, url: &str, request: reqwest::RequestBuilder) -> Seen {
        let response = request.send().await.expect("the control plane answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.text().await.unwrap_or_default();
        let path = url::Url::parse(url)
            .map(|u| u.path().to_string())
            .unwrap_or_default();
        let content_type = headers.get("content-type").and_then(|v| v.to_str().ok());
        if url.starts_with(&self.base)
            && let Err(why) =
                crate::openapi::check(method, &path, status, content_type, &Value::Null)
        {
            panic!("{why}");
        }
        Seen {
            status,
            headers,
            body,
            url: url.to_string(),
        }
    }

    /// Follows redirects within the control plane from `seen`; stops at a page, or at a
    /// redirect that leaves it (to a client), which it returns.
    pub async fn follow(&self, mut seen: Seen) -> Seen {
        while let Some(next) = seen.location() {
            if !next.as_str().starts_with(&self.base) {
                break;
            }
            seen = self.open(next.as_str()).await;
        }
        seen
    }

    /// Signs `username` in on the sign-in page `seen` shows (unless the browser is signed
    /// in already), then consents (when asked); where the control plane sends the browser
    /// back to the client.
    pub async fn sign_in_and_allow(&self, seen: Seen, username: &str, password: &str) -> url::Url {
        let mut seen = seen;
        if let Some(login) = seen.form("/oauth2/authorize") {
            let login = login.with("username", username).with("password", password);
            seen = self.follow(self.submit(&login).await).await;
        }
        if let Some(consent) = seen.form("/oauth2/consent") {
            seen = self.submit(&consent.with("decision", "allow")).await;
        }
        seen.location()
            .unwrap_or_else(|| panic!("sent back to the client: {} {}", seen.status, seen.body))
    }
}

/// The query parameter `name` of `url`.
pub fn query_param(url: &url::Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// A control plane on a port chosen before it starts, so that its issuer (derived from
/// the configured address) is the URL clients reach it at, as discovery needs.
pub async fn control_plane_at_its_issuer(
    backend: &crate::Backend,
    data_dir: &std::path::Path,
    settings: &[(&str, String)],
) -> crate::ControlPlane {
    let mut all = vec![(
        "APIM_MGMT_ADDR",
        format!("127.0.0.1:{}", crate::free_port()),
    )];
    all.extend(settings.iter().cloned());
    crate::start_control_plane(backend, data_dir, &all).await
}

/// Registers a client for the authorization code flow by dynamic client registration (as
/// `user`): confidential, or public (`token_endpoint_auth_method: none`).
pub async fn register_code_client(
    api: &crate::Client,
    (user, password): (&str, &str),
    name: &str,
    redirect_uri: &str,
    public: bool,
) -> crate::Reply {
    let mut body = serde_json::json!({
        "callbackUrl": redirect_uri,
        "clientName": name,
        "owner": user,
        "grantType": "authorization_code refresh_token",
        "saasApp": false,
    });
    if public {
        body["tokenEndpointAuthMethod"] = "none".into();
    }
    api.basic(
        reqwest::Method::POST,
        "/client-registration/v0.14/register",
        (user, password),
        Some(&body),
    )
    .await
}

/// The text of the first element of `html` that `selector` picks (empty when none).
pub fn text_of(html: &str, selector: &str) -> String {
    let document = Html::parse_document(html);
    let selector = Selector::parse(selector).expect("a selector");
    document
        .select(&selector)
        .next()
        .map(|element| element.text().collect::<String>())
        .unwrap_or_default()
}

/// Where each form of `html` posts, in order.
pub fn form_actions(html: &str) -> Vec<String> {
    let document = Html::parse_document(html);
    let forms = Selector::parse("form[action]").expect("selector");
    document
        .select(&forms)
        .filter_map(|form| form.value().attr("action").map(str::to_string))
        .collect()
}
