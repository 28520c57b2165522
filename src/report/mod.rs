//! Output of labs: verdict and relative tables, the Why panel, latency and series charts as
//! inline SVG in one HTML file, Markdown, CSV, JSON and terminal tables. Renders numbers it is
//! given; never queries a server or drives load. (A single run's report lives with its family.)

pub mod claims;
pub mod comparison;
pub mod control;
pub mod defaults;
pub mod every_metric;
pub mod export;
pub mod gate;
pub mod headline;
pub mod history;
pub mod history_view;
pub mod html;
pub mod lab_report;
pub mod machines;
pub mod noise;
pub mod noise_view;
pub mod query_times;
pub mod reading;
pub mod series;
pub mod steps;
pub mod svg;
pub mod table;
pub mod text;
pub mod warnings;
pub mod why;

use std::path::Path;

use stampede_base::error::Failure;

/// Writes a report or a JSON result where the user asked; failing to is a failed run (exit 2),
/// since the run's numbers are lost.
pub fn write_file(path: impl AsRef<Path>, contents: &str) -> Result<(), Failure> {
    let path = path.as_ref();
    std::fs::write(path, contents)
        .map_err(|e| Failure::run(format!("could not write {}: {e}", path.display())))
}
