//! Times as logs write them, and the wall clock as host and component read it.

use std::time::Duration;

/// Milliseconds since the Unix epoch by the wall clock (0 before it).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// The time `since` the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`, written into `out`
/// (no allocation: the gateway writes one per request).
pub fn rfc3339_millis(since: Duration, out: &mut [u8; 24]) -> &str {
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days(i64::try_from(secs / 86_400).unwrap_or(0));
    let of_day = secs % 86_400;
    let digits = |out: &mut [u8], mut value: u64| {
        for slot in out.iter_mut().rev() {
            *slot = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    digits(&mut out[0..4], u64::try_from(year).unwrap_or(0));
    out[4] = b'-';
    digits(&mut out[5..7], u64::from(month));
    out[7] = b'-';
    digits(&mut out[8..10], u64::from(day));
    out[10] = b'T';
    digits(&mut out[11..13], of_day / 3600);
    out[13] = b':';
    digits(&mut out[14..16], of_day / 60 % 60);
    out[16] = b':';
    digits(&mut out[17..19], of_day % 60);
    out[19] = b'.';
    digits(&mut out[20..23], u64::from(since.subsec_millis()));
    out[23] = b'Z';
    std::str::from_utf8(out).unwrap_or_default()
}

/// The Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        let mut out = [0u8; 24];
        let at = Duration::from_millis(1_764_134_485_123);
        assert_eq!(rfc3339_millis(at, &mut out), "2025-11-26T05:21:25.123Z");
        assert_eq!(
            rfc3339_millis(Duration::ZERO, &mut out),
            "1970-01-01T00:00:00.000Z"
        );
        let leap = Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(&rfc3339_millis(leap, &mut out)[..10], "2000-02-29");
    }
}
