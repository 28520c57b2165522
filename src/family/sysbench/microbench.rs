//! Mark Callaghan's sysbench microbenchmark suite (mdcallag/mytools `bench/sysbench.lua`): each
//! test is one of the Lua scripts with his arguments, named as his result tables name it
//! (`point-query.pre_range=100`), run in his order — the `.pre` reads on the fresh load, the
//! writes, the "postwrite" step (VACUUM ANALYZE every table, CHECKPOINT, settle), the reads
//! again, then delete and insert — and grouped as his tables group them.

use super::oltp_options::{OltpOptions, RandKind};

/// The groups of his relative-QPS tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Point,
    RangeNoAggregation,
    RangeAggregation,
    Write,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Point => "point",
            Group::RangeNoAggregation => "range, no aggregation",
            Group::RangeAggregation => "range, aggregation",
            Group::Write => "writes",
        }
    }

    /// As `sum_qps_csv.sh` splits names: "point" in it, else a write (delete, insert, update,
    /// write — read-write included), else a range; ranges with aggregation are read-only*.
    pub fn of(name: &str) -> Group {
        if name.contains("point") {
            Group::Point
        } else if ["delete", "insert", "update", "write"]
            .iter()
            .any(|w| name.contains(w))
        {
            Group::Write
        } else if name.starts_with("read-only") {
            Group::RangeAggregation
        } else {
            Group::RangeNoAggregation
        }
    }
}

/// One microbenchmark: the Lua test it runs and how its options differ from the defaults.
#[derive(Clone, Copy)]
pub struct MicroTest {
    pub name: &'static str,
    pub range: u32,
    /// Run on the fresh load, before the writes.
    pub pre: bool,
    pub lua: &'static str,
    tweak: fn(&mut OltpOptions),
}

impl MicroTest {
    /// The name in Callaghan's tables, e.g. `random-points.pre_range=10`.
    pub fn label(&self) -> String {
        let pre = if self.pre { ".pre" } else { "" };
        format!("{}{pre}_range={}", self.name, self.range)
    }

    pub fn group(&self) -> Group {
        Group::of(self.name)
    }

    /// The test's options: the suite's tables, uniform ids (zipfian for update-zipf), the
    /// range as both --range-size and --random-points, and the test's own arguments.
    pub fn options(&self, base: &OltpOptions) -> OltpOptions {
        let mut options = OltpOptions {
            tables: base.tables,
            table_size: base.table_size,
            secondary: base.secondary,
            range_size: self.range,
            random_points: self.range,
            ..OltpOptions::default()
        };
        options.rand.kind = RandKind::Uniform;
        (self.tweak)(&mut options);
        options
    }
}

/// A step of the suite.
#[derive(Clone, Copy)]
pub enum Step {
    Test(MicroTest),
    /// VACUUM (ANALYZE, INDEX_CLEANUP ON) every table, CHECKPOINT, then settle.
    Postwrite,
}

const fn test(
    name: &'static str,
    range: u32,
    lua: &'static str,
    tweak: fn(&mut OltpOptions),
) -> MicroTest {
    MicroTest {
        name,
        range,
        pre: false,
        lua,
        tweak,
    }
}

fn none(_: &mut OltpOptions) {}
fn skip_trx(o: &mut OltpOptions) {
    o.skip_trx = true;
}
fn hot(o: &mut OltpOptions) {
    o.hot_points = true;
}
fn not_covered(o: &mut OltpOptions) {
    o.covered = false;
}
fn on_k(o: &mut OltpOptions) {
    o.on_id = false;
}
fn on_k_not_covered(o: &mut OltpOptions) {
    o.on_id = false;
    o.covered = false;
}
fn only_simple(o: &mut OltpOptions) {
    (o.sum_ranges, o.order_ranges, o.distinct_ranges) = (0, 0, 0);
}
fn only_sum(o: &mut OltpOptions) {
    (o.simple_ranges, o.order_ranges, o.distinct_ranges) = (0, 0, 0);
}
fn only_order(o: &mut OltpOptions) {
    (o.simple_ranges, o.sum_ranges, o.distinct_ranges) = (0, 0, 0);
}
fn only_distinct(o: &mut OltpOptions) {
    (o.simple_ranges, o.sum_ranges, o.order_ranges) = (0, 0, 0);
}
fn one_row(o: &mut OltpOptions) {
    o.table_size = 1;
}
fn zipf(o: &mut OltpOptions) {
    o.rand.kind = RandKind::Zipfian;
}

