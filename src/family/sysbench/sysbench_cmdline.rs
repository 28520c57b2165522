//! sysbench's command line: `[options]... [testname] [command]`, every option as
//! `--name[=value]` (`-` and `_` alike in names; a repeated option's last value wins), with the
//! general, random-number, log, database and driver options of sysbench 1.0.20 (their types,
//! defaults and help text), and a test's own options (a Lua script's `sysbench.cmdline.options`).

use std::collections::HashMap;
use std::fmt::Write;

use stampede_base::error::Failure;

/// How sysbench reads and prints an option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Int,
    Size,
    Double,
    Str,
    List,
    File,
}

impl Kind {
    /// sysbench's help column after `--name`.
    fn placeholder(self) -> &'static str {
        match self {
            Kind::Bool => "[=on|off]",
            Kind::Int | Kind::Double => "=N",
            Kind::Size => "=SIZE",
            Kind::Str => "=STRING",
            Kind::List => "=[LIST,...]",
            Kind::File => "=FILENAME",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OptionDef {
    pub name: String,
    pub kind: Kind,
    pub default: Option<String>,
    pub desc: String,
}

type Row = (&'static str, Kind, Option<&'static str>, &'static str);

pub const GENERAL: &[Row] = &[
    ("threads", Kind::Int, Some("1"), "number of threads to use"),
    ("events", Kind::Int, Some("0"), "limit for total number of events"),
    ("time", Kind::Int, Some("10"), "limit for total execution time in seconds"),
    ("forced-shutdown", Kind::Str, Some("off"), "number of seconds to wait after the --time limit before forcing shutdown, or 'off' to disable"),
    ("thread-stack-size", Kind::Size, Some("64K"), "size of stack per thread"),
    ("rate", Kind::Int, Some("0"), "average transactions rate. 0 for unlimited rate"),
    ("report-interval", Kind::Int, Some("0"), "periodically report intermediate statistics with a specified interval in seconds. 0 disables intermediate reports"),
    ("report-checkpoints", Kind::List, Some(""), "dump full statistics and reset all counters at specified points in time. The argument is a list of comma-separated values representing the amount of time in seconds elapsed from start of test when report checkpoint(s) must be performed. Report checkpoints are off by default."),
    ("debug", Kind::Bool, Some("off"), "print more debugging info"),
    ("validate", Kind::Bool, Some("off"), "perform validation checks where possible"),
    ("help", Kind::Bool, Some("off"), "print help and exit"),
    ("version", Kind::Bool, Some("off"), "print version and exit"),
    ("config-file", Kind::File, None, "File containing command line options"),
    ("tx-rate", Kind::Int, Some("0"), "deprecated alias for --rate"),
    ("max-requests", Kind::Int, Some("0"), "deprecated alias for --events"),
    ("max-time", Kind::Int, Some("0"), "deprecated alias for --time"),
    ("num-threads", Kind::Int, Some("1"), "deprecated alias for --threads"),
];

pub const RANDOM: &[Row] = &[
    (
        "rand-type",
        Kind::Str,
        Some("special"),
        "random numbers distribution {uniform,gaussian,special,pareto}",
    ),
    (
        "rand-spec-iter",
        Kind::Int,
        Some("12"),
        "number of iterations used for numbers generation",
    ),
    (
        "rand-spec-pct",
        Kind::Int,
        Some("1"),
        "percentage of values to be treated as 'special' (for special distribution)",
    ),
    (
        "rand-spec-res",
        Kind::Int,
        Some("75"),
        "percentage of 'special' values to use (for special distribution)",
    ),
    (
        "rand-seed",
        Kind::Int,
        Some("0"),
        "seed for random number generator. When 0, the current time is used as a RNG seed.",
    ),
    (
        "rand-pareto-h",
        Kind::Double,
        Some("0.2"),
        "parameter h for pareto distribution",
    ),
];

pub const LOG: &[Row] = &[(
    "verbosity",
    Kind::Int,
    Some("3"),
    "verbosity level {5 - debug, 0 - only critical messages}",
)];

pub const LATENCY: &[Row] = &[
    ("percentile", Kind::Int, Some("95"), "percentile to calculate in latency statistics (1-100). Use the special value of 0 to disable percentile calculations"),
    ("histogram", Kind::Bool, Some("off"), "print latency histogram in report"),
];

pub const DATABASE: &[Row] = &[
    (
        "db-driver",
        Kind::Str,
        Some("mysql"),
        "specifies database driver to use ('help' to get list of available drivers)",
    ),
    (
        "db-ps-mode",
        Kind::Str,
        Some("auto"),
        "prepared statements usage mode {auto, disable}",
    ),
    (
        "db-debug",
        Kind::Bool,
        Some("off"),
        "print database-specific debug information",
    ),
];

pub const MYSQL: &[Row] = &[
    (
        "mysql-host",
        Kind::List,
        Some("localhost"),
        "MySQL server host",
    ),
    ("mysql-port", Kind::List, Some("3306"), "MySQL server port"),
    ("mysql-socket", Kind::List, None, "MySQL socket"),
    ("mysql-user", Kind::Str, Some("sbtest"), "MySQL user"),
    ("mysql-password", Kind::Str, Some(""), "MySQL password"),
    ("mysql-db", Kind::Str, Some("sbtest"), "MySQL database name"),
    (
        "mysql-ssl",
        Kind::Bool,
        Some("off"),
        "use SSL connections, if available in the client library",
    ),
    (
        "mysql-ssl-cipher",
        Kind::Str,
        Some(""),
        "use specific cipher for SSL connections",
    ),
    (
        "mysql-compression",
        Kind::Bool,
        Some("off"),
        "use compression, if available in the client library",
    ),
    (
        "mysql-debug",
        Kind::Bool,
        Some("off"),
        "trace all client library calls",
    ),
    (
        "mysql-ignore-errors",
        Kind::List,
        Some("1213,1020,1205"),
        "list of errors to ignore, or \"all\"",
    ),
    (
        "mysql-dry-run",
        Kind::Bool,
        Some("off"),
        "Dry run, pretend that all MySQL client API calls are successful without executing them",
    ),
];

pub const PGSQL: &[Row] = &[
    (
        "pgsql-host",
        Kind::Str,
        Some("localhost"),
        "PostgreSQL server host",
    ),
    (
        "pgsql-port",
        Kind::Int,
        Some("5432"),
        "PostgreSQL server port",
    ),
    ("pgsql-user", Kind::Str, Some("sbtest"), "PostgreSQL user"),
    ("pgsql-password", Kind::Str, Some(""), "PostgreSQL password"),
    (
        "pgsql-db",
        Kind::Str,
        Some("sbtest"),
        "PostgreSQL database name",
    ),
];

/// stampede's own options of `stampede sysbench` (after sysbench's in `--help`).
pub const STAMPEDE: &[Row] = &[
    (
        "json",
        Kind::Str,
        None,
        "write the result as JSON to this file (stampede)",
    ),
    (
        "metrics-addr",
        Kind::Str,
        None,
        "serve the run's numbers as OpenMetrics at http://ADDR/metrics (stampede)",
    ),
    (
        "serve-token",
        Kind::Str,
        None,
        "a bearer token the metrics ask for (stampede)",
    ),
];

/// Deprecated aliases: (alias, option, sysbench's warning).
pub const ALIASES: &[(&str, &str)] = &[
    ("num-threads", "threads"),
    ("max-requests", "events"),
    ("max-time", "time"),
    ("tx-rate", "rate"),
];

fn defs(rows: &[Row]) -> Vec<OptionDef> {
    rows.iter()
        .map(|(name, kind, default, desc)| OptionDef {
            name: name.to_string(),
            kind: *kind,
            default: default.map(str::to_string),
            desc: desc.to_string(),
        })
        .collect()
}

/// Every option sysbench knows before a test adds its own.
pub fn general_options() -> Vec<OptionDef> {
    [
        GENERAL, RANDOM, LOG, LATENCY, DATABASE, MYSQL, PGSQL, STAMPEDE,
    ]
    .iter()
    .flat_map(|rows| defs(rows))
    .collect()
}

/// An option's name as sysbench compares it: `-` and `_` are the same.
pub fn key(name: &str) -> String {
    name.replace('-', "_")
}

/// The command line as given: options in order, the test and the command.
#[derive(Debug, Clone, Default)]
pub struct CommandLine {
    /// `sysbench.cmdline.argv`: "sysbench" then every argument as given.
    pub argv: Vec<String>,
    pub test: Option<String>,
    pub command: Option<String>,
    /// (key, value) in the order given; a config file's come first.
    pub given: Vec<(String, Option<String>)>,
    /// The options as written, for "invalid option: --x" (by key, the last one given).
    written: HashMap<String, String>,
}

impl CommandLine {
    /// Splits `args` (without the program's name) as sysbench does: anything not starting with
    /// `--` is the test, then the command; a third is refused.
    pub fn parse(args: &[String]) -> Result<CommandLine, Failure> {
        let mut line = CommandLine {
            argv: std::iter::once("sysbench".to_string())
                .chain(args.iter().cloned())
                .collect(),
            ..Default::default()
        };
        for arg in args {
            let Some(option) = arg.strip_prefix("--") else {
                if line.test.is_none() {
                    line.test = Some(arg.clone());
                } else if line.command.is_none() {
                    line.command = Some(arg.clone());
                } else {
                    return Err(Failure::input(format!(
                        "Unrecognized command line argument: {arg}"
                    )));
                }
                continue;
            };
            let (name, value) = match option.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (option, None),
            };
            if key(name) == "test" {
                eprintln!("WARNING: the --test option is deprecated. You can pass a script name or path on the command line without any options.");
                line.test = value.clone();
            }
            line.written.insert(key(name), arg.clone());
            line.given.push((key(name), value));
        }
        Ok(line)
    }

    /// The options of `--config-file` (one `name=value` per line, `#` comments), placed before
    /// the command line's so that the command line wins.
    pub fn read_config_file(&mut self) -> Result<(), Failure> {
        let Some(Some(path)) = self.last("config_file") else {
            return Ok(());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::input(format!("cannot read --config-file {path}: {e}")))?;
        let mut from_file = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.trim_start_matches("--");
            let (name, value) = match line.split_once('=') {
                Some((name, value)) => (name.trim(), Some(value.trim().to_string())),
                None => (line, None),
            };
            self.written
                .entry(key(name))
                .or_insert_with(|| format!("--{line}"));
            from_file.push((key(name), value));
        }
        from_file.append(&mut self.given);
        self.given = from_file;
        Ok(())
    }

    /// The last value given for `key` (Some(None) when given without a value).
    pub fn last(&self, key: &str) -> Option<Option<&str>> {
        self.given
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_deref())
    }

