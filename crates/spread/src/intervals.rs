//! Lines up the pods' interval reports by index: an interval is complete once every pod has
//! reported it or has finished (a pod whose run ended says nothing more), and complete intervals
//! come out in order, each with every pod's report that exists.

use std::collections::BTreeMap;

pub struct IntervalLine<T> {
    pods: usize,
    pending: BTreeMap<u64, Vec<Option<T>>>,
    /// The next index each pod has not reported yet.
    next: Vec<u64>,
    finished: Vec<bool>,
}

impl<T> IntervalLine<T> {
    pub fn new(pods: usize) -> IntervalLine<T> {
        IntervalLine {
            pods,
            pending: BTreeMap::new(),
            next: vec![0; pods],
            finished: vec![false; pods],
        }
    }

    /// Pod `pod`'s report of interval `index`; returns the intervals this completes, in order.
    pub fn add(&mut self, pod: usize, index: u64, report: T) -> Vec<(u64, Vec<Option<T>>)> {
        let pods = self.pods;
        self.pending
            .entry(index)
            .or_insert_with(|| (0..pods).map(|_| None).collect())[pod] = Some(report);
        self.next[pod] = self.next[pod].max(index + 1);
        self.complete()
    }

    /// Pod `pod` reports no more intervals; returns the intervals this completes.
    pub fn finish(&mut self, pod: usize) -> Vec<(u64, Vec<Option<T>>)> {
        self.finished[pod] = true;
        self.complete()
    }

    fn complete(&mut self) -> Vec<(u64, Vec<Option<T>>)> {
        let mut done = Vec::new();
        while let Some((&index, _)) = self.pending.first_key_value() {
            let all = (0..self.pods).all(|p| self.finished[p] || self.next[p] > index);
            if !all {
                break;
            }
            let reports = self
                .pending
                .remove(&index)
                .expect("the key was just read from pending");
            done.push((index, reports));
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_waits_for_every_pod_and_comes_out_in_order() {
        let mut line = IntervalLine::new(3);
        assert!(line.add(0, 0, "a0").is_empty());
        assert!(line.add(1, 0, "b0").is_empty());
        assert!(line.add(0, 1, "a1").is_empty());
        let done = line.add(2, 0, "c0");
        assert_eq!(done, vec![(0, vec![Some("a0"), Some("b0"), Some("c0")])]);
        assert!(line.add(2, 1, "c1").is_empty());
        let done = line.add(1, 1, "b1");
        assert_eq!(done[0].0, 1);
    }

    #[test]
    fn a_finished_pod_no_longer_holds_an_interval_back() {
        let mut line = IntervalLine::new(2);
        assert!(line.add(0, 0, 10).is_empty());
        assert!(line.add(0, 1, 11).is_empty());
        let done = line.finish(1);
        assert_eq!(
            done,
            vec![(0, vec![Some(10), None]), (1, vec![Some(11), None])]
        );
    }

    #[test]
    fn a_skipped_index_counts_as_reported() {
        // A pod's first report may be of interval 2 (nothing closed before it): 0 and 1 are
        // complete for it.
        let mut line = IntervalLine::new(2);
        assert!(line.add(0, 2, 'x').is_empty());
        let done = line.add(1, 0, 'y');
        assert_eq!(done, vec![(0, vec![None, Some('y')])]);
    }
}
