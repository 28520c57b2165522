//! dbSTRESS as a lab workload, as study 003 ran it: `scale` is the object count (one set),
//! `clients` the sessions, `scripts` the modes (`ro`, `rw`), the lab's `protocol` prepared or
//! simple; `options = { rw_ratio = 5, same_ref = true, for_update = true, anti_dead = true }`.

use super::command::{plan, prepare_tables, Settings};
use crate::family::api::{FamilyWorkload, LabWorkloadKind, Measurement, RunObserver, RunRequest};
use crate::family::common::measure::{self as lab_run, warmup_and_measure};
use crate::family::common::options::{self, on_off, OptionsError};
use crate::family::dbstress::statements::{Mode, TransactionShape};
use stampede_base::error::Failure;
use stampede_conn::Endpoint;

/// `options = { ... }`: study 003's transaction shape beyond the mode.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DbstressLab {
    rw_ratio: u32,
    #[serde(deserialize_with = "on_off")]
    same_ref: bool,
    #[serde(deserialize_with = "on_off")]
    for_update: bool,
    #[serde(deserialize_with = "on_off")]
    anti_dead: bool,
}

impl Default for DbstressLab {
    fn default() -> Self {
        DbstressLab {
            rw_ratio: 1,
            same_ref: false,
            for_update: false,
            anti_dead: false,
        }
    }
}

/// dbSTRESS, plain (simple) or prepared as study 003 ran it.
pub const KINDS: &[LabWorkloadKind] = &[LabWorkloadKind::new("dbstress", |options| {
    Ok(Box::new(DbstressLab::new(options)?))
})
.metrics(&[crate::family::common::measure::QPS])];

impl DbstressLab {
    fn new(options: &toml::Table) -> Result<DbstressLab, OptionsError> {
        let lab: DbstressLab = options::parse("dbstress", options)?;
        if lab.rw_ratio < 1 {
            return Err(OptionsError::at(
                "dbstress",
                "rw_ratio",
                format!(
                    "rw_ratio = \"{}\": give a whole number from 1",
                    lab.rw_ratio
                ),
            ));
        }
        Ok(lab)
    }
}

impl FamilyWorkload for DbstressLab {
    type Variant = Mode;

    fn variant(&self, name: &str) -> Result<Mode, Failure> {
        Mode::parse(name).map_err(|_| {
            Failure::input(format!(
                "workload \"dbstress\": unknown mode \"{name}\"; the modes are: ro, rw"
            ))
        })
    }

    fn default_variants(&self) -> Vec<String> {
        vec!["ro".into(), "rw".into()]
    }

    fn load(
        &self,
        conn: &Endpoint,
        scale: i64,
        _note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        prepare_tables(conn, scale, 1, stampede_base::cpu::cores(), false)
    }

    fn writes(&self, mode: &Mode) -> bool {
        *mode == Mode::ReadWrite
    }

    fn group(&self, mode: &Mode) -> String {
        if self.writes(mode) {
            "read+write"
        } else {
            "read"
        }
        .to_string()
    }

    fn run(
        &self,
        mode: &Mode,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure> {
        let mode = *mode;
        let protocol = request.protocol;
        let seed = lab_run::seed();
        warmup_and_measure(request, observer, &|seconds| {
            let settings = Settings {
                shape: TransactionShape {
                    mode,
                    rw_ratio: self.rw_ratio,
                    for_update: self.for_update,
                    same_ref: self.same_ref,
                    anti_dead: self.anti_dead,
                    sessions: request.clients as u32,
                    objects: request.scale,
                },
                sets: 1,
                seconds,
                protocol,
                seed,
            };
            plan(request.conn, &settings)
        })
    }
}
