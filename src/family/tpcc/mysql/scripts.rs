//! The TPROC-C transactions on MariaDB/MySQL as HammerDB's timed driver sends them (server
//! mode, its `prepare` off): New-Order, Payment and Order-Status set their INOUT session
//! variables, CALL the procedure and select its outputs back; Delivery is its CALL;
//! Stock-Level its CALL and the count. HammerDB passes its client's clock as
//! `str_to_date('YYYYmmddHHMMSS', …)`; these pass the server's `NOW()`, the same second.
//! New-Order's 1% rollback is drawn by the procedure, so the rolling-back script has no weight
//! here: the server's Com_rollback counts those.

use crate::family::tpcc::inputs::Inputs;

const PAYMENT_OUTPUTS: [&str; 26] = [
    "@p_c_id",
    "@p_c_last",
    "@p_w_street_1",
    "@p_w_street_2",
    "@p_w_city",
    "@p_w_state",
    "@p_w_zip",
    "@p_d_street_1",
    "@p_d_street_2",
    "@p_d_city",
    "@p_d_state",
    "@p_d_zip",
    "@p_c_first",
    "@p_c_middle",
    "@p_c_street_1",
    "@p_c_street_2",
    "@p_c_city",
    "@p_c_state",
    "@p_c_zip",
    "@p_c_phone",
    "@p_c_since",
    "@p_c_credit",
    "@p_c_credit_lim",
    "@p_c_discount",
    "@p_c_balance",
    "@p_c_data",
];

const ORDER_STATUS_OUTPUTS: &str =
    "@os_c_id, @os_c_last, @os_c_first, @os_c_middle, @os_c_balance, @os_o_id, @os_entdate, @os_o_carrier_id";

/// The six scripts in `scripts::NAMES` order (the second, New-Order's rollback, is the first's
/// text: it gets no weight).
pub fn server_scripts(inputs: &Inputs) -> [String; 6] {
    let (home, warehouses, customer) = (&inputs.warehouse, inputs.warehouses, &inputs.customer);
    let named_customer = format!("{customer}\\set last_name tpcc_last_name(:name)\n");
    let new_order = format!(
        "{home}\\set d_id random(1, 10)\n\\set c_id random(1, 3000)\n\\set ol_cnt random(5, 15)\n\
         SET @next_o_id = 0;\n\
         CALL NEWORD(:w_id, {warehouses}, :d_id, :c_id, :ol_cnt, @disc, @last, @credit, @dtax, @wtax, @next_o_id, NOW());\n\
         SELECT @disc, @last, @credit, @dtax, @wtax, @next_o_id;\n"
    );
    // Payment's outputs are the CALL's arguments after byname and the amount, less c_id and
    // c_last, which come first.
    let payment_arguments = PAYMENT_OUTPUTS[2..].join(", ");
    [
        new_order.clone(),
        new_order,
        format!(
            "{home}\\set d_id random(1, 10)\n{}{named_customer}\\set amount random(1, 5000)\n\
             SET @p_c_id = :c_id, @p_c_last = ':last_name', @p_c_credit = 0, @p_c_balance = 0;\n\
             CALL PAYMENT(:w_id, :d_id, :c_w_id, :c_d_id, @p_c_id, :by_name, :amount, @p_c_last, {payment_arguments}, NOW());\n\
             SELECT {};\n",
            inputs.payment_customer_warehouse,
            PAYMENT_OUTPUTS.join(", ")
        ),
        format!(
            "{home}\\set d_id random(1, 10)\n{named_customer}\
             SET @os_c_id = :c_id, @os_c_last = ':last_name';\n\
             CALL OSTAT(:w_id, :d_id, @os_c_id, :by_name, @os_c_last, @os_c_first, @os_c_middle, @os_c_balance, @os_o_id, @os_entdate, @os_o_carrier_id);\n\
             SELECT {ORDER_STATUS_OUTPUTS};\n"
        ),
        format!("{home}\\set carrier random(1, 10)\nCALL DELIVERY(:w_id, :carrier, NOW());\n"),
        format!(
            "{home}{}\\set threshold random(10, 20)\n\
             CALL SLEV(:w_id, :d_id, :threshold, @stock_count);\n\
             SELECT @stock_count;\n",
            inputs.stock_level_district
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::tpcc::inputs::WarehouseChoice;
    use crate::family::tpcc::random::NurandConstants;
    use crate::family::tpcc::rules::Rules;
    use stampede_script::{parse_script, VarTable};

    #[test]
    fn the_scripts_parse_and_call_hammerdbs_procedures() {
        let constants = NurandConstants {
            c_last: 1,
            c_id: 2,
            ol_i_id: 3,
        };
        let inputs = Inputs::new(4, WarehouseChoice::Home, constants, Rules::HammerDb);
        let mut variables = VarTable::default();
        let scripts = server_scripts(&inputs);
        for text in &scripts {
            parse_script("t", "t", text, &mut variables).unwrap_or_else(|e| panic!("{e}\n{text}"));
        }
        assert!(scripts[2].contains(
            "CALL PAYMENT(:w_id, :d_id, :c_w_id, :c_d_id, @p_c_id, :by_name, :amount, @p_c_last, @p_w_street_1,"
        ));
        assert!(scripts[2].contains("@p_c_discount, @p_c_balance, @p_c_data, NOW());\n"));
        assert!(scripts[0].contains("CALL NEWORD(:w_id, 4, :d_id,"));
    }
}