/// The reads run both on the fresh load (.pre) and after the writes.
fn reads_before_writes() -> Vec<MicroTest> {
    vec![
        test("point-query", 100, "oltp_point_select", skip_trx),
        test("random-points", 10, "oltp_inlist_select", skip_trx),
        test("random-points", 100, "oltp_inlist_select", skip_trx),
        test("random-points", 1000, "oltp_inlist_select", skip_trx),
        test("points-covered-pk", 100, "oltp_points_covered", none),
        test("points-covered-si", 100, "oltp_points_covered", on_k),
        test(
            "points-notcovered-pk",
            100,
            "oltp_points_covered",
            not_covered,
        ),
        test(
            "points-notcovered-si",
            100,
            "oltp_points_covered",
            on_k_not_covered,
        ),
        test("range-covered-pk", 100, "oltp_range_covered", none),
        test("range-covered-si", 100, "oltp_range_covered", on_k),
        test(
            "range-notcovered-pk",
            100,
            "oltp_range_covered",
            not_covered,
        ),
        test(
            "range-notcovered-si",
            100,
            "oltp_range_covered",
            on_k_not_covered,
        ),
        test("read-only", 10, "oltp_read_only", none),
        test("read-only", 100, "oltp_read_only", none),
        test("read-only", 10000, "oltp_read_only", none),
    ]
}

fn writes() -> Vec<MicroTest> {
    vec![
        test("update-inlist", 100, "oltp_inlist_update", none),
        test("update-index", 100, "oltp_update_index", none),
        test("update-nonindex", 100, "oltp_update_non_index", none),
        test("update-one", 100, "oltp_update_non_index", one_row),
        test("update-zipf", 100, "oltp_update_non_index", zipf),
        test("write-only", 10000, "oltp_write_only", none),
        test("read-write", 10, "oltp_read_write", none),
        test("read-write", 100, "oltp_read_write", none),
    ]
}

fn reads_after_writes() -> Vec<MicroTest> {
    let mut tests = vec![
        test("scan", 100, "oltp_scan", none),
        test("read-only-simple", 1000, "oltp_read_only", only_simple),
        test("read-only-sum", 1000, "oltp_read_only", only_sum),
        test("read-only-order", 1000, "oltp_read_only", only_order),
        test("read-only-distinct", 1000, "oltp_read_only", only_distinct),
        test("read-only-count", 1000, "oltp_read_only_count", none),
        test("hot-points", 100, "oltp_inlist_select", hot),
    ];
    tests.extend(reads_before_writes());
    tests
}

/// The whole suite in run order: 15 .pre reads, 8 writes, postwrite, 22 reads, delete, insert.
pub fn suite() -> Vec<Step> {
    let mut steps: Vec<Step> = reads_before_writes()
        .into_iter()
        .map(|t| Step::Test(MicroTest { pre: true, ..t }))
        .collect();
    steps.extend(writes().into_iter().map(Step::Test));
    steps.push(Step::Postwrite);
    steps.extend(reads_after_writes().into_iter().map(Step::Test));
    steps.push(Step::Test(test("delete", 100, "oltp_delete", none)));
    steps.push(Step::Test(test("insert", 100, "oltp_insert", none)));
    steps
}

/// The suite's tests in run order (the postwrite step left out).
pub fn tests() -> Vec<MicroTest> {
    suite()
        .into_iter()
        .filter_map(|step| match step {
            Step::Test(test) => Some(test),
            Step::Postwrite => None,
        })
        .collect()
}

/// The test a label names (`point-query.pre_range=100`).
pub fn find(label: &str) -> Result<MicroTest, String> {
    tests()
        .into_iter()
        .find(|t| t.label() == label)
        .ok_or_else(|| {
            let labels: Vec<String> = tests().iter().map(MicroTest::label).collect();
            format!(
                "unknown microbench test \"{label}\"; the tests are: {}",
                labels.join(", ")
            )
        })
}

