//! Backend credentials on their way to the gateways: read with the data key, sealed with
//! the gateway secret's key.

use std::sync::Arc;

use apim_manifest::sealed::GatewayKey;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::apis::records::ApiRecord;
use crate::secrets::{DataKeys, Field};

/// Backend credentials on their way from the database to the gateways: decrypted with
/// the data key, sealed for the gateways with the gateway secret's key.
pub struct Credentials {
    data_keys: Arc<DataKeys>,
    gateways: GatewayKey,
}

impl Credentials {
    /// Credentials read with `data_keys` and sealed for gateways holding `gateway_secret`.
    pub fn new(data_keys: Arc<DataKeys>, gateway_secret: &str) -> Self {
        Credentials {
            data_keys,
            gateways: GatewayKey::derive(gateway_secret),
        }
    }

    /// What seals for the gateways.
    pub(super) fn gateway_key(&self) -> GatewayKey {
        self.gateways.clone()
    }

    /// The sealed `Authorization` value for API `id`'s backend, if it has credentials.
    pub(super) fn backend_authorization(
        &self,
        id: &str,
        record: &ApiRecord,
    ) -> anyhow::Result<Option<String>> {
        let Some(user) = record.backend_security().and_then(|s| s.username) else {
            return Ok(None);
        };
        let password = match record.stored_backend_password() {
            Some(stored) => self.data_keys.open(Field::BackendPassword, id, &stored)?,
            None => String::new(),
        };
        Ok(Some(self.gateways.seal(id, &basic(&user, &password))))
    }
}

/// HTTP Basic credentials.
pub(super) fn basic(user: &str, password: &str) -> String {
    format!("Basic {}", STANDARD.encode(format!("{user}:{password}")))
}
