//! The live page of a lab (`lab run --serve`, `stampede serve RESULTS`): one thread reads the
//! results database once a second (read-only) and renders the page's sections; each browser
//! gets the sections that changed as server-sent events, and when the lab ends the report
//! itself, which the page becomes. Served by `stampede_web` (loopback unless told otherwise,
//! a bearer token required beyond it).

mod html;
mod state;

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::compare::{choose_lab, LoadedLab};
use crate::live::endpoint::TokenArgs;
use crate::report::comparison::Metric;
use crate::report::lab_report::LabReport;
use stampede_base::error::Failure;
use stampede_store::{unix_now, Location, Store};
use stampede_web::{listen, parse_listen_address, Access, Handler, Listening, Request, Response};
use state::PageState;

/// How long an open page is given, at the lab's end, to receive its last state.
pub const PAGE_PATIENCE: Duration = Duration::from_secs(10);
/// How often the results are read.
const REFRESH: Duration = Duration::from_secs(1);
/// An idle event stream sends a comment this often, so that proxies keep it open.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// `stampede serve RESULTS`: the page of a lab others run, until a signal.
pub fn serve(args: &crate::app::cli::ServeArgs) -> crate::app::CommandResult {
    let (address, access) = access(&args.addr, &args.token, "--addr")?;
    let location = Location::parse(&args.results, std::path::Path::new("."));
    let stop = stampede_base::signals::watch_signals();
    let page = LivePage::start(&location, Shown::Named(args.lab.clone()), address, access)?;
    page.serve_until(&stop);
    Ok(())
}

/// Which lab a page shows: one by id (the lab this process runs), one by name, or the newest.
#[derive(Debug, Clone)]
pub enum Shown {
    Id(i64),
    Named(Option<String>),
}

/// The page as last rendered.
#[derive(Default)]
struct Snapshot {
    version: u64,
    lab: String,
    sections: Vec<(String, String)>,
    /// Set once the lab has ended: the report the page becomes.
    report: Option<String>,
}

#[derive(Default)]
struct Shared {
    snapshot: Mutex<Arc<Snapshot>>,
    changed: Condvar,
    /// Per open event stream: the version it has sent.
    streams: Mutex<HashMap<u64, u64>>,
    next_stream: AtomicU64,
    stop: AtomicBool,
}

/// A page being served; serving stops when it is dropped.
pub struct LivePage {
    pub address: std::net::SocketAddr,
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
    _listening: Listening,
}

/// Checks the address and the token before anything runs: a page beyond loopback without a
/// token is refused.
pub fn access(
    address: &str,
    token: &TokenArgs,
    option: &str,
) -> Result<(stampede_web::ListenAddress, Access), Failure> {
    let parsed =
        parse_listen_address(address).map_err(|e| Failure::input(format!("{option} {e}")))?;
    match token.access()? {
        Access::Open if !parsed.is_loopback() => Err(Failure::input(format!(
            "{option} {address} listens beyond this machine: give --serve-token TOKEN (or \
             STAMPEDE_SERVE_TOKEN) so that only those who have it see the page"
        ))),
        access => Ok((parsed, access)),
    }
}

impl LivePage {
    /// Serves the page of `shown` in `results`, saying where on standard error.
    pub fn start(
        results: &Location,
        shown: Shown,
        address: stampede_web::ListenAddress,
        access: Access,
    ) -> Result<LivePage, Failure> {
        let shared = Arc::new(Shared::default());
        // The reader's session lives on its thread (a session is not shared between threads);
        // its first read happens before the page is served.
        let (ready, opened) = std::sync::mpsc::channel();
        let background = shared.clone();
        let location = results.clone();
        let thread = std::thread::Builder::new()
            .name("live-page".into())
            .spawn(move || match Reader::open(&location, shown) {
                Ok(mut reader) => {
                    reader.refresh(&background);
                    let _ = ready.send(Ok(()));
                    reader.run(&background);
                }
                Err(error) => {
                    let _ = ready.send(Err(error));
                }
            })
            .map_err(|e| Failure::run(format!("live page: {e}")))?;
        opened
            .recv()
            .map_err(|_| Failure::run("live page: its reader stopped"))??;
        let handler = Arc::new(PageHandler(shared.clone()));
        let listening = listen(address, access, handler).map_err(|error| {
            shared.stop.store(true, Ordering::SeqCst);
            shared.changed.notify_all();
            Failure::input(error)
        })?;
        eprintln!("stampede: live page at http://{}/", listening.address);
        Ok(LivePage {
            address: listening.address,
            shared,
            reader: Some(thread),
            _listening: listening,
        })
    }