    pub fn written(&self, key: &str) -> String {
        self.written
            .get(key)
            .cloned()
            .unwrap_or_else(|| format!("--{key}"))
    }

    /// Keys given that none of `known` declares.
    pub fn unknown<'a>(&'a self, known: &'a [OptionDef]) -> impl Iterator<Item = &'a str> + 'a {
        self.given
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(move |k| *k != "test" && !known.iter().any(|d| key(&d.name) == *k))
    }
}

/// The options a run reads: definitions (general, driver and the test's) and the values given.
#[derive(Debug, Clone)]
pub struct Options {
    pub defs: Vec<OptionDef>,
    pub line: CommandLine,
}

/// sysbench's switches: on/off, true/false, yes/no, 1/0; no value is on.
pub fn parse_bool(value: Option<&str>) -> Option<bool> {
    match value {
        None | Some("on" | "true" | "yes" | "1") => Some(true),
        Some("off" | "false" | "no" | "0") => Some(false),
        _ => None,
    }
}

/// sysbench's sizes: a number with an optional K, M, G or T (powers of 1024).
pub fn parse_size(value: &str) -> Option<u64> {
    let value = value.trim();
    let (digits, unit) = match value.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => value.split_at(at),
        None => (value, ""),
    };
    let number: u64 = digits.parse().ok()?;
    let factor: u64 = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" => 1 << 10,
        "M" | "MB" => 1 << 20,
        "G" | "GB" => 1 << 30,
        "T" | "TB" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// A typed value as a Lua script sees it in `sysbench.opt`.
