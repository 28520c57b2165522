//! Why two targets differ: settings that differ (the configured ones apart from the rest),
//! statements whose plans differ, and where each target's sessions waited.

use serde::Serialize;

use stampede_store::{configured_source, SettingRow, TargetSettings};

/// Settings that differ by construction between any two clusters of a lab, or that the server
/// derives from configured ones (shared memory follows shared_buffers).
const INFRASTRUCTURE: [&str; 12] = [
    "shared_memory_size",
    "shared_memory_size_in_huge_pages",
    "port",
    "unix_socket_directories",
    "data_directory",
    "config_file",
    "hba_file",
    "ident_file",
    "external_pid_file",
    "log_directory",
    "server_version",
    "server_version_num",
];

/// Settings initdb itself writes into postgresql.conf (sized to the machine, or the locale's),
/// which a version that adds one has "from a configuration file" without anyone configuring it
/// (18's autovacuum_worker_slots): beside a version without it, not a configured difference.
const WRITTEN_BY_INITDB: [&str; 3] = [
    "autovacuum_worker_slots",
    "dynamic_shared_memory_type",
    "default_text_search_config",
];

/// Top wait states listed per target.
const TOP_WAITS: usize = 5;

#[derive(Debug, Serialize)]
pub struct SettingDiff {
    pub name: String,
    pub base: Option<String>,
    pub other: Option<String>,
    pub base_source: Option<String>,
    pub other_source: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PlanDiff {
    pub dataset: String,
    pub query: String,
    pub base_plan: String,
    pub plan: String,
    /// The plan nodes only one side has (each side's, in plan order): what changed, in a line.
    pub nodes_only_in_base: Vec<String>,
    pub nodes_only_in_other: Vec<String>,
}

impl PlanDiff {
    /// "Gather, Parallel Seq Scan on lineitem → Seq Scan on lineitem", or None when the two
    /// plans have the same nodes (they differ in their details: keys, filters, order).
    pub fn changed_nodes(&self) -> Option<String> {
        if self.nodes_only_in_base.is_empty() && self.nodes_only_in_other.is_empty() {
            return None;
        }
        let side = |nodes: &[String]| match nodes {
            [] => "(none)".to_string(),
            _ => nodes.join(", "),
        };
        Some(format!(
            "{} → {}",
            side(&self.nodes_only_in_base),
            side(&self.nodes_only_in_other)
        ))
    }
}

#[derive(Debug, Serialize)]
pub struct WhyPanel {
    pub target: String,
    pub base_version: String,
    pub version: String,
    /// The two targets are different engines: `configured_settings` holds each side's own
    /// configured settings side by side (no name is shared), and nothing is diffed.
    pub cross_engine: bool,
    /// Set in a configuration file (the lab's profile or the spec's settings) on either side.
    pub configured_settings: Vec<SettingDiff>,
    /// Differences nobody configured: defaults of another version or build.
    pub other_settings: Vec<SettingDiff>,
    pub plan_differences: Vec<PlanDiff>,
    /// (wait_event_type:wait_event, average sessions in it), busiest first.
    pub base_waits: Vec<(String, f64)>,
    pub waits: Vec<(String, f64)>,
}

impl WhyPanel {
    /// The two kinds of setting difference, titled, for rendering.
    pub fn setting_groups(&self) -> [(&'static str, &[SettingDiff]); 2] {
        if self.cross_engine {
            return [
                (
                    "Each engine's configured settings, side by side (engine-specific: not a diff)",
                    &self.configured_settings,
                ),
                ("", &[]),
            ];
        }
        [
            ("Configured settings that differ", &self.configured_settings),
            (
                "Settings nobody configured that differ",
                &self.other_settings,
            ),
        ]
    }
}

pub struct WhyInputs<'a> {
    pub settings: &'a [TargetSettings],
    /// (target, dataset, query, plan)
    pub plans: &'a [[String; 4]],
    /// (target, state, average sessions)
    pub waits: &'a [(String, String, f64)],
}

pub fn panel(inputs: &WhyInputs<'_>, base: &str, target: &str) -> WhyPanel {
    // A target whose version was not captured shows none.
    let find = |name: &str| {
        inputs
            .settings
            .iter()
            .find(|captured| captured.target == name)
            .map_or((String::new(), &[][..]), |captured| {
                (
                    captured.server_version.clone().unwrap_or_default(),
                    &captured.settings[..],
                )
            })
    };
    let (base_version, base_settings) = find(base);
    let (version, settings) = find(target);
    let cross_engine = engine_of(&base_version) != engine_of(&version);
    let (configured_settings, other_settings) = if cross_engine {
        (side_by_side(base_settings, settings), Vec::new())
    } else {
        configured_apart(setting_diffs(base_settings, settings))
    };
    WhyPanel {
        target: target.to_string(),
        base_version,
        version,
        cross_engine,
        configured_settings,
        other_settings,
        plan_differences: plan_diffs(inputs.plans, base, target),
        base_waits: top_waits(inputs.waits, base),
        waits: top_waits(inputs.waits, target),
    }
}

/// The engine a `version()` string names; None when the version was not captured.
pub fn engine_of(version: &str) -> Option<&'static str> {
    if version.is_empty() {
        None
    } else if version.starts_with("PostgreSQL") {
        Some("PostgreSQL")
    } else if version.contains("MariaDB") {
        Some("MariaDB")
    } else {
        Some("MySQL")
    }
}