    /// Serves until a signal stops the process (`stampede serve`).
    pub fn serve_until(&self, stop: &AtomicBool) {
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// At the lab's end: reads the results a last time and gives each open page up to
    /// `patience` to receive it (the report, when the lab ended), before serving stops.
    pub fn finish(mut self, patience: Duration) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        if let Some(thread) = self.reader.take() {
            let _ = thread.join();
        }
        let last = self.shared.snapshot.lock().expect("snapshot").version;
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline {
            let streams = self.shared.streams.lock().expect("streams");
            if streams.values().all(|sent| *sent >= last) {
                break;
            }
            drop(streams);
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for LivePage {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        if let Some(thread) = self.reader.take() {
            let _ = thread.join();
        }
    }
}

/// One reading of the results as the page shows it.
struct Rendered {
    lab: String,
    sections: Vec<(String, String)>,
    /// The report, once the lab has ended.
    report: Option<String>,
}

/// The thread that reads the results: its own read-only session.
struct Reader {
    store: Option<Store>,
    shown: Shown,
    location: Location,
    /// The runs the report was last built from (count, newest id), and that report.
    built_from: Option<(usize, i64, usize)>,
    report: Option<LabReport>,
}

impl Reader {
    fn open(location: &Location, shown: Shown) -> Result<Reader, Failure> {
        let mut store = Store::open_read_only(location)?;
        if let Shown::Named(Some(name)) = &shown {
            choose_lab(&mut store, Some(name), location)?;
        }
        Ok(Reader {
            store: Some(store),
            shown,
            location: location.clone(),
            built_from: None,
            report: None,
        })
    }

    fn run(mut self, shared: &Shared) {
        loop {
            let guard = shared.snapshot.lock().expect("snapshot");
            let (_guard, _) = shared
                .changed
                .wait_timeout(guard, REFRESH)
                .expect("snapshot");
            drop(_guard);
            // The last read happens after the stop: the lab's final state.
            let stopping = shared.stop.load(Ordering::SeqCst);
            self.refresh(shared);
            if stopping {
                return;
            }
        }
    }

    /// Reads the results and publishes the sections when they changed; a failed read keeps
    /// the page as it was and says why in its summary.
    fn refresh(&mut self, shared: &Shared) {
        let Rendered {
            lab,
            sections,
            report,
        } = match self.render() {
            Ok(rendered) => rendered,
            Err(error) => {
                let current = shared.snapshot.lock().expect("snapshot").clone();
                let mut sections = current.sections.clone();
                if let Some(summary) = sections.first_mut() {
                    summary.1 = format!(
                        "<p class=\"warning\">Reading the results failed: {}</p>",
                        crate::report::svg::escape(error.message())
                    );
                }
                Rendered {
                    lab: current.lab.clone(),
                    sections,
                    report: None,
                }
            }
        };
        let mut snapshot = shared.snapshot.lock().expect("snapshot");
        if snapshot.sections == sections && snapshot.report.is_some() == report.is_some() {
            return;
        }
        *snapshot = Arc::new(Snapshot {
            version: snapshot.version + 1,
            lab,
            sections,
            report,
        });
        shared.changed.notify_all();
    }

    fn render(&mut self) -> Result<Rendered, Failure> {
        let mut store = self.store.take().expect("the reader's session");
        let chosen = self.lab(&mut store);
        // The report reads through a loaded lab: the session is lent to it and taken back.
        let mut lab = LoadedLab {
            store,
            id: 0,
            name: String::new(),
            runs: Vec::new(),
            excluded: Vec::new(),
        };
        let result = chosen.and_then(|(id, name)| {
            lab.id = id;
            lab.name = name;
            self.render_lab(&mut lab)
        });
        self.store = Some(lab.store);
        result
    }

    fn render_lab(&mut self, lab: &mut LoadedLab) -> Result<Rendered, Failure> {
        let id = lab.id;
        lab.runs = lab.store.lab_runs(id)?;
        let stopped = lab
            .store
            .lab_cells(id)?
            .iter()
            .filter(|c| c.stopped.is_some())
            .count();
        let newest = lab.runs.iter().map(|r| r.id).max().unwrap_or(0);
        let key = (lab.runs.len(), newest, stopped);
        if self.built_from != Some(key) {
            self.report = build_report(lab)?;
            self.built_from = Some(key);
        }
        let state = PageState::read(&mut lab.store, id, &lab.runs, unix_now())?;
        let sections = html::sections(&state, self.report.as_ref());
        let report = state
            .lab
            .ended
            .then(|| self.report.as_ref().map(crate::report::html::to_html))
            .flatten();
        Ok(Rendered {
            lab: lab.name.clone(),
            sections,
            report,
        })
    }

    fn lab(&self, store: &mut Store) -> Result<(i64, String), Failure> {
        match &self.shown {
            Shown::Id(id) => Ok((*id, store.lab_state(*id)?.name)),
            Shown::Named(Some(name)) => choose_lab(store, Some(name), &self.location),
            Shown::Named(None) => super::compare::newest_lab(store, &self.location),
        }
    }
}

/// The report of the runs so far, as `report` makes it (None before any run completed).
fn build_report(lab: &mut LoadedLab) -> Result<Option<LabReport>, Failure> {
    if !lab
        .runs
        .iter()
        .any(|r| r.status == stampede_store::RunStatus::Completed)
    {
        return Ok(None);
    }
    lab.store.attach_statements(lab.id, &mut lab.runs)?;
    let metric = Metric::parse("tps", &crate::family::workload_metrics())?;
    super::report::build(lab, None, metric, &[]).map(Some)
}

struct PageHandler(Arc<Shared>);

impl Handler for PageHandler {
    fn handle(&self, request: &Request) -> Response {
        let snapshot = self.0.snapshot.lock().expect("snapshot").clone();
        match request.path.as_str() {
            "/" | "/index.html" => match &snapshot.report {
                Some(report) => html_response(report.clone()),
                None => html_response(html::page(&snapshot.lab, &snapshot.sections)),
            },
            "/report" => match &snapshot.report {
                Some(report) => html_response(report.clone()),
                None => Response::text(404, "the lab has not ended: its report comes at its end\n"),
            },
            "/events" => self.events(snapshot),
            _ => Response::text(404, "not found: the page is at /\n"),
        }
    }
}

fn html_response(html: String) -> Response {
    Response::new(200, "text/html; charset=utf-8", html)
        .with_header("Cache-Control", "no-store")
        .with_header(
            "Content-Security-Policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             img-src data:; connect-src 'self'",
        )
}

impl PageHandler {
    /// The sections as they change, from what this page was served with on.
    fn events(&self, first: Arc<Snapshot>) -> Response {
        let shared = self.0.clone();
        let stream = shared.next_stream.fetch_add(1, Ordering::SeqCst);
        shared.streams.lock().expect("streams").insert(stream, 0);
        Response::events(Box::new(move |out: &mut dyn Write| {
            let result = stream_events(&shared, stream, first, out);
            shared.streams.lock().expect("streams").remove(&stream);
            result
        }))
    }
}

/// Writes each new version's changed sections (all of them first), the report at the end.
fn stream_events(
    shared: &Shared,
    stream: u64,
    first: Arc<Snapshot>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut sent: Option<Arc<Snapshot>> = None;
    let mut next = first;
    loop {
        write_event(out, sent.as_deref(), &next)?;
        shared
            .streams
            .lock()
            .expect("streams")
            .insert(stream, next.version);
        if next.report.is_some() {
            return Ok(());
        }
        sent = Some(next.clone());
        let mut guard = shared.snapshot.lock().expect("snapshot");
        loop {
            if guard.version != next.version {
                next = guard.clone();
                break;
            }
            if shared.stop.load(Ordering::SeqCst) && guard.report.is_none() {
                // The lab is over without a report (interrupted): the page stays as it is.
                let (done, _) = shared
                    .changed
                    .wait_timeout(guard, Duration::from_millis(200))
                    .expect("snapshot");
                guard = done;
                if guard.version == next.version {
                    return Ok(());
                }
                continue;
            }
            let (woken, timeout) = shared
                .changed
                .wait_timeout(guard, KEEPALIVE)
                .expect("snapshot");
            guard = woken;
            if timeout.timed_out() && guard.version == next.version {
                drop(guard);
                out.write_all(b": still here\n\n")?;
                out.flush()?;
                guard = shared.snapshot.lock().expect("snapshot");
            }
        }
    }
}

/// One event: the sections that differ from the last sent (every one the first time), or the
/// report.
fn write_event(
    out: &mut dyn Write,
    sent: Option<&Snapshot>,
    next: &Snapshot,
) -> std::io::Result<()> {
    let sections: serde_json::Map<String, serde_json::Value> = next
        .sections
        .iter()
        .filter(|(id, html)| {
            sent.is_none_or(|s| !s.sections.iter().any(|(i, h)| i == id && h == html))
        })
        .map(|(id, html)| (id.clone(), serde_json::Value::String(html.clone())))
        .collect();
    let mut message = serde_json::json!({ "version": next.version, "sections": sections });
    if let Some(report) = &next.report {
        message["report"] = serde_json::Value::String(report.clone());
    }
    out.write_all(format!("data: {message}\n\n").as_bytes())?;
    out.flush()
}
