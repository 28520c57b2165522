//! Splits a pgbench script into SQL commands and backslash meta-commands, the way pgbench's
//! psql-derived scanner does: SQL ends at a `;` outside quotes, comments and parentheses; a
//! backslash outside quotes starts a meta-command that runs to the end of the line.

use std::fmt;

use super::ast::{
    Command, CommandKind, ResultStore, Script, ShellWord, SleepArg, SleepUnit, Span, SqlCommand,
    SqlPiece, VarTable,
};
use super::expr::ExprParser;

/// A script error located in its source, printed as `source:line:column: message` followed by the
/// offending line and a caret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    pub source: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub line_text: String,
    /// Whether the column means something: pgbench marks it with a caret ("^ error found
    /// here") only for errors at a place in the line, not for a missing or extra argument.
    pub caret: bool,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // pgbench's syntax_error layout; an error about the whole script has no line.
        if self.line == 0 {
            return f.write_str(&self.message);
        }
        write!(f, "{}:{}: {}", self.source, self.line, self.message)?;
        if !self.line_text.is_empty() {
            write!(f, "\n{}", self.line_text)?;
            if self.caret {
                let indent = " ".repeat(self.column.saturating_sub(1));
                write!(f, "\n{indent}^ error found here")?;
            }
        }
        Ok(())
    }
}

/// pgbench's MAX_ARGS: a command's words, its name included (and an SQL command's parameters
/// plus its text).
pub const MAX_ARGS: usize = 256;

/// Letters, digits, `_` and any non-ASCII character, not starting with a digit (pgbench's rule).
pub fn valid_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(is_name_char)
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii()
}

/// The variable name at the start of `text` (after a colon), if one starts there.
fn leading_name(text: &str) -> &str {
    if text.starts_with(|c: char| c.is_ascii_digit()) {
        return "";
    }
    let end = text.find(|c: char| !is_name_char(c)).unwrap_or(text.len());
    &text[..end]
}

struct Scanner<'a> {
    source: &'a str,
    text: &'a str,
    pos: usize,
    line_starts: Vec<usize>,
}

impl<'a> Scanner<'a> {
    fn new(source: &'a str, text: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Scanner {
            source,
            text,
            pos: 0,
            line_starts,
        }
    }

    fn span_at(&self, offset: usize) -> Span {
        let line = self.line_starts.partition_point(|start| *start <= offset);
        let column = offset - self.line_starts[line - 1] + 1;
        Span { line, column }
    }

    fn line_text(&self, line: usize) -> &'a str {
        let start = self.line_starts[line - 1];
        let end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        self.text[start..end].trim_end_matches('\r')
    }

    fn error(&self, offset: usize, message: impl Into<String>) -> ScriptError {
        let span = self.span_at(offset);
        ScriptError {
            source: self.source.to_string(),
            line: span.line,
            column: span.column,
            message: message.into(),
            line_text: self.line_text(span.line).to_string(),
            caret: true,
        }
    }

    /// An error about a command as a whole (a missing or extra argument): no caret.
    fn command_error(&self, offset: usize, message: impl Into<String>) -> ScriptError {
        ScriptError {
            caret: false,
            ..self.error(offset, message)
        }
    }
}

