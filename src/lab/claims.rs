//! A spec's `[[claim]]`s: a study's sentence, its source, the two targets, the cells, the
//! metric and the expectation. Every part is checked where the spec is read, its error naming
//! the file, line and column; whether the selector matches a cell is checked once the
//! workloads' variants are known (`check_cells`).
//!
//! ```toml
//! [[claim]]
//! says = "INSERT into pgbench_history got 20% slower in 12"
//! source = "study 002 (2019)"
//! base = "pg11"            # default: the first target
//! target = "pg12"
//! workload = "pgbench"     # and any of script, group, scale, clients
//! script = "tpcb-like"
//! metric = "tps"           # default tps
//! expect = "20% slower ±5%"
//! ```

use serde::Deserialize;
use toml::Spanned;

use super::spec_text::{ScaleFile, Source, SpecError};
use crate::family;
use crate::report::claims::{CellSelector, Claim};
use crate::report::comparison::Metric;
use stampede_stats::claim::Expectation;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClaimFile {
    says: Spanned<String>,
    source: Option<String>,
    base: Option<Spanned<String>>,
    target: Spanned<String>,
    workload: Spanned<String>,
    script: Option<String>,
    group: Option<String>,
    scale: Option<ScaleFile>,
    clients: Option<i64>,
    metric: Option<Spanned<String>>,
    expect: Spanned<String>,
}

/// A claim, where its selector is (for the cell check's error), and the cells it selects.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecClaim {
    pub claim: Claim,
    /// `file:line:col` of its `workload`.
    pub at: String,
    /// The selected cells as `plan::group_key`s, filled in by `check_cells`.
    pub groups: Vec<String>,
}

/// The claims with their targets, workload and metric checked against the spec's target and
/// workload names.
pub(super) fn parse(
    source: &Source<'_>,
    files: &[ClaimFile],
    targets: &[&str],
    workloads: &[&str],
    without_server_cpu: &[&str],
) -> Result<Vec<SpecClaim>, SpecError> {
    files
        .iter()
        .map(|file| {
            let claim = claim(source, file, targets)?;
            let blind = [&claim.base, &claim.target]
                .into_iter()
                .find(|name| without_server_cpu.contains(&name.as_str()));
            if let (Metric::ServerCpu, Some(name), Some(metric)) = (&claim.metric, blind, &file.metric) {
                return Err(source.at(
                    metric,
                    format!(
                        "claim: metric server_cpu: target \"{name}\" has no source of server CPU (its server is not on this machine; name one: metrics = {{ prometheus = \"http://…\", instance = \"…\" }})"
                    ),
                ));
            }
            if !workloads.contains(&claim.cells.workload.as_str()) {
                return Err(source.at(
                    &file.workload,
                    format!(
                        "claim: workload \"{}\" is not one of the spec's [[workload]]s",
                        claim.cells.workload
                    ),
                ));
            }
            Ok(SpecClaim {
                claim,
                at: source.position_of(&file.workload),
                groups: Vec::new(),
            })
        })
        .collect()
}

/// The claims of a spec as the results store it, for `compare` and `report`: checked when the
/// lab ran, so only the claims are read here.
pub fn stored(text: &str) -> Result<Vec<Claim>, String> {
    #[derive(Deserialize)]
    struct Stored {
        #[serde(rename = "claim", default)]
        claims: Vec<ClaimFile>,
        #[serde(rename = "target", default)]
        targets: Vec<toml::Table>,
    }
    // Labs written by other means (a bisection's steps, tests' synthetic labs) may hold no
    // TOML spec: then there is no claim to read.
    if text.parse::<toml::Table>().is_err() {
        return Ok(Vec::new());
    }
    let stored: Stored = toml::from_str(text).map_err(|e| e.message().trim().to_string())?;
    let names: Vec<&str> = stored
        .targets
        .iter()
        .filter_map(|t| t.get("name").and_then(toml::Value::as_str))
        .collect();
    let source = Source::new(std::path::Path::new("stored spec"), text);
    stored
        .claims
        .iter()
        .map(|file| claim(&source, file, &names).map_err(|e| e.0))
        .collect()
}

