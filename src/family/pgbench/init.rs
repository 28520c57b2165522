//! `stampede pgbench -i`: runs the init steps, timing each like pgbench's closing line.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::spec::InitSpec;
use crate::family::pgbench::loader::{InitStep, Loader};
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::control_runtime;
use stampede_conn::ConnSpec;

/// `announce` gets pgbench's step lines ("creating tables...", "done in …"): the command prints
/// them on stderr, the lab as its notes.
pub fn run(spec: &InitSpec, target: &ConnSpec, announce: &mut dyn FnMut(&str)) -> CommandResult {
    let loader = Loader {
        spec: target.clone(),
        options: spec.schema.clone(),
        connections: std::thread::available_parallelism().map_or(2, |n| n.get()),
        rows_loaded: Arc::new(AtomicU64::new(0)),
    };
    let runtime = control_runtime();
    // Fail on an unusable connection before announcing any step.
    let client = runtime
        .block_on(loader.connect())
        .map_err(Failure::into_input)?;
    runtime.block_on(loader.check_server(&client))?;
    drop(client);
    let mut timings = Vec::new();
    for step in &spec.steps {
        announce(step.announcement());
        if *step == InitStep::CreateTables && spec.schema.partitions > 0 {
            announce(&format!(
                "creating {} partitions...",
                spec.schema.partitions
            ));
        }
        let started = Instant::now();
        let progress =
            matches!(step, InitStep::ClientGenerate).then(|| start_progress(&loader, spec.quiet));
        let result = runtime.block_on(loader.run_step(*step));
        if let Some((bar, stop)) = progress {
            stop.store(u64::MAX, Ordering::Relaxed);
            bar.finish_and_clear();
        }
        result?;
        timings.push((step.label(), started.elapsed()));
    }
    announce(&done_line(&timings));
    Ok(())
}

/// pgbench's `done in 1.23 s (drop tables 0.00 s, ...)`.
fn done_line(timings: &[(&str, Duration)]) -> String {
    let total: f64 = timings.iter().map(|(_, d)| d.as_secs_f64()).sum();
    let parts: Vec<String> = timings
        .iter()
        .map(|(label, d)| format!("{label} {:.2} s", d.as_secs_f64()))
        .collect();
    format!("done in {total:.2} s ({}).", parts.join(", "))
}

/// A progress bar over rows loaded, refreshed from the loader's counter by a watcher thread.
fn start_progress(loader: &Loader, quiet: bool) -> (ProgressBar, Arc<AtomicU64>) {
    let bar = ProgressBar::new(loader.total_rows());
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40} {human_pos}/{human_len} rows ({percent}%) elapsed {elapsed}, remaining {eta}",
        )
        .expect("the progress template is a constant that parses"),
    );
    if quiet {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let stop = Arc::new(AtomicU64::new(0));
    let (rows, watched_bar, watched_stop) = (loader.rows_loaded.clone(), bar.clone(), stop.clone());
    std::thread::spawn(move || {
        while watched_stop.load(Ordering::Relaxed) == 0 {
            watched_bar.set_position(rows.load(Ordering::Relaxed));
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    (bar, stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_line_has_pgbench_shape() {
        let line = done_line(&[
            ("drop tables", Duration::from_millis(10)),
            ("vacuum", Duration::from_millis(250)),
        ]);
        assert_eq!(line, "done in 0.26 s (drop tables 0.01 s, vacuum 0.25 s).");
    }
}
