//! The TPROC-C transactions in client mode: the procedures' logic as statements stampede
//! prepares and sends one by one inside `BEGIN … COMMIT`, with the same inputs as server mode
//! (the client now also draws New-Order's items, supplying warehouses and quantities, as the
//! procedure does on the server). New-Order's 5–15 lines and Delivery's 10 districts are
//! unrolled, each line guarded by `\if`, since the script language has no loops.

use super::scripts::{Inputs, MAX_ORDER_LINES};

/// Delivery visits every district of the warehouse (clause 2.7.4.2).
const DISTRICTS: i64 = 10;

/// New-Order (2.4.2): order header, then per line the item, its stock and the order line.
/// With `rollback`, the last line names the unused item 100001 and the transaction is rolled
/// back when the item is not found (2.4.2.3).
pub fn new_order(inputs: &Inputs, rollback: bool) -> String {
    let mut text = format!(
        "{}\\set d_id random(1, 10)\n\\set c_id random(1, 3000)\n\\set ol_cnt random(5, 15)\n",
        inputs.warehouse
    );
    // Lines that exist: all of ol_cnt, or all but the last (the unused item) with `rollback`.
    let real_lines = if rollback { ":ol_cnt - 1" } else { ":ol_cnt" };
    for line in 1..=MAX_ORDER_LINES {
        text.push_str(&draw_line(line, real_lines, inputs.warehouses));
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
         SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse \
         WHERE w_id = :w_id AND c_w_id = w_id AND c_d_id = :d_id AND c_id = :c_id \\gset\n\
         UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = :w_id AND d_id = :d_id \
         RETURNING d_next_o_id - 1 AS o_id, d_tax \\gset\n\
         INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) \
         VALUES (:o_id, :d_id, :w_id, :c_id, current_timestamp, :ol_cnt, :all_local);\n\
         INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (:o_id, :d_id, :w_id);\n",
    );
    for line in 1..=MAX_ORDER_LINES {
        text.push_str(&order_line(line, real_lines));
    }
    if rollback {
        text.push_str(
            "SELECT count(*) AS unused_found FROM item WHERE i_id = 100001 \\gset\n\
             \\if :unused_found = 0\nROLLBACK;\n\\else\nCOMMIT;\n\\endif\n",
        );
    } else {
        text.push_str("COMMIT;\n");
    }
    text
}

/// One line's item (uniform, as HammerDB's), supplying warehouse (1% remote when there are
/// several) and quantity; lines past the order's count draw no remote warehouse.
fn draw_line(line: u32, real_lines: &str, warehouses: i64) -> String {
    let remote = if warehouses > 1 {
        format!("case when {real_lines} >= {line} and random(1, 100) = 1 then 1 else 0 end")
    } else {
        "0".into()
    };
    format!(
        "\\set item_{line} random(1, 100000)\n\\set quantity_{line} random(1, 10)\n\
         \\set remote_{line} {remote}\n\
         \\set supply_{line} case when :remote_{line} = 1 then 1 + (:w_id + random(0, {})) % {warehouses} else :w_id end\n",
        (warehouses - 2).max(0)
    )
}

/// One order line (2.4.2.2): the item's price, the stock's update and district info, the line.
fn order_line(line: u32, real_lines: &str) -> String {
    format!(
        "\\if {real_lines} >= {line}\n\
         SELECT i_price, i_name, i_data FROM item WHERE i_id = :item_{line} \\gset\n\
         UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity_{line}::integer + 10 \
         THEN s_quantity - :quantity_{line}::integer ELSE s_quantity - :quantity_{line}::integer + 91 END, \
         s_ytd = s_ytd + :quantity_{line}::integer, s_order_cnt = s_order_cnt + 1, \
         s_remote_cnt = s_remote_cnt + :remote_{line}::integer \
         WHERE s_i_id = :item_{line} AND s_w_id = :supply_{line} \
         RETURNING CASE :d_id::integer WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 \
         WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 \
         WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS dist_info \\gset\n\
         INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, \
         ol_quantity, ol_amount, ol_dist_info) VALUES (:o_id, :d_id, :w_id, {line}, :item_{line}, \
         :supply_{line}, :quantity_{line}, :quantity_{line}::integer * :i_price::numeric \
         * (1 + :w_tax::numeric + :d_tax::numeric) * (1 - :c_discount::numeric), :dist_info);\n\
         \\endif\n"
    )
}

