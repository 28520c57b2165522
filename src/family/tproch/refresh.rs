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

use super::session::Dialect;

/// Orders per update set: 0.1% of the base orders (dbgen's `UPD_PCT`), as dbgen counts them:
/// below scale factor 1 it scales the base count first and divides it by 10,000 in integers
/// (SF 0.01: 15,000 orders, 10 per set, not 15).
pub fn orders_per_set(scale_factor: f64) -> i64 {
    if scale_factor < 1.0 {
        (1_500_000.0 * scale_factor) as i64 / 10_000 * 10
    } else {
        (150.0 * scale_factor) as i64 * 10
    }
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
/// the lines' foreign key to the order is deferred on PostgreSQL, unchecked on MariaDB).
pub fn insert_statements(dialect: Dialect, new: &NewOrder<'_>) -> Vec<String> {
    let lineitem = dialect.table("lineitem");
    let mut statements: Vec<String> = new
        .lines
        .iter()
        .map(|l| {
            format!(
                "INSERT INTO {lineitem} (l_orderkey, l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment) VALUES ({}, {}, {}, {}, {}, {}, {}, {}, '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')",
                l.l_orderkey, l.l_partkey, l.l_suppkey, l.l_linenumber, l.l_quantity,
                l.l_extendedprice, l.l_discount, l.l_tax, l.l_returnflag, l.l_linestatus,
                l.l_shipdate, l.l_commitdate, l.l_receiptdate, l.l_shipinstruct, l.l_shipmode,
                l.l_comment
            )
        })
        .collect();
    let o = &new.order;
    statements.push(format!(
        "INSERT INTO {} (o_orderkey, o_custkey, o_orderstatus, o_totalprice, o_orderdate, o_orderpriority, o_clerk, o_shippriority, o_comment) VALUES ({}, {}, '{}', {}, '{}', '{}', '{}', {}, '{}')",
        dialect.table("orders"), o.o_orderkey, o.o_custkey, o.o_orderstatus, o.o_totalprice,
        o.o_orderdate, o.o_orderpriority, o.o_clerk, o.o_shippriority, o.o_comment
    ));
    statements
}

/// RF2's statements for one old order: its lines, then the order.
pub fn delete_statements(dialect: Dialect, key: i64) -> Vec<String> {
    vec![
        format!(
            "DELETE FROM {} WHERE l_orderkey = {key}",
            dialect.table("lineitem")
        ),
        format!(
            "DELETE FROM {} WHERE o_orderkey = {key}",
            dialect.table("orders")
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    use sha2::{Digest, Sha256};

    /// sha256 of dbgen 2.x's update-set files (`dbgen -s SF -U 3`, TPC-H's kit built from
    /// source): orders.tbl.uN, lineitem.tbl.uN and delete.N.
    const DBGEN_UPDATE_SETS: [(f64, i64, [&str; 3]); 5] = [
        (
            0.01,
            1,
            [
                "eb9134d683b291367d5fb16fb8abb8a363ed77366a6813658aeab9a8920219dd",
                "b05bdc0089ae2c14d1923f5f491a3f8017686bc7842053d39799c45026e19acf",
                "4ce4ed89cd87c533647c12b92147da06e7d264184b7d57b1b7488794eb7bb9f3",
            ],
        ),
        (
            0.01,
            2,
            [
                "7096dacb79e9f582308b4fab750e45989be392b4f4231aa2a41f998f30334027",
                "f4f380631028d2b529e69c5f19597f15dfab136c295098f54fa1518a517f1bb0",
                "fc3a9c71ed3b6719cc168e6acafcaf92aaa1625065d6c3a55d4f4f179aeb08dd",
            ],
        ),
        (
            0.01,
            3,
            [
                "ec351d44fbb9be42744e10b3ae71a891e0032ee0f746d26a69586ed5f9cae5dd",
                "b1f2881fb7353e20113e7279b9875cd551b98db4dc4fb7118a17866099754066",
                "32dbbb4f8730d7cb64f41af2b4588c0fa3fc371157caa7e5efcf3fc4399f1837",
            ],
        ),
        (
            1.0,
            1,
            [
                "9959cc8fc853d82cc8a424828af2ea4c3a9e9b36f3ec4b0fece52f130a26a8aa",
                "bd924b1d723f906ca63f8b76e8dd19deb7c55374cbb0cc47785c73bb90cdea1f",
                "801d3d83fd0735a07ac9c60c247d93f2233bdd17d1e5ff7a7e9c81629c6cb8b9",
            ],
        ),
        (
            1.0,
            2,
            [
                "eaee073d331dd1bf9d1d00dc88c8d58fef514c23f760f23099b24d568383ef28",
                "0f39c9184a43da4bde2b7f5190159618a3819009fb23fd1bc87fe2190f5ea833",
                "2e17020ddd0807cbe26c7057e774cb20782265387893b337825c307e369c0f93",
            ],
        ),
    ];

    fn hex(digest: impl AsRef<[u8]>) -> String {
        digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn update_sets_are_dbgen_s_byte_for_byte() {
        for (sf, set, [orders, lines, deletes]) in DBGEN_UPDATE_SETS {
            let (mut o, mut l, mut d) = (Sha256::new(), Sha256::new(), Sha256::new());
            for new in NewOrders::of_set(set, sf) {
                o.update(format!("{}\n", new.order));
                for line in &new.lines {
                    l.update(format!("{line}\n"));
                }
            }
            for key in deleted_keys(set, sf) {
                d.update(format!("{key}|\n"));
            }
            assert_eq!(hex(o.finalize()), orders, "orders.tbl.u{set} at SF {sf}");
            assert_eq!(hex(l.finalize()), lines, "lineitem.tbl.u{set} at SF {sf}");
            assert_eq!(hex(d.finalize()), deletes, "delete.{set} at SF {sf}");
        }
    }

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
        assert_eq!(orders_per_set(0.01), 10);
        assert_eq!(orders_per_set(0.05), 70);
        let set: Vec<NewOrder> = NewOrders::of_set(2, 0.01).collect();
        assert_eq!(set.len(), 10);
        assert_eq!(set[0].order.o_orderkey, sparse_key(11, 1));
        for new in &set {
            assert!((1..=7).contains(&new.lines.len()));
            assert!(new
                .lines
                .iter()
                .all(|l| l.l_orderkey == new.order.o_orderkey));
            assert!(new.order.o_custkey % 3 != 0);
        }
        assert_eq!(deleted_keys(2, 0.01).next(), Some(sparse_key(11, 0)));
    }
}