#[derive(Debug, Clone, PartialEq)]
pub enum OptValue {
    Bool(bool),
    Number(f64),
    Str(String),
    List(Vec<String>),
    Nothing,
}

impl Options {
    pub fn new(line: CommandLine, defs: Vec<OptionDef>) -> Options {
        Options { defs, line }
    }

    fn def(&self, key_name: &str) -> Option<&OptionDef> {
        self.defs.iter().find(|d| key(&d.name) == key_name)
    }

    /// The raw value: the last given, else the default.
    pub fn raw(&self, key_name: &str) -> Option<String> {
        match self.line.last(key_name) {
            Some(Some(value)) => Some(value.to_string()),
            Some(None) => match self.def(key_name).map(|d| d.kind) {
                Some(Kind::Bool) | None => Some("on".to_string()),
                _ => None,
            },
            None => self.def(key_name).and_then(|d| d.default.clone()),
        }
    }

    pub fn given(&self, key_name: &str) -> bool {
        self.line.last(key_name).is_some()
    }

    pub fn string(&self, key_name: &str) -> String {
        self.raw(key_name).unwrap_or_default()
    }

    pub fn int(&self, key_name: &str) -> i64 {
        self.raw(key_name).map(|v| leading_int(&v)).unwrap_or(0)
    }

