//! Whose rules decide a value where HammerDB and TPC-C's specification differ. HammerDB's are
//! the default, so that a NOPM stands beside HammerDB's on the same server; TPC-C's are there
//! for a run that follows the specification.
//!
//! | | HammerDB (`hammerdb`) | TPC-C (`tpc-c`) |
//! |---|---|---|
//! | C_CREDIT at load | "BC" for half the customers | "BC" for 10% (4.3.3.1) |
//! | O_C_ID at load | order i's customer uniform in [i, 3000] (HammerDB's shuffle) | a permutation of 1..3000 |
//! | C_ID of Payment and Order-Status | uniform 1..3000 | NURand(1023, 1, 3000) (2.5.1.2) |
//! | C for C_LAST at run time | the load's | differs from the load's by 65..119 (2.1.6.1) |
//! | Stock-Level's district | one per virtual user for the whole run | drawn per transaction |

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    HammerDb,
    TpcC,
}

impl Rules {
    pub const NAMES: [&'static str; 2] = ["hammerdb", "tpc-c"];

    pub fn parse(text: &str, option: &str) -> Result<Rules, String> {
        match text {
            "hammerdb" => Ok(Rules::HammerDb),
            "tpc-c" => Ok(Rules::TpcC),
            _ => Err(format!(
                "{option} \"{text}\": the rules are hammerdb (HammerDB's values and inputs) and tpc-c (the specification's)"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        Rules::NAMES[self as usize]
    }
}
