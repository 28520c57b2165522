//! The executor driven by a fake target and a fake workload: no server, so these check the
//! lab's own logic — run order, datasets loaded once, pristine copies, checkpoints, resume
//! after an interrupt, failures recorded, a crashed server restarted, broken targets skipped.

use std::cell::{Cell as Counter, RefCell};
use std::collections::HashSet;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{dataset_name, Lab, LabEvent, LabOutcome, Opening, Shard, RUN_COPY};
use crate::family::api::{FamilyWorkload, LabWorkload, Measurement, RunObserver, RunRequest};
use crate::lab::spec::{self, LabSpec, TargetSpec};
use crate::lab::targets::{HostProcess, LabPlace, LabServer, ResolvedTarget, Targets};
use crate::lab::window::RunProbes;
use crate::server::profile::Machine;
use crate::server::setup::SetupEvent;
use stampede_base::error::{Failure, Kind};
use stampede_conn::ConnSpec;
use stampede_conn::Endpoint;
use stampede_store::{RunMetrics, TargetRecord};

/// What the fakes did, in order, one line per action.
#[derive(Default, Clone)]
struct Journal(Rc<RefCell<Vec<String>>>);

impl Journal {
    fn log(&self, line: String) {
        self.0.borrow_mut().push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.0.borrow().clone()
    }

    fn starting(&self, prefix: &str) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|l| l.starts_with(prefix))
            .collect()
    }
}

/// State that outlives one invocation, as a cluster's data directory does.
#[derive(Default, Clone)]
struct Disk {
    /// (target, database) holding a completely loaded dataset.
    datasets: Rc<RefCell<HashSet<(String, String)>>>,
    /// Set by a workload that kills its server.
    crashed: Rc<Counter<bool>>,
}

struct FakeTargets {
    journal: Journal,
    disk: Disk,
}

impl Targets for FakeTargets {
    fn resolve(
        &self,
        spec: &TargetSpec,
        _events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<Arc<dyn ResolvedTarget>, Failure> {
        if spec.name.starts_with("broken") {
            return Err(Failure::input(format!(
                "target \"{}\": no binaries here",
                spec.name
            )));
        }
        Ok(Arc::new(FakeBinaries))
    }

    fn provision(
        &self,
        _resolved: &dyn ResolvedTarget,
        _target: &TargetSpec,
        place: &LabPlace<'_>,
    ) -> Result<Box<dyn LabServer>, Failure> {
        let name = place
            .root
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        self.journal.log(format!("provision {name}"));
        Ok(Box::new(FakeServer {
            remote: name.starts_with("remote"),
            name,
            journal: self.journal.clone(),
            disk: self.disk.clone(),
        }))
    }
}

struct FakeBinaries;

impl ResolvedTarget for FakeBinaries {
    fn version(&self) -> String {
        "fake 1.0".into()
    }

    fn provision(
        &self,
        _target: &TargetSpec,
        _place: &LabPlace<'_>,
    ) -> Result<Box<dyn LabServer>, Failure> {
        unreachable!("FakeTargets provisions")
    }
}

struct FakeServer {
    name: String,
    /// A server the lab reaches (a target named "remote…"): no process of its own to restart,
    /// settings of its runs set and put back around each.
    remote: bool,
    journal: Journal,
    disk: Disk,
}

impl LabServer for FakeServer {
    fn describe(&self, spec: &TargetSpec) -> Result<TargetRecord, Failure> {
        Ok(TargetRecord {
            name: spec.name.clone(),
            server: spec.server.spec_text(),
            binary_source: "fake".into(),
            bin_dir: "/fake/bin".into(),
            server_version: "fake 1.0".into(),
            pg_config: String::new(),
            profile: spec.profile.name(),
            restore_method: "fake copy".into(),
            settings: Vec::new(),
            server_key: None,
            server_machine: None,
        })
    }

    fn conn(&self, database: &str) -> Endpoint {
        self.workload_conn(database)
    }

