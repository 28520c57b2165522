//! The rules docs/architecture.md states that a program can check, each a function from the
//! sources to the problems it finds (empty when the rule holds), each with a fixture that
//! breaks it: the crates' order as the doc's diagram draws it, no family importing another, a
//! `//!` header on every Rust file, and the registries complete (every family folder in
//! `FAMILIES`, the command line and its dispatch; every target kind's folder in `KINDS`).

use super::Sources;

const ARCHITECTURE: &str = "docs/architecture.md";
/// Folders of `src/family/` that are not families: what every family shares.
const FAMILY_SHARED: &[&str] = &["common"];

/// The layer crates as the diagram in docs/architecture.md draws them, top layer first: the
/// first `stampede-<name>` of each line of its first fenced block after the binary crate's.
fn drawn_layers(sources: &Sources) -> Vec<String> {
    let text = sources.text(ARCHITECTURE);
    let block = text
        .split("```")
        .skip(1)
        .step_by(2)
        .find(|block| block.contains("stampede-base"))
        .unwrap_or("");
    let mut layers: Vec<String> = Vec::new();
    for line in block.lines() {
        let Some(at) = line.find("stampede-") else {
            continue;
        };
        let name: String = line[at + "stampede-".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !layers.contains(&name) {
            layers.push(name);
        }
    }
    layers
}

/// The `stampede-*` crates a manifest's `[dependencies]` name (not its dev-dependencies).
fn layer_dependencies(manifest: &str) -> Vec<String> {
    let mut section = "";
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[dependencies]" {
            if let Some(rest) = line.strip_prefix("stampede-") {
                names.push(
                    rest.chars()
                        .take_while(|c| c.is_ascii_alphanumeric())
                        .collect(),
                );
            }
        }
    }
    names
}

/// Every crate of `crates/` is drawn, and uses only crates drawn below it.
pub(super) fn crates_follow_the_drawn_layers(sources: &Sources) -> Vec<String> {
    let layers = drawn_layers(sources);
    let mut problems = Vec::new();
    for name in sources.folders_in("crates/") {
        let Some(level) = layers.iter().position(|layer| layer == name) else {
            problems.push(format!(
                "crates/{name}: not in {ARCHITECTURE}'s diagram of the layers"
            ));
            continue;
        };
        let manifest = sources
            .text(&format!("crates/{name}/Cargo.toml"))
            .to_string();
        for used in layer_dependencies(&manifest) {
            let below = layers.iter().position(|layer| *layer == used) > Some(level);
            if !below {
                problems.push(format!(
                    "crates/{name}/Cargo.toml: uses stampede-{used}, which {ARCHITECTURE} draws \
                     above it (a crate uses only the crates below it)"
                ));
            }
        }
    }
    problems
}

/// The families: the folders of `src/family/` but the shared ones.
fn families(sources: &Sources) -> Vec<&str> {
    sources
        .folders_in("src/family/")
        .into_iter()
        .filter(|name| !FAMILY_SHARED.contains(name))
        .collect()
}

/// The first segment of each path a `crate::family::…` import names, braces opened.
fn family_modules_named(text: &str) -> Vec<String> {
    let mut named = Vec::new();
    for (at, _) in text.match_indices("crate::family::") {
        let rest = &text[at + "crate::family::".len()..];
        let segment = |s: &str| -> String {
            s.trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        };
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                named.extend(group.split(',').map(segment));
            }
            None => named.push(segment(rest)),
        }
    }
    named
}

/// No file of a family names another family's module.
pub(super) fn no_family_imports_another(sources: &Sources) -> Vec<String> {
    let families = families(sources);
    let mut problems = Vec::new();
    for path in sources.paths().filter(|p| p.ends_with(".rs")) {
        let Some(own) = path
            .strip_prefix("src/family/")
            .and_then(|rest| rest.split_once('/'))
            .map(|(family, _)| family)
            .filter(|family| families.contains(family))
        else {
            continue;
        };
        for other in family_modules_named(sources.text(path)) {
            if other != own && families.contains(&other.as_str()) {
                problems.push(format!(
                    "{path}: the {own} family imports the {other} family"
                ));
            }
        }
    }
    problems
}

