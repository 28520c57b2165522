//! cloudnativepg targets on the suite's cluster, with the CloudNativePG operator built from its
//! module (`.ci/kube/cloudnativepg`) and PostgreSQL 15 as its operand image. The lab creates the
//! Clusters through the operator, and every number is checked against the primary's own
//! counters; after each test no Cluster, pod, volume, Secret or Service of the lab is left.

use super::text;
use crate::common::kube::{kube, IMAGE, OPERAND_IMAGE};
use crate::common::{free_port, sqlite, LabDir};

/// A namespace of the test's own (the tests run at once and each lists what it left).
fn namespace(name: &str) -> String {
    kube().kubectl(&["create", "namespace", name]);
    name.to_string()
}

/// A `[[target]]` of one instance of the suite's operand image on storage of `class`.
fn cluster_target(name: &str, class: &str, settings: &str) -> String {
    format!(
        "[[target]]\nname = \"{name}\"\ncloudnativepg = {{ image = \"{OPERAND_IMAGE}\", storage = {{ class = \"{class}\", size = \"1Gi\" }} }}\nsettings = {{ {settings} }}\n"
    )
}

/// A lab of `targets` whose runs take their clients from a pod each: stampede's image on this
/// machine's network (the lab listens on loopback), finding the Cluster's `-rw` Service by the
/// suite's cluster DNS.
fn lab_spec(name: &str, namespace: &str, targets: &str, scripts: &str) -> String {
    format!(
        "name = \"{name}\"\nruns = 2\nduration = \"2s\"\nwarmup = \"1s\"\nseed = 5\n\n\
         [kubernetes]\nnamespace = \"{namespace}\"\nimage = \"{IMAGE}\"\nimage_pull_policy = \"Never\"\n\
         host_network = true\ncoordinator_address = \"127.0.0.1\"\ncoordinator_port = {port}\n\
         pod_start_timeout = \"60s\"\n\n{targets}\n\
         [[workload]]\nname = \"pgbench\"\nscripts = [{scripts}]\nclients = [2]\n",
        port = free_port()
    )
}

