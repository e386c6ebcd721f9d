//! What saving a chat's checkpoints after each turn costs when they are at
//! their bound (64 MiB): the backend clones the store, encodes it to JSON
//! and writes the whole file atomically after every turn (acp-nvim's
//! rewind::save). Also reading it back (a reopened session).
//!
//! `cargo bench -p acp-client --bench checkpoints`

use std::path::Path;
use std::time::SystemTime;

use acp_client::edits::checkpoint::{Checkpoints, TOTAL_MAX_BYTES};
use acp_client::path::CanonicalPath;
use criterion::{criterion_group, criterion_main, Criterion};

/// A store of `turns` turns, each with one file of `file_bytes` (text with
/// newlines and a few characters JSON escapes).
fn store(turns: usize, file_bytes: usize) -> Checkpoints {
    let line = "fn main() { println!(\"hello\\tworld\"); }\n";
    let text: String = line.repeat(file_bytes / line.len() + 1)[..file_bytes].to_owned();
    let mut c = Checkpoints::new();
    for i in 0..turns {
        let turn = c.begin_turn(&format!("turn {i}"), SystemTime::now());
        let path = CanonicalPath::resolve(Path::new(&format!("/w/src/file{i}.rs")))
            .expect("a path under a missing directory resolves as written");
        c.touch(&path, Some(&text), Some(&text));
        c.end_turn(turn);
    }
    c
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.checkpoints.json");
    let mut group = c.benchmark_group("checkpoints");
    group.sample_size(10);
    // Each turn keeps a before and an after text: 31 turns of 1 MiB files
    // fill the 64 MiB bound.
    let full = store(31, 1024 * 1024);
    let small = store(8, 16 * 1024);
    for (name, s) in [("full_64MiB", &full), ("small_256KiB", &small)] {
        group.bench_function(format!("save_{name}"), |b| {
            b.iter(|| {
                let json = s.clone().to_json();
                rt.block_on(acp_client::edits::fs::write_text_file_atomic(&path, &json))
                    .expect("write");
            })
        });
    }
    let json = full.to_json();
    eprintln!(
        "full store: {} bytes of JSON (bound {} bytes of text)",
        json.len(),
        TOTAL_MAX_BYTES
    );
    group.bench_function("load_full_64MiB", |b| {
        b.iter(|| Checkpoints::from_json(&json).expect("read"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
