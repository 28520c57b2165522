//! TPC-C's consistency conditions (clause 3.3.2) and the New-Order amounts in MariaDB's SQL:
//! the same conditions as `tpcc::check`'s, each a query that returns the keys that break it
//! (MariaDB has no FULL JOIN, no `IS DISTINCT FROM`, no `format`).

use crate::family::tpcc::check::{Outcome, CONDITIONS, SHOWN};
use stampede_base::error::Failure;
use stampede_control::mysql::ControlSession;

/// The queries in `CONDITIONS`' order.
const QUERIES: [&str; 10] = [
    "SELECT CONCAT('w_id=', w_id), CONCAT('w_ytd ', w_ytd, ', sum(d_ytd) ', SUM(d_ytd))
     FROM warehouse JOIN district ON d_w_id = w_id
     GROUP BY w_id, w_ytd HAVING w_ytd <> SUM(d_ytd) ORDER BY w_id",
    "SELECT CONCAT('w_id=', d_w_id, ' d_id=', d_id),
            CONCAT('d_next_o_id ', d_next_o_id, ', max(o_id) ', IFNULL(max_o_id, 'null'), ', max(no_o_id) ', IFNULL(max_no_o_id, 'null'))
     FROM district
     LEFT JOIN (SELECT o_w_id, o_d_id, MAX(o_id) AS max_o_id FROM orders GROUP BY o_w_id, o_d_id) o
            ON o_w_id = d_w_id AND o_d_id = d_id
     LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) AS max_no_o_id FROM new_order GROUP BY no_w_id, no_d_id) n
            ON no_w_id = d_w_id AND no_d_id = d_id
     WHERE NOT (d_next_o_id - 1 <=> max_o_id)
        OR (max_no_o_id IS NOT NULL AND d_next_o_id - 1 <> max_no_o_id)
     ORDER BY d_w_id, d_id",
    "SELECT CONCAT('w_id=', no_w_id, ' d_id=', no_d_id),
            CONCAT('min ', MIN(no_o_id), ', max ', MAX(no_o_id), ', rows ', COUNT(*))
     FROM new_order GROUP BY no_w_id, no_d_id
     HAVING MAX(no_o_id) - MIN(no_o_id) + 1 <> COUNT(*) ORDER BY no_w_id, no_d_id",
    "SELECT CONCAT('w_id=', o_w_id, ' d_id=', o_d_id), CONCAT('sum(o_ol_cnt) ', ol_cnt, ', order lines ', IFNULL(line_count, 0))
     FROM (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS ol_cnt FROM orders GROUP BY o_w_id, o_d_id) o
     LEFT JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS line_count FROM order_line GROUP BY ol_w_id, ol_d_id) l
            ON ol_w_id = o_w_id AND ol_d_id = o_d_id
     WHERE NOT (ol_cnt <=> line_count)
     UNION ALL
     SELECT CONCAT('w_id=', ol_w_id, ' d_id=', ol_d_id), CONCAT('sum(o_ol_cnt) null, order lines ', line_count)
     FROM (SELECT ol_w_id, ol_d_id, COUNT(*) AS line_count FROM order_line GROUP BY ol_w_id, ol_d_id) l
     LEFT JOIN (SELECT DISTINCT o_w_id, o_d_id FROM orders) o ON o_w_id = ol_w_id AND o_d_id = ol_d_id
     WHERE o_w_id IS NULL
     ORDER BY 1",
    "SELECT CONCAT('w_id=', o_w_id, ' d_id=', o_d_id, ' o_id=', o_id),
            CONCAT('o_carrier_id ', IFNULL(o_carrier_id, 'null'), ', in new_order ', IF(no_o_id IS NOT NULL, 'true', 'false'))
     FROM orders LEFT JOIN new_order ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id
     WHERE (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL) ORDER BY o_w_id, o_d_id, o_id",
    "SELECT CONCAT('w_id=', o_w_id, ' d_id=', o_d_id, ' o_id=', o_id), CONCAT('o_ol_cnt ', o_ol_cnt, ', lines ', IFNULL(line_count, 0))
     FROM orders LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, COUNT(*) AS line_count FROM order_line GROUP BY ol_w_id, ol_d_id, ol_o_id) l
            ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id
     WHERE NOT (o_ol_cnt <=> line_count) ORDER BY o_w_id, o_d_id, o_id",
    "SELECT CONCAT('w_id=', ol_w_id, ' d_id=', ol_d_id, ' o_id=', ol_o_id, ' ol_number=', ol_number),
            CONCAT('ol_delivery_d ', IFNULL(ol_delivery_d, 'null'), ', o_carrier_id ', IFNULL(o_carrier_id, 'null'))
     FROM order_line JOIN orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id AND o_id = ol_o_id
     WHERE (ol_delivery_d IS NULL) <> (o_carrier_id IS NULL) ORDER BY ol_w_id, ol_d_id, ol_o_id, ol_number",
    "SELECT CONCAT('w_id=', w_id), CONCAT('w_ytd ', w_ytd, ', sum(h_amount) ', IFNULL(paid, 'null'))
     FROM warehouse LEFT JOIN (SELECT h_w_id, SUM(h_amount) AS paid FROM history GROUP BY h_w_id) h ON h_w_id = w_id
     WHERE NOT (w_ytd <=> paid) ORDER BY w_id",
    "SELECT CONCAT('w_id=', d_w_id, ' d_id=', d_id), CONCAT('d_ytd ', d_ytd, ', sum(h_amount) ', IFNULL(paid, 'null'))
     FROM district LEFT JOIN (SELECT h_w_id, h_d_id, SUM(h_amount) AS paid FROM history GROUP BY h_w_id, h_d_id) h
            ON h_w_id = d_w_id AND h_d_id = d_id
     WHERE NOT (d_ytd <=> paid) ORDER BY d_w_id, d_id",
    // HammerDB's MariaDB procedure computes the amount into a DECIMAL(6,2) and stores it in its
    // INT column: rounded twice.
    "SELECT CONCAT('w_id=', ol_w_id, ' d_id=', ol_d_id, ' o_id=', ol_o_id, ' ol_number=', ol_number),
            CONCAT('ol_amount ', ol_amount, ', expected ', expected)
     FROM (SELECT ol_w_id, ol_d_id, ol_o_id, ol_number, ol_amount,
                  ROUND(ROUND(ol_quantity * i_price * (1 + w_tax + d_tax) * (1 - c_discount), 2)) AS expected
           FROM order_line
           JOIN orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id AND o_id = ol_o_id
           JOIN customer ON c_w_id = o_w_id AND c_d_id = o_d_id AND c_id = o_c_id
           JOIN district ON d_w_id = ol_w_id AND d_id = ol_d_id
           JOIN warehouse ON w_id = ol_w_id
           JOIN item ON i_id = ol_i_id
           WHERE ol_o_id > 3000) amounts
     WHERE NOT (ol_amount <=> expected)
     ORDER BY ol_w_id, ol_d_id, ol_o_id, ol_number",
];

/// Runs the conditions (the expensive ones only with `all`).
pub fn check(session: &mut ControlSession, all: bool) -> Result<Vec<Outcome>, Failure> {
    let mut outcomes = Vec::new();
    for (condition, query) in CONDITIONS.iter().zip(QUERIES) {
        if condition.expensive && !all {
            continue;
        }
        let rows = session.rows(query)?.rows;
        let text = |value: &Option<String>| value.clone().unwrap_or_else(|| "null".into());
        outcomes.push(Outcome {
            condition,
            total: rows.len(),
            offenders: rows
                .iter()
                .take(SHOWN)
                .map(|row| (text(&row[0]), text(&row[1])))
                .collect(),
        });
    }
    Ok(outcomes)
}
