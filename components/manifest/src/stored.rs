//! Where a gateway keeps the manifest in its key-value store (bucket `default`): the
//! head (`apim:m:head`: `<generation> <version>`, the entries served and their version,
//! and on hosts where requests catch up with the control plane, `<caught-up ms>`: when
//! they last did, so that a request learns whether it is time from the read it makes
//! anyway)
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

    /// As the store holds it, saying that requests caught up with the control plane at
    /// `at_ms` (Unix milliseconds).
    pub fn encode_caught_up(&self, at_ms: i64) -> String {
        format!("{} {} {at_ms}", self.generation, self.version)
    }

    /// From the store; `None` for what is not a head.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        Self::decode_caught_up(bytes).map(|(head, _)| head)
    }

    /// From the store, with when requests last caught up, if it says.
    pub fn decode_caught_up(bytes: &[u8]) -> Option<(Self, Option<i64>)> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut fields = text.split_ascii_whitespace();
        let head = Head {
            generation: fields.next()?.parse().ok()?,
            version: fields.next()?.parse().ok()?,
        };
        let caught_up = match fields.next() {
            Some(at) => Some(at.parse().ok()?),
            None => None,
        };
        fields.next().is_none().then_some((head, caught_up))
    }
}

/// The store key of an entry in a generation.
pub fn entry_key(generation: u64, key: &str) -> String {
    let mut generation_text = itoa::Buffer::new();
    [PREFIX, generation_text.format(generation), ":", key].concat()
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
        let marked = head.encode_caught_up(1_900_000_000_000);
        assert_eq!(
            Head::decode_caught_up(marked.as_bytes()),
            Some((head, Some(1_900_000_000_000)))
        );
        assert_eq!(Head::decode(marked.as_bytes()), Some(head));
        assert_eq!(Head::decode_caught_up(b"3 42"), Some((head, None)));
        assert_eq!(Head::decode(b"3 42 x"), None);
        assert_eq!(Head::decode(b"3 42 1 2"), None);
        assert_eq!(entry_key(3, "api:a"), "apim:m:3:api:a");
    }
}
