//! The chat example end to end against the fake agent: turns, a crash,
//! cancel, exiting while stdin stays open, forms and permission answers on
//! stdin.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::support::*;

/// Runs the chat example in `cwd` with `options`, against the fake agent
/// playing `scenario`, with no stdin.
fn run_chat(cwd: &Path, options: &[&str], scenario: &Path) -> std::process::Output {
    std::process::Command::new(chat_example())
        .arg("--cwd")
        .arg(cwd)
        .args(options)
        .arg("--")
        .arg(acp_testkit::fake_agent_bin())
        .arg("--scenario")
        .arg(scenario)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn chat_example_runs_turns_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# demo project\n").unwrap();
    let scenario = acp_testkit::write_scenario(
        dir.path(),
        &json!({"turns": [{"steps": [
            {"type": "text", "text": "Hello from the fake agent", "chunkSize": 4},
            {"type": "runTerminal", "command": "echo terminal works"},
            {"type": "requestPermission", "toolCall": {"toolCallId": "p", "title": "Write a file", "kind": "edit"}},
            {"type": "call", "method": "fs/write_text_file", "params": {"path": "{{cwd}}/out.txt", "content": "written\n"}, "expect": {"ok": true}}
        ]}]}),
    );
    let out = run_chat(
        dir.path(),
        &[
            "--permission",
            "allow",
            "--jsonl",
            "--prompt",
            "one",
            "--prompt",
            "two",
        ],
        &scenario,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "chat failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    let stops = lines.iter().filter(|l| l["type"] == "stop").count();
    assert_eq!(stops, 2, "{stdout}");
    assert!(lines.iter().any(|l| l["type"] == "permission"));
    assert!(stdout.contains(r#""text":"Hell""#), "{stdout}");
    assert!(stdout.contains("terminal works"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "written\n"
    );
}

#[test]
fn chat_example_fails_clearly_when_the_agent_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_chat(
        dir.path(),
        &["--prompt", "hi"],
        &acp_testkit::scenario("crash"),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("exit code 3"), "{stderr}");
    assert!(stderr.contains("crashed on purpose"), "{stderr}");
}

#[test]
fn chat_example_cancel_after_ends_the_turn_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_chat(
        dir.path(),
        &["--jsonl", "--cancel-after", "200", "--prompt", "wait"],
        &acp_testkit::scenario("cancel"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains(r#""stopReason":"cancelled""#), "{stdout}");
}

/// Starts the chat example with a piped stdin the test controls.
fn spawn_chat(cwd: &Path, options: &[&str], scenario: &Path) -> std::process::Child {
    std::process::Command::new(chat_example())
        .arg("--cwd")
        .arg(cwd)
        .args(options)
        .arg("--")
        .arg(acp_testkit::fake_agent_bin())
        .arg("--scenario")
        .arg(scenario)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the child's output on a thread; `None` when it has not exited
/// within `guard` (a hang guard, not a timing assertion).
fn output_within(child: std::process::Child, guard: Duration) -> Option<std::process::Output> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    rx.recv_timeout(guard).ok().map(|r| r.unwrap())
}

#[test]
fn chat_example_exits_after_its_last_prompt_while_stdin_stays_open() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = acp_testkit::write_scenario(
        dir.path(),
        &json!({"turns": [{"steps": [{"type": "text", "text": "done"}]}]}),
    );
    let mut child = spawn_chat(dir.path(), &["--prompt", "hi"], &scenario);
    // The write end stays open (and silent) until the child has exited.
    let stdin = child.stdin.take().unwrap();
    let out = output_within(child, WAIT * 3)
        .expect("the chat example is still running after its last --prompt turn");
    drop(stdin);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("done\n[end_turn]"), "{stdout}");
}

#[test]
fn chat_example_answers_a_form_on_stdin_and_asks_again_on_bad_input() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let scenario = acp_testkit::write_scenario(
        dir.path(),
        &json!({"turns": [{"steps": [{
            "type": "elicit",
            "message": "Where to deploy?",
            "requestedSchema": {"type": "object", "required": ["target", "replicas"], "properties": {
                "target": {"type": "string", "oneOf": [{"const": "prod", "title": "Production"}, {"const": "dev", "title": "Development"}]},
                "replicas": {"type": "integer", "maximum": 3},
                "notify": {"type": "boolean", "default": true}
            }}
        }]}]}),
    );
    let mut child = spawn_chat(dir.path(), &["--prompt", "deploy"], &scenario);
    let mut stdin = child.stdin.take().unwrap();
    // "staging" is no choice, "two" no number: both are asked again.
    stdin.write_all(b"staging\nProduction\ntwo\n2\n\n").unwrap();
    let out = output_within(child, WAIT * 3).expect("the chat example hung");
    drop(stdin);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("The agent asks: Where to deploy?"),
        "{stdout}"
    );
    assert!(
        stdout.contains("`staging` is not one of `prod`, `dev`; try again"),
        "{stdout}"
    );
    assert!(
        stdout.contains("`two` is not a whole number; try again"),
        "{stdout}"
    );
    assert!(
        stdout.contains(r#"elicitation: accept {"target":"prod","replicas":2,"notify":true}"#),
        "{stdout}"
    );
}

#[test]
fn chat_example_permission_allow_prefers_allow_once_and_allow_always_is_its_own_value() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = acp_testkit::write_scenario(
        dir.path(),
        &json!({"turns": [{"steps": [{
            "type": "requestPermission",
            "toolCall": {"toolCallId": "t", "title": "Run make", "kind": "execute"},
            "options": [
                {"optionId": "always", "name": "Always", "kind": "allow_always"},
                {"optionId": "once", "name": "Once", "kind": "allow_once"},
                {"optionId": "no", "name": "No", "kind": "reject_once"}
            ]
        }]}]}),
    );
    let run = |mode: &str| {
        let out = run_chat(
            dir.path(),
            &["--permission", mode, "--prompt", "go"],
            &scenario,
        );
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(run("allow").contains("permission: once"));
    assert!(run("allow-always").contains("permission: always"));
    assert!(run("reject").contains("permission: no"));
}
