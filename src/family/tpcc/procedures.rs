//! The five TPC-C transactions as PL/pgSQL procedures (server mode, as HammerDB runs them on
//! PostgreSQL 11 and later: one `CALL` per transaction), or as functions called by `SELECT`
//! before 11, which has no procedures (as HammerDB does there). Their statements have the
//! shapes of HammerDB's PostgreSQL procedures (`src/postgresql/pgoltp.tcl`): New-Order and
//! Delivery work set-wise on arrays, Stock-Level counts distinct items over the join of
//! order_line, stock and district, a customer named by last name is counted and then fetched
//! row by row in C_FIRST order through a cursor, and every procedure runs in a block with an exception handler (a
//! subtransaction per call, as HammerDB's). Where HammerDB departs from the TPC-C
//! specification, these follow the specification inside the same statements: the unused
//! item rolls New-Order back (2.4.2.3), a New-Order's items are distinct, stock, customer
//! payment and delivery counters are kept (2.4.2.2, 2.5.2.2, 2.7.4.2). Which customer of
//! those with a last name is taken is the caller's: HammerDB's or TPC-C's (`Rules::by_name`).

/// `tpcc_last_name(n)`: C_LAST for 0..999 from its three digits' syllables (clause 4.3.2.3), for
/// looking customers up by hand; the virtual users draw names with the script function of
/// the same name.
const LAST_NAME: &str = "CREATE OR REPLACE FUNCTION tpcc_last_name(n integer) RETURNS varchar
LANGUAGE sql IMMUTABLE STRICT AS $$
SELECT (ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])[n / 100 % 10 + 1]
    || (ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])[n / 10 % 10 + 1]
    || (ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])[n % 10 + 1]
$$";

/// The handler every procedure but Stock-Level ends with, as HammerDB's: the block becomes a
/// subtransaction, and a conflict still reaches the driver (which counts and retries it)
/// where HammerDB's rolls back silently.
const CONFLICT_HANDLER: &str =
    "    WHEN serialization_failure OR deadlock_detected THEN\n        RAISE;\n";

/// New-Order (2.4). The procedure draws the lines (distinct items, 1% from a remote warehouse,
/// quantities) into arrays, then: the customer and warehouse, the district's next order id,
/// the order and new-order rows, the items' prices, one set-wise UPDATE of the lines' stock
/// and one INSERT of all order lines. With `rollback_last` the last line names the unused
/// item 100001, whose missing price undoes the transaction (2.4.2.3) through the handler;
/// `no_d_next_o_id` (the order's id) is then 0. The parameters are HammerDB's, in its order,
/// with `rollback_last` after them: its outputs (the customer's discount, last name and
/// credit, the taxes, the order id) are returned to the client as HammerDB's are. The stock rows are updated in (supplying warehouse, item) order, so
/// that concurrent New-Orders take their row locks in one order and do not deadlock.
const NEW_ORDER: &str = "CREATE OR REPLACE PROCEDURE neword(no_w_id integer, no_max_w_id integer,
    no_d_id integer, no_c_id integer, no_o_ol_cnt integer, INOUT no_c_discount numeric,
    INOUT no_c_last varchar, INOUT no_c_credit varchar, INOUT no_d_tax numeric,
    INOUT no_w_tax numeric, INOUT no_d_next_o_id integer, tstamp timestamp,
    rollback_last integer DEFAULT 0)
LANGUAGE plpgsql AS $$
DECLARE
    all_local smallint := 1;
    numbers smallint[] := '{}'; items integer[] := '{}'; supplies integer[] := '{}';
    quantities smallint[] := '{}'; prices numeric(5,2)[]; dists character(24)[];
    amounts numeric(6,2)[];
    drawn_item integer;
