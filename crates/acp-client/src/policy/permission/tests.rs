//! Unit tests of subjects, the memory and its state file.
#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::path::{Path, PathBuf};

use super::subject::normalize_lexically;
use super::*;
use crate::error::Error;
use crate::session::update::{SessionId, ToolContent, ToolKind};
use agent_client_protocol_schema::v1::ToolCallLocation;
use serde_json::json;
use serde_json::Value;

fn opt(id: &str, name: &str, kind: &str) -> PermissionOption {
    PermissionOption {
        option_id: id.to_owned(),
        name: name.to_owned(),
        kind: OptionKind::from_wire(kind),
    }
}

/// The four standard options, named honestly.
fn standard_options() -> Vec<PermissionOption> {
    vec![
        opt("always", "Always allow", "allow_always"),
        opt("once", "Allow", "allow_once"),
        opt("no", "Reject", "reject_once"),
        opt("never", "Always reject", "reject_always"),
    ]
}

fn request(session: &str, tool_call: ToolCallFields) -> PermissionRequest {
    PermissionRequest {
        id: PermissionRequestId(1),
        session_id: SessionId::new(session),
        tool_call,
        options: standard_options(),
    }
}

fn exec(command: &str) -> ToolCallFields {
    let mut tc = ToolCallFields::new("t1");
    tc.kind = Some(ToolKind::Execute);
    tc.title = Some(format!("Run {command}"));
    tc.raw_input = Some(json!({ "command": command }));
    tc
}

fn edit(path: &str) -> ToolCallFields {
    let mut tc = ToolCallFields::new("t2");
    tc.kind = Some(ToolKind::Edit);
    tc.title = Some("Edit file".to_owned());
    tc.locations = Some(vec![ToolCallLocation::new(path)]);
    tc
}

fn of_kind(kind: &str, title: &str) -> ToolCallFields {
    let mut tc = ToolCallFields::new("t3");
    tc.kind = Some(ToolKind::from_wire(kind));
    tc.title = Some(title.to_owned());
    tc
}

fn selected(id: &str) -> Option<PermissionDecision> {
    Some(PermissionDecision::Selected {
        option_id: id.to_owned(),
    })
}

#[test]
fn subject_of_execute_is_the_command_line() {
    assert_eq!(subject_of(&exec("cargo test")), "cargo test");
    let mut tc = exec("x");
    tc.raw_input = Some(json!({ "command": ["bash", "-lc", "make all"] }));
    assert_eq!(subject_of(&tc), "bash -lc make all");
    tc.raw_input = Some(json!({ "cmd": "  ls -la " }));
    assert_eq!(subject_of(&tc), "ls -la");
    tc.raw_input = Some(json!({ "other": 1 }));
    assert_eq!(subject_of(&tc), "Run x");
}

#[test]
fn subject_of_file_kinds_is_every_normalized_path() {
    assert_eq!(subject_of(&edit("/p/src/../src/./a.rs")), "/p/src/a.rs");

    let mut tc = edit("/p/a.rs");
    tc.content = Some(vec![
        ToolContent::Diff {
            path: "/p/a.rs".into(),
            old_text: None,
            new_text: String::new(),
        },
        ToolContent::Diff {
            path: "/p/b.rs".into(),
            old_text: None,
            new_text: String::new(),
        },
    ]);
    assert_eq!(subject_of(&tc), "/p/a.rs\n/p/b.rs");

    let mut tc = of_kind("read", "Read it");
    tc.raw_input = Some(json!({ "file_path": "/p/c.rs" }));
    assert_eq!(subject_of(&tc), "/p/c.rs");
    tc.raw_input = None;
    assert_eq!(subject_of(&tc), "Read it");
}

#[test]
fn subject_of_other_kinds_is_the_title() {
    assert_eq!(
        subject_of(&of_kind("fetch", "Fetch https://x")),
        "Fetch https://x"
    );
    let mut tc = ToolCallFields::new("t");
    tc.raw_input = Some(json!({ "command": "ls" }));
    assert_eq!(subject_of(&tc), "");
}

