//! Prometheus' text exposition format, as an exporter serves it on `/metrics`: each sample's
//! series (its name and labels, as the text writes them) and value, and the type its family's
//! `# TYPE` line gives — a counter's change over a window means something, a gauge's does not.

use std::collections::BTreeMap;

/// One sample of a scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// `name{label="value",…}` as exposed (labels in the exporter's order).
    pub series: String,
    pub value: f64,
    /// The family's type: "counter", "gauge", …; "untyped" when no `# TYPE` line says.
    pub kind: String,
}

/// Every sample of `text`; a line that is not one (a comment, a malformed line) is skipped,
/// as Prometheus' own parser would refuse the scrape but a probe should not fail a run for it.
pub fn samples(text: &str) -> Vec<Sample> {
    let mut kinds: BTreeMap<&str, &str> = BTreeMap::new();
    let mut found = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(declared) = line.strip_prefix("# TYPE ") {
            let mut words = declared.split_whitespace();
            if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                kinds.insert(name, kind);
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((series, value)) = split_sample(line) {
            let name = &series[..series.find('{').unwrap_or(series.len())];
            found.push(Sample {
                series: series.to_string(),
                value,
                kind: kinds.get(name).unwrap_or(&"untyped").to_string(),
            });
        }
    }
    found
}

/// `name{labels} value [timestamp]` → (`name{labels}`, value). Label values may hold spaces,
/// `}` and escaped quotes, so the labels end at the `}` outside every quoted value.
fn split_sample(line: &str) -> Option<(&str, f64)> {
    let series_end = match line.find(['{', ' ', '\t']) {
        Some(open) if line[open..].starts_with('{') => open + labels_end(&line[open..])? + 1,
        Some(space) => space,
        None => return None,
    };
    let (series, rest) = line.split_at(series_end);
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        other => other.parse().ok()?,
    };
    (!series.is_empty()).then_some((series, value))
}

/// The index of the `}` closing the labels that `text` begins with.
fn labels_end(text: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (index, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(index),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_carry_their_family_s_type() {
        let text = "# HELP cnpg_pg_stat_database_xact_commit Number of transactions committed\n\
                    # TYPE cnpg_pg_stat_database_xact_commit counter\n\
                    cnpg_pg_stat_database_xact_commit{datname=\"app\"} 1234\n\
                    cnpg_pg_stat_database_xact_commit{datname=\"odd} \\\"name\\\"\"} 5 1700000000000\n\
                    # TYPE cnpg_backends_total gauge\n\
                    cnpg_backends_total{datname=\"app\",state=\"idle\"} 3\n\
                    cnpg_collector_up 1\n\
                    cnpg_pg_replication_lag NaN\n\
                    broken{datname=\"x\" 1\n\
                    \n";
        let found = samples(text);
        assert_eq!(found.len(), 5, "{found:?}");
        assert_eq!(
            found[0],
            Sample {
                series: "cnpg_pg_stat_database_xact_commit{datname=\"app\"}".into(),
                value: 1234.0,
                kind: "counter".into(),
            }
        );
        assert_eq!(
            found[1].series,
            "cnpg_pg_stat_database_xact_commit{datname=\"odd} \\\"name\\\"\"}"
        );
        assert_eq!((found[1].value, found[1].kind.as_str()), (5.0, "counter"));
        assert_eq!(found[2].kind, "gauge");
        assert_eq!(
            (found[3].series.as_str(), found[3].kind.as_str()),
            ("cnpg_collector_up", "untyped")
        );
        assert!(found[4].value.is_nan());
    }
}