BEGIN
    SELECT c_discount, c_last, c_credit, w_tax INTO no_c_discount, no_c_last, no_c_credit, no_w_tax
    FROM customer, warehouse
    WHERE w_id = no_w_id AND c_w_id = no_w_id AND c_d_id = no_d_id AND c_id = no_c_id;
    FOR line_number IN 1..no_o_ol_cnt LOOP
        IF rollback_last = 1 AND line_number = no_o_ol_cnt THEN
            drawn_item := 100001;
        ELSE
            LOOP
                drawn_item := 1 + floor(random() * 100000)::integer;
                EXIT WHEN drawn_item <> ALL (items);
            END LOOP;
        END IF;
        numbers[line_number] := line_number;
        items[line_number] := drawn_item;
        IF no_max_w_id > 1 AND random() < 0.01 THEN
            supplies[line_number] :=
                1 + (no_w_id + floor(random() * (no_max_w_id - 1))::integer) % no_max_w_id;
            all_local := 0;
        ELSE
            supplies[line_number] := no_w_id;
        END IF;
        quantities[line_number] := 1 + floor(random() * 10)::integer;
    END LOOP;
    UPDATE district SET d_next_o_id = d_next_o_id + 1
    WHERE d_id = no_d_id AND d_w_id = no_w_id
    RETURNING d_next_o_id - 1, d_tax INTO no_d_next_o_id, no_d_tax;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local)
    VALUES (no_d_next_o_id, no_d_id, no_w_id, no_c_id, current_timestamp, no_o_ol_cnt, all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (no_d_next_o_id, no_d_id, no_w_id);
    SELECT array_agg(i_price ORDER BY lines.number) INTO prices
    FROM unnest(items) WITH ORDINALITY AS lines (item, number)
    LEFT JOIN item ON i_id = lines.item;
    IF array_position(prices, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'item not found' USING ERRCODE = 'TPCC1';
    END IF;
    WITH stock_update AS (
        UPDATE stock
        SET s_quantity = (CASE WHEN s_quantity < lines.quantity + 10 THEN s_quantity + 91
                               ELSE s_quantity END) - lines.quantity,
            s_ytd = s_ytd + lines.quantity,
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + CASE WHEN lines.supply = no_w_id THEN 0 ELSE 1 END
        FROM (SELECT * FROM unnest(numbers, items, supplies, quantities, prices)
                  AS drawn (number, item, supply, quantity, price)
              ORDER BY supply, item) AS lines
        WHERE s_i_id = lines.item AND s_w_id = lines.supply
        RETURNING lines.number,
            CASE no_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
                         WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06
                         WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09
                         ELSE s_dist_10 END AS dist,
            lines.quantity * lines.price * (1 + no_w_tax + no_d_tax) * (1 - no_c_discount) AS amount)
    SELECT array_agg(dist ORDER BY number), array_agg(amount ORDER BY number)
    INTO dists, amounts FROM stock_update;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                            ol_quantity, ol_amount, ol_dist_info)
    SELECT no_d_next_o_id, no_d_id, no_w_id, number, item, supply, quantity, amount, dist
    FROM unnest(numbers, items, supplies, quantities, amounts, dists)
        AS lines (number, item, supply, quantity, amount, dist);
EXCEPTION
    WHEN SQLSTATE 'TPCC1' THEN
        no_d_next_o_id := 0;
{conflict}END
$$";

/// The customer columns Payment reads, as HammerDB's, and the outputs they are read into.
const PAYMENT_CUSTOMER: &str = "c_first, c_middle, c_street_1, c_street_2, c_city, c_state, c_zip,
               c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_since";
const PAYMENT_CUSTOMER_OUT: &str = "p_c_first, p_c_middle, p_c_street_1, p_c_street_2, p_c_city,
               p_c_state, p_c_zip, p_c_phone, p_c_credit, p_c_credit_lim, p_c_discount,
               p_c_balance, p_c_since";

/// Payment (2.5): warehouse and district year-to-date with their addresses, the customer (by
/// id, or by last name: counted, then fetched row by row in C_FIRST order through a cursor,
/// as HammerDB's loop fetches them, up to the row `byname` names: `Rules::by_name`), one
/// UPDATE of the customer (with C_DATA for bad credit) and a history row. The parameters are HammerDB's, in its order: what
/// the terminal shows (the addresses, the customer's data, balance and C_DATA) goes back to the
/// client in its INOUT parameters, as HammerDB's; `tstamp` is the payment's date.
const PAYMENT: &str = "CREATE OR REPLACE PROCEDURE payment(p_w_id integer, p_d_id integer,
    p_c_w_id integer, p_c_d_id integer, byname integer, p_h_amount numeric,
    INOUT p_c_credit char(2), INOUT p_c_last varchar(16), INOUT p_c_id integer,
    INOUT p_w_street_1 varchar(20), INOUT p_w_street_2 varchar(20), INOUT p_w_city varchar(20),
    INOUT p_w_state char(2), INOUT p_w_zip char(9), INOUT p_d_street_1 varchar(20),
    INOUT p_d_street_2 varchar(20), INOUT p_d_city varchar(20), INOUT p_d_state char(2),
    INOUT p_d_zip char(9), INOUT p_c_first varchar(16), INOUT p_c_middle char(2),
    INOUT p_c_street_1 varchar(20), INOUT p_c_street_2 varchar(20), INOUT p_c_city varchar(20),
    INOUT p_c_state char(2), INOUT p_c_zip char(9), INOUT p_c_phone char(16),
    INOUT p_c_since timestamp, INOUT p_c_credit_lim numeric(12,2),
    INOUT p_c_discount numeric(4,4), INOUT p_c_balance numeric(12,2),
    INOUT p_c_data varchar(500), tstamp timestamp)
