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

/// One line of a chart: its points (None where it has no value) and how it is drawn.
pub struct Line {
    pub name: String,
    pub color: usize,
    /// An SVG stroke-dasharray, to tell lines of one color apart (e.g. percentiles).
    pub dash: Option<&'static str>,
    pub points: Vec<Option<Spread>>,
    /// Points to ring in red, by index, with what the ring's tooltip says (e.g. a run the
    /// report flags).
    pub marked: Vec<(usize, String)>,
}

/// Lines over evenly spaced categories (e.g. client counts), each point with a vertical
/// min–max bar.
pub fn line_chart(y_label: &str, x_labels: &[String], lines: &[Line]) -> String {
    let height = 260.0;
    let bottom = 40.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = height - TOP - bottom;
    let y_max = nice_max(
        lines
            .iter()
            .flat_map(|line| line.points.iter().flatten().map(|p| p.max))
            .fold(0.0, f64::max),
    );
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
    for line in lines {
        let stroke = color(line.color);
        let path: Vec<String> = line
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|p| format!("{:.1},{:.1}", x(i), y(p.median))))
            .collect();
        let dash = line
            .dash
            .map_or(String::new(), |d| format!(r#" stroke-dasharray="{d}""#));
        let _ = write!(
            svg,
            r#"<polyline class="series" data-series="{}" fill="none" stroke="{stroke}" stroke-width="2"{dash} points="{}"/>"#,
            escape(&line.name),
            path.join(" ")
        );
        for (i, point) in line.points.iter().enumerate() {
            let Some(p) = point else { continue };
            let _ = write!(
                svg,
                r#"<line x1="{0:.1}" x2="{0:.1}" y1="{1:.1}" y2="{2:.1}" stroke="{stroke}"/><circle cx="{0:.1}" cy="{3:.1}" r="3" fill="{stroke}"><title>{4}: {5} (min {6}, max {7})</title></circle>"#,
                x(i),
                y(p.min),
                y(p.max),
                y(p.median),
                escape(&line.name),
                significant(p.median),
                significant(p.min),
                significant(p.max)
            );
        }
        for (i, note) in &line.marked {
            let Some(Some(p)) = line.points.get(*i) else {
                continue;
            };
            let _ = write!(
                svg,
                r#"<circle class="marked" cx="{:.1}" cy="{:.1}" r="7" fill="none" stroke="{MARK_COLOR}" stroke-width="2"><title>{}</title></circle>"#,
                x(*i),
                y(p.median),
                escape(note)
            );
        }
    }
    svg + "</svg>"
}

/// The ring around a marked point: red, whatever the line's color.
const MARK_COLOR: &str = "#d62728";

/// A mark on a time series: the second and what happened then.
pub struct Mark {
    pub second: u64,
    pub label: String,
}

/// A value per second as a line, with vertical dashed marks (e.g. checkpoints finishing) and
/// background activity per second as pale bars along the bottom quarter (e.g. buffers the
/// checkpointer wrote), scaled to their own maximum.
pub fn time_series(
    y_label: &str,
    points: &[(u64, f64)],
    marks: &[Mark],
    activity: &[(u64, f64)],
) -> String {
    let height = 240.0;
    let bottom = 40.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = height - TOP - bottom;
    let last = points
        .iter()
        .map(|(s, _)| *s + 1)
        .chain(marks.iter().map(|m| m.second + 1))
        .max()
        .unwrap_or(1) as f64;
    let y_max = nice_max(points.iter().map(|(_, v)| *v).fold(0.0, f64::max));
    let x = |second: f64| LEFT + plot_w * second / last;
    let y = |v: f64| TOP + plot_h * (1.0 - v / y_max);
    let mut svg = open(height);
    axes(&mut svg, height, bottom, y_max, y_label);
    let step = tick_step(last);
    let mut tick = 0.0;
    while tick <= last {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="10">{tick:.0} s</text>"#,
            x(tick),
            height - bottom + 15.0
        );
        tick += step;
    }
    let activity_max = activity.iter().map(|(_, v)| *v).fold(0.0, f64::max);
    for (second, value) in activity.iter().filter(|(_, v)| *v > 0.0) {
        let bar_h = plot_h * 0.25 * value / activity_max;
        let _ = write!(
            svg,
            r##"<rect class="activity" x="{:.1}" y="{:.1}" width="{:.1}" height="{bar_h:.1}" fill="#ff7f0e" opacity="0.25"><title>second {second}: {value}</title></rect>"##,
            x(*second as f64),
            TOP + plot_h - bar_h,
            (x(1.0) - x(0.0)).max(1.0)
        );
    }
    for mark in marks {
        // Like the throughput, at the end of its second.
        let _ = write!(
            svg,
            r##"<line class="mark" x1="{0:.1}" x2="{0:.1}" y1="{TOP}" y2="{1:.1}" stroke="#ff7f0e" stroke-dasharray="4 3"><title>{2}</title></line>"##,
            x(mark.second as f64 + 1.0),
            height - bottom,
            escape(&mark.label)
        );
    }
    // A second's throughput is drawn at its end.
    let path: Vec<String> = points
        .iter()
        .map(|(s, v)| format!("{:.1},{:.1}", x(*s as f64 + 1.0), y(*v)))
        .collect();
    let _ = write!(
        svg,
        r##"<polyline class="series" fill="none" stroke="#1f77b4" stroke-width="1.5" points="{}"/>"##,
        path.join(" ")
    );
    svg + "</svg>"
}

