//! github-action-benchmark's custom JSON (`tool: customBiggerIsBetter` or
//! `customSmallerIsBetter`): an array of `{ name, unit, value, range, extra }`. One file holds
//! one direction, as the action reads it: the caller picks metrics that share it.

use serde_json::{json, Value};

use super::InvocationExport;
use stampede_stats::verdict::Direction;

/// The action's `tool` for metrics of `direction`.
pub fn tool(direction: Direction) -> &'static str {
    match direction {
        Direction::HigherIsBetter => "customBiggerIsBetter",
        Direction::LowerIsBetter => "customSmallerIsBetter",
    }
}

/// Every measure and ratio in `export` (whose metrics share one direction): `range` the
/// farther end of the 95% interval from the value, as "± x".
pub fn render(export: &InvocationExport) -> String {
    let mut entries: Vec<Value> = Vec::new();
    for cell in &export.cells {
        for measured in &cell.measures {
            let bounds = measured.interval.map(|i| (i.low, i.high));
            let extra = format!(
                "median of {} runs{}",
                measured.runs,
                interval_text(bounds, measured.interval.map(|i| i.coverage))
            );
            let name = format!("{} {}", cell.cell, measured.metric);
            entries.push(entry(&name, &measured.unit, measured.value, bounds, &extra));
        }
    }
    for ratio in &export.ratios {
        let name = format!("{} {} ratio to {}", ratio.cell, ratio.metric, ratio.base);
        let extra = match ratio.pairs {
            Some(pairs) => format!("paired over {pairs} rounds"),
            None => "unpaired runs".to_string(),
        } + &interval_text(ratio.interval, Some(super::CONFIDENCE));
        entries.push(entry(&name, "ratio", ratio.ratio, ratio.interval, &extra));
    }
    let mut text = serde_json::to_string_pretty(&entries).expect("numbers and strings");
    text.push('\n');
    text
}

fn entry(name: &str, unit: &str, value: f64, bounds: Option<(f64, f64)>, extra: &str) -> Value {
    let mut entry = json!({ "name": name, "unit": unit, "value": value, "extra": extra });
    if let Some((low, high)) = bounds {
        let reach = (value - low).max(high - value);
        entry["range"] = Value::String(format!("± {}", short(reach)));
    }
    entry
}

fn interval_text(bounds: Option<(f64, f64)>, coverage: Option<f64>) -> String {
    match (bounds, coverage) {
        (Some((low, high)), Some(coverage)) => format!(
            "; {:.0}% interval [{}, {}]",
            coverage * 100.0,
            short(low),
            short(high)
        ),
        _ => String::new(),
    }
}

/// Six significant digits (the whole integer part of a larger number).
fn short(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return value.to_string();
    }
    let digits = value.abs().log10().floor() as i32 + 1;
    let decimals = (6 - digits).max(0) as usize;
    let rounded = format!("{value:.decimals$}");
    if rounded.contains('.') {
        rounded
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        rounded
    }
}

#[cfg(test)]
mod tests {
    use super::short;

    #[test]
    fn ranges_are_short() {
        assert_eq!(short(1.5), "1.5");
        assert_eq!(short(12345.678), "12345.7");
        assert_eq!(short(0.0123456789), "0.0123457");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(100.0), "100");
    }
}