LANGUAGE plpgsql AS $$
DECLARE
    w_name_ varchar(10); d_name_ varchar(10); named integer;
    by_name_cursor CURSOR FOR
        SELECT c_id, {customer}
        FROM customer WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = p_c_last
        ORDER BY c_first;
BEGIN
    UPDATE warehouse SET w_ytd = w_ytd + p_h_amount WHERE w_id = p_w_id
    RETURNING w_street_1, w_street_2, w_city, w_state, w_zip, w_name
    INTO p_w_street_1, p_w_street_2, p_w_city, p_w_state, p_w_zip, w_name_;
    UPDATE district SET d_ytd = d_ytd + p_h_amount WHERE d_w_id = p_w_id AND d_id = p_d_id
    RETURNING d_street_1, d_street_2, d_city, d_state, d_zip, d_name
    INTO p_d_street_1, p_d_street_2, p_d_city, p_d_state, p_d_zip, d_name_;
    IF byname <> 0 THEN
        SELECT count(c_id) INTO named FROM customer
        WHERE c_last = p_c_last AND c_d_id = p_c_d_id AND c_w_id = p_c_w_id;
        OPEN by_name_cursor;
        FOR fetched IN 1 .. CASE byname WHEN 1 THEN named / 2 ELSE (named + 1) / 2 END LOOP
            FETCH by_name_cursor INTO p_c_id, {customer_out};
        END LOOP;
        CLOSE by_name_cursor;
    ELSE
        SELECT c_last, {customer} INTO p_c_last, {customer_out}
        FROM customer WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = p_c_id;
    END IF;
    IF p_c_credit = 'BC' THEN
        UPDATE customer
        SET c_balance = c_balance - p_h_amount, c_ytd_payment = c_ytd_payment + p_h_amount,
            c_payment_cnt = c_payment_cnt + 1,
            c_data = substr(format('%s %s %s %s %s %s %s %s | ', p_c_id, p_c_d_id, p_c_w_id,
                                   p_d_id, p_w_id, to_char(p_h_amount, '9999.99'),
                                   to_char(tstamp, 'YYYYMMDDHH24MISS'),
                                   w_name_ || ' ' || d_name_) || c_data, 1, 500)
        WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = p_c_id
        RETURNING c_balance, c_data INTO p_c_balance, p_c_data;
    ELSE
        UPDATE customer
        SET c_balance = c_balance - p_h_amount, c_ytd_payment = c_ytd_payment + p_h_amount,
            c_payment_cnt = c_payment_cnt + 1
        WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = p_c_id
        RETURNING c_balance, c_data INTO p_c_balance, p_c_data;
    END IF;
    INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (p_c_d_id, p_c_w_id, p_c_id, p_d_id, p_w_id, tstamp, p_h_amount,
            w_name_ || '    ' || d_name_);
EXCEPTION
{conflict}END
$$";

