//! The client's tools as the SDK agent calls them: fs reads and writes,
//! terminals, and both refused when not advertised.

use std::path::Path;

use acp_client::{ClientEvent, HostCapabilities};
use agent_client_protocol_schema::v1 as sdk;
use agent_client_protocol_schema::v1::ErrorCode;

use super::sdk_agent::start;
use super::support::{wait_event, PermissionMode, TestHost};
use super::{all_caps, open_session};

#[tokio::test]
async fn fs_requests_read_buffers_and_disk_and_write_disk() {
    let dir = tempfile::tempdir().unwrap();
    let (host, mut rx) = TestHost::with_caps(all_caps(), PermissionMode::Pick("allow_once"));
    let (conn, mut agent) = start(host.clone()).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;
    let s = sid.0.to_string();

    let on_disk = dir.path().join("lines.txt");
    std::fs::write(&on_disk, "one\ntwo\nthree\nfour").unwrap();
    let read = |path: &Path| sdk::ReadTextFileRequest::new(s.clone(), path);

    let whole = agent.call(read(&on_disk)).await.unwrap();
    assert_eq!(whole.content, "one\ntwo\nthree\nfour");
    // `line` is 1-based, `limit` counts lines.
    let middle = agent.call(read(&on_disk).line(2).limit(2)).await.unwrap();
    assert_eq!(middle.content, "two\nthree\n");
    let tail = agent.call(read(&on_disk).line(3)).await.unwrap();
    assert_eq!(tail.content, "three\nfour");
    let first = agent.call(read(&on_disk).limit(1)).await.unwrap();
    assert_eq!(first.content, "one\n");

    // An open buffer's unsaved text wins over the disk.
    let buffered = dir.path().join("open.rs");
    std::fs::write(&buffered, "saved\n").unwrap();
    *host.buffers.buffer.lock().unwrap() =
        Some((buffered.clone(), "unsaved 1\nunsaved 2\n".into()));
    let from_buffer = agent.call(read(&buffered).line(2)).await.unwrap();
    assert_eq!(from_buffer.content, "unsaved 2\n");

    // A write creates a missing file (and its directory) on disk.
    let target = dir.path().join("new/dir/file.txt");
    agent
        .call(sdk::WriteTextFileRequest::new(
            s.clone(),
            &target,
            "héllo\n",
        ))
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "héllo\n");
    let edit = wait_event(&mut rx, |e| matches!(e, ClientEvent::FileEdited(_))).await;
    let ClientEvent::FileEdited(edit) = edit else {
        unreachable!()
    };
    assert_eq!(edit.old_content, None);
    assert_eq!(edit.new_content, "héllo\n");
    // Overwriting reports the old text.
    agent
        .call(sdk::WriteTextFileRequest::new(s.clone(), &target, "bye\n"))
        .await
        .unwrap();
    let edit = wait_event(&mut rx, |e| matches!(e, ClientEvent::FileEdited(_))).await;
    let ClientEvent::FileEdited(edit) = edit else {
        unreachable!()
    };
    assert_eq!(edit.old_content.as_deref(), Some("héllo\n"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "bye\n");

    // Paths outside the workspace: their side sees -32002 for both methods,
    // and nothing was written.
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "secret").unwrap();
    let err = agent.call(read(&secret)).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceNotFound, "{err:?}");
    assert!(err.message.contains("secret.txt"), "{}", err.message);
    let escape = dir.path().join("../escape.txt");
    let err = agent
        .call(sdk::WriteTextFileRequest::new(s.clone(), &escape, "x"))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceNotFound, "{err:?}");
    assert!(!dir.path().parent().unwrap().join("escape.txt").exists());
    // A missing file inside the workspace is "not found" too.
    let err = agent
        .call(read(&dir.path().join("missing.txt")))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceNotFound, "{err:?}");
    // Reading past the end is bad params.
    let err = agent.call(read(&on_disk).line(9)).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParams, "{err:?}");
}

