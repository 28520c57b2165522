//! dbSTRESS as a lab workload, as seed 003 ran it: `scale` is the object count (one set),
//! `clients` the sessions, `scripts` the modes (`ro`, `rw`), the lab's `protocol` prepared or
//! simple; `options = { rw_ratio = 5, same_ref = true, for_update = true, anti_dead = true }`.

use super::command::{plan, prepare_tables, Settings};
use crate::family::api::{
    LabWorkload, LabWorkloadKind, Measurement, RunObserver, RunRequest, ALL_PROTOCOLS,
};
use crate::family::common::measure::{self as lab_run, warmup_and_measure};
use crate::family::dbstress::statements::{Mode, TransactionShape};
use crate::server::target::ConnSpec;

const OPTIONS: [&str; 4] = ["rw_ratio", "same_ref", "for_update", "anti_dead"];

pub struct DbstressLab {
    rw_ratio: u32,
    same_ref: bool,
    for_update: bool,
    anti_dead: bool,
}

/// dbSTRESS, plain (simple) or prepared as seed 003 ran it.
pub const KINDS: &[LabWorkloadKind] = &[LabWorkloadKind {
    name: "dbstress",
    protocols: ALL_PROTOCOLS,
    create: |options| Ok(Box::new(DbstressLab::new(options)?)),
    metrics: &[],
}];

impl DbstressLab {
    fn new(options: &[(String, String)]) -> Result<DbstressLab, String> {
        let mut lab = DbstressLab {
            rw_ratio: 1,
            same_ref: false,
            for_update: false,
            anti_dead: false,
        };
        for (name, value) in options {
            // The spec writes booleans as on/off.
            let flag = || match value.as_str() {
                "on" | "true" => Ok(true),
                "off" | "false" => Ok(false),
                _ => Err(format!(
                    "workload \"dbstress\": options: {name} = \"{value}\": give true or false"
                )),
            };
            match name.as_str() {
                "rw_ratio" => {
                    lab.rw_ratio = value.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                        format!("workload \"dbstress\": options: rw_ratio = \"{value}\": give a whole number from 1")
                    })?
                }
                "same_ref" => lab.same_ref = flag()?,
                "for_update" => lab.for_update = flag()?,
                "anti_dead" => lab.anti_dead = flag()?,
                _ => {
                    return Err(format!(
                        "workload \"dbstress\": options: unknown option \"{name}\"; the options are: {}",
                        OPTIONS.join(", ")
                    ))
                }
            }
        }
        Ok(lab)
    }
}

impl LabWorkload for DbstressLab {
    fn load(&self, conn: &ConnSpec, scale: i64, _note: &mut dyn FnMut(&str)) -> Result<(), String> {
        prepare_tables(conn, scale, 1, crate::probe::cpu::cores(), false).map_err(lab_run::message)
    }

    fn writes(&self, script: &str) -> bool {
        script == "rw"
    }

    fn family(&self, script: &str) -> String {
        if self.writes(script) {
            "read+write"
        } else {
            "read"
        }
        .to_string()
    }

    fn check_variant(&self, script: &str) -> Result<(), String> {
        Mode::parse(script).map(|_| ()).map_err(|_| {
            format!("workload \"dbstress\": unknown mode \"{script}\"; the modes are: ro, rw")
        })
    }

    fn default_variants(&self) -> Vec<String> {
        vec!["ro".into(), "rw".into()]
    }

    fn run(
        &self,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, String> {
        let mode = Mode::parse(request.script)?;
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
            plan(request.conn, &settings).map_err(lab_run::message)
        })
    }
}
