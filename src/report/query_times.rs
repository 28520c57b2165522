//! The view analytic studies publish: each query's time on each target, side by side (the
//! median over runs of each run's median query time), for the lab's TPROC-H cells.

use super::lab_report::LabReport;

/// TPROC-H's queries on every target, for one dataset (scale and client count).
#[derive(Debug, PartialEq)]
pub struct QueryTimes {
    pub dataset: String,
    /// The base first, then the others in name order.
    pub targets: Vec<String>,
    /// (query, each target's median query time in ms), q1 … q22 then the query set.
    pub rows: Vec<(String, Vec<Option<f64>>)>,
}

/// The tables of a report's TPROC-H cells, one per dataset; none when it has none.
pub fn query_times(report: &LabReport) -> Vec<QueryTimes> {
    let cells: Vec<_> = report
        .latency
        .iter()
        .filter(|l| l.cell.workload == "tproch")
        .collect();
    let mut targets: Vec<String> = cells.iter().map(|l| l.target.clone()).collect();
    targets.sort();
    targets.dedup();
    targets.sort_by_key(|t| *t != report.base);
    let mut datasets: Vec<(String, i64)> = cells
        .iter()
        .map(|l| (l.cell.scale.clone(), l.cell.clients))
        .collect();
    datasets.sort();
    datasets.dedup();
    datasets
        .into_iter()
        .map(|(scale, clients)| {
            let here: Vec<_> = cells
                .iter()
                .filter(|l| l.cell.scale == scale && l.cell.clients == clients)
                .collect();
            let mut queries: Vec<&str> = here.iter().map(|l| l.cell.script.as_str()).collect();
            queries.sort_by_key(|q| query_order(q));
            queries.dedup();
            let rows = queries
                .iter()
                .map(|query| {
                    let times = targets
                        .iter()
                        .map(|target| {
                            here.iter()
                                .find(|l| l.target == *target && l.cell.script == *query)
                                .map(|l| l.p50_ms)
                        })
                        .collect();
                    (query.to_string(), times)
                })
                .collect();
            QueryTimes {
                dataset: format!("scale {scale} × {clients} clients"),
                targets: targets.clone(),
                rows,
            }
        })
        .collect()
}

/// q1 … q22 by number, anything else after them.
fn query_order(query: &str) -> (usize, String) {
    let number = query
        .strip_prefix('q')
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX);
    (number, query.to_string())
}

/// The Markdown table: each query's time per target, and each other target's time over the
/// base's.
pub fn markdown(tables: &[QueryTimes]) -> String {
    let mut out = String::new();
    for table in tables {
        out += &format!(
            "## Query times by target (TPROC-H, {}; median of the runs' median query time, ms)\n\n| query |",
            table.dataset
        );
        for (i, target) in table.targets.iter().enumerate() {
            out += &match i {
                0 => format!(" {target} |"),
                _ => format!(" {target} | ×{} |", table.targets[0]),
            };
        }
        out += "\n|---|";
        out += &"---|".repeat(table.targets.len() * 2 - 1);
        out += "\n";
        for (query, times) in &table.rows {
            out += &format!("| {query} |");
            for (i, time) in times.iter().enumerate() {
                out += &format!(" {} |", time.map_or("-".into(), |t| format!("{t:.3}")));
                if i > 0 {
                    let ratio = time.zip(times[0]).map(|(t, base)| t / base);
                    out += &format!(" {} |", ratio.map_or("-".into(), |r| format!("{r:.3}")));
                }
            }
            out += "\n";
        }
        out += "\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_sort_by_number_and_ratios_are_against_the_base() {
        assert!(query_order("q2") < query_order("q10"));
        assert!(query_order("q22") < query_order("queryset"));
        let table = QueryTimes {
            dataset: "scale 1 × 1 clients".into(),
            targets: vec!["parallel".into(), "serial".into()],
            rows: vec![("q1".into(), vec![Some(200.0), Some(400.0)])],
        };
        let text = markdown(&[table]);
        assert!(
            text.contains("| query | parallel | serial | ×parallel |"),
            "{text}"
        );
        assert!(
            text.contains("| q1 | 200.000 | 400.000 | 2.000 |"),
            "{text}"
        );
    }
}
