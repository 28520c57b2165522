//! Statements by their shape: constants replaced by `$n` as pg_stat_statements does, comments
//! dropped, whitespace made one space; what the capture's summary and the replay's
//! per-statement table group by. Only a lexer: quoted strings, dollar quotes, numbers.

/// `text` with its constants as `$n`, numbered after the highest parameter it already has.
pub fn normalize(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut next = highest_parameter(&chars) + 1;
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut pending_space = false;
    while i < chars.len() {
        let c = chars[i];
        let negative = c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        let constant_end = if negative && sign_of_constant(&out) {
            constant_at(&chars, i + 1)
        } else {
            constant_at(&chars, i)
        };
        if let Some(end) = constant_end {
            push_space(&mut out, &mut pending_space);
            out.push_str(&format!("${next}"));
            next += 1;
            i = end;
            continue;
        }
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            i += 1;
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i = block_comment_end(&chars, i);
            pending_space = !out.is_empty();
        } else if c == '"' {
            let end = quoted_end(&chars, i, '"');
            push_space(&mut out, &mut pending_space);
            out.extend(&chars[i..end]);
            i = end;
        } else {
            push_space(&mut out, &mut pending_space);
            out.push(c);
            i += 1;
            if is_word(c) {
                while i < chars.len() && is_word(chars[i]) {
                    out.push(chars[i]);
                    i += 1;
                }
            }
        }
    }
    out
}

/// Whether a `-` before a number after `out` is the constant's sign, as the server's grammar
/// folds it (`+ -4561`, `(-1`, `THEN -1`), rather than a subtraction (`a - 1`).
fn sign_of_constant(out: &str) -> bool {
    let Some(last) = out.trim_end().chars().last() else {
        return true;
    };
    if "+-*/<>=~!@#%^&|`?(,[".contains(last) {
        return true;
    }
    let word: String = out
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    const BEFORE_A_VALUE: [&str; 14] = [
        "select", "where", "and", "or", "not", "then", "else", "when", "values", "return", "limit",
        "offset", "between", "in",
    ];
    BEFORE_A_VALUE.contains(&word.to_ascii_lowercase().as_str())
}

fn push_space(out: &mut String, pending: &mut bool) {
    if std::mem::take(pending) {
        out.push(' ');
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The end of a constant starting at `i`: a quoted string (with an E, B, X or N prefix), a
/// dollar-quoted string, or a number that is not part of a word.
fn constant_at(chars: &[char], i: usize) -> Option<usize> {
    let c = chars[i];
    let after_word = i > 0 && is_word(chars[i - 1]);
    if c == '\'' {
        return Some(quoted_end(chars, i, '\''));
    }
    if !after_word
        && matches!(c, 'E' | 'e' | 'B' | 'b' | 'X' | 'x' | 'N' | 'n')
        && chars.get(i + 1) == Some(&'\'')
    {
        return Some(quoted_end(chars, i + 1, '\''));
    }
    if c == '$' && !after_word {
        return dollar_quote_end(chars, i);
    }
    let starts_number =
        c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()));
    if starts_number && !after_word {
        let mut end = i;
        while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '.') {
            let exponent_sign = matches!(chars[end], 'e' | 'E')
                && matches!(chars.get(end + 1), Some('+') | Some('-'));
            end += if exponent_sign { 2 } else { 1 };
        }
        return Some(end);
    }
    None
}

/// The end of a string quoted with `quote` starting at `i` (doubled quotes and, in E'',
/// backslashes escape); the text's end when it is not closed.
fn quoted_end(chars: &[char], i: usize, quote: char) -> usize {
    let escapes = quote == '\'' && i > 0 && matches!(chars[i - 1], 'E' | 'e');
    let mut j = i + 1;
    while j < chars.len() {
        if escapes && chars[j] == '\\' {
            j += 2;
            continue;
        }
        if chars[j] == quote {
            if chars.get(j + 1) == Some(&quote) {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    chars.len()
}

/// `$tag$ … $tag$` starting at `i`; None for a parameter (`$1`) or a lone `$`.
fn dollar_quote_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
        if j == i + 1 && chars[j].is_ascii_digit() {
            return None;
        }
        j += 1;
    }
    if chars.get(j) != Some(&'$') {
        return None;
    }
    let tag = &chars[i..=j];
    let mut k = j + 1;
    while k + tag.len() <= chars.len() {
        if &chars[k..k + tag.len()] == tag {
            return Some(k + tag.len());
        }
        k += 1;
    }
    Some(chars.len())
}

fn block_comment_end(chars: &[char], i: usize) -> usize {
    let mut depth = 0;
    let mut j = i;
    while j + 1 < chars.len() {
        match (chars[j], chars[j + 1]) {
            ('/', '*') => {
                depth += 1;
                j += 2;
            }
            ('*', '/') => {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    return j;
                }
            }
            _ => j += 1,
        }
    }
    chars.len()
}

/// The highest `$n` in the text outside quotes and comments (0 when it has none).
pub fn highest_parameter(chars: &[char]) -> usize {
    let mut highest = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            i = quoted_end(chars, i, c);
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i = block_comment_end(chars, i);
        } else if c == '$' && !(i > 0 && is_word(chars[i - 1])) {
            if let Some(end) = dollar_quote_end(chars, i) {
                i = end;
                continue;
            }
            let digits: String = chars[i + 1..]
                .iter()
                .take_while(|d| d.is_ascii_digit())
                .collect();
            highest = highest.max(digits.parse().unwrap_or(0));
            i += 1 + digits.len();
        } else {
            i += 1;
        }
    }
    highest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_become_parameters_numbered_after_the_statements_own() {
        assert_eq!(
            normalize("UPDATE pgbench_accounts SET abalance = abalance + -4561 WHERE aid = 29668;"),
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;"
        );
        assert_eq!(normalize("select a - 1, -2"), "select a - $1, $2");
        assert_eq!(
            normalize("select 'a''b', E'\\'x', 1.5e-3, $$q$$ from t2 where c = $1"),
            "select $2, $3, $4, $5 from t2 where c = $1"
        );
        assert_eq!(
            normalize("SELECT  *\n  FROM \"T 1\" -- note\n WHERE x /* a /* b */ */ IN (1, 2)"),
            "SELECT * FROM \"T 1\" WHERE x IN ($1, $2)"
        );
    }

    #[test]
    fn parameters_are_counted_outside_quotes() {
        let chars = |t: &str| t.chars().collect::<Vec<_>>();
        assert_eq!(
            highest_parameter(&chars("select $1, $12, '$40', $$ $50 $$")),
            12
        );
        assert_eq!(highest_parameter(&chars("select 1")), 0);
    }
}
