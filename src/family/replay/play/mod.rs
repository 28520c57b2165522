//! Replaying a capture: every captured session as a client, spread over a few threads (each
//! its own current-thread runtime, sessions as tasks on it), all timed from one start.

pub mod alarm;
pub mod check;
pub mod outcome;
pub mod session;

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

use futures_util::future::join_all;

use super::normalize::normalize;
use super::replay_file::ReplayFile;
use crate::live::sampler::Tally;
use outcome::Outcome;
use stampede_base::error::Failure;
use stampede_conn::ConnSpec;

/// A capture ready to replay.
pub struct Plan {
    pub file: ReplayFile,
    /// Each statement shape's normalized text.
    pub shapes: Vec<String>,
    /// Each text's shape.
    pub shape_of: Vec<u32>,
    /// 1 = as captured, 2 = twice as fast, 0 = as fast as possible.
    pub speed: f64,
    /// Where every session connects (the captured database and user are the capture's).
    pub conn: ConnSpec,
    pub stop: Arc<AtomicBool>,
    /// Transactions ended so far, for live progress.
    pub transactions: AtomicU64,
    /// `--metrics-addr`: each statement and transaction as it ends, and each lag.
    pub live: Option<Arc<Tally>>,
}

impl Plan {
    pub fn new(file: ReplayFile, speed: f64, conn: ConnSpec, stop: Arc<AtomicBool>) -> Plan {
        let mut shapes: Vec<String> = Vec::new();
        let mut known = std::collections::HashMap::new();
        let shape_of = file
            .texts
            .iter()
            .map(|text| {
                let shape = normalize(text);
                *known.entry(shape.clone()).or_insert_with(|| {
                    shapes.push(shape);
                    shapes.len() as u32 - 1
                })
            })
            .collect();
        Plan {
            file,
            shapes,
            shape_of,
            speed,
            conn,
            stop,
            transactions: AtomicU64::new(0),
            live: None,
        }
    }
}

/// What `replay` gives back.
pub struct Replayed {
    pub outcome: Outcome,
    pub seconds: f64,
}

/// Replays every session on `threads` threads and merges what they measured.
pub fn replay(plan: Arc<Plan>, threads: usize) -> Result<Replayed, Failure> {
    let threads = threads.clamp(1, plan.file.sessions.len().max(1));
    let cpu_before = stampede_base::cpu::process_cpu();
    let start = Instant::now();
    let mut outcome = Outcome::default();
    let results: Vec<Result<Outcome, Failure>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let plan = Arc::clone(&plan);
                scope.spawn(move || play_thread(&plan, thread, threads, start))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Failure::run("a replay thread panicked")))
            })
            .collect()
    });
    for result in results {
        outcome.merge(result?);
    }
    outcome.client_cpu = stampede_base::cpu::process_cpu().since(&cpu_before).total();
    Ok(Replayed {
        outcome,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// The sessions `thread` of `threads` plays: every threads-th in order of their start.
fn play_thread(
    plan: &Plan,
    thread: usize,
    threads: usize,
    start: Instant,
) -> Result<Outcome, Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::run(format!("could not start a replay thread: {e}")))?;
    let mut order: Vec<usize> = (0..plan.file.sessions.len()).collect();
    order.sort_by_key(|&i| plan.file.sessions[i].start_ms);
    let mine: Vec<usize> = order.into_iter().skip(thread).step_by(threads).collect();
    let outcomes = runtime.block_on(join_all(
        mine.iter()
            .map(|&i| session::play(plan, &plan.file.sessions[i], start)),
    ));
    let mut merged = Outcome::default();
    for outcome in outcomes {
        merged.merge(outcome);
    }
    Ok(merged)
}