/// Each side's settings set in a configuration file, the base's first.
fn side_by_side(base: &[SettingRow], other: &[SettingRow]) -> Vec<SettingDiff> {
    let configured = |rows: &[SettingRow]| -> Vec<SettingRow> {
        rows.iter()
            .filter(|row| configured_source(row.source.as_deref()))
            .filter(|row| !INFRASTRUCTURE.contains(&row.name.as_str()))
            .cloned()
            .collect()
    };
    let base_rows = configured(base).into_iter().map(|row| SettingDiff {
        base: with_unit(&row),
        base_source: row.source.clone(),
        name: row.name,
        other: None,
        other_source: None,
    });
    let other_rows = configured(other).into_iter().map(|row| SettingDiff {
        other: with_unit(&row),
        other_source: row.source.clone(),
        name: row.name,
        base: None,
        base_source: None,
    });
    base_rows.chain(other_rows).collect()
}

/// The differences set in a configuration file on either side, apart from the rest.
fn configured_apart(diffs: Vec<SettingDiff>) -> (Vec<SettingDiff>, Vec<SettingDiff>) {
    diffs.into_iter().partition(|d| {
        let added_by_a_version = d.base.is_none() || d.other.is_none();
        let initdb_s = WRITTEN_BY_INITDB.contains(&d.name.as_str()) && added_by_a_version;
        !initdb_s
            && [&d.base_source, &d.other_source]
                .iter()
                .any(|s| configured_source(s.as_deref()))
    })
}

/// What the why panel says of a target without wait-event samples (probes off, or a server
/// that could not be sampled): missing, not zero.
pub const NO_WAIT_SAMPLES: &str = "none sampled";

pub(super) fn with_unit(row: &SettingRow) -> Option<String> {
    let value = row.setting.clone()?;
    Some(match row.unit.as_deref() {
        Some(unit) => format!("{value} {unit}"),
        None => value,
    })
}

/// A setting's value in its unit's base (bytes, milliseconds), so that one value in two
/// versions' units is one value: 9.6's max_wal_size "64 × 16MB" is 11's "1024 MB".
pub(super) fn normalized(row: &SettingRow) -> Option<String> {
    let value = row.setting.as_deref()?;
    let Some(unit) = row.unit.as_deref() else {
        return Some(value.to_string());
    };
    let Some((size, _)) = stampede_control::postgres::setting_value::unit_size(unit) else {
        return with_unit(row);
    };
    match value.parse::<f64>() {
        // -1 and 0 mean "off" or "default" in every unit.
        Ok(number) if number > 0.0 => Some(format!("{}", number * size)),
        _ => Some(value.to_string()),
    }
}

