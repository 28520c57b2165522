//! Whether a setting's value as a user writes it ("1GB", "on", "5min") is the value a server
//! reports in `pg_settings` (`setting` in the parameter's own unit: "131072" of "8kB"), so that
//! a configuration applied by someone else (an operator's reload or restart) can be checked
//! before anything is measured under it.

/// `pg_settings`' row of one parameter, as the server reports it.
#[derive(Debug, Clone, Copy)]
pub struct Reported<'a> {
    pub setting: &'a str,
    /// "8kB", "kB", "MB", "B", "ms", "s", "min"; None for a parameter without one.
    pub unit: Option<&'a str>,
    /// "bool", "integer", "real", "enum", "string".
    pub vartype: &'a str,
}

/// Whether `wanted` (as written in a configuration file) is what the server `reported`.
pub fn same_value(wanted: &str, reported: Reported<'_>) -> bool {
    let wanted = unquoted(wanted.trim());
    match reported.vartype {
        "bool" => boolean(wanted).is_some_and(|b| Some(b) == boolean(reported.setting)),
        "integer" | "real" => number_in_unit(wanted, reported.unit).is_some_and(|n| {
            let given: f64 = reported.setting.parse().unwrap_or(f64::NAN);
            // An integer parameter takes the nearest whole number of its unit.
            let n = if reported.vartype == "integer" {
                n.round()
            } else {
                n
            };
            (n - given).abs() <= 1e-9 * given.abs().max(1.0)
        }),
        "enum" => wanted.eq_ignore_ascii_case(reported.setting),
        _ => wanted == reported.setting,
    }
}

/// What `pg_settings` says a parameter takes beyond its type and unit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Accepted<'a> {
    /// `min_val` and `max_val`, in the parameter's unit.
    pub min: Option<&'a str>,
    pub max: Option<&'a str>,
    /// `enumvals` as the server prints the array: "{minimal,replica,logical}".
    pub enum_values: Option<&'a str>,
}

/// Why a server would refuse `wanted` for a parameter of this type, unit and range; None when
/// it would take it. What a server checks beyond these (a string's syntax, a check hook) is
/// left to the server.
pub fn value_problem(
    wanted: &str,
    reported: Reported<'_>,
    accepted: Accepted<'_>,
) -> Option<String> {
    let wanted = unquoted(wanted.trim());
    match reported.vartype {
        "bool" => boolean(wanted)
            .is_none()
            .then(|| "not a boolean (on/off, true/false, yes/no, 1/0)".to_string()),
        // PostgreSQL reads an integer as C's strtol does: 0x1F is 31 (left to the server).
        "integer" if wanted.starts_with("0x") || wanted.starts_with("0X") => None,
        "integer" | "real" => {
            let Some(n) = number_in_unit(wanted, reported.unit) else {
                let unit = reported
                    .unit
                    .map(|u| format!(", in {u} or with a unit of its kind"))
                    .unwrap_or_default();
                return Some(format!("not a number{unit}"));
            };
            let n = if reported.vartype == "integer" {
                n.round()
            } else {
                n
            };
            let bound = |text: Option<&str>| text.and_then(|t| t.parse::<f64>().ok());
            let (min, max) = (bound(accepted.min), bound(accepted.max));
            let outside = min.is_some_and(|min| n < min) || max.is_some_and(|max| n > max);
            outside.then(|| {
                format!(
                    "outside {} .. {}{}",
                    accepted.min.unwrap_or("?"),
                    accepted.max.unwrap_or("?"),
                    reported.unit.map(|u| format!(" × {u}")).unwrap_or_default()
                )
            })
        }
        "enum" => {
            let values = enum_values(accepted.enum_values?);
            (!values.iter().any(|v| v.eq_ignore_ascii_case(wanted)))
                .then(|| format!("not one of {}", values.join(", ")))
        }
        _ => None,
    }
}

/// "{minimal,replica,\"a b\"}" as its elements.
fn enum_values(array: &str) -> Vec<String> {
    let inner = array.trim().trim_start_matches('{').trim_end_matches('}');
    inner
        .split(',')
        .map(|v| v.trim().trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
        .collect()
}

fn unquoted(text: &str) -> &str {
    text.strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .unwrap_or(text)
}

/// PostgreSQL's spellings of a boolean: on/off, true/false, yes/no, 1/0 and their unique
/// prefixes.
fn boolean(text: &str) -> Option<bool> {
    let lower = text.to_ascii_lowercase();
    let prefix_of =
        |word: &str, shortest: usize| lower.len() >= shortest && word.starts_with(&lower);
    if lower == "on" || lower == "1" || prefix_of("true", 1) || prefix_of("yes", 1) {
        Some(true)
    } else if lower == "off" || lower == "0" || prefix_of("false", 1) || prefix_of("no", 1) {
        Some(false)
    } else {
        None
    }
}

/// `text` ("1GB", "512", "2.5s") as a count of `unit` ("8kB", "ms"); a bare number is in the
/// unit already.
fn number_in_unit(text: &str, unit: Option<&str>) -> Option<f64> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || ".-+eE".contains(c)))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let suffix = suffix.trim();
    if suffix.is_empty() {
        return Some(number);
    }
    let (per_unit, per_suffix) = (unit_size(unit?)?, unit_size(suffix)?);
    // Memory against time cannot be compared.
    (per_unit.1 == per_suffix.1).then(|| number * per_suffix.0 / per_unit.0)
}

