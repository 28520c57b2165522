//! A bisection's spec: a lab spec with one target, the template every commit is built and run
//! with (`postgres = { cflags, configure, patches }`, profile, settings, cpus), and the cells to
//! watch. Each step of the bisection is a lab of its own made from it: the template's target
//! once per commit measured, on the binaries built for that commit, in the same results.

use std::path::{Path, PathBuf};

use crate::family::api::LabWorkload;
use crate::lab::spec::{self, LabSpec};
use crate::server::postgres::build::BuildRequest;
use stampede_base::error::Failure;

pub struct Template {
    path: PathBuf,
    /// The spec without its target.
    spec: toml::Table,
    /// The target without its name and server.
    target: toml::Table,
    pub name: String,
    /// How every commit is built; `source` is the checkout.
    pub build: BuildRequest,
}

impl Template {
    /// Reads the spec at `path`; the checkout is `source`, else the target's `postgres.source`.
    /// Everything a step's lab would refuse is refused here, before anything is built.
    pub fn load(path: &Path, source: Option<&Path>) -> Result<Template, Failure> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::input(format!("{}: {e}", path.display())).caused_by(e))?;
        let in_spec = |message: String| Failure::input(format!("{}: {message}", path.display()));
        let mut spec: toml::Table = toml::from_str(&text)
            .map_err(|e| Failure::input(spec::syntax_error(path, &text, &e).to_string()))?;
        let mut targets = match spec.remove("target") {
            Some(toml::Value::Array(targets)) => targets,
            None => Vec::new(),
            Some(_) => return Err(in_spec("target: must be a [[target]] table".into())),
        };
        if targets.len() != 1 {
            return Err(in_spec(format!(
                "a bisect spec has one [[target]], the template every commit is built and run with; this one has {}",
                targets.len()
            )));
        }
        let toml::Value::Table(mut target) = targets.remove(0) else {
            return Err(in_spec("target: must be a [[target]] table".into()));
        };
        target.remove("name");
        let base = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let build = build_request(path, target.remove("postgres"), source, base)?;
        if target.contains_key("mariadb") {
            return Err(in_spec(
                "target: bisect builds PostgreSQL; a mariadb target has no commits to build".into(),
            ));
        }
        let name = spec
            .get("name")
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_string();
        let template = Template {
            path: path.to_path_buf(),
            spec,
            target,
            name,
            build,
        };
        template.lab(&template.name, &[("template", Path::new("system"))])?;
        Ok(template)
    }

    /// The lab `name` over `targets` (target name, bin/ directory), in that order.
    pub fn lab(
        &self,
        name: &str,
        targets: &[(&str, &Path)],
    ) -> Result<(LabSpec, Vec<Box<dyn LabWorkload>>), Failure> {
        let mut spec = self.spec.clone();
        spec.insert("name".into(), name.into());
        // Every lab of a bisection goes into the results the spec names by its own name.
        if !spec.contains_key("results") {
            spec.insert("results".into(), format!("{}.db", self.name).into());
        }
        let targets: Vec<toml::Value> = targets
            .iter()
            .map(|(target_name, bin_dir)| {
                let mut target = self.target.clone();
                target.insert("name".into(), (*target_name).into());
                target.insert("postgres".into(), bin_dir.display().to_string().into());
                toml::Value::Table(target)
            })
            .collect();
        spec.insert("target".into(), toml::Value::Array(targets));
        let text = toml::to_string(&spec).expect("a table serializes");
        let parsed = spec::parse(&self.path, &text).map_err(|e| {
            // The lab's text is made here: a position in it would mislead, the key does not.
            let message = strip_position(&e.0, &self.path).unwrap_or(&e.0);
            Failure::input(format!("{}: {message}", self.path.display()))
        })?;
        spec::with_workloads(parsed)
    }

    /// The precision an auto spec asks for (relative), else the lab's default.
    pub fn precision(&self) -> Result<f64, Failure> {
        let (spec, _) = self.lab(&self.name, &[("template", Path::new("system"))])?;
        Ok(spec
            .auto
            .map_or(spec::DEFAULT_PRECISION, |auto| auto.precision))
    }

    /// Cells the spec measures per target.
    pub fn cells_per_target(&self) -> Result<usize, Failure> {
        let (spec, workloads) = self.lab(&self.name, &[("template", Path::new("system"))])?;
        let sequential: Vec<bool> = workloads.iter().map(|w| w.sequential()).collect();
        Ok(crate::lab::plan::Plan::new(&spec, 0, &sequential)
            .cells
            .len())
    }
}

/// "lab.toml:3:5: workload …" without its "lab.toml:3:5: ".
fn strip_position<'a>(message: &'a str, path: &Path) -> Option<&'a str> {
    let rest = message.strip_prefix(&format!("{}:", path.display()))?;
    let mut parts = rest.splitn(3, ':');
    let (line, column) = (parts.next()?, parts.next()?);
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (all_digits(line) && all_digits(column)).then(|| parts.next().unwrap_or("").trim_start())
}

/// The build flags of the template's `postgres`, and the checkout to build.
fn build_request(
    spec_path: &Path,
    postgres: Option<toml::Value>,
    source: Option<&Path>,
    base: &Path,
) -> Result<BuildRequest, Failure> {
    // Each refusal is about the spec's target.
    let refuse = |message: String| Failure::input(format!("{}: {message}", spec_path.display()));
    let table = match postgres {
        None => toml::Table::new(),
        Some(toml::Value::Table(table)) => table,
        Some(other) => {
            return Err(refuse(format!(
                "target: postgres = {other} names binaries, but bisect builds every commit: give the build as postgres = {{ cflags = \"…\", configure = [\"…\"] }}, or leave it out"
            )))
        }
    };
    let text = |key: &str| -> Result<Option<String>, Failure> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(value)) => Ok(Some(value.clone())),
            Some(_) => Err(refuse(format!("target: postgres.{key} must be a string"))),
        }
    };
    let list = |key: &str| -> Result<Vec<String>, Failure> {
        let not_strings = || refuse(format!("target: postgres.{key} must be a list of strings"));
        match table.get(key) {
            None => Ok(Vec::new()),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(str::to_string).ok_or_else(not_strings))
                .collect(),
            Some(_) => Err(not_strings()),
        }
    };
    if let Some(unknown) = table
        .keys()
        .find(|key| !["source", "cflags", "configure", "patches"].contains(&key.as_str()))
    {
        return Err(refuse(format!(
            "target: postgres: unknown field `{unknown}`, expected one of `source`, `cflags`, `configure`, `patches`"
        )));
    }
    let source = match (source, text("source")?) {
        (Some(source), _) => source.to_path_buf(),
        (None, Some(source)) => base.join(source),
        (None, None) => {
            return Err(refuse(
                "no PostgreSQL checkout to bisect: give --source DIR (or postgres.source in the target)"
                    .into(),
            ))
        }
    };
    let patches = list("patches")?
        .into_iter()
        .map(|patch| {
            let path = base.join(&patch);
            if path.is_file() {
                Ok(path)
            } else {
                Err(refuse(format!(
                    "target: postgres: patch \"{}\" does not exist",
                    path.display()
                )))
            }
        })
        .collect::<Result<_, _>>()?;
    Ok(BuildRequest {
        source,
        cflags: text("cflags")?,
        configure: list("configure")?,
        patches,
        origin: None,
    })
}
