//! WSO2 2.6's backend JWT: the backend of an API whose tenant switched it on (and on a
//! gateway whose own switch is on) learns who called from an `X-JWT-Assertion` header,
//! an RS256 JWT this gateway signs with the key the manifest carries sealed. The claims
//! are WSO2's default generator's, under its dialect `http://wso2.org/claims`, every value
//! a string as WSO2 writes them, valid for WSO2's 15 minutes.
//!
//! An instance makes one assertion per token and API and keeps it until it is close to
//! its expiry, so a later call pays a header copy; it makes it again when the
//! subscription or application it describes changed, or the key did.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use apim_manifest::sealed::GatewayKey;
use apim_manifest::{ApiRoute, Application, BackendJwt, Subscription, tenant_of_context};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use sha2::{Digest, Sha256};

use crate::auth::{Admitted, Environment};
use crate::faults::Fault;
use crate::keys::{Key, KeyMap};

/// The header the assertion travels in (WSO2's default `JWTHeader`).
pub const HEADER: &str = "x-jwt-assertion";
/// WSO2's `iss` for the assertions its gateways make.
pub const ISSUER: &str = "wso2.org/products/am";
/// WSO2's claim dialect.
pub const DIALECT: &str = "http://wso2.org/claims";
/// How long an assertion is valid, seconds (WSO2's default, 15 minutes).
pub const LIFETIME_SECS: i64 = 900;
/// An assertion with less than this left is made again, so that none reaches a backend
/// about to expire.
const RENEW_WITHIN_SECS: i64 = 60;
/// Assertions an instance keeps at most; past this it starts over.
const MAX_KEPT: usize = 10_000;
/// The super tenant, whose users' names WSO2 writes with this suffix.
const SUPER_TENANT: &str = "carbon.super";
/// WSO2's id of the super tenant.
const SUPER_TENANT_ID: &str = "-1234";

/// The assertions one instance makes, with the key it makes them with.
pub struct Assertions {
    gateway_key: GatewayKey,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    /// The key last opened, by `kid`: `None` when it did not open with this gateway's
    /// secret (said once).
    signer: Option<(String, Option<Rc<EncodingKey>>)>,
    /// Assertions made, by token id and API id.
    made: KeyMap<Made>,
}

/// One assertion made, with what it says, to tell when it must be made again.
struct Made {
    value: Rc<[u8]>,
    exp: i64,
    subscription: Rc<Subscription>,
    application: Option<Rc<Application>>,
}

impl Made {
    /// Whether it still says what a call by `caller` at `now_secs` needs.
    fn serves(&self, caller: &Admitted, now_secs: i64) -> bool {
        self.exp - RENEW_WITHIN_SECS > now_secs
            && same(&self.subscription, caller.subscription())
            && match (&self.application, caller.application()) {
                (Some(kept), Some(now)) => same(kept, now),
                (None, None) => true,
                _ => false,
            }
    }
}

/// Whether two entries say the same: the same entry, or an equal one read again.
fn same<T: PartialEq>(a: &Rc<T>, b: &Rc<T>) -> bool {
    Rc::ptr_eq(a, b) || a == b
}

impl Clone for Assertions {
    /// The same key, with nothing made yet.
    fn clone(&self) -> Self {
        Self::new(self.gateway_key.clone())
    }
}

impl std::fmt::Debug for Assertions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Assertions(..)")
    }
}

impl Assertions {
    /// Assertions signed with the keys `gateway_key` opens.
    pub fn new(gateway_key: GatewayKey) -> Self {
        Self {
            gateway_key,
            state: RefCell::default(),
        }
    }

    /// The `X-JWT-Assertion` value for `caller`'s call to `api` when `config` covers the
    /// API's tenant; `None` when it does not. A key this gateway cannot open fails the
    /// call rather than reach a backend that expects to be told who called.
    pub fn for_call(
        &self,
        config: &BackendJwt,
        api: &ApiRoute,
        caller: &Admitted,
        now_secs: i64,
    ) -> Result<Option<Rc<[u8]>>, Fault> {
        if !config.covers(tenant_of_context(&api.context)) {
            return Ok(None);
        }
        let mut state = self.state.borrow_mut();
        let signer = state.signer(&self.gateway_key, config)?;
        let key = apim_http::joined([caller.claims().jti.as_str(), " ", api.id.as_str()]);
        if let Some(made) = state.made.get(key.as_str())
            && made.serves(caller, now_secs)
        {
            return Ok(Some(made.value.clone()));
        }
        let exp = now_secs.saturating_add(LIFETIME_SECS);
        let claims = claims(api, caller, exp);
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(config.kid.clone());
        let value: Rc<[u8]> = jsonwebtoken::encode(&header, &claims, &signer)
            .map_err(|err| {
                eprintln!("a backend JWT could not be signed: {err}");
                Fault::backend_unreachable()
            })?
            .into_bytes()
            .into();
        if state.made.len() >= MAX_KEPT {
            state.made.clear();
        }
        state.made.insert(
            Key::from(key.as_str()),
            Made {
                value: value.clone(),
                exp,
                subscription: caller.subscription().clone(),
                application: caller.application().cloned(),
            },
        );
        Ok(Some(value))
    }
}