fn claim(source: &Source<'_>, file: &ClaimFile, targets: &[&str]) -> Result<Claim, SpecError> {
    let says = file.says.get_ref().trim();
    if says.is_empty() {
        return Err(source.at(&file.says, "claim: says must not be empty"));
    }
    let known = |name: &Spanned<String>| {
        if targets.contains(&name.get_ref().as_str()) {
            Ok(name.get_ref().clone())
        } else {
            Err(source.at(
                name,
                format!(
                    "claim: unknown target \"{}\"; the spec's targets are {}",
                    name.get_ref(),
                    targets.join(", ")
                ),
            ))
        }
    };
    let target = known(&file.target)?;
    let base = match &file.base {
        Some(base) => known(base)?,
        None => targets.first().map(|t| t.to_string()).unwrap_or_default(),
    };
    if base == target {
        return Err(source.at(
            &file.target,
            format!("claim: the target is the base \"{base}\"; a claim compares two targets"),
        ));
    }
    let metric = metric(source, file)?;
    let expectation = Expectation::parse(file.expect.get_ref(), metric.direction())
        .map_err(|why| source.at(&file.expect, format!("claim: expect: {why}")))?;
    Ok(Claim {
        says: says.to_string(),
        source: file.source.clone(),
        base,
        target,
        cells: CellSelector {
            workload: file.workload.get_ref().clone(),
            script: file.script.clone(),
            group: file.group.clone(),
            scale: file.scale.as_ref().map(ScaleFile::text),
            clients: file.clients,
        },
        metric,
        expect: file.expect.get_ref().clone(),
        expectation,
    })
}

/// The claim's metric: one every run has, or one its workload declares.
fn metric(source: &Source<'_>, file: &ClaimFile) -> Result<Metric, SpecError> {
    let Some(name) = &file.metric else {
        return Ok(Metric::Tps);
    };
    let workload = file.workload.get_ref();
    let declared: Vec<_> = family::lab_workload(workload)
        .map(|kind| kind.metrics.iter().collect())
        .unwrap_or_default();
    Metric::parse(name.get_ref(), &declared).map_err(|why| {
        source.at(
            name,
            format!("claim: metric: {why} (for workload \"{workload}\")"),
        )
    })
}

/// What a cell is apart from its target, as claims select it: `workload/script/scale/clients`.
pub fn group_key(workload: &str, script: &str, scale: &str, clients: usize) -> String {
    format!("{workload}/{script}/{scale}/{clients}")
}

/// A `[[workload]]`'s cells as claims select them (its variants known).
pub struct WorkloadCells {
    pub name: String,
    /// Each variant's script label and group.
    pub scripts: Vec<(String, String)>,
    pub scales: Vec<String>,
    pub clients: Vec<usize>,
}

/// Every claim's selector matches at least one of the lab's cells; each claim keeps the cells
/// it selects.
pub fn check_cells(claims: &mut [SpecClaim], workloads: &[WorkloadCells]) -> Result<(), SpecError> {
    for spec_claim in claims {
        spec_claim.groups = workloads
            .iter()
            .flat_map(|w| selected(&spec_claim.claim.cells, w))
            .collect();
        if spec_claim.groups.is_empty() {
            return Err(SpecError(format!(
                "{}: claim: {} matches no cell of the lab",
                spec_claim.at,
                spec_claim.claim.cells.describe()
            )));
        }
    }
    Ok(())
}

/// The group keys of workload `w`'s cells the selector names.
fn selected(selector: &CellSelector, w: &WorkloadCells) -> Vec<String> {
    if w.name != selector.workload {
        return Vec::new();
    }
    let mut keys = Vec::new();
    for (script, group) in &w.scripts {
        let named = selector.script.as_ref().is_none_or(|s| s == script)
            && selector.group.as_ref().is_none_or(|g| g == group);
        if !named {
            continue;
        }
        for scale in &w.scales {
            for clients in &w.clients {
                let cell = selector.scale.as_ref().is_none_or(|s| s == scale)
                    && selector.clients.is_none_or(|c| c == *clients as i64);
                if cell {
                    keys.push(group_key(&w.name, script, scale, *clients));
                }
            }
        }
    }
    keys
}