/// Order-Status (2.6): the customer (by id, or by last name counted and fetched through a
/// cursor up to the row `byname` names, as Payment),
/// its latest order and that order's lines, read one by one into the text line HammerDB's
/// loop builds. The parameters are HammerDB's, in its order: the customer, the order and the
/// lines' text go back to the client in its INOUT parameters, as HammerDB's.
const ORDER_STATUS: &str = "CREATE OR REPLACE PROCEDURE ostat(os_w_id integer, os_d_id integer,
    INOUT os_c_id integer, byname integer, INOUT os_c_last varchar, INOUT os_c_first varchar,
    INOUT os_c_middle varchar, INOUT os_c_balance numeric, INOUT os_o_id integer,
    INOUT os_entdate timestamp, INOUT os_o_carrier_id integer, INOUT os_c_line text DEFAULT '')
LANGUAGE plpgsql AS $$
DECLARE
    named integer; order_line_row record;
    by_name_cursor CURSOR FOR
        SELECT c_balance, c_first, c_middle, c_id FROM customer
        WHERE c_last = os_c_last AND c_d_id = os_d_id AND c_w_id = os_w_id
        ORDER BY c_first;
BEGIN
    IF byname <> 0 THEN
        SELECT count(c_id) INTO named FROM customer
        WHERE c_last = os_c_last AND c_d_id = os_d_id AND c_w_id = os_w_id;
        OPEN by_name_cursor;
        FOR fetched IN 1 .. (named + 1) / 2 + CASE byname WHEN 1 THEN 1 ELSE 0 END LOOP
            FETCH by_name_cursor INTO os_c_balance, os_c_first, os_c_middle, os_c_id;
        END LOOP;
        CLOSE by_name_cursor;
    ELSE
        SELECT c_balance, c_first, c_middle, c_last
        INTO os_c_balance, os_c_first, os_c_middle, os_c_last FROM customer
        WHERE c_id = os_c_id AND c_d_id = os_d_id AND c_w_id = os_w_id;
    END IF;
    SELECT o_id, o_carrier_id, o_entry_d INTO os_o_id, os_o_carrier_id, os_entdate FROM orders
    WHERE o_d_id = os_d_id AND o_w_id = os_w_id AND o_c_id = os_c_id
    ORDER BY o_id DESC LIMIT 1;
    FOR order_line_row IN
        SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
        WHERE ol_o_id = os_o_id AND ol_d_id = os_d_id AND ol_w_id = os_w_id
    LOOP
        os_c_line := os_c_line || ',' || order_line_row.ol_i_id || ','
            || order_line_row.ol_supply_w_id || ',' || order_line_row.ol_quantity || ','
            || order_line_row.ol_amount || ',' || order_line_row.ol_delivery_d;
    END LOOP;
EXCEPTION
{conflict}END
$$";

/// Delivery (2.7): set-wise over the ten districts: delete each one's oldest new-order row,
/// give those orders the carrier, date their lines and sum them per order, and credit each
/// order's customer (balance and delivery count); a district without a new order is skipped.
/// The parameters are HammerDB's (its `tstamp` is not used: the lines are dated
/// `current_timestamp`, as HammerDB's).
const DELIVERY: &str =
    "CREATE OR REPLACE PROCEDURE delivery(d_w_id integer, d_o_carrier_id integer,
    tstamp timestamp)
LANGUAGE plpgsql AS $$
DECLARE
    order_ids integer[]; district_ids smallint[]; customer_ids integer[]; totals numeric[];
