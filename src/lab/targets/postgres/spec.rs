//! `postgres = …` in a `[[target]]`: a version, "system", a bin/ path, "master", or a table
//! asking for a build from source, a git ref or Debian's build.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::lab::spec_text::{Source, SpecError};
use crate::server::postgres::build::BuildRequest;
use crate::server::postgres::git_source::GitSource;
use crate::server::postgres::provision::BinarySource;

pub fn postgres_source(
    source: &Source<'_>,
    value: Option<&Spanned<toml::Value>>,
    base: &Path,
) -> Result<BinarySource, SpecError> {
    let Some(value) = value else {
        return Ok(BinarySource::System);
    };
    let text = match value.get_ref() {
        toml::Value::String(text) => text.trim(),
        toml::Value::Table(table) => return build_request(source, value, table, base),
        _ => {
            return Err(source.at(
                value,
                "postgres: give a version, \"system\", a bin/ path or { source = … } to build",
            ))
        }
    };
    if text == "system" {
        return Ok(BinarySource::System);
    }
    if text.contains('/') {
        let dir = base.join(text);
        if !dir.join("postgres").is_file() {
            return Err(source.at(
                value,
                format!("postgres: no server binaries in \"{}\"", dir.display()),
            ));
        }
        return Ok(BinarySource::BinDir(dir));
    }
    if text == "master" {
        return Ok(BinarySource::Git(
            GitSource {
                url: crate::server::postgres::git_source::POSTGRES_GIT.into(),
                reference: "master".into(),
            },
            BuildRequest::default(),
        ));
    }
    match crate::server::postgres::release::parse(text) {
        Some(_) => Ok(BinarySource::Version(text.into())),
        None => Err(source.at(
            value,
            format!(
                "postgres: unknown version \"{text}\"; use a major (\"16\", \"19\"), an exact version (\"16.4.0\", \"19rc1\"), \"master\", \"system\", a bin/ path, {{ source = … }} or {{ git = …, ref = … }} to build"
            ),
        )),
    }
}

/// `postgres = { source = "…", cflags = "…", configure = […], patches = […] }`: a build from
/// source, its files relative to the spec; `{ git = "…", ref = "…", … }` builds a git ref.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BuildFile {
    source: Option<String>,
    git: Option<String>,
    #[serde(rename = "ref")]
    reference: Option<String>,
    /// Debian's own build of a major or release, unpacked (not built).
    debian: Option<String>,
    cflags: Option<String>,
    #[serde(default)]
    configure: Vec<String>,
    #[serde(default)]
    patches: Vec<String>,
}

fn build_request(
    source: &Source<'_>,
    value: &Spanned<toml::Value>,
    table: &toml::Table,
    base: &Path,
) -> Result<BinarySource, SpecError> {
    let file: BuildFile =
        toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| {
                source.at(value, format!("postgres: {}", e.message().trim()))
            })?;
    let exists = |path: &str, what: &str| {
        let full = base.join(path);
        if full.exists() {
            Ok(full)
        } else {
            Err(source.at(
                value,
                format!("postgres: {what} \"{}\" does not exist", full.display()),
            ))
        }
    };
    if let Some(version) = file.debian {
        let alone = file.source.is_none()
            && file.git.is_none()
            && file.reference.is_none()
            && file.cflags.is_none()
            && file.configure.is_empty()
            && file.patches.is_empty();
        if !alone {
            return Err(source.at(
                value,
                "postgres: debian = \"…\" takes Debian's build as it is: no source, git, cflags, configure or patches beside it",
            ));
        }
        if crate::server::postgres::release::parse(version.trim()).is_none() {
            return Err(source.at(
                value,
                format!("postgres: debian = \"{version}\" is not a major or release (\"18\", \"19rc1\")"),
            ));
        }
        return Ok(BinarySource::Debian(version.trim().to_string()));
    }
    let request = BuildRequest {
        source: PathBuf::new(),
        cflags: file.cflags,
        configure: file.configure,
        patches: file
            .patches
            .iter()
            .map(|patch| exists(patch, "patch"))
            .collect::<Result<_, _>>()?,
        origin: None,
    };
    match (file.source, file.git, file.reference) {
        (Some(path), None, None) => Ok(BinarySource::Build(BuildRequest {
            source: exists(&path, "source")?,
            ..request
        })),
        (None, Some(url), reference) => {
            // A local repository is named relative to the spec, as a source directory is.
            let url = if url.contains("://") || url.contains('@') {
                url
            } else {
                exists(&url, "git repository")?.display().to_string()
            };
            let reference = reference.unwrap_or_else(|| "master".into());
            Ok(BinarySource::Git(GitSource { url, reference }, request))
        }
        (None, None, Some(_)) => Err(source.at(value, "postgres: ref needs git = \"<repository>\"")),
        (Some(_), Some(_), _) | (Some(_), None, Some(_)) => Err(source.at(
            value,
            "postgres: give source (a tarball or directory) or git (a repository and ref), not both",
        )),
        (None, None, None) => Err(source.at(
            value,
            "postgres: a build needs source = \"<tarball or directory>\" or git = \"<repository>\"",
        )),
    }
}
