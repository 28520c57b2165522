//! The HTML report in a real browser: a headless Chromium (`.ci/run` installs Debian's
//! chromium-headless-shell) renders it with no console errors, every chart has a size, every
//! line of two or more points a length (a single point is drawn as its marker), and every
//! contents link lands on a section.

use std::path::{Path, PathBuf};

use super::stderr;

/// A headless Chromium on this machine (`.ci/run` installs Debian's chromium-headless-shell).
fn chromium() -> PathBuf {
    ["chromium-headless-shell", "chromium", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(name))
                    .find(|path| path.is_file())
            })
        })
        .expect("a headless Chromium for the HTML check: apt-get install chromium-headless-shell")
}

fn run_chromium(profile: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(args)
        .output()
        .expect("chromium runs")
}

/// Layout of every chart once rendered, written into the DOM so that `--dump-dom` shows it:
/// the test's own probe, appended to a copy of the report (the report itself has no script).
const LAYOUT_PROBE: &str = r#"<script>
document.body.setAttribute("data-layout", JSON.stringify({
  svgs: [...document.querySelectorAll("svg")].filter(s => {
    const box = s.getBoundingClientRect(); return box.width > 100 && box.height > 50; }).length,
  lines: [...document.querySelectorAll("polyline.series")].filter(p =>
    p.points.numberOfItems < 2 || p.getTotalLength() > 0).length,
  sections: [...document.querySelectorAll("h2[id]")].filter(h => h.offsetHeight > 0).length,
  links: [...document.querySelectorAll("a[href^='#']")].filter(a => document.getElementById(a.getAttribute("href").slice(1))).length,
}));
</script>"#;

/// Renders `html_path` (whose text is `html`): a screenshot with no console messages, then the
/// layout probe's figures against what the HTML holds.
pub fn assert_renders(html_path: &Path, html: &str) {
    let scratch = std::env::temp_dir().join(format!(
        "stampede-chromium-{}-{}",
        std::process::id(),
        html_path.file_stem().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let profile = scratch.join("profile");
    let screenshot = scratch.join("report.png");
    let output = run_chromium(
        &profile,
        &[
            &format!("--screenshot={}", screenshot.display()),
            "--window-size=1000,3000",
            &format!("file://{}", html_path.display()),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let console: Vec<&str> = std::str::from_utf8(&output.stderr)
        .unwrap()
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");

    let probed = scratch.join("probed.html");
    std::fs::write(
        &probed,
        html.replace("</body>", &format!("{LAYOUT_PROBE}</body>")),
    )
    .unwrap();
    let output = run_chromium(
        &profile,
        &["--dump-dom", &format!("file://{}", probed.display())],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let dom = String::from_utf8_lossy(&output.stdout);
    let start = dom.find("data-layout=\"").expect("the probe ran") + "data-layout=\"".len();
    let layout: serde_json::Value = serde_json::from_str(
        &dom[start..start + dom[start..].find('"').unwrap()].replace("&quot;", "\""),
    )
    .unwrap();
    assert_eq!(layout["svgs"], html.matches("<svg").count(), "{layout}");
    assert_eq!(
        layout["lines"],
        html.matches(r#"<polyline class="series""#).count(),
        "{layout}"
    );
    assert_eq!(layout["sections"], html.matches("<h2 id=").count());
    assert_eq!(layout["links"], html.matches(r##"<a href="#"##).count());
    let _ = std::fs::remove_dir_all(&scratch);
}
