//! Where a gateway keeps the manifest in its key-value store (bucket `default`): the
//! head (`apim:m:head`: `<generation> <version>`, the entries served and their version)
//! and each entry under `apim:m:<generation>:<entry key>`. The gateway component writes
//! them as it applies pages; a host reads entries it needs itself (edge-gateway the
//! endpoints' trust) the same way.

/// Key of the head.
pub const HEAD_KEY: &str = "apim:m:head";
/// Prefix of every key of the manifest in the store.
pub const PREFIX: &str = "apim:m:";

/// A generation of entries and the version it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Entries live under `apim:m:<generation>:`.
    pub generation: u64,
    /// The version they hold.
    pub version: u64,
}

impl Head {
    /// As the store holds it.
    pub fn encode(&self) -> String {
        format!("{} {}", self.generation, self.version)
    }

    /// From the store; `None` for what is not a head.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let (generation, version) = text.trim().split_once(' ')?;
        Some(Head {
            generation: generation.parse().ok()?,
            version: version.parse().ok()?,
        })
    }
}

/// The store key of an entry in a generation.
pub fn entry_key(generation: u64, key: &str) -> String {
    format!("{PREFIX}{generation}:{key}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_round_trip_and_reject_garbage() {
        let head = Head {
            generation: 3,
            version: 42,
        };
        assert_eq!(Head::decode(head.encode().as_bytes()), Some(head));
        assert_eq!(Head::decode(b"42"), None);
        assert_eq!(Head::decode(b"x 1"), None);
        assert_eq!(entry_key(3, "api:a"), "apim:m:3:api:a");
    }
}