/// Parses a whole script. `description` is what pgbench prints as the transaction type.
pub fn parse_script(
    source: &str,
    description: &str,
    text: &str,
    vars: &mut VarTable,
) -> Result<Script, ScriptError> {
    let mut scanner = Scanner::new(source, text);
    let mut commands = Vec::new();
    let mut sql = String::new();
    let mut sql_start = 0;
    while scanner.pos < text.len() {
        let rest = &text[scanner.pos..];
        let c = rest.chars().next().expect("not at end");
        if sql.trim().is_empty() && c.is_whitespace() {
            sql.clear();
            scanner.pos += c.len_utf8();
            continue;
        }
        if sql.trim().is_empty() {
            sql_start = scanner.pos;
        }
        match c {
            '\\' if rest.starts_with("\\;") => {
                sql.push(';');
                scanner.pos += 2;
            }
            '\\' => {
                push_sql(&scanner, &mut commands, &mut sql, sql_start, vars)?;
                match parse_meta(&mut scanner, vars)? {
                    Meta::Command(command) => commands.push(command),
                    Meta::Store(store, offset) => {
                        attach_store(&scanner, &mut commands, store, offset)?
                    }
                }
            }
            ';' => {
                sql.push(';');
                scanner.pos += 1;
                push_sql(&scanner, &mut commands, &mut sql, sql_start, vars)?;
            }
            '\'' | '"' => copy_quoted(&mut scanner, &mut sql, c)?,
            '-' if rest.starts_with("--") => {
                let end = rest.find('\n').unwrap_or(rest.len());
                sql.push_str(&rest[..end]);
                scanner.pos += end;
            }
            '/' if rest.starts_with("/*") => copy_block_comment(&mut scanner, &mut sql)?,
            '$' if dollar_tag(rest).is_some() => copy_dollar_quoted(&mut scanner, &mut sql)?,
            '(' => copy_parenthesized(&mut scanner, &mut sql)?,
            _ => {
                sql.push(c);
                scanner.pos += c.len_utf8();
            }
        }
    }
    push_sql(&scanner, &mut commands, &mut sql, sql_start, vars)?;
    resolve_conditionals(&scanner, &mut commands)?;
    if commands.is_empty() {
        return Err(ScriptError {
            source: source.to_string(),
            line: 0,
            column: 0,
            message: format!("empty command list for script \"{description}\""),
            line_text: String::new(),
            caret: false,
        });
    }
    Ok(Script {
        description: description.to_string(),
        commands,
    })
}

fn copy_quoted(
    scanner: &mut Scanner<'_>,
    sql: &mut String,
    quote: char,
) -> Result<(), ScriptError> {
    let start = scanner.pos;
    let rest = &scanner.text[start..];
    let mut i = 1;
    loop {
        match rest[i..].find(quote) {
            None => return Err(scanner.error(start, "unterminated quoted string")),
            Some(j) => {
                i += j + 1;
                // A doubled quote is an escaped quote inside the literal.
                if rest[i..].starts_with(quote) {
                    i += 1;
                    continue;
                }
                break;
            }
        }
    }
    sql.push_str(&rest[..i]);
    scanner.pos += i;
    Ok(())
}

