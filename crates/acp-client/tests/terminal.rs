//! Client-side terminals against real processes: command forms, merged
//! output, environment, truncation, exit statuses, killing process trees,
//! release, concurrency, bounded memory under floods, coalesced events.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use acp_client::session::update::SessionId;
use acp_client::tools::terminal::{
    TerminalEvent, TerminalExit, TerminalId, TerminalManager, TerminalOutput, TerminalSink,
    TerminalSpec, DEFAULT_OUTPUT_CAP, DEFAULT_OUTPUT_LIMIT, MAX_TERMINALS_PER_SESSION,
};
use acp_client::Error;
use tokio::sync::mpsc;

/// Hang guard only: every awaited thing here finishes in well under a second
/// on a healthy machine.
const HANG_GUARD: Duration = Duration::from_secs(60);

async fn guard<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(HANG_GUARD, future)
        .await
        .unwrap_or_else(|_| panic!("hang guard: {what} did not finish"))
}

fn manager_with_cap(cap: usize) -> (TerminalManager, mpsc::UnboundedReceiver<TerminalEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let sink: TerminalSink = Arc::new(move |event| {
        let _ = tx.send(event);
    });
    (TerminalManager::new(sink, cap), rx)
}

fn manager() -> (TerminalManager, mpsc::UnboundedReceiver<TerminalEvent>) {
    manager_with_cap(DEFAULT_OUTPUT_CAP)
}

fn session(name: &str) -> SessionId {
    SessionId::new(name)
}

fn spec(command: &str, args: &[&str]) -> TerminalSpec {
    TerminalSpec {
        session_id: session("s1"),
        command: command.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: Vec::new(),
        cwd: std::env::temp_dir(),
        output_byte_limit: None,
    }
}

/// Creates the terminal, waits for its exit and returns its output.
async fn run(manager: &TerminalManager, spec: TerminalSpec) -> (TerminalId, TerminalOutput) {
    let id = manager.create(spec).await.expect("create terminal");
    guard("wait_for_exit", manager.wait_for_exit(&id))
        .await
        .expect("wait for exit");
    let output = manager.output(&id).await.expect("read output");
    (id, output)
}

fn exited_with(code: u32) -> Option<TerminalExit> {
    Some(TerminalExit {
        exit_code: Some(code),
        signal: None,
    })
}

/// Waits for an Output event of `id` and returns its text with everything
/// that came before it for that terminal.
async fn first_line(
    events: &mut mpsc::UnboundedReceiver<TerminalEvent>,
    id: &TerminalId,
) -> String {
    let mut text = String::new();
    while !text.contains('\n') {
        match guard("output event", events.recv()).await {
            Some(TerminalEvent::Output {
                terminal_id, data, ..
            }) if &terminal_id == id => text.push_str(&data),
            Some(_) => {}
            None => panic!("event channel closed"),
        }
    }
    text
}

fn pid_of(text: &str) -> libc::pid_t {
    text.trim().parse().expect("a pid on the first line")
}

/// True when `pid` no longer runs (gone, or a zombie nobody reaped yet:
/// containers often have a pid 1 that does not reap orphans).
fn is_gone(pid: libc::pid_t) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) if Path::new("/proc/self/stat").exists() => true,
        // No procfs (macOS): ask the kernel whether the pid exists.
        // SAFETY: signal 0 only checks for existence.
        Err(_) => (unsafe { libc::kill(pid, 0) }) == -1,
    }
}

