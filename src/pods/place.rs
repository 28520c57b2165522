//! Where a family's one pipeline runs: on this host alone, or as one pod of a spread run (the
//! Job's environment says which). The pipeline is the same in both; at each point where pods
//! act together it asks its `Place`: who leads (prepares the server, prints the heading and the
//! report: this host, or pod 0), the join once each pod's own setup is done, a reading taken
//! while every pod holds its clients, and the run itself — this place's share of the threads
//! (and of `--events`), whose merged result comes back to the leader alone.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::live_frames;
use super::role::{share_of, Barrier, PodRole, PodRun, SpreadSummary};
use crate::driver::{self, DriverEvent, IntervalReport, RunLimit, RunPlan, RunResult, Share};
use crate::live::endpoint::RunFeed;
use stampede_base::error::Failure;

/// What hears the run's intervals as one run's: every pod's merged, on the leader.
pub type Progress = Box<dyn FnMut(&IntervalReport) + Send>;

/// This process's place in a run.
pub struct Place {
    pod: Option<PodRun>,
    /// On this host: the progress the driver's intervals go to (a pod's go to the coordinator,
    /// which gives pod 0's `Progress` the merged ones).
    progress: Progress,
    /// `--metrics-addr`: the registry the run's intervals also go to.
    feed: Option<RunFeed>,
}

/// A run as the leader has it: the whole run's result and, when spread, each pod's share.
pub struct Ran {
    pub result: RunResult,
    pub spread: Option<SpreadSummary>,
}

impl Place {
    /// A pod when the Job's environment says so, else this host.
    pub fn of_this_process(progress: Progress) -> Result<Place, Failure> {
        match PodRole::from_env()? {
            Some(role) => Place::pod(role, progress),
            None => Ok(Place::here(progress)),
        }
    }

    pub fn here(progress: Progress) -> Place {
        Place {
            pod: None,
            progress,
            feed: None,
        }
    }

    /// The run's intervals also go to `feed` (`--metrics-addr`), when there is one.
    pub fn fed(mut self, feed: Option<RunFeed>) -> Place {
        self.feed = feed;
        self
    }

    /// One pod of a spread run; pod 0 starts the coordinator, which merges the pods' intervals
    /// into `progress`.
    pub fn pod(role: PodRole, mut progress: Progress) -> Result<Place, Failure> {
        if role.index == 0 && live_frames::wanted() {
            progress = Box::new(move |interval| {
                live_frames::send_interval(interval);
                progress(interval)
            });
        }
        Ok(Place {
            pod: Some(PodRun::start(role, progress)?),
            progress: Box::new(|_| {}),
            feed: None,
        })
    }

    /// Whether this process prepares the server, prints the run's heading and its report.
    pub fn leads(&self) -> bool {
        self.pod.as_ref().is_none_or(|pod| pod.role.index == 0)
    }

    pub fn is_pod(&self) -> bool {
        self.pod.is_some()
    }

