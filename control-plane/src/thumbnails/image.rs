//! What a thumbnail may be: a PNG, JPEG or GIF image, told by its leading bytes, no
//! larger than [`MAX_IMAGE_BYTES`]. SVG is refused: it is a document that can carry
//! scripts and links, not an image a store can show safely from its own origin.
//!
//! The part's declared `Content-Type` must agree with the bytes when it names a type;
//! `application/octet-stream` (or none) is taken, as WSO2's own clients (apictl's
//! `CreateFormFile`) send that for every file.

use crate::error::{Error, Result};

/// Largest thumbnail, bytes (WSO2 2.6 sets none; its store shows them at 100×100).
pub const MAX_IMAGE_BYTES: usize = 1024 * 1024;

/// An image kind: its media type, the leading bytes it may start with, and the media
/// types that name it.
type Kind = (
    &'static str,
    &'static [&'static [u8]],
    &'static [&'static str],
);

/// The image kinds taken.
const KINDS: &[Kind] = &[
    (
        "image/png",
        &[b"\x89PNG\r\n\x1a\n"],
        &["image/png", "image/x-png"],
    ),
    (
        "image/jpeg",
        &[b"\xff\xd8\xff"],
        &["image/jpeg", "image/jpg", "image/pjpeg"],
    ),
    ("image/gif", &[b"GIF87a", b"GIF89a"], &["image/gif"]),
];

/// Types that say nothing of the content.
const UNSPECIFIC: &[&str] = &["application/octet-stream", ""];

/// The media type of an acceptable thumbnail, from its bytes and its declared type
/// (parameters dropped, lower case).
pub fn image_type(bytes: &[u8], declared: &str) -> Result<&'static str> {
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(Error::PayloadTooLarge);
    }
    let Some((kind, _, names)) = KINDS
        .iter()
        .find(|(_, magics, _)| magics.iter().any(|m| bytes.starts_with(m)))
    else {
        return Err(Error::Invalid(
            "The thumbnail must be a PNG, JPEG or GIF image".into(),
        ));
    };
    if UNSPECIFIC.contains(&declared) || names.contains(&declared) {
        Ok(kind)
    } else {
        Err(Error::Invalid(format!(
            "The thumbnail's content type '{declared}' does not match its content ({kind})"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn images_are_told_by_their_bytes_and_must_match_their_type() {
        assert_eq!(image_type(PNG, "image/png").unwrap(), "image/png");
        assert_eq!(
            image_type(PNG, "application/octet-stream").unwrap(),
            "image/png"
        );
        assert_eq!(
            image_type(b"\xff\xd8\xff\xe0JFIF", "image/jpg").unwrap(),
            "image/jpeg"
        );
        assert_eq!(image_type(b"GIF89a..", "").unwrap(), "image/gif");
        for (bytes, declared) in [
            (
                &b"<svg xmlns='http://www.w3.org/2000/svg'><script/></svg>"[..],
                "image/svg+xml",
            ),
            (b"<html><script>alert(1)</script>", "image/png"),
            (b"", "image/png"),
            (PNG, "image/gif"),
            (PNG, "text/html"),
        ] {
            assert!(matches!(
                image_type(bytes, declared),
                Err(Error::Invalid(_))
            ));
        }
        let big = [PNG, &vec![0; MAX_IMAGE_BYTES]].concat();
        assert!(matches!(
            image_type(&big, "image/png"),
            Err(Error::PayloadTooLarge)
        ));
    }
}