fn copy_block_comment(scanner: &mut Scanner<'_>, sql: &mut String) -> Result<(), ScriptError> {
    let start = scanner.pos;
    let rest = &scanner.text[start..];
    let mut depth = 0usize;
    let mut i = 0;
    while i < rest.len() {
        if rest[i..].starts_with("/*") {
            depth += 1;
            i += 2;
        } else if rest[i..].starts_with("*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                sql.push_str(&rest[..i]);
                scanner.pos += i;
                return Ok(());
            }
        } else {
            i += rest[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    Err(scanner.error(start, "unterminated /* comment"))
}

fn dollar_tag(text: &str) -> Option<&str> {
    let body = &text[1..];
    let end = body.find('$')?;
    let tag = &body[..end];
    let valid = tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !tag.starts_with(|c: char| c.is_ascii_digit());
    valid.then(|| &text[..end + 2])
}

fn copy_dollar_quoted(scanner: &mut Scanner<'_>, sql: &mut String) -> Result<(), ScriptError> {
    let start = scanner.pos;
    let rest = &scanner.text[start..];
    let tag = dollar_tag(rest).expect("checked by caller");
    match rest[tag.len()..].find(tag) {
        None => Err(scanner.error(start, "unterminated dollar-quoted string")),
        Some(j) => {
            let end = tag.len() + j + tag.len();
            sql.push_str(&rest[..end]);
            scanner.pos += end;
            Ok(())
        }
    }
}

/// Copies a parenthesized group whole: a `;` inside parentheses does not end the command.
fn copy_parenthesized(scanner: &mut Scanner<'_>, sql: &mut String) -> Result<(), ScriptError> {
    let start = scanner.pos;
    let mut depth = 0usize;
    while scanner.pos < scanner.text.len() {
        let rest = &scanner.text[scanner.pos..];
        let c = rest.chars().next().expect("not at end");
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '\'' | '"' => {
                copy_quoted(scanner, sql, c)?;
                continue;
            }
            _ => {}
        }
        sql.push(c);
        scanner.pos += c.len_utf8();
        if depth == 0 {
            return Ok(());
        }
    }
    Err(scanner.error(start, "unbalanced parentheses"))
}

/// Turns collected SQL text into a command, unless it is only whitespace and comments.
fn push_sql(
    scanner: &Scanner<'_>,
    commands: &mut Vec<Command>,
    sql: &mut String,
    start: usize,
    vars: &mut VarTable,
) -> Result<(), ScriptError> {
    let text = std::mem::take(sql);
    let Some(body) = strip_leading_comments(&text) else {
        return Ok(());
    };
    let first_line = body.lines().next().unwrap_or("").trim_end().to_string();
    let command = build_sql_command(body.trim_end(), vars);
    let offset = start + (text.len() - body.len());
    commands.push(Command {
        kind: CommandKind::Sql(command),
        span: scanner.span_at(offset.min(scanner.text.len().saturating_sub(1))),
        first_line,
    });
    Ok(())
}

fn strip_leading_comments(text: &str) -> Option<&str> {
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.find('\n').map_or("", |i| &after[i + 1..]);
        } else {
            break;
        }
    }
    (!rest.is_empty()).then_some(rest)
}

/// Finds `:name` references (pgbench substitutes them even inside quotes) and builds both the
/// parameterized text and the pieces for inline substitution.
fn build_sql_command(text: &str, vars: &mut VarTable) -> SqlCommand {
    let mut parameterized = String::with_capacity(text.len());
    let mut pieces = Vec::new();
    let mut params = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(colon) = rest.find(':') {
        let after = &rest[colon + 1..];
        let name_len = leading_name(after).len();
        if name_len == 0 {
            // `::type` casts and lone colons are copied through.
            let skip = colon + 1 + after.len() - after.trim_start_matches(':').len();
            parameterized.push_str(&rest[..skip]);
            literal.push_str(&rest[..skip]);
            rest = &rest[skip..];
            continue;
        }
        parameterized.push_str(&rest[..colon]);
        literal.push_str(&rest[..colon]);
        let slot = vars.slot(&after[..name_len]);
        params.push(slot);
        parameterized.push_str(&format!("${}", params.len()));
        pieces.push(SqlPiece::Text(std::mem::take(&mut literal)));
        pieces.push(SqlPiece::Var(slot));
        rest = &after[name_len..];
    }
    parameterized.push_str(rest);
    literal.push_str(rest);
    pieces.push(SqlPiece::Text(literal));
    pieces.retain(|p| !matches!(p, SqlPiece::Text(t) if t.is_empty()));
    SqlCommand {
        parameterized,
        params,
        pieces,
        store: None,
    }
}

/// Parses the meta-command starting at the backslash under the cursor, through the end of its
/// line (a backslash before the newline continues it).
enum Meta {
    Command(Command),
    /// `\gset` / `\aset`: belongs to the SQL command before it.
    Store(ResultStore, usize),
}

