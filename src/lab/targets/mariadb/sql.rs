//! The lab's work on any MariaDB/MySQL server, over SQL alone, in MySQL's terms: databases
//! instead of template copies (a run's pristine copy is `CREATE TABLE … LIKE` + `INSERT …
//! SELECT` per table, the routines re-created from `SHOW CREATE`), `ANALYZE TABLE` for VACUUM
//! ANALYZE, a dirty-page flush for CHECKPOINT, `SHOW GLOBAL VARIABLES` for pg_settings. A
//! managed server and one reached by URL both work through this.

use std::time::{Duration, Instant};

use stampede_base::error::Failure;
use stampede_conn::MysqlSpec;
use stampede_control::mysql::ControlSession;

/// How a run's pristine copy is made, as reports name it.
pub const RESTORE_METHOD: &str = "CREATE TABLE … LIKE + INSERT … SELECT (and the routines)";
/// The longest a checkpoint waits for the buffer pool's dirty pages to be written.
const FLUSH_LIMIT: Duration = Duration::from_secs(120);
/// InnoDB's pages a second while a checkpoint flushes: as fast as the disk takes them.
const FLUSH_IO_CAPACITY: u64 = 1_000_000;

/// One MariaDB/MySQL server as the lab's SQL sees it.
#[derive(Clone)]
pub struct MariadbSql {
    /// The control account, without a database.
    pub account: MysqlSpec,
    /// May flush the buffer pool (SET GLOBAL on InnoDB's flushing variables).
    pub checkpoints: bool,
}

impl MariadbSql {
    /// The control account's session on `database`.
    pub fn spec(&self, database: &str) -> MysqlSpec {
        self.account.with_database(database)
    }

    pub fn session(&self) -> Result<ControlSession, Failure> {
        ControlSession::connect(&self.spec(""))
    }

    fn number(&self, sql: &str) -> Result<u64, Failure> {
        number_in(&mut self.session()?, sql)
    }

    fn tables(&self, session: &mut ControlSession, database: &str) -> Result<Vec<String>, Failure> {
        let rows = session.rows(&format!(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{database}' AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME"
        ))?;
        Ok(rows
            .rows
            .into_iter()
            .filter_map(|row| row.into_iter().next().flatten())
            .collect())
    }

    /// The CREATE statements of `database`'s stored procedures and functions (TPROC-C's
    /// transactions are procedures), as the server shows them.
    fn routines(
        &self,
        session: &mut ControlSession,
        database: &str,
    ) -> Result<Vec<String>, Failure> {
        let rows = session.rows(&format!(
            "SELECT ROUTINE_TYPE, ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = '{database}' ORDER BY ROUTINE_NAME"
        ))?;
        let mut statements = Vec::new();
        for row in rows.rows {
            let (Some(Some(kind)), Some(Some(name))) = (row.first(), row.get(1)) else {
                continue;
            };
            let shown = session.rows(&format!("SHOW CREATE {kind} `{database}`.`{name}`"))?;
            // Name, sql_mode, then the statement.
            let statement = shown
                .rows
                .into_iter()
                .next()
                .and_then(|row| row.into_iter().nth(2).flatten());
            statements.push(statement.ok_or_else(|| {
                Failure::run(format!(
                    "the server does not show {database}.{name}'s definition to stampede's user"
                ))
            })?);
        }
        Ok(statements)
    }

    fn analyze(&self, session: &mut ControlSession, database: &str) -> Result<(), Failure> {
        for table in self.tables(session, database)? {
            session.execute(&format!("ANALYZE TABLE `{database}`.`{table}`"))?;
        }
        Ok(())
    }

    pub fn has_dataset(&self, database: &str) -> bool {
        self.number(&format!(
            "SELECT COUNT(*) FROM `{database}`.stampede_dataset"
        ))
        .is_ok_and(|n| n == 1)
    }

    pub fn create_empty(&self, database: &str) -> Result<(), Failure> {
        let mut session = self.session()?;
        session.execute(&format!("DROP DATABASE IF EXISTS `{database}`"))?;
        session.execute(&format!("CREATE DATABASE `{database}`"))
    }

    pub fn seal_dataset(&self, database: &str) -> Result<(), Failure> {
        let mut session = self.session()?;
        self.analyze(&mut session, database)?;
        session.execute(&format!(
            "CREATE TABLE `{database}`.stampede_dataset AS SELECT NOW() AS loaded_at"
        ))?;
        drop(session);
        self.checkpoint()
    }

