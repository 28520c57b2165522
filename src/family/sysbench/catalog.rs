//! sysbench's tests as stampede scripts: each oltp_* event becomes one script execution (one
//! "transaction" of the driver) issuing exactly the statements sysbench's Lua issues, in the same
//! order, with the same SQL text, the same tables chosen per statement group and the same
//! distributions — so pg_stat_statements shows the same statements and QPS is comparable.

use super::oltp_options::OltpOptions;

/// The tests `stampede sysbench run` knows, as sysbench names them.
pub const TESTS: [&str; 17] = [
    "oltp_read_only",
    "oltp_read_write",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
    "bulk_insert",
    "oltp_scan",
    // Mark Callaghan's additions (mdcallag/mytools), used by the microbenchmark suite.
    "oltp_inlist_select",
    "oltp_inlist_update",
    "oltp_points_covered",
    "oltp_range_covered",
    "oltp_read_only_count",
];

/// One line about a built-in test, for `--help`.
pub fn describe(test: &str) -> &'static str {
    match test {
        "oltp_read_only" => "OLTP read-only transactions (sysbench's oltp_read_only.lua)",
        "oltp_read_write" => "OLTP read/write transactions (sysbench's oltp_read_write.lua)",
        "oltp_write_only" => "OLTP write-only transactions (sysbench's oltp_write_only.lua)",
        "oltp_point_select" => "one primary-key SELECT per event (oltp_point_select.lua)",
        "oltp_update_index" => "one UPDATE of an indexed column per event (oltp_update_index.lua)",
        "oltp_update_non_index" => {
            "one UPDATE of a non-indexed column per event (oltp_update_non_index.lua)"
        }
        "oltp_insert" => "one INSERT per event (oltp_insert.lua)",
        "oltp_delete" => "one DELETE and its INSERT per event (oltp_delete.lua)",
        "select_random_points" => "SELECT of random points of k (select_random_points.lua)",
        "select_random_ranges" => "SELECT of random ranges of k (select_random_ranges.lua)",
        "bulk_insert" => "multi-row INSERTs into a table per thread (bulk_insert.lua)",
        "oltp_scan" => "a full scan of a table per event (Callaghan's mytools)",
        "oltp_inlist_select" => "SELECT ... WHERE id IN (...) (Callaghan's mytools)",
        "oltp_inlist_update" => "UPDATE ... WHERE id IN (...) (Callaghan's mytools)",
        "oltp_points_covered" => "covered point SELECTs on k (Callaghan's mytools)",
        "oltp_range_covered" => "covered range SELECTs on k (Callaghan's mytools)",
        "oltp_read_only_count" => "read-only with count(*) ranges (Callaghan's mytools)",
        _ => "",
    }
}

/// Statements per event by sysbench's classes (its `queries performed: read / write / other`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryMix {
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    /// The statements per event vary (bulk_insert: one INSERT per full buffer); they are all
    /// writes and counted as the driver completes them.
    pub varies: bool,
}

impl QueryMix {
    pub fn total(&self) -> u64 {
        self.reads + self.writes + self.other
    }

    /// The queries of `events` events that completed `statements` SQL statements.
    pub fn of_events(&self, events: u64, statements: u64) -> QueryMix {
        if self.varies {
            return QueryMix {
                writes: statements,
                ..QueryMix::default()
            };
        }
        QueryMix {
            reads: events * self.reads,
            writes: events * self.writes,
            other: events * self.other,
            varies: false,
        }
    }
}

