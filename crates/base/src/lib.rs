//! What every layer of stampede shares and none owns: the failure type that decides exit codes,
//! the operating system's calls (users, CPU pinning, CPU time, cores), SIGINT/SIGTERM as a flag,
//! durations as specs and options write them, and UTC calendar times.

pub mod calendar;
pub mod cpu;
pub mod duration;
pub mod error;
pub mod signals;
pub mod sys;
