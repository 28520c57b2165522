//! The `LINE n:` display and caret that libpq adds under an error with a statement position
//! (fe-protocol3.c's reportErrorPosition), so that pgbench's error output is reproduced.

use unicode_width::UnicodeWidthChar;

/// Screen width of the line shown, and how far from its end the caret should stay.
const DISPLAY_SIZE: usize = 60;
const MIN_RIGHT_CUT: usize = 10;

/// libpq's width of a character: wide characters take two columns, and anything of no width
/// (a control character, a combining mark) counts as one.
fn columns(ch: char) -> usize {
    ch.width().unwrap_or(0).max(1)
}

/// The two lines for the 1-based character `position` of `query` (each ending in a newline),
/// or nothing when the position lies outside the query.
pub fn render(query: &str, position: usize) -> String {
    let Some(loc) = position.checked_sub(1) else {
        return String::new();
    };
    // Tabs are shown as spaces, as libpq does.
    let chars: Vec<char> = query
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    let mut screen = Vec::with_capacity(chars.len() + 1);
    let (mut line, mut begin, mut end) = (1, 0, None);
    let mut column = 0;
    for (index, &ch) in chars.iter().enumerate() {
        screen.push(column);
        if ch == '\r' || ch == '\n' {
            if index < loc {
                // "\r\n" counts as one line end.
                if ch == '\r' || index == 0 || chars[index - 1] != '\r' {
                    line += 1;
                }
                begin = index + 1;
            } else {
                end = Some(index);
                break;
            }
        }
        column += columns(ch);
    }
    let mut end = end.unwrap_or_else(|| {
        screen.push(column);
        chars.len()
    });
    if loc > end {
        return String::new();
    }
    let (mut begin_cut, mut end_cut) = (false, false);
    if screen[end] - screen[begin] > DISPLAY_SIZE {
        if screen[begin] + DISPLAY_SIZE >= screen[loc] + MIN_RIGHT_CUT {
            while screen[end] - screen[begin] > DISPLAY_SIZE {
                end -= 1;
            }
            end_cut = true;
        } else {
            while screen[loc] + MIN_RIGHT_CUT < screen[end] {
                end -= 1;
                end_cut = true;
            }
            while screen[end] - screen[begin] > DISPLAY_SIZE {
                begin += 1;
                begin_cut = true;
            }
        }
    }
    let prefix = format!("LINE {line}: {}", if begin_cut { "..." } else { "" });
    let shown: String = chars[begin..end].iter().collect();
    let caret_column = prefix.chars().map(columns).sum::<usize>() + screen[loc] - screen[begin];
    format!(
        "{prefix}{shown}{}\n{}^\n",
        if end_cut { "..." } else { "" },
        " ".repeat(caret_column)
    )
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn the_caret_sits_under_the_position_on_its_own_line() {
        assert_eq!(render("SELEC 1;", 1), "LINE 1: SELEC 1;\n        ^\n");
        assert_eq!(
            render("SELECT 1,\n  'abc'::int;", 13),
            "LINE 2:   'abc'::int;\n          ^\n"
        );
        // "\r\n" is one line end.
        assert_eq!(render("SELECT 1,\r\n\tx;", 13), "LINE 2:  x;\n         ^\n");
    }

    #[test]
    fn a_long_line_is_cut_around_the_position_with_ellipses() {
        let query = format!(
            "SELECT {} + nosuch + {};",
            "1 + ".repeat(30),
            "2 + ".repeat(30)
        );
        let position = query.find("nosuch").unwrap() + 1;
        let shown = render(&query, position);
        let (line, caret) = shown.trim_end().split_once('\n').unwrap();
        assert!(
            line.starts_with("LINE 1: ...") && line.ends_with("..."),
            "{line}"
        );
        assert_eq!(caret.len() - 1, line.find("nosuch").unwrap(), "{shown}");
        assert_eq!(line.len() - "LINE 1: ......".len(), 60, "{line}");
    }

    #[test]
    fn a_position_outside_the_query_shows_nothing() {
        assert_eq!(render("SELECT 1", 0), "");
        assert_eq!(render("SELECT 1", 20), "");
    }
}