    pub fn double(&self, key_name: &str) -> f64 {
        self.raw(key_name)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    }

    pub fn flag(&self, key_name: &str) -> bool {
        parse_bool(self.raw(key_name).as_deref()).unwrap_or(false)
    }

    pub fn list(&self, key_name: &str) -> Vec<String> {
        match self.raw(key_name) {
            Some(value) if !value.is_empty() => value.split(',').map(str::to_string).collect(),
            _ => Vec::new(),
        }
    }

    /// Each given value checked against its option's type: "invalid option: --x=y" as sysbench
    /// words it. Options no definition names are refused unless `legacy` (a script that
    /// declares no options gets them all, as strings).
    pub fn check(&self, legacy: bool) -> Result<(), Failure> {
        for (k, value) in &self.line.given {
            if k == "test" {
                continue;
            }
            let valid = match self.def(k) {
                None => legacy,
                Some(def) => value_fits(def.kind, value.as_deref()),
            };
            if !valid {
                return Err(Failure::input(format!(
                    "invalid option: {}",
                    self.line.written(k)
                )));
            }
        }
        Ok(())
    }

    /// Every option a Lua script sees in `sysbench.opt` (keys with `_`): the defined ones typed,
    /// and with `legacy` the undeclared ones given, as strings.
    pub fn exported(&self, legacy: bool) -> Vec<(String, OptValue)> {
        let mut out: Vec<(String, OptValue)> = self
            .defs
            .iter()
            .map(|d| (key(&d.name), self.typed(d)))
            .collect();
        if legacy {
            for k in self.line.unknown(&self.defs) {
                if !out.iter().any(|(o, _)| o == k) {
                    out.push((k.to_string(), OptValue::Str(self.string(k))));
                }
            }
        }
        out
    }

    fn typed(&self, def: &OptionDef) -> OptValue {
        let k = key(&def.name);
        match def.kind {
            Kind::Bool => OptValue::Bool(self.flag(&k)),
            Kind::Int => OptValue::Number(self.int(&k) as f64),
            Kind::Double => OptValue::Number(self.double(&k)),
            Kind::Size => {
                OptValue::Number(self.raw(&k).and_then(|v| parse_size(&v)).unwrap_or(0) as f64)
            }
            Kind::Str => OptValue::Str(self.string(&k)),
            Kind::List => OptValue::List(self.list(&k)),
            Kind::File => OptValue::Nothing,
        }
    }
}

/// C's atoi: the leading integer, 0 when there is none.
fn leading_int(value: &str) -> i64 {
    let value = value.trim();
    let end = value
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && (*c == '-' || *c == '+'))))
        .map(|(i, _)| i)
        .unwrap_or(value.len());
    value[..end].parse().unwrap_or(0)
}