    fn workload_conn(&self, database: &str) -> Endpoint {
        Endpoint::Postgres(ConnSpec::on_socket(
            std::path::Path::new(&self.name),
            1,
            "fake",
            database,
        ))
    }

    fn has_dataset(&self, database: &str) -> bool {
        let key = (self.name.clone(), database.to_string());
        self.disk.datasets.borrow().contains(&key)
    }

    fn create_empty(&self, database: &str) -> Result<(), Failure> {
        self.journal.log(format!("create {}/{database}", self.name));
        Ok(())
    }

    fn seal_dataset(&self, database: &str) -> Result<(), Failure> {
        let key = (self.name.clone(), database.to_string());
        self.disk.datasets.borrow_mut().insert(key);
        Ok(())
    }

    fn copy_database(&self, template: &str, copy: &str) -> Result<(), Failure> {
        self.journal
            .log(format!("copy {}/{template} -> {copy}", self.name));
        Ok(())
    }

    fn drop_database(&self, _database: &str) -> Result<(), Failure> {
        Ok(())
    }

    fn checkpoint(&self) -> Result<(), Failure> {
        self.journal.log(format!("checkpoint {}", self.name));
        Ok(())
    }

    fn database_bytes(&self, _database: &str) -> Result<u64, Failure> {
        Ok(0)
    }

    fn shared_buffers_bytes(&self) -> Result<u64, Failure> {
        Ok(128 << 20)
    }

    fn machine(&self) -> Option<Machine> {
        Some(Machine {
            ram_bytes: 8 << 30,
            cores: 2,
            free_disk_bytes: 100 << 30,
        })
    }

    fn alive(&self) -> bool {
        !self.disk.crashed.get()
    }

    fn window_probes(&self, _run: &Endpoint) -> Option<Box<dyn RunProbes>> {
        None
    }

    fn explain(&self, _database: &str, _statement: &str) -> Option<String> {
        None
    }

    fn begin_run(&self, _notes: &mut dyn FnMut(&str)) -> Result<(), Failure> {
        if self.remote {
            self.journal.log(format!("set {}", self.name));
        }
        Ok(())
    }

    fn end_run(&self) -> Result<(), Failure> {
        if self.remote {
            self.journal.log(format!("put back {}", self.name));
        }
        Ok(())
    }

    fn host(&self) -> Option<&dyn HostProcess> {
        (!self.remote).then_some(self as &dyn HostProcess)
    }

    fn release(&self, lab_ended: bool) {
        if self.remote {
            self.journal
                .log(format!("hand back {} (lab ended: {lab_ended})", self.name));
        } else {
            self.journal.log(format!("stop {}", self.name));
        }
    }
}

impl HostProcess for FakeServer {
    fn restart(&self) -> Result<(), Failure> {
        self.journal.log(format!("restart {}", self.name));
        self.disk.crashed.set(false);
        Ok(())
    }

    fn log_tail(&self, _lines: usize) -> String {
        "LOG:  server process was terminated by signal 9".into()
    }
}

/// Variants: `ro` reads, `rw` writes, `fails` errors, `crashes` kills its server.
struct FakeWorkload {
    journal: Journal,
    disk: Disk,
    runs: Counter<usize>,
    /// The run (1-based, in this invocation) during which a signal arrives.
    interrupt_at: Option<usize>,
    sequence: Sequence,
}

/// How the fake's variants relate: independent runs, or steps of one sequence that runs again
/// from its first step after a signal, or one that resumes in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Sequence {
    #[default]
    None,
    Restarts,
    InPlace,
}

impl FamilyWorkload for FakeWorkload {
    type Variant = String;

    fn load(&self, conn: &Endpoint, scale: i64, note: &mut dyn FnMut(&str)) -> Result<(), Failure> {
        let conn = conn.postgres("the fake")?;
        note("loading");
        self.journal
            .log(format!("load {}/{} scale {scale}", conn.host, conn.dbname));
        Ok(())
    }

    fn writes(&self, variant: &String) -> bool {
        variant != "ro"
    }

