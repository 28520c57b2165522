//! What every TPROC-C transaction script draws first, in both modes: its warehouse (home or
//! HammerDB's all-warehouses), its customer and Payment's customer warehouse, and how many
//! lines a New-Order may have.

use super::random::NurandConstants;
use super::rules::Rules;

/// Which warehouse a virtual user's transaction works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarehouseChoice {
    /// Its home warehouse, `client % W + 1`: the virtual users spread evenly.
    Home,
    /// Its home warehouse drawn once, uniformly from 1..W, as HammerDB draws each virtual
    /// user's (so that users may share one): a hash of the user's number with the run's seed,
    /// its seed offset from Stock-Level's district draw so that the two are independent.
    RandomHome,
    /// HammerDB's all-warehouses: the warehouses are dealt out among the first min(V, W)
    /// virtual users' lists (virtual user c gets c+1, c+1+m, …), and each transaction picks one
    /// of its list at random, so that every warehouse is used.
    All { virtual_users: i64 },
}

impl WarehouseChoice {
    /// How the run's header line names it.
    pub fn description(self) -> &'static str {
        match self {
            WarehouseChoice::Home => "home warehouses",
            WarehouseChoice::RandomHome => "home warehouses drawn at random",
            WarehouseChoice::All { .. } => "all warehouses",
        }
    }

    fn script_line(self, warehouses: i64) -> String {
        match self {
            WarehouseChoice::Home => format!("\\set w_id :client_id % {warehouses} + 1\n"),
            WarehouseChoice::RandomHome => format!(
                "\\set w_id (hash(:client_id, :default_seed + 1) % {warehouses} + {warehouses}) % {warehouses} + 1\n"
            ),
            WarehouseChoice::All { virtual_users } => {
                let lists = virtual_users.min(warehouses);
                format!(
                    "\\set w_list :client_id % {lists}\n\
                     \\set w_id :w_list + 1 + {lists} * random(0, ({warehouses} - 1 - :w_list) / {lists})\n"
                )
            }
        }
    }
}

/// New-Order's most lines (clause 2.4.1.3: 5 to 15).
pub const MAX_ORDER_LINES: u32 = 15;

/// The script lines that draw a transaction's inputs, shared by both modes.
pub struct Inputs {
    pub warehouses: i64,
    /// Sets `:w_id`.
    pub warehouse: String,
    /// Sets `:by_name` (60% the rules' `Rules::by_name`, else 0), `:c_id` (NURand) and
    /// `:name` (NURand, for the last name).
    pub customer: String,
    /// Payment's customer warehouse and district: `:c_w_id`, `:c_d_id` (15% remote).
    pub payment_customer_warehouse: String,
    /// Stock-Level's `:d_id`.
    pub stock_level_district: String,
}

impl Inputs {
    pub fn new(
        warehouses: i64,
        choice: WarehouseChoice,
        constants: NurandConstants,
        rules: Rules,
    ) -> Inputs {
        let remote_warehouse = if warehouses > 1 {
            format!("1 + (:w_id + random(0, {})) % {warehouses}", warehouses - 2)
        } else {
            ":w_id".to_string()
        };
        let (customer_id, stock_level_district) = match rules {
            Rules::HammerDb => (
                "random(1, 3000)".to_string(),
                // Drawn once per virtual user (a hash of its number and the run's seed), as
                // HammerDB draws each user's district before its first transaction.
                "(hash(:client_id) % 10 + 10) % 10 + 1",
            ),
            Rules::TpcC => (
                format!(
                    "((random(0, 1023) | random(1, 3000)) + {}) % 3000 + 1",
                    constants.c_id
                ),
                "random(1, 10)",
            ),
        };
        Inputs {
            warehouses,
            warehouse: choice.script_line(warehouses),
            customer: format!(
                "\\set by_name case when random(1, 100) <= 60 then {by_name} else 0 end\n\
                 \\set c_id {customer_id}\n\
                 \\set name ((random(0, 255) | random(0, 999)) + {}) % 1000\n",
                constants.c_last,
                by_name = rules.by_name(),
            ),
            stock_level_district: format!("\\set d_id {stock_level_district}\n"),
            payment_customer_warehouse: format!(
                "\\if random(1, 100) <= 85\n\\set c_w_id :w_id\n\\set c_d_id :d_id\n\
                 \\else\n\\set c_w_id {remote_warehouse}\n\\set c_d_id random(1, 10)\n\\endif\n"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_warehouses_deals_every_warehouse_to_one_list() {
        // 7 warehouses over 3 virtual users: lists {1, 4, 7}, {2, 5}, {3, 6}.
        let line = WarehouseChoice::All { virtual_users: 3 }.script_line(7);
        assert_eq!(
            line,
            "\\set w_list :client_id % 3\n\\set w_id :w_list + 1 + 3 * random(0, (7 - 1 - :w_list) / 3)\n"
        );
        for (list, highest) in [(0, 7), (1, 5), (2, 6)] {
            assert_eq!(list + 1 + 3 * ((7 - 1 - list) / 3), highest);
        }
    }
}