/// The objects of `kinds` in the namespace, by name, sorted.
fn names_in(namespace: &str, kinds: &str) -> Vec<String> {
    let mut names: Vec<String> = kube()
        .kubectl(&["get", kinds, "--namespace", namespace, "-o", "name"])
        .lines()
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// The Clusters in the namespace.
fn clusters_in(namespace: &str) -> Vec<String> {
    names_in(namespace, "clusters.postgresql.cnpg.io")
}

/// What of the lab's is in the namespace: Clusters, pods, volumes' claims, Secrets, Services.
fn left_in(namespace: &str) -> Vec<String> {
    names_in(
        namespace,
        "clusters.postgresql.cnpg.io,pods,persistentvolumeclaims,secrets,services",
    )
}

/// `SQL`'s one value on the Cluster's primary, as its superuser (the Secret and the `-rw`
/// endpoint read here as a user would with kubectl).
fn on_primary(namespace: &str, cluster: &str, sql: &str) -> String {
    on_service(namespace, cluster, "rw", sql)
}

/// `SQL`'s one value on the first endpoint of the Cluster's `-{service}` Service ("rw", "ro").
fn on_service(namespace: &str, cluster: &str, service: &str, sql: &str) -> String {
    let kube = kube();
    let address = kube.kubectl(&[
        "get",
        "endpointslices",
        "--namespace",
        namespace,
        "-l",
        &format!("kubernetes.io/service-name={cluster}-{service}"),
        "-o",
        "jsonpath={.items[0].endpoints[0].addresses[0]}",
    ]);
    let encoded = kube.kubectl(&[
        "get",
        "secret",
        &format!("{cluster}-superuser"),
        "--namespace",
        namespace,
        "-o",
        "jsonpath={.data.password}",
    ]);
    let password = base64_decode(encoded.trim());
    let output = std::process::Command::new("psql")
        .args([
            "-X",
            "-A",
            "-t",
            "-h",
            address.trim(),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-c",
            sql,
        ])
        .env("PGPASSWORD", password)
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .expect("psql runs");
    assert!(output.status.success(), "{}", text(&output.stderr));
    text(&output.stdout).trim().to_string()
}

fn base64_decode(text: &str) -> String {
    let output = std::process::Command::new("base64")
        .arg("-d")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .expect("base64 runs");
    text_of(&output.stdout)
}

fn text_of(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

/// Two targets of one shape, shared_buffers 128MB and 512MB, share one Cluster of one instance:
/// the lab creates it through the operator, patches each target's settings into it before the
/// target's runs and waits for the operator's restart; every run saw its own target's value,
/// its transactions are the primary's statement counts, `--keep-clusters` keeps the Cluster
/// and `lab clean` deletes it with everything it made.
#[test]
fn a_lab_compares_two_settings_on_one_cluster_it_creates_and_cleans_it_up() {
    let kube = kube();
    kube.cloudnativepg();
    let volumes = kube.local_volumes("cnpg-two", 1);
    let namespace = namespace("cnpg-two");
    let dir = LabDir::new("cnpg-two");
    let spec = dir.join("lab.toml");
    let targets = cluster_target("sb128", &volumes.class, "shared_buffers = \"128MB\"")
        + &cluster_target("sb512", &volumes.class, "shared_buffers = \"512MB\"");
    std::fs::write(
        &spec,
        lab_spec(
            "cnpg-two",
            &namespace,
            &targets,
            "\"select-only\", \"tpcb-like\"",
        ),
    )
    .unwrap();
    let spec_arg = spec.display().to_string();
    let output = kube.stampede(&["lab", "run", &spec_arg, "--keep-clusters"]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{}{stderr}", text(&output.stdout));
    assert!(
        stderr.contains(&format!(
            "creating Cluster \"cnpg-two-sb128\" in namespace \"{namespace}\" through the operator"
        )),
        "{stderr}"
    );
    // Whichever target came second found the Cluster and patched its own value in (the
    // operator restarts the primary in place for it: shared_buffers is read at start).
    assert!(
        stderr.contains("Cluster \"cnpg-two-sb128\": parameters patched (shared_buffers = '"),
        "{stderr}"
    );
    assert_eq!(
        clusters_in(&namespace),
        ["cluster.postgresql.cnpg.io/cnpg-two-sb128"]
    );
    let last = on_primary(&namespace, "cnpg-two-sb128", "SHOW shared_buffers");
    assert!(last == "128MB" || last == "512MB", "{last}");
    let db = dir.join("cnpg-two.db");
    let runs = sqlite(
        &db,
        "SELECT r.id, r.transactions, s.calls, c.script FROM runs r JOIN cells c ON c.id = r.cell_id
         JOIN run_statements s ON s.run_id = r.id
          AND s.query IN ('UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2',
                          'SELECT abalance FROM pgbench_accounts WHERE aid = $1')
         WHERE r.status = 'completed'",
    );
    // tpcb-like's runs show both statements, select-only's one: 4 + 2 × 4.
    assert_eq!(runs.len(), 12, "{runs:?}");
    for row in &runs {
        let transactions: i64 = row[1].parse().unwrap();
        let calls: i64 = row[2].parse().unwrap();
        assert!(transactions > 0, "{row:?}");
        // Exact but for a transaction per client under way at the window's end.
        assert!((0..=2).contains(&(calls - transactions)), "{row:?}");
    }
    // Every run's clients came from one pod, whose share is the run's transactions.
    let pods = sqlite(
        &db,
        "SELECT r.transactions, count(p.pod), sum(p.transactions), sum(p.clients) FROM runs r
         JOIN run_pods p ON p.run_id = r.id WHERE r.status = 'completed' GROUP BY r.id",
    );
    assert_eq!(pods.len(), 8, "{pods:?}");
    for row in &pods {
        assert_eq!((row[1].as_str(), row[3].as_str()), ("1", "2"), "{row:?}");
        assert_eq!(row[0], row[2], "{row:?}");
    }
    // Each target's record has its own value, and every run saw its own target's.
    let recorded = sqlite(
        &db,
        "SELECT t.name, s.setting FROM targets t JOIN target_settings s ON s.target_id = t.id
         WHERE s.name = 'shared_buffers' ORDER BY t.name",
    );
    assert_eq!(
        recorded,
        vec![
            vec!["sb128".to_string(), "16384".into()],
            vec!["sb512".into(), "65536".into()]
        ]
    );
    let seen_otherwise = sqlite(
        &db,
        "SELECT count(*) FROM run_settings WHERE name = 'shared_buffers'",
    );
    assert_eq!(seen_otherwise[0][0], "0");
    let read = sqlite(
        &db,
        "SELECT count(*) FROM runs WHERE status = 'completed' AND settings_read > 300",
    );
    assert_eq!(read[0][0], "8");
    // The record names where the Cluster ran: operator, instance, node, image, storage.
    let machines = sqlite(
        &db,
        "SELECT name, server_machine FROM targets ORDER BY name",
    );
    for (row, name) in machines.iter().zip(["sb128", "sb512"]) {
        assert_eq!(row[0], name);
        assert!(
            row[1].starts_with("CloudNativePG 1.30.0: cnpg-two-sb128-1 on node localhost (2 CPU, ")
                && row[1].contains("; no requests or limits) image sha256:")
                && row[1].ends_with("; storage class cnpg-two (kubernetes.io/no-provisioner)"),
            "{row:?}"
        );
    }
    // The primary's pod as its kubelet saw it, around every run.
    let sampled = sqlite(
        &db,
        "SELECT count(*) FROM runs r JOIN run_counters k ON k.run_id = r.id
         WHERE r.status = 'completed' AND k.source = 'kubelet' AND k.name = 'memory_bytes' AND k.value > 0",
    );
    let kubelet = sqlite(
        &db,
        "SELECT r.id, group_concat(k.source || ' ' || k.name || ' ' || k.value, ', ') FROM runs r
         LEFT JOIN run_counters k ON k.run_id = r.id AND k.source IN ('kubelet', 'server')
         WHERE r.status = 'completed' GROUP BY r.id",
    );
    assert_eq!(sampled[0][0], "8", "{kubelet:?}\n{stderr}");
    // The operator's exporter on the primary, read at the window's edges, counted the run's
    // commits in its database too: the run's transactions, and the probes' own few.
    let exported = sqlite(
        &db,
        "SELECT r.id, r.transactions, max(k.value) FROM runs r JOIN run_counters k ON k.run_id = r.id
         WHERE r.status = 'completed' AND k.source = 'cnpg'
           AND k.name LIKE 'cnpg_pg_stat_database_xact_commit{datname=\"stampede_cnpg_two_%'
         GROUP BY r.id",
    );
    assert_eq!(exported.len(), 8, "{exported:?}");
    for row in &exported {
        let transactions: f64 = row[1].parse().unwrap();
        let commits: f64 = row[2].parse().unwrap();
        assert!((0.0..=50.0).contains(&(commits - transactions)), "{row:?}");
    }
    let cleaned = kube.stampede(&["lab", "cleanup", &spec_arg]);
    let said = text(&cleaned.stdout);
    assert!(cleaned.status.success(), "{said}{}", text(&cleaned.stderr));
    assert!(
        said.contains("target \"sb128\": 1 Cluster(s) deleted with their volumes: cnpg-two-sb128"),
        "{said}"
    );
    assert_eq!(left_in(&namespace), Vec::<String>::new());
    kube.kubectl(&["delete", "namespace", &namespace, "--wait=false"]);
}

/// A url target at a Cluster's primary is loaded from pods as the Cluster's own target is: the
/// pods connect where the URL does, with the password from the Secret `[kubernetes]
/// password_secret` names; the role's password is left as it was (the Secret still opens it).
#[test]
fn a_url_target_at_a_cluster_is_loaded_from_pods_with_the_user_s_secret() {
    let kube = kube();
    kube.cloudnativepg();
    let volumes = kube.local_volumes("cnpg-url", 1);
    let namespace = namespace("cnpg-url");
    let dir = LabDir::new("cnpg-url");
    let manifest = dir.join("cluster.yaml");
    std::fs::write(
        &manifest,
        format!(
            "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {{name: shared, namespace: {namespace}}}\n\
             spec:\n  instances: 1\n  imageName: {OPERAND_IMAGE}\n  imagePullPolicy: Never\n\
             \x20 enableSuperuserAccess: true\n  storage: {{storageClass: {}, size: 1Gi}}\n\
             \x20 postgresql: {{shared_preload_libraries: [pg_stat_statements]}}\n",
            volumes.class
        ),
    )
    .unwrap();
    kube.kubectl(&["apply", "-f", &manifest.display().to_string()]);
    kube.kubectl(&[
        "wait",
        "clusters.postgresql.cnpg.io/shared",
        "--namespace",
        &namespace,
        "--for=jsonpath={.status.readyInstances}=1",
        "--timeout=300s",
    ]);
    let address = on_primary(&namespace, "shared", "SELECT inet_server_addr()");
    let password = base64_decode(
        kube.kubectl(&[
            "get",
            "secret",
            "shared-superuser",
            "--namespace",
            &namespace,
            "-o",
            "jsonpath={.data.password}",
        ])
        .trim(),
    );
    let targets = format!(
        "[[target]]\nname = \"cluster\"\ncloudnativepg = {{ cluster = \"shared\" }}\n\
         [[target]]\nname = \"url\"\nurl = \"host={address} user=postgres dbname=postgres\"\n"
    );
    let spec = dir.join("lab.toml");
    let lab = lab_spec("cnpg-url", &namespace, &targets, "\"select-only\"")
        .replace(
            "pod_start_timeout = \"60s\"\n",
            "pod_start_timeout = \"60s\"\npassword_secret = \"shared-superuser/password\"\n",
        )
        .replace("clients = [2]\n", "clients = [2]\npods = 1\n");
    std::fs::write(&spec, lab).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["lab", "run", &spec.display().to_string()])
        .env("KUBECONFIG", &kube.kubeconfig)
        .env("PGPASSWORD", &password)
        .output()
        .expect("stampede runs");
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{}{stderr}", text(&output.stdout));
    assert!(!stderr.contains(&password) && !text(&output.stdout).contains(&password));
    let db = dir.join("cnpg-url.db");
    // Every run's clients came from one pod; the url target's are the primary's statements.
    let pods = sqlite(
        &db,
        "SELECT c.target, r.transactions, count(p.pod), sum(p.transactions) FROM runs r
         JOIN cells c ON c.id = r.cell_id JOIN run_pods p ON p.run_id = r.id
         WHERE r.status = 'completed' GROUP BY r.id ORDER BY 1",
    );
    assert_eq!(pods.len(), 4, "{pods:?}");
    for row in &pods {
        assert_eq!(
            (row[2].as_str(), row[1].as_str()),
            ("1", row[3].as_str()),
            "{row:?}"
        );
    }
    let statements = sqlite(
        &db,
        "SELECT r.transactions, s.calls FROM runs r JOIN cells c ON c.id = r.cell_id
         JOIN run_statements s ON s.run_id = r.id
          AND s.query = 'SELECT abalance FROM pgbench_accounts WHERE aid = $1'
         WHERE r.status = 'completed' AND c.target = 'url'",
    );
    assert_eq!(statements.len(), 2, "{statements:?}");
    for row in &statements {
        let (transactions, calls): (i64, i64) = (row[0].parse().unwrap(), row[1].parse().unwrap());
        assert!(
            transactions > 0 && (0..=2).contains(&(calls - transactions)),
            "{row:?}"
        );
    }
    // The Secret's password still opens the role: the lab did not change it.
    assert_eq!(on_primary(&namespace, "shared", "SELECT 1"), "1");
    kube.kubectl(&[
        "delete",
        "clusters.postgresql.cnpg.io/shared",
        "--namespace",
        &namespace,
        "--wait=true",
    ]);
    kube.kubectl(&["delete", "namespace", &namespace, "--wait=false"]);
}

/// A Cluster whose image cannot be had and one whose storage class does not exist fail at
/// once with Kubernetes' reason, each deleted; two targets sharing the third's Cluster with a
/// misspelt setting and a value out of range fail with the server's word before anything is
/// patched; the third target's runs complete.
#[test]
fn a_cluster_that_cannot_start_fails_its_target_with_the_reason() {
    let kube = kube();
    kube.cloudnativepg();
    // The Cluster whose image is missing binds one before it fails (and leaves it Released).
    let volumes = kube.local_volumes("cnpg-bad", 2);
    let namespace = namespace("cnpg-bad");
    let dir = LabDir::new("cnpg-bad");
    let spec = dir.join("lab.toml");
    let targets = format!(
        "[[target]]\nname = \"no-image\"\ncloudnativepg = {{ image = \"localhost/no-such-postgres:15\", storage = {{ class = \"{class}\", size = \"1Gi\" }} }}\n\
         [[target]]\nname = \"no-class\"\ncloudnativepg = {{ image = \"{OPERAND_IMAGE}\", storage = {{ class = \"no-such-class\", size = \"1Gi\" }} }}\n",
        class = volumes.class
    ) + &cluster_target("fine", &volumes.class, "work_mem = \"8MB\"")
        + &cluster_target("typo", &volumes.class, "shared_bufers = \"1GB\"")
        + &cluster_target("too-small", &volumes.class, "shared_buffers = \"100kB\"");
    std::fs::write(
        &spec,
        lab_spec("cnpg-bad", &namespace, &targets, "\"select-only\""),
    )
    .unwrap();
    let output = kube.stampede(&["lab", "run", &spec.display().to_string(), "--keep-going"]);
    let stderr = text(&output.stderr);
    // Skipped targets make the lab unfinished (exit 2), to be resumed once mended.
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}{stderr}",
        text(&output.stdout)
    );
    assert!(
        stderr.contains("target \"no-image\" was skipped (2 run(s) not run)")
            && stderr.contains("target \"no-class\" was skipped (2 run(s) not run)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "Cluster \"cnpg-bad-no-image\" cannot become healthy: pod cnpg-bad-no-image-1-initdb-"
        ) && stderr.contains("could not start its container: ErrImageNeverPull"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "Cluster \"cnpg-bad-no-class\" cannot become healthy: volume cnpg-bad-no-class-1: "
        ) && stderr.contains("storageclass.storage.k8s.io \"no-such-class\" not found"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "settings.shared_bufers: not a setting of the Cluster's PostgreSQL (15."
        ) && stderr.contains(
            "settings.shared_buffers = '100kB': outside 16 .. 1073741823 × 8kB (the Cluster's PostgreSQL 15."
        ) && stderr.contains("nothing was patched into the Cluster")
            && !stderr.contains("parameters patched (shared_buf"),
        "{stderr}"
    );
    let db = dir.join("cnpg-bad.db");
    let by_target = sqlite(
        &db,
        "SELECT c.target, r.status, count(*) FROM runs r JOIN cells c ON c.id = r.cell_id
         GROUP BY c.target, r.status ORDER BY c.target, r.status",
    );
    assert!(
        by_target.contains(&vec!["fine".into(), "completed".into(), "2".into()]),
        "{by_target:?}"
    );
    assert!(
        by_target
            .iter()
            .all(|row| row[0] == "fine" || row[1] != "completed"),
        "{by_target:?}"
    );
    assert_eq!(left_in(&namespace), Vec::<String>::new());
    kube.kubectl(&["delete", "namespace", &namespace, "--wait=false"]);
}

