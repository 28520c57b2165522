//! OpenMetrics 1.0 text, written family by family: `# TYPE`, `# UNIT`, `# HELP`, then samples
//! with escaped labels, `# EOF` last. Prometheus asks for it by its content type.

use std::fmt::Write;

pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A set of labels, in the order they are written.
pub type Labels = Vec<(String, String)>;

/// The text being written: families in the order first declared, each family's samples
/// together (several runs' series of one family are one family).
#[derive(Default)]
pub struct Exposition {
    families: Vec<(String, String)>,
    current: usize,
}

impl Exposition {
    /// Starts (or returns to) a metric family. `name` is the family's (a counter's without
    /// `_total`); `unit` when its name ends in it (`seconds`).
    pub fn family(&mut self, name: &str, kind: &str, unit: Option<&str>, help: &str) {
        if let Some(at) = self.families.iter().position(|(n, _)| n == name) {
            self.current = at;
            return;
        }
        let mut text = format!("# TYPE {name} {kind}\n");
        if let Some(unit) = unit {
            let _ = writeln!(text, "# UNIT {name} {unit}");
        }
        let _ = writeln!(text, "# HELP {name} {}", escape_help(help));
        self.families.push((name.to_string(), text));
        self.current = self.families.len() - 1;
    }

    /// One sample of the current family: `name{labels,extra} value`.
    pub fn sample(&mut self, name: &str, labels: &Labels, extra: &[(&str, &str)], value: f64) {
        let text = &mut self.families[self.current].1;
        text.push_str(name);
        let all = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(extra.iter().copied());
        let mut first = true;
        for (key, value) in all {
            text.push(if first { '{' } else { ',' });
            first = false;
            let _ = write!(text, "{key}=\"{}\"", escape_label(value));
        }
        if !first {
            text.push('}');
        }
        let _ = writeln!(text, " {}", number(value));
    }

    pub fn finish(self) -> String {
        let mut text: String = self.families.into_iter().map(|(_, text)| text).collect();
        text.push_str("# EOF\n");
        text
    }
}

/// Integers as integers (counters read exactly), others in Rust's shortest round-trip form.
pub fn number(value: f64) -> String {
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if value.is_nan() {
        return "NaN".into();
    }
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

fn escape_label(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_samples_and_escapes_are_written_as_the_format_says() {
        let mut out = Exposition::default();
        out.family("stampede_transactions", "counter", None, "Committed.");
        let labels = vec![("script".to_string(), "a \"b\"\\\n".to_string())];
        out.sample("stampede_transactions_total", &labels, &[("le", "1")], 3.0);
        out.family("up", "gauge", None, "Up.");
        out.sample("up", &Vec::new(), &[], 0.25);
        out.family("stampede_transactions", "counter", None, "Committed.");
        out.sample("stampede_transactions_total", &Vec::new(), &[], 4.0);
        let text = out.finish();
        assert_eq!(
            text,
            "# TYPE stampede_transactions counter\n# HELP stampede_transactions Committed.\n\
             stampede_transactions_total{script=\"a \\\"b\\\"\\\\\\n\",le=\"1\"} 3\n\
             stampede_transactions_total 4\n# TYPE up gauge\n# HELP up Up.\nup 0.25\n# EOF\n"
        );
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(1e-5), "0.00001");
    }
}
