//! A message's headers packed into one buffer, as `apim:gateway/policy`'s `request-head`
//! carries them from edge-gateway to the component. As a list of pairs, each header cost
//! the host two allocations in the guest's memory, each a call into the guest; packed, the
//! whole list costs one.
//!
//! Each header is its name's length and its value's length (each a `u32`, little-endian),
//! then the name's bytes and the value's. Names are UTF-8 (HTTP names are ASCII tokens).
//!
//! Texts that always come together (the `call` record's) are packed the same way
//! ([`pack_texts`]): each its length, then its bytes.

use crate::Headers;

/// The bytes that lead each header: the name's length and the value's.
const LENGTHS: usize = 8;

/// `headers` (names and values) packed.
pub fn pack<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Vec<u8> {
    let mut packed = Vec::with_capacity(512);
    for (name, value) in headers {
        let (Ok(name_len), Ok(value_len)) = (u32::try_from(name.len()), u32::try_from(value.len()))
        else {
            // Beyond 4 GiB: no HTTP message carries such a header.
            continue;
        };
        packed.extend_from_slice(&name_len.to_le_bytes());
        packed.extend_from_slice(&value_len.to_le_bytes());
        packed.extend_from_slice(name.as_bytes());
        packed.extend_from_slice(value);
    }
    packed
}

/// A packing that cannot be read: cut short, or a name that is not UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// The headers `packed` holds, in order.
pub fn unpack(mut packed: &[u8]) -> Result<Headers, Malformed> {
    let mut headers = Headers::with_capacity(8);
    while !packed.is_empty() {
        let (lengths, rest) = packed.split_first_chunk::<LENGTHS>().ok_or(Malformed)?;
        let (name_len, value_len) = lengths.split_at(4);
        let name_len = length(name_len)?;
        let end = name_len.checked_add(length(value_len)?).ok_or(Malformed)?;
        let header = rest.get(..end).ok_or(Malformed)?;
        let (name, value) = header.split_at(name_len);
        let name = crate::text(name).ok_or(Malformed)?;
        headers.push((name.to_owned(), value.to_vec()));
        packed = &rest[end..];
    }
    Ok(headers)
}

/// `texts` packed in order, each its length (a `u32`, little-endian) then its bytes: one
/// allocation for all of them. A text beyond 4 GiB is packed empty.
pub fn pack_texts(texts: &[&str]) -> Vec<u8> {
    let size = texts.iter().map(|text| 4 + text.len()).sum();
    let mut packed = Vec::with_capacity(size);
    for text in texts {
        let (len, text) = match u32::try_from(text.len()) {
            Ok(len) => (len, text.as_bytes()),
            Err(_) => (0, &[][..]),
        };
        packed.extend_from_slice(&len.to_le_bytes());
        packed.extend_from_slice(text);
    }
    packed
}

/// The `N` texts [`pack_texts`] packed, borrowed from `packed`: refused when there are
/// more or fewer, or one is cut short or not UTF-8.
pub fn unpack_texts<const N: usize>(mut packed: &[u8]) -> Result<[&str; N], Malformed> {
    let mut texts = [""; N];
    for text in &mut texts {
        let (len, rest) = packed.split_first_chunk::<4>().ok_or(Malformed)?;
        let len = length(len)?;
        let bytes = rest.get(..len).ok_or(Malformed)?;
        *text = crate::text(bytes).ok_or(Malformed)?;
        packed = &rest[len..];
    }
    if packed.is_empty() {
        Ok(texts)
    } else {
        Err(Malformed)
    }
}

/// A little-endian `u32` length (four bytes, as [`unpack`] splits them).
fn length(bytes: &[u8]) -> Result<usize, Malformed> {
    let bytes: [u8; 4] = bytes.try_into().map_err(|_| Malformed)?;
    usize::try_from(u32::from_le_bytes(bytes)).map_err(|_| Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &[u8])]) -> Headers {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_vec()))
            .collect()
    }

    #[test]
    fn texts_come_back_borrowed_and_only_as_many_as_were_packed() {
        let packed = pack_texts(&["Pets", "", "v1", "/pets/{id}", "ünï"]);
        assert_eq!(
            unpack_texts::<5>(&packed),
            Ok(["Pets", "", "v1", "/pets/{id}", "ünï"])
        );
        assert_eq!(unpack_texts::<4>(&packed), Err(Malformed), "one left over");
        assert_eq!(unpack_texts::<6>(&packed), Err(Malformed), "one missing");
        for cut in 0..packed.len() {
            assert_eq!(
                unpack_texts::<5>(&packed[..cut]),
                Err(Malformed),
                "cut at {cut}"
            );
        }
        let mut not_utf8 = pack_texts(&["ab"]);
        not_utf8[4] = 0xff;
        assert_eq!(unpack_texts::<1>(&not_utf8), Err(Malformed));
        assert_eq!(unpack_texts::<0>(&[]), Ok([]));
    }

    #[test]
    fn headers_come_back_in_order_with_any_bytes_in_values() {
        let sent = headers(&[
            ("host", b"gw.example"),
            ("x-empty", b""),
            ("accept", b"a"),
            ("accept", b"b\xff\x00:\r\n"),
        ]);
        let packed = pack(sent.iter().map(|(n, v)| (n.as_str(), v.as_slice())));
        assert_eq!(unpack(&packed), Ok(sent));
        assert_eq!(unpack(&pack([])), Ok(Headers::new()));
    }

    #[test]
    fn a_packing_cut_short_or_with_a_bad_name_is_refused() {
        let packed = pack([("authorization", b"Bearer x".as_slice())]);
        for end in 1..packed.len() {
            assert_eq!(unpack(&packed[..end]), Err(Malformed), "cut at {end}");
        }
        let mut bad_name = packed.clone();
        bad_name[LENGTHS] = 0xff;
        assert_eq!(unpack(&bad_name), Err(Malformed));
        let mut huge = packed;
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(unpack(&huge), Err(Malformed));
    }
}
