//! `stampede bisect --source DIR --good REF --bad REF spec.toml`: everything that can be
//! refused is refused before anything is built; then the bisection (`crate::bisect`) with its
//! progress on stderr, and on stdout the step table, the first commit carrying the change and
//! where its HTML report is.

use std::path::{Path, PathBuf};

use super::progress::Progress;
use super::{CommandResult, Failure};
use crate::app::cli::{BisectArgs, ReportArgs};
use crate::bisect::git::{Commit, History};
use crate::bisect::template::Template;
use crate::bisect::{Bisect, BisectEvent, Decision, Finished, Found, Outcome, StepRow};
use crate::lab::executor::LabEvent;
use crate::lab::rounds::RoundMetric;
use crate::report::table;
use crate::server::postgres::build::BuildRequest;
use crate::server::postgres::build_tree::BuildTree;
use stampede_base::duration::human;
use stampede_base::signals::watch_signals;
use stampede_stats::paired::PairedComparison;
use stampede_stats::verdict::Verdict;

pub fn run(args: &BisectArgs) -> CommandResult {
    let metric = RoundMetric::parse(&args.metric)?;
    let template = Template::load(&args.spec, args.source.as_deref())?;
    let cells = template.cells_per_target()?;
    if cells != 1 {
        return Err(Failure::input(format!(
            "{}: bisect follows one cell, and this spec measures {cells} per target: keep one workload, script, scale and client count",
            args.spec.display()
        )));
    }
    let history = History::open(&template.build.source, !args.all_parents)?;
    let good = resolve(&history, "--good", &args.good)?;
    let bad = resolve(&history, "--bad", &args.bad)?;
    if !history.is_ancestor(&good.hash, &bad.hash)? {
        return Err(Failure::input(format!(
            "--good {} ({}) is not an ancestor of --bad {} ({}): bisect needs the change's start before its end in one history",
            args.good,
            good.short(),
            args.bad,
            bad.short()
        )));
    }
    let tree = BuildTree::open(&BuildRequest {
        source: history.dir().to_path_buf(),
        ..template.build.clone()
    })?;
    let bisect = Bisect {
        history: &history,
        template: &template,
        tree,
        good,
        bad,
        metric,
        min_change: template.precision()?,
        resume: args.resume,
        stop: watch_signals(),
    };
    bisect.check_results()?;
    eprintln!(
        "bisect \"{}\": {} ({}) .. {} ({}), decided by {}",
        template.name,
        bisect.good.short(),
        args.good,
        bisect.bad.short(),
        args.bad,
        args.metric
    );
    let mut progress = Progress::on_stderr();
    let finished = bisect
        .run(&mut |event| show(&mut progress, event))
        .map_err(|failure| with_resume_hint(failure, args))?;
    print!("{}", step_table(&finished.rows));
    match &finished.outcome {
        Outcome::NoChange(change) => {
            println!(
                "no change between {} and {} at ±{:.1}%: {} (lab \"{}\"); bisect follows a change whose interval lies beyond the spec's precision",
                bisect.good.short(),
                bisect.bad.short(),
                bisect.min_change * 100.0,
                ratio_text(change.ratio, change.interval),
                finished.ends_lab
            );
            Ok(())
        }
        Outcome::Found(found) => {
            print!("{}", found_text(&finished, found));
            let html = args
                .html
                .clone()
                .unwrap_or_else(|| default_html(&args.spec));
            write_report(&template, found, &args.metric, &html)?;
            println!(
                "report of {} against its parent: {}",
                found.first.short(),
                html.display()
            );
            Ok(())
        }
    }
}

fn resolve(history: &History, flag: &str, reference: &str) -> Result<Commit, Failure> {
    let hash = history
        .resolve(reference)
        .map_err(|e| e.map_message(|m| format!("{flag}: {m}")))?;
    history.check_postgres(&hash, reference)?;
    history.commit(&hash)
}

fn show(progress: &mut Progress, event: BisectEvent<'_>) {
    match event {
        BisectEvent::Note(note) => progress.show(LabEvent::Note(note)),
        BisectEvent::Lab(event) => progress.show(event),
        BisectEvent::Build {
            commit,
            step,
            seconds,
        } => {
            let note = match seconds {
                None => format!("build {}: {}...", commit.short(), step.name()),
                Some(seconds) => format!(
                    "build {}: {} done in {seconds:.1} s",
                    commit.short(),
                    step.name()
                ),
            };
            progress.show(LabEvent::Note(&note));
        }
        BisectEvent::Row(row) => {
            let mut note = format!(
                "{} {}: {}, {}",
                row.commit.short(),
                row.commit.subject,
                decision_text(&row.decision),
                ratio_cell(row)
            );
            // A build that failed shows its log's tail once, here.
            if let Decision::Skipped(reason) = &row.decision {
                for line in reason.lines().skip(1) {
                    note.push_str(&format!("\n    {line}"));
                }
            }
            progress.show(LabEvent::Note(&note));
        }
    }
}

