//! `--metrics-addr` for a spread run: the launcher serves the registry on the user's machine,
//! and pod 0, whose coordinator merges the pods' intervals, sends it the run's start, each
//! merged interval (with each pod's share) and its end as `M` frames of its log — the path
//! its output already takes, so nothing has to reach the pods' network.

use serde::{Deserialize, Serialize};

use crate::driver::parts::IntervalPart;
use crate::driver::{IntervalReport, RunPlan};
use crate::live::endpoint::RunFeed;

/// Set in the pods' environment when the launcher serves metrics.
pub const FRAMES_ENV: &str = "STAMPEDE_METRICS_FRAMES";

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum LiveMessage {
    Start {
        scripts: Vec<String>,
        clients: usize,
        rate_limited: bool,
    },
    Interval {
        part: Box<IntervalPart>,
        by_pod: Vec<u64>,
    },
    End {
        failed: bool,
    },
}

/// Whether this pod's launcher asked for the frames.
pub fn wanted() -> bool {
    std::env::var_os(FRAMES_ENV).is_some()
}

fn send(message: &LiveMessage) {
    let json = serde_json::to_string(message).expect("plain data serializes to JSON");
    super::terminal::metrics_frame(&json);
}

pub fn send_start(plan: &RunPlan) {
    send(&LiveMessage::Start {
        scripts: RunFeed::script_names(plan),
        clients: plan.clients,
        rate_limited: plan.rate.is_some(),
    });
}

pub fn send_interval(interval: &IntervalReport) {
    send(&LiveMessage::Interval {
        part: Box::new(IntervalPart::of(interval)),
        by_pod: interval.by_pod.clone(),
    });
}

pub fn send_end(failed: bool) {
    send(&LiveMessage::End { failed });
}

/// The launcher's side: a frame's message into the registry (a line it cannot read is left).
pub fn receive(json: &str, feed: &RunFeed) {
    match serde_json::from_str::<LiveMessage>(json) {
        Ok(LiveMessage::Start {
            scripts,
            clients,
            rate_limited,
        }) => feed.start_described(scripts, clients, rate_limited),
        Ok(LiveMessage::Interval { part, by_pod }) => {
            let mut report = part.report();
            report.by_pod = by_pod;
            feed.interval(&report);
        }
        Ok(LiveMessage::End { failed }) => feed.end(failed),
        Err(_) => {}
    }
}
