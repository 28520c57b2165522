//! The five TPC-C transactions as PL/pgSQL procedures (server mode, as HammerDB runs them on
//! PostgreSQL 11 and later: one `CALL` per transaction), or as functions called by `SELECT`
//! before 11, which has no procedures (as HammerDB does there). Written from the TPC-C specification,
//! clauses 2.4-2.8, with HammerDB's inputs: the client picks district, customer and line count;
//! the procedure picks items, supplying warehouses (1% remote) and quantities, as HammerDB's do.

/// `tpcc_last_name(n)`: C_LAST for 0..999 from its three digits' syllables (clause 4.3.2.3).
const LAST_NAME: &str = "CREATE OR REPLACE FUNCTION tpcc_last_name(n integer) RETURNS varchar
LANGUAGE sql IMMUTABLE STRICT AS $$
SELECT (ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])[n / 100 % 10 + 1]
    || (ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])[n / 10 % 10 + 1]
    || (ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])[n % 10 + 1]
$$";

/// New-Order (2.4). With `rollback_last` the last line names the unused item 100001, and the
/// transaction is rolled back when that item is not found (2.4.2.3); `no_o_id` is then 0.
/// Lines are processed in (supplying warehouse, item) order so that concurrent New-Orders take
/// their stock row locks in one order and do not deadlock.
const NEW_ORDER: &str = "CREATE OR REPLACE PROCEDURE neword(no_w_id integer, no_max_w_id integer,
    no_d_id integer, no_c_id integer, no_o_ol_cnt integer, rollback_last integer,
    INOUT no_o_id integer DEFAULT 0)
LANGUAGE plpgsql AS $$
DECLARE
    discount numeric; w_tax_ numeric; d_tax_ numeric; price numeric; dist_info character(24);
    numbers integer[]; items integer[]; supplies integer[]; quantities integer[];
    i integer;
BEGIN
    SELECT array_agg(n ORDER BY supply, item, n), array_agg(item ORDER BY supply, item, n),
           array_agg(supply ORDER BY supply, item, n), array_agg(quantity ORDER BY supply, item, n)
    INTO numbers, items, supplies, quantities
    FROM (SELECT n,
                 CASE WHEN rollback_last = 1 AND n = no_o_ol_cnt THEN 100001
                      ELSE 1 + floor(random() * 100000)::integer END AS item,
                 CASE WHEN no_max_w_id > 1 AND random() < 0.01
                      THEN 1 + (no_w_id + floor(random() * (no_max_w_id - 1))::integer) % no_max_w_id
                      ELSE no_w_id END AS supply,
                 1 + floor(random() * 10)::integer AS quantity
          FROM generate_series(1, no_o_ol_cnt) AS n) AS lines;
    SELECT c_discount INTO discount FROM customer
    WHERE c_w_id = no_w_id AND c_d_id = no_d_id AND c_id = no_c_id;
    SELECT w_tax INTO w_tax_ FROM warehouse WHERE w_id = no_w_id;
    UPDATE district SET d_next_o_id = d_next_o_id + 1
    WHERE d_w_id = no_w_id AND d_id = no_d_id
    RETURNING d_next_o_id - 1, d_tax INTO no_o_id, d_tax_;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local)
    VALUES (no_o_id, no_d_id, no_w_id, no_c_id, current_timestamp, no_o_ol_cnt,
            CASE WHEN no_w_id = ALL (supplies) THEN 1 ELSE 0 END);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (no_o_id, no_d_id, no_w_id);
    FOR i IN 1..no_o_ol_cnt LOOP
        SELECT i_price INTO price FROM item WHERE i_id = items[i];
        IF NOT FOUND THEN
            {missing_item}
        END IF;
        UPDATE stock
        SET s_quantity = CASE WHEN s_quantity >= quantities[i] + 10 THEN s_quantity - quantities[i]
                              ELSE s_quantity - quantities[i] + 91 END,
            s_ytd = s_ytd + quantities[i],
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + CASE WHEN supplies[i] <> no_w_id THEN 1 ELSE 0 END
        WHERE s_i_id = items[i] AND s_w_id = supplies[i]
        RETURNING CASE no_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
                               WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06
                               WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09
                               ELSE s_dist_10 END
        INTO dist_info;
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                                ol_quantity, ol_amount, ol_dist_info)
        VALUES (no_o_id, no_d_id, no_w_id, numbers[i], items[i], supplies[i], quantities[i],
                quantities[i] * price * (1 + w_tax_ + d_tax_) * (1 - discount), dist_info);
    END LOOP;
{handler}END
$$";

/// The customer a Payment or Order-Status names: by id, or by last name the one in the middle
/// of those with that name in C_FIRST order (2.5.2.2, 2.6.2.2).
const CUSTOMER_BY_NAME: &str = "CREATE OR REPLACE FUNCTION tpcc_customer(w integer, d integer,
    id integer, by_name integer, last varchar) RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    named integer;
    found_id integer;