fn parse_meta(scanner: &mut Scanner<'_>, vars: &mut VarTable) -> Result<Meta, ScriptError> {
    let start = scanner.pos;
    let mut end = start;
    let text = scanner.text;
    loop {
        let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
        let line = text[start..line_end].trim_end_matches('\r');
        if line.ends_with('\\') && line_end < text.len() {
            end = line_end + 1;
            continue;
        }
        end = line_end;
        break;
    }
    scanner.pos = end;
    let raw = &text[start..end];
    let joined = raw.replace("\\\r\n", " ").replace("\\\n", " ");
    let line = joined.trim_end();
    let first_line = line.lines().next().unwrap_or("").to_string();
    if line.len() < 2 {
        // A lone backslash (possibly continued onto nothing): no command name at all.
        return Err(scanner.command_error(start, "invalid command in command \"\""));
    }
    let name_len = line[1..]
        .find(char::is_whitespace)
        .map_or(line.len() - 1, |i| i);
    let name = &line[1..1 + name_len];
    let args_offset = 1 + name_len;
    let args = &line[args_offset..];
    let lower = name.to_ascii_lowercase();
    let words: Vec<&str> = args.split_whitespace().collect();
    let no_arguments = |kind: CommandKind| {
        if words.is_empty() {
            Ok(kind)
        } else {
            Err(scanner.command_error(start, format!("unexpected argument in command \"{lower}\"")))
        }
    };
    let kind = match lower.as_str() {
        "set" => parse_set(scanner, start + args_offset, args, vars)?,
        "sleep" => parse_sleep(scanner, start, args, vars)?,
        "if" | "elif" => {
            let condition = parse_expression(scanner, start + args_offset, args, &lower, vars)?;
            if lower == "if" {
                CommandKind::If {
                    condition,
                    on_false: 0,
                }
            } else {
                CommandKind::Elif {
                    condition,
                    on_false: 0,
                    end: 0,
                }
            }
        }
        "else" => no_arguments(CommandKind::Else { end: 0 })?,
        "endif" => no_arguments(CommandKind::Endif)?,
        "gset" | "aset" => {
            if words.len() > 1 {
                return Err(scanner
                    .command_error(start, format!("too many arguments in command \"{lower}\"")));
            }
            let store = ResultStore {
                all_queries: lower == "aset",
                prefix: words.first().unwrap_or(&"").to_string(),
            };
            return Ok(Meta::Store(store, start));
        }
        "shell" | "setshell" => parse_shell(scanner, start, &lower, &words, vars)?,
        "startpipeline" => no_arguments(CommandKind::StartPipeline)?,
        "syncpipeline" => no_arguments(CommandKind::SyncPipeline)?,
        "endpipeline" => no_arguments(CommandKind::EndPipeline)?,
        _ => {
            return Err(
                scanner.command_error(start, format!("invalid command in command \"{name}\""))
            )
        }
    };
    Ok(Meta::Command(Command {
        kind,
        span: scanner.span_at(start),
        first_line,
    }))
}

fn parse_expression(
    scanner: &Scanner<'_>,
    offset: usize,
    text: &str,
    command: &str,
    vars: &mut VarTable,
) -> Result<crate::ast::Expr, ScriptError> {
    ExprParser::parse(text, vars)
        .map(crate::eval::fold_constants)
        .map_err(|e| {
            scanner.error(
                offset + e.column,
                format!("{} in command \"{command}\"", e.message),
            )
        })
}

fn parse_shell(
    scanner: &Scanner<'_>,
    start: usize,
    command: &str,
    words: &[&str],
    vars: &mut VarTable,
) -> Result<CommandKind, ScriptError> {
    let (target, rest) = if command == "setshell" {
        let Some((name, rest)) = words.split_first() else {
            return Err(scanner.command_error(start, "missing argument in command \"setshell\""));
        };
        if !valid_variable_name(name) {
            return Err(scanner.error(start, format!("invalid variable name: \"{name}\"")));
        }
        (Some(vars.slot(name)), rest)
    } else {
        (None, words)
    };
    // pgbench: \setshell needs a variable and a command, \shell a command.
    if rest.is_empty() {
        let missing = if command == "setshell" {
            "argument"
        } else {
            "command"
        };
        return Err(
            scanner.command_error(start, format!("missing {missing} in command \"{command}\""))
        );
    }
    // pgbench's MAX_ARGS: the command's name and at most 255 words.
    if words.len() >= MAX_ARGS {
        return Err(scanner.command_error(
            start,
            format!("too many arguments in command \"{command}\""),
        ));
    }
    // `:name` is a variable, `::text` the literal `:text`, anything else literal.
    let words = rest
        .iter()
        .map(|word| match word.strip_prefix(':') {
            Some(literal) if literal.starts_with(':') => ShellWord::Literal(literal.to_string()),
            Some(name) => ShellWord::Var(vars.slot(name)),
            None => ShellWord::Literal(word.to_string()),
        })
        .collect();
    Ok(CommandKind::Shell { words, target })
}

