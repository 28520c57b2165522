//! What the reader must know before trusting a comparison, said at the top of every report:
//! failed runs, noisy cells, too few runs for a verdict, a driver that may have been the
//! bottleneck, and binaries from different builds.

use std::collections::BTreeMap;

use super::comparison::{by_cell, cell_of, CellComparison, CellKey, Metric};
use stampede_stats::coefficient_of_variation;
use stampede_stats::fairness::UNEVEN_BELOW;
use stampede_store::ZONKY_BINARIES;
use stampede_store::{RunSettingChange, RunStatus, ServedClients, StoredRun, TargetBuild};

/// Cells whose spread across repetitions exceeds this coefficient of variation are flagged.
pub const NOISY_COV: f64 = 0.05;
/// Above this share of the client machine's CPUs, the driver may be what limits throughput.
pub const DRIVER_CPU_LIMIT: f64 = 0.70;

pub struct WarningInputs<'a> {
    pub runs: &'a [StoredRun],
    pub targets: &'a [&'a str],
    pub metric: &'a Metric,
    /// CPUs of the machine the driver ran on (unknown for results of older versions).
    pub client_cores: Option<i64>,
    /// Where each target's binaries came from and how they were built.
    pub builds: &'a [TargetBuild],
}

pub fn warnings(inputs: &WarningInputs<'_>) -> Vec<String> {
    let mut out = mixed_builds(inputs);
    out.extend(shared_servers(inputs));
    out.extend(failed_runs(inputs));
    out.extend(noisy_cells(inputs));
    out.extend(busy_driver(inputs));
    out.extend(uneven_service(inputs));
    out
}

/// How many uneven runs a warning names before it counts the rest.
const UNEVEN_RUNS_NAMED: usize = 5;

/// Runs whose clients were served unevenly (Jain's index below 0.9): their throughput came
/// mostly from some of their clients, so it stands for fewer users than the cell says.
fn uneven_service(inputs: &WarningInputs<'_>) -> Vec<String> {
    let uneven: Vec<(&StoredRun, ServedClients)> = inputs
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Completed && inputs.targets.contains(&r.target.as_str()))
        .filter_map(|run| Some((run, run.served?)))
        .filter(|(_, served)| served.jain_index < UNEVEN_BELOW)
        .collect();
    if uneven.is_empty() {
        return Vec::new();
    }
    let mut named: Vec<String> = uneven
        .iter()
        .take(UNEVEN_RUNS_NAMED)
        .map(|(run, served)| {
            run_label(
                run,
                &format!(
                    ": Jain's index {:.2}, {}–{} transactions per client",
                    served.jain_index, served.min, served.max
                ),
            )
        })
        .collect();
    if uneven.len() > UNEVEN_RUNS_NAMED {
        named.push(format!("{} more", uneven.len() - UNEVEN_RUNS_NAMED));
    }
    vec![format!(
        "{} run(s) served their clients unevenly: {}; such a run's throughput stands for fewer users than it was configured with",
        uneven.len(),
        named.join(", ")
    )]
}

/// The share of the client machine's CPUs the driver used during a run's measured window.
pub fn client_cpu_share(run: &StoredRun, client_cores: Option<i64>) -> Option<f64> {
    let cores = client_cores.filter(|c| *c > 0)? as f64;
    Some(run.client_cpu_us_per_txn? * run.tps? / 1e6 / cores)
}

/// Cells of a comparison with too few runs for any verdict.
pub fn too_few_runs(target: &str, base: &str, cells: &[CellComparison]) -> Option<String> {
    let short: Vec<&CellComparison> = cells.iter().filter(|c| c.runs_needed.is_some()).collect();
    let needed = short.iter().filter_map(|c| c.runs_needed).max()?;
    Some(format!(
        "{} cell(s) of \"{target}\" vs \"{base}\" have too few runs for a verdict: need ≥ {needed} per side",
        short.len()
    ))
}

fn failed_runs(inputs: &WarningInputs<'_>) -> Vec<String> {
    inputs
        .targets
        .iter()
        .filter_map(|target| {
            let failed = inputs
                .runs
                .iter()
                .filter(|r| r.target == *target && r.status == RunStatus::Failed)
                .count();
            (failed > 0).then(|| format!("{failed} run(s) of \"{target}\" failed and are left out"))
        })
        .collect()
}

fn noisy_cells(inputs: &WarningInputs<'_>) -> Vec<String> {
    inputs
        .targets
        .iter()
        .filter_map(|target| {
            let noisy = by_cell(inputs.runs, target, inputs.metric)
                .values()
                .filter(|values| coefficient_of_variation(values).is_some_and(|c| c > NOISY_COV))
                .count();
            (noisy > 0).then(|| {
                format!(
                    "{noisy} cell(s) of \"{target}\" vary by more than {:.0}% across runs (coefficient of variation)",
                    NOISY_COV * 100.0
                )
            })
        })
        .collect()
}

