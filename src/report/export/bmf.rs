//! Bencher Metric Format (bencher.dev/docs/reference/bencher-metric-format): a JSON object of
//! benchmarks, each an object of measures, each `{ value, lower_value, upper_value }`. A
//! benchmark per cell (target/workload/script/scale/clients), a measure per metric: the median
//! with its interval; a target's ratio to the base is a measure of its cell named
//! `<metric>-paired-ratio-to-<base>` (or `-ratio-to-` where the rounds did not pair up).

use serde_json::{json, Map, Value};

use super::InvocationExport;

/// Bencher identifies a measure by a name of at most 64 characters.
const MEASURE_NAME_MOST: usize = 64;

pub fn render(export: &InvocationExport) -> String {
    let mut benchmarks = Map::new();
    for cell in &export.cells {
        let measures = benchmark(&mut benchmarks, &cell.cell);
        for measured in &cell.measures {
            let bounds = measured.interval.map(|i| (i.low, i.high));
            measures.insert(measured.metric.clone(), measure(measured.value, bounds));
        }
    }
    for ratio in &export.ratios {
        let kind = if ratio.pairs.is_some() {
            "paired-ratio"
        } else {
            "ratio"
        };
        let mut name = format!("{}-{kind}-to-{}", ratio.metric, ratio.base);
        if name.chars().count() > MEASURE_NAME_MOST {
            name = format!("{}-{kind}-to-base", ratio.metric);
        }
        let measures = benchmark(&mut benchmarks, &ratio.cell);
        measures.insert(name, measure(ratio.ratio, ratio.interval));
    }
    let mut text =
        serde_json::to_string_pretty(&Value::Object(benchmarks)).expect("numbers and strings");
    text.push('\n');
    text
}

fn benchmark<'a>(benchmarks: &'a mut Map<String, Value>, name: &str) -> &'a mut Map<String, Value> {
    benchmarks
        .entry(name.to_string())
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .expect("benchmarks are objects")
}

/// A measure: bounds only where an interval exists (a single run has none).
fn measure(value: f64, bounds: Option<(f64, f64)>) -> Value {
    match bounds {
        Some((low, high)) => json!({ "value": value, "lower_value": low, "upper_value": high }),
        None => json!({ "value": value }),
    }
}
