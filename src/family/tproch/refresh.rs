//! TPC-H's refresh functions (clause 2.26–2.27): RF1 inserts an update set's new orders with
//! their lines, RF2 deletes as many old orders with theirs. The rows are dbgen's `-U` update
//! sets: dbgen sets its random streams to the row after the last base order
//! (`set_state(ORDER, scale, 100, 101)`) and continues them set after set; a new order's key
//! is its index made sparse with sequence 1, the deleted keys the same indexes with sequence
//! 0 (`mk_sparse`). The generator below is stampede's, driven by `tpchgen`'s random streams
//! with dbgen's seeds.
//!
//! Which update set comes next is read from the database: set k's first old order is gone once
//! its RF2 ran, so a run never applies a set twice.

use tpchgen::dates::TPCHDate;
use tpchgen::decimal::TPCHDecimal;
use tpchgen::distribution::Distributions;
use tpchgen::generators::{
    ClerkName, LineItem, LineItemGenerator, Order, OrderGenerator, OrderStatus,
    PartGeneratorIterator, PartSuppGeneratorIterator,
};
use tpchgen::random::{RandomBoundedInt, RandomBoundedLong, RandomString, RandomText};
use tpchgen::text::TextPool;

/// Orders per update set: 0.1% of the base orders (dbgen's `UPD_PCT`).
pub fn orders_per_set(scale_factor: f64) -> i64 {
    (1_500_000.0 / 10_000.0 * scale_factor * 10.0) as i64
}

/// `mk_sparse`: two bits of `sequence` inserted above the index's low three bits.
pub fn sparse_key(index: i64, sequence: i64) -> i64 {
    let low = index & 7;
    ((((index >> 3) << 2) + sequence) << 3) + low
}

/// The order indexes of update set `set` (1-based): RF1's new keys and RF2's old keys share
/// them.
pub fn set_indexes(set: i64, scale_factor: f64) -> std::ops::RangeInclusive<i64> {
    let per_set = orders_per_set(scale_factor);
    (set - 1) * per_set + 1..=set * per_set
}

/// The keys RF2 of update set `set` deletes.
pub fn deleted_keys(set: i64, scale_factor: f64) -> impl Iterator<Item = i64> {
    set_indexes(set, scale_factor).map(|index| sparse_key(index, 0))
}

/// An order of an update set with its lines.
pub struct NewOrder<'a> {
    pub order: Order<'a>,
    pub lines: Vec<LineItem<'a>>,
}

/// dbgen's streams for orders and their lines, positioned at one row.
pub struct NewOrders<'a> {
    scale_factor: f64,
    max_customer_key: i64,
    order_date: RandomBoundedInt,
    line_count: RandomBoundedInt,
    customer_key: RandomBoundedLong,
    priority: RandomString<'a>,
    clerk: RandomBoundedInt,
    order_comment: RandomText<'a>,
    quantity: RandomBoundedInt,
    discount: RandomBoundedInt,
    tax: RandomBoundedInt,
    part_key: RandomBoundedLong,
    supplier_number: RandomBoundedInt,
    ship_date: RandomBoundedInt,
    commit_date: RandomBoundedInt,
    receipt_date: RandomBoundedInt,
    return_flag: RandomString<'a>,
    ship_instruct: RandomString<'a>,
    ship_mode: RandomString<'a>,
    line_comment: RandomText<'a>,
    /// The next order's index in its update set's key space.
    next_index: i64,
    last_index: i64,
}