fn busy_driver(inputs: &WarningInputs<'_>) -> Vec<String> {
    let mut busiest: BTreeMap<(&str, CellKey), f64> = BTreeMap::new();
    for run in inputs
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Completed && inputs.targets.contains(&r.target.as_str()))
    {
        if let Some(share) = client_cpu_share(run, inputs.client_cores) {
            let entry = busiest
                .entry((run.target.as_str(), cell_of(run)))
                .or_insert(0.0);
            *entry = entry.max(share);
        }
    }
    let over: Vec<(&(&str, CellKey), &f64)> = busiest
        .iter()
        .filter(|(_, share)| **share > DRIVER_CPU_LIMIT)
        .collect();
    let Some(((target, cell), share)) = over
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(key, share)| (*key, **share))
    else {
        return Vec::new();
    };
    vec![format!(
        "the driver used more than {:.0}% of the client's {} cores in {} cell(s), up to {:.0}% (\"{target}\" {} {} {}): the client may be the bottleneck",
        DRIVER_CPU_LIMIT * 100.0,
        inputs.client_cores.unwrap_or(0),
        over.len(),
        share * 100.0,
        cell.workload,
        cell.script,
        super::comparison::size_text(&cell.scale, cell.clients)
    )]
}

fn mixed_builds(inputs: &WarningInputs<'_>) -> Vec<String> {
    let build_of = |target: &str| inputs.builds.iter().find(|b| b.target == target);
    let builds: Vec<&TargetBuild> = inputs.targets.iter().filter_map(|t| build_of(t)).collect();
    let mut out = Vec::new();
    // Targets whose compiler flags or configure options are known and differ from the first's.
    if let Some((first, others)) = builds.split_first() {
        for other in others {
            if let Some(differences) = build_differences(first, other) {
                out.push(format!(
                    "\"{}\" ({}) and \"{}\" ({}) were built differently ({differences}): part of a difference may be the build's, not the version's",
                    first.target, first.binary_source, other.target, other.binary_source
                ));
            }
        }
    }
    if !out.is_empty() {
        return out;
    }
    // Without pg_config (results of older versions), the binary sources alone tell.
    let zonky = builds
        .iter()
        .find(|b| b.binary_source == ZONKY_BINARIES && b.pg_config.is_none());
    let other = builds
        .iter()
        .find(|b| b.binary_source != ZONKY_BINARIES && b.pg_config.is_none());
    match (zonky, other) {
        (Some(zonky), Some(other)) => vec![format!(
            "\"{}\" runs zonky's binaries from Maven Central and \"{}\" runs {}: the builds differ in compiler flags and configure options, so part of a difference may be the build's, not the version's",
            zonky.target, other.target, other.binary_source
        )],
        _ => Vec::new(),
    }
}

