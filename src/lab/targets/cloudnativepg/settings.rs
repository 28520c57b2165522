//! A target's settings on a Cluster that targets of one shape share: before each of its runs
//! the target's settings are patched into the Cluster's `postgresql.parameters` (those another
//! target added and this one does not give are removed), and the lab waits until the primary
//! runs with them — the operator reloads the instances, and restarts them one after another
//! for a parameter only a restart sets — and every replica shows them, before anything is
//! measured. The running server checks each name and value first: the operator writes the
//! parameters into every instance's configuration, and an instance restarted with one it
//! cannot read does not come back (the lab would wait for it until `ready_timeout`). For that
//! reason a Cluster is created with its shape's parameters alone and its first target's
//! settings are patched in once it is healthy, as every later target's are.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::lab::targets::setting_names::is_extension_setting;
use stampede_base::error::{Failure, Kind};
use stampede_conn::ConnSpec;
use stampede_control::postgres::queries::{query_rows, query_string};
use stampede_control::postgres::setting_value::{same_value, value_problem, Accepted, Reported};
use stampede_control::postgres::system_settings::quote;
use stampede_kube::cloudnativepg::{HealthWait, PostgresCluster};
use stampede_kube::Cluster;

/// The annotation naming the settings the lab put among the parameters on top of the shape's
/// (a JSON object): the next target of a shared Cluster removes those it does not give.
pub const SETTINGS_ANNOTATION: &str = "stampede.dev/settings";

/// What a target sets on a Cluster.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClusterSettings {
    /// The Cluster's own parameters (its shape's): every target of it keeps them.
    pub shape: BTreeMap<String, String>,
    /// The target's settings, on top of them.
    pub own: BTreeMap<String, String>,
}

/// The change from what a Cluster holds to a target's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsPatch {
    /// A value to set, or None to remove one another target set.
    pub parameters: BTreeMap<String, Option<String>>,
    /// The annotation saying which settings the lab put in, as it will be.
    pub applied: String,
}

impl ClusterSettings {
    /// The annotation's text for these settings (the lab's record, on the Cluster, of what it
    /// set on top of the shape's parameters).
    pub fn annotation(&self) -> String {
        serde_json::to_string(&self.own).expect("plain data serializes to JSON")
    }

    /// What to patch for the Cluster to hold these settings; None when it holds them.
    pub fn patch(&self, cluster: &PostgresCluster) -> Option<SettingsPatch> {
        let annotated = cluster
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SETTINGS_ANNOTATION));
        let applied: BTreeMap<String, String> = annotated
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        let held = cluster
            .spec
            .postgresql
            .as_ref()
            .map(|p| p.parameters.clone())
            .unwrap_or_default();
        let mut parameters = BTreeMap::new();
        for (name, value) in &self.own {
            if held.get(name) != Some(value) {
                parameters.insert(name.clone(), Some(value.clone()));
            }
        }
        for name in applied.keys() {
            if !self.own.contains_key(name) && !self.shape.contains_key(name) {
                parameters.insert(name.clone(), None);
            }
        }
        let unchanged = parameters.is_empty() && applied == self.own;
        (!unchanged).then(|| SettingsPatch {
            parameters,
            applied: self.annotation(),
        })
    }
}

/// How long the operator may take, what to tell the user, and the lab's stop flag.
pub struct SettingsWait<'a> {
    pub timeout: Duration,
    pub notes: &'a mut dyn FnMut(&str),
    pub stop: Arc<AtomicBool>,
}