fn setting_diffs(base: &[SettingRow], other: &[SettingRow]) -> Vec<SettingDiff> {
    let mut names: Vec<&str> = base.iter().chain(other).map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter(|name| !INFRASTRUCTURE.contains(name))
        .filter_map(|name| {
            let b = base.iter().find(|s| s.name == name);
            let o = other.iter().find(|s| s.name == name);
            let (bv, ov) = (b.and_then(with_unit), o.and_then(with_unit));
            (b.and_then(normalized) != o.and_then(normalized)).then(|| SettingDiff {
                name: name.to_string(),
                base: bv,
                other: ov,
                base_source: b.and_then(|s| s.source.clone()),
                other_source: o.and_then(|s| s.source.clone()),
            })
        })
        .collect()
}

fn plan_diffs(plans: &[[String; 4]], base: &str, target: &str) -> Vec<PlanDiff> {
    plans
        .iter()
        .filter(|p| p[0] == target)
        .filter_map(|p| {
            let base_plan = plans
                .iter()
                .find(|b| b[0] == base && b[1] == p[1] && b[2] == p[2])?;
            (without_costs(&base_plan[3]) != without_costs(&p[3])).then(|| {
                let (base_nodes, nodes) = (plan_nodes(&base_plan[3]), plan_nodes(&p[3]));
                PlanDiff {
                    dataset: p[1].clone(),
                    query: p[2].clone(),
                    base_plan: base_plan[3].clone(),
                    plan: p[3].clone(),
                    nodes_only_in_base: missing_from(&base_nodes, &nodes),
                    nodes_only_in_other: missing_from(&nodes, &base_nodes),
                }
            })
        })
        .collect()
}

/// The nodes of an EXPLAIN text, in plan order: its first line and every `->` line, without
/// the estimates (`Parallel Seq Scan on lineitem`).
fn plan_nodes(plan: &str) -> Vec<String> {
    plan.lines()
        .enumerate()
        .filter_map(|(at, line)| {
            let line = line.trim_start();
            let node = match line.strip_prefix("->") {
                Some(node) => node.trim_start(),
                None if at == 0 => line,
                None => return None,
            };
            let node = node.find("  (").map_or(node, |end| &node[..end]);
            Some(node.trim_end().to_string())
        })
        .collect()
}

/// The nodes of `nodes` that `other` does not have (as many times as it lacks them).
fn missing_from(nodes: &[String], other: &[String]) -> Vec<String> {
    let mut left: Vec<&String> = other.iter().collect();
    nodes
        .iter()
        .filter(|node| match left.iter().position(|o| o == node) {
            Some(at) => {
                left.remove(at);
                false
            }
            None => true,
        })
        .cloned()
        .collect()
}