BEGIN
    IF by_name = 0 THEN
        RETURN id;
    END IF;
    SELECT count(*) INTO named FROM customer WHERE c_w_id = w AND c_d_id = d AND c_last = last;
    SELECT c_id INTO found_id FROM customer
    WHERE c_w_id = w AND c_d_id = d AND c_last = last
    ORDER BY c_first OFFSET (named + 1) / 2 - 1 LIMIT 1;
    RETURN found_id;
END
$$";

/// Payment (2.5): warehouse and district year-to-date, the customer's balance, payment count and
/// (bad credit) data, and a history row.
const PAYMENT: &str = "CREATE OR REPLACE PROCEDURE payment(p_w_id integer, p_d_id integer,
    p_c_w_id integer, p_c_d_id integer, p_c_id integer, by_name integer, p_c_last varchar,
    p_h_amount numeric, INOUT c_id_paid integer DEFAULT 0)
LANGUAGE plpgsql AS $$
DECLARE
    w_name_ varchar; d_name_ varchar; credit character(2);
BEGIN
    UPDATE warehouse SET w_ytd = w_ytd + p_h_amount WHERE w_id = p_w_id RETURNING w_name INTO w_name_;
    UPDATE district SET d_ytd = d_ytd + p_h_amount
    WHERE d_w_id = p_w_id AND d_id = p_d_id RETURNING d_name INTO d_name_;
    c_id_paid := tpcc_customer(p_c_w_id, p_c_d_id, p_c_id, by_name, p_c_last);
    UPDATE customer
    SET c_balance = c_balance - p_h_amount, c_ytd_payment = c_ytd_payment + p_h_amount,
        c_payment_cnt = c_payment_cnt + 1
    WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = c_id_paid
    RETURNING c_credit INTO credit;
    IF credit = 'BC' THEN
        UPDATE customer
        SET c_data = substr(format('%s %s %s %s %s %s | ', c_id_paid, p_c_d_id, p_c_w_id, p_d_id,
                                   p_w_id, p_h_amount) || c_data, 1, 500)
        WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = c_id_paid;
    END IF;
    INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (p_c_d_id, p_c_w_id, c_id_paid, p_d_id, p_w_id, current_timestamp, p_h_amount,
            w_name_ || '    ' || d_name_);
END
$$";

/// Order-Status (2.6): the customer's balance, latest order and its lines.
const ORDER_STATUS: &str = "CREATE OR REPLACE PROCEDURE ostat(os_w_id integer, os_d_id integer,
    os_c_id integer, by_name integer, os_c_last varchar, INOUT lines integer DEFAULT 0)
LANGUAGE plpgsql AS $$
DECLARE
    customer_id integer; balance numeric; latest integer;
BEGIN
    customer_id := tpcc_customer(os_w_id, os_d_id, os_c_id, by_name, os_c_last);
    SELECT c_balance INTO balance FROM customer
    WHERE c_w_id = os_w_id AND c_d_id = os_d_id AND c_id = customer_id;
    SELECT o_id INTO latest FROM orders
    WHERE o_w_id = os_w_id AND o_d_id = os_d_id AND o_c_id = customer_id
    ORDER BY o_id DESC LIMIT 1;
    SELECT count(*) INTO lines FROM (
        SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
        WHERE ol_w_id = os_w_id AND ol_d_id = os_d_id AND ol_o_id = latest) AS order_lines;
END
$$";

/// Delivery (2.7): per district the oldest undelivered order gets a carrier, its lines a
/// delivery date, and its customer the amount; districts without one are skipped.
const DELIVERY: &str =
    "CREATE OR REPLACE PROCEDURE delivery(d_w_id integer, d_o_carrier_id integer,
    INOUT delivered integer DEFAULT 0)
LANGUAGE plpgsql AS $$
DECLARE
    district integer; oldest integer; customer_id integer; total numeric;
BEGIN
    delivered := 0;
    FOR district IN 1..10 LOOP
        SELECT no_o_id INTO oldest FROM new_order
        WHERE no_w_id = d_w_id AND no_d_id = district
        ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM new_order WHERE no_w_id = d_w_id AND no_d_id = district AND no_o_id = oldest;
        UPDATE orders SET o_carrier_id = d_o_carrier_id
        WHERE o_w_id = d_w_id AND o_d_id = district AND o_id = oldest
        RETURNING o_c_id INTO customer_id;
        UPDATE order_line SET ol_delivery_d = current_timestamp
        WHERE ol_w_id = d_w_id AND ol_d_id = district AND ol_o_id = oldest;
        SELECT sum(ol_amount) INTO total FROM order_line
        WHERE ol_w_id = d_w_id AND ol_d_id = district AND ol_o_id = oldest;
        UPDATE customer SET c_balance = c_balance + total, c_delivery_cnt = c_delivery_cnt + 1
        WHERE c_w_id = d_w_id AND c_d_id = district AND c_id = customer_id;
        delivered := delivered + 1;
    END LOOP;
END
$$";