fn attach_store(
    scanner: &Scanner<'_>,
    commands: &mut [Command],
    store: ResultStore,
    offset: usize,
) -> Result<(), ScriptError> {
    let name = if store.all_queries { "aset" } else { "gset" };
    match commands.last_mut().map(|c| &mut c.kind) {
        Some(CommandKind::Sql(sql)) if sql.store.is_none() => {
            sql.store = Some(store);
            Ok(())
        }
        _ => Err(scanner.error(offset, format!("\\{name} must follow an SQL command"))),
    }
}

/// Links every `\if` chain: where a false condition continues, and where a taken branch ends.
fn resolve_conditionals(
    scanner: &Scanner<'_>,
    commands: &mut [Command],
) -> Result<(), ScriptError> {
    struct Open {
        branches: Vec<usize>,
        seen_else: bool,
    }
    let mut stack: Vec<Open> = Vec::new();
    // pgbench's ConditionError names the script and the command's number (1-based; one past
    // the last for an \if left open), not a line.
    let unmatched = |index: usize, message: &str| ScriptError {
        source: scanner.source.to_string(),
        line: 0,
        column: 0,
        message: format!(
            "condition error in script \"{}\" command {}: {message}",
            scanner.source,
            index + 1
        ),
        line_text: String::new(),
        caret: false,
    };
    for index in 0..commands.len() {
        let label = match &commands[index].kind {
            CommandKind::If { .. } => {
                stack.push(Open {
                    branches: vec![index],
                    seen_else: false,
                });
                continue;
            }
            CommandKind::Elif { .. } => "elif",
            CommandKind::Else { .. } => "else",
            CommandKind::Endif => "endif",
            _ => continue,
        };
        let Some(open) = stack.last_mut() else {
            return Err(unmatched(
                index,
                &format!("\\{label} without matching \\if"),
            ));
        };
        if open.seen_else && label != "endif" {
            return Err(unmatched(index, &format!("\\{label} after \\else")));
        }
        let previous = *open.branches.last().expect("an \\if opened the chain");
        set_on_false(&mut commands[previous].kind, index);
        if label == "endif" {
            let open = stack
                .pop()
                .expect("open was read from the stack's top above");
            for branch in &open.branches[1..] {
                set_end(&mut commands[*branch].kind, index);
            }
        } else {
            open.seen_else = label == "else";
            open.branches.push(index);
        }
    }
    match stack.last() {
        Some(_) => Err(unmatched(commands.len(), "\\if without matching \\endif")),
        None => Ok(()),
    }
}

fn set_on_false(kind: &mut CommandKind, target: usize) {
    if let CommandKind::If { on_false, .. } | CommandKind::Elif { on_false, .. } = kind {
        *on_false = target;
    }
}

fn set_end(kind: &mut CommandKind, target: usize) {
    if let CommandKind::Elif { end, .. } | CommandKind::Else { end } = kind {
        *end = target;
    }
}

fn parse_set(
    scanner: &Scanner<'_>,
    args_start: usize,
    args: &str,
    vars: &mut VarTable,
) -> Result<CommandKind, ScriptError> {
    let trimmed = args.trim_start();
    let var_offset = args_start + (args.len() - trimmed.len());
    let var_len = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
    let var_name = &trimmed[..var_len];
    if var_name.is_empty() {
        return Err(scanner.command_error(var_offset, "missing argument in command \"set\""));
    }
    if !valid_variable_name(var_name) {
        return Err(scanner.error(var_offset, format!("invalid variable name: \"{var_name}\"")));
    }
    let expr = parse_expression(
        scanner,
        var_offset + var_len,
        &trimmed[var_len..],
        "set",
        vars,
    )?;
    Ok(CommandKind::Set {
        var: vars.slot(var_name),
        expr,
    })
}

