//! cloudnativepg targets on the suite's cluster, with the CloudNativePG operator built from its
//! module (`.ci/kube/cloudnativepg`) and PostgreSQL 15 as its operand image. The lab creates the
//! Clusters through the operator, and every number is checked against the primary's own
//! counters; after each test no Cluster, pod, volume, Secret or Service of the lab is left.

use super::text;
use crate::common::kube::{kube, OPERAND_IMAGE};
use crate::common::{sqlite, LabDir};

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

fn lab_spec(name: &str, namespace: &str, targets: &str, scripts: &str) -> String {
    format!(
        "name = \"{name}\"\nruns = 2\nduration = \"2s\"\nwarmup = \"1s\"\nseed = 5\n\n\
         [kubernetes]\nnamespace = \"{namespace}\"\nimage_pull_policy = \"Never\"\n\n{targets}\n\
         [[workload]]\nname = \"pgbench\"\nscripts = [{scripts}]\nclients = [2]\n"
    )
}

/// What of the lab's is in the namespace: Clusters, pods, volumes' claims, Secrets, Services.
fn left_in(namespace: &str) -> Vec<String> {
    kube()
        .kubectl(&[
            "get",
            "clusters.postgresql.cnpg.io,pods,persistentvolumeclaims,secrets,services",
            "--namespace",
            namespace,
            "-o",
            "name",
        ])
        .lines()
        .map(str::to_string)
        .collect()
}

/// `SQL`'s one value on the Cluster's primary, as its superuser (the Secret and the `-rw`
/// endpoint read here as a user would with kubectl).
fn on_primary(namespace: &str, cluster: &str, sql: &str) -> String {
    let kube = kube();
    let address = kube.kubectl(&[
        "get",
        "endpointslices",
        "--namespace",
        namespace,
        "-l",
        &format!("kubernetes.io/service-name={cluster}-rw"),
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

/// Two Clusters of one instance, shared_buffers 128MB and 512MB, each target's settings among
/// its Cluster's parameters: the lab creates both through the operator, its transactions are
/// the primaries' statement counts, `--keep-clusters` keeps them (the parameters are what the
/// server shows) and `lab clean` deletes them with everything they made.
#[test]
fn a_lab_compares_two_clusters_it_creates_and_cleans_them_up() {
    let kube = kube();
    kube.cloudnativepg();
    let volumes = kube.local_volumes("cnpg-two", 2);
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
    assert!(
        stderr.contains("Cluster \"cnpg-two-sb512\": Setting up primary"),
        "{stderr}"
    );
    assert_eq!(
        on_primary(&namespace, "cnpg-two-sb128", "SHOW shared_buffers"),
        "128MB"
    );
    assert_eq!(
        on_primary(&namespace, "cnpg-two-sb512", "SHOW shared_buffers"),
        "512MB"
    );
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

/// A Cluster whose image cannot be had and one whose storage class does not exist fail at
/// once with Kubernetes' reason, each deleted; the third target's runs complete.
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
    ) + &cluster_target("fine", &volumes.class, "work_mem = \"8MB\"");
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

/// `lab plan` shows each Cluster's manifest after the API server's dry run and creates
/// nothing; a misspelt key of the Cluster is refused at its place in the spec.
#[test]
fn the_plan_shows_each_cluster_the_api_server_accepts_and_refuses_bad_keys() {
    let kube = kube();
    kube.cloudnativepg();
    let namespace = namespace("cnpg-plan");
    let dir = LabDir::new("cnpg-plan");
    let spec = dir.join("lab.toml");
    std::fs::write(
        &spec,
        lab_spec(
            "cnpg-plan",
            &namespace,
            &cluster_target("a", "any", "work_mem = \"8MB\""),
            "\"select-only\"",
        ),
    )
    .unwrap();
    let output = kube.stampede(&["lab", "plan", &spec.display().to_string()]);
    let said = text(&output.stdout) + &text(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains(&format!("target \"a\": Cluster \"cnpg-plan-a\" in namespace \"{namespace}\", created through the operator at the target's first use"))
            && said.contains("the API server accepted it (dry run)"),
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

    std::fs::write(
        &spec,
        lab_spec(
            "cnpg-plan",
            &namespace,
            &cluster_target("a", "any", "").replace("image =", "imagee ="),
            "\"select-only\"",
        ),
    )
    .unwrap();
    let output = kube.stampede(&["lab", "plan", &spec.display().to_string()]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "stampede: error: {}:13:17: cloudnativepg: unknown field `imagee`, expected one of",
            spec.display()
        )),
        "{stderr}"
    );
    kube.kubectl(&["delete", "namespace", &namespace, "--wait=false"]);
}