/// A test ready for the driver.
#[derive(Debug, Clone)]
pub struct GeneratedTest {
    pub name: String,
    pub script: String,
    pub queries: QueryMix,
    /// Whether the test changes the tables.
    pub writes: bool,
    /// Variables the script expects before its first event, as (name, value).
    pub initial: Vec<(&'static str, i64)>,
    /// Run once per client after its last event (sysbench's `thread_done`).
    pub closing: Option<String>,
    /// Sent as plain queries whatever `--db-ps-mode` says: the query text is built per event.
    pub plain_queries: bool,
}

/// Builds the script of `name` for `threads` client threads.
pub fn generate(name: &str, options: &OltpOptions, threads: u32) -> Result<GeneratedTest, String> {
    let mut b = Builder::new(options);
    let mut initial = Vec::new();
    let mut closing = None;
    match name {
        "oltp_point_select" => b.point_selects(1),
        "oltp_read_only" => b.in_transaction(|b| {
            b.point_selects(options.point_selects);
            b.range_selects();
        }),
        "oltp_read_write" => b.in_transaction(|b| {
            b.point_selects(options.point_selects);
            b.range_selects();
            b.writes();
        }),
        "oltp_write_only" => b.in_transaction(Builder::writes),
        "oltp_update_index" => b.index_updates(),
        "oltp_update_non_index" => b.non_index_updates(),
        "oltp_delete" => b.per_table(|b, t| {
            b.set("id", &b.id());
            b.write(&format!("DELETE FROM sbtest{t} WHERE id=:id"));
        }),
        "oltp_insert" => {
            if !options.auto_inc {
                initial = vec![("sb_seq", 0), ("sb_clients", threads as i64)];
            }
            b.insert();
        }
        "select_random_points" | "select_random_ranges" => {
            if options.tables != 1 {
                return Err(format!("{name} does not support --tables > 1"));
            }
            b.thread_slice(threads);
            if name == "select_random_points" {
                b.random_points();
            } else {
                b.random_ranges();
            }
        }
        "bulk_insert" => {
            initial = vec![("sb_row", 0), ("sb_first", 1), ("sb_batch_end", 0)];
            b.bulk_insert();
            closing = Some(BULK_INSERT_FLUSH.to_string());
        }
        "oltp_scan" => b.per_table(|b, t| {
            b.read(&format!("SELECT * FROM sbtest{t} WHERE LENGTH(c) < 0"));
        }),
        "oltp_inlist_select" => b.in_list("c", "id"),
        "oltp_points_covered" => {
            let (columns, key) = covered_columns(options);
            b.in_list(columns, key);
        }
        "oltp_range_covered" => {
            let (columns, key) = covered_columns(options);
            b.key_range(columns, key);
        }
        "oltp_read_only_count" => b.key_range("count(c)", "id"),
        "oltp_inlist_update" => b.update_in_list(),
        other => {
            return Err(format!(
                "unknown test \"{other}\"; the tests are: {}",
                TESTS.join(", ")
            ))
        }
    }
    Ok(GeneratedTest {
        name: name.to_string(),
        writes: b.mix.writes > 0 || b.mix.varies,
        plain_queries: closing.is_some(),
        closing,
        queries: b.mix,
        script: b.text,
        initial,
    })
}

/// bulk_insert's last flush, at the client's end: the rows buffered since the last INSERT.
const BULK_INSERT_FLUSH: &str = "\\if :sb_batch_end > 0
\\set sb_values sb_bulk_values(:sb_first, :sb_row)
INSERT INTO sbtest:sb_table VALUES:sb_values;
\\endif
";

/// oltp_points_covered / oltp_range_covered: `--on-id` picks the key (id or k), `--covered`
/// whether the index alone answers (the key only) or the row is read too (key and c).
fn covered_columns(options: &OltpOptions) -> (&'static str, &'static str) {
    match (options.on_id, options.covered) {
        (true, true) => ("id", "id"),
        (true, false) => ("id, c", "id"),
        (false, true) => ("k", "k"),
        (false, false) => ("k, c", "k"),
    }
}

/// Writes a script and counts its statements per event.
struct Builder<'o> {
    options: &'o OltpOptions,
    text: String,
    mix: QueryMix,
    /// Off while writing the second and later table branches of a group: an event runs one.
    counting: bool,
}

