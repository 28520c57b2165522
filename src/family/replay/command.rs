//! `stampede capture` and `stampede replay`.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::admin;
use super::args::{CaptureArgs, ReplayArgs};
use super::capture::{capture, problem_lines, CaptureOptions, LogFile};
use super::log::{self, LogFormat};
use super::logging::{capture_live, LoggedText};
use super::play::{self, check, Plan};
use super::replay_file::ReplayFile;
use super::report::ReplayReport;
use super::summary;
use crate::family::common::connection::connection;
use crate::live::sampler::{Described, Sampler, Tally};
use stampede_base::error::{CommandResult, Failure};

pub fn capture_command(args: &CaptureArgs) -> CommandResult {
    if !(0.0..=100.0).contains(&args.max_unusable) {
        return Err(Failure::input("--max-unusable: a percentage from 0 to 100"));
    }
    let format = match &args.format {
        Some(name) => Some(LogFormat::parse(name).ok_or_else(|| {
            Failure::input(format!("--format {name}: one of stderr, csvlog, jsonlog"))
        })?),
        None => None,
    };
    let texts = match (args.seconds, args.logs.is_empty()) {
        (Some(_), false) => {
            return Err(Failure::input(
                "give log files or --seconds (to log on a server), not both",
            ))
        }
        (None, true) => {
            return Err(Failure::input(
                "give the server's log files, or --seconds N to switch statement logging on for N seconds on the server the connection flags name",
            ))
        }
        (Some(seconds), true) => live_texts(args, seconds)?,
        (None, false) => file_texts(&args.logs, format)?,
    };
    let format = texts.first().map_or(LogFormat::Stderr, |t| t.format);
    if texts.iter().any(|t| t.format != format) {
        return Err(Failure::input(
            "the log files are of different formats: capture one format at a time",
        ));
    }
    let logs = texts
        .into_iter()
        .map(|t| LogFile {
            log: log::read(&t.text, t.format),
            name: t.name,
        })
        .collect();
    let options = CaptureOptions {
        database: args.database.clone(),
        max_unusable_pct: args.max_unusable,
    };
    let captured = capture(logs, format, &options)?;
    captured.file.write(&args.output)?;
    if !captured.problems.is_empty() {
        eprintln!(
            "capture: {} of {} messages could not be used:\n{}",
            captured.problems.len(),
            captured.messages,
            problem_lines(&captured.problems)
        );
    }
    println!("wrote {}", args.output.display());
    print!("{}", summary::render(&captured.file));
    Ok(())
}

fn file_texts(
    paths: &[std::path::PathBuf],
    format: Option<LogFormat>,
) -> Result<Vec<LoggedText>, Failure> {
    paths
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path)
                .map_err(|e| Failure::input(format!("could not read {}: {e}", path.display())))?;
            Ok(LoggedText {
                name: path.display().to_string(),
                text: String::from_utf8_lossy(&bytes).into_owned(),
                format: format.unwrap_or_else(|| LogFormat::of_path(path)),
            })
        })
        .collect()
}

fn live_texts(args: &CaptureArgs, seconds: u64) -> Result<Vec<LoggedText>, Failure> {
    let conn = connection(&args.connection)?;
    let stop = stampede_base::signals::watch_signals();
    capture_live(&conn, seconds, &stop, &mut |line| eprintln!("{line}"))
}

pub fn replay_command(args: &ReplayArgs) -> CommandResult {
    if !args.speed.is_finite() || args.speed < 0.0 {
        return Err(Failure::input(format!(
            "--speed {}: 1 replays as captured, 2 twice as fast, 0 as fast as possible",
            args.speed
        )));
    }
    let file = ReplayFile::read(&args.file)?;
    admin::refuse_admin(&file, args.allow_admin, "told --allow-admin")?;
    let conn = connection(&args.connection)?;
    let metrics = args.metrics.start(crate::live::command_labels("replay"))?;
    let stop = stampede_base::signals::watch_signals();
    let mut plan = Plan::new(file, args.speed, conn, Arc::clone(&stop));
    let tally = Tally::new(1);
    plan.live = metrics.as_ref().map(|_| tally.clone());
    let plan = Arc::new(plan);
    stampede_conn::control_runtime().block_on(check::relations_exist(&plan))?;
    let threads = args.jobs.unwrap_or_else(stampede_base::cpu::cores).max(1);
    let sampler = metrics.as_ref().map(|m| {
        let described = Described {
            scripts: vec!["replay".into()],
            clients: plan.file.sessions.len(),
            scheduled: args.speed > 0.0,
            rows: 0,
        };
        Sampler::start(m.feed(None), described, tally.clone())
    });
    let replayed = play::replay(Arc::clone(&plan), threads);
    if let Some(sampler) = sampler {
        sampler.finish(replayed.is_err());
    }
    let replayed = replayed?;
    let report = ReplayReport::new(&plan, &replayed);
    print!("{}", report.render());
    if let Some(path) = &args.json {
        write_json(path, &report)?;
    }
    if stop.load(Ordering::Relaxed) {
        return Err(Failure::interrupted(
            "stopped by a signal: the sessions ended between transactions",
        ));
    }
    Ok(())
}

fn write_json(path: &Path, report: &ReplayReport) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(report).expect("a report serializes");
    std::fs::write(path, text + "\n")
        .map_err(|e| Failure::run(format!("could not write {}: {e}", path.display())))
}