/// `lab plan` shows each Cluster's manifest, `--dry-run` after the API server's dry run (the
/// operator's webhook refuses what it would refuse), and creates nothing; a target of the same
/// shape shares the first one's Cluster; a misspelt key of the Cluster is refused at its place
/// in the spec.
#[test]
fn the_plan_shows_each_cluster_the_api_server_accepts_and_refuses_bad_keys() {
    let kube = kube();
    kube.cloudnativepg();
    let namespace = namespace("cnpg-plan");
    let dir = LabDir::new("cnpg-plan");
    let spec = dir.join("lab.toml");
    let targets = cluster_target("a", "any", "work_mem = \"8MB\"")
        + &cluster_target("b", "any", "work_mem = \"64MB\"");
    std::fs::write(
        &spec,
        lab_spec("cnpg-plan", &namespace, &targets, "\"select-only\""),
    )
    .unwrap();
    let spec_arg = spec.display().to_string();
    let offline = kube.stampede(&["lab", "plan", &spec_arg]);
    let said = text(&offline.stdout) + &text(&offline.stderr);
    assert!(offline.status.success(), "{said}");
    assert!(
        said.contains("not sent to the API server (lab plan --dry-run has it check the manifest)"),
        "{said}"
    );
    let output = kube.stampede(&["lab", "plan", &spec_arg, "--dry-run"]);
    let said = text(&output.stdout) + &text(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains(&format!("target \"a\": Cluster \"cnpg-plan-a\" in namespace \"{namespace}\", created through the operator at its first use"))
            && said.contains("the API server accepted it (dry run)"),
        "{said}"
    );
    assert!(
        said.contains(&format!("target \"b\": Cluster \"cnpg-plan-a\" in namespace \"{namespace}\", shared with target \"a\" (the same Cluster; this target's settings patched in before each of its runs)")),
        "{said}"
    );
    let manifest_line = said
        .lines()
        .find_map(|line| line.strip_prefix("target \"a\": its manifest: "))
        .expect("the manifest");
    let manifest: serde_json::Value = serde_json::from_str(manifest_line).unwrap();
    assert_eq!(
        manifest["spec"]["postgresql"]["parameters"]["work_mem"],
        "8MB"
    );
    assert_eq!(left_in(&namespace), Vec::<String>::new());

    // The operator's webhook refuses an image whose tag is no PostgreSQL version it knows.
    let refused = lab_spec(
        "cnpg-plan",
        &namespace,
        &cluster_target("a", "any", "").replace(OPERAND_IMAGE, "localhost/cnpg-postgresql:1"),
        "\"select-only\"",
    );
    std::fs::write(&spec, refused).unwrap();
    let output = kube.stampede(&["lab", "plan", &spec_arg, "--dry-run"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("stampede: error: target \"a\": ")
            && stderr.contains("Unsupported PostgreSQL version"),
        "{stderr}"
    );

    let misspelt = lab_spec(
        "cnpg-plan",
        &namespace,
        &cluster_target("a", "any", "").replace("image =", "imagee ="),
        "\"select-only\"",
    );
    let line = 1 + misspelt.lines().position(|l| l.contains("imagee")).unwrap();
    std::fs::write(&spec, misspelt).unwrap();
    let output = kube.stampede(&["lab", "plan", &spec.display().to_string()]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "stampede: error: {}:{line}:17: cloudnativepg: unknown field `imagee`, expected one of",
            spec.display()
        )),
        "{stderr}"
    );
    kube.kubectl(&["delete", "namespace", &namespace, "--wait=false"]);
}

