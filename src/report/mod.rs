//! Output: pgbench-compatible text, stampede's extra lines, JSON, terminal tables. Renders
//! numbers it is given; never queries a server or drives load.

pub mod comparison;
pub mod html;
pub mod lab_report;
pub mod series;
pub mod svg;
pub mod table;
pub mod text;
pub mod warnings;
pub mod why;