impl NewOrders<'static> {
    /// Update set `set`'s new orders, in dbgen's order.
    pub fn of_set(set: i64, scale_factor: f64) -> NewOrders<'static> {
        let distributions = Distributions::static_default();
        let text = TextPool::get_or_init_default();
        let big = scale_factor >= 30_000.0;
        let lines = OrderGenerator::LINE_COUNT_MAX;
        let max_customer_key = (150_000.0 * scale_factor) as i64;
        let max_clerk = (scale_factor * 1000.0).max(1000.0) as i32;
        let mut streams = NewOrders {
            scale_factor,
            max_customer_key,
            order_date: OrderGenerator::create_order_date_random(),
            line_count: OrderGenerator::create_line_count_random(),
            customer_key: RandomBoundedLong::new(851767375, big, 1, max_customer_key),
            priority: RandomString::new(591449447, distributions.order_priority()),
            clerk: RandomBoundedInt::new(1171034773, 1, max_clerk),
            order_comment: RandomText::new(276090261, text, 49.0),
            quantity: LineItemGenerator::create_quantity_random(),
            discount: LineItemGenerator::create_discount_random(),
            tax: LineItemGenerator::create_tax_random(),
            part_key: LineItemGenerator::create_part_key_random(scale_factor),
            supplier_number: RandomBoundedInt::new_with_seeds_per_row(2095021727, 0, 3, lines),
            ship_date: LineItemGenerator::create_ship_date_random(),
            commit_date: RandomBoundedInt::new_with_seeds_per_row(904914315, 30, 90, lines),
            receipt_date: RandomBoundedInt::new_with_seeds_per_row(373135028, 1, 30, lines),
            return_flag: RandomString::new_with_expected_row_count(
                717419739,
                distributions.return_flags(),
                lines,
            ),
            ship_instruct: RandomString::new_with_expected_row_count(
                1371272478,
                distributions.ship_instructions(),
                lines,
            ),
            ship_mode: RandomString::new_with_expected_row_count(
                675466456,
                distributions.ship_modes(),
                lines,
            ),
            line_comment: RandomText::new_with_expected_row_count(1095462486, text, 27.0, lines),
            next_index: *set_indexes(set, scale_factor).start(),
            last_index: *set_indexes(set, scale_factor).end(),
        };
        // dbgen's set_state(ORDER, scale, 100, 101): past 100 hundredths of the base orders,
        // then past the sets before this one.
        let base = (1_500_000.0 * scale_factor) as i64 / 100 * 100;
        streams.advance(base + (set - 1) * orders_per_set(scale_factor));
        streams
    }

    fn advance(&mut self, rows: i64) {
        self.order_date.advance_rows(rows);
        self.line_count.advance_rows(rows);
        self.customer_key.advance_rows(rows);
        self.priority.advance_rows(rows);
        self.clerk.advance_rows(rows);
        self.order_comment.advance_rows(rows);
        self.quantity.advance_rows(rows);
        self.discount.advance_rows(rows);
        self.tax.advance_rows(rows);
        self.part_key.advance_rows(rows);
        self.supplier_number.advance_rows(rows);
        self.ship_date.advance_rows(rows);
        self.commit_date.advance_rows(rows);
        self.receipt_date.advance_rows(rows);
        self.return_flag.advance_rows(rows);
        self.ship_instruct.advance_rows(rows);
        self.ship_mode.advance_rows(rows);
        self.line_comment.advance_rows(rows);
    }

    fn row_finished(&mut self) {
        self.order_date.row_finished();
        self.line_count.row_finished();
        self.customer_key.row_finished();
        self.priority.row_finished();
        self.clerk.row_finished();
        self.order_comment.row_finished();
        self.quantity.row_finished();
        self.discount.row_finished();
        self.tax.row_finished();
        self.part_key.row_finished();
        self.supplier_number.row_finished();
        self.ship_date.row_finished();
        self.commit_date.row_finished();
        self.receipt_date.row_finished();
        self.return_flag.row_finished();
        self.ship_instruct.row_finished();
        self.ship_mode.row_finished();
        self.line_comment.row_finished();
    }

    /// dbgen's customer key: a third of the customers never order, so a key divisible by 3
    /// moves to a neighbour.
    fn customer(&mut self) -> i64 {
        let mut key = self.customer_key.next_value();
        let mut delta = 1;
        while key % 3 == 0 {
            key = (key + delta).min(self.max_customer_key);
            delta = -delta;
        }
        key
    }

    fn make(&mut self, index: i64) -> NewOrder<'static> {
        let key = sparse_key(index, 1);
        let order_date = self.order_date.next_value();
        let customer = self.customer();
        let count = self.line_count.next_value();
        let mut lines = Vec::with_capacity(count as usize);
        let (mut total, mut shipped) = (0i64, 0);
        for number in 1..=count {
            let line = self.line(key, number, order_date);
            let discounted = line.l_extendedprice.0 * (100 - line.l_discount.0);
            total += ((discounted / 100) * (100 + line.l_tax.0)) / 100;
            if line.l_linestatus == "F" {
                shipped += 1;
            }
            lines.push(line);
        }
        let status = if shipped == count {
            OrderStatus::Fulfilled
        } else if shipped > 0 {
            OrderStatus::Pending
        } else {
            OrderStatus::Open
        };
        let clerk = ClerkName::new(self.clerk.next_value());
        let order = Order {
            o_orderkey: key,
            o_custkey: customer,
            o_orderstatus: status,
            o_totalprice: TPCHDecimal(total),
            o_orderdate: TPCHDate::new(order_date),
            o_orderpriority: self.priority.next_value(),
            o_clerk: clerk,
            o_shippriority: 0,
            o_comment: self.order_comment.next_value(),
        };
        NewOrder { order, lines }
    }

    fn line(&mut self, key: i64, number: i32, order_date: i32) -> LineItem<'static> {
        let quantity = self.quantity.next_value();
        let discount = self.discount.next_value();
        let tax = self.tax.next_value();
        let part = self.part_key.next_value();
        let supplier_number = self.supplier_number.next_value() as i64;
        let supplier = PartSuppGeneratorIterator::select_part_supplier(
            part,
            supplier_number,
            self.scale_factor,
        );
        let price = PartGeneratorIterator::calculate_part_price(part) * quantity as i64;
        let ship = self.ship_date.next_value() + order_date;
        let commit = self.commit_date.next_value() + order_date;
        let receipt = self.receipt_date.next_value() + ship;
        let return_flag = if TPCHDate::is_in_past(receipt) {
            self.return_flag.next_value()
        } else {
            "N"
        };
        LineItem {
            l_orderkey: key,
            l_partkey: part,
            l_suppkey: supplier,
            l_linenumber: number,
            l_quantity: quantity as i64,
            l_extendedprice: TPCHDecimal(price),
            l_discount: TPCHDecimal(discount as i64),
            l_tax: TPCHDecimal(tax as i64),
            l_returnflag: return_flag,
            l_linestatus: if TPCHDate::is_in_past(ship) { "F" } else { "O" },
            l_shipdate: TPCHDate::new(ship),
            l_commitdate: TPCHDate::new(commit),
            l_receiptdate: TPCHDate::new(receipt),
            l_shipinstruct: self.ship_instruct.next_value(),
            l_shipmode: self.ship_mode.next_value(),
            l_comment: self.line_comment.next_value(),
        }
    }
}

