//! `stampede server status|start|stop|destroy` for the managed default server.

use super::{CommandResult, Failure};
use crate::app::cli::ServerAction;
use crate::report::table;
use crate::server::postgres::binaries::Binaries;
use crate::server::postgres::build::{self, BuildRequest};
use crate::server::postgres::download;
use crate::server::postgres::managed::{default_home, ManagedServer};
use crate::server::postgres::{git_source, release};
use crate::server::setup::SetupLine;

pub fn run(action: &ServerAction) -> CommandResult {
    match action {
        ServerAction::Versions => return versions(),
        ServerAction::Download { version } => return download(version),
        ServerAction::ClientPrograms => return client_programs(),
        ServerAction::Build {
            source,
            cflags,
            configure,
            patches,
        } => {
            return build(&BuildRequest {
                source: source.clone(),
                cflags: cflags.clone(),
                configure: configure.clone(),
                patches: patches.clone(),
                origin: None,
            })
        }
        _ => {}
    }
    let home = default_home();
    if let ServerAction::Start = action {
        let mut setup = SetupLine::on_stderr();
        let (server, created) = ManagedServer::ensure_running(&home, &mut |e| setup.show(e))
            .map_err(Failure::into_input)?;
        if created {
            println!("created the managed default server");
        }
        println!("{}", server.describe());
        return Ok(());
    }
    let Some(server) = ManagedServer::open(&home).map_err(Failure::into_input)? else {
        println!(
            "no managed default server under {} (it is created on first use)",
            home.display()
        );
        return Ok(());
    };
    match action {
        ServerAction::Status => server.status_lines().iter().for_each(|l| println!("{l}")),
        ServerAction::Stop => {
            if server.stop()? {
                println!("stopped the managed default server");
            } else {
                println!("the managed default server was not running");
            }
        }
        ServerAction::Destroy => {
            let root = server.destroy()?;
            println!(
                "destroyed the managed default server ({} removed)",
                root.display()
            );
        }
        ServerAction::Start
        | ServerAction::Versions
        | ServerAction::Download { .. }
        | ServerAction::ClientPrograms
        | ServerAction::Build { .. } => {
            unreachable!("handled above")
        }
    }
    Ok(())
}

/// Every major reachable and from where: zonky's builds on Maven Central, the release
/// tarballs Debian's source packages carry (built from source when zonky has no build), what
/// is cached, and the system's binaries.
fn versions() -> CommandResult {
    let root = crate::server::host::cache_root();
    let cached = download::cached_versions(&root);
    let system = Binaries::find_best().ok();
    let debian = release::source_releases();
    let newest_sources = debian
        .as_ref()
        .map(|releases| release::newest_per_major(releases))
        .unwrap_or_default();
    let mut majors: Vec<String> = download::MAJORS.iter().map(|m| m.to_string()).collect();
    for source in newest_sources.iter().rev() {
        if !majors.contains(&source.major) {
            majors.push(source.major.clone());
        }
    }
    let mut rows = Vec::new();
    for major in &majors {
        let available = download::newest_available(major).unwrap_or_else(|e| {
            if download::major_of(major).is_none() {
                return "none".into();
            }
            format!(
                "unavailable ({})",
                e.message().split(": ").last().unwrap_or("")
            )
        });
        let source = newest_sources
            .iter()
            .find(|r| &r.major == major)
            .map(|r| format!("{} ({})", r.upstream, r.package.suite))
            .unwrap_or_default();
        let here: Vec<String> = cached
            .iter()
            .filter(|(v, _)| download::major_of(v) == Some(major.as_str()))
            .map(|(v, _)| v.clone())
            .collect();
        let system_note = system
            .as_ref()
            .filter(|b| major_of_release(b.release()) == *major)
            .map(|b| b.bin_dir.display().to_string())
            .unwrap_or_default();
        rows.push(vec![
            major.clone(),
            available,
            source,
            here.join(", "),
            system_note,
        ]);
    }
    print!(
        "{}",
        table::render(
            &[
                "major",
                "newest on Maven Central (zonky)",
                "newest Debian source (built)",
                "cached",
                "system"
            ],
            &rows
        )
    );
    if let Err(e) = &debian {
        println!("Debian's source packages: unreachable ({})", e.message());
    }
    println!(
        "a major zonky lacks builds from Debian's release tarball ({}); any branch builds from git: postgres = {{ git = \"{}\", ref = \"master\" }}",
        release::SUITES.join(", "),
        git_source::POSTGRES_GIT
    );
    println!("cache: {}", root.display());
    let builds = build::cached_builds();
    if !builds.is_empty() {
        println!("\nbuilt from source:");
        for (bin_dir, record) in builds {
            println!("  {}\n    {}", bin_dir.display(), record.describe());
        }
    }
    Ok(())
}

/// "9.6.24" → "9.6", "19rc1" → "19".
fn major_of_release(release: &str) -> String {
    if let Some(rest) = release.strip_prefix("9.") {
        return format!("9.{}", rest.split('.').next().unwrap_or(""));
    }
    release.chars().take_while(char::is_ascii_digit).collect()
}

/// Downloads (or builds, for a release zonky lacks; or finds in the cache) and prints the
/// bin/ path on stdout; progress goes to stderr.
fn download(version: &str) -> CommandResult {
    if release::parse(version).is_none() {
        return Err(Failure::input(format!(
            "unknown PostgreSQL version \"{version}\"; use a major (\"16\", \"19\") or an exact version (\"16.4.0\", \"19rc1\")"
        )));
    }
    let mut setup = SetupLine::on_stderr();
    let binaries = release::binaries(version, &mut |event| setup.show(event))?;
    eprintln!("PostgreSQL {}", binaries.release());
    println!("{}", binaries.bin_dir.display());
    Ok(())
}

/// The client programs' bin/ path on stdout (what getting them took on stderr), for
/// `"$(stampede server client-programs)/pg_dump"`.
fn client_programs() -> CommandResult {
    let mut setup = SetupLine::on_stderr();
    let bin_dir = release::client_programs(&mut |event| setup.show(event))?;
    println!("{}", bin_dir.display());
    Ok(())
}

/// Builds (or finds in the cache) and prints the bin/ path on stdout; the steps go to stderr.
fn build(request: &BuildRequest) -> CommandResult {
    let started = std::time::Instant::now();
    let mut announce = |step: build::Step, seconds: Option<f64>| match seconds {
        None => eprintln!("{}...", step.name()),
        Some(seconds) => eprintln!("{} done in {seconds:.1} s", step.name()),
    };
    let built = build::build(request, &mut announce)?;
    if built.cache_hit {
        eprintln!("cache hit: {}", built.record.describe());
    } else {
        eprintln!(
            "built in {:.1} s: {}",
            started.elapsed().as_secs_f64(),
            built.record.describe()
        );
    }
    println!("{}", built.binaries.bin_dir.display());
    Ok(())
}
