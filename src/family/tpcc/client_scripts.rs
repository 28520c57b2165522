//! The TPROC-C transactions in client mode: the procedures' logic as statements stampede
//! prepares and sends inside `BEGIN … COMMIT`, with the same inputs as server mode (the client
//! also draws New-Order's items, supplying warehouses and quantities, as the procedure does on
//! the server). New-Order sends its lines as arrays to set-wise statements and Delivery is one
//! statement over the ten districts, since the script language has no loops.

use super::inputs::{Inputs, MAX_ORDER_LINES};

/// Delivery visits every district of the warehouse (clause 2.7.4.2).
const DISTRICTS: i64 = 10;

/// New-Order (2.4.2) in four round trips, with the procedure's set-wise statements joined by
/// data-modifying CTEs where one needs another's result: `BEGIN`; the district's next order
/// id with the order and new-order rows, returning the customer's discount and the taxes;
/// the lines' prices, one UPDATE of their stock and one INSERT of the order lines, returning
/// how many lines have an item; then `COMMIT`, or `ROLLBACK` when one has none (2.4.2.3; with
/// `rollback` the last line names the unused item 100001). Items drawn twice in one order
/// share one stock update.
pub fn new_order(inputs: &Inputs, rollback: bool) -> String {
    let mut text = format!(
        "{}\\set d_id random(1, 10)\n\\set c_id random(1, 3000)\n\\set ol_cnt random(5, 15)\n",
        inputs.warehouse
    );
    for line in 1..=MAX_ORDER_LINES {
        text.push_str(&draw_line(line, rollback, inputs.warehouses));
    }
    let remote_sum: Vec<String> = (1..=MAX_ORDER_LINES)
        .map(|line| format!(":remote_{line}"))
        .collect();
    text.push_str(&format!(
        "\\set all_local case when {} = 0 then 1 else 0 end\n",
        remote_sum.join(" + ")
    ));
    text.push_str(
        "BEGIN;\n\
         WITH district_update AS (\
         UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = :w_id AND d_id = :d_id \
         RETURNING d_next_o_id - 1 AS o_id, d_tax), \
         order_insert AS (\
         INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) \
         SELECT o_id, :d_id, :w_id, :c_id, current_timestamp, :ol_cnt, :all_local FROM district_update), \
         new_order_insert AS (\
         INSERT INTO new_order (no_o_id, no_d_id, no_w_id) SELECT o_id, :d_id, :w_id FROM district_update) \
         SELECT c_discount, c_last, c_credit, w_tax, o_id, d_tax FROM customer, warehouse, district_update \
         WHERE w_id = :w_id AND c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id \\gset\n",
    );
    let array = |name: &str| {
        let elements: Vec<String> = (1..=MAX_ORDER_LINES)
            .map(|line| format!(":{name}_{line}"))
            .collect();
        format!("ARRAY[{}]::integer[]", elements.join(", "))
    };
    text.push_str(&format!(
        "WITH lines AS (\
         SELECT number, drawn.item, supply, quantity, i_price AS price \
         FROM unnest({}, {}, {}) WITH ORDINALITY AS drawn (item, supply, quantity, number) \
         LEFT JOIN item ON i_id = drawn.item WHERE number <= :ol_cnt), \
         stock_update AS (\
         UPDATE stock SET s_quantity = (CASE WHEN s_quantity < ordered.quantity + 10 THEN s_quantity + 91 \
         ELSE s_quantity END) - ordered.quantity, s_ytd = s_ytd + ordered.quantity, \
         s_order_cnt = s_order_cnt + 1, \
         s_remote_cnt = s_remote_cnt + CASE WHEN ordered.supply = :w_id THEN 0 ELSE 1 END \
         FROM (SELECT * FROM lines WHERE price IS NOT NULL ORDER BY supply, item) AS ordered \
         WHERE s_i_id = ordered.item AND s_w_id = ordered.supply \
         RETURNING s_i_id, s_w_id, CASE :d_id::integer WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 \
         WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 \
         WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS dist), \
         order_line_insert AS (\
         INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, \
         ol_quantity, ol_amount, ol_dist_info) \
         SELECT :o_id, :d_id, :w_id, number, item, supply, quantity, quantity * price \
         * (1 + :w_tax::numeric + :d_tax::numeric) * (1 - :c_discount::numeric), dist \
         FROM lines JOIN stock_update ON s_i_id = item AND s_w_id = supply) \
         SELECT count(price) AS priced_lines FROM lines \\gset\n\
         \\if :priced_lines < :ol_cnt\nROLLBACK;\n\\else\nCOMMIT;\n\\endif\n",
        array("item"),
        array("supply"),
        array("quantity"),
    ));
    text
}