/// Whether postwrite runs between two tests run one after the other: when writes are followed
/// by a read, as the suite places it between its write phase and the reads after it.
pub fn postwrite_between(previous: &MicroTest, next: &MicroTest) -> bool {
    previous.group() == Group::Write && next.group() != Group::Write
}

/// Seconds to let the server settle after postwrite, as Callaghan's harness: 60 s plus 1 s per
/// million rows, at most 1200 s.
pub fn default_settle_s(tables: u32, table_size: u32) -> u64 {
    (60 + tables as u64 * table_size as u64 / 1_000_000).min(1200)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::sysbench::catalog;

    #[test]
    fn the_suite_has_callaghans_42_and_the_read_only_variants() {
        let all = tests();
        assert_eq!(all.len(), 47);
        let labels: Vec<String> = all.iter().map(MicroTest::label).collect();
        for name in [
            "point-query.pre_range=100",
            "hot-points_range=100",
            "random-points.pre_range=1000",
            "read-only_range=10000",
            "write-only_range=10000",
            "update-zipf_range=100",
            "scan_range=100",
        ] {
            assert!(labels.contains(&name.to_string()), "{name}");
        }
        let count = |group| all.iter().filter(|t| t.group() == group).count();
        // Callaghan's 42: 17 point, 15 range, 10 writes; plus five read-only-* variants.
        assert_eq!(count(Group::Point), 17);
        assert_eq!(count(Group::Write), 10);
        assert_eq!(
            count(Group::RangeNoAggregation) + count(Group::RangeAggregation),
            20
        );
    }

    #[test]
    fn pre_reads_come_first_and_postwrite_follows_the_writes() {
        let steps = suite();
        let position = |label: &str| {
            steps
                .iter()
                .position(|s| matches!(s, Step::Test(t) if t.label() == label))
                .unwrap()
        };
        let postwrite = steps
            .iter()
            .position(|s| matches!(s, Step::Postwrite))
            .unwrap();
        assert!(position("read-only.pre_range=10000") < position("update-inlist_range=100"));
        assert_eq!(postwrite, position("read-write_range=100") + 1);
        assert!(postwrite < position("point-query_range=100"));
        assert_eq!(position("insert_range=100"), steps.len() - 1);
        let after_writes = |label| {
            let index = steps
                .iter()
                .position(|s| matches!(s, Step::Test(t) if t.label() == label))
                .unwrap();
            let Step::Test(previous) = steps[index - 1] else {
                return true;
            };
            let Step::Test(test) = steps[index] else {
                unreachable!()
            };
            postwrite_between(&previous, &test)
        };
        assert!(after_writes("scan_range=100"));
        assert!(!after_writes("delete_range=100"));
        assert!(!after_writes("update-index_range=100"));
        assert!(!after_writes("read-only-sum_range=1000"));
    }

    #[test]
    fn labels_find_their_tests() {
        assert_eq!(
            find("update-zipf_range=100").unwrap().lua,
            "oltp_update_non_index"
        );
        let error = find("nope").err().unwrap();
        assert!(error.starts_with(
            "unknown microbench test \"nope\"; the tests are: point-query.pre_range=100, "
        ));
    }

    #[test]
    fn every_test_generates_its_statement() {
        let base = OltpOptions {
            table_size: 1000,
            ..OltpOptions::default()
        };
        for t in tests() {
            let generated = catalog::generate(t.lua, &t.options(&base), 2)
                .unwrap_or_else(|e| panic!("{}: {e}", t.label()));
            assert!(generated.queries.total() > 0, "{}", t.label());
        }
        let hot = tests()
            .into_iter()
            .find(|t| t.name == "hot-points")
            .unwrap();
        let script = catalog::generate(hot.lua, &hot.options(&base), 1)
            .unwrap()
            .script;
        assert!(
            script.starts_with("\\set p1 501\n\\set p2 502\n"),
            "{script}"
        );
        assert!(script.contains("SELECT c FROM sbtest1 WHERE id IN (:p1, :p2,"));
    }
}
