//! The suite's one-node Kubernetes: real etcd, API server, controller manager, scheduler,
//! kubelet, containerd and runc, built once per machine by `.ci/kube/build` and started by
//! `.ci/kube/up` for this test program (stopped at its exit). Pods use the host's network, so
//! the load they make reaches the suite's PostgreSQL on 127.0.0.1 and stays on loopback.
//! stampede's image is made from the binary under test and imported into containerd.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub struct Kube {
    pub state: PathBuf,
    pub kubeconfig: PathBuf,
    pub cache: PathBuf,
}

static KUBE: OnceLock<Kube> = OnceLock::new();

/// The image the tests run (the launcher's default name for this version).
pub const IMAGE: &str = concat!("localhost/stampede:", env!("CARGO_PKG_VERSION"));
/// A lab machine's image: stampede with PostgreSQL 15's server (the system's, at its own paths),
/// a shell (initdb and pg_ctl start programs through it) and a passwd entry for the pods' user,
/// which initdb looks up.
pub const LAB_IMAGE: &str = concat!("localhost/stampede-lab:", env!("CARGO_PKG_VERSION"));

static LAB_IMAGE_MADE: OnceLock<()> = OnceLock::new();

extern "C" fn stop_kube_at_exit() {
    if let Some(kube) = KUBE.get() {
        let _ = Command::new(script("down")).arg(&kube.state).output();
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".ci/kube")
        .join(name)
}

fn run(command: &mut Command, what: &str) -> Output {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

pub fn kube() -> &'static Kube {
    KUBE.get_or_init(|| {
        let cache = match std::env::var_os("STAMPEDE_KUBE_CACHE") {
            Some(cache) if Path::new(&cache).join("bin/kubectl").exists() => PathBuf::from(cache),
            _ => {
                let output = run(&mut Command::new(script("build")), ".ci/kube/build");
                PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
            }
        };
        let state = PathBuf::from(format!("/tmp/stampede-kube-test-{}", std::process::id()));
        let output = run(
            Command::new(script("up"))
                .arg(&state)
                .env("STAMPEDE_KUBE_CACHE", &cache),
            ".ci/kube/up",
        );
        // SAFETY: registering a plain extern "C" function with atexit.
        unsafe { libc::atexit(stop_kube_at_exit) };
        let kubeconfig = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        let kube = Kube {
            state,
            kubeconfig,
            cache,
        };
        kube.import_stampede_image();
        kube
    })
}

impl Kube {
    fn import_stampede_image(&self) {
        let archive = self.state.join("stampede-image.tar");
        run(
            Command::new(script("image"))
                .args([IMAGE, &archive.display().to_string()])
                .arg(env!("CARGO_BIN_EXE_stampede"))
                .arg("/usr/local/bin/stampede")
                .env("STAMPEDE_KUBE_CACHE", &self.cache),
            "making stampede's image",
        );
        run(
            Command::new(self.cache.join("deb/usr/bin/ctr"))
                .arg("--address")
                .arg(self.state.join("containerd.sock"))
                .args(["-n", "k8s.io", "images", "import"])
                .arg(&archive),
            "importing stampede's image",
        );
    }

    /// `LAB_IMAGE`, made and imported once per test program.
    pub fn lab_image(&self) -> &'static str {
        LAB_IMAGE_MADE.get_or_init(|| {
            let passwd = self.state.join("passwd");
            let group = self.state.join("group");
            std::fs::write(
                &passwd,
                "stampede:x:65532:65532:stampede:/work:/usr/sbin/nologin\n",
            )
            .unwrap();
            std::fs::write(&group, "stampede:x:65532:\n").unwrap();
            let archive = self.state.join("stampede-lab-image.tar");
            let mut command = Command::new(script("image"));
            command
                .args([LAB_IMAGE, &archive.display().to_string()])
                .arg(env!("CARGO_BIN_EXE_stampede"))
                .arg("/usr/local/bin/stampede");
            for dir in [
                "/usr/lib/postgresql/15",
                "/usr/share/postgresql/15",
                "/usr/share/zoneinfo",
            ] {
                command.args([dir, dir]);
            }
            // initdb and pg_ctl run programs through /bin/sh.
            command
                .args(["/bin/sh", "/bin/sh"])
                .arg(&passwd)
                .arg("/etc/passwd")
                .arg(&group)
                .arg("/etc/group")
                .env("STAMPEDE_KUBE_CACHE", &self.cache);
            run(&mut command, "making the lab image");
            self.import(&archive);
        });
        LAB_IMAGE
    }

    fn import(&self, archive: &Path) {
        run(
            Command::new(self.cache.join("deb/usr/bin/ctr"))
                .arg("--address")
                .arg(self.state.join("containerd.sock"))
                .args(["-n", "k8s.io", "images", "import"])
                .arg(archive),
            "importing an image",
        );
    }

    /// kubectl with the suite's configuration.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let output = run(
            Command::new(self.cache.join("bin/kubectl"))
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(args),
            &format!("kubectl {}", args.join(" ")),
        );
        String::from_utf8_lossy(&output.stdout).to_string()
    }

    /// The names of every object stampede made that is still in `namespace` (Jobs, pods,
    /// Services, ConfigMaps).
    pub fn leftovers(&self, namespace: &str) -> Vec<String> {
        self.kubectl(&[
            "get",
            "jobs,pods,services,configmaps,secrets",
            "--namespace",
            namespace,
            "-l",
            "app.kubernetes.io/managed-by=stampede",
            "-o",
            "name",
        ])
        .lines()
        .map(str::to_string)
        .collect()
    }

    /// `stampede ARGS` with the suite's kubeconfig.
    pub fn stampede(&self, args: &[&str]) -> Output {
        self.stampede_command(args).output().expect("stampede runs")
    }

    /// stampede with the cluster's kubeconfig, to spawn.
    pub fn stampede_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stampede"));
        command
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env_remove("PGPASSWORD");
        command
    }
}

