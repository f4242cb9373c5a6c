//! W3C Trace Context (`traceparent`, <https://www.w3.org/TR/trace-context/>), as both
//! gateways' paths handle it: a request's trace is the one its `traceparent` names when
//! that is valid, a new one otherwise; backends get a `traceparent` naming the gateway's
//! span as their parent. Parsing and formatting allocate nothing (the gateway's request
//! path runs them on every request), and hostile values are never passed on: a header
//! that does not parse, or comes more than once, starts a new trace (and its
//! `tracestate` is dropped, as it belongs to the trace it named).

/// The header naming a request's trace and parent span.
pub const TRACEPARENT: &str = "traceparent";
/// The vendors' state of the trace `traceparent` names.
pub const TRACESTATE: &str = "tracestate";
/// The `sampled` trace flag: the caller may have recorded its span.
pub const SAMPLED: u8 = 0x01;
/// Length of a version-00 `traceparent` value.
pub const HEADER_LEN: usize = 55;

/// A parsed `traceparent`: whose trace, and which span is the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace's id, never 0.
    pub trace_id: u128,
    /// The parent span's id, never 0.
    pub span_id: u64,
    /// Trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// Reads a `traceparent` value: `00-<32 hex>-<16 hex>-<2 hex>` in lower case, ids not
    /// all zero; a later version's value is read by its first four fields, as the
    /// specification asks, when what follows them starts with `-`. `None` when invalid.
    pub fn parse(value: &[u8]) -> Option<Self> {
        let version = hex_field(value.get(0..2)?)?;
        let valid_length = match version {
            0 => value.len() == HEADER_LEN,
            0xff => false,
            _ => value.len() == HEADER_LEN || value.get(HEADER_LEN) == Some(&b'-'),
        };
        if !valid_length || value[2] != b'-' || value[35] != b'-' || value[52] != b'-' {
            return None;
        }
        let trace_id = hex_field(&value[3..35])?;
        let span_id = u64::try_from(hex_field(&value[36..52])?).ok()?;
        let flags = u8::try_from(hex_field(&value[53..55])?).ok()?;
        (trace_id != 0 && span_id != 0).then_some(Self {
            trace_id,
            span_id,
            flags,
        })
    }

    /// The same trace with `span_id` as the parent.
    pub fn with_parent(self, span_id: u64) -> Self {
        Self {
            span_id: nonzero(span_id),
            ..self
        }
    }

    /// Whether the `sampled` flag is set.
    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }

    /// The version-00 header value.
    pub fn header(&self) -> [u8; HEADER_LEN] {
        let mut value = [b'-'; HEADER_LEN];
        value[0..2].copy_from_slice(b"00");
        write_hex(&mut value[3..35], self.trace_id);
        write_hex(&mut value[36..52], u128::from(self.span_id));
        write_hex(&mut value[53..55], u128::from(self.flags));
        value
    }

    /// The trace id as 32 lower-case hex digits (as access logs and OTLP viewers show it).
    pub fn trace_id_hex(&self) -> [u8; 32] {
        let mut hex = [0u8; 32];
        write_hex(&mut hex, self.trace_id);
        hex
    }
}

/// A request's trace, from the values of its `traceparent` headers: the one value when
/// it parses, `None` when there is none, several, or one that does not.
pub fn incoming<'a>(mut values: impl Iterator<Item = &'a [u8]>) -> Option<TraceParent> {
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    TraceParent::parse(first)
}

/// A new trace (flags as given) whose parent is `span_id`, from random bits: ids of 0,
/// which mean "none", become 1.
pub fn new_trace(random_trace_id: u128, span_id: u64, flags: u8) -> TraceParent {
    TraceParent {
        trace_id: random_trace_id.max(1),
        span_id: nonzero(span_id),
        flags,
    }
}

/// A span id from random bits, never 0.
pub fn nonzero(span_id: u64) -> u64 {
    span_id.max(1)
}

/// Hex digits read as a number: lower case only (the specification's form).
fn hex_field(digits: &[u8]) -> Option<u128> {
    digits.iter().try_fold(0u128, |acc, &digit| {
        let value = match digit {
            b'0'..=b'9' => digit - b'0',
            b'a'..=b'f' => digit - b'a' + 10,
            _ => return None,
        };
        Some(acc << 4 | u128::from(value))
    })
}

/// Writes `n`'s low `out.len()` hex digits into `out`, most significant first.
fn write_hex(out: &mut [u8], mut n: u128) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for slot in out.iter_mut().rev() {
        *slot = DIGITS[(n & 0xf) as usize];
        n >>= 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &[u8] = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_specifications_example_round_trips() {
        let parent = TraceParent::parse(EXAMPLE).unwrap();
        assert_eq!(parent.trace_id, 0x4bf92f3577b34da6a3ce929d0e0e4736);
        assert_eq!(parent.span_id, 0x00f067aa0ba902b7);
        assert!(parent.sampled());
        assert_eq!(&parent.header()[..], EXAMPLE);
        assert_eq!(
            &parent.trace_id_hex()[..],
            b"4bf92f3577b34da6a3ce929d0e0e4736"
        );
        let child = parent.with_parent(0xab);
        assert_eq!(
            &child.header()[..],
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00000000000000ab-01"
        );
    }

    #[test]
    fn hostile_or_malformed_values_are_refused() {
        let refused: [&[u8]; 12] = [
            b"",
            b"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            b"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            b"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            b"00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            b"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nx: y",
            b"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            b"0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ];
        for value in refused {
            assert_eq!(
                TraceParent::parse(value),
                None,
                "{}",
                String::from_utf8_lossy(value)
            );
        }
        // A later version: its first four fields, whatever follows a `-`.
        let later = b"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-not";
        assert!(TraceParent::parse(later).is_some());
    }

    #[test]
    fn only_one_valid_header_names_the_trace() {
        assert!(incoming([EXAMPLE].into_iter()).is_some());
        assert_eq!(incoming(std::iter::empty()), None);
        assert_eq!(incoming([EXAMPLE, EXAMPLE].into_iter()), None);
        let made = new_trace(0, 0, 0);
        assert_eq!((made.trace_id, made.span_id), (1, 1));
    }
}
