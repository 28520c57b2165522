//! Apache Otava's CSV (a `type: csv` test): a row per invocation of a history, oldest first —
//! `time` (UTC, ISO 8601), the attributes `invocation`, `tags` and `kernel`, then per cell and
//! metric a column `<cell>:<metric>` of medians, with its interval's ends in
//! `<cell>:<metric>:lower` and `:upper`. A cell an invocation did not measure is left empty
//! (Otava reads a listed metric's every row: list the cells every invocation measured).

use super::InvocationExport;
use stampede_base::calendar::UtcTime;

/// The columns Otava's test lists as its `attributes`.
pub const ATTRIBUTES: [&str; 3] = ["invocation", "tags", "kernel"];

pub fn render(history: &[InvocationExport]) -> String {
    let columns = metric_columns(history);
    let mut header: Vec<String> = vec!["time".to_string()];
    header.extend(ATTRIBUTES.iter().map(|a| a.to_string()));
    for column in &columns {
        header.extend([
            column.clone(),
            format!("{column}:lower"),
            format!("{column}:upper"),
        ]);
    }
    let mut out = line(&header);
    for export in history {
        let time = UtcTime::from_unix(export.label.created_unix_s as i64);
        let mut row = vec![
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                time.year, time.month, time.day, time.hour, time.minute, time.second
            ),
            export.label.name.clone(),
            export.label.tags.clone(),
            export.label.kernel.clone().unwrap_or_default(),
        ];
        for column in &columns {
            let found = export.cells.iter().find_map(|cell| {
                cell.measures
                    .iter()
                    .find(|m| format!("{}:{}", cell.cell, m.metric) == *column)
            });
            match found {
                Some(measured) => {
                    let (low, high) = measured
                        .interval
                        .map_or((String::new(), String::new()), |i| {
                            (i.low.to_string(), i.high.to_string())
                        });
                    row.extend([measured.value.to_string(), low, high]);
                }
                None => row.extend([String::new(), String::new(), String::new()]),
            }
        }
        out += &line(&row);
    }
    out
}

/// `<cell>:<metric>` in the order the history first measured them.
fn metric_columns(history: &[InvocationExport]) -> Vec<String> {
    let mut columns: Vec<String> = Vec::new();
    for cell in history.iter().flat_map(|export| &export.cells) {
        for measured in &cell.measures {
            let column = format!("{}:{}", cell.cell, measured.metric);
            if !columns.contains(&column) {
                columns.push(column);
            }
        }
    }
    columns
}

/// A CSV line (RFC 4180): fields with a comma, quote or line break quoted.
fn line(fields: &[String]) -> String {
    let quoted: Vec<String> = fields
        .iter()
        .map(|field| {
            if field.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", field.replace('"', "\"\""))
            } else {
                field.clone()
            }
        })
        .collect();
    quoted.join(",") + "\n"
}
