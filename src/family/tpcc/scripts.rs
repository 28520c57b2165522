//! The TPROC-C transactions as driver scripts, server mode: each picks HammerDB's inputs (home
//! warehouse per virtual user, uniform district, customer by NURand id or by NURand last name,
//! remote payments 15%) and CALLs the procedure. New-Order's 1% rollback is its own script, so
//! that the driver counts rolled-back New-Orders apart.

use super::client_scripts;
use super::inputs::Inputs;
use super::procedures::Routines;
use crate::driver::Protocol;
use crate::family::common::options::BadValue;

/// Relative weights of the five transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    pub new_order: u32,
    pub payment: u32,
    pub order_status: u32,
    pub delivery: u32,
    pub stock_level: u32,
}

impl Mix {
    /// `45,43,4,4,4` (New-Order, Payment, Order-Status, Delivery, Stock-Level; summing to 100)
    /// or `hammerdb`: HammerDB's draw of 1..23 (10 New-Order, 10 Payment, 1 of each other).
    pub fn parse(text: &str) -> Result<Mix, BadValue> {
        if text == "hammerdb" {
            return Ok(Mix {
                new_order: 10,
                payment: 10,
                order_status: 1,
                delivery: 1,
                stock_level: 1,
            });
        }
        let parts: Vec<u32> = text
            .split(',')
            .map(|p| p.trim().parse::<u32>())
            .collect::<Result<_, _>>()
            .map_err(|_| mix_error(text))?;
        let [new_order, payment, order_status, delivery, stock_level] = parts[..] else {
            return Err(mix_error(text));
        };
        if parts.iter().sum::<u32>() != 100 {
            return Err(mix_error(text));
        }
        Ok(Mix {
            new_order,
            payment,
            order_status,
            delivery,
            stock_level,
        })
    }

    pub fn text(&self) -> String {
        format!(
            "{}/{}/{}/{}/{}",
            self.new_order, self.payment, self.order_status, self.delivery, self.stock_level
        )
    }
}

fn mix_error(text: &str) -> BadValue {
    BadValue::new(
        "--mix",
        text,
        "give five weights summing to 100 (New-Order, Payment, Order-Status, Delivery, Stock-Level) or hammerdb",
    )
}

/// The scripts' names, in the order `scripts` returns them.
pub const NAMES: [&str; 6] = [
    "new-order",
    "new-order-rollback",
    "payment",
    "order-status",
    "delivery",
    "stock-level",
];

/// HammerDB's keying and mean think times in seconds (its `pg_keyandthink`), per script in
/// `NAMES` order: New-Order 18/12, Payment 3/12, Order-Status 2/5, Delivery 2/10,
/// Stock-Level 2/5.
pub const KEYING_THINKING_S: [(f64, f64); 6] = [
    (18.0, 12.0),
    (18.0, 12.0),
    (3.0, 12.0),
    (2.0, 5.0),
    (2.0, 10.0),
    (2.0, 5.0),
];

/// How the transactions reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One `CALL` of a PL/pgSQL procedure per transaction, as HammerDB (study 001).
    Server,
    /// The procedures' statements, prepared and sent one by one by stampede.
    Client,
}

impl Mode {
    pub const NAMES: [&'static str; 2] = ["server", "client"];

    pub fn parse(text: &str) -> Result<Mode, BadValue> {
        match text {
            "server" => Ok(Mode::Server),
            "client" => Ok(Mode::Client),
            _ => Err(BadValue::new(
                "--mode",
                text,
                "the modes are server (PL/pgSQL procedures) and client (prepared statements)",
            )),
        }
    }

    pub fn name(self) -> &'static str {
        Mode::NAMES[self as usize]
    }
}

/// (name, script, weight) for the transactions' inputs and the mode. Weights are the mix's
/// times 100, New-Order's split 99 : 1 between committing and rolling back.
pub fn scripts(
    inputs: &Inputs,
    mix: Mix,
    mode: Mode,
    routines: Routines,
    call: Protocol,
) -> Vec<(&'static str, String, u32)> {
    let texts = match mode {
        Mode::Server => server_scripts(inputs, routines, call),
        Mode::Client => [
            client_scripts::new_order(inputs, false),
            client_scripts::new_order(inputs, true),
            client_scripts::payment(inputs),
            client_scripts::order_status(inputs),
            client_scripts::delivery(inputs),
            client_scripts::stock_level(inputs),
        ],
    };
    named(texts, weights(mix, true))
}

/// The scripts with their names and weights.
pub fn named(texts: [String; 6], weights: [u32; 6]) -> Vec<(&'static str, String, u32)> {
    NAMES
        .into_iter()
        .zip(texts)
        .zip(weights)
        .map(|((name, text), weight)| (name, text, weight))
        .collect()
}