#[tokio::test]
async fn fs_and_terminal_requests_are_refused_when_not_advertised() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::with_caps(
        HostCapabilities {
            read_text_file: false,
            write_text_file: false,
            terminal: false,
            ..HostCapabilities::default()
        },
        PermissionMode::Pick("allow_once"),
    );
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;
    let s = sid.0.to_string();
    let err = agent
        .call(sdk::ReadTextFileRequest::new(
            s.clone(),
            dir.path().join("a"),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::MethodNotFound, "{err:?}");
    let err = agent
        .call(sdk::CreateTerminalRequest::new(s, "true"))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::MethodNotFound, "{err:?}");
}

#[tokio::test]
async fn terminals_create_output_wait_kill_and_release() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let (host, _rx) = TestHost::with_caps(all_caps(), PermissionMode::Pick("allow_once"));
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;
    let s = sid.0.to_string();

    // args, env and cwd decode on our side; the exit status on theirs.
    let created = agent
        .call(
            sdk::CreateTerminalRequest::new(s.clone(), "sh")
                .args(vec![
                    "-c".into(),
                    "printf '%s in %s\\n' \"$GREETING\" \"${PWD##*/}\"; exit 3".into(),
                ])
                .env(vec![sdk::EnvVariable::new("GREETING", "hi")])
                .cwd(dir.path().join("sub"))
                .output_byte_limit(1024),
        )
        .await
        .unwrap();
    let id = created.terminal_id.clone();
    assert!(!id.0.is_empty());
    let exit = agent
        .call(sdk::WaitForTerminalExitRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    assert_eq!(exit.exit_status.exit_code, Some(3));
    assert_eq!(exit.exit_status.signal, None);
    let output = agent
        .call(sdk::TerminalOutputRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    assert_eq!(output.output, "hi in sub\n");
    assert!(!output.truncated);
    assert_eq!(
        output.exit_status,
        Some(sdk::TerminalExitStatus::new().exit_code(3))
    );
    agent
        .call(sdk::ReleaseTerminalRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    // A released id is gone.
    let err = agent
        .call(sdk::TerminalOutputRequest::new(s.clone(), id))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceNotFound, "{err:?}");

    // The output limit keeps the newest bytes and says it truncated.
    let created = agent
        .call(
            sdk::CreateTerminalRequest::new(s.clone(), "printf")
                .args(vec!["abcdefgh".into()])
                .output_byte_limit(4),
        )
        .await
        .unwrap();
    let id = created.terminal_id;
    agent
        .call(sdk::WaitForTerminalExitRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    let output = agent
        .call(sdk::TerminalOutputRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    assert_eq!(output.output, "efgh");
    assert!(output.truncated);
    agent
        .call(sdk::ReleaseTerminalRequest::new(s.clone(), id))
        .await
        .unwrap();

    // kill: the terminal stays valid and reports the signal.
    let created = agent
        .call(sdk::CreateTerminalRequest::new(s.clone(), "sleep").args(vec!["600".into()]))
        .await
        .unwrap();
    let id = created.terminal_id;
    let running = agent
        .call(sdk::TerminalOutputRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    assert_eq!(running.exit_status, None);
    agent
        .call(sdk::KillTerminalRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    let exit = agent
        .call(sdk::WaitForTerminalExitRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    assert_eq!(exit.exit_status.exit_code, None);
    assert_eq!(exit.exit_status.signal.as_deref(), Some("SIGKILL"));
    agent
        .call(sdk::ReleaseTerminalRequest::new(s.clone(), id))
        .await
        .unwrap();

    // A cwd outside the workspace is refused with -32002.
    let outside = tempfile::tempdir().unwrap();
    let err = agent
        .call(sdk::CreateTerminalRequest::new(s, "true").cwd(outside.path().to_path_buf()))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceNotFound, "{err:?}");
}