impl State {
    /// The signing key of `config`, opened once per key; a new key forgets what the old
    /// one made.
    fn signer(
        &mut self,
        gateway_key: &GatewayKey,
        config: &BackendJwt,
    ) -> Result<Rc<EncodingKey>, Fault> {
        if !matches!(&self.signer, Some((kid, _)) if *kid == config.kid) {
            let opened = open_key(gateway_key, config);
            if opened.is_none() {
                eprintln!(
                    "the backend JWT key {} does not open with this gateway's gateway_secret",
                    config.kid
                );
            }
            self.signer = Some((config.kid.clone(), opened.map(Rc::new)));
            self.made.clear();
        }
        match &self.signer {
            Some((_, Some(key))) => Ok(key.clone()),
            _ => Err(Fault::backend_unreachable()),
        }
    }
}

/// The RSA key `config` carries, opened with `gateway_key`.
fn open_key(gateway_key: &GatewayKey, config: &BackendJwt) -> Option<EncodingKey> {
    let der = gateway_key.open(&BackendJwt::sealing_label(&config.kid), &config.sealed_key)?;
    let der = STANDARD.decode(der).ok()?;
    // `from_rsa_der` takes any bytes; a key that is not one fails at signing instead.
    Some(EncodingKey::from_rsa_der(&der))
}

/// The claims of WSO2 2.6's default JWT generator, for `caller`'s call to `api`.
pub fn claims(api: &ApiRoute, caller: &Admitted, exp: i64) -> BTreeMap<String, serde_json::Value> {
    let token = caller.claims();
    let application = caller.application();
    let text = |s: &str| serde_json::Value::String(s.to_string());
    let end_user = end_user(token.sub.as_deref().unwrap_or_default());
    let user_type = if token.scope.is_application() {
        "APPLICATION"
    } else {
        "APPLICATION_USER"
    };
    let end_user_tenant_id = tenant_id(user_tenant(&end_user));
    let key_type = match caller.environment {
        Environment::Production => "PRODUCTION",
        Environment::Sandbox => "SANDBOX",
    };
    let dialect = |name: &str| apim_http::joined([DIALECT, "/", name]);
    let mut claims = BTreeMap::new();
    claims.insert("iss".to_string(), text(ISSUER));
    claims.insert("exp".to_string(), serde_json::Value::from(exp));
    let mut put = |name: &str, value: &str| {
        claims.insert(dialect(name), text(value));
    };
    put("subscriber", application.map_or("", |a| a.owner.as_str()));
    put("applicationid", caller.application_id());
    put(
        "applicationname",
        application.map_or("", |a| a.name.as_str()),
    );
    put(
        "applicationtier",
        application.map_or("", |a| a.tier.as_str()),
    );
    put("apicontext", &api_context(api));
    put("version", &api.version);
    put("tier", &caller.subscription().tier);
    put("keytype", key_type);
    put("usertype", user_type);
    put("enduser", &end_user);
    put("enduserTenantId", &end_user_tenant_id);
    claims
}

/// The API's context with its version, as WSO2 names an API in its claims
/// (`/t/acme.com/pets/1.0.0`).
fn api_context(api: &ApiRoute) -> String {
    let versioned = apim_http::joined(["/", api.version.as_str()]);
    if api.context.ends_with(&versioned) {
        api.context.clone()
    } else {
        apim_http::joined([api.context.as_str(), versioned.as_str()])
    }
}

/// A user's name as WSO2 writes it in `enduser`: with its tenant domain, the super
/// tenant's too (`admin@carbon.super`).
fn end_user(user: &str) -> String {
    if user.contains('@') {
        user.to_string()
    } else {
        apim_http::joined([user, "@", SUPER_TENANT])
    }
}

/// The tenant domain of a user's full name.
fn user_tenant(end_user: &str) -> &str {
    end_user.rsplit_once('@').map_or(SUPER_TENANT, |(_, t)| t)
}

/// WSO2's tenant id: `-1234` for the super tenant. Other tenants' ids are WSO2's row
/// numbers, which this platform does not keep: a stable positive number of the domain
/// stands in for them.
pub fn tenant_id(domain: &str) -> String {
    if domain == SUPER_TENANT {
        return SUPER_TENANT_ID.to_string();
    }
    let digest = Sha256::digest(domain.as_bytes());
    let number = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) & 0x7fff_ffff;
    number.max(1).to_string()
}