/// Every Rust file opens with a `//!` header saying what it holds.
pub(super) fn every_rust_file_has_a_header(sources: &Sources) -> Vec<String> {
    sources
        .paths()
        .filter(|path| path.ends_with(".rs"))
        .filter(|path| {
            let first = sources.text(path).lines().find(|l| !l.trim().is_empty());
            !first.is_some_and(|line| line.starts_with("//!"))
        })
        .map(|path| format!("{path}: no `//!` header (what the file holds, and why)"))
        .collect()
}

/// The folders where `mariadb` names the product, a MariaDB server the lab installs and
/// starts; everywhere else the second engine (its protocol, dialect and probes, which MySQL
/// shares) is `mysql`.
const MARIADB_THE_PRODUCT: [&str; 2] = ["src/server/mariadb/", "src/lab/targets/mariadb/"];

/// One name for the second engine in file and folder names: `mysql`, but for the product's.
pub(super) fn the_second_engine_is_named_mysql(sources: &Sources) -> Vec<String> {
    sources
        .paths()
        .filter(|path| path.starts_with("src/") || path.starts_with("crates/"))
        .filter(|path| path.ends_with(".rs") && path.contains("mariadb"))
        .filter(|path| !MARIADB_THE_PRODUCT.iter().any(|p| path.starts_with(p)))
        .map(|path| {
            format!(
                "{path}: the second engine is `mysql` in names (`mariadb` only for the server the lab starts: {})",
                MARIADB_THE_PRODUCT.join(", ")
            )
        })
        .collect()
}

/// Every family folder is a module of `family/mod.rs` with its `KINDS` in `FAMILIES`, a command
/// of `app/cli.rs` and an arm of `app/dispatch.rs`; every folder of `lab/targets/` is a kind in
/// its `KINDS`.
pub(super) fn registries_are_complete(sources: &Sources) -> Vec<String> {
    let registry = sources.text("src/family/mod.rs");
    let listed = registry.split("FAMILIES:").nth(1).unwrap_or("");
    let mut problems = Vec::new();
    for family in families(sources) {
        let places = [
            (
                registry.contains(&format!("pub mod {family};")),
                "src/family/mod.rs: no `pub mod`",
            ),
            (
                listed.contains(&format!("{family}::lab::KINDS")),
                "src/family/mod.rs: not in FAMILIES",
            ),
            (
                mentions(sources.text("src/app/cli.rs"), family),
                "src/app/cli.rs: no command",
            ),
            (
                mentions(sources.text("src/app/dispatch.rs"), family),
                "src/app/dispatch.rs: no arm",
            ),
        ];
        for (_, missing) in places.iter().filter(|(present, _)| !present) {
            problems.push(format!("{missing} for the family src/family/{family}/"));
        }
    }
    let targets = sources.text("src/lab/targets/mod.rs");
    let kinds = targets.split("KINDS:").nth(1).unwrap_or("");
    for kind in sources.folders_in("src/lab/targets/") {
        if !kinds.contains(&format!("&{kind}::Kind")) {
            problems.push(format!(
                "src/lab/targets/mod.rs: the target kind src/lab/targets/{kind}/ is not in KINDS"
            ));
        }
    }
    problems
}

