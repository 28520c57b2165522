//! dbSTRESS (Dimitri Kravtchuk's benchmark, study 003) on PostgreSQL and MariaDB/MySQL: its five
//! tables per object set, generated on the server, and its transactions as one driver script
//! per set. Both engines get the same rows and the same statements; only casts and the row
//! generator differ.
//!
//! What is known of the original: the tables and statements of its sysbench port
//! (`dbSTRESS-common.lua`, MySQL-only DDL); see docs/dbstress.md for what this implementation chose
//! where the original kit is not public.

use crate::family::common::options::BadValue;
use stampede_conn::Engine;

/// The marker `prepare` leaves, with the object count and the number of sets.
pub const MARKER: &str = "dbstress_info";

/// History rows per object (the port's N_HISTORY).
pub const HISTORY_PER_OBJECT: i64 = 20;

/// The five tables of set `set`, in creation order, with the port's column types.
pub fn create_tables(set: u32) -> [String; 5] {
    [
        format!("CREATE TABLE zone{set} (ref char(2) NOT NULL, name char(40) NOT NULL)"),
        format!(
            "CREATE TABLE section{set} (ref char(2) NOT NULL, ref_zone char(2) NOT NULL, name char(40) NOT NULL)"
        ),
        format!(
            "CREATE TABLE stat{set} (ref char(3) NOT NULL, name char(40) NOT NULL, numb integer NOT NULL)"
        ),
        format!(
            "CREATE TABLE object{set} (ref char(10) NOT NULL, ref_section char(2) NOT NULL, name char(30) NOT NULL, create_date char(12) NOT NULL, note char(100) NOT NULL)"
        ),
        format!(
            "CREATE TABLE history{set} (ref_object char(10) NOT NULL, horder integer NOT NULL, ref_stat char(3) NOT NULL, begin_date char(12) NOT NULL, end_date char(12) NOT NULL, note char(100) NOT NULL)"
        ),
    ]
}

pub fn table_names(set: u32) -> [String; 5] {
    ["zone", "section", "stat", "object", "history"].map(|t| format!("{t}{set}"))
}

/// ZONE (10), SECTION (100, ten per zone) and STAT (1,000): refs are the row numbers.
pub fn load_reference_tables(set: u32) -> [String; 3] {
    [
        format!("INSERT INTO zone{set} SELECT z::text, 'Zone ' || z FROM generate_series(0, 9) z"),
        format!(
            "INSERT INTO section{set} SELECT s::text, (s / 10)::text, 'Section ' || s FROM generate_series(0, 99) s"
        ),
        format!(
            "INSERT INTO stat{set} SELECT s::text, 'Stat ' || s, s FROM generate_series(0, 999) s"
        ),
    ]
}

/// OBJECT rows `first..=last` and their 20 HISTORY rows each. Refs are the object numbers;
/// sections, stats and dates are spread by the numbers, notes are md5 text.
pub fn load_objects(set: u32, first: i64, last: i64) -> [String; 2] {
    [
        format!(
            "INSERT INTO object{set} SELECT o::text, (o % 100)::text, 'Object ' || o, \
             to_char(date '2000-01-01' + (o % 3650)::integer, 'YYYYMMDD') || '1200', \
             rpad(md5(o::text), 100, md5((o + 1)::text)) FROM generate_series({first}, {last}) o"
        ),
        format!(
            "INSERT INTO history{set} SELECT o::text, h, ((o * 31 + h * 17) % 1000)::text, \
             to_char(date '2000-01-01' + ((o + h) % 3650)::integer, 'YYYYMMDD') || '0800', \
             to_char(date '2000-01-01' + ((o + h) % 3650)::integer + 30, 'YYYYMMDD') || '1800', \
             rpad(md5((o * {HISTORY_PER_OBJECT} + h)::text), 100, md5(h::text)) \
             FROM generate_series({first}, {last}) o, generate_series(1, {HISTORY_PER_OBJECT}) h"
        ),
    ]
}

/// `WITH RECURSIVE name(n)` counting `first..=last`: MariaDB/MySQL's generate_series (MySQL caps
/// the recursion at 1,000 rows by default, so ranges stay below that).
fn numbers_mysql(name: &str, first: i64, last: i64) -> String {
    format!("{name}(n) AS (SELECT {first} UNION ALL SELECT n + 1 FROM {name} WHERE n < {last})")
}

