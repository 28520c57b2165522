//! Inline SVG charts for the HTML report: no scripts, no fonts to fetch, readable as they are.

use std::fmt::Write;

const WIDTH: f64 = 640.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn color(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

/// A point of a series: median with its min–max spread.
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// Lines over evenly spaced categories (e.g. client counts), one per series, each point with
/// a vertical min–max bar.
pub fn line_chart(
    y_label: &str,
    x_labels: &[String],
    series: &[(String, Vec<Option<Spread>>)],
) -> String {
    let height = 260.0;
    let bottom = 40.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = height - TOP - bottom;
    let y_max = series
        .iter()
        .flat_map(|(_, points)| points.iter().flatten().map(|p| p.max))
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.1;
    let x = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / x_labels.len().max(1) as f64;
    let y = |v: f64| TOP + plot_h * (1.0 - v / y_max);
    let mut svg = open(height);
    axes(&mut svg, height, bottom, y_max, y_label);
    for (i, label) in x_labels.iter().enumerate() {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"#,
            x(i),
            height - bottom + 15.0,
            escape(label)
        );
    }
    for (index, (name, points)) in series.iter().enumerate() {
        let stroke = color(index);
        let path: Vec<String> = points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|p| format!("{:.1},{:.1}", x(i), y(p.median))))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline class="series" data-series="{}" fill="none" stroke="{stroke}" stroke-width="2" points="{}"/>"#,
            escape(name),
            path.join(" ")
        );
        for (i, point) in points.iter().enumerate() {
            let Some(p) = point else { continue };
            let _ = write!(
                svg,
                r#"<line x1="{0:.1}" x2="{0:.1}" y1="{1:.1}" y2="{2:.1}" stroke="{stroke}"/><circle cx="{0:.1}" cy="{3:.1}" r="3" fill="{stroke}"><title>{4}: {5:.1} (min {6:.1}, max {7:.1})</title></circle>"#,
                x(i),
                y(p.min),
                y(p.max),
                y(p.median),
                escape(name),
                p.median,
                p.min,
                p.max
            );
        }
    }
    svg + "</svg>"
}

/// One bar: its label, the ratio, and the ratio's interval.
pub struct RatioBar {
    pub label: String,
    pub ratio: f64,
    pub interval: Option<(f64, f64)>,
}

/// Horizontal bars of ratios against 1, each with its interval as a whisker.
pub fn ratio_bars(rows: &[RatioBar]) -> String {
    let row_h = 22.0;
    let bottom = 30.0;
    let height = TOP + bottom + row_h * rows.len() as f64;
    let label_w = 230.0;
    let plot_w = WIDTH - label_w - RIGHT;
    let extent = rows
        .iter()
        .flat_map(|b| {
            let (low, high) = b.interval.unwrap_or((b.ratio, b.ratio));
            [b.ratio, low, high]
        })
        .map(|v| (v - 1.0).abs())
        .fold(0.05, f64::max)
        * 1.15;
    let x = |v: f64| label_w + plot_w * ((v - 1.0) / extent + 1.0) / 2.0;
    let mut svg = open(height);
    let _ = write!(
        svg,
        r##"<line x1="{0:.1}" x2="{0:.1}" y1="{1}" y2="{2:.1}" stroke="#333"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle" font-size="11">1.00</text><text x="{4:.1}" y="{3:.1}" text-anchor="middle" font-size="11">{5:.2}</text><text x="{6:.1}" y="{3:.1}" text-anchor="middle" font-size="11">{7:.2}</text>"##,
        x(1.0),
        TOP,
        height - bottom,
        height - bottom + 15.0,
        x(1.0 - extent),
        1.0 - extent,
        x(1.0 + extent),
        1.0 + extent
    );
    for (
        i,
        RatioBar {
            label,
            ratio,
            interval,
        },
    ) in rows.iter().enumerate()
    {
        let top = TOP + row_h * i as f64;
        let fill = if *ratio >= 1.0 { "#2ca02c" } else { "#d62728" };
        let (from, to) = (x(1.0).min(x(*ratio)), x(1.0).max(x(*ratio)));
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text><rect class="ratio" x="{from:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}" opacity="0.7"><title>{} {ratio:.3}</title></rect>"#,
            label_w - 6.0,
            top + row_h * 0.65,
            escape(label),
            top + 4.0,
            (to - from).max(1.0),
            row_h - 8.0,
            escape(label)
        );
        if let Some((low, high)) = interval {
            let _ = write!(
                svg,
                r##"<line x1="{:.1}" x2="{:.1}" y1="{2:.1}" y2="{2:.1}" stroke="#000"/>"##,
                x(*low),
                x(*high),
                top + row_h / 2.0
            );
        }
    }
    svg + "</svg>"
}

fn open(height: f64) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img">"#
    )
}

fn axes(svg: &mut String, height: f64, bottom: f64, y_max: f64, y_label: &str) {
    let plot_h = height - TOP - bottom;
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{0:.1}" stroke="#333"/><line x1="{LEFT}" x2="{1:.1}" y1="{0:.1}" y2="{0:.1}" stroke="#333"/><text x="14" y="{2:.1}" transform="rotate(-90 14 {2:.1})" text-anchor="middle" font-size="11">{3}</text>"##,
        height - bottom,
        WIDTH - RIGHT,
        TOP + plot_h / 2.0,
        escape(y_label)
    );
    for step in 0..=4 {
        let value = y_max * step as f64 / 4.0;
        let y = TOP + plot_h * (1.0 - step as f64 / 4.0);
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="10">{value:.0}</text><line x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/>"##,
            LEFT - 4.0,
            y + 3.0,
            WIDTH - RIGHT
        );
    }
}
