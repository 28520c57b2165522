//! Measurements taken beside the load: the client's own CPU, the server's counters, the
//! operating system's counters, wait-event samples and plans.

pub mod exposition;
pub mod mysql;
pub mod os;
pub mod postgres;
pub mod prometheus;
pub mod sampler;
pub mod server_cpu;
pub mod server_io;

use stampede_store::CounterRow;

/// `after - before` for each counter of `after`, matched by source and name (a counter absent
/// before counts from zero).
pub fn delta(before: &[CounterRow], after: &[CounterRow]) -> Vec<CounterRow> {
    after
        .iter()
        .map(|counter| {
            let start = before
                .iter()
                .find(|b| b.source == counter.source && b.name == counter.name)
                .map_or(0.0, |b| b.value);
            CounterRow {
                value: counter.value - start,
                ..counter.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(source: &str, name: &str, value: f64) -> CounterRow {
        CounterRow {
            source: source.into(),
            name: name.into(),
            value,
        }
    }

    #[test]
    fn deltas_match_source_and_name() {
        let before = vec![row("a", "x", 1.0), row("b", "x", 5.0)];
        let after = vec![row("b", "x", 7.0), row("a", "x", 4.0), row("a", "new", 2.0)];
        assert_eq!(
            delta(&before, &after),
            vec![row("b", "x", 2.0), row("a", "x", 3.0), row("a", "new", 2.0)]
        );
    }
}
