//! A capture's starting data restored into a lab's dataset database from the dump the spec
//! names: pg_dump's plain SQL read here (its statements as batches, its COPY blocks through
//! COPY FROM STDIN), and its custom and directory formats turned into that script by
//! pg_restore. Roles the dump gives objects to are created first, so that a dump taken with
//! owners restores on a lab's server as it is.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use bytes::Bytes;
use futures_util::SinkExt;
use tokio_postgres::Client;

use stampede_base::error::Failure;
use stampede_control::postgres::sql_error;

/// The dump's kind, from its first bytes (or its being a directory).
#[derive(Debug, PartialEq, Eq)]
pub enum DumpFormat {
    Plain,
    /// pg_dump -Fc, or -Fd (a directory with toc.dat).
    Archive,
}

pub fn format_of(path: &Path) -> Result<DumpFormat, Failure> {
    if path.is_dir() {
        return match path.join("toc.dat").is_file() {
            true => Ok(DumpFormat::Archive),
            false => Err(Failure::input(format!(
                "{}: a directory without toc.dat is not a pg_dump -Fd dump",
                path.display()
            ))),
        };
    }
    let mut magic = [0u8; 5];
    let mut file = std::fs::File::open(path)
        .map_err(|e| Failure::input(format!("could not open {}: {e}", path.display())))?;
    let read = file.read(&mut magic).unwrap_or(0);
    Ok(match &magic[..read] {
        b"PGDMP" => DumpFormat::Archive,
        _ => DumpFormat::Plain,
    })
}

/// Restores `dump` into the database `client` is connected to.
pub async fn restore(client: &Client, dump: &Path, pg_restore: &Path) -> Result<(), Failure> {
    let script = script_lines(dump, pg_restore)?;
    let (lines, child) = script.open()?;
    let roles = roles_named(lines);
    script.finish(child)?;
    create_roles(client, &roles?).await?;
    let (lines, child) = script.open()?;
    // The script is dropped when run_script returns, so a pg_restore it stopped reading
    // ends (on a broken pipe) rather than blocking the wait; the restore's own error wins.
    let restored = run_script(client, lines).await;
    let finished = script.finish(child);
    restored.and(finished)
}

/// Where the plain script comes from: the file, or pg_restore's output (run twice: once to
/// find the roles, once to restore).
struct Script<'a> {
    dump: &'a Path,
    pg_restore: Option<&'a Path>,
}

fn script_lines<'a>(dump: &'a Path, pg_restore: &'a Path) -> Result<Script<'a>, Failure> {
    Ok(Script {
        dump,
        pg_restore: (format_of(dump)? == DumpFormat::Archive).then_some(pg_restore),
    })
}

impl Script<'_> {
    fn open(&self) -> Result<(Box<dyn BufRead + Send>, Option<Child>), Failure> {
        let Some(pg_restore) = self.pg_restore else {
            let file = std::fs::File::open(self.dump).map_err(|e| {
                Failure::input(format!("could not open {}: {e}", self.dump.display()))
            })?;
            return Ok((Box::new(BufReader::new(file)), None));
        };
        let mut child = Command::new(pg_restore)
            .args(["-f", "-"])
            .arg(self.dump)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Failure::run(format!("could not run {}: {e}", pg_restore.display())))?;
        let stdout = child.stdout.take().expect("spawned with this stream piped");
        Ok((Box::new(BufReader::new(stdout)), Some(child)))
    }

    /// pg_restore's exit, once its script was read (or given up on).
    fn finish(&self, child: Option<Child>) -> Result<(), Failure> {
        let Some(mut child) = child else {
            return Ok(());
        };
        let status = child
            .wait()
            .map_err(|e| Failure::run(format!("waiting for pg_restore: {e}")))?;
        match status.success() {
            true => Ok(()),
            false => Err(Failure::run(format!(
                "pg_restore -f - {} failed ({status})",
                self.dump.display()
            ))),
        }
    }
}

/// The roles `ALTER … OWNER TO` and `GRANT … TO` lines of the script name.
fn roles_named(lines: Box<dyn BufRead + Send>) -> Result<BTreeSet<String>, Failure> {
    // Every line is read, so that pg_restore writing them is never left blocked.
    let mut roles = BTreeSet::new();
    for line in lines.lines() {
        let line = line.map_err(|e| Failure::run(format!("reading the dump: {e}")))?;
        let owner = line
            .starts_with("ALTER ")
            .then(|| line.rsplit_once(" OWNER TO "))
            .flatten();
        let grantee = line
            .starts_with("GRANT ")
            .then(|| line.rsplit_once(" TO "))
            .flatten();
        if let Some((_, role)) = owner.or(grantee) {
            let role = role.trim_end_matches(';').trim().trim_matches('"');
            if !role.is_empty() && !role.eq_ignore_ascii_case("public") {
                roles.insert(role.to_string());
            }
        }
    }
    Ok(roles)
}