/// A `pg_settings` unit ("8kB", "16MB", "ms", "min") as (its size in its base, which base):
/// bytes ('b') or milliseconds ('t'); None for a unit PostgreSQL does not use.
pub fn unit_size(unit: &str) -> Option<(f64, char)> {
    let split = unit
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(unit.len());
    let (count, name) = unit.split_at(split);
    let count: f64 = if count.is_empty() {
        1.0
    } else {
        count.parse().ok()?
    };
    let (size, base) = match name {
        "B" => (1.0, 'b'),
        "kB" => (1024.0, 'b'),
        "MB" => (1024.0 * 1024.0, 'b'),
        "GB" => (1024.0 * 1024.0 * 1024.0, 'b'),
        "TB" => (1024.0 * 1024.0 * 1024.0 * 1024.0, 'b'),
        "us" => (1e-3, 't'),
        "ms" => (1.0, 't'),
        "s" => (1e3, 't'),
        "min" => (60e3, 't'),
        "h" => (3600e3, 't'),
        "d" => (86400e3, 't'),
        _ => return None,
    };
    Some((count * size, base))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reported<'a>(setting: &'a str, unit: Option<&'a str>, vartype: &'a str) -> Reported<'a> {
        Reported {
            setting,
            unit,
            vartype,
        }
    }

    #[test]
    fn memory_in_any_unit_is_compared_in_the_parameter_s_own() {
        let shared_buffers = reported("131072", Some("8kB"), "integer");
        for same in ["1GB", "1024MB", "1048576kB", "131072", " 1GB ", "'1GB'"] {
            assert!(same_value(same, shared_buffers), "{same}");
        }
        for other in ["128MB", "1TB", "131073", "1s", "lots"] {
            assert!(!same_value(other, shared_buffers), "{other}");
        }
        let work_mem = reported("8192", Some("kB"), "integer");
        assert!(same_value("8MB", work_mem));
        assert!(!same_value("8GB", work_mem));
    }

    #[test]
    fn values_a_server_would_refuse_are_named_before_it_sees_them() {
        let accepted = |min, max| Accepted {
            min: Some(min),
            max: Some(max),
            enum_values: None,
        };
        let shared_buffers = reported("16384", Some("8kB"), "integer");
        let range = accepted("16", "1073741823");
        for fine in ["1GB", "128MB", "16", "'512MB'"] {
            assert_eq!(value_problem(fine, shared_buffers, range), None, "{fine}");
        }
        assert_eq!(
            value_problem("lots", shared_buffers, range).unwrap(),
            "not a number, in 8kB or with a unit of its kind"
        );
        assert_eq!(
            value_problem("100kB", shared_buffers, range).unwrap(),
            "outside 16 .. 1073741823 × 8kB"
        );
        assert!(value_problem("1s", shared_buffers, range).is_some());
        assert_eq!(value_problem("0x4000", shared_buffers, range), None);
        let fsync = reported("on", None, "bool");
        assert_eq!(value_problem("off", fsync, Accepted::default()), None);
        assert!(value_problem("maybe", fsync, Accepted::default()).is_some());
        let level = reported("replica", None, "enum");
        let levels = Accepted {
            enum_values: Some("{minimal,replica,logical}"),
            ..Accepted::default()
        };
        assert_eq!(value_problem("Logical", level, levels), None);
        assert_eq!(
            value_problem("archive", level, levels).unwrap(),
            "not one of minimal, replica, logical"
        );
        let cost = reported("4", None, "real");
        assert_eq!(
            value_problem("1.1", cost, accepted("0", "1.79769e+308")),
            None
        );
        assert!(value_problem("-1", cost, accepted("0", "1.79769e+308")).is_some());
    }

    #[test]
    fn times_and_reals_and_the_rest() {
        let timeout = reported("300", Some("s"), "integer");
        assert!(same_value("5min", timeout) && same_value("300s", timeout));
        assert!(same_value("300000ms", timeout) && !same_value("5h", timeout));
        let cost = reported("1.1", None, "real");
        assert!(same_value("1.1", cost) && !same_value("4", cost));
        let fsync = reported("off", None, "bool");
        for same in ["off", "false", "no", "0", "OFF", "f", "n"] {
            assert!(same_value(same, fsync), "{same}");
        }
        assert!(!same_value("on", fsync) && !same_value("maybe", fsync));
        let level = reported("replica", None, "enum");
        assert!(same_value("Replica", level) && !same_value("logical", level));
        let path = reported("\"$user\", public", None, "string");
        assert!(same_value("'\"$user\", public'", path));
    }
}