/// One line's item (uniform, as HammerDB's; with `rollback`, the unused item 100001 on the
/// order's last line), supplying warehouse (1% remote when there are several) and quantity.
/// Lines past the order's count are drawn too, and left out by the statements.
fn draw_line(line: u32, rollback: bool, warehouses: i64) -> String {
    let item = if rollback {
        format!("case when :ol_cnt = {line} then 100001 else random(1, 100000) end")
    } else {
        "random(1, 100000)".to_string()
    };
    let remote = if warehouses > 1 {
        format!("case when :ol_cnt >= {line} and random(1, 100) = 1 then 1 else 0 end")
    } else {
        "0".into()
    };
    format!(
        "\\set item_{line} {item}\n\\set quantity_{line} random(1, 10)\n\
         \\set remote_{line} {remote}\n\
         \\set supply_{line} case when :remote_{line} = 1 then 1 + (:w_id + random(0, {})) % {warehouses} else :w_id end\n",
        (warehouses - 2).max(0)
    )
}

/// Payment (2.5.2): the customer (by id, or by last name), then one statement of
/// data-modifying CTEs: warehouse and district year-to-date, the customer's balance, payment
/// count and (bad credit) data, and a history row.
pub fn payment(inputs: &Inputs) -> String {
    format!(
        "{}\\set d_id random(1, 10)\n{}{}\\set cents random(100, 500000)\n\
         BEGIN;\n\
         {}\
         WITH warehouse_update AS (\
         UPDATE warehouse SET w_ytd = w_ytd + :cents::numeric / 100 WHERE w_id = :w_id \
         RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip), \
         district_update AS (\
         UPDATE district SET d_ytd = d_ytd + :cents::numeric / 100 WHERE d_w_id = :w_id AND d_id = :d_id \
         RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip), \
         customer_update AS (\
         UPDATE customer SET c_balance = c_balance - :cents::numeric / 100, \
         c_ytd_payment = c_ytd_payment + :cents::numeric / 100, c_payment_cnt = c_payment_cnt + 1, \
         c_data = CASE WHEN c_credit = 'BC' THEN substr(format('%s %s %s %s %s %s | ', :c_id::integer, \
         :c_d_id::integer, :c_w_id::integer, :d_id::integer, :w_id::integer, :cents::numeric / 100) \
         || c_data, 1, 500) ELSE c_data END \
         WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_id = :c_id \
         RETURNING c_first, c_middle, c_last, c_phone, c_credit, c_credit_lim, c_discount, c_balance), \
         history_insert AS (\
         INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
         SELECT :c_d_id, :c_w_id, :c_id, :d_id, :w_id, current_timestamp, :cents::numeric / 100, \
         w_name || '    ' || d_name FROM warehouse_update, district_update) \
         SELECT * FROM warehouse_update, district_update, customer_update \\gset\n\
         COMMIT;\n",
        inputs.warehouse,
        inputs.payment_customer_warehouse,
        inputs.customer,
        customer_by_name(":c_w_id", ":c_d_id"),
    )
}

/// Order-Status (2.6.2): the customer's balance, its latest order and that order's lines. A
/// customer may have no order yet (HammerDB's load leaves about half without one): its order
/// reads as number 0, which has no lines.
pub fn order_status(inputs: &Inputs) -> String {
    format!(
        "{}\\set d_id random(1, 10)\n{}\
         BEGIN;\n\
         {}\
         SELECT c_balance, c_first, c_middle, c_last FROM customer \
         WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id \\gset\n\
         SELECT coalesce(o_id, 0) AS o_id, o_carrier_id, o_entry_d FROM (VALUES (1)) AS one LEFT JOIN LATERAL (\
         SELECT o_id, o_carrier_id, o_entry_d FROM orders \
         WHERE o_w_id = :w_id AND o_d_id = :d_id AND o_c_id = :c_id ORDER BY o_id DESC LIMIT 1) \
         AS latest ON true \\gset\n\
         SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
         WHERE ol_w_id = :w_id AND ol_d_id = :d_id AND ol_o_id = :o_id;\n\
         COMMIT;\n",
        inputs.warehouse,
        inputs.customer,
        customer_by_name(":w_id", ":d_id"),
    )
}