/// Stock-Level (2.8): distinct items of the district's last 20 orders whose stock is below the
/// threshold.
const STOCK_LEVEL: &str = "CREATE OR REPLACE PROCEDURE slev(st_w_id integer, st_d_id integer,
    threshold integer, INOUT stock_count integer DEFAULT 0)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT count(DISTINCT s_i_id) INTO stock_count
    FROM district
    JOIN order_line ON ol_w_id = d_w_id AND ol_d_id = d_id
                   AND ol_o_id >= d_next_o_id - 20 AND ol_o_id < d_next_o_id
    JOIN stock ON s_w_id = d_w_id AND s_i_id = ol_i_id
    WHERE d_w_id = st_w_id AND d_id = st_d_id AND s_quantity < threshold;
END
$$";

/// How the transactions are defined and called: procedures from PostgreSQL 11, functions
/// before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routines {
    Procedures,
    Functions,
}

/// The SQLSTATE New-Order's function raises for the unused item, caught by its own handler.
const MISSING_ITEM: &str = "TPCC1";

/// The transactions' names, as `CALL`ed or `SELECT`ed.
const NAMES: [&str; 5] = ["neword", "payment", "ostat", "delivery", "slev"];

impl Routines {
    /// What the server at `server_version_num` supports.
    pub fn for_server(server_version_num: i64) -> Routines {
        if server_version_num >= 110000 {
            Routines::Procedures
        } else {
            Routines::Functions
        }
    }

    /// The statement that runs transaction `name` with `arguments`.
    pub fn call(self, name: &str, arguments: &str) -> String {
        match self {
            Routines::Procedures => format!("CALL {name}({arguments})"),
            Routines::Functions => format!("SELECT {name}({arguments})"),
        }
    }

    /// Every definition, in creation order. A function cannot end its transaction, so
    /// New-Order's function undoes its work by raising an error its own handler catches (the
    /// block's work is rolled back with it) and returns 0 as the procedure does after ROLLBACK;
    /// that handler costs a subtransaction per New-Order.
    pub fn definitions(self) -> [String; 7] {
        let (missing_item, handler) = match self {
            Routines::Procedures => (
                "ROLLBACK;\n            no_o_id := 0;\n            RETURN;".to_string(),
                String::new(),
            ),
            Routines::Functions => (
                format!("RAISE EXCEPTION 'item not found' USING ERRCODE = '{MISSING_ITEM}';"),
                format!("EXCEPTION WHEN SQLSTATE '{MISSING_ITEM}' THEN\n    no_o_id := 0;\n"),
            ),
        };
        let new_order = NEW_ORDER
            .replace("{missing_item}", &missing_item)
            .replace("{handler}", &handler);
        [
            LAST_NAME.to_string(),
            CUSTOMER_BY_NAME.to_string(),
            new_order,
            PAYMENT.to_string(),
            ORDER_STATUS.to_string(),
            DELIVERY.to_string(),
            STOCK_LEVEL.to_string(),
        ]
        .map(|definition| match self {
            Routines::Procedures => definition,
            Routines::Functions => {
                definition.replace("CREATE OR REPLACE PROCEDURE", "CREATE OR REPLACE FUNCTION")
            }
        })
    }

    /// Drops what `definitions` creates. Before 10 `DROP FUNCTION` needs each argument list,
    /// so the functions are found in the catalog.
    pub fn drop(self) -> String {
        let names = NAMES.join(", ");
        match self {
            Routines::Procedures => format!("DROP PROCEDURE IF EXISTS {names};\nDROP FUNCTION IF EXISTS tpcc_customer, tpcc_last_name"),
            Routines::Functions => {
                let quoted: Vec<String> = NAMES
                    .iter()
                    .chain(&["tpcc_customer", "tpcc_last_name"])
                    .map(|name| format!("'{name}'"))
                    .collect();
                format!(
                    "DO $$DECLARE routine regprocedure;\nBEGIN\n    FOR routine IN SELECT oid::regprocedure FROM pg_proc\n        WHERE proname IN ({}) AND pronamespace = current_schema()::regnamespace\n    LOOP\n        EXECUTE 'DROP FUNCTION ' || routine;\n    END LOOP;\nEND$$",
                    quoted.join(", ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_11_the_transactions_are_functions() {
        assert_eq!(Routines::for_server(110000), Routines::Procedures);
        assert_eq!(Routines::for_server(100023), Routines::Functions);
        assert_eq!(
            Routines::Functions.call("slev", "1, 2"),
            "SELECT slev(1, 2)"
        );
        assert_eq!(Routines::Procedures.call("slev", "1, 2"), "CALL slev(1, 2)");
        let functions = Routines::Functions.definitions();
        assert!(functions
            .iter()
            .all(|d| !d.contains("PROCEDURE") && !d.contains("{")));
        assert!(functions[2].contains("EXCEPTION WHEN SQLSTATE 'TPCC1' THEN"));
        let procedures = Routines::Procedures.definitions();
        assert!(procedures[2].contains("ROLLBACK;") && !procedures[2].contains("EXCEPTION"));
    }
}