/// Whether `text` uses the module `name` as a path (`name::`).
fn mentions(text: &str, name: &str) -> bool {
    text.match_indices(&format!("{name}::")).any(|(at, _)| {
        !text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(problems: Vec<String>) {
        assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
    }

    #[test]
    fn the_repository_keeps_every_rule() {
        let sources = Sources::of_repository();
        holds(crates_follow_the_drawn_layers(&sources));
        holds(no_family_imports_another(&sources));
        holds(every_rust_file_has_a_header(&sources));
        holds(registries_are_complete(&sources));
        holds(the_second_engine_is_named_mysql(&sources));
    }

    #[test]
    fn a_file_naming_mariadb_outside_the_product_s_folders_is_named() {
        let sources = Sources::fixture(&[
            ("src/server/mariadb/managed.rs", "//! x\n"),
            ("src/lab/targets/mariadb/mod.rs", "//! x\n"),
            ("src/probe/mysql/mod.rs", "//! x\n"),
            ("src/family/tproch/mariadb.rs", "//! x\n"),
            ("docs/mariadb.md", "# MariaDB\n"),
        ]);
        assert_eq!(
            the_second_engine_is_named_mysql(&sources),
            ["src/family/tproch/mariadb.rs: the second engine is `mysql` in names (`mariadb` only for the server the lab starts: src/server/mariadb/, src/lab/targets/mariadb/)"]
        );
    }

    const DIAGRAM: &str = "# A\n```sh\ncargo tree\n```\n\n```\nstampede (binary)\n ├── stampede-wire  the wire\n │      └── stampede-conn\n ├── stampede-conn  where\n └── stampede-base  failures\n```\n";

    #[test]
    fn a_crate_using_one_drawn_above_it_or_not_drawn_is_named() {
        let sources = Sources::fixture(&[
            (ARCHITECTURE, DIAGRAM),
            ("crates/wire/Cargo.toml", "[dependencies]\nstampede-conn.workspace = true\n"),
            (
                "crates/conn/Cargo.toml",
                "[dependencies]\nstampede-wire = { path = \"x\" }\n[dev-dependencies]\nstampede-base.workspace = true\n",
            ),
            ("crates/base/Cargo.toml", "[dependencies]\n"),
            ("crates/lua/Cargo.toml", "[dependencies]\n"),
        ]);
        assert_eq!(drawn_layers(&sources), ["wire", "conn", "base"]);
        assert_eq!(
            crates_follow_the_drawn_layers(&sources),
            [
                "crates/conn/Cargo.toml: uses stampede-wire, which docs/architecture.md draws above it (a crate uses only the crates below it)",
                "crates/lua: not in docs/architecture.md's diagram of the layers",
            ]
        );
    }

    #[test]
    fn a_family_importing_another_is_named_in_any_form() {
        let sources = Sources::fixture(&[
            ("src/family/common/mod.rs", "//! shared\n"),
            (
                "src/family/tpcc/run.rs",
                "//! x\nuse crate::family::common::measure;\nuse crate::family::tpcc::x;\n",
            ),
            (
                "src/family/ibench/a.rs",
                "//! x\nuse crate::family::{api, tpcc::rows::Row};\n",
            ),
            (
                "src/family/ibench/b.rs",
                "//! x\nfn f() { crate::family::tpcc::load(); }\n",
            ),
        ]);
        assert_eq!(
            no_family_imports_another(&sources),
            [
                "src/family/ibench/a.rs: the ibench family imports the tpcc family",
                "src/family/ibench/b.rs: the ibench family imports the tpcc family",
            ]
        );
    }

    #[test]
    fn a_file_without_a_header_is_named() {
        let sources = Sources::fixture(&[
            ("src/a.rs", "\n//! holds a\n"),
            ("src/b.rs", "// a plain comment\nfn b() {}\n"),
            ("tests/c.rs", ""),
        ]);
        assert_eq!(
            every_rust_file_has_a_header(&sources),
            [
                "src/b.rs: no `//!` header (what the file holds, and why)",
                "tests/c.rs: no `//!` header (what the file holds, and why)",
            ]
        );
    }

    #[test]
    fn a_family_or_target_kind_left_out_of_a_registry_is_named() {
        let sources = Sources::fixture(&[
            ("src/family/pgbench/lab.rs", ""),
            ("src/family/newbench/lab.rs", ""),
            ("src/family/common/mod.rs", ""),
            (
                "src/family/mod.rs",
                "pub mod pgbench;\npub mod newbench;\nconst FAMILIES: &[&[K]] = &[pgbench::lab::KINDS];\n",
            ),
            ("src/app/cli.rs", "use crate::family::{newbench, pgbench};\nPgbench(pgbench::args::A)\n"),
            ("src/app/dispatch.rs", "T::Pgbench(a) => pgbench::command::run(a),\n"),
            ("src/lab/targets/url/mod.rs", ""),
            ("src/lab/targets/cnpg/mod.rs", ""),
            ("src/lab/targets/mod.rs", "pub static KINDS: &[&dyn K] = &[&url::Kind];\n"),
        ]);
        assert_eq!(
            registries_are_complete(&sources),
            [
                "src/family/mod.rs: not in FAMILIES for the family src/family/newbench/",
                "src/app/cli.rs: no command for the family src/family/newbench/",
                "src/app/dispatch.rs: no arm for the family src/family/newbench/",
                "src/lab/targets/mod.rs: the target kind src/lab/targets/cnpg/ is not in KINDS",
            ]
        );
    }
}
