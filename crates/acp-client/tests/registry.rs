//! The agent registry, offline: a registry fixture (tests/registry/fixture.json)
//! whose artifacts are made here and served by a loopback HTTP server or
//! read from files. Each installed agent is the scripted fake agent,
//! packaged three ways (a binary in a .tar.gz, a node shim in an `npm
//! pack` tarball, a Python console script in a hand-written wheel), and
//! runs a real turn. Nothing here reaches the internet: npm's registry is
//! pointed at a closed loopback port and pip has no index.
//!
//! The npm and virtualenv cases need `npm` and `python3 -m venv`; without
//! them they print why they are skipped, and fail instead when
//! `ACP_TEST_REQUIRE_TOOLS` is set (CI sets it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

#[path = "registry/failures.rs"]
mod failures;
#[path = "registry/index.rs"]
mod index;
#[path = "registry/install.rs"]
mod install;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use acp_client::agents::registry::install::{
    CancelToken, InstallOptions, InstalledAgent, Installer,
};
use acp_client::agents::registry::{self, Registry};
use acp_client::{AgentCommand, Connection, ConnectionOptions, SessionParams};
use sha2::{Digest, Sha256};
use support::*;

// ---------------------------------------------------------------- server

#[derive(Clone)]
enum Route {
    /// The bytes, at once.
    Body(Arc<Vec<u8>>),
    /// The bytes announced in full, sent 1 KiB at a time until the client
    /// goes away.
    Trickle(Arc<Vec<u8>>),
}