/// A switchover during a run — asked as `kubectl cnpg promote` asks it, through the Cluster's
/// status — fails that run with the reason; the lab reaches the new primary and the runs after
/// it complete.
#[test]
fn a_switchover_during_a_run_fails_that_run_and_the_next_ones_complete() {
    let kube = kube();
    kube.cloudnativepg();
    let volumes = kube.local_volumes("cnpg-switch", 2);
    let namespace = namespace("cnpg-switch");
    let dir = LabDir::new("cnpg-switch");
    let spec = dir.join("lab.toml");
    let target = cluster_target("a", &volumes.class, "work_mem = \"8MB\"").replace(
        "cloudnativepg = { image",
        "cloudnativepg = { instances = 2, image",
    );
    let lab = lab_spec("cnpg-switch", &namespace, &target, "\"select-only\"").replace(
        "runs = 2\nduration = \"2s\"",
        "runs = 3\nduration = \"10s\"",
    );
    std::fs::write(&spec, lab).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["lab", "run", &spec.display().to_string()])
        .env("KUBECONFIG", &kube.kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("stampede runs");
    // Once the first run is recorded and the second's clients run, the primary is moved to
    // the replica.
    let db = dir.join("cnpg-switch.db");
    let started = std::time::Instant::now();
    while !db.exists() || sqlite(&db, "SELECT count(*) FROM runs")[0][0] == "0" {
        assert!(
            started.elapsed().as_secs() < 300,
            "no run recorded in 300 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // The second run's clients are running: a pod of the lab's that the first run did not have.
    let running = || -> Vec<String> {
        kube.kubectl(&[
            "get",
            "pods",
            "--namespace",
            &namespace,
            "-l",
            "app.kubernetes.io/managed-by=stampede",
            "--field-selector=status.phase=Running",
            "-o",
            "name",
        ])
        .lines()
        .map(str::to_string)
        .collect()
    };
    let first_run = running();
    while running().iter().all(|pod| first_run.contains(pod)) {
        assert!(
            started.elapsed().as_secs() < 600,
            "no second run's pod in 600 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // The target's setting, patched in once the Cluster was healthy, on the replica too.
    assert_eq!(
        on_service(&namespace, "cnpg-switch-a", "ro", "SHOW work_mem"),
        "8MB"
    );
    let primary = kube.kubectl(&[
        "get",
        "clusters.postgresql.cnpg.io",
        "cnpg-switch-a",
        "--namespace",
        &namespace,
        "-o",
        "jsonpath={.status.currentPrimary}",
    ]);
    let replica = if primary.trim() == "cnpg-switch-a-1" {
        "cnpg-switch-a-2"
    } else {
        "cnpg-switch-a-1"
    };
    kube.kubectl(&[
        "patch", "clusters.postgresql.cnpg.io", "cnpg-switch-a", "--namespace", &namespace,
        "--subresource=status", "--type=merge", "-p",
        &format!(
            "{{\"status\": {{\"targetPrimary\": \"{replica}\", \"phase\": \"Switchover in progress\", \"phaseReason\": \"Switching over to {replica}\"}}}}"
        ),
    ]);
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    let runs = sqlite(
        &db,
        "SELECT id, status, coalesce(error, '') FROM runs ORDER BY id",
    );
    let failed: Vec<_> = runs.iter().filter(|r| r[1] == "failed").collect();
    assert_eq!(failed.len(), 1, "{runs:?}\n{stderr}");
    assert!(
        failed[0][2].starts_with(&format!(
            "primary changed during the run: {} → {replica} (a failover or switchover)",
            primary.trim()
        )),
        "{runs:?}"
    );
    let failed_id: i64 = failed[0][0].parse().unwrap();
    assert!(
        runs.iter()
            .any(|r| r[1] == "completed" && r[0].parse::<i64>().unwrap() > failed_id),
        "a run after the switchover completes: {runs:?}\n{stderr}"
    );
    assert!(
        stderr.contains("reusing Cluster \"cnpg-switch-a\"")
            && stderr.contains("Cluster \"cnpg-switch-a\": parameters patched (work_mem = '8MB')")
            && stderr.contains(
                "Cluster \"cnpg-switch-a\": the settings are in effect on the primary and 1 replica(s)"
            ),
        "{stderr}"
    );
    assert_eq!(left_in(&namespace), Vec::<String>::new(), "{stderr}");
    kube.kubectl(&["delete", "namespace", &namespace, "--wait=false"]);
}

/// `stampede ARGS` with the suite's kubeconfig, SIGTERM once each of `texts` has been on its
/// standard error, in turn: its exit status and everything it said.
fn interrupt_when(args: &[&str], texts: &[&str]) -> (std::process::ExitStatus, String) {
    let mut command = crate::common::stampede_command(args);
    command.env("KUBECONFIG", &kube().kubeconfig);
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("stampede runs");
    let mut progress = crate::common::Watch::new(child.stderr.take().unwrap());
    for text in texts {
        progress.wait_for(text);
    }
    crate::common::sigterm(&child);
    let status = child.wait().unwrap();
    (status, progress.finish())
}

/// SIGTERM mid-lab and `lab resume`, three times: Clusters kept by `--keep-clusters` are
/// reused; stopped without it, they are deleted and created again (their datasets loaded
/// again); every run is recorded once; nothing is left at the end.
#[test]
fn a_stopped_lab_resumes_reusing_kept_clusters_and_recreating_deleted_ones() {
    let kube = kube();
    kube.cloudnativepg();
    // Two targets, each created twice: of one shape, but b's Cluster its own.
    let volumes = kube.local_volumes("cnpg-resume", 4);
    let namespace = namespace("cnpg-resume");
    let dir = LabDir::new("cnpg-resume");
    let spec = dir.join("lab.toml");
    let targets = cluster_target("a", &volumes.class, "work_mem = \"4MB\"")
        + &cluster_target("b", &volumes.class, "work_mem = \"8MB\"").replace(
            "cloudnativepg = { image",
            "cloudnativepg = { share = false, image",
        );
    std::fs::write(
        &spec,
        lab_spec("cnpg-resume", &namespace, &targets, "\"select-only\""),
    )
    .unwrap();
    let spec_arg = spec.display().to_string();
    let clusters = || clusters_in(&namespace);
    let both = vec![
        "cluster.postgresql.cnpg.io/cnpg-resume-a".to_string(),
        "cluster.postgresql.cnpg.io/cnpg-resume-b".to_string(),
    ];

    // Round one made both Clusters.
    let (status, said) =
        interrupt_when(&["lab", "run", &spec_arg, "--keep-clusters"], &["run 3/4:"]);
    assert_eq!(status.code(), Some(2), "{said}");
    assert_eq!(clusters(), both, "kept: {said}");

    // The interrupted run (round two's first) runs again, then round two's other target's:
    // stopped once that one's Cluster is reused too.
    let db = dir.join("cnpg-resume.db");
    let interrupted = sqlite(
        &db,
        "SELECT c.target FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.status = 'interrupted'",
    );
    let last = if interrupted[0][0] == "a" { "b" } else { "a" };
    let (status, said) = interrupt_when(
        &["lab", "resume", &spec_arg],
        &[
            "run 4/4:",
            &format!("reusing Cluster \"cnpg-resume-{last}\""),
        ],
    );
    assert_eq!(status.code(), Some(2), "{said}");
    for target in ["a", "b"] {
        assert!(
            said.contains(&format!(
                "reusing Cluster \"cnpg-resume-{target}\" (there already, with the same spec)"
            )),
            "{said}"
        );
    }
    assert_eq!(
        clusters(),
        Vec::<String>::new(),
        "deleted when stopped: {said}"
    );

    let resumed = kube.stampede(&["lab", "resume", &spec_arg]);
    let said = text(&resumed.stderr);
    assert!(resumed.status.success(), "{said}");
    // The last run's target made again, its dataset loaded again.
    assert!(
        said.contains(&format!("creating Cluster \"cnpg-resume-{last}\"")),
        "{said}"
    );
    assert!(
        said.contains(&format!("loading pgbench scale 1 on {last}")),
        "{said}"
    );
    let completed = sqlite(
        &db,
        "SELECT c.target, r.repetition, count(*) FROM runs r JOIN cells c ON c.id = r.cell_id
         WHERE r.status = 'completed' GROUP BY c.target, r.repetition ORDER BY 1, 2",
    );
    assert_eq!(
        completed,
        [["a", "0"], ["a", "1"], ["b", "0"], ["b", "1"]]
            .iter()
            .map(|[t, r]| vec![t.to_string(), r.to_string(), "1".to_string()])
            .collect::<Vec<_>>(),
        "{said}"
    );
    assert_eq!(left_in(&namespace), Vec::<String>::new(), "{said}");
    kube.kubectl(&["delete", "namespace", &namespace, "--wait=false"]);
}

/// SIGTERM while the lab waits for the operator: the wait ends at once, the lab stops (exit 2)
/// saying so, and the Cluster is deleted with everything it made.
#[test]
fn a_lab_stopped_while_its_cluster_starts_deletes_it() {
    let kube = kube();
    kube.cloudnativepg();
    let volumes = kube.local_volumes("cnpg-wait", 1);
    let namespace = namespace("cnpg-wait");
    let dir = LabDir::new("cnpg-wait");
    let spec = dir.join("lab.toml");
    let target = cluster_target("a", &volumes.class, "");
    std::fs::write(
        &spec,
        lab_spec("cnpg-wait", &namespace, &target, "\"select-only\""),
    )
    .unwrap();
    let (status, said) = interrupt_when(
        &["lab", "run", &spec.display().to_string()],
        &["Cluster \"cnpg-wait-a\": "],
    );
    assert_eq!(status.code(), Some(2), "{said}");
    assert!(
        said.contains("stopped while waiting for Cluster \"cnpg-wait-a\""),
        "{said}"
    );
    assert_eq!(left_in(&namespace), Vec::<String>::new(), "{said}");
    kube.kubectl(&["delete", "namespace", &namespace, "--wait=false"]);
}