#[test]
fn lexical_normalization() {
    assert_eq!(
        normalize_lexically(Path::new("/a/../../b")),
        PathBuf::from("/b")
    );
    assert_eq!(
        normalize_lexically(Path::new("../a/./b/..")),
        PathBuf::from("../a")
    );
}

#[test]
fn allow_always_covers_only_the_same_kind_and_subject() {
    let mut policy = PermissionPolicy::new();
    let cargo = request("s1", exec("cargo test"));
    assert_eq!(policy.decide(&cargo), None);
    policy.record(&cargo, "always");

    assert_eq!(policy.decide(&cargo), selected("once"));
    assert_eq!(policy.decide(&request("s1", exec("rm -rf x"))), None);
    assert_eq!(
        policy.decide(&request("s1", exec("cargo test && rm -rf x"))),
        None
    );
    assert_eq!(policy.decide(&request("s1", edit("/p/a.rs"))), None);
    // Same text, different kind.
    let mut as_edit = edit("cargo test");
    as_edit.locations = None;
    as_edit.title = Some("cargo test".to_owned());
    assert_eq!(policy.decide(&request("s1", as_edit)), None);
}

#[test]
fn always_for_one_file_does_not_cover_a_call_touching_another_too() {
    let mut policy = PermissionPolicy::new();
    policy.record(&request("s1", edit("/p/a.rs")), "always");
    let mut both = edit("/p/a.rs");
    both.locations = Some(vec![
        ToolCallLocation::new("/p/a.rs"),
        ToolCallLocation::new("/p/b.rs"),
    ]);
    assert_eq!(policy.decide(&request("s1", both)), None);
    assert_eq!(
        policy.decide(&request("s1", edit("/p/a.rs"))),
        selected("once")
    );
}

#[test]
fn reject_always_is_remembered() {
    let mut policy = PermissionPolicy::new();
    let rm = request("s1", exec("rm -rf /"));
    policy.record(&rm, "never");
    assert_eq!(policy.decide(&rm), selected("no"));
    assert_eq!(
        policy.entries(),
        vec![(
            MemoryKey {
                session_id: Some("s1".to_owned()),
                tool_kind: "execute".to_owned(),
                subject: "rm -rf /".to_owned(),
            },
            Remembered::Reject
        )]
    );
}

#[test]
fn falls_back_to_the_always_option_and_asks_when_no_option_fits() {
    let mut policy = PermissionPolicy::new();
    let cargo = request("s1", exec("cargo test"));
    policy.record(&cargo, "always");

    let mut only_always = cargo.clone();
    only_always.options = vec![
        opt("a", "Always", "allow_always"),
        opt("r", "No", "reject_once"),
    ];
    assert_eq!(policy.decide(&only_always), selected("a"));

    let mut only_reject = cargo.clone();
    only_reject.options = vec![opt("r", "No", "reject_once")];
    assert_eq!(policy.decide(&only_reject), None);
}

#[test]
fn decisions_are_scoped_to_their_session() {
    let mut policy = PermissionPolicy::new();
    policy.record(&request("s1", exec("cargo test")), "always");
    assert_eq!(policy.decide(&request("s2", exec("cargo test"))), None);
    assert_eq!(
        policy.decide(&request("s1", exec("cargo test"))),
        selected("once")
    );
}

#[test]
fn only_always_kinds_are_remembered() {
    let mut policy = PermissionPolicy::new();
    let mut req = request("s1", exec("make"));
    req.options
        .push(opt("forever", "Allow forever", "allow_for_project"));
    policy.record(&req, "forever");
    policy.record(&req, "once");
    policy.record(&req, "no");
    policy.record(&req, "no-such-option");
    assert!(policy.entries().is_empty());
    assert_eq!(policy.decide(&req), None);
}

