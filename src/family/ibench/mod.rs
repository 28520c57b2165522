//! Mark Callaghan's Insert Benchmark (mdcallag/mytools, `bench/ibench`): iibench.py's table,
//! rows, statements, options and output (`stampede ibench step`), and the benchmark's steps as
//! his scripts run them — load, secondary indexes, inserts with deletes, queries under a steady
//! write rate (`stampede ibench run`), each step's rates second by second.

pub mod args;
pub mod command;
pub mod instance;
pub mod lab;
pub mod options;
pub mod output;
pub mod progress;
pub mod rows;
pub mod seconds;
pub mod sql;
pub mod steps;
pub mod summary;
