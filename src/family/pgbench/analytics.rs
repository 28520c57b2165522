//! Study 002's analytical queries over the pgbench schema, and its four extra indexes.
//!
//! The queries scan whole tables or an index range instead of single rows; queries 3 and 4 join
//! pgbench_accounts with a copy of itself, `pgbench_accounts_copy`, which study 002 created with
//! a unique index on aid. Study 002's query 4 lost the column in its WHERE clause
//! (`WHERE % 10 = 0`); it is `aid % 10 = 0` here, as query 3's `aid % 2 = 0` suggests.

/// (builtin name, description, SQL): study 002's queries 1-4.
pub const QUERIES: [(&str, &str, &str); 4] = [
    (
        "analytics-q1",
        "<builtin: analytics query 1 (seed 002): accounts of even branches>",
        "SELECT avg(abalance) FROM pgbench_accounts JOIN pgbench_branches USING (bid) WHERE bid % 2 = 0;",
    ),
    (
        "analytics-q2",
        "<builtin: analytics query 2 (seed 002): distinct accounts>",
        "SELECT COUNT(DISTINCT aid) FROM pgbench_accounts;",
    ),
    (
        "analytics-q3",
        "<builtin: analytics query 3 (seed 002): self-join, even accounts>",
        "SELECT count(*) FROM pgbench_accounts JOIN pgbench_accounts_copy USING (aid) WHERE aid % 2 = 0;",
    ),
    (
        "analytics-q4",
        "<builtin: analytics query 4 (seed 002): self-join, every tenth account>",
        "SELECT sum(a.abalance) FROM pgbench_accounts a JOIN pgbench_accounts_copy USING (aid) WHERE aid % 10 = 0;",
    ),
];

/// `-b analytics`: all four queries, each a script of its own (so each gets its own latency
/// statistics), with the weight given.
pub const ALL: &str = "analytics";

/// Creates the accounts copy the joins need when it is missing (study 002's statements), and
/// analyzes it so that the joins are planned from statistics.
pub const ACCOUNTS_COPY: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS pgbench_accounts_copy AS SELECT * FROM pgbench_accounts",
    "CREATE UNIQUE INDEX IF NOT EXISTS pgbench_accounts_copy_aid_idx ON pgbench_accounts_copy (aid)",
    "ANALYZE pgbench_accounts_copy",
];

/// Study 002's extra indexes, with the names PostgreSQL gives `CREATE INDEX ON …` without one.
pub const EXTRA_INDEXES: [&str; 4] = [
    "CREATE INDEX pgbench_accounts_bid_idx ON pgbench_accounts (bid)",
    "CREATE INDEX pgbench_history_tid_idx ON pgbench_history (tid)",
    "CREATE INDEX pgbench_history_bid_aid_idx ON pgbench_history (bid, aid)",
    "CREATE INDEX pgbench_history_mtime_idx ON pgbench_history (mtime)",
];

/// Whether a builtin's queries read the accounts copy.
pub fn needs_accounts_copy(builtin: &str) -> bool {
    matches!(builtin, "analytics-q3" | "analytics-q4")
}