/// Patches the target's settings into the Cluster when it does not hold them, and waits until
/// the primary (reached at `primary`) runs with them and every instance is ready again.
pub fn apply(
    cluster: &Cluster,
    (namespace, name): (&str, &str),
    primary: &ConnSpec,
    settings: &ClusterSettings,
    wait: SettingsWait<'_>,
) -> Result<(), Failure> {
    let current = cluster
        .postgres_cluster(namespace, name)
        .map_err(|e| Failure::run(e.0))?
        .ok_or_else(|| Failure::run(format!("Cluster \"{name}\" is gone")))?;
    let Some(patch) = settings.patch(&current) else {
        return Ok(());
    };
    check_before_patch(primary, &patch.parameters)?;
    let since = query_string(primary, "SELECT now()::text")?;
    let annotations = BTreeMap::from([(SETTINGS_ANNOTATION.to_string(), patch.applied.clone())]);
    cluster
        .patch_postgres_parameters(namespace, name, &patch.parameters, &annotations)
        .map_err(|e| Failure::input(e.0))?;
    // Only the lab's record changed: the instances' configuration did not, and nothing reloads.
    if patch.parameters.is_empty() {
        return Ok(());
    }
    (wait.notes)(&format!(
        "Cluster \"{name}\": parameters patched ({}); waiting for the operator to apply them",
        described(&patch.parameters)
    ));
    let started = Instant::now();
    let mut said = String::new();
    loop {
        let waiting = match in_effect(primary, &since, &settings.own)? {
            None => break,
            Some(waiting) => waiting,
        };
        if waiting != said {
            (wait.notes)(&format!("Cluster \"{name}\": {waiting}"));
            said = waiting;
        }
        if wait.stop.load(Ordering::SeqCst) {
            return Err(Failure::run(format!(
                "stopped while the operator applied Cluster \"{name}\"'s parameters"
            )));
        }
        if started.elapsed() > wait.timeout {
            return Err(Failure::run(format!(
                "Cluster \"{name}\": the parameters were not in effect within {} s of the patch: {said}",
                wait.timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // The replicas are restarted before the primary; this waits for the last to be ready.
    let deadline = started + wait.timeout;
    cluster
        .wait_healthy(
            namespace,
            name,
            HealthWait {
                timeout: deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_secs(1)),
                stop: wait.stop.clone(),
                on_progress: &mut *wait.notes,
            },
        )
        .map_err(|e| Failure::run(e.0))?;
    let replicas = replicas_in_effect(
        cluster,
        (namespace, name),
        primary,
        &settings.own,
        deadline,
        &wait,
    )?;
    (wait.notes)(&format!(
        "Cluster \"{name}\": the settings are in effect on the primary and {replicas} replica(s)"
    ));
    Ok(())
}

/// Refuses, before anything is patched, a setting the Cluster's PostgreSQL does not know (an
/// extension's dotted name aside: defined when it loads) or a value it would not take.
fn check_before_patch(
    primary: &ConnSpec,
    parameters: &BTreeMap<String, Option<String>>,
) -> Result<(), Failure> {
    let set: Vec<(&String, &String)> = parameters
        .iter()
        .filter_map(|(name, value)| value.as_ref().map(|value| (name, value)))
        .collect();
    if set.is_empty() {
        return Ok(());
    }
    let names = set
        .iter()
        .map(|(name, _)| quote(&name.to_lowercase()))
        .collect::<Vec<_>>()
        .join(", ");
    let rows = query_rows(
        primary,
        &format!(
            "SELECT name, setting, unit, vartype, min_val, max_val, enumvals::text, current_setting('server_version')
             FROM pg_settings WHERE name IN ({names})"
        ),
    )?;
    let refused = |name: &str, why: String| {
        Failure::input(format!(
            "settings.{name}: {why}; nothing was patched into the Cluster"
        ))
    };
    for (name, value) in set {
        let lower = name.to_lowercase();
        let Some(row) = rows
            .iter()
            .find(|row| row[0].as_deref() == Some(lower.as_str()))
        else {
            if is_extension_setting(name) {
                continue;
            }
            let version = query_string(primary, "SHOW server_version")?;
            return Err(refused(
                name,
                format!("not a setting of the Cluster's PostgreSQL ({version})"),
            ));
        };
        let setting = row[1].clone().unwrap_or_default();
        let reported = Reported {
            setting: &setting,
            unit: row[2].as_deref(),
            vartype: row[3].as_deref().unwrap_or("string"),
        };
        let accepted = Accepted {
            min: row[4].as_deref(),
            max: row[5].as_deref(),
            enum_values: row[6].as_deref(),
        };
        if let Some(problem) = value_problem(value, reported, accepted) {
            return Err(refused(
                &format!("{name} = {}", quote(value)),
                format!(
                    "{problem} (the Cluster's PostgreSQL {})",
                    row[7].as_deref().unwrap_or("")
                ),
            ));
        }
    }
    Ok(())
}

/// Waits until each replica (an endpoint of the Cluster's `-ro` Service) shows every one of
/// `own` as the primary does; the count of replicas. A replica the operator still restarts
/// does not answer, and is waited for.
fn replicas_in_effect(
    cluster: &Cluster,
    (namespace, name): (&str, &str),
    primary: &ConnSpec,
    own: &BTreeMap<String, String>,
    deadline: Instant,
    wait: &SettingsWait<'_>,
) -> Result<usize, Failure> {
    let addresses = cluster
        .service_endpoints(namespace, &format!("{name}-ro"))
        .map_err(|e| Failure::run(e.0))?;
    for address in &addresses {
        let replica =
            ConnSpec {
                hostaddr: Some(address.parse().map_err(|e| {
                    Failure::run(format!("the -ro Service's endpoint {address}: {e}"))
                })?),
                ..primary.clone()
            };
        loop {
            let why = match check_values(&replica, own) {
                Ok(None) => break,
                Ok(Some(waiting)) => waiting,
                Err(failure) if failure.kind() == Kind::Input => {
                    return Err(failure.map_message(|m| format!("replica {address}: {m}")))
                }
                Err(failure) => failure.into_message(),
            };
            if wait.stop.load(Ordering::SeqCst) {
                return Err(Failure::run(format!(
                    "stopped while the operator applied Cluster \"{name}\"'s parameters"
                )));
            }
            if Instant::now() > deadline {
                return Err(Failure::run(format!(
                    "Cluster \"{name}\": replica {address} did not show the settings within {} s of the patch: {why}",
                    wait.timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    Ok(addresses.len())
}

/// "shared_buffers = '512MB', work_mem removed".
fn described(parameters: &BTreeMap<String, Option<String>>) -> String {
    parameters
        .iter()
        .map(|(name, value)| match value {
            Some(value) => format!("{name} = {}", quote(value)),
            None => format!("{name} removed"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// None once the primary has read its configuration since `since`, has no setting waiting
/// for a restart, and shows every one of `own`; else what it waits for. A value the server
/// refuses ends the wait at once.
fn in_effect(
    primary: &ConnSpec,
    since: &str,
    own: &BTreeMap<String, String>,
) -> Result<Option<String>, Failure> {
    let state = query_rows(
        primary,
        &format!(
            "SELECT pg_conf_load_time() > {}::timestamptz,
                    (SELECT string_agg(name, ', ' ORDER BY name) FROM pg_settings WHERE pending_restart)",
            quote(since)
        ),
    );
    // A primary that does not answer is being restarted.
    let Ok(state) = state else {
        return Ok(Some(
            "waiting for the primary to accept connections again".into(),
        ));
    };
    let row = state.first().cloned().unwrap_or_default();
    if row.first().cloned().flatten().as_deref() != Some("t") {
        return Ok(Some(
            "waiting for the primary to read its new configuration".into(),
        ));
    }
    if let Some(pending) = row.get(1).cloned().flatten() {
        return Ok(Some(format!(
            "waiting for the operator to restart the instances ({pending}: only a restart sets them)"
        )));
    }
    check_values(primary, own)
}

/// Each of `own` as the primary shows it: a value it shows otherwise after a reload that set no
/// restart pending is one it refused (its configuration file says why).
fn check_values(
    primary: &ConnSpec,
    own: &BTreeMap<String, String>,
) -> Result<Option<String>, Failure> {
    if own.is_empty() {
        return Ok(None);
    }
    let names = own
        .keys()
        .map(|name| quote(&name.to_lowercase()))
        .collect::<Vec<_>>()
        .join(", ");
    let rows = query_rows(
        primary,
        &format!(
            "SELECT s.name, s.setting, s.unit, s.vartype,
                    (SELECT string_agg(f.error, '; ') FROM pg_file_settings f WHERE f.name = s.name AND f.error IS NOT NULL)
             FROM pg_settings s WHERE s.name IN ({names})"
        ),
    )?;
    for (name, wanted) in own {
        let row = rows
            .iter()
            .find(|row| row[0].as_deref() == Some(name.to_lowercase().as_str()));
        let Some(row) = row else {
            return Err(Failure::input(format!(
                "{name}: the Cluster's PostgreSQL has no such parameter"
            )));
        };
        let setting = row[1].clone().unwrap_or_default();
        let reported = Reported {
            setting: &setting,
            unit: row[2].as_deref(),
            vartype: row[3].as_deref().unwrap_or("string"),
        };
        if same_value(wanted, reported) {
            continue;
        }
        if let Some(error) = row[4].clone() {
            return Err(Failure::input(format!(
                "{name} = {}: the Cluster's PostgreSQL refused it ({error}; its log says why)",
                quote(wanted)
            )));
        }
        return Ok(Some(format!(
            "waiting for {name} = {} (the primary shows {setting}{})",
            quote(wanted),
            row[2]
                .as_deref()
                .map(|u| format!(" × {u}"))
                .unwrap_or_default()
        )));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use stampede_kube::cloudnativepg::{ClusterSpec, PostgresConfiguration};

    fn holding(parameters: &[(&str, &str)], applied: Option<&str>) -> PostgresCluster {
        let metadata = ObjectMeta {
            annotations: applied
                .map(|text| BTreeMap::from([(SETTINGS_ANNOTATION.to_string(), text.to_string())])),
            ..ObjectMeta::default()
        };
        let spec = ClusterSpec {
            postgresql: Some(PostgresConfiguration {
                parameters: parameters
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..PostgresConfiguration::default()
            }),
            ..ClusterSpec::default()
        };
        PostgresCluster::new(metadata, spec)
    }

    fn settings(shape: &[(&str, &str)], own: &[(&str, &str)]) -> ClusterSettings {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        ClusterSettings {
            shape: map(shape),
            own: map(own),
        }
    }

    #[test]
    fn another_target_s_settings_are_replaced_and_the_shape_s_kept() {
        // The Cluster as target "a" left it: its shape's max_connections, a's two settings.
        let cluster = holding(
            &[
                ("max_connections", "200"),
                ("shared_buffers", "128MB"),
                ("work_mem", "8MB"),
            ],
            Some(r#"{"shared_buffers":"128MB","work_mem":"8MB"}"#),
        );
        let b = settings(&[("max_connections", "200")], &[("shared_buffers", "1GB")]);
        let patch = b.patch(&cluster).expect("b's settings differ");
        assert_eq!(
            patch.parameters,
            BTreeMap::from([
                ("shared_buffers".to_string(), Some("1GB".to_string())),
                ("work_mem".to_string(), None),
            ])
        );
        assert_eq!(patch.applied, r#"{"shared_buffers":"1GB"}"#);
        assert_eq!(
            described(&patch.parameters),
            "shared_buffers = '1GB', work_mem removed"
        );
        // The Cluster as it is once patched needs no other change.
        let patched = holding(
            &[("max_connections", "200"), ("shared_buffers", "1GB")],
            Some(&patch.applied),
        );
        assert_eq!(b.patch(&patched), None);
    }

    #[test]
    fn a_target_without_settings_removes_the_others_and_the_record_counts() {
        let cluster = holding(&[("work_mem", "8MB")], Some(r#"{"work_mem":"8MB"}"#));
        let plain = settings(&[], &[]);
        let patch = plain.patch(&cluster).unwrap();
        assert_eq!(
            patch.parameters,
            BTreeMap::from([("work_mem".to_string(), None)])
        );
        assert_eq!(patch.applied, "{}");
        // A Cluster holding the values but not the lab's record of them gets the record.
        let unrecorded = holding(&[("work_mem", "8MB")], None);
        let own = settings(&[], &[("work_mem", "8MB")]);
        let patch = own.patch(&unrecorded).unwrap();
        assert!(patch.parameters.is_empty());
        assert_eq!(patch.applied, r#"{"work_mem":"8MB"}"#);
    }
}