/// The step table: one line per commit built, in the order they were measured.
fn step_table(rows: &[StepRow]) -> String {
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                if row.step == 0 {
                    "ends".into()
                } else {
                    row.step.to_string()
                },
                row.commit.short().to_string(),
                shortened(&row.commit.subject, 48),
                ratio_cell(row),
                decision_text(&row.decision),
                row.rounds.to_string(),
                match row.build {
                    Some(build) if build.cached => format!("{:.0} s, cached", build.seconds),
                    Some(build) => format!("{:.0} s", build.seconds),
                    None => "-".into(),
                },
                if row.measure.is_zero() {
                    "-".into()
                } else {
                    human(row.measure)
                },
            ]
        })
        .collect();
    table::render(
        &[
            "step", "commit", "subject", "to start", "decision", "rounds", "build", "measure",
        ],
        &lines,
    )
}

fn ratio_cell(row: &StepRow) -> String {
    match row.ratio {
        Some(ratio) => ratio_text(ratio, row.interval),
        None => "-".into(),
    }
}

fn ratio_text(ratio: f64, interval: Option<(f64, f64)>) -> String {
    match interval {
        Some((low, high)) => format!("{ratio:.3}× [{low:.3}, {high:.3}]"),
        None => format!("{ratio:.3}×"),
    }
}

fn decision_text(decision: &Decision) -> String {
    match decision {
        Decision::Start => "start (--good)".into(),
        Decision::End(verdict) => format!("end (--bad): {}", verdict_words(verdict)),
        Decision::LikeStart => "like start".into(),
        Decision::LikeEnd => "like end".into(),
        Decision::Skipped(reason) => format!("skipped: {}", first_line(reason)),
    }
}

fn verdict_words(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Better => "better".into(),
        Verdict::Worse => "worse".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// The first commit carrying the change, the change's words, and what is uncertain.
fn found_text(finished: &Finished, found: &Found) -> String {
    let change = &finished.change;
    let kind = match change.verdict {
        Verdict::Worse => "regression",
        _ => "improvement",
    };
    let mut text = format!(
        "the {kind} ({} from start to end) first appears in:\n  commit {}\n  Author: {}\n  Date:   {}\n      {}\n",
        ratio_text(change.ratio, change.interval),
        found.first.hash,
        found.first.author,
        found.first.date,
        found.first.subject
    );
    if !found.skipped.is_empty() {
        let skipped: Vec<&str> = found.skipped.iter().map(Commit::short).collect();
        text.push_str(&format!(
            "  or in a skipped commit before it: {} (they could not be built or placed)\n",
            skipped.join(", ")
        ));
    }
    text.push_str(&against_parent(found));
    let build_seconds: f64 = finished
        .rows
        .iter()
        .filter_map(|row| Some(row.build?.seconds))
        .sum();
    let measure: std::time::Duration = finished.rows.iter().map(|r| r.measure).sum();
    let steps = finished.rows.iter().filter(|row| row.step > 0).count();
    text.push_str(&format!(
        "{steps} steps between the ends; {} commits built in {build_seconds:.0} s; {} measuring in this invocation\n",
        finished.rows.len(),
        human(measure)
    ));
    text
}

fn against_parent(found: &Found) -> String {
    let words = |comparison: &PairedComparison| {
        format!(
            "{} ({})",
            ratio_text(comparison.ratio, comparison.interval),
            verdict_words(&comparison.verdict)
        )
    };
    match &found.comparison {
        Some(comparison) => format!(
            "against its parent {}: {} (lab \"{}\")\n",
            found.parent.short(),
            words(comparison),
            found.lab
        ),
        None => format!(
            "against its parent {}: not measured (lab \"{}\")\n",
            found.parent.short(),
            found.lab
        ),
    }
}

fn write_report(
    template: &Template,
    found: &Found,
    metric: &str,
    html: &Path,
) -> Result<(), Failure> {
    let (spec, _) = template.lab(&found.lab, &[("report", Path::new("system"))])?;
    super::report::run(&ReportArgs {
        results: spec.results.to_string(),
        base: Some(found.parent_target.clone()),
        format: Some("html".into()),
        output: Some(html.to_path_buf()),
        lab: Some(found.lab.clone()),
        metric: metric.into(),
        series_runs: Vec::new(),
        exclude_runs: Vec::new(),
    })
}

fn default_html(spec: &Path) -> PathBuf {
    let stem = spec
        .file_stem()
        .map_or("bisect".into(), |s| s.to_string_lossy().into_owned());
    spec.with_file_name(format!("{stem}-bisect.html"))
}

/// An interrupted bisection goes on with the same command and --resume.
fn with_resume_hint(failure: Failure, args: &BisectArgs) -> Failure {
    if failure.kind() != stampede_base::error::Kind::Interrupted {
        return failure;
    }
    let mut command = format!(
        "stampede bisect --good {} --bad {} --resume",
        args.good, args.bad
    );
    if let Some(source) = &args.source {
        command.push_str(&format!(" --source {}", source.display()));
    }
    if args.metric != "tps" {
        command.push_str(&format!(" --metric {}", args.metric));
    }
    if args.all_parents {
        command.push_str(" --all-parents");
    }
    command.push_str(&format!(" {}", args.spec.display()));
    failure.map_message(|text| format!("{text}: continue with `{command}`"))
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

fn shortened(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width - 1).collect();
    format!("{kept}…")
}