/// With `:by_name`, `:c_id` becomes the customer in the middle of those with the drawn last
/// name, in C_FIRST order (2.5.2.2, 2.6.2.2), counted and read in one statement.
fn customer_by_name(warehouse: &str, district: &str) -> String {
    let named = format!(
        "FROM customer WHERE c_w_id = {warehouse} AND c_d_id = {district} AND c_last = :last_name"
    );
    format!(
        "\\if :by_name\n\\set last_name tpcc_last_name(:name)\n\
         SELECT c_id {named} ORDER BY c_first \
         OFFSET (SELECT (count(*) + 1) / 2 - 1 {named}) LIMIT 1 \\gset\n\
         \\endif\n"
    )
}

/// Delivery (2.7.4) as one statement of data-modifying CTEs, HammerDB's set-wise steps joined
/// by their results: each district's oldest new-order row is deleted, its order gets the
/// carrier, its lines a delivery date, and its customer the lines' sum and one more delivery;
/// a district without one is skipped.
pub fn delivery(inputs: &Inputs) -> String {
    format!(
        "{}\\set carrier random(1, 10)\n\
         WITH new_order_delete AS (\
         DELETE FROM new_order AS oldest USING generate_series(1, {DISTRICTS}) AS district (id) \
         WHERE oldest.no_w_id = :w_id AND oldest.no_d_id = district.id \
         AND oldest.no_o_id = (SELECT min(no_o_id) FROM new_order \
         WHERE no_w_id = :w_id AND no_d_id = district.id) \
         RETURNING oldest.no_o_id, oldest.no_d_id), \
         order_update AS (\
         UPDATE orders SET o_carrier_id = :carrier FROM new_order_delete \
         WHERE o_w_id = :w_id AND o_d_id = no_d_id AND o_id = no_o_id \
         RETURNING o_d_id, o_id, o_c_id), \
         order_line_update AS (\
         UPDATE order_line SET ol_delivery_d = current_timestamp FROM new_order_delete \
         WHERE ol_w_id = :w_id AND ol_d_id = no_d_id AND ol_o_id = no_o_id \
         RETURNING ol_d_id, ol_o_id, ol_amount), \
         customer_update AS (\
         UPDATE customer SET c_balance = c_balance + delivered.total, \
         c_delivery_cnt = c_delivery_cnt + 1 \
         FROM (SELECT o_d_id, o_c_id, sum(ol_amount) AS total FROM order_update \
         JOIN order_line_update ON ol_d_id = o_d_id AND ol_o_id = o_id GROUP BY o_d_id, o_c_id) AS delivered \
         WHERE c_w_id = :w_id AND c_d_id = delivered.o_d_id AND c_id = delivered.o_c_id) \
         SELECT count(*) AS delivered FROM new_order_delete;\n",
        inputs.warehouse
    )
}

/// Stock-Level (2.8.2): the district's next order number, then the distinct items of its last
/// 20 orders whose stock is below the threshold.
pub fn stock_level(inputs: &Inputs) -> String {
    format!(
        "{}{}\\set threshold random(10, 20)\n\
         BEGIN;\n\
         SELECT d_next_o_id FROM district WHERE d_w_id = :w_id AND d_id = :d_id \\gset\n\
         \\set oldest_o_id :d_next_o_id - 20\n\
         SELECT count(DISTINCT s_i_id) AS low_stock FROM order_line, stock \
         WHERE ol_w_id = :w_id AND ol_d_id = :d_id AND ol_o_id < :d_next_o_id \
         AND ol_o_id >= :oldest_o_id AND s_w_id = :w_id AND s_i_id = ol_i_id \
         AND s_quantity < :threshold \\gset\n\
         COMMIT;\n",
        inputs.warehouse, inputs.stock_level_district
    )
}