/// Targets measured on one server the lab reached by URL (the same identity: system
/// identifier and the address it answered on), said so: their runs took turns on it.
fn shared_servers(inputs: &WarningInputs<'_>) -> Vec<String> {
    let mut by_server: Vec<(&str, Vec<&str>)> = Vec::new();
    for build in inputs
        .builds
        .iter()
        .filter(|b| inputs.targets.contains(&b.target.as_str()))
    {
        let Some(server) = remote_identity(&build.binary_source) else {
            continue;
        };
        match by_server.iter_mut().find(|(s, _)| *s == server) {
            Some((_, targets)) => targets.push(&build.target),
            None => by_server.push((server, vec![&build.target])),
        }
    }
    by_server
        .into_iter()
        .filter(|(_, targets)| targets.len() > 1)
        .map(|(server, targets)| {
            format!(
                "{} ran on one server ({server}): their runs took turns on it, each target in databases of its own",
                targets
                    .iter()
                    .map(|t| format!("\"{t}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect()
}

/// "system identifier 7716…; answered on 127.0.0.1:5432" from a url target's record (the
/// role, which two targets of one server may not share, left out).
fn remote_identity(binary_source: &str) -> Option<&str> {
    let inside = binary_source
        .strip_prefix("server not started by stampede (")?
        .strip_suffix(')')?;
    inside.split_once("; ").map(|(_, rest)| rest)
}

/// What differs between two builds' CFLAGS and configure options, when both are known and
/// something that can change the code does: compiler warnings, debug information, source-path
/// maps, installation paths and the version's label (Debian's 18 and 19 differ in all of these)
/// are left aside.
fn build_differences(a: &TargetBuild, b: &TargetBuild) -> Option<String> {
    let mut differences = Vec::new();
    let cflags = |build: &TargetBuild| -> Option<String> {
        let flags: Vec<&str> = build
            .pg_config_value("CFLAGS")?
            .split_whitespace()
            .filter(|flag| shapes_code(flag))
            .collect();
        Some(flags.join(" "))
    };
    let (a_cflags, b_cflags) = (cflags(a)?, cflags(b)?);
    if a_cflags != b_cflags {
        differences.push(flag_difference("CFLAGS", &a_cflags, &b_cflags));
    }
    let configure = |build: &TargetBuild| {
        build.pg_config_value("CONFIGURE").map(|text| {
            text.split('\'')
                .map(str::trim)
                // Installation paths and CFLAGS (compared on their own) say nothing of the build.
                .filter(|option| {
                    !option.is_empty()
                        && !option.contains('/')
                        && !option.starts_with("CFLAGS=")
                        && !LABELS_ONLY.iter().any(|label| option.starts_with(label))
                })
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
    };
    if let (Some(a_options), Some(b_options)) = (configure(a), configure(b)) {
        let differing = a_options.iter().filter(|o| !b_options.contains(o)).count()
            + b_options.iter().filter(|o| !a_options.contains(o)).count();
        if differing > 0 && differing <= 4 {
            differences.push(flag_difference(
                "configure",
                &a_options.join(" "),
                &b_options.join(" "),
            ));
        } else if differing > 4 {
            differences.push(format!("{differing} configure options"));
        }
    }
    (!differences.is_empty()).then(|| differences.join("; "))
}

/// Configure options that name or label a build without changing its code.
const LABELS_ONLY: [&str; 3] = [
    "--with-extra-version",
    "--with-pgport",
    "--enable-tap-tests",
];

/// Whether a compiler flag can change the code built: warnings (`-W…` without a comma: `-Wp,`
/// and `-Wl,` pass flags on), debug information and source-path maps cannot.
fn shapes_code(flag: &str) -> bool {
    let warning = flag.starts_with("-W") && !flag.contains(',');
    let debug_info = flag.starts_with("-g");
    let path_map = [
        "-ffile-prefix-map=",
        "-fdebug-prefix-map=",
        "-fmacro-prefix-map=",
    ]
    .iter()
    .any(|map| flag.starts_with(map));
    !(warning || debug_info || path_map || flag.starts_with("-fdiagnostics-"))
}

/// The flags only one side has, e.g. `CFLAGS "-Os" vs "-O2 -g"`.
fn flag_difference(what: &str, a: &str, b: &str) -> String {
    let only = |mine: &str, theirs: &str| {
        let theirs: Vec<&str> = theirs.split_whitespace().collect();
        let only: Vec<&str> = mine
            .split_whitespace()
            .filter(|flag| !theirs.contains(flag))
            .collect();
        if only.is_empty() {
            "-".to_string()
        } else {
            only.join(" ")
        }
    };
    format!("{what} \"{}\" vs \"{}\"", only(a, b), only(b, a))
}

/// "run 17 ("b" pgbench select-only scale 1 × 1 clients, round 3<detail>)".
fn run_label(run: &StoredRun, detail: &str) -> String {
    format!(
        "run {} (\"{}\" {} {} {}, round {}{detail})",
        run.id,
        run.target,
        run.workload,
        run.script,
        super::comparison::size_text(&run.scale, run.clients),
        run.repetition + 1
    )
}

/// How many changed settings a warning names per target before it counts the rest.
const CHANGED_SETTINGS_NAMED: usize = 5;

/// Targets whose server's settings, read as each run started, differed from what the lab
/// recorded for them: someone or something else changed a server the lab did not start.
pub fn settings_changed(changes: &[RunSettingChange], targets: &[&str]) -> Vec<String> {
    let mut by_target: BTreeMap<&str, Vec<&RunSettingChange>> = BTreeMap::new();
    for change in changes
        .iter()
        .filter(|c| targets.contains(&c.target.as_str()))
    {
        by_target.entry(&change.target).or_default().push(change);
    }
    by_target
        .into_iter()
        .map(|(target, changes)| {
            let mut runs: Vec<(&str, u32)> = changes
                .iter()
                .map(|c| (c.cell_key.as_str(), c.repetition))
                .collect();
            runs.dedup();
            let mut settings: Vec<String> = Vec::new();
            for change in &changes {
                let text = format!(
                    "{} = {} (recorded {})",
                    change.name,
                    change.setting.as_deref().unwrap_or("NULL"),
                    change.recorded.as_deref().unwrap_or("nothing")
                );
                if !settings.contains(&text) {
                    settings.push(text);
                }
            }
            let more = settings.len().saturating_sub(CHANGED_SETTINGS_NAMED);
            settings.truncate(CHANGED_SETTINGS_NAMED);
            if more > 0 {
                settings.push(format!("{more} more"));
            }
            format!(
                "\"{target}\": {} run(s) started with settings other than the target's record — the server was changed during the lab by something other than stampede: {}",
                runs.len(),
                settings.join(", ")
            )
        })
        .collect()
}

/// "run 17 (b pgbench select-only scale 1 × 1 clients, round 3) is excluded …": a run left out
/// is never left out silently.
pub fn excluded_runs(excluded: &[StoredRun]) -> Option<String> {
    if excluded.is_empty() {
        return None;
    }
    let runs: Vec<String> = excluded.iter().map(|run| run_label(run, "")).collect();
    Some(format!(
        "{} excluded from the analysis by --exclude-run; its round's other runs stay, unpaired",
        runs.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(target: &str, source: &str, cflags: &str, configure: &str) -> TargetBuild {
        TargetBuild {
            target: target.into(),
            binary_source: source.into(),
            pg_config: Some(format!("CFLAGS = {cflags}\nCONFIGURE = {configure}")),
        }
    }

    fn warnings_for(builds: &[TargetBuild]) -> Vec<String> {
        let targets: Vec<&str> = builds.iter().map(|b| b.target.as_str()).collect();
        mixed_builds(&WarningInputs {
            runs: &[],
            targets: &targets,
            metric: &Metric::Tps,
            client_cores: None,
            builds,
        })
    }

    #[test]
    fn targets_of_one_remote_server_are_said_to_share_it() {
        let remote = |target: &str, role: &str, address: &str| {
            TargetBuild {
            target: target.into(),
            binary_source: format!(
                "server not started by stampede (role \"{role}\"; system identifier 7; answered on {address})"
            ),
            pg_config: None,
        }
        };
        let builds = [
            remote("a", "bench", "10.0.0.5:5432"),
            remote("b", "admin", "10.0.0.5:5432"),
            remote("c", "bench", "10.0.0.6:5432"),
        ];
        let targets = ["a", "b", "c"];
        let said = shared_servers(&WarningInputs {
            runs: &[],
            targets: &targets,
            metric: &Metric::Tps,
            client_cores: None,
            builds: &builds,
        });
        assert_eq!(
            said,
            ["\"a\", \"b\" ran on one server (system identifier 7; answered on 10.0.0.5:5432): their runs took turns on it, each target in databases of its own"]
        );
    }

    #[test]
    fn builds_that_differ_say_how_and_equal_builds_say_nothing() {
        let o2 = "-Wall -fwrapv -O2";
        let same = [
            build(
                "a",
                "built from source: x",
                o2,
                "'--prefix=/cache/a' '--enable-debug'",
            ),
            build(
                "b",
                "built from source: y",
                o2,
                "'--prefix=/cache/b' '--enable-debug'",
            ),
        ];
        assert!(warnings_for(&same).is_empty());
        let flags = [
            build(
                "zonky",
                ZONKY_BINARIES,
                "-Wall -fwrapv -Os",
                "'--prefix=/z' 'CFLAGS=-Os' '--with-icu'",
            ),
            build(
                "o2",
                "built from source: y",
                o2,
                "'--prefix=/cache/b' '--with-icu'",
            ),
        ];
        assert_eq!(
            warnings_for(&flags),
            [format!("\"zonky\" ({ZONKY_BINARIES}) and \"o2\" (built from source: y) were built differently (CFLAGS \"-Os\" vs \"-O2\"): part of a difference may be the build's, not the version's")]
        );
        // Debian's 18 and 19: new warnings, their own path maps and version labels, the same
        // code generation.
        let debian = [
            build(
                "pg18",
                "Debian's packages: postgresql-18",
                "-Wall -Wmissing-prototypes -g -O2 -ffile-prefix-map=/build/a=. -Wp,-D_FORTIFY_SOURCE=2",
                "'--with-extra-version= (Debian 18.6-1)' '--with-lz4' '--enable-tap-tests'",
            ),
            build(
                "pg19",
                "Debian's packages: postgresql-19",
                "-Wall -Wmissing-variable-declarations -g -O2 -ffile-prefix-map=/build/b=. -Wp,-D_FORTIFY_SOURCE=2",
                "'--with-extra-version= (Debian 19~rc1-1)' '--with-lz4'",
            ),
        ];
        assert!(
            warnings_for(&debian).is_empty(),
            "{:?}",
            warnings_for(&debian)
        );
        let fortify = [
            debian[0].clone(),
            build(
                "pg19",
                "Debian's packages: postgresql-19",
                "-Wall -g -O2 -Wp,-D_FORTIFY_SOURCE=3",
                "'--with-lz4'",
            ),
        ];
        assert_eq!(warnings_for(&fortify).len(), 1);
    }
}