/// A loopback HTTP/1.1 server with a route table the test can change.
struct Server {
    addr: SocketAddr,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    hits: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let hits: Arc<Mutex<Vec<String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (r, h, s) = (routes.clone(), hits.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (r, h, s) = (r.clone(), h.clone(), s.clone());
                std::thread::spawn(move || serve(conn, &r, &h, &s));
            }
        });
        Server {
            addr,
            routes,
            hits,
            stop,
        }
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn route(&self, path: &str, route: Route) {
        self.routes.lock().unwrap().insert(path.to_owned(), route);
    }

    fn hits(&self, path: &str) -> usize {
        self.hits
            .lock()
            .unwrap()
            .iter()
            .filter(|p| *p == path)
            .count()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees `stop` and closes the port.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(
    mut conn: TcpStream,
    routes: &Mutex<HashMap<String, Route>>,
    hits: &Mutex<Vec<String>>,
    stop: &AtomicBool,
) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_owned();
    hits.lock().unwrap().push(path.clone());
    let route = routes.lock().unwrap().get(&path).cloned();
    let header = |len: usize| {
        format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n")
    };
    match route {
        None => {
            let _ = conn.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
        Some(Route::Body(body)) => {
            let _ = conn.write_all(header(body.len()).as_bytes());
            let _ = conn.write_all(&body);
        }
        Some(Route::Trickle(body)) => {
            let _ = conn.write_all(header(body.len()).as_bytes());
            for chunk in body.chunks(1024) {
                if stop.load(Ordering::SeqCst) || conn.write_all(chunk).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

// ------------------------------------------------------------- artifacts

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// A tar entry written by hand: the tar crate refuses `..` names.
fn raw_tar(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data, mode) in entries {
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

/// The fake agent binary as `bin/acp-fake-agent` in a .tar.gz (made once).
fn fake_agent_archive() -> Arc<Vec<u8>> {
    static ARCHIVE: OnceLock<Arc<Vec<u8>>> = OnceLock::new();
    ARCHIVE
        .get_or_init(|| {
            let bin = std::fs::read(acp_testkit::fake_agent_bin()).unwrap();
            Arc::new(gzip(&raw_tar(&[("bin/acp-fake-agent", &bin, 0o755)])))
        })
        .clone()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// True when `program args...` runs and succeeds.
fn works(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether a tool-dependent case can run; prints why not, or panics when
/// the tools are required.
fn tool_available(what: &str, ok: bool) -> bool {
    if !ok {
        let reason = format!("{what} is not available on this machine");
        if std::env::var_os("ACP_TEST_REQUIRE_TOOLS").is_some() {
            panic!("{reason}, and ACP_TEST_REQUIRE_TOOLS is set");
        }
        println!("SKIPPED: {reason}");
        eprintln!("SKIPPED: {reason}");
    }
    ok
}

/// `npm pack` of a tiny package whose executable runs the fake agent.
fn npm_package(dir: &Path) -> PathBuf {
    let src = dir.join("npm-src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("package.json"),
        r#"{"name": "tiny-acp-agent", "version": "1.0.0", "bin": {"tiny-acp-agent": "bin.js"}}"#,
    )
    .unwrap();
    let agent = acp_testkit::fake_agent_bin();
    std::fs::write(
        src.join("bin.js"),
        format!(
            "#!/usr/bin/env node\n\
             // A node shim, as npm-distributed agents are: runs the fake agent on this stdio.\n\
             const {{ spawnSync }} = require('child_process');\n\
             const r = spawnSync({:?}, process.argv.slice(2), {{ stdio: 'inherit' }});\n\
             process.exit(r.status === null ? 1 : r.status);\n",
            agent.display().to_string()
        ),
    )
    .unwrap();
    let out = Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(dir)
        .current_dir(&src)
        .envs(npm_env(dir))
        .output()
        .unwrap();
    assert!(out.status.success(), "npm pack: {out:?}");
    let tgz = dir.join("tiny-acp-agent-1.0.0.tgz");
    assert!(tgz.is_file(), "npm pack made no {}", tgz.display());
    tgz
}

/// A wheel written by hand (a zip with the dist-info files): a console
/// script that execs the fake agent.
fn wheel(dir: &Path) -> PathBuf {
    let agent = acp_testkit::fake_agent_bin();
    let path = dir.join("tiny_acp_agent-1.0.0-py3-none-any.whl");
    let files = [
        (
            "tiny_acp_agent/__init__.py".to_owned(),
            format!(
                "import os, sys\n\ndef main():\n    agent = {:?}\n    os.execv(agent, [agent] + sys.argv[1:])\n",
                agent.display().to_string()
            ),
        ),
        (
            "tiny_acp_agent-1.0.0.dist-info/METADATA".to_owned(),
            "Metadata-Version: 2.1\nName: tiny-acp-agent\nVersion: 1.0.0\n".to_owned(),
        ),
        (
            "tiny_acp_agent-1.0.0.dist-info/WHEEL".to_owned(),
            "Wheel-Version: 1.0\nGenerator: acp-client-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
                .to_owned(),
        ),
        (
            "tiny_acp_agent-1.0.0.dist-info/entry_points.txt".to_owned(),
            "[console_scripts]\ntiny-acp-agent = tiny_acp_agent:main\n".to_owned(),
        ),
    ];
    let mut w = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    let mut record = String::new();
    for (name, text) in &files {
        w.start_file(name.as_str(), opts).unwrap();
        w.write_all(text.as_bytes()).unwrap();
        record.push_str(&format!("{name},,\n"));
    }
    record.push_str("tiny_acp_agent-1.0.0.dist-info/RECORD,,\n");
    w.start_file("tiny_acp_agent-1.0.0.dist-info/RECORD", opts)
        .unwrap();
    w.write_all(record.as_bytes()).unwrap();
    w.finish().unwrap();
    path
}

/// npm may not reach any registry: it points at a closed loopback port.
fn npm_env(dir: &Path) -> Vec<(String, String)> {
    vec![
        ("npm_config_registry".into(), "http://127.0.0.1:9/".into()),
        (
            "npm_config_cache".into(),
            dir.join("npm-cache").display().to_string(),
        ),
        ("npm_config_update_notifier".into(), "false".into()),
        ("PIP_NO_INDEX".into(), "1".into()),
        ("UV_OFFLINE".into(), "1".into()),
        ("UV_NO_INDEX".into(), "1".into()),
        ("UV_PYTHON_DOWNLOADS".into(), "never".into()),
        (
            "UV_CACHE_DIR".into(),
            dir.join("uv-cache").display().to_string(),
        ),
        ("PIP_DISABLE_PIP_VERSION_CHECK".into(), "1".into()),
    ]
}

// --------------------------------------------------------------- fixture

struct Fixture {
    server: Server,
    dir: tempfile::TempDir,
    scenario: PathBuf,
    npm_tgz: PathBuf,
    wheel: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let server = Server::start();
        let dir = tempfile::tempdir().unwrap();
        let scenario = acp_testkit::write_scenario(
            dir.path(),
            &serde_json::json!({"turns": [{"steps": [{"type": "text", "text": "hello from the fake agent"}]}]}),
        );
        let archive = fake_agent_archive();
        for v in ["1.0.0", "1.1.0"] {
            server.route(
                &format!("/fake-agent-{v}.tar.gz"),
                Route::Body(archive.clone()),
            );
        }
        let corrupt = gzip(&raw_tar(&[("agent", &[7u8; 100_000], 0o755)]));
        server.route(
            "/corrupt.tar.gz",
            Route::Body(Arc::new(corrupt[..corrupt.len() / 2].to_vec())),
        );
        server.route(
            "/climbing.tar.gz",
            Route::Body(Arc::new(gzip(&raw_tar(&[
                ("agent", b"#!/bin/sh\n", 0o755),
                ("../../escaped", b"pwned", 0o644),
            ])))),
        );
        server.route("/slow.tar.gz", Route::Trickle(archive.clone()));
        let npm_tgz = dir.path().join("tiny-acp-agent-1.0.0.tgz");
        let wheel = dir.path().join("tiny_acp_agent-1.0.0-py3-none-any.whl");
        Fixture {
            server,
            dir,
            scenario,
            npm_tgz,
            wheel,
        }
    }

    /// The fixture with the binary agent at `bin_version`.
    fn registry_json(&self, bin_version: &str) -> String {
        let archive = fake_agent_archive();
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/registry/fixture.json"
        ))
        .unwrap()
        .replace("{{BIN_VERSION}}", bin_version)
        .replace("{{PLATFORM}}", registry::current_platform().unwrap())
        .replace("{{BASE}}", &self.server.base())
        .replace("{{SCENARIO}}", &self.scenario.display().to_string())
        .replace("{{BIN_SHA256}}", &sha256_hex(&archive))
        .replace("{{BIN_SIZE}}", &archive.len().to_string())
        .replace("{{NPM_TGZ}}", &self.npm_tgz.display().to_string())
        .replace("{{WHEEL}}", &self.wheel.display().to_string())
        .replace(
            "{{NPM_MISSING}}",
            &self
                .dir
                .path()
                .join("missing-1.0.0.tgz")
                .display()
                .to_string(),
        )
    }

    fn registry(&self, bin_version: &str) -> Registry {
        Registry::parse(self.registry_json(bin_version).as_bytes()).unwrap()
    }

    fn installer(&self) -> Installer {
        self.installer_on(None)
    }

    /// An installer that finds its tools on `path` (the process's PATH
    /// when `None`).
    fn installer_on(&self, path: Option<std::ffi::OsString>) -> Installer {
        Installer::new(
            self.dir.path().join("agents"),
            InstallOptions {
                env: npm_env(self.dir.path()),
                path,
                // The fixture's own index is served over plain http, and
                // some of its entries have no checksum (the user agreed).
                insecure_urls: true,
                allow_unverified: true,
                ..InstallOptions::default()
            },
        )
    }

    fn install(&self, registry: &Registry, id: &str) -> acp_client::Result<InstalledAgent> {
        self.install_with(&self.installer(), registry, id)
    }

    fn install_with(
        &self,
        installer: &Installer,
        registry: &Registry,
        id: &str,
    ) -> acp_client::Result<InstalledAgent> {
        let mut steps = Vec::new();
        let result =
            installer.install(registry.agent(id).unwrap(), &CancelToken::new(), &mut |p| {
                steps.push(p.message)
            });
        if result.is_ok() {
            assert!(!steps.is_empty(), "an install reports progress");
        }
        result
    }

    /// The agent's directory holds nothing but `installed.json` and its
    /// installed version (no temporaries, no other versions).
    fn assert_clean(&self, id: &str, version: Option<&str>) {
        let dir = self.dir.path().join("agents").join(id);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        let mut expected: Vec<String> = match version {
            Some(v) => vec!["installed.json".into(), v.into()],
            None => vec![],
        };
        expected.sort();
        assert_eq!(names, expected, "contents of {}", dir.display());
    }
}

/// Starts the installed agent, runs one turn, returns what it said.
fn run_turn(installed: &InstalledAgent, scenario: &Path, cwd: &Path) -> String {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut cmd = AgentCommand::new(installed.cmd[0].clone())
            .args(installed.cmd[1..].iter().cloned())
            .cwd(cwd);
        if !installed.env.contains_key("ACP_FAKE_SCENARIO") {
            cmd = cmd.env("ACP_FAKE_SCENARIO", scenario.display().to_string());
        }
        for (k, v) in &installed.env {
            cmd = cmd.env(k.clone(), v.clone());
        }
        let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
        let conn = Connection::spawn(&cmd, host, ConnectionOptions::default()).unwrap();
        tokio::time::timeout(WAIT * 3, conn.initialize())
            .await
            .expect("initialize timed out")
            .unwrap();
        let sid = conn
            .new_session(SessionParams::new(cwd))
            .await
            .unwrap()
            .session_id;
        let stop = tokio::time::timeout(WAIT * 3, conn.prompt(&sid, vec![text("hi")]))
            .await
            .expect("turn timed out")
            .unwrap();
        assert_eq!(stop.as_str(), "end_turn");
        let said = agent_text(&conn, &sid);
        conn.shutdown().await;
        said
    })
}