impl<'o> Builder<'o> {
    fn new(options: &'o OltpOptions) -> Self {
        Builder {
            options,
            text: String::new(),
            mix: QueryMix::default(),
            counting: true,
        }
    }

    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    fn set(&mut self, variable: &str, expression: &str) {
        self.line(&format!("\\set {variable} {expression}"));
    }

    fn sql(&mut self, sql: &str) {
        self.line(&format!("{sql};"));
    }

    fn read(&mut self, sql: &str) {
        self.sql(sql);
        if self.counting {
            self.mix.reads += 1;
        }
    }

    fn write(&mut self, sql: &str) {
        self.sql(sql);
        if self.counting {
            self.mix.writes += 1;
        }
    }

    fn other(&mut self, sql: &str) {
        self.sql(sql);
        if self.counting {
            self.mix.other += 1;
        }
    }

    /// `sysbench.rand.default(1, table_size)`.
    fn id(&self) -> String {
        self.options
            .rand
            .expression("1", &self.options.table_size.to_string())
    }

    fn in_transaction(&mut self, body: impl FnOnce(&mut Self)) {
        let explicit = !self.options.skip_trx;
        if explicit {
            self.other("BEGIN");
        }
        body(self);
        if explicit {
            self.other("COMMIT");
        }
    }

    /// A statement group on one table chosen uniformly per event, as sysbench's
    /// `get_table_num()`: a branch per table, each its own prepared statements.
    fn per_table(&mut self, mut group: impl FnMut(&mut Self, u32)) {
        let tables = self.options.tables;
        if tables == 1 {
            group(self, 1);
            return;
        }
        self.set("tnum", &format!("sb_rand_uniform(1, {tables})"));
        for table in 1..=tables {
            let keyword = if table == 1 { "\\if" } else { "\\elif" };
            self.line(&format!("{keyword} :tnum = {table}"));
            self.counting = table == 1;
            group(self, table);
        }
        self.counting = true;
        self.line("\\endif");
    }

    fn point_selects(&mut self, count: u32) {
        self.per_table(|b, t| {
            for _ in 0..count {
                b.set("id", &b.id());
                b.read(&format!("SELECT c FROM sbtest{t} WHERE id=:id"));
            }
        });
    }

    fn range_selects(&mut self) {
        if !self.options.range_selects {
            return;
        }
        let o = self.options;
        for (count, shape) in [
            (
                o.simple_ranges,
                "SELECT c FROM sbtest{t} WHERE id BETWEEN :id AND :id_end",
            ),
            (
                o.sum_ranges,
                "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN :id AND :id_end",
            ),
            (
                o.order_ranges,
                "SELECT c FROM sbtest{t} WHERE id BETWEEN :id AND :id_end ORDER BY c",
            ),
            (
                o.distinct_ranges,
                "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN :id AND :id_end ORDER BY c",
            ),
        ] {
            self.per_table(|b, t| {
                for _ in 0..count {
                    b.set("id", &b.id());
                    b.set("id_end", &format!(":id + {}", o.range_size as i64 - 1));
                    b.read(&shape.replace("{t}", &t.to_string()));
                }
            });
        }
    }

    fn writes(&mut self) {
        self.index_updates();
        self.non_index_updates();
        let count = self.options.delete_inserts;
        self.per_table(|b, t| {
            for _ in 0..count {
                b.set("id", &b.id());
                b.set("k", &b.id());
                b.set("c", "sb_rand_digits(10)");
                b.set("pad", "sb_rand_digits(5)");
                b.write(&format!("DELETE FROM sbtest{t} WHERE id=:id"));
                b.write(&format!(
                    "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (:id, :k, :c, :pad)"
                ));
            }
        });
    }

    fn index_updates(&mut self) {
        let count = self.options.index_updates;
        self.per_table(|b, t| {
            for _ in 0..count {
                b.set("id", &b.id());
                b.write(&format!("UPDATE sbtest{t} SET k=k+1 WHERE id=:id"));
            }
        });
    }

