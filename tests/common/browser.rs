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

/// A headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
/// JSON messages ended by NUL on file descriptors 3 and 4, which a shell maps to the child's
/// standard input and output), for pages that change while they are open: a test evaluates
/// script in the page and takes screenshots as it goes.
pub struct Browser {
    child: std::process::Child,
    commands: std::process::ChildStdin,
    replies: std::process::ChildStdout,
    pending: Vec<u8>,
    next_id: u64,
    profile: PathBuf,
}

/// A page open in the browser (its DevTools session).
pub struct Tab {
    session: String,
}

impl Browser {
    pub fn start() -> Browser {
        use std::process::{Command, Stdio};
        let profile = std::env::temp_dir().join(format!(
            "stampede-cdp-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&profile);
        let line = format!(
            "exec '{}' --headless --no-sandbox --disable-gpu --remote-debugging-pipe \
             --window-size=1000,1400 --user-data-dir='{}' about:blank \
             3<&0 4>&1 0</dev/null 1>/dev/null 2>/dev/null",
            chromium().display(),
            profile.display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &line])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        Browser {
            commands: child.stdin.take().unwrap(),
            replies: child.stdout.take().unwrap(),
            child,
            pending: Vec::new(),
            next_id: 0,
            profile,
        }
    }

    /// Sends a command and returns its result, skipping the events that come between.
    fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        use std::io::{Read, Write};
        self.next_id += 1;
        let mut message =
            serde_json::json!({"id": self.next_id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.commands.write_all(&bytes).unwrap();
        self.commands.flush().unwrap();
        loop {
            while let Some(end) = self.pending.iter().position(|b| *b == 0) {
                let reply: serde_json::Value =
                    serde_json::from_slice(&self.pending[..end]).unwrap();
                self.pending.drain(..=end);
                if reply["id"] == self.next_id {
                    assert!(reply.get("error").is_none(), "{method}: {reply}");
                    return reply["result"].clone();
                }
            }
            let mut buffer = [0u8; 65536];
            let n = self.replies.read(&mut buffer).unwrap();
            assert!(n > 0, "chromium went away during {method}");
            self.pending.extend_from_slice(&buffer[..n]);
        }
    }

    pub fn open(&mut self, url: &str) -> Tab {
        let target = self.call(None, "Target.createTarget", serde_json::json!({"url": url}));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            serde_json::json!({"targetId": target["targetId"], "flatten": true}),
        );
        Tab {
            session: attached["sessionId"].as_str().unwrap().to_string(),
        }
    }

    /// The value of a script expression in the page (JSON-serialisable).
    pub fn eval(&mut self, tab: &Tab, expression: &str) -> serde_json::Value {
        let result = self.call(
            Some(&tab.session),
            "Runtime.evaluate",
            serde_json::json!({"expression": expression, "returnByValue": true}),
        );
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Polls `expression` until it is true (180 s at most).
    pub fn wait_for(&mut self, tab: &Tab, what: &str, expression: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
        while self.eval(tab, expression) != serde_json::Value::Bool(true) {
            assert!(std::time::Instant::now() < deadline, "timed out: {what}");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// Writes a PNG of the page as it is now.
    pub fn screenshot(&mut self, tab: &Tab, path: &Path) {
        let shot = self.call(
            Some(&tab.session),
            "Page.captureScreenshot",
            serde_json::json!({"format": "png", "captureBeyondViewport": true}),
        );
        let png = base64_decode(shot["data"].as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Standard base64 (the screenshots' encoding), padding ignored.
fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut bits, mut count) = (0u32, 0);
    for byte in text.bytes().filter(|b| *b != b'=') {
        let value = ALPHABET.iter().position(|a| *a == byte).expect("base64") as u32;
        bits = (bits << 6) | value;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}