/// Payment (2.5.2): warehouse and district year-to-date, the customer (by id or by last name),
/// balance and bad-credit data, and a history row.
pub fn payment(inputs: &Inputs) -> String {
    format!(
        "{}\\set d_id random(1, 10)\n{}{}\\set cents random(100, 500000)\n\
         BEGIN;\n\
         UPDATE warehouse SET w_ytd = w_ytd + :cents::numeric / 100 WHERE w_id = :w_id \
         RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip \\gset\n\
         UPDATE district SET d_ytd = d_ytd + :cents::numeric / 100 WHERE d_w_id = :w_id AND d_id = :d_id \
         RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip \\gset\n\
         {}\
         UPDATE customer SET c_balance = c_balance - :cents::numeric / 100, \
         c_ytd_payment = c_ytd_payment + :cents::numeric / 100, c_payment_cnt = c_payment_cnt + 1 \
         WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_id = :c_id \
         RETURNING c_first, c_middle, c_last, c_phone, c_credit, c_credit_lim, c_discount, c_balance, \
         CASE WHEN c_credit = 'BC' THEN 1 ELSE 0 END AS bad_credit \\gset\n\
         \\if :bad_credit\n\
         UPDATE customer SET c_data = substr(format('%s %s %s %s %s %s | ', :c_id::integer, \
         :c_d_id::integer, :c_w_id::integer, :d_id::integer, :w_id::integer, :cents::numeric / 100) \
         || c_data, 1, 500) WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_id = :c_id;\n\
         \\endif\n\
         INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
         VALUES (:c_d_id, :c_w_id, :c_id, :d_id, :w_id, current_timestamp, :cents::numeric / 100, \
         :w_name::text || '    ' || :d_name::text);\n\
         COMMIT;\n",
        inputs.warehouse,
        inputs.payment_customer_warehouse,
        inputs.customer,
        customer_by_name(":c_w_id", ":c_d_id"),
    )
}

/// Order-Status (2.6.2): the customer's balance, its latest order and that order's lines.
pub fn order_status(inputs: &Inputs) -> String {
    format!(
        "{}\\set d_id random(1, 10)\n{}\
         BEGIN;\n\
         {}\
         SELECT c_balance, c_first, c_middle, c_last FROM customer \
         WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id \\gset\n\
         SELECT o_id, o_carrier_id, o_entry_d FROM orders \
         WHERE o_w_id = :w_id AND o_d_id = :d_id AND o_c_id = :c_id ORDER BY o_id DESC LIMIT 1 \\gset\n\
         SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
         WHERE ol_w_id = :w_id AND ol_d_id = :d_id AND ol_o_id = :o_id;\n\
         COMMIT;\n",
        inputs.warehouse,
        inputs.customer,
        customer_by_name(":w_id", ":d_id"),
    )
}

/// With `:by_name`, `:c_id` becomes the customer in the middle of those with the drawn last
/// name, in C_FIRST order (2.5.2.2, 2.6.2.2).
fn customer_by_name(warehouse: &str, district: &str) -> String {
    let named = format!(
        "FROM customer WHERE c_w_id = {warehouse} AND c_d_id = {district} AND c_last = :last_name"
    );
    format!(
        "\\if :by_name\n\\set last_name tpcc_last_name(:name)\n\
         SELECT count(*) AS named {named} \\gset\n\
         \\set middle (:named + 1) / 2 - 1\n\
         SELECT c_id {named} ORDER BY c_first OFFSET :middle LIMIT 1 \\gset\n\
         \\endif\n"
    )
}

/// Delivery (2.7.4): per district the oldest undelivered order gets the carrier, its lines a
/// delivery date and its customer the amount; a district without one is skipped.
pub fn delivery(inputs: &Inputs) -> String {
    let mut text = format!("{}\\set carrier random(1, 10)\nBEGIN;\n", inputs.warehouse);
    for district in 1..=DISTRICTS {
        text.push_str(&format!(
            "SELECT coalesce((SELECT no_o_id FROM new_order WHERE no_w_id = :w_id AND no_d_id = {district} \
             ORDER BY no_o_id LIMIT 1 FOR UPDATE), 0) AS oldest \\gset\n\
             \\if :oldest > 0\n\
             DELETE FROM new_order WHERE no_w_id = :w_id AND no_d_id = {district} AND no_o_id = :oldest;\n\
             UPDATE orders SET o_carrier_id = :carrier WHERE o_w_id = :w_id AND o_d_id = {district} \
             AND o_id = :oldest RETURNING o_c_id AS customer \\gset\n\
             UPDATE order_line SET ol_delivery_d = current_timestamp \
             WHERE ol_w_id = :w_id AND ol_d_id = {district} AND ol_o_id = :oldest;\n\
             SELECT sum(ol_amount) AS total FROM order_line \
             WHERE ol_w_id = :w_id AND ol_d_id = {district} AND ol_o_id = :oldest \\gset\n\
             UPDATE customer SET c_balance = c_balance + :total::numeric, c_delivery_cnt = c_delivery_cnt + 1 \
             WHERE c_w_id = :w_id AND c_d_id = {district} AND c_id = :customer;\n\
             \\endif\n"
        ));
    }
    text.push_str("COMMIT;\n");
    text
}

/// Stock-Level (2.8.2): the district's next order number, then the distinct items of its last
/// 20 orders whose stock is below the threshold.
pub fn stock_level(inputs: &Inputs) -> String {
    format!(
        "{}\\set d_id random(1, 10)\n\\set threshold random(10, 20)\n\
         BEGIN;\n\
         SELECT d_next_o_id FROM district WHERE d_w_id = :w_id AND d_id = :d_id \\gset\n\
         \\set oldest_o_id :d_next_o_id - 20\n\
         SELECT count(DISTINCT s_i_id) AS low_stock FROM order_line, stock \
         WHERE ol_w_id = :w_id AND ol_d_id = :d_id AND ol_o_id < :d_next_o_id \
         AND ol_o_id >= :oldest_o_id AND s_w_id = :w_id AND s_i_id = ol_i_id \
         AND s_quantity < :threshold \\gset\n\
         COMMIT;\n",
        inputs.warehouse
    )
}
