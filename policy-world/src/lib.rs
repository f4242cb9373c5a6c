//! What a tenant's request policy may be (`wit/policy/world.wit`): a valid WebAssembly
//! component of at most [`MAX_POLICY_BYTES`] that exports [`EXPORT`] and imports only
//! what [`ALLOWED_IMPORTS`] lists. The control plane checks it at upload; the gateway's
//! host checks it again, with its digest, before it compiles what it fetched. A policy
//! is named by its content: [`digest`].

use std::fmt;

use sha2::{Digest as _, Sha256};
use wasmparser::{ComponentTypeRef, Encoding, Parser, Payload, Validator, WasmFeatures};

/// Largest policy, bytes.
pub const MAX_POLICY_BYTES: usize = 4 * 1024 * 1024;
/// The function a policy exports.
pub const EXPORT: &str = "on-request";
/// The version of WASI 0.2 the allowed interfaces must be of (the host serves 0.2.x).
const WASI_VERSION: &str = "@0.2.";
/// The policy world's own types, which a policy imports.
const OWN_TYPES: &str = "apim:policy/types@0.1.0";
/// What a policy may import (WASI 0.2 interfaces, any 0.2.x), besides its world's types:
/// what Rust's, Go's and JavaScript's toolchains link into a component by default. The
/// gateway gives it an empty environment, no directory and no standard input, and drops
/// its output; nothing here reaches the network.
pub const ALLOWED_IMPORTS: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
];

/// Why bytes are not a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Past [`MAX_POLICY_BYTES`].
    TooLarge(usize),
    /// A core module, not a component (`wasm-tools component new` makes one of it).
    NotAComponent,
    /// Not valid WebAssembly, with the validator's reason.
    Invalid(String),
    /// An import the world does not allow, by name.
    Import(String),
    /// No [`EXPORT`].
    NoExport,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge(size) => write!(
                f,
                "the policy has {size} bytes; at most {MAX_POLICY_BYTES} are allowed"
            ),
            Self::NotAComponent => f.write_str(
                "the policy is a core WebAssembly module, not a component of the \
                 apim:policy/request-policy world",
            ),
            Self::Invalid(why) => write!(f, "the policy is not valid WebAssembly: {why}"),
            Self::Import(name) => write!(
                f,
                "the policy imports '{}', which policies may not (they may import {} and \
                 apim:policy/types)",
                name.escape_default(),
                ALLOWED_IMPORTS.join(", ")
            ),
            Self::NoExport => write!(
                f,
                "the policy does not export '{EXPORT}' (world apim:policy/request-policy)"
            ),
        }
    }
}

/// A policy's name: the SHA-256 of its bytes, in lower-case hex.
pub fn digest(bytes: &[u8]) -> String {
    let sum = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in sum {
        hex.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        hex.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    hex
}

/// Whether `text` can name a policy ([`digest`]'s form).
pub fn is_digest(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Checks that `bytes` are a policy: size, validity, imports and export.
pub fn check(bytes: &[u8]) -> Result<(), Refusal> {
    if bytes.len() > MAX_POLICY_BYTES {
        return Err(Refusal::TooLarge(bytes.len()));
    }
    if !is_component(bytes) {
        return Err(Refusal::NotAComponent);
    }
    Validator::new_with_features(WasmFeatures::default())
        .validate_all(bytes)
        .map_err(|err| Refusal::Invalid(err.message().to_string()))?;
    let mut exported = false;
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(|err| Refusal::Invalid(err.message().to_string()))? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(imports) if depth == 0 => {
                for import in imports {
                    let import = import.map_err(|err| Refusal::Invalid(err.to_string()))?;
                    // Type imports carry no behaviour (the world's `use` makes them).
                    let a_type = matches!(import.ty, ComponentTypeRef::Type(_));
                    if !a_type && !allowed(import.name.name) {
                        return Err(Refusal::Import(import.name.name.to_string()));
                    }
                }
            }
            Payload::ComponentExportSection(exports) if depth == 0 => {
                for export in exports {
                    let export = export.map_err(|err| Refusal::Invalid(err.to_string()))?;
                    exported |= export.name.name == EXPORT;
                }
            }
            _ => {}
        }
    }
    if exported {
        Ok(())
    } else {
        Err(Refusal::NoExport)
    }
}

fn is_component(bytes: &[u8]) -> bool {
    matches!(
        Parser::new(0).parse_all(bytes).next(),
        Some(Ok(Payload::Version {
            encoding: Encoding::Component,
            ..
        }))
    )
}

/// Whether a top-level import is one the world allows.
fn allowed(name: &str) -> bool {
    if name == OWN_TYPES {
        return true;
    }
    let Some(at) = name.find('@') else {
        return false;
    };
    let (interface, version) = name.split_at(at);
    version.starts_with(WASI_VERSION) && ALLOWED_IMPORTS.contains(&interface)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_allowed_by_interface_and_wasi_version() {
        assert!(allowed("wasi:cli/environment@0.2.6"));
        assert!(allowed("wasi:io/streams@0.2.0"));
        assert!(allowed("apim:policy/types@0.1.0"));
        for refused in [
            "wasi:http/outgoing-handler@0.2.6",
            "wasi:sockets/tcp@0.2.6",
            "wasi:sockets/ip-name-lookup@0.2.0",
            "wasi:cli/environment@0.3.0",
            "wasi:cli/environment",
            "wasi:keyvalue/store@0.2.0-draft2",
            "apim:gateway/policy@0.1.0",
            "apim:policy/types@0.2.0",
        ] {
            assert!(!allowed(refused), "{refused}");
        }
    }

    #[test]
    fn what_is_not_a_component_is_refused() {
        assert_eq!(check(b"\0asm\x01\0\0\0"), Err(Refusal::NotAComponent));
        assert_eq!(check(b"not wasm"), Err(Refusal::NotAComponent));
        assert_eq!(check(b""), Err(Refusal::NotAComponent));
        let huge = vec![0u8; MAX_POLICY_BYTES + 1];
        assert_eq!(check(&huge), Err(Refusal::TooLarge(MAX_POLICY_BYTES + 1)));
        // A component's header followed by garbage.
        let broken = b"\0asm\x0d\0\x01\0\xff\xff";
        assert!(matches!(check(broken), Err(Refusal::Invalid(_))));
        // An empty component exports nothing.
        assert_eq!(check(b"\0asm\x0d\0\x01\0"), Err(Refusal::NoExport));
    }

    #[test]
    fn digests_are_lower_case_sha256() {
        let empty = digest(b"");
        assert_eq!(
            empty,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(is_digest(&empty));
        assert!(!is_digest(&empty.to_uppercase()));
        assert!(!is_digest("../etc/passwd"));
    }
}
