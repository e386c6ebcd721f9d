//! Downloads for the registry: the index and binary archives, over HTTP(S)
//! or from local files (`file://` URLs and plain paths, used by tests and
//! by users who mirror the registry).

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::cancel::CancelToken;
use crate::error::{Error, Result};

/// How long one read may stall before a download fails (a server that
/// stopped sending). The whole download has no limit: the user cancels it.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The HTTP client; with `https_only`, a plain http:// URL (also one a
/// redirect leads to) is an error.
fn agent(https_only: bool) -> &'static ureq::Agent {
    static AGENT: OnceLock<ureq::Agent> = OnceLock::new();
    static STRICT: OnceLock<ureq::Agent> = OnceLock::new();
    let cell = if https_only { &STRICT } else { &AGENT };
    cell.get_or_init(|| {
        ureq::Agent::config_builder()
            .https_only(https_only)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_recv_response(Some(READ_TIMEOUT))
            .timeout_per_read(Some(READ_TIMEOUT))
            .user_agent(concat!("acp-client/", env!("CARGO_PKG_VERSION")))
            .build()
            .into()
    })
}

/// A local path when `url` names a file.
fn local_path(url: &str) -> Option<&Path> {
    if let Some(rest) = url.strip_prefix("file://") {
        return Some(Path::new(rest));
    }
    (url.starts_with('/')).then(|| Path::new(url))
}

/// The body of `url` and its announced length.
fn open(url: &str, https_only: bool) -> Result<(Box<dyn Read + Send>, Option<u64>)> {
    if https_only && !url.starts_with("https://") {
        return Err(Error::Registry(format!("`{url}` is not an https:// URL")));
    }
    if let Some(path) = local_path(url) {
        let file = File::open(path)
            .map_err(|e| Error::Registry(format!("could not read {}: {e}", path.display())))?;
        let len = file.metadata().ok().map(|m| m.len());
        return Ok((Box::new(file), len));
    }
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(Error::Registry(format!(
            "`{url}` is not an http(s):// or file:// URL"
        )));
    }
    let response = agent(https_only).get(url).call().map_err(|e| match e {
        ureq::Error::StatusCode(code) => {
            Error::Registry(format!("{url} answered with HTTP status {code}"))
        }
        e => Error::Registry(format!("could not download {url}: {e}")),
    })?;
    let len = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    Ok((Box::new(response.into_body().into_reader()), len))
}

/// The whole body of `url`, at most `limit` bytes. Any scheme: the index
/// URL is the user's choice.
pub fn fetch_bytes(url: &str, limit: u64) -> Result<Vec<u8>> {
    let (reader, _) = open(url, false)?;
    let mut bytes = Vec::new();
    reader
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Registry(format!("could not download {url}: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(Error::Registry(format!(
            "{url} is larger than {limit} bytes; it is not an agent registry"
        )));
    }
    Ok(bytes)
}

/// What a finished download checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// Bytes written.
    pub bytes: u64,
    /// Hex SHA-256 of them.
    pub sha256: String,
}

/// Downloads `url` into `dest`, calling `progress(done, total)` as bytes
/// arrive. Fails when the body is shorter or longer than announced (a cut
/// connection), and stops soon after `cancel` is set. With `https_only`,
/// anything but an https:// URL (and redirect) is refused.
pub fn download(
    url: &str,
    https_only: bool,
    dest: &Path,
    cancel: &CancelToken,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Downloaded> {
    let (mut reader, total) = open(url, https_only)?;
    let mut file = File::create(dest)
        .map_err(|e| Error::Registry(format!("could not create {}: {e}", dest.display())))?;
    let mut hash = Sha256::new();
    let mut done = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    progress(0, total);
    loop {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(Error::Registry(format!(
                    "the download of {url} broke off after {done} bytes: {e}"
                )))
            }
        };
        file.write_all(&buf[..n])
            .map_err(|e| Error::Registry(format!("could not write {}: {e}", dest.display())))?;
        hash.update(&buf[..n]);
        done += n as u64;
        progress(done, total);
    }
    file.sync_all()
        .map_err(|e| Error::Registry(format!("could not write {}: {e}", dest.display())))?;
    if let Some(total) = total {
        if done != total {
            return Err(Error::Registry(format!(
                "the download of {url} is incomplete ({done} of {total} bytes); try again"
            )));
        }
    }
    Ok(Downloaded {
        bytes: done,
        sha256: hex(&hash.finalize()),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn local_files_download_with_their_hash() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::write(&src, b"abc").unwrap();
        let dest = dir.path().join("dest");
        let mut seen = Vec::new();
        let d = download(
            &format!("file://{}", src.display()),
            false,
            &dest,
            &CancelToken::new(),
            &mut |done, total| seen.push((done, total)),
        )
        .unwrap();
        assert_eq!(d.bytes, 3);
        assert_eq!(
            d.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(seen.last(), Some(&(3, Some(3))));
        assert_eq!(std::fs::read(&dest).unwrap(), b"abc");
    }

    #[test]
    fn other_schemes_are_refused() {
        let e = fetch_bytes("ftp://x/y", 10).unwrap_err();
        assert!(e.to_string().contains("not an http(s)://"), "{e}");
    }
}
