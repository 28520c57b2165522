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
//! | The by-name customer of n | Payment the ⌊n/2⌋-th, Order-Status the ⌈n/2⌉+1-th | the ⌈n/2⌉-th (2.5.2.2) |

use crate::family::common::options::BadValue;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    HammerDb,
    TpcC,
}

impl Rules {
    pub const NAMES: [&'static str; 2] = ["hammerdb", "tpc-c"];

    pub fn parse(text: &str, option: &str) -> Result<Rules, BadValue> {
        match text {
            "hammerdb" => Ok(Rules::HammerDb),
            "tpc-c" => Ok(Rules::TpcC),
            _ => Err(BadValue::new(
                option,
                text,
                "the rules are hammerdb (HammerDB's values and inputs) and tpc-c (the specification's)",
            )),
        }
    }

    pub fn name(self) -> &'static str {
        Rules::NAMES[self as usize]
    }

    /// The `byname` value a by-name Payment or Order-Status passes its procedure, which says
    /// how far the cursor over the n customers with the name fetches. 2 is TPC-C's ⌈n/2⌉-th
    /// (clause 2.5.2.2). 1 is HammerDB's (its clients send 1): its Payment loop stops at the
    /// ⌊n/2⌋-th (with one such customer it fetches none, and the payment goes to the customer
    /// id the client drew), its Order-Status loop fetches one past the ⌈n/2⌉-th (with one such
    /// customer the fetch past the end leaves no customer and no order).
    pub fn by_name(self) -> u8 {
        match self {
            Rules::HammerDb => 1,
            Rules::TpcC => 2,
        }
    }
}
