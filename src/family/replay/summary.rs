//! What a capture holds, as `stampede capture` prints it: sessions, statements, how long,
//! and each statement shape's share (pg_stat_statements' view of the same workload).

use std::collections::BTreeMap;

use super::normalize::normalize;
use super::replay_file::{ReplayFile, Sent};

/// Statement shapes listed; the rest are summed on one line.
const LISTED_SHAPES: usize = 15;

/// Each statement shape's count, most frequent first (ties by text).
pub fn shapes(file: &ReplayFile) -> Vec<(String, u64)> {
    let normalized: Vec<String> = file.texts.iter().map(|t| normalize(t)).collect();
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for statement in file.sessions.iter().flat_map(|s| &s.statements) {
        *counts
            .entry(normalized[statement.text as usize].as_str())
            .or_default() += 1;
    }
    let mut shapes: Vec<(String, u64)> = counts
        .into_iter()
        .map(|(text, count)| (text.to_string(), count))
        .collect();
    shapes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    shapes
}

pub fn render(file: &ReplayFile) -> String {
    let statements = file.statements();
    let seconds = file.duration_ms as f64 / 1000.0;
    let mut out = String::new();
    let began_before = file.sessions.iter().filter(|s| s.began_before).count();
    let open = file.sessions.iter().filter(|s| s.end_ms.is_none()).count();
    out.push_str(&format!(
        "sessions: {} ({began_before} began before the log, {open} still connected at its end)\n",
        file.sessions.len()
    ));
    out.push_str(&format!(
        "statements: {statements} over {seconds:.1} s ({:.1} a second) from {} ({}), first message {}\n",
        statements as f64 / seconds.max(0.001),
        file.source.join(", "),
        file.format,
        file.first_message
    ));
    out.push_str(&format!("sent as: {}\n", protocol_counts(file)));
    out.push_str(&format!("databases: {}\n", by_database(file)));
    let failed = file
        .sessions
        .iter()
        .flat_map(|s| &s.statements)
        .filter(|s| s.error.is_some())
        .count();
    if failed > 0 {
        out.push_str(&format!("failed in the capture: {failed}\n"));
    }
    for left in &file.left_out {
        out.push_str(&format!(
            "left out: {} statement(s) {} (first at line {})\n",
            left.statements, left.reason, left.first_line
        ));
    }
    out.push_str("statements by shape (share of all):\n");
    let shapes = shapes(file);
    for (text, count) in shapes.iter().take(LISTED_SHAPES) {
        let share = 100.0 * *count as f64 / statements.max(1) as f64;
        out.push_str(&format!(
            "  {share:5.1}% {count:>9}  {}\n",
            one_line(text, 100)
        ));
    }
    if shapes.len() > LISTED_SHAPES {
        let rest: u64 = shapes[LISTED_SHAPES..].iter().map(|s| s.1).sum();
        out.push_str(&format!(
            "  {:5.1}% {rest:>9}  ({} other shapes)\n",
            100.0 * rest as f64 / statements.max(1) as f64,
            shapes.len() - LISTED_SHAPES
        ));
    }
    out
}

fn protocol_counts(file: &ReplayFile) -> String {
    let (mut simple, mut unnamed, mut named) = (0, 0, 0);
    for statement in file.sessions.iter().flat_map(|s| &s.statements) {
        match statement.sent {
            Sent::Simple => simple += 1,
            Sent::Unnamed => unnamed += 1,
            Sent::Named(_) => named += 1,
        }
    }
    format!("{simple} simple queries, {unnamed} unnamed and {named} named prepared statements")
}

fn by_database(file: &ReplayFile) -> String {
    let mut sessions: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for session in &file.sessions {
        *sessions
            .entry((session.database.as_str(), session.user.as_str()))
            .or_default() += 1;
    }
    sessions
        .iter()
        .map(|((db, user), n)| format!("{db} as {user} ({n} sessions)"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A statement on one line of at most `width` characters.
pub fn one_line(text: &str, width: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= width {
        return flat;
    }
    let cut: String = flat.chars().take(width - 1).collect();
    format!("{cut}…")
}