BEGIN
    WITH new_order_delete AS (
        DELETE FROM new_order AS oldest
        USING unnest('{1,2,3,4,5,6,7,8,9,10}'::smallint[]) AS district (id)
        WHERE oldest.no_w_id = d_w_id AND oldest.no_d_id = district.id
          AND oldest.no_o_id = (SELECT min(no_o_id) FROM new_order
                                WHERE no_w_id = d_w_id AND no_d_id = district.id)
        RETURNING oldest.no_o_id, oldest.no_d_id)
    SELECT array_agg(no_o_id), array_agg(no_d_id) INTO order_ids, district_ids
    FROM new_order_delete;
    UPDATE orders SET o_carrier_id = d_o_carrier_id
    FROM unnest(order_ids, district_ids) AS delivering (o_id, d_id)
    WHERE orders.o_id = delivering.o_id AND o_d_id = delivering.d_id AND o_w_id = d_w_id;
    WITH order_line_update AS (
        UPDATE order_line SET ol_delivery_d = current_timestamp
        FROM unnest(order_ids, district_ids) AS delivering (o_id, d_id)
        WHERE ol_o_id = delivering.o_id AND ol_d_id = delivering.d_id AND ol_w_id = d_w_id
        RETURNING ol_d_id, ol_o_id, ol_amount)
    SELECT array_agg(ol_d_id), array_agg(customer), array_agg(total)
    INTO district_ids, customer_ids, totals
    FROM (SELECT ol_d_id,
                 (SELECT o_c_id FROM orders
                  WHERE o_id = ol_o_id AND o_d_id = ol_d_id AND o_w_id = d_w_id) AS customer,
                 sum(ol_amount) AS total
          FROM order_line_update GROUP BY ol_d_id, ol_o_id) AS per_order;
    UPDATE customer
    SET c_balance = c_balance + credited.total, c_delivery_cnt = c_delivery_cnt + 1
    FROM unnest(district_ids, customer_ids, totals) AS credited (d_id, c_id, total)
    WHERE customer.c_id = credited.c_id AND c_d_id = credited.d_id AND c_w_id = d_w_id;
EXCEPTION
{conflict}END
$$";

/// Stock-Level (2.8): distinct items of the district's last 20 orders whose stock is below the
/// threshold, in one join of order_line, stock and district as HammerDB's (which has no
/// handler).
const STOCK_LEVEL: &str = "CREATE OR REPLACE PROCEDURE slev(st_w_id integer, st_d_id integer,
    threshold integer, INOUT stock_count integer DEFAULT 0)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT count(DISTINCT s_i_id) INTO stock_count
    FROM order_line, stock, district
    WHERE ol_w_id = st_w_id AND ol_d_id = st_d_id
      AND d_w_id = st_w_id AND d_id = st_d_id
      AND ol_o_id < d_next_o_id AND ol_o_id >= d_next_o_id - 20
      AND s_w_id = st_w_id AND s_i_id = ol_i_id AND s_quantity < threshold;
END
$$";

/// How the transactions are defined and called: procedures from PostgreSQL 11, functions
/// before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routines {
    Procedures,
    Functions,
}

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

    /// Every definition, in creation order. New-Order undoes its work for the unused item by
    /// an error its own handler catches, which a function (it cannot end its transaction) and
    /// a procedure can both do.
    pub fn definitions(self) -> [String; 6] {
        [
            LAST_NAME.to_string(),
            NEW_ORDER.to_string(),
            PAYMENT
                .replace("{customer}", PAYMENT_CUSTOMER)
                .replace("{customer_out}", PAYMENT_CUSTOMER_OUT),
            ORDER_STATUS.to_string(),
            DELIVERY.to_string(),
            STOCK_LEVEL.to_string(),
        ]
        .map(|definition| {
            let definition = definition.replace("{conflict}", CONFLICT_HANDLER);
            match self {
                Routines::Procedures => definition,
                Routines::Functions => {
                    let function = definition
                        .replace("CREATE OR REPLACE PROCEDURE", "CREATE OR REPLACE FUNCTION");
                    // A function's result is its INOUT parameters; one without them (Delivery)
                    // must say it returns nothing.
                    if function.contains("INOUT") || !function.contains("LANGUAGE plpgsql") {
                        function
                    } else {
                        function.replacen("LANGUAGE plpgsql", "RETURNS void LANGUAGE plpgsql", 1)
                    }
                }
            }
        })
    }

    /// Drops what `definitions` creates, and `tpcc_customer`, which builds of earlier versions
    /// made. Before 10 `DROP FUNCTION` needs each argument list,
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
            .all(|d| !d.contains("PROCEDURE") && !d.contains("{c")));
        assert!(functions[4].contains("RETURNS void LANGUAGE plpgsql"));
        let procedures = Routines::Procedures.definitions();
        for definitions in [&functions, &procedures] {
            assert!(definitions[1].contains("WHEN SQLSTATE 'TPCC1' THEN"));
            assert_eq!(
                definitions
                    .iter()
                    .filter(|d| d.contains("deadlock_detected"))
                    .count(),
                4,
                "every transaction but Stock-Level has HammerDB's handler"
            );
        }
    }
}
