//! The lab's target axis. A `[[target]]` names one kind (`postgres = …`, `mariadb = …`,
//! `url = …`, `cloudnativepg = …`); the kind parses its own table into a `TargetSource`, which is checked and
//! resolved before anything starts and provisioned as a `LabServer` on first use. The executor
//! sees only these traits, so adding a kind is a folder and a line in `KINDS`, and the
//! executor's tests drive it with a fake.
//!
//! A `LabServer` is what every server of an engine does over SQL (datasets, pristine copies,
//! checkpoints, settings, statement statistics, plans, identity); a server whose process the
//! lab started also has a `HostProcess` (restart, log tail, stop).

pub mod api;
pub mod cloudnativepg;
pub mod mariadb;
pub mod postgres;
pub mod setting_names;
pub mod table;
pub mod url;

use crate::server::setup::SetupEvent;
use stampede_base::error::{Failure, Kind};
use std::sync::Arc;

pub use api::{
    HostProcess, LabPlace, LabServer, PodLoad, ResolvedTarget, TargetKind, TargetSource,
    TargetSpec, Targets,
};
pub use table::TargetTable;

/// Every kind of target, in the order messages list them. A `[[target]]` naming none is
/// PostgreSQL from the system (the first).
pub static KINDS: &[&dyn TargetKind] = &[
    &postgres::Kind,
    &mariadb::Kind,
    &url::Kind,
    &cloudnativepg::Kind,
];

/// Each target as its own kind resolves and provisions it.
pub struct SpecTargets;

impl Targets for SpecTargets {
    fn check(&self, target: &TargetSpec) -> Result<(), Failure> {
        target.server.check(target).map_err(|e| named(target, e))
    }

    fn resolve(
        &self,
        target: &TargetSpec,
        events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<Arc<dyn ResolvedTarget>, Failure> {
        let mut named_events = |event: SetupEvent<'_>| match event {
            SetupEvent::Note(note) => events(SetupEvent::Note(&format!(
                "target \"{}\": {note}",
                target.name
            ))),
            download => events(download),
        };
        target
            .server
            .resolve(target, &mut named_events)
            .map_err(|e| named(target, e))
    }

    fn provision(
        &self,
        resolved: &dyn ResolvedTarget,
        target: &TargetSpec,
        place: &LabPlace<'_>,
    ) -> Result<Box<dyn LabServer>, Failure> {
        resolved.provision(target, place)
    }
}

impl SpecTargets {
    /// `lab plan`'s look at a target: refusals as input errors naming the target, the rest as
    /// lines for the plan. A source that could not be asked (an archive out of reach) is said
    /// to be unchecked, unless the plan is a dry run the API server must answer.
    pub fn check_at_plan(
        &self,
        target: &TargetSpec,
        dry_run: bool,
    ) -> Result<Vec<String>, Failure> {
        match target.server.check_at_plan(target, dry_run) {
            Ok(lines) => Ok(lines
                .into_iter()
                .map(|line| format!("target \"{}\": {line}", target.name))
                .collect()),
            Err(e) if e.kind() == Kind::Run && !dry_run => Ok(vec![format!(
                "target \"{}\": {} not checked ({})",
                target.name,
                target.server.spec_text(),
                e.message()
            )]),
            Err(e) => Err(named(target, e)),
        }
    }
}

/// A target's refusal, naming it (once).
pub fn named(target: &TargetSpec, e: Failure) -> Failure {
    let prefix = format!("target \"{}\"", target.name);
    if e.message().starts_with(&prefix) {
        return e.into_input();
    }
    e.into_input()
        .map_message(|text| format!("{prefix}: {text}"))
}
