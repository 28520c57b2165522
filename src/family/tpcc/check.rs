//! TPC-C's consistency conditions (clause 3.3.2): each a query that returns the keys that
//! break it. 1–4 always; 5–9 with `--all` (they scan orders, order_line and history), and with
//! them the amounts New-Order wrote, recomputed from the item prices, taxes and discounts.

use stampede_base::error::Failure;
use tokio_postgres::Client;

use stampede_control::postgres::sql_error;

pub struct Condition {
    pub clause: &'static str,
    pub rule: &'static str,
    /// Rows of (offending key, what was found), as text.
    query: &'static str,
    /// Reads whole large tables.
    pub expensive: bool,
}

pub const CONDITIONS: [Condition; 10] = [
    Condition {
        clause: "3.3.2.1",
        rule: "W_YTD = sum(D_YTD) per warehouse",
        query: "SELECT format('w_id=%s', w_id), format('w_ytd %s, sum(d_ytd) %s', w_ytd, sum(d_ytd))
                FROM warehouse JOIN district ON d_w_id = w_id
                GROUP BY w_id, w_ytd HAVING w_ytd <> sum(d_ytd) ORDER BY w_id",
        expensive: false,
    },
    Condition {
        clause: "3.3.2.2",
        rule: "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district",
        query: "SELECT format('w_id=%s d_id=%s', d_w_id, d_id),
                       format('d_next_o_id %s, max(o_id) %s, max(no_o_id) %s', d_next_o_id, max_o_id, max_no_o_id)
                FROM district
                LEFT JOIN (SELECT o_w_id, o_d_id, max(o_id) AS max_o_id FROM orders GROUP BY 1, 2) o
                       ON o_w_id = d_w_id AND o_d_id = d_id
                LEFT JOIN (SELECT no_w_id, no_d_id, max(no_o_id) AS max_no_o_id FROM new_order GROUP BY 1, 2) n
                       ON no_w_id = d_w_id AND no_d_id = d_id
                WHERE d_next_o_id - 1 IS DISTINCT FROM max_o_id
                   OR (max_no_o_id IS NOT NULL AND d_next_o_id - 1 <> max_no_o_id)
                ORDER BY d_w_id, d_id",
        expensive: false,
    },
    Condition {
        clause: "3.3.2.3",
        rule: "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in new_order per district",
        query: "SELECT format('w_id=%s d_id=%s', no_w_id, no_d_id),
                       format('min %s, max %s, rows %s', min(no_o_id), max(no_o_id), count(*))
                FROM new_order GROUP BY no_w_id, no_d_id
                HAVING max(no_o_id) - min(no_o_id) + 1 <> count(*) ORDER BY 1",
        expensive: false,
    },
    Condition {
        clause: "3.3.2.4",
        rule: "sum(O_OL_CNT) = rows in order_line per district",
        query: "SELECT format('w_id=%s d_id=%s', o_w_id, o_d_id), format('sum(o_ol_cnt) %s, order lines %s', ol_cnt, lines)
                FROM (SELECT o_w_id, o_d_id, sum(o_ol_cnt) AS ol_cnt FROM orders GROUP BY 1, 2) o
                FULL JOIN (SELECT ol_w_id, ol_d_id, count(*) AS lines FROM order_line GROUP BY 1, 2) l
                       ON ol_w_id = o_w_id AND ol_d_id = o_d_id
                WHERE ol_cnt IS DISTINCT FROM lines ORDER BY 1",
        expensive: false,
    },
    Condition {
        clause: "3.3.2.5",
        rule: "O_CARRIER_ID is null exactly for the orders in new_order",
        query: "SELECT format('w_id=%s d_id=%s o_id=%s', o_w_id, o_d_id, o_id),
                       format('o_carrier_id %s, in new_order %s', coalesce(o_carrier_id::text, 'null'), no_o_id IS NOT NULL)
                FROM orders LEFT JOIN new_order ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id
                WHERE (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL) ORDER BY o_w_id, o_d_id, o_id",
        expensive: true,
    },
    Condition {
        clause: "3.3.2.6",
        rule: "O_OL_CNT = the order's rows in order_line",
        query: "SELECT format('w_id=%s d_id=%s o_id=%s', o_w_id, o_d_id, o_id), format('o_ol_cnt %s, lines %s', o_ol_cnt, coalesce(lines, 0))
                FROM orders LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, count(*) AS lines FROM order_line GROUP BY 1, 2, 3) l
                       ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id
                WHERE o_ol_cnt IS DISTINCT FROM lines ORDER BY o_w_id, o_d_id, o_id",
        expensive: true,
    },
    Condition {
        clause: "3.3.2.7",
        rule: "OL_DELIVERY_D is null exactly when the order's O_CARRIER_ID is",
        query: "SELECT format('w_id=%s d_id=%s o_id=%s ol_number=%s', ol_w_id, ol_d_id, ol_o_id, ol_number),
                       format('ol_delivery_d %s, o_carrier_id %s', coalesce(ol_delivery_d::text, 'null'), coalesce(o_carrier_id::text, 'null'))
                FROM order_line JOIN orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id AND o_id = ol_o_id
                WHERE (ol_delivery_d IS NULL) <> (o_carrier_id IS NULL) ORDER BY 1",
        expensive: true,
    },
    Condition {
        clause: "3.3.2.8",
        rule: "W_YTD = sum(H_AMOUNT) per warehouse",
        query: "SELECT format('w_id=%s', w_id), format('w_ytd %s, sum(h_amount) %s', w_ytd, paid)
                FROM warehouse LEFT JOIN (SELECT h_w_id, sum(h_amount) AS paid FROM history GROUP BY 1) h ON h_w_id = w_id
                WHERE w_ytd IS DISTINCT FROM paid ORDER BY w_id",
        expensive: true,
    },
    Condition {
        clause: "3.3.2.9",
        rule: "D_YTD = sum(H_AMOUNT) per district",
        query: "SELECT format('w_id=%s d_id=%s', d_w_id, d_id), format('d_ytd %s, sum(h_amount) %s', d_ytd, paid)
                FROM district LEFT JOIN (SELECT h_w_id, h_d_id, sum(h_amount) AS paid FROM history GROUP BY 1, 2) h
                       ON h_w_id = d_w_id AND h_d_id = d_id
                WHERE d_ytd IS DISTINCT FROM paid ORDER BY d_w_id, d_id",
        expensive: true,
    },
    // Not one of TPC-C's conditions: the line amounts of the orders the run created (the load
    // made 3,000 per district), as HammerDB 6.0 computes them (quantity × price with the taxes
    // and discount; 4.x added the quantity instead of multiplying), rounded as numeric(6,2).
    Condition {
        clause: "2.4.2.2",
        rule: "OL_AMOUNT = OL_QUANTITY × I_PRICE × (1 + W_TAX + D_TAX) × (1 − C_DISCOUNT) for the run's orders (HammerDB 6.0)",
        query: "SELECT format('w_id=%s d_id=%s o_id=%s ol_number=%s', ol_w_id, ol_d_id, ol_o_id, ol_number),
                       format('ol_amount %s, expected %s', ol_amount, expected)
                FROM order_line
                JOIN orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id AND o_id = ol_o_id
                JOIN customer ON c_w_id = o_w_id AND c_d_id = o_d_id AND c_id = o_c_id
                JOIN district ON d_w_id = ol_w_id AND d_id = ol_d_id
                JOIN warehouse ON w_id = ol_w_id
                JOIN item ON i_id = ol_i_id
                CROSS JOIN LATERAL (SELECT round(ol_quantity * i_price * (1 + w_tax + d_tax) * (1 - c_discount), 2) AS expected) e
                WHERE ol_o_id > 3000 AND ol_amount IS DISTINCT FROM expected
                ORDER BY ol_w_id, ol_d_id, ol_o_id, ol_number",
        expensive: true,
    },
];

/// How many offending keys a failed condition lists.
pub const SHOWN: usize = 10;

pub struct Outcome {
    pub condition: &'static Condition,
    /// Offending keys and what was found, at most `SHOWN`, and how many there are in all.
    pub offenders: Vec<(String, String)>,
    pub total: usize,
}

/// Runs the conditions (the expensive ones only with `all`).
pub async fn check(client: &Client, all: bool) -> Result<Vec<Outcome>, Failure> {
    let mut outcomes = Vec::new();
    for condition in CONDITIONS.iter().filter(|c| all || !c.expensive) {
        let rows = client
            .query(condition.query, &[])
            .await
            .map_err(|e| sql_error(condition.clause, e))?;
        outcomes.push(Outcome {
            condition,
            total: rows.len(),
            offenders: rows
                .iter()
                .take(SHOWN)
                .map(|r| (r.get(0), r.get(1)))
                .collect(),
        });
    }
    Ok(outcomes)
}
