//! A lab spec's text as its readers see it: positions for error messages (`file:line:col`),
//! the error itself, and the value forms spec files share. Below `spec` and `claims`, which
//! both read the one file.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

/// A spec error: `file:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Locates byte offsets of the spec text for error messages.
pub struct Source<'a> {
    path: &'a Path,
    pub(crate) text: &'a str,
}

impl<'a> Source<'a> {
    pub fn new(path: &'a Path, text: &'a str) -> Source<'a> {
        Source { path, text }
    }

    pub fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    pub fn error(&self, offset: usize, message: impl std::fmt::Display) -> SpecError {
        SpecError(format!("{}: {message}", self.position(offset)))
    }

    /// `file:line:col` of a byte offset.
    fn position(&self, offset: usize) -> String {
        let before = &self.text[..offset.min(self.text.len())];
        let line = self.line_of(offset);
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        format!("{}:{line}:{column}", self.path.display())
    }

    /// `file:line:col` of a spanned value.
    pub fn position_of<T>(&self, spanned: &Spanned<T>) -> String {
        self.position(spanned.span().start)
    }

    pub fn at<T>(&self, spanned: &Spanned<T>, message: impl std::fmt::Display) -> SpecError {
        self.error(spanned.span().start, message)
    }
}

/// A TOML syntax error in the spec at `path`, at its line and column.
pub fn syntax_error(path: &Path, text: &str, error: &toml::de::Error) -> SpecError {
    let offset = error.span().map_or(0, |s| s.start);
    Source { path, text }.error(offset, error.message().trim())
}

/// A scale as a spec writes it: a number, or a class ("buffers").
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum ScaleFile {
    Number(i64),
    Class(String),
}

impl ScaleFile {
    /// As cells and results name it.
    pub fn text(&self) -> String {
        match self {
            ScaleFile::Number(n) => n.to_string(),
            ScaleFile::Class(class) => class.clone(),
        }
    }
}