/// A point of a history: its value, its own interval, and its label (the invocation).
pub struct HistoryMark {
    pub value: f64,
    pub interval: Option<(f64, f64)>,
    pub label: String,
}

/// A history over evenly spaced invocations: points with their own intervals, each plateau
/// between changes as a grey line at its geometric mean, each change as a red dashed line
/// before its first point with its label at the top. Static: every number is drawn or in a
/// `<title>`, nothing needs a script.
pub fn history_chart(y_label: &str, points: &[HistoryMark], changes: &[(usize, String)]) -> String {
    let height = 220.0;
    let bottom = 30.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = height - TOP - bottom;
    let highest = points
        .iter()
        .map(|p| p.interval.map_or(p.value, |(_, high)| high.max(p.value)))
        .fold(0.0, f64::max);
    let y_max = nice_max(highest);
    let n = points.len().max(1) as f64;
    let x = |i: f64| LEFT + plot_w * (i + 0.5) / n;
    let y = |v: f64| TOP + plot_h * (1.0 - v / y_max);
    let mut svg = open(height);
    axes(&mut svg, height, bottom, y_max, y_label);
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(changes.iter().map(|(at, _)| *at))
        .chain(std::iter::once(points.len()))
        .collect();
    for w in bounds.windows(2).filter(|w| w[1] > w[0]) {
        let logs: f64 = points[w[0]..w[1]].iter().map(|p| p.value.ln()).sum();
        let level = (logs / (w[1] - w[0]) as f64).exp();
        let _ = write!(
            svg,
            r##"<line class="plateau" x1="{:.1}" x2="{:.1}" y1="{2:.1}" y2="{2:.1}" stroke="#999" stroke-width="3" opacity="0.6"/>"##,
            x(w[0] as f64 - 0.5),
            x(w[1] as f64 - 0.5),
            y(level)
        );
    }
    for (at, label) in changes {
        let _ = write!(
            svg,
            r##"<line class="change" x1="{0:.1}" x2="{0:.1}" y1="{TOP}" y2="{1:.1}" stroke="{MARK_COLOR}" stroke-dasharray="5 3"/><text x="{2:.1}" y="{3:.1}" font-size="11" fill="{MARK_COLOR}">{4}</text>"##,
            x(*at as f64 - 0.5),
            height - bottom,
            x(*at as f64 - 0.5) + 3.0,
            TOP + 11.0,
            escape(label)
        );
    }
    let dots = points.len() <= 120;
    let mut path = Vec::with_capacity(points.len());
    for (i, point) in points.iter().enumerate() {
        let (px, py) = (x(i as f64), y(point.value));
        path.push(format!("{px:.1},{py:.1}"));
        if let Some((low, high)) = point.interval {
            let _ = write!(
                svg,
                r##"<line x1="{px:.1}" x2="{px:.1}" y1="{:.1}" y2="{:.1}" stroke="#1f77b4" opacity="0.5"/>"##,
                y(low),
                y(high)
            );
        }
        if dots {
            let _ = write!(
                svg,
                r##"<circle cx="{px:.1}" cy="{py:.1}" r="3" fill="#1f77b4"><title>{}: {}</title></circle>"##,
                escape(&point.label),
                significant(point.value)
            );
        }
    }
    let _ = write!(
        svg,
        r##"<polyline class="series" fill="none" stroke="#1f77b4" stroke-width="1.5" points="{}"/>"##,
        path.join(" ")
    );
    for (i, label) in [
        (0, &points.first()),
        (points.len().saturating_sub(1), &points.last()),
    ] {
        if let Some(point) = label {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="10">{}</text>"#,
                x(i as f64),
                height - bottom + 14.0,
                escape(&point.label)
            );
        }
    }
    svg + "</svg>"
}

/// One horizontal bar from zero.
pub struct ValueBar {
    pub label: String,
    pub value: f64,
    pub color: usize,
}