/// `load_reference_tables` on MariaDB/MySQL, the same rows.
pub fn load_reference_tables_mysql(set: u32) -> [String; 3] {
    [
        format!(
            "INSERT INTO zone{set} WITH RECURSIVE {} SELECT n, CONCAT('Zone ', n) FROM z",
            numbers_mysql("z", 0, 9)
        ),
        format!(
            "INSERT INTO section{set} WITH RECURSIVE {} SELECT n, n DIV 10, CONCAT('Section ', n) FROM s",
            numbers_mysql("s", 0, 99)
        ),
        format!(
            "INSERT INTO stat{set} WITH RECURSIVE {} SELECT n, CONCAT('Stat ', n), n FROM s",
            numbers_mysql("s", 0, 999)
        ),
    ]
}

/// `load_objects` on MariaDB/MySQL, the same rows.
pub fn load_objects_mysql(set: u32, first: i64, last: i64) -> [String; 2] {
    let objects = numbers_mysql("o", first, last);
    let day = |offset: &str| {
        format!("DATE_FORMAT(DATE '2000-01-01' + INTERVAL ({offset}) DAY, '%Y%m%d')")
    };
    [
        format!(
            "INSERT INTO object{set} WITH RECURSIVE {objects} SELECT n, n % 100, CONCAT('Object ', n), \
             CONCAT({}, '1200'), RPAD(MD5(n), 100, MD5(n + 1)) FROM o",
            day("n % 3650")
        ),
        format!(
            "INSERT INTO history{set} WITH RECURSIVE {objects}, {} \
             SELECT o.n, h.n, (o.n * 31 + h.n * 17) % 1000, CONCAT({}, '0800'), CONCAT({}, '1800'), \
             RPAD(MD5(o.n * {HISTORY_PER_OBJECT} + h.n), 100, MD5(h.n)) FROM o, h",
            numbers_mysql("h", 1, HISTORY_PER_OBJECT),
            day("(o.n + h.n) % 3650"),
            day("(o.n + h.n) % 3650 + 30")
        ),
    ]
}

/// Objects per generated range on MariaDB/MySQL (below the recursion cap).
pub const MYSQL_OBJECTS_PER_INSERT: i64 = 500;

/// The indexes: unique on the refs, HISTORY (ref_object, horder), unique only with `unique`
/// (the port's `--hpk`).
pub fn indexes(set: u32, unique_history: bool) -> [String; 5] {
    let history = if unique_history {
        "UNIQUE INDEX"
    } else {
        "INDEX"
    };
    [
        format!("CREATE UNIQUE INDEX zone{set}_ref ON zone{set} (ref)"),
        format!("CREATE UNIQUE INDEX section{set}_ref ON section{set} (ref)"),
        format!("CREATE UNIQUE INDEX stat{set}_ref ON stat{set} (ref)"),
        format!("CREATE UNIQUE INDEX object{set}_ref ON object{set} (ref)"),
        format!("CREATE {history} history{set}_object_order ON history{set} (ref_object, horder)"),
    ]
}

/// Read-only or read+write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadOnly,
    ReadWrite,
}