    /// What ends the run early: here SIGINT and SIGTERM (the run is reported as interrupted);
    /// in a pod the coordinator's abort (a pod's SIGTERM ends its process, `terminal.rs`).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        match &self.pod {
            Some(pod) => pod.stop_flag(),
            None => stampede_base::signals::watch_signals(),
        }
    }

    /// Joins the run once this place's own setup is done. On pod 0 `after_others` runs once
    /// every other pod has joined (a reading that must come after their setup); a setup that
    /// failed is sent to the coordinator, which stops every pod, and returned.
    pub fn join<T>(
        &mut self,
        setup: Result<T, Failure>,
        after_others: impl FnOnce(&mut T),
    ) -> Result<T, Failure> {
        let Some(pod) = &mut self.pod else {
            return setup;
        };
        let setup = match setup {
            Ok(mut setup) if pod.role.index == 0 => pod.wait_for_others().map(|()| {
                after_others(&mut setup);
                setup
            }),
            other => other,
        };
        match (setup, pod.join()) {
            (Ok(setup), Ok(())) => Ok(setup),
            (Err(failure), _) | (_, Err(failure)) => {
                let pod = self
                    .pod
                    .take()
                    .expect("a pod place keeps its pod until it finishes");
                pod.finish(Err(failure.clone()), 0, 0)?;
                Err(failure)
            }
        }
    }

    /// Where the pipeline reads what must be read while every pod holds its clients (a run's
    /// server counters between its rampup and its measured run): usable from the run's events.
    pub fn together(&self) -> Together {
        Together {
            pod: self.pod.as_ref().map(PodRun::barrier_handle),
            leads: self.leads(),
        }
    }

    /// Runs this place's share of `plan` without the pods' start together (a warmup each pod
    /// runs on its own); nothing of it is kept.
    /// A failure in a pod ends its part of the run (the coordinator is told).
    pub fn run_alone(&mut self, mut plan: RunPlan) -> Result<(), Failure> {
        if let Some(pod) = &self.pod {
            let threads = plan.clients_per_thread().len();
            let here = pod.role.threads(threads);
            share_events(&mut plan, threads, &here);
            plan.share = Some(Share {
                threads: here,
                start_gate: Arc::new(|| Ok(())),
            });
        }
        let result = driver::run(plan, &mut |_| {}).map(|_| ());
        if let Err(failure) = &result {
            if let Some(pod) = self.pod.take() {
                pod.finish(Err(failure.clone()), 0, 0)?;
            }
        }
        result
    }

    /// Runs this place's share of `plan`: the whole run here; in a pod its threads (and its part
    /// of `--events`), started with the other pods' and stopped with them. The leader gets the
    /// whole run (the pods' results merged); the other pods get None once theirs is sent.
    pub fn run(
        mut self,
        mut plan: RunPlan,
        on_event: &mut dyn FnMut(DriverEvent<'_>),
    ) -> Result<Option<Ran>, Failure> {
        let Some(pod) = self.pod.take() else {
            let progress = &mut self.progress;
            let feed = self.feed.take();
            if let Some(feed) = &feed {
                feed.start(&plan);
            }
            let result = driver::run(plan, &mut |event| {
                match (&event, &feed) {
                    (DriverEvent::Interval(interval), Some(feed)) => feed.interval(interval),
                    (DriverEvent::ClientAborted(..), Some(feed)) => feed.client_aborted(),
                    _ => {}
                }
                if let DriverEvent::Interval(interval) = &event {
                    progress(interval);
                }
                on_event(event);
            });
            if let Some(feed) = &feed {
                feed.end(result.is_err());
            }
            let result = result?;
            return Ok(Some(Ran {
                result,
                spread: None,
            }));
        };
        let threads = plan.clients_per_thread().len();
        let frames = pod.role.index == 0 && live_frames::wanted();
        if frames {
            live_frames::send_start(&plan);
        }
        share_events(&mut plan, threads, &pod.role.threads(threads));
        plan.share = Some(pod.share(threads));
        plan.stop = Some(pod.stop_flag());
        let here = plan.threads_here();
        let clients_here = plan.clients_per_thread()[here.clone()].iter().sum();
        let result = driver::run(plan, &mut |event| match event {
            DriverEvent::Interval(interval) => pod.interval(interval),
            other => on_event(other),
        });
        let spread = pod.finish(result, clients_here, here.len());
        if frames {
            live_frames::send_end(spread.is_err());
        }
        let spread = spread?;
        Ok(spread.map(|spread| Ran {
            result: spread.merged,
            spread: Some(spread.summary),
        }))
    }
}

/// `--events` is the whole run's: each pod runs its threads' part of it.
fn share_events(plan: &mut RunPlan, threads: usize, here: &std::ops::Range<usize>) {
    if let RunLimit::Events { total, within } = plan.limit {
        plan.limit = RunLimit::Events {
            total: share_of(total, threads, here),
            within,
        };
    }
}

/// A reading taken while every pod holds (see `Place::together`).
pub struct Together {
    pod: Option<Barrier>,
    leads: bool,
}

impl Together {
    /// Once every pod has reached `phase`, the leader reads; once it has, every pod goes on.
    /// The reading, on the leader (here: at once). A barrier that fails (another pod failed)
    /// reads nothing: the coordinator's abort stops the run and says why.
    pub fn read<T>(&self, phase: &str, read: impl FnOnce() -> T) -> Option<T> {
        let Some(barrier) = &self.pod else {
            return Some(read());
        };
        barrier(phase).ok()?;
        let reading = self.leads.then(read);
        barrier(&format!("{phase}-read")).ok()?;
        reading
    }
}
