//! What an uploaded certificate must be: one X.509 certificate in PEM, within its
//! validity period, and nothing else: a private key (or anything but that one certificate)
//! in the upload is refused, never stored. And how gateways will trust it
//! ([`trusted_as`]).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use x509_parser::pem::Pem;

/// Largest certificate upload taken, bytes (a certificate is a few KiB).
pub const MAX_CERTIFICATE_BYTES: usize = 64 * 1024;

/// A certificate read from an upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCertificate {
    /// The certificate alone, PEM encoded again (nothing around it kept).
    pub pem: String,
    /// Its subject, e.g. `CN=wso2.com, O=wso2`.
    pub subject: String,
    /// `V1`, `V2` or `V3`.
    pub version: String,
    /// Unix seconds.
    pub not_before: i64,
    /// Unix seconds.
    pub not_after: i64,
}

/// Reads an upload at `now` (Unix seconds); why it is refused, otherwise.
pub fn parse_certificate(upload: &[u8], now: i64) -> Result<ParsedCertificate, String> {
    if upload.len() > MAX_CERTIFICATE_BYTES {
        return Err(format!(
            "The certificate must be at most {MAX_CERTIFICATE_BYTES} bytes"
        ));
    }
    let text = std::str::from_utf8(upload).map_err(|_| {
        "The certificate must be PEM text (-----BEGIN CERTIFICATE-----)".to_string()
    })?;
    // Looked for in the text itself, so that a key hidden in a malformed block is refused too.
    if text.contains("PRIVATE KEY") {
        return Err("A private key must not be uploaded; send the certificate only".into());
    }
    let blocks = pem_blocks(upload)?;
    let [block] = blocks.as_slice() else {
        return Err(format!(
            "The upload must hold exactly one PEM certificate; it holds {} PEM blocks",
            blocks.len()
        ));
    };
    if block.label != "CERTIFICATE" {
        return Err(format!(
            "The upload holds a PEM block '{}', not a CERTIFICATE",
            block.label
        ));
    }
    let certificate = read_der(&block.contents)?;
    if certificate.not_after < now {
        return Err("The certificate has expired".into());
    }
    Ok(certificate)
}

/// A certificate as a WSO2 project carries it: base64 of its DER (as WSO2 exports it) or
/// of its PEM (as WSO2 also takes it), read as [`parse_certificate`] reads an upload.
pub fn parse_carried(base64: &str, now: i64) -> Result<ParsedCertificate, String> {
    let bytes = STANDARD
        .decode(base64.trim())
        .map_err(|_| "The certificate is not base64".to_string())?;
    if bytes.starts_with(b"-----") {
        return parse_certificate(&bytes, now);
    }
    if bytes.len() > MAX_CERTIFICATE_BYTES {
        return Err(format!(
            "The certificate must be at most {MAX_CERTIFICATE_BYTES} bytes"
        ));
    }
    let certificate = read_der(&bytes)?;
    if certificate.not_after < now {
        return Err("The certificate has expired".into());
    }
    Ok(certificate)
}

/// The DER of a stored certificate's PEM, base64-encoded, as a WSO2 project carries it.
pub fn carried_form(pem: &str) -> Option<String> {
    let block = Pem::iter_from_buffer(pem.as_bytes()).next()?.ok()?;
    Some(STANDARD.encode(&block.contents))
}

/// An endpoint certificate is trusted when the endpoint presents it as its own.
pub const AS_ENDPOINT_CERTIFICATE: &str = "endpoint certificate";
/// An authority's is trusted, besides, when the endpoint's chain verifies to it.
pub const AS_CERTIFICATE_AUTHORITY: &str = "certificate authority";

/// How gateways trust a stored certificate (PEM) for its endpoint: as the endpoint's own
/// certificate always, and as an authority too when it says it is one (basicConstraints
/// `cA`), as the gateway reads it.
pub fn trusted_as(pem: &str) -> Vec<&'static str> {
    let authority = Pem::iter_from_buffer(pem.as_bytes())
        .next()
        .and_then(Result::ok)
        .is_some_and(|block| is_authority(&block.contents));
    if authority {
        vec![AS_ENDPOINT_CERTIFICATE, AS_CERTIFICATE_AUTHORITY]
    } else {
        vec![AS_ENDPOINT_CERTIFICATE]
    }
}

