//! The results database schema, as numbered migrations. A database records the highest
//! migration applied in `schema_version`; opening it applies the rest in order.

pub const MIGRATIONS: &[&str] = &[
    // 1: labs, targets with provenance and settings, cells, runs, per-second series.
    r#"
CREATE TABLE labs (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    spec        TEXT NOT NULL,          -- the TOML text the lab was started with
    seed        INTEGER NOT NULL,       -- of the shuffled run order
    created_unix_s REAL NOT NULL
);
CREATE TABLE targets (
    id              INTEGER PRIMARY KEY,
    lab_id          INTEGER NOT NULL REFERENCES labs(id),
    name            TEXT NOT NULL,
    postgres        TEXT NOT NULL,      -- as the spec gives it: system, a bin/ path, a version
    binary_source   TEXT,               -- where the binaries came from
    bin_dir         TEXT,
    server_version  TEXT,               -- SELECT version()
    pg_config       TEXT,               -- pg_config output: configure flags, CFLAGS
    profile         TEXT NOT NULL,
    restore_method  TEXT,               -- how write runs get pristine data
    UNIQUE (lab_id, name)
);
CREATE TABLE target_settings (
    target_id   INTEGER NOT NULL REFERENCES targets(id),
    name        TEXT NOT NULL,
    setting     TEXT,
    unit        TEXT,
    source      TEXT,                   -- pg_settings.source: default, configuration file, ...
    PRIMARY KEY (target_id, name)
);
CREATE TABLE cells (
    id          INTEGER PRIMARY KEY,
    lab_id      INTEGER NOT NULL REFERENCES labs(id),
    key         TEXT NOT NULL,          -- target/workload/script/scale/clients
    target      TEXT NOT NULL,
    workload    TEXT NOT NULL,
    script      TEXT NOT NULL,
    scale       TEXT NOT NULL,          -- as specified: a number or a class
    clients     INTEGER NOT NULL,
    UNIQUE (lab_id, key)
);
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    cell_id         INTEGER NOT NULL REFERENCES cells(id),
    repetition      INTEGER NOT NULL,   -- 0-based
    position        INTEGER NOT NULL,   -- place in the lab's run order
    status          TEXT NOT NULL CHECK (status IN ('completed', 'failed', 'interrupted')),
    error           TEXT,               -- with the server log's tail when the server failed
    started_unix_s  REAL NOT NULL,
    ended_unix_s    REAL NOT NULL,
    resolved_scale  INTEGER,            -- the workload's scale factor used
    duration_s      REAL,               -- measured window, warmup excluded
    transactions    INTEGER,
    failures        INTEGER,
    tps             REAL,
    latency_avg_ms  REAL,
    latency_stddev_ms REAL,
    p50_ms REAL, p90_ms REAL, p95_ms REAL, p99_ms REAL, p999_ms REAL, max_ms REAL,
    client_cpu_us_per_txn REAL,
    overhead_s      REAL                -- lab time beyond warmup and measuring: restore, checkpoint,
                                        -- probes (starting servers and loading data excluded)
);
CREATE INDEX runs_by_cell ON runs (cell_id, repetition);
CREATE TABLE run_series (
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    second      INTEGER NOT NULL,       -- since the end of the warmup
    tps         REAL NOT NULL,
    p50_ms      REAL,
    p99_ms      REAL,
    failed      INTEGER NOT NULL,
    PRIMARY KEY (run_id, second)
);
"#,
    // 2: server-side counters and statements per run.
    r#"
CREATE TABLE run_counters (
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    source      TEXT NOT NULL,          -- e.g. pg_stat_database
    name        TEXT NOT NULL,          -- e.g. xact_commit
    value       REAL NOT NULL,          -- change over the measured window
    PRIMARY KEY (run_id, source, name)
);
CREATE TABLE run_statements (
    run_id          INTEGER NOT NULL REFERENCES runs(id),
    query           TEXT NOT NULL,      -- normalized by pg_stat_statements
    calls           INTEGER NOT NULL,
    mean_ms         REAL,
    stddev_ms       REAL,
    rows            INTEGER,
    shared_blks_hit INTEGER,
    shared_blks_read INTEGER
);
"#,
    // 3: cluster and OS counters per second, wait-event samples, plans, per-transaction view.
    r#"