#[test]
fn option_names_do_not_matter_only_kinds() {
    let mut policy = PermissionPolicy::new();
    let mut req = request("s1", exec("make"));
    req.options = vec![
        opt("x", "Reject", "allow_always"),
        opt("y", "Always allow (recommended)", "reject_once"),
        opt("z", "Allow", "allow_once"),
    ];
    // "Always allow" by name but reject_once by kind: nothing remembered.
    policy.record(&req, "y");
    assert!(policy.entries().is_empty());
    // "Reject" by name but allow_always by kind: an allow.
    policy.record(&req, "x");
    assert_eq!(policy.entries()[0].1, Remembered::Allow);
    assert_eq!(policy.decide(&req), selected("z"));
}

#[test]
fn empty_subjects_are_never_remembered() {
    let mut policy = PermissionPolicy::new();
    let req = request("s1", ToolCallFields::new("t"));
    policy.record(&req, "always");
    assert!(policy.entries().is_empty());
}

#[test]
fn auto_allow_is_off_by_default_and_per_kind() {
    let mut policy = PermissionPolicy::new();
    let read = request("s1", of_kind("read", "Read a.rs"));
    assert_eq!(policy.decide(&read), None);
    assert_eq!(policy.decide(&request("s1", of_kind("think", "Hmm"))), None);

    policy.auto_allow_kinds(["read".to_owned(), "search".to_owned()]);
    assert_eq!(policy.decide(&read), selected("once"));
    assert_eq!(policy.decide(&request("s1", exec("ls"))), None);
    assert_eq!(policy.decide(&request("s1", edit("/p/a.rs"))), None);

    // A remembered reject beats the rule.
    policy.record(&read, "never");
    assert_eq!(policy.decide(&read), selected("no"));

    policy.auto_allow_kinds(Vec::new());
    assert_eq!(
        policy.decide(&request("s1", of_kind("read", "Read b.rs"))),
        None
    );
}

#[test]
fn remembering_is_on_by_default_and_can_be_switched_off() {
    let mut policy = PermissionPolicy::new();
    assert!(policy.remembers());
    let cargo = request("s1", exec("cargo test"));
    policy.record(&cargo, "always");
    assert_eq!(policy.decide(&cargo), selected("once"));

    policy.set_remember(false);
    assert!(!policy.remembers());
    let rm = request("s1", exec("rm -rf x"));
    policy.record(&rm, "never");
    policy.record(&request("s1", edit("/p/a.rs")), "always");
    assert_eq!(policy.decide(&rm), None, "not remembered while off");
    assert_eq!(policy.entries().len(), 1, "only the earlier answer");
    // What was remembered before still answers.
    assert_eq!(policy.decide(&cargo), selected("once"));

    policy.set_remember(true);
    policy.record(&rm, "never");
    assert_eq!(policy.decide(&rm), selected("no"));
}

#[test]
fn forget_and_clear() {
    let mut policy = PermissionPolicy::new();
    policy.record(&request("s1", exec("a")), "always");
    policy.record(&request("s1", exec("b")), "always");
    let key = policy.entries()[0].0.clone();
    assert!(policy.forget(&key));
    assert!(!policy.forget(&key));
    assert_eq!(policy.decide(&request("s1", exec("a"))), None);
    policy.clear();
    assert!(policy.entries().is_empty());
}