    fn non_index_updates(&mut self) {
        let count = self.options.non_index_updates;
        self.per_table(|b, t| {
            for _ in 0..count {
                b.set("c", "sb_rand_digits(10)");
                b.set("id", &b.id());
                b.write(&format!("UPDATE sbtest{t} SET c=:c WHERE id=:id"));
            }
        });
    }

    /// oltp_insert: with auto_inc the server numbers the row; without, a unique id per event
    /// over the whole INT range (sysbench's `rand.unique() - 2^31`): a permutation of a counter
    /// no two clients share.
    fn insert(&mut self) {
        let auto_inc = self.options.auto_inc;
        self.per_table(|b, t| {
            b.set("k", &b.id());
            b.set("c", "sb_rand_digits(10)");
            b.set("pad", "sb_rand_digits(5)");
            if auto_inc {
                b.write(&format!(
                    "INSERT INTO sbtest{t} (k, c, pad) VALUES (:k, :c, :pad)"
                ));
            } else {
                b.set("sb_seq", ":sb_seq + 1");
                b.set(
                    "id",
                    "permute(:sb_seq * :sb_clients + :client_id, 4294967295) - 2147483648",
                );
                b.write(&format!(
                    "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (:id, :k, :c, :pad)"
                ));
            }
        });
    }

    /// `random_points` keys in one IN list: random ones, or with `--hot-points` the same
    /// adjacent ones in the middle of the table for every event of every client.
    fn in_list_values(&mut self) -> String {
        let half = self.options.table_size as i64 / 2;
        let values: Vec<String> = (1..=self.options.random_points)
            .map(|i| {
                let value = if self.options.hot_points {
                    (half + i as i64).to_string()
                } else {
                    self.id()
                };
                self.set(&format!("p{i}"), &value);
                format!(":p{i}")
            })
            .collect();
        values.join(", ")
    }

    fn in_list(&mut self, columns: &str, key: &str) {
        self.per_table(|b, t| {
            let values = b.in_list_values();
            b.read(&format!(
                "SELECT {columns} FROM sbtest{t} WHERE {key} IN ({values})"
            ));
        });
    }

    fn update_in_list(&mut self) {
        self.per_table(|b, t| {
            b.set("c", "sb_rand_digits(10)");
            let values = b.in_list_values();
            b.write(&format!("UPDATE sbtest{t} SET c=:c WHERE id IN ({values})"));
        });
    }

    /// bulk_insert: each event adds row (n, n) to the client's buffer for its own table
    /// sbtest<client + 1>; the event whose row would overflow the buffer sends the rows before
    /// it as one multi-row INSERT (with the variables substituted as text) and starts a new
    /// buffer. The first event only sizes the buffer.
    fn bulk_insert(&mut self) {
        self.mix.varies = true;
        self.set("sb_table", ":client_id + 1");
        self.set("sb_row", ":sb_row + 1");
        self.line("\\if :sb_row > :sb_batch_end");
        self.line("\\if :sb_batch_end > 0");
        self.set("sb_values", "sb_bulk_values(:sb_first, :sb_row - 1)");
        self.sql("INSERT INTO sbtest:sb_table VALUES:sb_values");
        self.line("\\endif");
        self.set("sb_first", ":sb_row");
        self.set(
            "sb_batch_end",
            ":sb_row + sb_bulk_rows(:sb_row, :sb_table) - 1",
        );
        self.line("\\endif");
    }

    /// One range of `range_size` keys from a random start.
    fn key_range(&mut self, columns: &str, key: &str) {
        let width = self.options.range_size as i64 - 1;
        self.per_table(|b, t| {
            b.set("id", &b.id());
            b.set("id_end", &format!(":id + {width}"));
            b.read(&format!(
                "SELECT {columns} FROM sbtest{t} WHERE {key} BETWEEN :id AND :id_end"
            ));
        });
    }

