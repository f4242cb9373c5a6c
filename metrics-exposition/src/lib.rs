//! What `/metrics` answers on both planes: the Prometheus text format (0.0.4) by default,
//! which every scraper and `promtool` read, and OpenMetrics 1.0 when the scraper's
//! `Accept` prefers it (Prometheus itself asks for it first).
//!
//! prometheus-client encodes OpenMetrics only; the Prometheus text is made from it: a
//! counter's HELP and TYPE name its samples (`_total`), an info metric is a gauge named
//! as its sample, `# UNIT` and `# EOF` go (that format has neither), and so do
//! OpenMetrics-only samples (`_created`).

use prometheus_client::registry::Registry;

/// A text format of the exposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text format, version 0.0.4.
    Prometheus,
    /// OpenMetrics 1.0 text.
    OpenMetrics,
}

const OPENMETRICS: &str = "application/openmetrics-text";

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it ranks it at least as
    /// high as the Prometheus text (`text/plain`, or any type), else the Prometheus text.
    pub fn asked_by(accept: Option<&str>) -> Self {
        let (mut openmetrics, mut text) = (0.0_f32, 0.0_f32);
        for range in accept.unwrap_or_default().split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let quality = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            match media.as_str() {
                OPENMETRICS => openmetrics = openmetrics.max(quality),
                "text/plain" | "text/*" | "*/*" => text = text.max(quality),
                _ => {}
            }
        }
        if openmetrics > 0.0 && openmetrics >= text {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    /// The answer's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// Every metric of `registry` in `format`; empty, logged by the caller's tracing, if it
/// cannot be encoded.
pub fn encode(registry: &Registry, format: Format) -> Result<String, std::fmt::Error> {
    let mut openmetrics = String::new();
    prometheus_client::encoding::text::encode(&mut openmetrics, registry)?;
    Ok(match format {
        Format::OpenMetrics => openmetrics,
        Format::Prometheus => prometheus_text(&openmetrics),
    })
}

/// The Prometheus text (0.0.4) of an OpenMetrics exposition.
fn prometheus_text(openmetrics: &str) -> String {
    let mut text = String::with_capacity(openmetrics.len());
    // HELP comes before the TYPE that says how the family's samples are named.
    let mut help: Option<&str> = None;
    let mut created: Option<String> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            help = Some(rest);
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (family, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let (name, kind) = sample_name_and_type(family, kind);
            if let Some(help) = help.take() {
                let said = help
                    .split_once(' ')
                    .map(|(_, said)| said)
                    .unwrap_or_default();
                text.push_str(&format!("# HELP {name} {}\n", said.replace("\\\"", "\"")));
            }
            text.push_str(&format!("# TYPE {name} {kind}\n"));
            created = (kind == "counter").then(|| format!("{family}_created"));
        } else if !only_in_openmetrics(line, created.as_deref()) {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// Whether `line` has no place in the Prometheus text: `# UNIT`, `# EOF`, or a sample of
/// the counter's `created` series.
fn only_in_openmetrics(line: &str, created: Option<&str>) -> bool {
    let is_created = |series: &str| {
        line.strip_prefix(series)
            .is_some_and(|rest| rest.starts_with([' ', '{']))
    };
    line.starts_with("# UNIT ") || line == "# EOF" || created.is_some_and(is_created)
}

/// The name and type the Prometheus text gives an OpenMetrics family of `kind`.
fn sample_name_and_type(family: &str, kind: &str) -> (String, &'static str) {
    match kind {
        "counter" => (format!("{family}_total"), "counter"),
        "gauge" => (family.to_string(), "gauge"),
        "histogram" | "gaugehistogram" => (family.to_string(), "histogram"),
        "summary" => (family.to_string(), "summary"),
        "info" => (format!("{family}_info"), "gauge"),
        "stateset" => (family.to_string(), "gauge"),
        _ => (family.to_string(), "untyped"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::metrics::info::Info;
    use prometheus_client::registry::Unit;

    fn registry() -> Registry {
        let mut registry = Registry::with_prefix("apim");
        let requests = Counter::<u64>::default();
        requests.inc();
        registry.register("requests", "Requests \"answered\"", requests);
        registry.register("in_use", "Instances in use", Gauge::<i64>::default());
        let seconds = Histogram::new([0.1, 1.0]);
        seconds.observe(0.5);
        registry.register_with_unit("duration", "How long", Unit::Seconds, seconds);
        registry.register("build", "The build", Info::new(vec![("version", "1")]));
        registry
    }

    /// Each family's HELP and TYPE name its samples; nothing OpenMetrics-only is left.
    #[test]
    fn the_prometheus_text_names_families_as_their_samples() {
        let text = encode(&registry(), Format::Prometheus).unwrap();
        for expected in [
            "# HELP apim_requests_total Requests \"answered\".\n# TYPE apim_requests_total counter\napim_requests_total 1\n",
            "# TYPE apim_in_use gauge\napim_in_use 0\n",
            "# HELP apim_duration_seconds How long.\n# TYPE apim_duration_seconds histogram\n",
            "apim_duration_seconds_count 1\n",
            "# TYPE apim_build_info gauge\napim_build_info{version=\"1\"} 1\n",
        ] {
            assert!(text.contains(expected), "{expected} missing from\n{text}");
        }
        assert!(
            !text.contains("# EOF") && !text.contains("# UNIT"),
            "{text}"
        );

        let openmetrics = encode(&registry(), Format::OpenMetrics).unwrap();
        assert!(openmetrics.ends_with("# EOF\n"), "{openmetrics}");
        assert!(openmetrics.contains("# TYPE apim_requests counter\n"));
    }

    #[test]
    fn openmetrics_only_when_it_ranks_first() {
        let prometheus = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert_eq!(Format::asked_by(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(
            Format::asked_by(Some("application/openmetrics-text")),
            Format::OpenMetrics
        );
        for prometheus_text in [
            None,
            Some(""),
            Some("*/*"),
            Some("text/plain"),
            Some("text/plain;version=0.0.4,application/openmetrics-text;q=0.5"),
            Some("application/openmetrics-text;q=0"),
            Some("garbage;;;q=x,,"),
        ] {
            assert_eq!(
                Format::asked_by(prometheus_text),
                Format::Prometheus,
                "{prometheus_text:?}"
            );
        }
    }
}