fn parse_sleep(
    scanner: &Scanner<'_>,
    start: usize,
    args: &str,
    vars: &mut VarTable,
) -> Result<CommandKind, ScriptError> {
    let mut words: Vec<&str> = args.split_whitespace().collect();
    if words.is_empty() {
        return Err(scanner.command_error(start, "missing argument in command \"sleep\""));
    }
    if words.len() > 2 {
        return Err(scanner.error(start, "too many arguments in command \"sleep\""));
    }
    let duration = if let Some(name) = words[0].strip_prefix(':') {
        // pgbench checks the name when the variable is read; an invalid one can never be set.
        if !valid_variable_name(name) {
            return Err(scanner.error(start, format!("invalid variable name: \"{name}\"")));
        }
        SleepArg::Var(vars.slot(name))
    } else {
        // pgbench's rule: a sign and digits, then (with no separate unit) the unit: "2ms".
        let number = words[0];
        let digits_start = usize::from(number.starts_with(['+', '-']));
        let digits_end = number[digits_start..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(number.len(), |i| digits_start + i);
        if digits_end < number.len() {
            if words.len() == 1 && digits_end > digits_start {
                words.push(&number[digits_end..]);
            } else {
                return Err(scanner.error(
                    start,
                    format!(
                        "invalid sleep time, must be an integer ({number}) in command \"sleep\""
                    ),
                ));
            }
        }
        // atoi's reading: digits beyond an int's range are not pgbench's concern either.
        SleepArg::Constant(number[..digits_end].parse::<i64>().unwrap_or(0))
    };
    let unit = match words.get(1).map(|u| u.to_ascii_lowercase()) {
        None => SleepUnit::Seconds,
        Some(u) if u == "s" => SleepUnit::Seconds,
        Some(u) if u == "ms" => SleepUnit::Milliseconds,
        Some(u) if u == "us" => SleepUnit::Microseconds,
        Some(_) => {
            return Err(scanner.error(
                start,
                format!(
                    "unrecognized time unit, must be us, ms or s ({}) in command \"sleep\"",
                    words[1]
                ),
            ))
        }
    };
    Ok(CommandKind::Sleep { duration, unit })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Expr;

    fn parse(text: &str) -> Result<(Script, VarTable), ScriptError> {
        let mut vars = VarTable::default();
        parse_script("test.sql", "test.sql", text, &mut vars).map(|s| (s, vars))
    }

    #[test]
    fn splits_sql_and_meta_commands() {
        let (script, vars) = parse(
            "\\set aid random(1, 100000 * :scale)\nBEGIN;\nSELECT abalance FROM t WHERE aid = :aid;\nEND;\n",
        )
        .unwrap();
        assert_eq!(script.commands.len(), 4);
        let CommandKind::Sql(select) = &script.commands[2].kind else {
            panic!("expected SQL")
        };
        assert_eq!(
            select.parameterized,
            "SELECT abalance FROM t WHERE aid = $1;"
        );
        assert_eq!(select.params, vec![vars.lookup("aid").unwrap()]);
        assert_eq!(script.commands[2].span.line, 3);
    }

    #[test]
    fn casts_and_quotes_are_not_variables_or_terminators() {
        let (script, _) = parse("SELECT 'a;b'::text, $$x;y$$, (1;2);").unwrap();
        assert_eq!(script.commands.len(), 1);
        let CommandKind::Sql(sql) = &script.commands[0].kind else {
            panic!()
        };
        assert!(sql.params.is_empty());
    }

    #[test]
    fn precedence_follows_sql() {
        let mut vars = VarTable::default();
        let expr = ExprParser::parse("1 + 2 * 3 = 7 AND NOT 1 > 2", &mut vars).unwrap();
        let Expr::Call(crate::ast::Function::And, _) = expr else {
            panic!("AND must be the root: {expr:?}")
        };
    }

    #[test]
    fn errors_point_at_the_column() {
        let err = parse("\\set x 1 + @\n").unwrap_err();
        assert_eq!((err.line, err.column), (1, 12));
        assert!(
            err.message.contains("unexpected character"),
            "{}",
            err.message
        );
        assert_eq!(
            err.to_string(),
            "test.sql:1: unexpected character (@) in command \"set\"\n\\set x 1 + @\n           ^ error found here"
        );
    }

    #[test]
    fn unknown_meta_command_is_rejected() {
        let err = parse("\\frobnicate\n").unwrap_err();
        assert_eq!(err.message, "invalid command in command \"frobnicate\"");
        assert!(!err.caret);
        assert_eq!(
            parse("\\\\\n").unwrap_err().message,
            "invalid command in command \"\""
        );
        assert_eq!(
            parse("SELECT 1;\n\\").unwrap_err().message,
            "invalid command in command \"\""
        );
    }

    #[test]
    fn conditionals_link_their_branches() {
        let (script, _) =
            parse("\\if 1\nSELECT 1;\n\\elif 2\nSELECT 2;\n\\else\nSELECT 3;\n\\endif\n").unwrap();
        let kinds: Vec<&CommandKind> = script.commands.iter().map(|c| &c.kind).collect();
        assert!(matches!(kinds[0], CommandKind::If { on_false: 2, .. }));
        assert!(matches!(
            kinds[2],
            CommandKind::Elif {
                on_false: 4,
                end: 6,
                ..
            }
        ));
        assert!(matches!(kinds[4], CommandKind::Else { end: 6 }));
        assert_eq!(
            parse("\\endif\n").unwrap_err().message,
            "condition error in script \"test.sql\" command 1: \\endif without matching \\if"
        );
        assert_eq!(
            parse("\\if 1\nSELECT 1;\n").unwrap_err().message,
            "condition error in script \"test.sql\" command 3: \\if without matching \\endif"
        );
        assert_eq!(
            parse("\\if 1\n\\else\n\\elif 2\n\\endif\n")
                .unwrap_err()
                .message,
            "condition error in script \"test.sql\" command 3: \\elif after \\else"
        );
    }

    #[test]
    fn pipeline_misuse_is_left_to_the_run_as_pgbench_does() {
        // A branch may open or close a pipeline, so only the run can tell (exit 2 there).
        for text in [
            "\\startpipeline\nSELECT 1;\n\\endpipeline\n",
            "\\endpipeline\n",
            "\\startpipeline\nSELECT 1;\n",
            "\\if 1\n\\startpipeline\n\\else\n\\startpipeline\n\\endif\nSELECT 1;\n\\endpipeline\n",
            "\\startpipeline\nSELECT 1 \\gset\n\\endpipeline\n",
        ] {
            assert!(parse(text).is_ok(), "{text}");
        }
    }

    #[test]
    fn gset_attaches_to_the_previous_query() {
        let (script, _) = parse("SELECT 1 AS one \\gset p_\nSELECT 2;\n").unwrap();
        let CommandKind::Sql(sql) = &script.commands[0].kind else {
            panic!()
        };
        assert_eq!(
            sql.store,
            Some(ResultStore {
                all_queries: false,
                prefix: "p_".into()
            })
        );
        assert_eq!(
            parse("\\gset\n").unwrap_err().message,
            "\\gset must follow an SQL command"
        );
    }

    #[test]
    fn min_int_literal_is_accepted_only_negated() {
        let mut vars = VarTable::default();
        assert_eq!(
            ExprParser::parse("-9223372036854775808", &mut vars).unwrap(),
            Expr::Constant(crate::Value::Int(i64::MIN))
        );
        assert!(ExprParser::parse("9223372036854775808", &mut vars).is_err());
    }
}