/// A plan's shape: the same nodes with other cost estimates are the same plan.
fn without_costs(plan: &str) -> String {
    plan.lines()
        .map(|line| match line.find("  (cost=") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn top_waits(waits: &[(String, String, f64)], target: &str) -> Vec<(String, f64)> {
    waits
        .iter()
        .filter(|(t, _, _)| t == target)
        .take(TOP_WAITS)
        .map(|(_, state, sessions)| (state.clone(), *sessions))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_change_names_the_nodes_each_side_has_alone() {
        let parallel = "Finalize GroupAggregate  (cost=1.00..2.00 rows=6 width=236)\n  Group Key: l_returnflag\n  ->  Gather Merge  (cost=1.00..2.00 rows=12 width=236)\n        Workers Planned: 2\n        ->  Sort  (cost=1.00..2.00 rows=6 width=236)\n              ->  Partial HashAggregate  (cost=1.00..2.00 rows=6 width=236)\n                    ->  Parallel Seq Scan on lineitem  (cost=0.00..1.00 rows=250 width=25)";
        let serial = "Sort  (cost=1.00..2.00 rows=6 width=236)\n  ->  HashAggregate  (cost=1.00..2.00 rows=6 width=236)\n        ->  Seq Scan on lineitem  (cost=0.00..1.00 rows=600 width=25)";
        let plans = [
            [
                "parallel".to_string(),
                "d".into(),
                "q1".into(),
                parallel.into(),
            ],
            ["serial".to_string(), "d".into(), "q1".into(), serial.into()],
        ];
        let diffs = plan_diffs(&plans, "parallel", "serial");
        assert_eq!(
            diffs[0].changed_nodes().unwrap(),
            "Finalize GroupAggregate, Gather Merge, Partial HashAggregate, Parallel Seq Scan on lineitem → HashAggregate, Seq Scan on lineitem"
        );
    }

    fn setting(name: &str, value: &str, source: &str) -> SettingRow {
        SettingRow {
            name: name.into(),
            setting: Some(value.into()),
            unit: None,
            source: Some(source.into()),
            boot_val: None,
            context: None,
        }
    }

    #[test]
    fn one_value_in_two_versions_units_is_no_difference() {
        let with = |value: &str, unit: &str| SettingRow {
            unit: Some(unit.into()),
            ..setting("max_wal_size", value, "default")
        };
        let old = [
            with("64", "16MB"),
            SettingRow {
                name: "wal_segment_size".into(),
                ..with("2048", "8kB")
            },
        ];
        let new = [
            with("1024", "MB"),
            SettingRow {
                name: "wal_segment_size".into(),
                ..with("16777216", "B")
            },
        ];
        assert!(setting_diffs(&old, &new).is_empty());
        let larger = [with("2048", "MB"), new[1].clone()];
        let diffs = setting_diffs(&old, &larger);
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].base.as_deref(), Some("64 16MB"));
        assert_eq!(diffs[0].other.as_deref(), Some("2048 MB"));
    }

    #[test]
    fn configured_and_unconfigured_differences_are_apart() {
        let base = [
            setting("shared_buffers", "4096", "configuration file"),
            setting("jit", "on", "default"),
            setting("port", "1", "configuration file"),
            setting("work_mem", "4096", "default"),
        ];
        let other = [
            setting("shared_buffers", "16384", "configuration file"),
            setting("jit", "off", "default"),
            setting("port", "2", "configuration file"),
            setting("work_mem", "4096", "default"),
            // 18's initdb writes it; 15 has no such setting.
            setting("autovacuum_worker_slots", "16", "configuration file"),
        ];
        let inputs = WhyInputs {
            settings: &[
                TargetSettings {
                    target: "a".into(),
                    server_version: Some("15".into()),
                    settings: base.to_vec(),
                },
                TargetSettings {
                    target: "b".into(),
                    server_version: Some("16".into()),
                    settings: other.to_vec(),
                },
            ],
            plans: &[
                [
                    "a".into(),
                    "d".into(),
                    "q".into(),
                    "Seq Scan  (cost=0.00..1.00 rows=1)".into(),
                ],
                [
                    "b".into(),
                    "d".into(),
                    "q".into(),
                    "Seq Scan  (cost=0.00..2.00 rows=1)".into(),
                ],
                ["a".into(), "d".into(), "r".into(), "Seq Scan on t".into()],
                [
                    "b".into(),
                    "d".into(),
                    "r".into(),
                    "Index Scan using t_pkey on t".into(),
                ],
            ],
            waits: &[("b".into(), "CPU:CPU".into(), 1.5)],
        };
        let panel = panel(&inputs, "a", "b");
        let names = |d: &[SettingDiff]| d.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&panel.configured_settings), ["shared_buffers"]);
        assert_eq!(
            names(&panel.other_settings),
            ["autovacuum_worker_slots", "jit"]
        );
        assert_eq!(
            panel.plan_differences.len(),
            1,
            "costs alone do not make a new plan"
        );
        assert_eq!(panel.plan_differences[0].query, "r");
        assert_eq!(panel.waits, [("CPU:CPU".to_string(), 1.5)]);
        assert!(panel.base_waits.is_empty());
    }
}