CREATE TABLE run_counter_series (
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    second      INTEGER NOT NULL,       -- since the start of the measured window
    source      TEXT NOT NULL,          -- e.g. os
    name        TEXT NOT NULL,          -- e.g. cpu_user_s
    value       REAL NOT NULL,          -- change during that second
    PRIMARY KEY (run_id, second, source, name)
);
CREATE TABLE run_wait_events (
    run_id          INTEGER NOT NULL REFERENCES runs(id),
    second          INTEGER NOT NULL,
    wait_event_type TEXT NOT NULL,      -- CPU when an active session waits on nothing
    wait_event      TEXT NOT NULL,
    samples         INTEGER NOT NULL,   -- sessions seen in this state, summed over the ticks
    ticks           INTEGER NOT NULL,   -- samples taken that second (10 per full second)
    PRIMARY KEY (run_id, second, wait_event_type, wait_event)
);
CREATE TABLE plans (
    target_id   INTEGER NOT NULL REFERENCES targets(id),
    dataset     TEXT NOT NULL,          -- the database the statement ran in
    query       TEXT NOT NULL,          -- normalized by pg_stat_statements
    plan        TEXT NOT NULL,          -- EXPLAIN of the generic plan
    PRIMARY KEY (target_id, dataset, query)
);
CREATE VIEW run_counters_per_txn AS
    SELECT c.run_id, c.source, c.name, c.value / r.transactions AS per_txn
    FROM run_counters c JOIN runs r ON r.id = c.run_id
    WHERE r.transactions > 0;
"#,
    // 4: the driver machine's CPUs (to tell when the client was the bottleneck) and each cell's
    // workload family (the group of relative-throughput tables, e.g. point / range / write).
    r#"
ALTER TABLE labs ADD COLUMN client_cores INTEGER;
ALTER TABLE cells ADD COLUMN family TEXT;
"#,
    // 5: a workload's own metrics per run, computed as its anchor tool does (TPROC-C's NOPM and
    // TPM from the server's counters), which reports can compare like tps.
    r#"
CREATE TABLE run_metrics (
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    name        TEXT NOT NULL,          -- e.g. nopm
    value       REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);
"#,
    // 6: a target's server as the spec gives it, of either engine (the spec's `postgres` or
    // `mariadb` value): the column was named for PostgreSQL alone.
    r#"
ALTER TABLE targets RENAME COLUMN postgres TO server;
"#,
    // 7: `runs = "auto"`: why each cell stopped (precision, cap or budget) and after how many
    // rounds; NULL in a lab of fixed runs and while the cell goes on.
    r#"
ALTER TABLE cells ADD COLUMN stopped TEXT;
ALTER TABLE cells ADD COLUMN rounds INTEGER;
"#,
    // 8: `lab calibrate`: per cell of a spec, the noise an A/A lab (the base target against an
    // identical twin) measured, which `lab plan` turns into an auto lab's expected rounds.
    r#"
CREATE TABLE calibrations (
    lab_name    TEXT NOT NULL,          -- the spec's name (the A/A lab is stored beside it)
    workload    TEXT NOT NULL,
    script      TEXT NOT NULL,
    scale       TEXT NOT NULL,
    clients     INTEGER NOT NULL,
    duration_s  REAL NOT NULL,          -- the runs' measured window
    rounds      INTEGER NOT NULL,       -- paired rounds measured
    log_ratio_sd REAL NOT NULL,         -- sd of the rounds' ln(twin / base)
    run_cv      REAL,                   -- the base's runs' coefficient of variation
    measured_unix_s REAL NOT NULL,
    PRIMARY KEY (lab_name, workload, script, scale, clients)
);
"#,
    // 9: histories. Each `lab run` of a spec is an invocation (a lab row; the first keeps the
    // spec's name, later ones "<name> #k"); the invocations of one spec on one machine are a
    // history. Tags name an invocation (a commit, a night).
    r#"
ALTER TABLE labs ADD COLUMN history TEXT;   -- the spec's name (NULL before 9: the lab's name)
ALTER TABLE labs ADD COLUMN machine TEXT;   -- host, cores × CPU model: a series' key
ALTER TABLE labs ADD COLUMN kernel TEXT;
ALTER TABLE labs ADD COLUMN ended_unix_s REAL; -- ran to the end of its plan; a new `run` starts the next
CREATE TABLE lab_tags (
    lab_id      INTEGER NOT NULL REFERENCES labs(id),
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    PRIMARY KEY (lab_id, key)
);
"#,
    // 10: how evenly each run served its clients: transactions per client (least, median,
    // most) and Jain's fairness index; NULL for runs stored before 10 and runs that failed.
    r#"
ALTER TABLE runs ADD COLUMN client_txn_min INTEGER;
ALTER TABLE runs ADD COLUMN client_txn_median REAL;
ALTER TABLE runs ADD COLUMN client_txn_max INTEGER;
ALTER TABLE runs ADD COLUMN fairness_index REAL;
"#,
    // 11: a run whose clients came from pods of a Kubernetes Job (a workload's `pods = N`):
    // each pod's share of the merged run.
    r#"
