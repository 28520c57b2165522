//! The lines a spread run adds after its workload's summary: one row per pod, how evenly the
//! pods were served, and a warning for a pod whose client saturated its CPUs.

use crate::pods::{PodSummary, SpreadSummary};
use stampede_stats::fairness::Fairness;

/// A pod whose client used this share of its CPUs may have limited the load it offered.
const SATURATED: f64 = 0.9;

pub fn spread_lines(spread: &SpreadSummary) -> Vec<String> {
    let mut lines = pod_lines(&spread.pods);
    lines.insert(
        lines.len() - warnings(&spread.pods).len(),
        format!(
            "coordinator (pod 0): {:.3} s CPU, {:.3} ms per pod-second",
            spread.coordinator_cpu_s,
            spread.coordinator_ms_per_pod_second()
        ),
    );
    lines
}

fn pod_lines(pods: &[PodSummary]) -> Vec<String> {
    let mut lines = vec![format!(
        "pods: {} (one row each; clock offset and start skew against pod 0's coordinator)",
        pods.len()
    )];
    lines.push(format!(
        "{:>4} {:>8} {:>8} {:>13} {:>12} {:>12} {:>9} {:>14} {:>14}",
        "pod",
        "clients",
        "threads",
        "transactions",
        "tps",
        "cpu us/txn",
        "cpu busy",
        "clock off ms",
        "start skew ms"
    ));
    for pod in pods {
        lines.push(format!(
            "{:>4} {:>8} {:>8} {:>13} {:>12.1} {:>12.1} {:>8.0}% {:>14.3} {:>14.3}",
            pod.pod,
            pod.clients,
            pod.threads,
            pod.transactions,
            pod.tps,
            pod.client_cpu_per_transaction_us,
            pod.cpu_busy * 100.0,
            pod.clock_offset_ms,
            pod.start_skew_ms
        ));
    }
    let skews: Vec<f64> = pods.iter().map(|p| p.start_skew_ms).collect();
    let spread = skews.iter().copied().fold(f64::MIN, f64::max)
        - skews.iter().copied().fold(f64::MAX, f64::min);
    let per_pod: Vec<u64> = pods.iter().map(|p| p.transactions).collect();
    if let Some(fairness) = Fairness::of(&per_pod) {
        lines.push(format!(
            "pods' transactions: min {} median {:.0} max {} (Jain's index {:.3}); start skew \
             between pods {:.3} ms",
            fairness.min, fairness.median, fairness.max, fairness.jain_index, spread
        ));
    }
    lines.extend(warnings(pods));
    lines
}

fn warnings(pods: &[PodSummary]) -> Vec<String> {
    pods.iter()
        .filter(|p| p.cpu_busy >= SATURATED)
        .map(|p| {
            format!(
                "warning: pod {}'s client used {:.0}% of its {} CPU(s): it may have limited the \
                 load it offered (give the pods more CPU, or more pods)",
                p.pod,
                p.cpu_busy * 100.0,
                p.cores
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(index: usize, transactions: u64, busy: f64) -> PodSummary {
        PodSummary {
            pod: index,
            clients: 4,
            threads: 2,
            transactions,
            tps: transactions as f64 / 10.0,
            client_cpu_s: 1.0,
            client_cpu_per_transaction_us: 12.5,
            cpu_busy: busy,
            cores: 2,
            clock_offset_ms: 0.004,
            clock_rtt_ms: 0.05,
            start_skew_ms: index as f64 * 0.1,
        }
    }

    #[test]
    fn every_pod_has_a_row_and_a_saturated_one_a_warning() {
        let spread = SpreadSummary {
            pods: vec![pod(0, 1000, 0.4), pod(1, 1000, 0.95)],
            coordinator_cpu_s: 0.02,
            window_s: 10.0,
        };
        let lines = spread_lines(&spread);
        assert_eq!(lines.len(), 7, "{lines:#?}");
        assert_eq!(
            lines[5],
            "coordinator (pod 0): 0.020 s CPU, 1.000 ms per pod-second"
        );
        assert!(lines[4].contains("Jain's index 1.000"), "{}", lines[4]);
        assert!(
            lines[4].contains("start skew between pods 0.100 ms"),
            "{}",
            lines[4]
        );
        assert!(lines[6].starts_with("warning: pod 1's client used 95% of its 2 CPU(s)"));
    }
}
