//! Terminal output under a byte limit: a command prints 200 MB into a
//! terminal with `outputByteLimit` 1 MiB. Measures throughput and how much
//! this process's peak RSS (VmHWM in /proc/self/status) grows while the
//! `TerminalManager` reads it all. Budget: < 8 MiB of growth.
//!
//! Prints one line `RESULT {json}` on stdout for bench/run.sh. Run with
//! `cargo bench -p acp-client --bench terminal_rss`. Without `--bench` (as in
//! `cargo test --bench terminal_rss`, the smoke run) it prints 2 MB instead, so the smoke
//! run checks that the bench works without timing anything heavy.
//! `ACP_BENCH_TERMINAL_MB` overrides the size.

// Benchmarks may unwrap, like tests (house rule).
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_client::session::update::SessionId;
use acp_client::tools::terminal::{
    TerminalEvent, TerminalManager, TerminalSink, TerminalSpec, DEFAULT_OUTPUT_CAP,
};

const LIMIT: u64 = 1024 * 1024;

/// A `Vm*` field of /proc/self/status, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("/proc/self/status has no {field}"))
}

fn main() {
    let timed = std::env::args().any(|a| a == "--bench");
    let mb: u64 = std::env::var("ACP_BENCH_TERMINAL_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if timed { 200 } else { 2 });
    let bytes = mb * 1_000_000;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // The editor's side of the live display: count what reaches it, keep nothing.
    let streamed = Arc::new(AtomicU64::new(0));
    let counter = streamed.clone();
    let events: TerminalSink = Arc::new(move |event| {
        if let TerminalEvent::Output { data, .. } = event {
            counter.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
    });
    let manager = TerminalManager::new(events, DEFAULT_OUTPUT_CAP);
    let spec = TerminalSpec {
        session_id: SessionId::new("bench"),
        // 80-byte lines, like a chatty build log.
        command: format!(
            "yes 'compiling crate 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRS' | head -c {bytes}"
        ),
        args: Vec::new(),
        env: Vec::new(),
        cwd: std::env::temp_dir(),
        output_byte_limit: Some(LIMIT),
    };

    let hwm_before = status_kib("VmHWM");
    let (elapsed, output, exit, high_water) = rt.block_on(async {
        let start = Instant::now();
        let id = manager.create(spec).await.unwrap();
        // A hang guard, not a measurement.
        let exit = tokio::time::timeout(Duration::from_secs(600), manager.wait_for_exit(&id))
            .await
            .expect("the command finished")
            .unwrap();
        let elapsed = start.elapsed();
        let output = manager.output(&id).await.unwrap();
        let high_water = manager.output_capacity_high_water(&id).unwrap();
        manager.release(&id).await.unwrap();
        (elapsed, output, exit, high_water)
    });
    let hwm_after = status_kib("VmHWM");

    assert_eq!(exit.exit_code, Some(0), "the command failed: {exit:?}");
    assert!(output.output.len() as u64 <= LIMIT);
    assert_eq!(output.truncated, bytes > LIMIT);
    let secs = elapsed.as_secs_f64();
    let result = serde_json::json!({
        "bytes": bytes,
        "limit": LIMIT,
        "seconds": secs,
        "mb_per_s": bytes as f64 / 1e6 / secs,
        "kept_bytes": output.output.len(),
        "streamed_bytes": streamed.load(Ordering::Relaxed),
        "buffer_high_water": high_water,
        "hwm_before_kib": hwm_before,
        "hwm_after_kib": hwm_after,
        "hwm_growth_kib": hwm_after.saturating_sub(hwm_before),
    });
    println!("RESULT {result}");
}
