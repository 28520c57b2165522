//! A `[[target]]` table as its kind sees it: the value of the key that names the kind, the
//! keys only that kind reads, and the spec's positions for errors at them.

use std::collections::BTreeMap;
use std::path::Path;

use toml::Spanned;

use crate::lab::spec_text::{Source, SpecError};

/// A `[[target]]` table's keys and values, each with its place in the spec.
pub type TargetEntries = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

pub struct TargetTable<'a> {
    pub source: &'a Source<'a>,
    /// The spec's folder: paths in the table are relative to it.
    pub base: &'a Path,
    /// The lab's name and `[kubernetes]` section (where a Cluster goes and what it is called).
    pub lab: &'a str,
    pub kubernetes: &'a crate::pods::KubeArgs,
    pub name: &'a str,
    /// The targets before this one that name the same kind, with the value of its key (the
    /// Clusters two targets of one shape share).
    pub earlier: &'a [(&'a str, &'a Spanned<toml::Value>)],
    /// The value of the kind's key; None for a table naming no kind.
    pub value: Option<&'a Spanned<toml::Value>>,
    /// The table's own place (its name), for errors about the table as a whole.
    pub name_span: &'a Spanned<toml::Value>,
    pub(crate) entries: &'a TargetEntries,
}

impl TargetTable<'_> {
    /// A key of the kind's own (`own_keys`).
    pub fn own(&self, key: &str) -> Option<&Spanned<toml::Value>> {
        self.entries
            .iter()
            .find(|(k, _)| k.get_ref() == key)
            .map(|(_, v)| v)
    }

    pub fn at<T>(&self, spanned: &Spanned<T>, message: impl std::fmt::Display) -> SpecError {
        self.source.at(spanned, message)
    }

    /// An error at the kind's value, or at the table's name when it names no kind.
    pub fn error(&self, message: impl std::fmt::Display) -> SpecError {
        self.source
            .at(self.value.unwrap_or(self.name_span), message)
    }
}
