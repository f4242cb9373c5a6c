//! Endpoint certificates: what HTTPS to one backend host and port trusts beside the roots,
//! read from the manifest the gateway component keeps in the key-value store (the
//! `trust:<host>:<port>` entries, [`apim_manifest::trust`]), on both forwarding paths.
//!
//! Each endpoint with certificates gets a client of its own, made with that trust, so its
//! pooled connections are keyed by the trust they were verified with: once the manifest
//! changes an endpoint's certificates (a removal included), its next request reads them
//! again and goes through a new client, and connections made under the old trust are
//! never used again. An endpoint whose certificates did not change keeps its client and
//! its connections. The store's head is read on every lookup (the manifest is in this
//! node's memory), so a change applies from the first request after the page lands.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use apim_manifest::key;
use apim_manifest::stored::{self, HEAD_KEY, Head};
use apim_manifest::trust::EndpointTrust;

use crate::kv::{KvStore, Store as _};
use apim_http::contract::KV_BUCKET;

/// Most endpoints remembered; past it the book starts afresh (each endpoint is read again
/// on its next request).
const MAX_ENDPOINTS: usize = 4_096;

/// Makes a client of `T` from a TLS configuration.
type MakeClient<T> = dyn Fn(rustls::ClientConfig) -> T + Send + Sync;

/// The clients of endpoints with certificates, by `host:port`.
pub struct TrustBook<T> {
    kv: KvStore,
    roots: rustls::RootCertStore,
    make: Box<MakeClient<T>>,
    endpoints: Mutex<HashMap<String, Slot<T>>>,
}

/// What an endpoint trusts as of one manifest head.
struct Slot<T> {
    /// The head it was read at (`None`: no manifest then).
    head: Option<Vec<u8>>,
    /// Its certificates and the client made with them; `None` when it has none.
    trusted: Option<Arc<Trusted<T>>>,
}

struct Trusted<T> {
    certificates: Vec<String>,
    client: T,
}

impl<T: Clone> TrustBook<T> {
    /// A book reading `kv`'s manifest, whose clients trust `roots` and an endpoint's
    /// certificates, each made by `make`.
    pub fn new(
        kv: KvStore,
        roots: rustls::RootCertStore,
        make: impl Fn(rustls::ClientConfig) -> T + Send + Sync + 'static,
    ) -> Self {
        Self {
            kv,
            roots,
            make: Box::new(make),
            endpoints: Mutex::default(),
        }
    }

    /// The client for `host` (lower-case, without brackets) and `port`, when the manifest
    /// binds certificates to it; `None` for the roots alone.
    pub async fn client(&self, host: &str, port: u16) -> Option<T> {
        let head = self.kv.get(KV_BUCKET, HEAD_KEY).await.ok().flatten();
        let endpoint = format!("{host}:{port}");
        let known = {
            let endpoints = self.endpoints.lock().unwrap_or_else(|p| p.into_inner());
            match endpoints.get(&endpoint) {
                Some(slot) if slot.head == head => {
                    return slot.trusted.as_ref().map(|t| t.client.clone());
                }
                Some(slot) => slot.trusted.clone(),
                None => None,
            }
        };
        let certificates = self.certificates(head.as_deref(), host, port).await;
        let trusted = self.trusted(known, certificates, &endpoint);
        let client = trusted.as_ref().map(|t| t.client.clone());
        let mut endpoints = self.endpoints.lock().unwrap_or_else(|p| p.into_inner());
        if endpoints.len() >= MAX_ENDPOINTS && !endpoints.contains_key(&endpoint) {
            endpoints.clear();
        }
        endpoints.insert(endpoint, Slot { head, trusted });
        client
    }

    /// The certificates the manifest at `head` binds to the endpoint (none without one).
    async fn certificates(&self, head: Option<&[u8]>, host: &str, port: u16) -> Vec<String> {
        let Some(head) = head.and_then(Head::decode) else {
            return Vec::new();
        };
        let entry_key = stored::entry_key(head.generation, &key::trust(host, port));
        let entry = self.kv.get(KV_BUCKET, &entry_key).await.ok().flatten();
        entry
            .and_then(|bytes| serde_json::from_slice::<EndpointTrust>(&bytes).ok())
            .map(|trust| trust.certificates)
            .unwrap_or_default()
    }

    /// The endpoint's client for `certificates`: `known` when they did not change, a new
    /// one when they did, none without certificates (or with none usable, logged).
    fn trusted(
        &self,
        known: Option<Arc<Trusted<T>>>,
        certificates: Vec<String>,
        endpoint: &str,
    ) -> Option<Arc<Trusted<T>>> {
        if certificates.is_empty() {
            return None;
        }
        if let Some(known) = known.filter(|k| k.certificates == certificates) {
            return Some(known);
        }
        match crate::backend_tls::trusting(&self.roots, &certificates) {
            Ok(config) => {
                tracing::info!(%endpoint, certificates = certificates.len(), "endpoint certificates trusted");
                let client = (self.make)(config);
                Some(Arc::new(Trusted {
                    certificates,
                    client,
                }))
            }
            Err(err) => {
                tracing::warn!(%endpoint, "endpoint certificates not trusted: {err:#}");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A certificate, PEM.
    fn certificate() -> String {
        harness::tls::Authority::new("endpoint trust").ca_pem
    }

    async fn publish(kv: &KvStore, version: u64, trust: Option<&EndpointTrust>) {
        let head = Head {
            generation: 1,
            version,
        };
        kv.set(KV_BUCKET, HEAD_KEY, head.encode().into_bytes())
            .await
            .unwrap();
        let entry = stored::entry_key(1, &key::trust("b.example", 443));
        match trust {
            Some(trust) => {
                let json = serde_json::to_vec(trust).unwrap();
                kv.set(KV_BUCKET, &entry, json).await.unwrap();
            }
            None => kv.delete(KV_BUCKET, &entry).await.unwrap(),
        }
    }

    /// A client per trust: kept while the certificates stay, made anew when they change,
    /// gone when they are removed; other endpoints have none.
    #[tokio::test]
    async fn each_trust_gets_its_own_client() {
        let kv = KvStore::memory();
        let made = Arc::new(AtomicUsize::new(0));
        let counter = made.clone();
        let book = TrustBook::new(kv.clone(), rustls::RootCertStore::empty(), move |_| {
            counter.fetch_add(1, Ordering::SeqCst) + 1
        });
        assert_eq!(book.client("b.example", 443).await, None, "no manifest");

        let first = EndpointTrust {
            certificates: vec![certificate()],
        };
        publish(&kv, 1, Some(&first)).await;
        assert_eq!(book.client("b.example", 443).await, Some(1));
        assert_eq!(book.client("b.example", 8443).await, None);
        publish(&kv, 2, Some(&first)).await;
        assert_eq!(book.client("b.example", 443).await, Some(1), "unchanged");

        let second = EndpointTrust {
            certificates: vec![certificate()],
        };
        publish(&kv, 3, Some(&second)).await;
        assert_eq!(book.client("b.example", 443).await, Some(2), "changed");
        publish(&kv, 4, None).await;
        assert_eq!(book.client("b.example", 443).await, None, "removed");

        let unusable = EndpointTrust {
            certificates: vec!["not a certificate".into()],
        };
        publish(&kv, 5, Some(&unusable)).await;
        assert_eq!(book.client("b.example", 443).await, None);
        assert_eq!(made.load(Ordering::SeqCst), 2);
    }
}