async fn wait_until_gone(pid: libc::pid_t) {
    guard("process exit", async {
        while !is_gone(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn command_line_without_args_runs_through_the_shell() {
    let (manager, _events) = manager();
    let (_, out) = run(&manager, spec("echo hi", &[])).await;
    assert_eq!(out.output, "hi\n");
    assert!(!out.truncated);
    assert_eq!(out.exit_status, exited_with(0));
}

#[tokio::test]
async fn the_editor_hears_the_command_line_before_any_output() {
    let (manager, mut events) = manager();
    let (id, _) = run(&manager, spec("printf", &["%s|", "a b", "it's", "-x"])).await;
    match guard("first event", events.recv()).await {
        Some(TerminalEvent::Started {
            terminal_id,
            command,
            ..
        }) => {
            assert_eq!(terminal_id, id);
            // Arguments with spaces or quotes are quoted as a shell would
            // need them, so the line the user reads is the one that ran.
            assert_eq!(command, r"printf '%s|' 'a b' 'it'\''s' -x");
        }
        other => panic!("expected the started event first, got {other:?}"),
    }
}

#[tokio::test]
async fn command_with_args_is_executed_directly() {
    let (manager, _events) = manager();
    // Through a shell, `a b` would be split and `$HOME` expanded.
    let (_, out) = run(&manager, spec("printf", &["%s|%s\n", "a b", "$HOME"])).await;
    assert_eq!(out.output, "a b|$HOME\n");
}

#[tokio::test]
async fn stdout_and_stderr_are_merged_in_order() {
    let (manager, _events) = manager();
    let (_, out) = run(&manager, spec("echo a; echo b >&2; echo c", &[])).await;
    assert_eq!(out.output, "a\nb\nc\n");
}

#[tokio::test]
async fn env_overlays_the_inherited_environment_and_disables_pagers() {
    let (manager, _events) = manager();
    let script = r#"printf '%s|%s|%s|%s\n' "$FOO" "$PAGER" "$GIT_PAGER" "${PATH:+inherited}""#;
    let mut with_env = spec("sh", &["-c", script]);
    with_env.env = vec![("FOO".to_owned(), "bar baz".to_owned())];
    let (_, out) = run(&manager, with_env).await;
    assert_eq!(out.output, "bar baz|cat|cat|inherited\n");

    let mut own_pager = spec("sh", &["-c", script]);
    own_pager.env = vec![("PAGER".to_owned(), "less".to_owned())];
    let (_, out) = run(&manager, own_pager).await;
    assert_eq!(out.output, "|less|cat|inherited\n");
}

#[tokio::test]
async fn bad_env_names_are_rejected() {
    let (manager, _events) = manager();
    let mut bad = spec("true", &[]);
    bad.env = vec![("A=B".to_owned(), "x".to_owned())];
    let err = manager.create(bad).await.expect_err("invalid env name");
    assert!(matches!(err, Error::InvalidParams(_)), "{err:?}");
}

#[tokio::test]
async fn cwd_is_applied() {
    let (manager, _events) = manager();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut in_dir = spec("sh", &["-c", "pwd -P"]);
    in_dir.cwd = dir.path().to_path_buf();
    let (_, out) = run(&manager, in_dir).await;
    let expected: PathBuf = dir.path().canonicalize().expect("canonical tempdir");
    assert_eq!(out.output, format!("{}\n", expected.display()));
}

#[tokio::test]
async fn stdin_is_dev_null() {
    let (manager, _events) = manager();
    // `cat` would wait forever on an open stdin.
    let (_, out) = run(&manager, spec("cat", &[])).await;
    assert_eq!(out.output, "");
    assert_eq!(out.exit_status, exited_with(0));
}

#[tokio::test]
async fn missing_program_is_a_spawn_error_naming_it() {
    let (manager, _events) = manager();
    let err = manager
        .create(spec("acp-no-such-program-xyz", &["arg"]))
        .await
        .expect_err("spawn must fail");
    assert!(matches!(err, Error::TerminalSpawn { .. }), "{err:?}");
    assert!(err.to_string().contains("acp-no-such-program-xyz"), "{err}");
}

#[tokio::test]
async fn truncation_keeps_the_tail_at_a_character_boundary() {
    let (manager, _events) = manager();
    let script = "i=0; while [ $i -lt 1000 ]; do printf 'é'; i=$((i+1)); done";
    let mut flood = spec("sh", &["-c", script]);
    flood.output_byte_limit = Some(101);
    let (_, out) = run(&manager, flood).await;
    // 2000 bytes; the newest 101 start inside an 'é', which is skipped.
    assert_eq!(out.output, "é".repeat(50));
    assert!(out.truncated);
}

#[tokio::test]
async fn truncation_keeps_the_newest_lines() {
    let (manager, _events) = manager();
    let mut lines = spec(
        "sh",
        &["-c", "for i in 1 2 3 4 5 6 7 8 9; do echo line$i; done"],
    );
    lines.output_byte_limit = Some(11);
    let (_, out) = run(&manager, lines).await;
    assert_eq!(out.output, "ine8\nline9\n");
    assert!(out.truncated);
}

#[tokio::test]
async fn invalid_utf8_is_replaced_not_an_error() {
    let (manager, _events) = manager();
    let (_, out) = run(&manager, spec("printf", &["a\\377b"])).await;
    assert_eq!(out.output, "a\u{FFFD}b");
}

#[tokio::test]
async fn exit_code_is_reported() {
    let (manager, _events) = manager();
    let (_, out) = run(&manager, spec("echo out; exit 3", &[])).await;
    assert_eq!(out.output, "out\n");
    assert_eq!(out.exit_status, exited_with(3));
}

#[tokio::test]
async fn death_by_signal_is_reported_by_name() {
    let (manager, _events) = manager();
    let id = manager
        .create(spec("kill -9 $$", &[]))
        .await
        .expect("create");
    let exit = guard("wait_for_exit", manager.wait_for_exit(&id))
        .await
        .expect("exit");
    assert_eq!(
        exit,
        TerminalExit {
            exit_code: None,
            signal: Some("SIGKILL".to_owned()),
        }
    );
}

#[tokio::test]
async fn kill_ends_the_whole_process_tree_and_keeps_the_terminal() {
    let (manager, mut events) = manager();
    let id = manager
        .create(spec("sleep 1000 & echo $!; wait", &[]))
        .await
        .expect("create");
    let grandchild = pid_of(&first_line(&mut events, &id).await);
    assert!(!is_gone(grandchild), "the background sleep should run");

    manager.kill(&id).await.expect("kill");
    let exit = guard("wait_for_exit", manager.wait_for_exit(&id))
        .await
        .expect("exit after kill");
    assert_eq!(exit.signal.as_deref(), Some("SIGKILL"));
    wait_until_gone(grandchild).await;

    // Still valid after kill.
    let out = manager.output(&id).await.expect("output after kill");
    assert_eq!(out.output, format!("{grandchild}\n"));
    assert_eq!(out.exit_status, Some(exit));
    manager.kill(&id).await.expect("killing twice is harmless");
    manager.release(&id).await.expect("release after kill");
}

#[tokio::test]
async fn exit_is_reported_while_a_background_process_holds_the_output() {
    let (manager, _events) = manager();
    // The background sleep keeps the output pipe open after the shell exits:
    // the exit must not wait for it, and release must still kill it.
    let (id, out) = run(&manager, spec("sleep 1000 & echo $!", &[])).await;
    assert_eq!(out.exit_status, exited_with(0));
    let background = pid_of(&out.output);
    assert!(
        !is_gone(background),
        "the background sleep should still run"
    );
    guard("release", manager.release(&id))
        .await
        .expect("release");
    wait_until_gone(background).await;
}

#[tokio::test]
async fn release_kills_and_invalidates_the_id() {
    let (manager, mut events) = manager();
    let id = manager
        .create(spec("echo $$; exec sleep 1000", &[]))
        .await
        .expect("create");
    let pid = pid_of(&first_line(&mut events, &id).await);

    guard("release", manager.release(&id))
        .await
        .expect("release");
    wait_until_gone(pid).await;

    let err = manager.output(&id).await.expect_err("released id");
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    assert_eq!(err.to_rpc_error().code, -32002);
    assert!(err.to_string().contains(&id.to_string()), "{err}");
    for err in [
        manager.wait_for_exit(&id).await.expect_err("wait"),
        manager.kill(&id).await.expect_err("kill"),
        manager.release(&id).await.expect_err("release"),
    ] {
        assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    }

    // The editor sees the exit, then the release, in that order.
    let mut tail = Vec::new();
    while let Ok(event) = events.try_recv() {
        tail.push(event);
    }
    let kinds: Vec<&str> = tail
        .iter()
        .map(|e| match e {
            TerminalEvent::Started { .. } | TerminalEvent::Output { .. } => "output",
            TerminalEvent::Exited { exit_status, .. } => {
                assert_eq!(exit_status.signal.as_deref(), Some("SIGKILL"));
                "exited"
            }
            TerminalEvent::Released { terminal_id, .. } => {
                assert_eq!(terminal_id, &id);
                "released"
            }
            _ => "other",
        })
        .filter(|k| *k != "output")
        .collect();
    assert_eq!(kinds, ["exited", "released"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_terminals_complete_with_their_own_output() {
    let (manager, _events) = manager();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..50 {
        let manager = manager.clone();
        tasks.spawn(async move {
            let script = "i=0; while [ $i -lt 200 ]; do echo \"$0:$i\"; i=$((i+1)); done";
            // One session each: a session holds at most 16 live terminals.
            let mut spec = spec("sh", &["-c", script, &format!("t{n}")]);
            spec.session_id = session(&format!("s{n}"));
            let (_, out) = run(&manager, spec).await;
            (n, out)
        });
    }
    let mut done = 0;
    while let Some(result) = guard("50 terminals", tasks.join_next()).await {
        let (n, out) = result.expect("task");
        let expected: String = (0..200).map(|i| format!("t{n}:{i}\n")).collect();
        assert_eq!(out.output, expected, "terminal {n}");
        assert_eq!(out.exit_status, exited_with(0));
        done += 1;
    }
    assert_eq!(done, 50);
}

#[tokio::test]
async fn live_terminals_are_capped_per_session_and_by_output_memory() {
    let (manager, _events) = manager();
    let mut ids = Vec::new();
    for _ in 0..MAX_TERMINALS_PER_SESSION {
        ids.push(
            manager
                .create(spec("sleep", &["30"]))
                .await
                .expect("create"),
        );
    }
    // The 17th of one session is refused, and nothing runs.
    let err = manager.create(spec("sleep", &["30"])).await.unwrap_err();
    assert!(matches!(err, Error::TerminalLimit(_)), "{err}");
    assert!(err.to_string().contains("terminal/release"), "{err}");
    // Another session still gets one; releasing one frees a slot.
    let mut other = spec("sleep", &["30"]);
    other.session_id = session("s2");
    let other_id = manager.create(other).await.expect("another session");
    manager.release(&ids.pop().unwrap()).await.unwrap();
    ids.push(
        manager
            .create(spec("sleep", &["30"]))
            .await
            .expect("after a release"),
    );
    // Big limits draw on one budget for the whole connection.
    let mut big = spec("sleep", &["30"]);
    big.session_id = session("s3");
    big.output_byte_limit = Some(DEFAULT_OUTPUT_CAP as u64);
    let mut refused = None;
    for _ in 0..MAX_TERMINALS_PER_SESSION {
        match manager.create(big.clone()).await {
            Ok(id) => ids.push(id),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let err = refused.expect("16 MB terminals past the output budget are refused");
    assert!(err.to_string().contains("outputByteLimit"), "{err}");
    manager.release(&other_id).await.unwrap();
    manager.release_all().await;
}

#[tokio::test]
async fn a_terminal_without_an_output_limit_keeps_the_default() {
    let (manager, _events) = manager();
    let (_, out) = run(
        &manager,
        spec("head -c 3000000 /dev/zero | tr '\\0' y", &[]),
    )
    .await;
    assert_eq!(out.output.len(), DEFAULT_OUTPUT_LIMIT);
    assert!(out.truncated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_mb_flood_stays_within_the_limit() {
    const MIB: usize = 1024 * 1024;
    // A manager that counts events instead of keeping them: the events of a
    // flood carry up to the limit each.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let sink: TerminalSink = Arc::new(move |event| {
        let summary = match event {
            TerminalEvent::Output {
                data, truncated, ..
            } => (data.len(), truncated, false),
            TerminalEvent::Exited { .. } => (0, false, true),
            _ => (0, false, false),
        };
        let _ = tx.send(summary);
    });
    let manager = TerminalManager::new(sink, DEFAULT_OUTPUT_CAP);
    let mut flood = spec("head -c 200000000 /dev/zero | tr '\\0' a; echo END", &[]);
    flood.output_byte_limit = Some(MIB as u64);
    let (id, out) = run(&manager, flood).await;

    assert_eq!(out.exit_status, exited_with(0));
    assert!(out.truncated);
    assert_eq!(out.output.len(), MIB);
    assert!(out.output.ends_with("aaaaEND\n"));
    let high_water = manager.output_capacity_high_water(&id).expect("stats");
    assert!(high_water <= MIB, "buffer grew to {high_water} bytes");

    let mut exited = false;
    while let Ok((len, _truncated, is_exit)) = rx.try_recv() {
        assert!(len <= MIB, "an event carried {len} bytes");
        exited |= is_exit;
    }
    assert!(exited);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_events_are_coalesced_and_end_with_exit() {
    let (manager, mut events) = manager();
    let lines = 100_000;
    // One write per line: without coalescing, one event per read.
    let script = format!("i=0; while [ $i -lt {lines} ]; do echo $i; i=$((i+1)); done");
    let (id, out) = run(&manager, spec("sh", &["-c", &script])).await;

    let mut streamed = String::new();
    let mut outputs = 0;
    let mut exit = None;
    while let Ok(event) = events.try_recv() {
        match event {
            TerminalEvent::Output {
                terminal_id,
                data,
                truncated,
                ..
            } => {
                assert_eq!(terminal_id, id);
                assert!(exit.is_none(), "output after the exit event");
                assert!(!truncated);
                streamed.push_str(&data);
                outputs += 1;
            }
            TerminalEvent::Exited { exit_status, .. } => exit = Some(exit_status),
            TerminalEvent::Started { terminal_id, .. } => {
                assert!(streamed.is_empty(), "started after output");
                assert_eq!(terminal_id, id);
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(exit, exited_with(0));
    assert_eq!(streamed, out.output, "events carry exactly the output");
    assert_eq!(streamed.lines().count(), lines);
    assert!(
        outputs < lines / 100,
        "{outputs} output events for {lines} lines"
    );
}

#[tokio::test]
async fn multibyte_characters_are_never_split_across_events() {
    let (manager, mut events) = manager();
    // Each 'é' is written in two halves with a pause between them, so the
    // reader sees (and may want to send) half a character.
    let script = r"for i in 1 2 3; do printf '\303'; sleep 0.1; printf '\251'; done";
    let (id, out) = run(&manager, spec("sh", &["-c", script])).await;
    assert_eq!(out.output, "ééé");
    let mut streamed = String::new();
    while let Ok(event) = events.try_recv() {
        if let TerminalEvent::Output {
            terminal_id, data, ..
        } = event
        {
            assert_eq!(terminal_id, id);
            assert!(!data.contains('\u{FFFD}'), "split character in {data:?}");
            streamed.push_str(&data);
        }
    }
    assert_eq!(streamed, out.output);
}

#[tokio::test]
async fn release_session_kills_only_that_sessions_terminals() {
    let (manager, _events) = manager();
    let mut a1 = spec("sleep", &["1000"]);
    a1.session_id = session("a");
    let mut a2 = a1.clone();
    a2.command = "sleep 1000; echo never".to_owned();
    a2.args.clear();
    let mut b = a1.clone();
    b.session_id = session("b");

    let a1 = manager.create(a1).await.expect("a1");
    let a2 = manager.create(a2).await.expect("a2");
    let b = manager.create(b).await.expect("b");

    guard("release_session", manager.release_session(&session("a"))).await;
    for id in [&a1, &a2] {
        let err = manager.output(id).await.expect_err("released");
        assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    }
    let still = manager.output(&b).await.expect("b is untouched");
    assert_eq!(still.exit_status, None, "b must still run");

    guard("release_all", manager.release_all()).await;
    assert!(manager.output(&b).await.is_err());
}

#[tokio::test]
async fn dropping_the_manager_kills_its_processes() {
    let (manager, mut events) = manager();
    let id = manager
        .create(spec("echo $$; exec sleep 1000", &[]))
        .await
        .expect("create");
    let pid = pid_of(&first_line(&mut events, &id).await);
    let clone = manager.clone();
    drop(manager);
    assert!(!is_gone(pid), "a clone still holds the terminals");
    drop(clone);
    wait_until_gone(pid).await;
}

#[test]
fn events_serialize_with_camel_case_fields() {
    let event = TerminalEvent::Exited {
        session_id: session("s1"),
        terminal_id: TerminalId::new("term-1"),
        exit_status: TerminalExit {
            exit_code: None,
            signal: Some("SIGKILL".to_owned()),
        },
    };
    assert_eq!(
        serde_json::to_value(&event).expect("serialize"),
        serde_json::json!({
            "kind": "exited",
            "sessionId": "s1",
            "terminalId": "term-1",
            "exitStatus": {"exitCode": null, "signal": "SIGKILL"},
        })
    );
}