    /// select_random_*: each client draws from its own 1/threads of the table, so that no two
    /// clients' ranges overlap.
    fn thread_slice(&mut self, threads: u32) {
        let size = self.options.table_size;
        self.set("rmin", &format!("(:client_id * {size}) / {threads}"));
        self.set("rmax", &format!("((:client_id + 1) * {size}) / {threads}"));
    }

    fn random_points(&mut self) {
        let points: Vec<String> = (1..=self.options.random_points)
            .map(|i| {
                self.set(
                    &format!("p{i}"),
                    &self.options.rand.expression(":rmin", ":rmax"),
                );
                format!(":p{i}")
            })
            .collect();
        self.read(&format!(
            "SELECT id, k, c, pad FROM sbtest1 WHERE k IN ({})",
            points.join(", ")
        ));
    }

    fn random_ranges(&mut self) {
        let delta = self.options.delta;
        let ranges: Vec<String> = (1..=self.options.number_of_ranges)
            .map(|i| {
                self.set(
                    &format!("r{i}"),
                    &self.options.rand.expression(":rmin", ":rmax"),
                );
                self.set(&format!("r{i}_end"), &format!(":r{i} + {delta}"));
                format!("k BETWEEN :r{i} AND :r{i}_end")
            })
            .collect();
        self.read(&format!(
            "SELECT count(k) FROM sbtest1 WHERE {}",
            ranges.join(" OR ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_script::{parse_script, VarTable};

    #[test]
    fn read_only_counts_sysbench_queries() {
        let test = generate("oltp_read_only", &OltpOptions::default(), 1).unwrap();
        assert_eq!(
            test.queries,
            QueryMix {
                reads: 14,
                writes: 0,
                other: 2,
                varies: false
            }
        );
        assert!(!test.writes);
        assert!(test.script.starts_with("BEGIN;\n\\set id sb_rand_special(1, 10000, 12, 1, 75)\nSELECT c FROM sbtest1 WHERE id=:id;\n"));
    }

    #[test]
    fn several_tables_branch_once_per_group() {
        let options = OltpOptions {
            tables: 3,
            ..OltpOptions::default()
        };
        let test = generate("oltp_read_write", &options, 4).unwrap();
        // 10 point selects, 4 ranges, 2 updates, delete + insert, BEGIN/COMMIT.
        assert_eq!(test.queries.total(), 20);
        assert_eq!(test.queries.writes, 4);
        assert_eq!(
            test.script
                .matches("\\set tnum sb_rand_uniform(1, 3)")
                .count(),
            8
        );
        assert_eq!(
            test.script
                .matches("UPDATE sbtest3 SET k=k+1 WHERE id=:id;")
                .count(),
            1
        );
    }

    #[test]
    fn every_test_parses() {
        for name in TESTS {
            let test = generate(name, &OltpOptions::default(), 2).unwrap();
            let mut variables = VarTable::default();
            parse_script(name, name, &test.script, &mut variables)
                .unwrap_or_else(|e| panic!("{name}: {e}\n{}", test.script));
            if let Some(closing) = &test.closing {
                parse_script(name, name, closing, &mut variables)
                    .unwrap_or_else(|e| panic!("{name} closing: {e}\n{closing}"));
            }
        }
    }

    #[test]
    fn unknown_tests_and_table_limits_are_refused() {
        let error = generate("oltp_nope", &OltpOptions::default(), 1).unwrap_err();
        assert!(error.starts_with("unknown test \"oltp_nope\"; the tests are: oltp_read_only, "));
        let options = OltpOptions {
            tables: 2,
            ..OltpOptions::default()
        };
        assert_eq!(
            generate("select_random_points", &options, 1).unwrap_err(),
            "select_random_points does not support --tables > 1"
        );
    }
}