fn value_fits(kind: Kind, value: Option<&str>) -> bool {
    match kind {
        Kind::Bool => parse_bool(value).is_some(),
        Kind::Size => value.is_none_or(|v| parse_size(v).is_some()),
        _ => true,
    }
}

/// sysbench's option list: `  --name=TYPE  description [default]`, the descriptions aligned
/// one space after the longest `--name=TYPE`.
pub fn option_list(defs: &[OptionDef]) -> String {
    let heads: Vec<String> = defs
        .iter()
        .map(|d| format!("--{}{}", d.name, d.kind.placeholder()))
        .collect();
    let width = heads.iter().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    for (def, head) in defs.iter().zip(heads) {
        let default = match &def.default {
            Some(value) => format!(" [{value}]"),
            None => String::new(),
        };
        let _ = writeln!(out, "  {head:<width$} {}{default}", def.desc);
    }
    out
}

/// `sysbench --help`.
pub fn help_text() -> String {
    let mut out = String::from(
        "Usage:\n  sysbench [options]... [testname] [command]\n\nCommands implemented by most tests: prepare run cleanup help\n\n",
    );
    let _ = write!(out, "General options:\n{}\n", option_list(&defs(GENERAL)));
    let _ = write!(
        out,
        "Pseudo-Random Numbers Generator options:\n{}\n",
        option_list(&defs(RANDOM))
    );
    let _ = write!(out, "Log options:\n{}\n", option_list(&defs(LOG)));
    let _ = writeln!(out, "{}", option_list(&defs(LATENCY)));
    let _ = write!(
        out,
        "General database options:\n\n{}\n\nCompiled-in database drivers:\n  mysql - MySQL driver\n  pgsql - PostgreSQL driver\n\n",
        option_list(&defs(DATABASE))
    );
    let _ = write!(out, "mysql options:\n{}\n", option_list(&defs(MYSQL)));
    let _ = write!(out, "pgsql options:\n{}\n", option_list(&defs(PGSQL)));
    let _ = write!(out, "stampede options:\n{}\n", option_list(&defs(STAMPEDE)));
    out.push_str("Compiled-in tests:\n");
    for test in super::catalog::TESTS {
        let _ = writeln!(out, "  {test} - {}", super::catalog::describe(test));
    }
    out.push_str("\nSee 'sysbench <testname> help' for a list of options for each test.\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> CommandLine {
        CommandLine::parse(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn the_last_of_a_repeated_option_wins_and_dashes_are_underscores() {
        let line = line(&[
            "--threads=1",
            "oltp_read_write",
            "--table_size=5",
            "--threads=4",
            "run",
        ]);
        assert_eq!(line.test.as_deref(), Some("oltp_read_write"));
        assert_eq!(line.command.as_deref(), Some("run"));
        let options = Options::new(line, general_options());
        assert_eq!(options.int("threads"), 4);
        assert_eq!(options.line.last("table_size"), Some(Some("5")));
    }

    #[test]
    fn a_third_word_is_refused_and_bad_switches_are_invalid() {
        let args: Vec<String> = ["foo", "bar", "baz"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let error = CommandLine::parse(&args).unwrap_err();
        assert_eq!(error.to_string(), "Unrecognized command line argument: baz");
        let options = Options::new(line(&["--debug=5"]), general_options());
        assert_eq!(
            options.check(false).unwrap_err().to_string(),
            "invalid option: --debug=5"
        );
        let options = Options::new(line(&["--nope=1"]), general_options());
        assert!(options.check(false).is_err());
        assert!(options.check(true).is_ok());
    }

    #[test]
    fn sizes_and_lists_read_as_sysbench_reads_them() {
        assert_eq!(parse_size("64K"), Some(65536));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("x"), None);
        let options = Options::new(line(&["--mysql-host=a,b"]), general_options());
        assert_eq!(options.list("mysql_host"), ["a", "b"]);
        assert_eq!(leading_int("12abc"), 12);
    }

    #[test]
    fn option_lists_align_after_the_longest_name() {
        let text = option_list(&defs(PGSQL));
        assert!(
            text.starts_with("  --pgsql-host=STRING     PostgreSQL server host [localhost]\n"),
            "{text}"
        );
    }
}