CREATE TABLE run_pods (
    run_id          INTEGER NOT NULL REFERENCES runs(id),
    pod             INTEGER NOT NULL,   -- its completion index
    clients         INTEGER NOT NULL,
    threads         INTEGER NOT NULL,
    transactions    INTEGER NOT NULL,   -- in the measured window
    client_cpu_s    REAL NOT NULL,
    cpu_busy        REAL NOT NULL,      -- client CPU over the window and the pod's CPUs
    cores           INTEGER NOT NULL,
    clock_offset_ms REAL NOT NULL,      -- against the lab's clock
    start_skew_ms   REAL NOT NULL,      -- of the measured run's start
    PRIMARY KEY (run_id, pod)
);
"#,
    // 12: where each run ran. A lab sharded over a fleet (`lab run --shards N`) runs its cells
    // on several machines: each run names its machine (the node for a pod: its name, CPUs, memory,
    // kernel and the pod's CPU limit) and its shard; a lab row says how many shards it had.
    r#"
CREATE TABLE machines (
    id          INTEGER PRIMARY KEY,
    identity    TEXT NOT NULL UNIQUE,   -- everything below, as one line
    key         TEXT NOT NULL,          -- host, cores × CPU model (and limit): a series' key
    host        TEXT NOT NULL,          -- a pod's node
    cores       INTEGER NOT NULL,
    cpu_model   TEXT NOT NULL,
    memory_bytes INTEGER NOT NULL,
    kernel      TEXT NOT NULL,
    cpu_limit   REAL                    -- a pod's CPU limit in CPUs; NULL when unlimited
);
ALTER TABLE runs ADD COLUMN machine_id INTEGER REFERENCES machines(id);
ALTER TABLE runs ADD COLUMN shard INTEGER;  -- NULL in a lab run on one machine
ALTER TABLE labs ADD COLUMN shards INTEGER;
"#,
    // 13: each setting's compiled-in default and context, so that a report names the defaults
    // that changed between the versions it compares from the servers' own catalogs.
    r#"
ALTER TABLE target_settings ADD COLUMN boot_val TEXT;
ALTER TABLE target_settings ADD COLUMN context TEXT;
"#,
    // 14: a server the lab did not start (a url target's): what identifies it (a PostgreSQL
    // cluster's system identifier), which keys its series in histories and gates, so that a
    // server rebuilt under the same URL starts a new one; and its machine as far as a metrics
    // source tells it. Others may change such a server during a lab: each run reads its whole
    // settings at its start, and keeps those that differ from its target's record (how many
    // it read says it was read at all).
    r#"
ALTER TABLE targets ADD COLUMN server_key TEXT;
ALTER TABLE targets ADD COLUMN server_machine TEXT;
ALTER TABLE runs ADD COLUMN settings_read INTEGER;
CREATE TABLE run_settings (
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    name        TEXT NOT NULL,
    setting     TEXT,                   -- as the run saw it
    recorded    TEXT,                   -- as the target's record holds it
    PRIMARY KEY (run_id, name)
);
"#,
    // 15: runs as they progress. A run being measured has a row in live_runs, its seconds
    // written as they come (batched, at most once a second), so that a page reading the results
    // (`stampede serve`, a sharded lab's shards on one PostgreSQL) shows it live and a lab killed
    // mid-run keeps what it measured. When the run ends its `runs` row replaces this one (in the
    // same transaction); a row left behind is an unfinished run, which no verdict reads. A lab
    // row says how many rounds each cell was planned (fixed runs, or an auto lab's cap).
    r#"
CREATE TABLE live_runs (
    id              INTEGER PRIMARY KEY,
    cell_id         INTEGER NOT NULL REFERENCES cells(id),
    repetition      INTEGER NOT NULL,
    position        INTEGER NOT NULL,
    shard           INTEGER,
    started_unix_s  REAL NOT NULL,
    updated_unix_s  REAL NOT NULL,      -- its last write: a row no longer written is unfinished
    seconds         INTEGER NOT NULL,   -- measured seconds so far
    transactions    INTEGER NOT NULL,   -- committed so far
    failures        INTEGER NOT NULL,
    pods            TEXT,               -- a spread run's committed transactions by pod, "n0,n1,…"
    UNIQUE (cell_id, repetition)
);
CREATE TABLE live_series (
    live_id     INTEGER NOT NULL REFERENCES live_runs(id),
    second      INTEGER NOT NULL,       -- since the end of the warmup
    tps         REAL NOT NULL,
    p50_ms      REAL,
    p99_ms      REAL,
    failed      INTEGER NOT NULL,
    lag_ms      REAL,                   -- mean schedule lag of a rate-limited run
    PRIMARY KEY (live_id, second)
);
ALTER TABLE labs ADD COLUMN planned_rounds INTEGER;
"#,
];
