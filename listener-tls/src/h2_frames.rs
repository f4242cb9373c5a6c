//! Raw HTTP/2 frames, written by hand to probe the listeners with what no well-behaved
//! client sends (floods, header blocks that never end): this crate's tests and the
//! benchmark's floods part build them here.

/// HTTP/2's connection preface, which a client speaking it sends first.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Frame type HEADERS.
pub const HEADERS: u8 = 0x1;
/// Frame type RST_STREAM.
pub const RST_STREAM: u8 = 0x3;
/// Frame type SETTINGS.
pub const SETTINGS: u8 = 0x4;
/// Frame type GOAWAY.
pub const GOAWAY: u8 = 0x7;
/// Frame type CONTINUATION.
pub const CONTINUATION: u8 = 0x9;
/// Flag END_STREAM.
pub const END_STREAM: u8 = 0x1;
/// Flag END_HEADERS.
pub const END_HEADERS: u8 = 0x4;
/// Error code CANCEL (RST_STREAM, GOAWAY).
pub const CANCEL: u32 = 0x8;

/// One frame.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len())
        .expect("a frame's length")
        .to_be_bytes();
    let mut frame = vec![length[1], length[2], length[3], kind, flags];
    frame.extend_from_slice(&stream.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// The preface and an empty SETTINGS frame: what opens a client's connection.
pub fn hello() -> Vec<u8> {
    let mut hello = PREFACE.to_vec();
    hello.extend(frame(SETTINGS, 0, 0, &[]));
    hello
}

/// HPACK's integer of `value` in a `prefix_bits`-bit prefix after `flags` (RFC 7541,
/// 5.1), appended to `block`.
pub fn hpack_integer(block: &mut Vec<u8>, flags: u8, prefix_bits: u32, value: usize) {
    let max = (1usize << prefix_bits) - 1;
    if value < max {
        block.push(flags | value as u8);
        return;
    }
    block.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        block.push((rest & 0x7f) as u8 | 0x80);
        rest >>= 7;
    }
    block.push(rest as u8);
}

/// A literal header field without indexing whose name is entry `name` of HPACK's static
/// table, its value not Huffman-coded, appended to `block`.
pub fn hpack_literal(block: &mut Vec<u8>, name: usize, value: &[u8]) {
    hpack_integer(block, 0x00, 4, name);
    hpack_integer(block, 0x00, 7, value.len());
    block.extend_from_slice(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpack_integers_follow_rfc_7541() {
        // C.1.1: 10 in a 5-bit prefix; C.1.2: 1337 in a 5-bit prefix.
        let mut block = Vec::new();
        hpack_integer(&mut block, 0, 5, 10);
        assert_eq!(block, [0x0a]);
        block.clear();
        hpack_integer(&mut block, 0, 5, 1337);
        assert_eq!(block, [0x1f, 0x9a, 0x0a]);
    }
}
