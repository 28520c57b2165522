//! sysbench's options for the oltp_* family, with sysbench 1.0.20's defaults.

/// `--rand-type`: the distribution of row ids (sysbench's `sysbench.rand.default`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandKind {
    Uniform,
    Gaussian,
    Special,
    Pareto,
    Zipfian,
}

impl RandKind {
    pub const NAMES: [&'static str; 5] = ["uniform", "gaussian", "special", "pareto", "zipfian"];

    pub fn parse(name: &str) -> Result<RandKind, String> {
        Ok(match name {
            "uniform" => RandKind::Uniform,
            "gaussian" => RandKind::Gaussian,
            "special" => RandKind::Special,
            "pareto" => RandKind::Pareto,
            "zipfian" => RandKind::Zipfian,
            other => {
                return Err(format!(
                    "invalid random numbers distribution \"{other}\"; use one of: {}",
                    RandKind::NAMES.join(", ")
                ))
            }
        })
    }
}

/// The distribution and its parameters (`--rand-spec-iter`, `--rand-spec-pct`,
/// `--rand-spec-res`, `--rand-pareto-h`, `--rand-zipfian-exp`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandOptions {
    pub kind: RandKind,
    pub spec_iter: u32,
    pub spec_pct: u32,
    pub spec_res: u32,
    pub pareto_h: f64,
    pub zipfian_exp: f64,
}

impl Default for RandOptions {
    /// sysbench 1.0.20 draws from "special" by default; its unreleased master from "uniform".
    fn default() -> Self {
        RandOptions {
            kind: RandKind::Special,
            spec_iter: 12,
            spec_pct: 1,
            spec_res: 75,
            pareto_h: 0.2,
            zipfian_exp: 0.8,
        }
    }
}

impl RandOptions {
    /// The script expression drawing a value in [low, high] (both expressions).
    pub fn expression(&self, low: &str, high: &str) -> String {
        match self.kind {
            RandKind::Uniform => format!("sb_rand_uniform({low}, {high})"),
            RandKind::Gaussian => format!("sb_rand_gaussian({low}, {high}, {})", self.spec_iter),
            RandKind::Special => format!(
                "sb_rand_special({low}, {high}, {}, {}, {})",
                self.spec_iter, self.spec_pct, self.spec_res
            ),
            RandKind::Pareto => format!("sb_rand_pareto({low}, {high}, {:?})", self.pareto_h),
            RandKind::Zipfian => format!("sb_rand_zipfian({low}, {high}, {:?})", self.zipfian_exp),
        }
    }
}

/// The oltp_* scripts' options (`oltp_common.lua`) and the select_random_* ones.
#[derive(Debug, Clone, PartialEq)]
pub struct OltpOptions {
    pub tables: u32,
    pub table_size: u32,
    pub range_size: u32,
    pub point_selects: u32,
    pub simple_ranges: u32,
    pub sum_ranges: u32,
    pub order_ranges: u32,
    pub distinct_ranges: u32,
    pub index_updates: u32,
    pub non_index_updates: u32,
    pub delete_inserts: u32,
    pub range_selects: bool,
    pub auto_inc: bool,
    pub skip_trx: bool,
    pub secondary: bool,
    pub create_secondary: bool,
    /// select_random_points: values in the IN list.
    pub random_points: u32,
    /// select_random_ranges: BETWEEN ranges per SELECT, and their width.
    pub number_of_ranges: u32,
    pub delta: u32,
    /// oltp_inlist_*: the same keys in the middle of the table for every event.
    pub hot_points: bool,
    /// oltp_points_covered / oltp_range_covered: select only the key (an index-only read).
    pub covered: bool,
    /// oltp_points_covered / oltp_range_covered: search by id (else by k).
    pub on_id: bool,
    pub rand: RandOptions,
}

impl Default for OltpOptions {
    fn default() -> Self {
        OltpOptions {
            tables: 1,
            table_size: 10_000,
            range_size: 100,
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_selects: true,
            auto_inc: true,
            skip_trx: false,
            secondary: false,
            create_secondary: true,
            random_points: 10,
            number_of_ranges: 10,
            delta: 5,
            hot_points: false,
            covered: true,
            on_id: true,
            rand: RandOptions::default(),
        }
    }
}