    fn group(&self, variant: &String) -> String {
        if FamilyWorkload::writes(self, variant) {
            "write"
        } else {
            "read"
        }
        .into()
    }

    fn variant(&self, name: &str) -> Result<String, Failure> {
        match name {
            "ro" | "rw" | "fails" | "crashes" => Ok(name.to_string()),
            other => Err(Failure::input(format!("no variant \"{other}\""))),
        }
    }

    fn default_variants(&self) -> Vec<String> {
        vec!["ro".into()]
    }

    fn sequential(&self) -> bool {
        self.sequence != Sequence::None
    }

    fn resumes_in_place(&self) -> bool {
        self.sequence == Sequence::InPlace
    }

    fn run(
        &self,
        variant: &String,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure> {
        self.runs.set(self.runs.get() + 1);
        let conn = request.conn.postgres("the fake")?;
        self.journal.log(format!(
            "run {}/{} {} c{} s{}",
            conn.host, conn.dbname, variant, request.clients, request.scale
        ));
        observer.open_window();
        observer.second(0, 100.0);
        if self.interrupt_at == Some(self.runs.get()) {
            request.stop.store(true, Ordering::SeqCst);
            return Err(Failure::run("stopped"));
        }
        match variant.as_str() {
            "fails" => Err(Failure::run("ERROR:  deadlock detected")),
            "crashes" => {
                self.disk.crashed.set(true);
                Err(Failure::run("connection lost"))
            }
            _ => Ok(Measurement {
                metrics: RunMetrics {
                    duration_s: 1.0,
                    transactions: 100,
                    tps: 100.0,
                    ..RunMetrics::default()
                },
                series: Vec::new(),
                pods: Vec::new(),
            }),
        }
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    spec: LabSpec,
    database: PathBuf,
    journal: Journal,
    disk: Disk,
    sequence: Counter<Sequence>,
}

impl Fixture {
    fn new(targets: &[&str], scripts: &[&str]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from(
            "name = \"fake\"\nruns = 2\nduration = \"1s\"\nwarmup = \"0s\"\nprobes = false\nseed = 7\n",
        );
        for target in targets {
            text += &format!("[[target]]\nname = \"{target}\"\npostgres = \"system\"\n");
        }
        let scripts: Vec<String> = scripts.iter().map(|s| format!("\"{s}\"")).collect();
        text += &format!(
            "[[workload]]\nname = \"pgbench\"\nscripts = [{}]\nscale = [1, 2]\nclients = [1, 4]\n",
            scripts.join(", ")
        );
        let path = dir.path().join("fake.toml");
        let spec = spec::parse_as(&path, &text, spec::Scripts::Unchecked).unwrap();
        Fixture {
            database: dir.path().join("fake.db"),
            _dir: dir,
            spec,
            journal: Journal::default(),
            disk: Disk::default(),
            sequence: Counter::new(Sequence::None),
        }
    }

    /// One invocation: `run` (or `resume`) until the end or the interrupt.
    fn invoke(
        &self,
        resume: bool,
        keep_going: bool,
        interrupt_at: Option<usize>,
    ) -> Result<(LabOutcome, Vec<(String, u32)>), Failure> {
        let opening = if resume {
            Opening::Resume
        } else {
            Opening::Run
        };
        self.with_lab(opening, keep_going, interrupt_at, |lab| {
            let order = planned_order(lab);
            let journal = self.journal.clone();
            let outcome = lab.run(&mut |event| {
                if let LabEvent::Note(note) = event {
                    journal.log(format!("note {note}"));
                }
            })?;
            Ok((outcome, order))
        })
    }

    /// One shard of the invocation `shards::open` made: the outcome and the shard's runs.
    fn invoke_shard(&self, shard: Shard) -> Result<(LabOutcome, Vec<(String, u32)>), Failure> {
        self.with_lab(Opening::Shard(shard), false, None, |lab| {
            let units: Vec<usize> = lab.plan().runs.iter().map(|run| run.unit).collect();
            let order = planned_order(lab)
                .into_iter()
                .zip(units)
                .filter(|(_, unit)| shard.holds(*unit))
                .map(|(line, _)| line)
                .collect();
            Ok((lab.run(&mut |_| {})?, order))
        })
    }

    /// The fake lab of `opening`, handed to `body`.
    fn with_lab<T>(
        &self,
        opening: Opening,
        keep_going: bool,
        interrupt_at: Option<usize>,
        body: impl FnOnce(&mut Lab<'_>) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        let targets = FakeTargets {
            journal: self.journal.clone(),
            disk: self.disk.clone(),
        };
        let workload = self.workload(interrupt_at);
        let stop = Arc::new(AtomicBool::new(false));
        let mut lab = Lab::open(
            &self.spec,
            vec![Box::new(workload)],
            &targets,
            opening,
            keep_going,
            stop,
            &mut |_| {},
        )?;
        body(&mut lab)
    }

    fn workload(&self, interrupt_at: Option<usize>) -> FakeWorkload {
        FakeWorkload {
            journal: self.journal.clone(),
            disk: self.disk.clone(),
            runs: Counter::new(0),
            interrupt_at,
            sequence: self.sequence.get(),
        }
    }

    /// (status, error) of every stored run, in run order.
    fn stored(&self) -> Vec<(String, Option<String>)> {
        self.pairs("SELECT status, error FROM runs ORDER BY position, id")
    }

    /// The rows of a two-column query of the results.
    fn pairs<A: rusqlite::types::FromSql, B: rusqlite::types::FromSql>(
        &self,
        sql: &str,
    ) -> Vec<(A, B)> {
        let db = rusqlite::Connection::open(&self.database).unwrap();
        let mut query = db.prepare(sql).unwrap();
        query
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }
}

/// The journal line each planned run should produce, in plan order, with its repetition.
fn planned_order(lab: &Lab<'_>) -> Vec<(String, u32)> {
    let plan = lab.plan();
    plan.runs
        .iter()
        .map(|run| {
            let cell = &plan.cells[run.cell];
            let target = &lab.spec.targets[cell.target].name;
            let scale = match cell.scale {
                spec::Scale::Fixed(n) => n,
                other => panic!("{other:?}"),
            };
            let database = if cell.script == "ro" && run.step.is_none() {
                dataset_name("pgbench", scale)
            } else {
                RUN_COPY.to_string()
            };
            let line = format!(
                "run {target}/{database} {} c{} s{scale}",
                cell.script, cell.clients
            );
            (line, run.repetition)
        })
        .collect()
}

fn lines(order: &[(String, u32)]) -> Vec<String> {
    order.iter().map(|(line, _)| line.clone()).collect()
}

#[test]
fn runs_follow_the_plan_and_each_dataset_loads_once() {
    let fixture = Fixture::new(&["a", "b"], &["ro", "rw"]);
    let (outcome, order) = fixture.invoke(false, false, None).unwrap();
    // 2 targets × 2 scripts × 2 scales × 2 client counts × 2 runs.
    assert_eq!(order.len(), 32);
    assert_eq!(fixture.journal.starting("run "), lines(&order));
    let targets_in_order: Vec<&str> = order.iter().map(|(l, _)| &l[4..5]).collect();
    assert!(
        targets_in_order.windows(2).filter(|w| w[0] != w[1]).count() > 1,
        "the plan interleaves targets: {targets_in_order:?}"
    );
    let mut loads = fixture.journal.starting("load ");
    loads.sort();
    assert_eq!(
        loads,
        [
            "load a/stampede_pgbench_s1 scale 1",
            "load a/stampede_pgbench_s2 scale 2",
            "load b/stampede_pgbench_s1 scale 1",
            "load b/stampede_pgbench_s2 scale 2",
        ]
    );
    let load_notes = fixture
        .journal
        .lines()
        .iter()
        .filter(|l| *l == "note loading")
        .count();
    assert_eq!(load_notes, 4, "a load's notes reach the lab's caller");
    assert_eq!(
        fixture.journal.starting("provision "),
        ["provision a", "provision b"]
    );
    let mut stops = fixture.journal.starting("stop ");
    stops.sort();
    assert_eq!(stops, ["stop a", "stop b"]);
    assert!(!outcome.interrupted);
    assert_eq!(outcome.failed_runs, 0);
    assert_eq!(outcome.completed.len(), 32);
    assert!(fixture
        .stored()
        .iter()
        .all(|(s, e)| s == "completed" && e.is_none()));
}

#[test]
fn writers_get_a_pristine_copy_and_every_run_a_checkpoint() {
    let fixture = Fixture::new(&["a"], &["ro", "rw"]);
    fixture.invoke(false, false, None).unwrap();
    let journal = fixture.journal.lines();
    for (index, line) in journal.iter().enumerate() {
        if !line.starts_with("run ") {
            continue;
        }
        assert_eq!(journal[index - 1], "checkpoint a", "before {line}");
        if line.contains(" rw ") {
            let scale = &line[line.rfind(" s").unwrap() + 2..];
            assert_eq!(
                journal[index - 2],
                format!("copy a/stampede_pgbench_s{scale} -> {RUN_COPY}"),
                "before {line}"
            );
        } else {
            assert!(!journal[index - 2].starts_with("copy "), "before {line}");
        }
    }
}

#[test]
fn an_interrupted_lab_resumes_with_the_runs_left() {
    let fixture = Fixture::new(&["a", "b"], &["ro", "rw"]);
    let (outcome, order) = fixture.invoke(false, false, Some(3)).unwrap();
    assert!(outcome.interrupted);
    assert_eq!(outcome.completed.len(), 2);
    let stored = fixture.stored();
    let statuses: Vec<&str> = stored.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(statuses, ["completed", "completed", "interrupted"]);
    assert_eq!(stored[2].1.as_deref(), Some("interrupted by a signal"));
    assert_eq!(fixture.journal.starting("run "), lines(&order[..3]));

    let first_invocation = fixture.journal.lines().len();
    let (outcome, order) = fixture.invoke(true, false, None).unwrap();
    assert!(!outcome.interrupted);
    assert_eq!(outcome.completed.len(), 32);
    let resumed: Vec<String> = fixture.journal.lines()[first_invocation..]
        .iter()
        .filter(|l| l.starts_with("run "))
        .cloned()
        .collect();
    assert_eq!(
        resumed,
        lines(&order[2..]),
        "the interrupted run again, then the rest"
    );
    let reloaded = fixture.journal.lines()[first_invocation..]
        .iter()
        .filter(|l| l.starts_with("load "))
        .count();
    let loaded_before = fixture.journal.lines()[..first_invocation]
        .iter()
        .filter(|l| l.starts_with("load "))
        .count();
    assert_eq!(
        reloaded + loaded_before,
        4,
        "a loaded dataset is not loaded again"
    );
}

/// The journal's lines from `from` on that start with `prefix`.
fn since(fixture: &Fixture, from: usize, prefix: &str) -> Vec<String> {
    fixture.journal.lines()[from..]
        .iter()
        .filter(|l| l.starts_with(prefix))
        .cloned()
        .collect()
}

#[test]
fn a_sequence_that_resumes_in_place_keeps_its_finished_steps_and_its_copy() {
    // Stopped in a's second step (run 3), then in a's first step of a later invocation's
    // sequence: each time the stopped step runs again on the copy it left, nothing before it.
    for interrupt_at in [3, 1] {
        let fixture = Fixture::new(&["a", "b"], &["rw", "ro"]);
        fixture.sequence.set(Sequence::InPlace);
        let (outcome, order) = fixture.invoke(false, false, Some(interrupt_at)).unwrap();
        assert!(outcome.interrupted);
        let first_invocation = fixture.journal.lines().len();
        let (outcome, _) = fixture.invoke(true, false, None).unwrap();
        assert!(!outcome.interrupted);
        assert_eq!(outcome.completed.len(), 32);
        let resumed = since(&fixture, first_invocation, "run ");
        assert_eq!(resumed, lines(&order[interrupt_at - 1..]), "{interrupt_at}");
        let journal = fixture.journal.lines()[first_invocation..].to_vec();
        let first_run = journal.iter().position(|l| l.starts_with("run ")).unwrap();
        assert!(
            !journal[..first_run].iter().any(|l| l.starts_with("copy ")),
            "no fresh copy under the stopped step: {journal:?}"
        );
        assert_eq!(since(&fixture, 0, "run ").len(), 33);
    }
}

#[test]
fn a_sequence_that_restarts_runs_again_from_its_first_step() {
    let fixture = Fixture::new(&["a", "b"], &["rw", "ro"]);
    fixture.sequence.set(Sequence::Restarts);
    let (_, order) = fixture.invoke(false, false, Some(3)).unwrap();
    let first_invocation = fixture.journal.lines().len();
    let (outcome, _) = fixture.invoke(true, false, None).unwrap();
    assert_eq!(outcome.completed.len(), 32);
    assert_eq!(since(&fixture, first_invocation, "run "), lines(&order));
}

#[test]
fn each_shard_runs_its_own_units_and_the_launcher_ends_the_lab() {
    let fixture = Fixture::new(&["a", "b"], &["ro"]);
    let workloads: Vec<Box<dyn LabWorkload>> = vec![Box::new(fixture.workload(None))];
    let (mut store, lab_id, plan, _) =
        crate::lab::shards::open(&fixture.spec, &workloads, Some(2), "fleet: 2 shards").unwrap();
    let mut seen = Vec::new();
    for index in 0..2 {
        let before = fixture.journal.lines().len();
        let shard = Shard {
            lab_id,
            index,
            of: 2,
        };
        let (outcome, order) = fixture.invoke_shard(shard).unwrap();
        assert!(!outcome.interrupted);
        let ran: Vec<String> = fixture.journal.lines()[before..]
            .iter()
            .filter(|l| l.starts_with("run "))
            .cloned()
            .collect();
        // The shard's runs in the plan's order: each cell on both targets, every round.
        assert_eq!(ran, lines(&order));
        assert_eq!(order.len(), 8);
        seen.extend(order);
        // A shard does not end the lab: its launcher does, once every shard has recorded.
        assert!(!store.latest_invocation("fake").unwrap().unwrap().ended);
    }
    assert_eq!(seen.len(), plan.runs.len());
    let recorded = crate::lab::shards::recorded(&mut store, lab_id, &plan, 2).unwrap();
    assert_eq!(recorded, [(8, 8), (8, 8)]);
    let shards: Vec<(i64, i64)> =
        fixture.pairs("SELECT shard, count(*) FROM runs GROUP BY shard ORDER BY shard");
    assert_eq!(shards, [(0, 8), (1, 8)]);
}

#[test]
fn a_cell_measured_on_another_machine_starts_again_on_this_one() {
    let fixture = Fixture::new(&["a", "b"], &["ro"]);
    let (outcome, order) = fixture.invoke(false, false, Some(3)).unwrap();
    assert!(outcome.interrupted);
    // The two finished runs were on another machine (as if the results came from there).
    let db = rusqlite::Connection::open(&fixture.database).unwrap();
    db.execute("UPDATE machines SET identity = 'elsewhere'", [])
        .unwrap();
    let before = fixture.journal.lines().len();
    let (outcome, _) = fixture.invoke(true, false, None).unwrap();
    assert_eq!(outcome.completed.len(), 16);
    let notes: Vec<String> = fixture.journal.lines()[before..]
        .iter()
        .filter(|l| l.contains("measured on another machine (elsewhere)"))
        .cloned()
        .collect();
    assert!(!notes.is_empty(), "{:?}", fixture.journal.lines());
    let resumed: Vec<String> = fixture.journal.lines()[before..]
        .iter()
        .filter(|l| l.starts_with("run "))
        .cloned()
        .collect();
    assert_eq!(
        resumed,
        lines(&order),
        "every run again, the first two included"
    );
    let machines: i64 = db
        .query_row(
            "SELECT count(DISTINCT machine_id) FROM runs WHERE status = 'completed'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(machines, 1, "no cell mixes machines");
}

#[test]
fn a_fresh_run_refuses_a_lab_with_finished_runs_and_resume_needs_one() {
    let fixture = Fixture::new(&["a"], &["ro"]);
    let error = fixture.invoke(true, false, None).err().unwrap();
    assert!(
        error.kind() == Kind::Input && error.message().starts_with("nothing to resume:"),
        "{error:?}"
    );
    let (outcome, _) = fixture.invoke(false, false, Some(3)).unwrap();
    assert!(outcome.interrupted);
    let error = fixture.invoke(false, false, None).err().unwrap();
    assert!(
        error.kind() == Kind::Input && error.message().contains("already has finished runs"),
        "{error:?}"
    );
    let (outcome, _) = fixture.invoke(true, false, None).unwrap();
    assert_eq!(outcome.completed.len(), 8);
    let runs_before = fixture.journal.starting("run ").len();
    let (outcome, _) = fixture.invoke(true, false, None).unwrap();
    assert_eq!(
        fixture.journal.starting("run ").len(),
        runs_before,
        "nothing left to run"
    );
    assert_eq!(outcome.completed.len(), 8);
}

#[test]
fn a_fresh_run_of_an_ended_lab_is_the_next_invocation_of_its_history() {
    let mut fixture = Fixture::new(&["a"], &["ro"]);
    fixture.spec.tags = vec![("night".into(), "1".into())];
    let (outcome, _) = fixture.invoke(false, false, Some(2)).unwrap();
    assert!(outcome.interrupted);
    // `lab resume` has no tags: the run's stay.
    fixture.spec.tags = Vec::new();
    fixture.invoke(true, false, None).unwrap();
    fixture.spec.tags = vec![
        ("night".into(), "2".into()),
        ("commit".into(), "abc".into()),
    ];
    let runs_before = fixture.journal.starting("run ").len();
    let (outcome, _) = fixture.invoke(false, false, None).unwrap();
    assert_eq!(fixture.journal.starting("run ").len(), runs_before + 8);
    assert_eq!(
        outcome.completed.len(),
        8,
        "the new invocation's runs alone"
    );
    let location = stampede_store::Location::Sqlite(fixture.database.clone());
    let mut store = stampede_store::Store::open(&location).unwrap();
    let labs = store.invocations().unwrap();
    let names: Vec<(&str, &str)> = labs
        .iter()
        .map(|lab| (lab.name.as_str(), lab.history.as_str()))
        .collect();
    assert_eq!(names, [("fake", "fake"), ("fake #2", "fake")]);
    assert!(labs.iter().all(|lab| lab.ended && lab.machine.is_some()));
    assert_eq!(labs[0].tags, [("night".to_string(), "1".to_string())]);
    assert_eq!(
        labs[1].tags,
        [
            ("commit".to_string(), "abc".to_string()),
            ("night".to_string(), "2".to_string())
        ]
    );
}

#[test]
fn a_failed_run_is_recorded_and_the_lab_goes_on() {
    let fixture = Fixture::new(&["a"], &["ro", "fails"]);
    let (outcome, order) = fixture.invoke(false, false, None).unwrap();
    assert_eq!(fixture.journal.starting("run "), lines(&order));
    assert_eq!(outcome.failed_runs, 8);
    assert_eq!(outcome.completed.len(), 8);
    let failed: Vec<_> = fixture
        .stored()
        .into_iter()
        .filter(|(status, _)| status == "failed")
        .collect();
    assert_eq!(failed.len(), 8);
    assert!(failed
        .iter()
        .all(|(_, e)| e.as_deref() == Some("ERROR:  deadlock detected")));
    // Failed runs count as finished: a resume runs nothing again.
    let runs_before = fixture.journal.starting("run ").len();
    fixture.invoke(true, false, None).unwrap();
    assert_eq!(fixture.journal.starting("run ").len(), runs_before);
}

#[test]
fn a_crashed_server_is_restarted_and_its_log_tail_recorded() {
    let fixture = Fixture::new(&["a"], &["ro", "crashes"]);
    let (outcome, _) = fixture.invoke(false, false, None).unwrap();
    assert_eq!(outcome.failed_runs, 8);
    assert_eq!(fixture.journal.starting("restart ").len(), 8);
    let expected = "connection lost; the server did not answer (the server was restarted); \
                    server log tail:\nLOG:  server process was terminated by signal 9";
    let errors: Vec<_> = fixture
        .stored()
        .into_iter()
        .filter_map(|(_, error)| error)
        .collect();
    assert_eq!(errors.len(), 8);
    assert!(errors.iter().all(|e| e == expected), "{errors:?}");
}

/// A server the lab did not start is never restarted; each run's settings are put back before
/// the next run; it is handed back when the lab stops, told whether the lab ended.
#[test]
fn a_remote_target_is_not_restarted_and_is_handed_back_when_the_lab_stops() {
    let fixture = Fixture::new(&["remote-a", "local"], &["ro", "crashes"]);
    let (outcome, _) = fixture.invoke(false, false, Some(5)).unwrap();
    assert!(outcome.interrupted);
    assert_eq!(
        fixture.journal.starting("hand back "),
        ["hand back remote-a (lab ended: false)"]
    );
    let first_invocation = fixture.journal.lines().len();
    let (outcome, _) = fixture.invoke(true, false, None).unwrap();
    assert!(!outcome.interrupted);
    assert_eq!(
        since(&fixture, first_invocation, "hand back "),
        ["hand back remote-a (lab ended: true)"]
    );
    assert!(fixture.journal.starting("restart remote").is_empty());
    assert!(!fixture.journal.starting("restart local").is_empty());
    // Around every run of the remote target, its settings set and put back, never nested.
    let mut open = false;
    for line in fixture.journal.lines() {
        if line.starts_with("set remote-a") {
            assert!(!open, "set twice");
            open = true;
        } else if line.starts_with("put back remote-a") {
            assert!(open, "put back unset");
            open = false;
        } else if line.starts_with("run remote-a") {
            assert!(open, "a remote run without its settings");
        }
    }
    let errors: Vec<String> = fixture
        .pairs::<String, Option<String>>(
            "SELECT c.target, r.error FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.status = 'failed'",
        )
        .into_iter()
        .filter(|(target, _)| target == "remote-a")
        .filter_map(|(_, error)| error)
        .collect();
    assert!(!errors.is_empty());
    assert!(errors.iter().all(|e| e
        == "connection lost; the server did not answer (stampede does not restart a server it did not start)"),
        "{errors:?}");
}

#[test]
fn keep_going_skips_a_target_that_cannot_be_provisioned() {
    let fixture = Fixture::new(&["a", "broken"], &["ro"]);
    let error = fixture.invoke(false, false, None).err().unwrap();
    assert_eq!(error, Failure::input("target \"broken\": no binaries here"));
    assert!(
        !fixture.database.exists(),
        "refused before the results database"
    );

    let (outcome, order) = fixture.invoke(false, true, None).unwrap();
    let on_a: Vec<String> = lines(&order)
        .into_iter()
        .filter(|l| l.starts_with("run a/"))
        .collect();
    assert_eq!(fixture.journal.starting("run "), on_a);
    assert_eq!(outcome.skipped.len(), 1);
    assert_eq!(outcome.skipped[0].target, "broken");
    assert_eq!(outcome.skipped[0].runs, 8);
    assert_eq!(outcome.completed.len(), 8);
}

#[test]
fn a_bad_variant_is_refused_before_anything_starts() {
    let fixture = Fixture::new(&["a"], &["nope"]);
    let error = fixture.invoke(false, false, None).err().unwrap();
    assert_eq!(error, Failure::input("no variant \"nope\""));
    assert!(fixture.journal.lines().is_empty());
    assert!(!fixture.database.exists());
}