#[test]
fn persisted_decisions_reload_project_wide() {
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();

    let mut first = PermissionPolicy::new();
    first.persist_in(state.path(), project.path()).unwrap();
    first.record(&request("s1", exec("cargo test")), "always");
    first.record(&request("s1", edit("/p/secret.rs")), "never");

    let file = PermissionPolicy::state_file_in(state.path(), project.path());
    assert_eq!(
        file.parent(),
        Some(state.path()),
        "the file is directly in the given directory"
    );
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(
        saved["projectRoot"],
        json!(project.path().canonicalize().unwrap().to_string_lossy())
    );

    let mut second = PermissionPolicy::new();
    second.persist_in(state.path(), project.path()).unwrap();
    assert_eq!(
        second.decide(&request("other", exec("cargo test"))),
        selected("once")
    );
    assert_eq!(
        second.decide(&request("other", edit("/p/secret.rs"))),
        selected("no")
    );
    assert_eq!(second.decide(&request("other", exec("cargo run"))), None);

    // Another project does not see them.
    let elsewhere = tempfile::tempdir().unwrap();
    let mut third = PermissionPolicy::new();
    third.persist_in(state.path(), elsewhere.path()).unwrap();
    assert_eq!(third.decide(&request("s1", exec("cargo test"))), None);

    // Forgetting is saved too.
    let key = second.entries()[0].0.clone();
    assert!(second.forget(&key));
    let mut fourth = PermissionPolicy::new();
    fourth.persist_in(state.path(), project.path()).unwrap();
    assert_eq!(fourth.entries().len(), 1);
    fourth.clear();
    let mut fifth = PermissionPolicy::new();
    fifth.persist_in(state.path(), project.path()).unwrap();
    assert!(fifth.entries().is_empty());
}

#[test]
fn corrupt_state_file_is_reported_moved_aside_and_replaced() {
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let file = PermissionPolicy::state_file_in(state.path(), project.path());
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{ not json").unwrap();

    let mut policy = PermissionPolicy::new();
    let err = policy.persist_in(state.path(), project.path()).unwrap_err();
    assert!(matches!(err, Error::PermissionState { .. }));
    assert!(err.to_string().contains("corrupt"), "{err}");
    assert!(policy.entries().is_empty());
    let mut aside = file.clone().into_os_string();
    aside.push(".corrupt");
    assert_eq!(std::fs::read_to_string(&aside).unwrap(), "{ not json");

    // Persistence still works: the next decision writes a good file.
    policy.record(&request("s1", exec("make")), "always");
    let mut reloaded = PermissionPolicy::new();
    reloaded.persist_in(state.path(), project.path()).unwrap();
    assert_eq!(
        reloaded.decide(&request("s9", exec("make"))),
        selected("once")
    );
}

#[test]
fn state_file_from_a_newer_version_is_left_alone() {
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let file = PermissionPolicy::state_file_in(state.path(), project.path());
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let newer = r#"{"version": 7, "rules": []}"#;
    std::fs::write(&file, newer).unwrap();

    let mut policy = PermissionPolicy::new();
    let err = policy.persist_in(state.path(), project.path()).unwrap_err();
    assert!(err.to_string().contains("newer"), "{err}");
    policy.record(&request("s1", exec("make")), "always");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), newer);
    // Without persistence the decision is session-scoped.
    assert_eq!(policy.entries()[0].0.session_id.as_deref(), Some("s1"));
}

#[test]
fn state_file_of_another_project_is_not_used() {
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let file = PermissionPolicy::state_file_in(state.path(), project.path());
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let foreign = r#"{"version":1,"projectRoot":"/elsewhere","decisions":[{"toolKind":"execute","subject":"make","decision":"allow"}]}"#;
    std::fs::write(&file, foreign).unwrap();
    let mut policy = PermissionPolicy::new();
    assert!(policy.persist_in(state.path(), project.path()).is_err());
    assert_eq!(policy.decide(&request("s1", exec("make"))), None);
}

#[test]
fn project_root_spellings_share_one_state_file() {
    let state = Path::new("/state");
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("sub")).unwrap();
    let link = project.path().join("link");
    std::os::unix::fs::symlink(project.path(), &link).unwrap();
    let a = PermissionPolicy::state_file_in(state, project.path());
    assert_eq!(a, PermissionPolicy::state_file_in(state, &link));
    let b = PermissionPolicy::state_file_in(state, &project.path().join("sub/.."));
    assert_eq!(a, b);
    assert_ne!(
        a,
        PermissionPolicy::state_file_in(state, Path::new("/other"))
    );
}