/// The mix's weights times 100 per script, New-Order's split 99 : 1 between committing and
/// rolling back when the client draws the rollback (`rollback_scripted`), else all New-Order's.
pub fn weights(mix: Mix, rollback_scripted: bool) -> [u32; 6] {
    let (new_order, rollback) = if rollback_scripted {
        (mix.new_order * 99, mix.new_order)
    } else {
        (mix.new_order * 100, 0)
    };
    [
        new_order,
        rollback,
        mix.payment * 100,
        mix.order_status * 100,
        mix.delivery * 100,
        mix.stock_level * 100,
    ]
}

/// HammerDB's timestamp argument (its client formats the time and the server parses it back:
/// `TO_TIMESTAMP('20261127081500', 'YYYYMMDDHH24MISS')`): the session's time to the second.
const CALL_TIMESTAMP: &str = "LOCALTIMESTAMP(0)";

/// Server mode: the inputs, then one call (New-Order's items are drawn by the procedure) with
/// HammerDB's arguments in HammerDB's order, its outputs' placeholders included. The
/// customer's last name is drawn here and passed as a literal under the simple protocol (as
/// HammerDB's client does) or as a parameter under prepared.
fn server_scripts(inputs: &Inputs, routines: Routines, call: Protocol) -> [String; 6] {
    let (home, warehouses, customer) = (&inputs.warehouse, inputs.warehouses, &inputs.customer);
    let call_statement = |name: &str, arguments: &str| routines.call(name, arguments);
    let last_name = match call {
        Protocol::Prepared => ":last_name",
        _ => "':last_name'",
    };
    let stamp = CALL_TIMESTAMP;
    let named_customer = format!("{customer}\\set last_name tpcc_last_name(:name)\n");
    let new_order = |rollback: &str| {
        format!(
            "{home}\\set d_id random(1, 10)\n\\set c_id random(1, 3000)\n\\set ol_cnt random(5, 15)\n{};\n",
            call_statement("neword", &format!(":w_id, {warehouses}, :d_id, :c_id, :ol_cnt, 0.0, '', '', 0.0, 0.0, 0, {stamp}{rollback}"))
        )
    };
    let payment_outputs = ["''"; 18].join(", ");
    [
        new_order(""),
        new_order(", 1"),
        format!(
            "{home}\\set d_id random(1, 10)\n{}{named_customer}\\set cents random(100, 500000)\n{};\n",
            inputs.payment_customer_warehouse,
            call_statement("payment", &format!(":w_id, :d_id, :c_w_id, :c_d_id, :by_name, :cents::numeric / 100, '0', {last_name}, :c_id, {payment_outputs}, {stamp}, 0.0, 0.0, 0.0, '', {stamp}"))
        ),
        format!(
            "{home}\\set d_id random(1, 10)\n{named_customer}{};\n",
            call_statement("ostat", &format!(":w_id, :d_id, :c_id, :by_name, {last_name}, '', '', 0.0, 0, {stamp}, 0, ''"))
        ),
        format!("{home}\\set carrier random(1, 10)\n{};\n", call_statement("delivery", &format!(":w_id, :carrier, {stamp}"))),
        format!(
            "{home}{}\\set threshold random(10, 20)\n{};\n",
            inputs.stock_level_district,
            call_statement("slev", ":w_id, :d_id, :threshold, 0")
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
    fn mixes_parse_and_scripts_parse() {
        assert_eq!(Mix::parse("hammerdb").unwrap().text(), "10/10/1/1/1");
        assert_eq!(Mix::parse("45,43,4,4,4").unwrap().payment, 43);
        assert!(Mix::parse("45,43,4,4").is_err());
        assert!(Mix::parse("50,43,4,4,4").is_err());
        let constants = NurandConstants {
            c_last: 1,
            c_id: 2,
            ol_i_id: 3,
        };
        let scripts = scripts(
            &Inputs::new(3, WarehouseChoice::RandomHome, constants, Rules::TpcC),
            Mix::parse("45,43,4,4,4").unwrap(),
            Mode::Server,
            Routines::Procedures,
            Protocol::Simple,
        );
        let weights: Vec<u32> = scripts.iter().map(|s| s.2).collect();
        assert_eq!(weights, [4455, 45, 4300, 400, 400, 400]);
        let client = super::scripts(
            &Inputs::new(3, WarehouseChoice::Home, constants, Rules::HammerDb),
            Mix::parse("hammerdb").unwrap(),
            Mode::Client,
            Routines::Procedures,
            Protocol::Prepared,
        );
        let mut variables = VarTable::default();
        for (name, text, _) in scripts.iter().chain(&client) {
            parse_script(name, name, text, &mut variables)
                .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        }
        assert!(scripts[2]
            .1
            .contains("\\set c_w_id 1 + (:w_id + random(0, 1)) % 3\n"));
    }
}