async fn create_roles(client: &Client, roles: &BTreeSet<String>) -> Result<(), Failure> {
    for role in roles {
        let quoted = role.replace('"', "\"\"");
        let literal = role.replace('\'', "''");
        let statement = format!(
            "DO $stampede$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{literal}') THEN CREATE ROLE \"{quoted}\"; END IF; END $stampede$"
        );
        client
            .batch_execute(&statement)
            .await
            .map_err(|e| sql_error("creating the dump's roles", e))?;
    }
    Ok(())
}

/// The script's SQL in batches between its COPY blocks, each COPY's rows sent as they are.
async fn run_script(client: &Client, lines: Box<dyn BufRead + Send>) -> Result<(), Failure> {
    let mut batch = String::new();
    let mut lines = lines.lines();
    while let Some(line) = lines.next() {
        let line = line.map_err(|e| Failure::run(format!("reading the dump: {e}")))?;
        if let Some(meta) = line.strip_prefix('\\') {
            meta_command(meta)?;
            continue;
        }
        if line.starts_with("COPY ") && line.ends_with(" FROM stdin;") {
            execute(client, &std::mem::take(&mut batch)).await?;
            copy_block(client, &line, &mut lines).await?;
            continue;
        }
        batch.push_str(&line);
        batch.push('\n');
    }
    execute(client, &batch).await
}

/// psql's commands in a dump: `\restrict`/`\unrestrict` (pg_dump 17.6 and later) guard the
/// script against psql meta-commands and mean nothing here; `\connect` would leave the
/// database being restored.
fn meta_command(meta: &str) -> Result<(), Failure> {
    let name = meta.split_whitespace().next().unwrap_or("");
    match name {
        "restrict" | "unrestrict" => Ok(()),
        "connect" | "c" => Err(Failure::input(
            "the dump connects to another database (\\connect): give one database's dump (pg_dump, not pg_dumpall)",
        )),
        other => Err(Failure::input(format!(
            "the dump has a psql command \\{other}, which a restore cannot run"
        ))),
    }
}

async fn execute(client: &Client, batch: &str) -> Result<(), Failure> {
    if batch.trim().is_empty() {
        return Ok(());
    }
    client
        .batch_execute(batch)
        .await
        .map_err(|e| sql_error("restoring the dump", e))
}

async fn copy_block(
    client: &Client,
    statement: &str,
    lines: &mut std::io::Lines<Box<dyn BufRead + Send>>,
) -> Result<(), Failure> {
    let statement = statement.trim_end_matches(';');
    let sink = client
        .copy_in::<_, Bytes>(statement)
        .await
        .map_err(|e| sql_error(statement, e))?;
    let mut sink = Box::pin(sink);
    let mut chunk = Vec::with_capacity(1 << 20);
    for line in lines.by_ref() {
        let line = line.map_err(|e| Failure::run(format!("reading the dump: {e}")))?;
        if line == "\\." {
            break;
        }
        chunk.extend_from_slice(line.as_bytes());
        chunk.push(b'\n');
        if chunk.len() >= 1 << 20 {
            let full = std::mem::replace(&mut chunk, Vec::with_capacity(1 << 20));
            sink.send(Bytes::from(full))
                .await
                .map_err(|e| sql_error(statement, e))?;
        }
    }
    if !chunk.is_empty() {
        sink.send(Bytes::from(chunk))
            .await
            .map_err(|e| sql_error(statement, e))?;
    }
    sink.as_mut()
        .finish()
        .await
        .map_err(|e| sql_error(statement, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_come_from_owner_and_grant_lines() {
        let script = "ALTER TABLE public.t OWNER TO app;\nGRANT SELECT ON TABLE public.t TO \"Report Reader\";\nGRANT ALL ON SCHEMA public TO PUBLIC;\nSELECT 1;\n";
        let roles = roles_named(Box::new(std::io::Cursor::new(script.to_string()))).unwrap();
        assert_eq!(
            roles.into_iter().collect::<Vec<_>>(),
            ["Report Reader", "app"]
        );
    }

    #[test]
    fn psql_commands_other_than_restrict_are_refused() {
        assert!(meta_command("restrict abc").is_ok());
        assert!(meta_command("connect other")
            .unwrap_err()
            .into_message()
            .contains("pg_dumpall"));
    }
}
