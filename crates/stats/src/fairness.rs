//! How evenly a run served its clients: the spread of transactions per client and Jain's
//! fairness index, (Σx)² / (n·Σx²) (Jain, Chiu and Hawe 1984): 1 when every client ran as many
//! transactions, 1/n when one client ran them all. A run whose index is low measured fewer
//! users than it was configured with: most of its throughput came from some of its clients.

/// Below this index a run's clients were served unevenly enough to say so in reports.
pub const UNEVEN_BELOW: f64 = 0.9;

/// Transactions per client over one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fairness {
    pub clients: usize,
    pub min: u64,
    pub median: f64,
    pub max: u64,
    /// Jain's index, in [1/clients, 1].
    pub jain_index: f64,
}

impl Fairness {
    /// None without clients or without a single transaction (nothing was served, evenly or
    /// not).
    pub fn of(per_client: &[u64]) -> Option<Fairness> {
        let total: f64 = per_client.iter().map(|&n| n as f64).sum();
        if total == 0.0 {
            return None;
        }
        let squares: f64 = per_client.iter().map(|&n| (n as f64).powi(2)).sum();
        let as_f64: Vec<f64> = per_client.iter().map(|&n| n as f64).collect();
        Some(Fairness {
            clients: per_client.len(),
            min: per_client.iter().copied().min()?,
            median: crate::median(&as_f64)?,
            max: per_client.iter().copied().max()?,
            jain_index: total * total / (per_client.len() as f64 * squares),
        })
    }

    /// Whether the clients were served unevenly enough to warn about it.
    pub fn is_uneven(&self) -> bool {
        self.jain_index < UNEVEN_BELOW
    }

    /// The busiest client's transactions over the least busy one's (infinite when one ran none).
    pub fn spread(&self) -> f64 {
        self.max as f64 / self.min as f64
    }

    /// The summary's line: "client fairness: min 980 / median 1000 / max 1020 transactions per
    /// client, Jain's index 0.9996".
    pub fn summary_line(&self) -> String {
        format!(
            "client fairness: min {} / median {} / max {} transactions per client, Jain's index {:.4}",
            self.min,
            format_median(self.median),
            self.max,
            self.jain_index
        )
    }
}

/// A median of counts: whole, or halfway between two.
fn format_median(median: f64) -> String {
    if median.fract() == 0.0 {
        format!("{median:.0}")
    } else {
        format!("{median:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_service_has_index_one() {
        let fairness = Fairness::of(&[100, 100, 100, 100]).unwrap();
        assert_eq!(fairness.jain_index, 1.0);
        assert_eq!(
            (fairness.min, fairness.median, fairness.max),
            (100, 100.0, 100)
        );
        assert!(!fairness.is_uneven());
        assert_eq!(fairness.spread(), 1.0);
    }

    #[test]
    fn one_client_doing_everything_has_index_one_over_n() {
        let fairness = Fairness::of(&[0, 0, 0, 400]).unwrap();
        assert_eq!(fairness.jain_index, 0.25);
        assert!(fairness.is_uneven());
        assert!(fairness.spread().is_infinite());
    }

    #[test]
    fn index_by_hand() {
        // (1+2+3+4)² / (4 · (1+4+9+16)) = 100 / 120.
        let fairness = Fairness::of(&[1, 2, 3, 4]).unwrap();
        assert!((fairness.jain_index - 100.0 / 120.0).abs() < 1e-12);
        assert_eq!(fairness.median, 2.5);
        assert_eq!(
            fairness.summary_line(),
            "client fairness: min 1 / median 2.5 / max 4 transactions per client, Jain's index 0.8333"
        );
    }

    #[test]
    fn nothing_served_has_no_fairness() {
        assert_eq!(Fairness::of(&[]), None);
        assert_eq!(Fairness::of(&[0, 0]), None);
    }
}
