//! What an analytics query and a gateway's report may be: the span of time and its slots
//! (bounded, so that no query reads or answers without limit), and the ids it names.

use apim_manifest::analytics::{AnalyticsReport, MAX_ID_CHARS, MAX_ROWS_PER_REPORT};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::{Error, Result};

/// Most slots one answer has.
pub const MAX_SLOTS: i64 = 1_440;
/// The slots a query may ask for, minutes each, with their names.
const INTERVALS: [(&str, i64); 9] = [
    ("1m", 1),
    ("5m", 5),
    ("15m", 15),
    ("30m", 30),
    ("1h", 60),
    ("6h", 360),
    ("12h", 720),
    ("1d", 1_440),
    ("7d", 10_080),
];
/// Slots an answer has at most when the query leaves the interval to us.
const DEFAULT_SLOTS: i64 = 300;
/// The span when the query gives no `from`: the hour before `to`.
const DEFAULT_SPAN_MINUTES: i64 = 60;
/// How far ahead of the control plane's clock a gateway's minutes may be.
const MAX_CLOCK_AHEAD_MINUTES: i64 = 60;
/// Longest gateway id and process id a report may carry.
const MAX_NAME_CHARS: usize = 200;

/// A span of whole Unix minutes, `[from, to)`, cut into slots of `slot_minutes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub from: i64,
    pub to: i64,
    pub slot_minutes: i64,
    /// The slot's name (`5m`).
    pub interval: &'static str,
}

impl Window {
    /// The window `from`..`to` (RFC 3339; `to` defaults to `now`, `from` to an hour
    /// before `to`), in slots of `interval` (the smallest giving at most
    /// [`DEFAULT_SLOTS`] when absent). `from` is taken back to its minute and `to` on to
    /// the next. Refused (400): unreadable times, an empty or reversed span, one longer
    /// than `max_days`, an unknown interval, or more than [`MAX_SLOTS`] slots.
    pub fn parse(
        from: Option<&str>,
        to: Option<&str>,
        interval: Option<&str>,
        now: OffsetDateTime,
        max_days: u64,
    ) -> Result<Window> {
        let to_time = to.map(|t| time_of("to", t)).transpose()?.unwrap_or(now);
        let to = minute_after(to_time);
        let from = match from {
            Some(from) => minute_of(time_of("from", from)?),
            None => to - DEFAULT_SPAN_MINUTES,
        };
        if from >= to {
            return Err(Error::Invalid("'from' must be before 'to'".into()));
        }
        let max_minutes = i64::try_from(max_days).unwrap_or(i64::MAX / 1_440) * 1_440;
        if to - from > max_minutes {
            return Err(Error::Invalid(format!(
                "The range from 'from' to 'to' may span at most {max_days} days (the retention)"
            )));
        }
        let (name, slot_minutes) = match interval {
            Some(asked) => INTERVALS
                .into_iter()
                .find(|(name, _)| *name == asked)
                .ok_or_else(|| {
                    let known: Vec<&str> = INTERVALS.iter().map(|(name, _)| *name).collect();
                    Error::Invalid(format!("'interval' must be one of {}", known.join(", ")))
                })?,
            None => INTERVALS
                .into_iter()
                .find(|(_, minutes)| slots(from, to, *minutes) <= DEFAULT_SLOTS)
                .unwrap_or(INTERVALS[INTERVALS.len() - 1]),
        };
        if slots(from, to, slot_minutes) > MAX_SLOTS {
            return Err(Error::Invalid(format!(
                "An interval of {name} cuts this range into more than {MAX_SLOTS} points; \
                 ask for a longer one"
            )));
        }
        Ok(Window {
            from,
            to,
            slot_minutes,
            interval: name,
        })
    }

    /// The first minute of each slot the window touches.
    pub fn slots(&self) -> impl Iterator<Item = i64> + '_ {
        let first = self.from.div_euclid(self.slot_minutes) * self.slot_minutes;
        (first..self.to).step_by(usize::try_from(self.slot_minutes).unwrap_or(1))
    }
}

/// How many slots of `minutes` the span `[from, to)` touches.
fn slots(from: i64, to: i64, minutes: i64) -> i64 {
    (to - 1).div_euclid(minutes) - from.div_euclid(minutes) + 1
}

fn time_of(name: &str, text: &str) -> Result<OffsetDateTime> {
    OffsetDateTime::parse(text, &Rfc3339).map_err(|_| {
        Error::Invalid(format!(
            "'{name}' must be an RFC 3339 time, such as 2026-01-31T12:00:00Z"
        ))
    })
}

/// The Unix minute `time` falls in.
pub fn minute_of(time: OffsetDateTime) -> i64 {
    time.unix_timestamp().div_euclid(60)
}