    pub fn copy_database(&self, template: &str, copy: &str) -> Result<(), Failure> {
        self.create_empty(copy)?;
        let mut session = self.session()?;
        for table in self.tables(&mut session, template)? {
            session.execute(&format!(
                "CREATE TABLE `{copy}`.`{table}` LIKE `{template}`.`{table}`"
            ))?;
            session.execute(&format!(
                "INSERT INTO `{copy}`.`{table}` SELECT * FROM `{template}`.`{table}`"
            ))?;
        }
        let routines = self.routines(&mut session, template)?;
        if !routines.is_empty() {
            // A routine is created in the session's database.
            session.execute(&format!("USE `{copy}`"))?;
            for statement in routines {
                session.execute(&statement)?;
            }
        }
        self.analyze(&mut session, copy)
    }

    pub fn drop_database(&self, database: &str) -> Result<(), Failure> {
        self.session()?
            .execute(&format!("DROP DATABASE IF EXISTS `{database}`"))
    }

    /// InnoDB has no CHECKPOINT: every dirty page is flushed by lowering the dirty-page
    /// limit to zero until none is left, then the limit is put back. Above that limit the page
    /// cleaner writes `innodb_io_capacity` pages a second (200 by default: a one-warehouse
    /// TPROC-C copy took half a minute), so the capacity is raised while it flushes and put
    /// back too.
    pub fn checkpoint(&self) -> Result<(), Failure> {
        if !self.checkpoints {
            return Ok(());
        }
        let mut session = self.session()?;
        let mut saved = Vec::new();
        for name in FLUSH_SETTINGS {
            saved.push(first_value(
                &mut session,
                &format!("SELECT @@GLOBAL.{name}"),
            )?);
        }
        let flushed = flush_dirty_pages(&mut session);
        // Put back whatever happened while flushing; the capacity before its maximum, which it
        // may not exceed.
        for (name, value) in FLUSH_SETTINGS.iter().zip(&saved) {
            session.execute(&format!("SET GLOBAL {name} = {value}"))?;
        }
        flushed
    }

    pub fn database_bytes(&self, database: &str) -> Result<u64, Failure> {
        self.number(&format!(
            "SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{database}'"
        ))
    }

    pub fn shared_buffers_bytes(&self) -> Result<u64, Failure> {
        self.number("SELECT @@GLOBAL.innodb_buffer_pool_size")
    }

    pub fn alive(&self) -> bool {
        self.session()
            .and_then(|mut session| session.execute("SELECT 1"))
            .is_ok()
    }

    /// `VERSION()`.
    pub fn version(&self) -> Result<String, Failure> {
        first_value(&mut self.session()?, "SELECT VERSION()")
    }

    /// Every global variable, as `SHOW GLOBAL VARIABLES` lists them.
    pub fn variables(&self) -> Result<Vec<(String, String)>, Failure> {
        self.session()?.pairs("SHOW GLOBAL VARIABLES")
    }
}

/// The variables a checkpoint changes, in the order they are put back.
const FLUSH_SETTINGS: [&str; 3] = [
    "innodb_max_dirty_pages_pct",
    "innodb_io_capacity",
    "innodb_io_capacity_max",
];

/// Writes every dirty page: the capacity raised (its maximum first) and the dirty-page limit at
/// zero until none is left, or `FLUSH_LIMIT` has passed.
fn flush_dirty_pages(session: &mut ControlSession) -> Result<(), Failure> {
    session.execute("FLUSH TABLES")?;
    session.execute(&format!(
        "SET GLOBAL innodb_io_capacity_max = {FLUSH_IO_CAPACITY}"
    ))?;
    session.execute(&format!(
        "SET GLOBAL innodb_io_capacity = {FLUSH_IO_CAPACITY}"
    ))?;
    session.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")?;
    let started = Instant::now();
    let dirty = "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_DIRTY'";
    // A server without the counter (MySQL 5.7+ moved GLOBAL_STATUS) is not waited for.
    while number_in(session, dirty).is_ok_and(|pages| pages > 0) && started.elapsed() < FLUSH_LIMIT
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// The first column of the first row `sql` returns, as the server shows it.
fn first_value(session: &mut ControlSession, sql: &str) -> Result<String, Failure> {
    session
        .rows(sql)?
        .rows
        .into_iter()
        .next()
        .and_then(|row| row.into_iter().next().flatten())
        .ok_or_else(|| Failure::run(format!("{sql} returned no value")))
}

/// `first_value` as a whole number (the server may show it as a decimal).
fn number_in(session: &mut ControlSession, sql: &str) -> Result<u64, Failure> {
    let text = first_value(session, sql)?;
    text.parse::<f64>()
        .map(|n| n as u64)
        .map_err(|_| Failure::run(format!("{sql} returned {text:?}")))
}