impl Iterator for NewOrders<'static> {
    type Item = NewOrder<'static>;

    fn next(&mut self) -> Option<NewOrder<'static>> {
        if self.next_index > self.last_index {
            return None;
        }
        let order = self.make(self.next_index);
        self.row_finished();
        self.next_index += 1;
        Some(order)
    }
}

/// RF1's statements for one new order: its lines, then the order (as HammerDB inserts them;
/// the lines' foreign key to the order is deferrable).
pub fn insert_statements(new: &NewOrder<'_>) -> String {
    let mut sql = String::with_capacity(256 * (new.lines.len() + 1));
    for l in &new.lines {
        sql.push_str(&format!(
            "INSERT INTO lineitem (l_orderkey, l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment) VALUES ({}, {}, {}, {}, {}, {}, {}, {}, '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}');\n",
            l.l_orderkey, l.l_partkey, l.l_suppkey, l.l_linenumber, l.l_quantity, l.l_extendedprice,
            l.l_discount, l.l_tax, l.l_returnflag, l.l_linestatus, l.l_shipdate, l.l_commitdate,
            l.l_receiptdate, l.l_shipinstruct, l.l_shipmode, l.l_comment
        ));
    }
    let o = &new.order;
    sql.push_str(&format!(
        "INSERT INTO orders (o_orderkey, o_custkey, o_orderstatus, o_totalprice, o_orderdate, o_orderpriority, o_clerk, o_shippriority, o_comment) VALUES ({}, {}, '{}', {}, '{}', '{}', '{}', {}, '{}');\n",
        o.o_orderkey, o.o_custkey, o.o_orderstatus, o.o_totalprice, o.o_orderdate,
        o.o_orderpriority, o.o_clerk, o.o_shippriority, o.o_comment
    ));
    sql
}

/// RF2's statements for one old order: its lines, then the order.
pub fn delete_statements(key: i64) -> String {
    format!(
        "DELETE FROM lineitem WHERE l_orderkey = {key};\nDELETE FROM orders WHERE o_orderkey = {key};\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_keys_leave_room_for_three_update_sequences() {
        // dbgen's base keys: 1..7, then 32.. (the index's low three bits kept).
        let base: Vec<i64> = (1..=9).map(|i| sparse_key(i, 0)).collect();
        assert_eq!(base, [1, 2, 3, 4, 5, 6, 7, 32, 33]);
        assert_eq!(sparse_key(1, 1), 9);
        assert_eq!(sparse_key(8, 1), 40);
        // The base keys are tpchgen's.
        for index in 1..1000 {
            assert_eq!(sparse_key(index, 0), OrderGenerator::make_order_key(index));
        }
    }

    #[test]
    fn an_update_set_holds_a_thousandth_of_the_orders_with_their_lines() {
        assert_eq!(orders_per_set(1.0), 1500);
        assert_eq!(orders_per_set(0.01), 15);
        let set: Vec<NewOrder> = NewOrders::of_set(2, 0.01).collect();
        assert_eq!(set.len(), 15);
        assert_eq!(set[0].order.o_orderkey, sparse_key(16, 1));
        for new in &set {
            assert!((1..=7).contains(&new.lines.len()));
            assert!(new
                .lines
                .iter()
                .all(|l| l.l_orderkey == new.order.o_orderkey));
            assert!(new.order.o_custkey % 3 != 0);
        }
        assert_eq!(deleted_keys(2, 0.01).next(), Some(sparse_key(16, 0)));
    }
}