/// Whether the certificate of `der` says it is an authority.
fn is_authority(der: &[u8]) -> bool {
    x509_parser::parse_x509_certificate(der)
        .ok()
        .and_then(|(_, parsed)| {
            parsed
                .basic_constraints()
                .ok()
                .flatten()
                .map(|b| b.value.ca)
        })
        .unwrap_or(false)
}

/// Every PEM block of the upload; an error when one is malformed.
fn pem_blocks(upload: &[u8]) -> Result<Vec<Pem>, String> {
    let blocks: Result<Vec<Pem>, _> = Pem::iter_from_buffer(upload).collect();
    blocks.map_err(|err| format!("The certificate is not valid PEM: {err}"))
}

/// The certificate of DER bytes, which must hold it and nothing more.
fn read_der(der: &[u8]) -> Result<ParsedCertificate, String> {
    let (rest, certificate) = x509_parser::parse_x509_certificate(der)
        .map_err(|err| format!("The certificate is not a valid X.509 certificate: {err}"))?;
    if !rest.is_empty() {
        return Err("The certificate has bytes past its end".into());
    }
    let validity = certificate.validity();
    Ok(ParsedCertificate {
        pem: pem_of(der),
        subject: certificate.subject().to_string(),
        version: format!("V{}", certificate.version().0 + 1),
        not_before: validity.not_before.timestamp(),
        not_after: validity.not_after.timestamp(),
    })
}

/// DER as PEM, 64 characters a line.
fn pem_of(der: &[u8]) -> String {
    let encoded = STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in encoded.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate valid until 2125 (openssl req -x509 -days 36500).
    const FIXTURE_CERT: &str = include_str!("fixture.crt");
    const FIXTURE_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIB4PmVhB0u1Z6Zk1bJj0b1U6vOqzZZ0n5Q6lq0y1bq9g\n-----END PRIVATE KEY-----\n";

    #[test]
    fn a_carried_certificate_is_read_as_der_or_pem() {
        let parsed = parse_certificate(FIXTURE_CERT.as_bytes(), 0).unwrap();
        let der = carried_form(&parsed.pem).unwrap();
        assert_eq!(parse_carried(&der, 0).unwrap(), parsed);
        let pem = STANDARD.encode(FIXTURE_CERT);
        assert_eq!(parse_carried(&pem, 0).unwrap(), parsed);
        let key = STANDARD.encode(FIXTURE_KEY);
        assert!(parse_carried(&key, 0).unwrap_err().contains("private key"));
        assert!(parse_carried("not base64!", 0).is_err());
        assert!(parse_carried(&STANDARD.encode(b"junk"), 0).is_err());
    }

    #[test]
    fn one_certificate_is_taken_and_anything_else_refused() {
        let (cert, key) = (FIXTURE_CERT, FIXTURE_KEY);
        let parsed = parse_certificate(cert.as_bytes(), 1_700_000_000).unwrap();
        assert!(parsed.subject.contains("CN="), "{}", parsed.subject);
        assert_eq!(parsed.version, "V3");
        assert!(parsed.not_before < parsed.not_after);
        assert_eq!(
            parse_certificate(parsed.pem.as_bytes(), 1_700_000_000).unwrap(),
            parsed
        );

        let refused =
            |upload: &str| parse_certificate(upload.as_bytes(), 1_700_000_000).unwrap_err();
        assert!(refused(key).contains("private key"));
        assert!(refused(&format!("{cert}{key}")).contains("private key"));
        assert!(refused(&format!("{cert}{cert}")).contains("exactly one"));
        assert!(refused("not a certificate").contains("exactly one"));
        assert!(refused("").contains("exactly one"));
        let garbled = cert.replace("MII", "AAA");
        assert!(refused(&garbled).contains("not a valid X.509"));
        assert!(
            parse_certificate(&[0xff, 0xfe], 0)
                .unwrap_err()
                .contains("PEM")
        );
        let expired = parse_certificate(cert.as_bytes(), parsed.not_after + 1).unwrap_err();
        assert!(expired.contains("expired"));
    }

    /// openssl's own self-signed certificate says it is an authority: trusted both ways.
    #[test]
    fn an_authority_is_trusted_both_ways() {
        assert_eq!(
            trusted_as(FIXTURE_CERT),
            [AS_ENDPOINT_CERTIFICATE, AS_CERTIFICATE_AUTHORITY]
        );
        assert_eq!(trusted_as("not a certificate"), [AS_ENDPOINT_CERTIFICATE]);
    }
}
