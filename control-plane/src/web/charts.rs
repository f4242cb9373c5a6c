//! Analytics drawn on the server (SVG, no script) with the same figures as tables, for
//! any page of figures in the shape both analytics operations answer (`requests`,
//! `errors`, `latencyMs`, `series`, and a breakdown per API or per application): the
//! developer portal's per application, the publisher console's per API.

use askama::Template;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::portal::Chrome;

const CHART_WIDTH: f64 = 600.0;
const CHART_HEIGHT: f64 = 200.0;

/// The ranges a page offers: the query's value, what the page calls it, its minutes.
pub const RANGES: [(&str, &str, i64); 3] = [
    ("1h", "Last hour", 60),
    ("1d", "Last 24 hours", 24 * 60),
    ("7d", "Last 7 days", 7 * 24 * 60),
];

/// The range a query's `range` names (the first when none does), and where it starts
/// (RFC 3339).
pub fn range_of(asked: Option<&str>) -> (&'static str, String) {
    let (range, _, minutes) = RANGES
        .iter()
        .find(|(value, _, _)| asked == Some(*value))
        .copied()
        .unwrap_or(RANGES[0]);
    let from = (OffsetDateTime::now_utc() - time::Duration::minutes(minutes))
        .format(&Rfc3339)
        .unwrap_or_default();
    (range, from)
}

/// A page of analytics.
#[derive(Template)]
#[template(path = "analytics.html")]
pub struct AnalyticsPage {
    pub title: String,
    pub chrome: Chrome,
    /// Where the range form asks again, and the page it came from with its name.
    pub action: String,
    pub back: (String, &'static str),
    pub ranges: Vec<(&'static str, &'static str)>,
    pub range: &'static str,
    pub error: Option<String>,
    pub summary: String,
    pub interval: String,
    pub from: String,
    pub to: String,
    pub chart: ChartView,
    /// What the breakdown's rows are (`API`, `Application`), and the rows.
    pub breakdown: (&'static str, Vec<FiguresRow>),
    pub rows: Vec<FiguresRow>,
}

impl AnalyticsPage {
    /// The page of the analytics answer `body` (or the call's `error`), broken down by
    /// `breakdown`: its label, the answer's list, and how a row of it is named.
    pub fn of(
        (title, chrome): (String, Chrome),
        (action, back, range): (String, (String, &'static str), &'static str),
        body: &Value,
        error: Option<String>,
        breakdown: (&'static str, &str, fn(&Value) -> String),
    ) -> Self {
        let (label, list, name_of) = breakdown;
        let series = body["series"].as_array().cloned().unwrap_or_default();
        let total = FiguresRow::of(String::new(), body);
        let text = |name: &str| body[name].as_str().unwrap_or_default().to_string();
        AnalyticsPage {
            title,
            chrome,
            action,
            back,
            ranges: RANGES.iter().map(|(v, l, _)| (*v, *l)).collect(),
            range,
            error,
            summary: format!(
                "{} requests, {} errors; latency p50 {} ms, p95 {} ms, p99 {} ms.",
                total.requests, total.errors, total.p50, total.p95, total.p99
            ),
            interval: text("interval"),
            from: text("from"),
            to: text("to"),
            chart: chart(&series),
            breakdown: (
                label,
                body[list]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|item| FiguresRow::of(name_of(item), item))
                    .collect(),
            ),
            rows: series
                .iter()
                .map(|slot| {
                    let time = slot["time"].as_str().unwrap_or_default().to_string();
                    FiguresRow::of(time, slot)
                })
                .collect(),
        }
    }
}

/// Analytics drawn: a bar per slot (requests, errors over them) and a line per latency
/// percentile, scaled to the range's largest figure.
#[derive(Debug)]
pub struct ChartView {
    pub width: f64,
    pub height: f64,
    pub bars: Vec<BarView>,
    /// Each percentile's line, as SVG `points`.
    pub p50: String,
    pub p95: String,
    pub p99: String,
    /// The latency the chart's top stands for, ms.
    pub max_latency: String,
}

/// One slot's bar.
#[derive(Debug)]
pub struct BarView {
    pub x: String,
    pub width: String,
    pub ok_y: String,
    pub ok_height: String,
    pub err_y: String,
    pub err_height: String,
    /// What it stands for, in words.
    pub title: String,
}

/// One row of figures (a slot, an API, an application), as text.
#[derive(Debug)]
pub struct FiguresRow {
    pub name: String,
    pub requests: u64,
    pub errors: u64,
    pub p50: String,
    pub p95: String,
    pub p99: String,
}

impl FiguresRow {
    /// `figures` (`requests`, `errors`, `latencyMs`) named `name`.
    pub fn of(name: String, figures: &Value) -> Self {
        let latency = |p: &str| {
            figures["latencyMs"][p]
                .as_f64()
                .map_or("–".to_string(), |ms| format!("{ms:.1}"))
        };
        FiguresRow {
            name,
            requests: figures["requests"].as_u64().unwrap_or(0),
            errors: figures["errors"].as_u64().unwrap_or(0),
            p50: latency("p50"),
            p95: latency("p95"),
            p99: latency("p99"),
        }
    }
}

/// The charts of an analytics answer's `series`.
pub fn chart(series: &[Value]) -> ChartView {
    let count = series.len().max(1) as f64;
    let slot_width = CHART_WIDTH / count;
    let max_requests = series
        .iter()
        .filter_map(|s| s["requests"].as_u64())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let latency = |s: &Value, p: &str| s["latencyMs"][p].as_f64();
    let max_latency = series
        .iter()
        .filter_map(|s| latency(s, "p99"))
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let scaled = |value: f64, max: f64| CHART_HEIGHT - value / max * CHART_HEIGHT;
    let bars = series
        .iter()
        .enumerate()
        .map(|(i, slot)| {
            let requests = slot["requests"].as_u64().unwrap_or(0) as f64;
            let errors = slot["errors"].as_u64().unwrap_or(0) as f64;
            let top = scaled(requests, max_requests);
            let error_top = scaled(errors, max_requests);
            BarView {
                x: format!("{:.2}", i as f64 * slot_width),
                width: format!("{:.2}", (slot_width * 0.8).max(0.5)),
                ok_y: format!("{top:.2}"),
                ok_height: format!("{:.2}", CHART_HEIGHT - top),
                err_y: format!("{error_top:.2}"),
                err_height: format!("{:.2}", CHART_HEIGHT - error_top),
                title: format!(
                    "{}: {} requests, {} errors",
                    slot["time"].as_str().unwrap_or_default(),
                    requests as u64,
                    errors as u64
                ),
            }
        })
        .collect();
    let line = |p: &str| {
        series
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| {
                let ms = latency(slot, p)?;
                let x = (i as f64 + 0.4) * slot_width;
                Some(format!("{x:.2},{:.2}", scaled(ms, max_latency)))
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    ChartView {
        width: CHART_WIDTH,
        height: CHART_HEIGHT,
        bars,
        p50: line("p50"),
        p95: line("p95"),
        p99: line("p99"),
        max_latency: format!("{max_latency:.1}"),
    }
}
