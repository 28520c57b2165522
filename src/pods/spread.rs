//! What a family states to get `--pods`: its command, how its work splits (how much there is,
//! in its own words, and the option that gives more), the option that fixes its one random
//! seed, its `--json`, the files its command line names (shipped in the Job's ConfigMap) and its
//! engine's password variable. From that the pods' command line is made here — the user's words
//! as given, Kubernetes' options removed — and the Job launched; in the pods the family's one
//! pipeline runs with its `Place` (`place.rs`).

use std::collections::BTreeMap;

use super::launch::{pod_json_path, replace_option, without_kube_options, Launch};
use super::options::KubeArgs;
use stampede_base::error::{CommandResult, Failure};

/// Words that name files, rewritten to the ConfigMap's copies; the files' contents by name.
pub type ShipFiles<'a> =
    dyn Fn(&[String]) -> Result<(Vec<String>, BTreeMap<String, String>), Failure> + 'a;

/// How a run's work splits over the pods: each pod takes at least one.
pub struct Split {
    pub count: usize,
    /// What splits, as the refusal says it: "client(s)", "virtual user(s)".
    pub what: &'static str,
    /// The option that gives more, with its separator: "-c ", "--threads=".
    pub option: &'static str,
}

/// A family's `--pods` run, as it states it.
pub struct Spread<'a> {
    /// The command's words before its options ("pgbench", or "tpcc run"); the Job's name.
    pub command: &'a [&'a str],
    pub kube: &'a KubeArgs,
    pub split: Split,
    /// The family's own checks (a server the pods can reach, options a pod cannot honour),
    /// reported after the split's.
    pub checks: CommandResult,
    /// The option that fixes the run's random seed, and the seed: every pod draws from it.
    pub seed: (&'static str, u64),
    /// The user's `--json FILE`: the pods write theirs where the launcher reads it back.
    pub json: Option<String>,
    pub ship: Option<&'a ShipFiles<'a>>,
    /// Options the pods need that the user did not give (pgbench's `--jobs=N`).
    pub extra: Vec<String>,
    /// PGPASSWORD, or MYSQL_PWD for a MySQL or MariaDB server (`--password-secret`).
    pub password_variable: &'static str,
}

impl Spread<'_> {
    /// Checks the split, makes the pods' command line from this process's and runs the Job.
    pub fn launch(self) -> CommandResult {
        // The words after `stampede <command>`, as the user gave them.
        let given: Vec<String> = std::env::args().skip(1 + self.command.len()).collect();
        let (args, files) = self.pod_line(&given)?;
        Launch {
            command: self.command,
            kube: self.kube,
            args,
            files,
            json_path: self.json.clone(),
            password_variable: self.password_variable,
            serves_metrics: false,
        }
        .run()
    }

    /// The pods' command line made from the user's `given` words, and the files it names.
    pub fn pod_line(
        &self,
        given: &[String],
    ) -> Result<(Vec<String>, BTreeMap<String, String>), Failure> {
        let pods = self.kube.pods.expect("a spread run has --pods");
        let Split {
            count,
            what,
            option,
        } = self.split;
        if count < pods {
            return Err(Failure::input(format!(
                "{count} {what} cannot be spread over {pods} pods: give {option}{pods} or more"
            )));
        }
        self.checks.clone()?;
        let mut args = without_kube_options(given);
        let mut files = BTreeMap::new();
        if let Some(ship) = self.ship {
            (args, files) = ship(&args)?;
        }
        args = replace_option(&args, "--json", self.json.as_ref().map(|_| pod_json_path()));
        let (seed_option, seed) = self.seed;
        args = replace_option(&args, seed_option, Some(&seed.to_string()));
        args.extend(self.extra.iter().cloned());
        Ok((args, files))
    }
}
