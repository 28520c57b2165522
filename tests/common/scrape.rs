//! `--metrics-addr` read the way a scraper reads it, without a Prometheus: `/metrics` fetched
//! every 100 ms while a command runs, every answer kept. A command serves its run's final
//! numbers until a scrape has read them, and each ended run (an ibench step) beside the next
//! until then: the last answer holding a series has its final value.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub struct Scrapes {
    /// `127.0.0.1:<port>`, for `--metrics-addr`.
    pub address: String,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<String>>,
}

impl Scrapes {
    pub fn start() -> Scrapes {
        let address = format!("127.0.0.1:{}", super::free_port());
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (address, stop) = (address.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    answers.extend(metrics(&address));
                    std::thread::sleep(Duration::from_millis(100));
                }
                answers
            })
        };
        Scrapes {
            address,
            stop,
            thread,
        }
    }

    /// Every answer, once the command has ended.
    pub fn answers(self) -> Answers {
        self.stop.store(true, Ordering::SeqCst);
        Answers(self.thread.join().unwrap())
    }
}

/// The body of one `GET /metrics`, None when nothing answers.
fn metrics(address: &str) -> Option<String> {
    let answer = get(address, "/metrics")?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// One `GET path` of `address`: the whole answer, head and body; None when nothing answers.
pub fn get(address: &str, path: &str) -> Option<String> {
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

pub struct Answers(pub Vec<String>);

impl Answers {
    /// The last value of the sample `name` whose labels include every one of `labels`.
    pub fn last(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.0
            .iter()
            .rev()
            .find_map(|text| sample(text, name, labels))
    }

    /// `last`, which must be there.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.last(name, labels).unwrap_or_else(|| {
            panic!(
                "no {name} with {labels:?} in {} answers; the last:\n{}",
                self.0.len(),
                self.0.last().map_or("", String::as_str)
            )
        })
    }
}

/// A sample's value in one exposition.
pub fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let (set, value) = match rest.strip_prefix('{') {
            Some(rest) => rest.split_once("} ")?,
            None => ("", rest.strip_prefix(' ')?),
        };
        let wanted = |(key, value): &(&str, &str)| {
            set.split(',')
                .any(|pair| pair == format!("{key}=\"{value}\""))
        };
        labels.iter().all(wanted).then(|| value.parse().ok())?
    })
}