/// The end of a span reaching `time` (exclusive): the minute `time` falls in is part of
/// the span, unless `time` is its very start.
fn minute_after(time: OffsetDateTime) -> i64 {
    let seconds = time.unix_timestamp();
    let minute = seconds.div_euclid(60);
    if seconds.rem_euclid(60) == 0 && time.nanosecond() == 0 {
        minute
    } else {
        minute + 1
    }
}

/// The time a Unix minute starts, RFC 3339.
pub fn time_text(minute: i64) -> String {
    OffsetDateTime::from_unix_timestamp(minute.saturating_mul(60))
        .ok()
        .and_then(|time| time.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// An application id a query may name (400 otherwise): what ids are made of.
pub fn check_application_id(id: &str) -> Result<()> {
    let well_formed = !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if well_formed {
        Ok(())
    } else {
        Err(Error::Invalid(
            "'applicationId' must be an application's id".into(),
        ))
    }
}

/// Refuses (400) a report that cannot be what a gateway counted: too many rows, bad
/// names, counts that do not add up, minutes too far ahead. Rows older than
/// `forget_before` are left out (they would be deleted at once).
pub fn check_report(
    mut report: AnalyticsReport,
    now_minute: i64,
    forget_before: i64,
) -> Result<AnalyticsReport> {
    if report.rows.len() > MAX_ROWS_PER_REPORT {
        return Err(Error::Invalid(format!(
            "A report has at most {MAX_ROWS_PER_REPORT} rows"
        )));
    }
    let named = |name: &str| !name.is_empty() && name.chars().count() <= MAX_NAME_CHARS;
    if !named(&report.gateway) || !named(&report.boot) {
        return Err(Error::Invalid(
            "gateway and boot must be names of at most 200 characters".into(),
        ));
    }
    for row in &report.rows {
        if let Some(why) = row.inconsistency() {
            return Err(Error::Invalid(why.into()));
        }
        if row.minute > now_minute + MAX_CLOCK_AHEAD_MINUTES {
            return Err(Error::Invalid("A row's minute is in the future".into()));
        }
    }
    report.rows.retain(|row| row.minute >= forget_before);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-03-01 12:30:20 UTC);

    fn window(from: Option<&str>, to: Option<&str>, interval: Option<&str>) -> Result<Window> {
        Window::parse(from, to, interval, NOW, 90)
    }

    #[test]
    fn windows_cover_whole_minutes_in_bounded_slots() {
        let hour = window(None, None, None).unwrap();
        assert_eq!(hour.to, minute_of(NOW) + 1);
        assert_eq!(hour.to - hour.from, 60);
        assert_eq!((hour.interval, hour.slots().count()), ("1m", 60));
        let day = window(
            Some("2026-02-01T00:00:00Z"),
            Some("2026-02-02T00:00:00Z"),
            None,
        )
        .unwrap();
        assert_eq!((day.interval, day.slots().count()), ("5m", 288));
        let aligned = window(
            Some("2026-02-01T00:07:30+00:00"),
            Some("2026-02-01T01:00:00Z"),
            Some("15m"),
        )
        .unwrap();
        let first = aligned.slots().next().unwrap();
        assert_eq!(time_text(first), "2026-02-01T00:00:00Z");
        assert_eq!(aligned.slots().count(), 4);
    }

    #[test]
    fn hostile_windows_are_refused() {
        let refused =
            |from, to, interval| matches!(window(from, to, interval), Err(Error::Invalid(_)));
        assert!(refused(Some("yesterday"), None, None));
        assert!(refused(
            Some("2026-02-01T00:00:00Z"),
            Some("2026-01-01T00:00:00Z"),
            None
        ));
        assert!(refused(
            Some("2026-02-01T00:00:00Z"),
            Some("2026-02-01T00:00:00Z"),
            None
        ));
        assert!(
            refused(Some("1990-01-01T00:00:00Z"), None, Some("7d")),
            "past the retention"
        );
        assert!(refused(None, None, Some("2m")));
        assert!(refused(
            Some("2026-02-01T00:00:00Z"),
            Some("2026-02-03T00:00:00Z"),
            Some("1m")
        ));
        assert!(!refused(
            Some("2026-02-01T00:00:00Z"),
            Some("2026-02-02T00:00:00Z"),
            Some("1m")
        ));
    }

    #[test]
    fn application_ids_are_ids() {
        assert!(check_application_id("6f1b7a2e-4c1d-4a57-9d0e-3f6f2b9c8a11").is_ok());
        for bad in ["", "a'b", "x y", &"a".repeat(200)] {
            assert!(check_application_id(bad).is_err(), "{bad}");
        }
    }
}