impl Mode {
    pub fn parse(text: &str) -> Result<Mode, BadValue> {
        match text {
            "ro" => Ok(Mode::ReadOnly),
            "rw" => Ok(Mode::ReadWrite),
            _ => Err(BadValue::new(
                "--mode",
                text,
                "the modes are ro (read-only) and rw (read+write)",
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadOnly => "ro",
            Mode::ReadWrite => "rw",
        }
    }
}

/// What a run's transactions do.
#[derive(Debug, Clone, Copy)]
pub struct TransactionShape {
    pub mode: Mode,
    /// RW: the writes run in every `rw_ratio`-th transaction of a session.
    pub rw_ratio: u32,
    /// `SELECT … FOR UPDATE` in the reads.
    pub for_update: bool,
    /// Every statement of a transaction works on one object (else each draws its own).
    pub same_ref: bool,
    /// Each session draws objects from its own slice of them (no artificial lock waits).
    pub anti_dead: bool,
    pub sessions: u32,
    pub objects: i64,
}

/// The statements' names, in the script's order.
pub const STATEMENTS: [&str; 5] = ["SEL1", "SEL2", "UPDATE", "DELETE", "INSERT"];

/// Set `set`'s script: SEL1 and SEL2, then in RW every `rw_ratio`-th transaction of a session the
/// UPDATE of a history row and the DELETE and INSERT of another; the session counts its
/// transactions in `:txn_number` (0 at the start).
///
/// The CHAR keys are compared with text: on PostgreSQL by a `::bpchar` cast, on MariaDB/MySQL
/// by drawing the object numbers as text, which a prepared statement binds as a string (a CHAR
/// column compared with a number is converted row by row, and its index is not used).
pub fn script(set: u32, shape: &TransactionShape, engine: Engine) -> String {
    let lock = if shape.for_update { " FOR UPDATE" } else { "" };
    let mut text = object_draws(shape, engine);
    let (sel1, sel2, update, replace) = if shape.same_ref {
        ("oref", "oref", "oref", "oref")
    } else {
        ("oref1", "oref2", "oref3", "oref4")
    };
    let write = shape.mode == Mode::ReadWrite;
    if write {
        text.push_str("BEGIN;\n");
    }
    text.push_str(&format!(
        "SELECT S.REF, S.NAME, Z.REF, Z.NAME, O.NAME, O.CREATE_DATE, O.NOTE FROM object{set} O, section{set} S, zone{set} Z \
         WHERE S.REF = O.REF_SECTION AND Z.REF = S.REF_ZONE AND O.REF = :{sel1}::bpchar{lock};\n\
         SELECT S.REF, S.NAME, H.HORDER, H.BEGIN_DATE, H.END_DATE, H.NOTE FROM history{set} H, stat{set} S \
         WHERE S.REF = H.REF_STAT AND H.REF_OBJECT = :{sel2}::bpchar ORDER BY H.HORDER{lock};\n"
    ));
    if write {
        let every = shape.rw_ratio.max(1);
        text.push_str(&format!(
            "\\if :txn_number % {every} = {last}\n\
             \\set horder random(1, {HISTORY_PER_OBJECT})\n\\set horder2 random(1, {HISTORY_PER_OBJECT})\n\
             \\set stat random(0, 999)\n\\set begin_date random(200001010000, 209912312359)\n\
             \\set end_date random(200001010000, 209912312359)\n\\set note random(1, 999999999)\n\
             UPDATE history{set} SET REF_STAT = :stat::bpchar, BEGIN_DATE = :begin_date::bpchar, \
             END_DATE = :end_date::bpchar, NOTE = :note::bpchar WHERE REF_OBJECT = :{update}::bpchar AND HORDER = :horder;\n\
             DELETE FROM history{set} WHERE REF_OBJECT = :{replace}::bpchar AND HORDER = :horder2;\n\
             INSERT INTO history{set} VALUES (:{replace}::bpchar, :horder2, :stat::bpchar, :begin_date::bpchar, \
             :end_date::bpchar, :note::bpchar);\n\
             \\endif\n\
             COMMIT;\n",
            last = every - 1
        ));
    }
    text.push_str("\\set txn_number :txn_number + 1\n");
    match engine {
        Engine::Postgres => text,
        Engine::Mysql => text.replace("::bpchar", ""),
    }
}

/// The object numbers a transaction works on: uniform over all objects, or over the session's
/// slice of them with `anti_dead`.
fn object_draws(shape: &TransactionShape, engine: Engine) -> String {
    let (low, high) = if shape.anti_dead {
        let slice = (shape.objects / i64::from(shape.sessions.max(1))).max(1);
        (
            format!(
                "(:client_id % {sessions}) * {slice}",
                sessions = shape.sessions.max(1)
            ),
            format!(
                "least((:client_id % {sessions} + 1) * {slice}, {objects}) - 1",
                sessions = shape.sessions.max(1),
                objects = shape.objects
            ),
        )
    } else {
        ("0".to_string(), format!("{}", shape.objects - 1))
    };
    // Only the objects the transaction's statements read or write: a draw (and on MariaDB
    // its text) costs as much as a statement's parsing on the client.
    let names: &[&str] = match (shape.same_ref, shape.mode) {
        (true, _) => &["oref"],
        (false, Mode::ReadOnly) => &["oref1", "oref2"],
        (false, Mode::ReadWrite) => &["oref1", "oref2", "oref3", "oref4"],
    };
    names
        .iter()
        .map(|name| match engine {
            Engine::Postgres => format!("\\set {name} random({low}, {high})\n"),
            Engine::Mysql => format!("\\set {name} text(random({low}, {high}))\n"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_script::{parse_script, VarTable};

    #[test]
    fn scripts_parse_in_every_shape() {
        for mode in [Mode::ReadOnly, Mode::ReadWrite] {
            for (for_update, same_ref, anti_dead) in [(false, false, false), (true, true, true)] {
                let shape = TransactionShape {
                    mode,
                    rw_ratio: 5,
                    for_update,
                    same_ref,
                    anti_dead,
                    sessions: 4,
                    objects: 1000,
                };
                for engine in [Engine::Postgres, Engine::Mysql] {
                    let text = script(1, &shape, engine);
                    parse_script("dbstress", "dbstress", &text, &mut VarTable::default())
                        .unwrap_or_else(|e| panic!("{e}\n{text}"));
                    assert_eq!(text.contains("::bpchar"), engine == Engine::Postgres);
                }
            }
        }
    }
}