/// Horizontal bars of values from zero (e.g. CPU µs per transaction), labelled.
pub fn value_bars(unit: &str, rows: &[ValueBar]) -> String {
    let row_h = 20.0;
    let bottom = 30.0;
    let height = TOP + bottom + row_h * rows.len() as f64;
    let label_w = 300.0;
    let plot_w = WIDTH - label_w - RIGHT - 60.0;
    let max = nice_max(rows.iter().map(|r| r.value).fold(0.0, f64::max));
    let mut svg = open(height);
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"##,
        label_w + plot_w / 2.0,
        height - bottom + 18.0,
        escape(unit)
    );
    for (i, row) in rows.iter().enumerate() {
        let top = TOP + row_h * i as f64;
        let width = plot_w * row.value / max;
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text><rect class="bar" x="{label_w}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {}</title></rect><text x="{:.1}" y="{:.1}" font-size="10">{}</text>"#,
            label_w - 6.0,
            top + row_h * 0.65,
            escape(&row.label),
            top + 3.0,
            width.max(1.0),
            row_h - 6.0,
            color(row.color),
            escape(&row.label),
            significant(row.value),
            label_w + width + 4.0,
            top + row_h * 0.65,
            significant(row.value)
        );
    }
    svg + "</svg>"
}

/// A value with about four significant digits, for labels.
pub fn significant(value: f64) -> String {
    let magnitude = value.abs().max(f64::MIN_POSITIVE).log10().floor() as i32;
    let decimals = (3 - magnitude).clamp(0, 6) as usize;
    format!("{value:.decimals$}")
}

/// The top of a value axis: four round steps (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × 10ⁿ each) that hold the maximum
/// with a small margin; never zero.
fn nice_max(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw_step = max * 1.05 / 4.0;
    let power = 10f64.powf(raw_step.log10().floor());
    let step = [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|step| *step >= raw_step)
        .unwrap_or(10.0 * power);
    step * 4.0
}

/// An axis label: the shortest text of the value rounded to six decimals (round steps stay
/// round: "0.075", "12500").
fn tick_label(value: f64) -> String {
    format!("{}", (value * 1e6).round() / 1e6)
}

/// Seconds between time-axis labels: about eight labels over the axis.
fn tick_step(last: f64) -> f64 {
    [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
    ]
    .into_iter()
    .find(|step| last / step <= 8.0)
    .unwrap_or(7200.0)
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
    // A ratio's axis is logarithmic, centred on 1: 2× and 0.5× lie equally far from it, and
    // no end of it falls below zero, whatever the widest interval.
    let extent = rows
        .iter()
        .flat_map(|b| {
            let (low, high) = b.interval.unwrap_or((b.ratio, b.ratio));
            [b.ratio, low, high]
        })
        .filter(|v| *v > 0.0 && v.is_finite())
        .map(|v| v.ln().abs())
        .fold(1.05f64.ln(), f64::max)
        * 1.15;
    let x = |v: f64| {
        let log = if v > 0.0 { v.ln() } else { -extent };
        label_w + plot_w * (log.clamp(-extent, extent) / extent + 1.0) / 2.0
    };
    let mut svg = open(height);
    let _ = write!(
        svg,
        r##"<line x1="{0:.1}" x2="{0:.1}" y1="{1}" y2="{2:.1}" stroke="#333"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle" font-size="11">1.00</text><text x="{4:.1}" y="{3:.1}" text-anchor="middle" font-size="11">{5:.2}</text><text x="{6:.1}" y="{3:.1}" text-anchor="middle" font-size="11">{7:.2}</text>"##,
        x(1.0),
        TOP,
        height - bottom,
        height - bottom + 15.0,
        x((-extent).exp()),
        (-extent).exp(),
        x(extent.exp()),
        extent.exp()
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
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="10">{}</text><line x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/>"##,
            LEFT - 4.0,
            y + 3.0,
            tick_label(value),
            WIDTH - RIGHT
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_axis_is_logarithmic_and_never_below_zero() {
        let bars = [
            RatioBar {
                label: "wild".into(),
                ratio: 1.184,
                interval: Some((0.683, 1.978)),
            },
            RatioBar {
                label: "halved".into(),
                ratio: 0.5,
                interval: None,
            },
            RatioBar {
                label: "doubled".into(),
                ratio: 2.0,
                interval: None,
            },
        ];
        let svg = ratio_bars(&bars);
        let labels: Vec<f64> = svg
            .split("font-size=\"11\">")
            .skip(1)
            .filter_map(|rest| rest.split('<').next()?.parse().ok())
            .collect();
        assert_eq!(labels.len(), 3, "{svg}");
        assert!(labels.iter().all(|v| *v > 0.0), "{labels:?}");
        // The ends are reciprocal: exp(±1.15 ln 2).
        assert!((labels[1] * labels[2] - 1.0).abs() < 0.01, "{labels:?}");
        // 0.5 and 2 are drawn as bars of one width on either side of 1.
        let width = |label: &str| -> f64 {
            let bar = svg.split(&format!(">{label}</text>")).nth(1).unwrap();
            bar.split("width=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!((width("halved") - width("doubled")).abs() < 0.2);
    }

    #[test]
    fn axis_tops_are_four_round_steps() {
        assert_eq!(nice_max(49_000.0), 60_000.0);
        assert_eq!(nice_max(9.4), 10.0);
        assert_eq!(nice_max(0.29), 0.32);
        assert_eq!(nice_max(38.0), 40.0);
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(12_500.0), "12500");
    }
}
