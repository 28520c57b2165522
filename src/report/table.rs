//! Plain aligned terminal tables.

/// Renders rows under a header, each column as wide as its widest cell; numeric-looking columns
/// are right-aligned.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let columns = header.len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let numeric: Vec<bool> = (0..columns)
        .map(|c| rows.iter().all(|r| r[c].trim().parse::<f64>().is_ok()))
        .collect();
    let format_row = |cells: Vec<&str>| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if numeric[c] {
                    format!("{cell:>width$}", width = widths[c])
                } else {
                    format!("{cell:<width$}", width = widths[c])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = format_row(header.to_vec());
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    out.push('\n');
    for row in rows {
        out.push_str(&format_row(row.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_text_left_and_numbers_right() {
        let table = render(
            &["workload", "tps"],
            &[
                vec!["select-only".into(), "12.5".into()],
                vec!["tpcb".into(), "1234.0".into()],
            ],
        );
        assert_eq!(
            table,
            "workload        tps\n-----------  ------\nselect-only    12.5\ntpcb         1234.0\n"
        );
    }
}