/// The operand image `.ci/kube/cloudnativepg` makes: PostgreSQL 15, uid 26.
pub const OPERAND_IMAGE: &str = "localhost/cnpg-postgresql:15";

static OPERATOR: OnceLock<PathBuf> = OnceLock::new();

impl Kube {
    /// The CloudNativePG operator running on the cluster, with its images imported and the
    /// suite's storage class made; installed once per test program.
    pub fn cloudnativepg(&self) -> &Path {
        OPERATOR.get_or_init(|| {
            let cache = match std::env::var_os("STAMPEDE_CNPG_CACHE") {
                Some(cache) if Path::new(&cache).join("cnpg.yaml").exists() => PathBuf::from(cache),
                _ => {
                    let output = run(
                        Command::new(script("cloudnativepg"))
                            .env("STAMPEDE_KUBE_CACHE", &self.cache),
                        ".ci/kube/cloudnativepg",
                    );
                    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
                }
            };
            for image in ["operator", "postgresql-15"] {
                self.import(&cache.join(format!("images/{image}.tar")));
            }
            let manifest = cache.join("cnpg.yaml");
            self.kubectl(&[
                "apply",
                "--server-side",
                "-f",
                &manifest.display().to_string(),
            ]);
            self.kubectl(&[
                "rollout",
                "status",
                "--namespace",
                "cnpg-system",
                "deployment/cnpg-controller-manager",
                "--timeout=180s",
            ]);
            cache
        })
    }

    /// A storage class of the caller's own (named `name`: no provisioner, a volume bound when
    /// an instance is placed) with `count` fresh volumes of 1 GiB for Clusters' instances: a
    /// hostPath directory each, owned by uid 26 (hostPath ignores fsGroup). Dropped, the
    /// volumes go with their directories (a deleted claim leaves its volume Released, never
    /// bound again). A class per test, so that one test's Cluster never takes another's volume.
    pub fn local_volumes(&self, name: &str, count: usize) -> LocalVolumes {
        let class = self.state.join(format!("{name}-class.yaml"));
        std::fs::write(
            &class,
            format!(
                "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: {name}}}\n\
                 provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n"
            ),
        )
        .unwrap();
        self.kubectl(&["apply", "-f", &class.display().to_string()]);
        let mut names = Vec::new();
        for i in 0..count {
            let volume = format!("{name}-{i}");
            let dir = self.state.join("volumes").join(&volume);
            std::fs::create_dir_all(&dir).unwrap();
            std::os::unix::fs::chown(&dir, Some(26), Some(26)).unwrap();
            std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .unwrap();
            let file = self.state.join(format!("{volume}.yaml"));
            std::fs::write(
                &file,
                format!(
                    "apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {volume}}}\n\
                     spec:\n  capacity: {{storage: 1Gi}}\n  accessModes: [ReadWriteOnce]\n\
                     \x20 storageClassName: {name}\n  persistentVolumeReclaimPolicy: Retain\n\
                     \x20 hostPath: {{path: {}}}\n",
                    dir.display()
                ),
            )
            .unwrap();
            self.kubectl(&["apply", "-f", &file.display().to_string()]);
            names.push((volume, dir));
        }
        LocalVolumes {
            class: name.to_string(),
            names,
        }
    }
}

/// Volumes `local_volumes` made; dropped, they are deleted with their directories.
pub struct LocalVolumes {
    /// Their storage class.
    pub class: String,
    names: Vec<(String, PathBuf)>,
}

impl Drop for LocalVolumes {
    fn drop(&mut self) {
        let kube = kube();
        for (volume, dir) in &self.names {
            let _ = Command::new(kube.cache.join("bin/kubectl"))
                .arg("--kubeconfig")
                .arg(&kube.kubeconfig)
                .args(["delete", "persistentvolume", volume, "--wait=false"])
                .output();
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
