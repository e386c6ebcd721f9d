//! Tests of the Neovim editor host: reads, writes and disk edits through a
//! faked Lua side.

use acp_client::edits::host::{WriteKind, WriteOutcome, WriteTextFile};
use std::collections::VecDeque;

use rmpv::Value;
use serde_json::{json, Value as Json};

use super::*;
use crate::msgpack;
use crate::routes::tests::permission;

/// A file's key (`/p` does not exist, so it resolves as written).
fn cp(path: &str) -> CanonicalPath {
    CanonicalPath::resolve(Path::new(path)).unwrap()
}

fn sid(s: &str) -> SessionId {
    SessionId::new(s)
}

fn chat(s: &str) -> ChatId {
    ChatId(s.into())
}

/// A fake Lua `acp.edits.fs`, answering with fixed values.
struct FakeFs {
    read: Value,
    apply: Value,
    seen: Mutex<Vec<Value>>,
}

impl FakeFs {
    fn answering(read: Json, apply: Json) -> Self {
        Self {
            read: msgpack::from_json(&read),
            apply: msgpack::from_json(&apply),
            seen: Mutex::default(),
        }
    }
}

#[async_trait]
impl Editor for FakeFs {
    async fn dispatch(&self, _events: Vec<Value>) -> Result<(), crate::editor::LuaError> {
        Ok(())
    }
    async fn fs_read(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
        self.seen.lock().push(args);
        Ok(self.read.clone())
    }
    async fn fs_apply(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
        self.seen.lock().push(args);
        Ok(self.apply.clone())
    }
}

fn host_with(fs: FakeFs) -> (NvimHost, Arc<FakeFs>, crate::batcher::EventReceiver) {
    let fs = Arc::new(fs);
    let (events, rx) = EventQueue::new();
    let host = NvimHost::new(
        "demo",
        events,
        fs.clone(),
        Arc::new(Prompts::new()),
        Decisions::new(),
    );
    (host, fs, rx)
}

fn write(content: &str) -> WriteTextFile {
    WriteTextFile {
        session_id: sid("s1"),
        path: cp("/p/a.txt"),
        content: content.into(),
        kind: WriteKind::Agent,
    }
}

#[tokio::test]
async fn reads_ask_lua_for_the_requested_range_only() {
    let (host, fs, _rx) = host_with(FakeFs::answering(
        json!({"text": "b\nc\n", "whole": "a\nb\nc\n", "tick": 3}),
        Json::Null,
    ));
    let got = host
        .sync
        .read(&ReadTextFile {
            session_id: sid("s1"),
            path: cp("/p/a.txt"),
            line: Some(2),
            limit: Some(2),
        })
        .await
        .unwrap();
    assert_eq!(got.as_deref(), Some("b\nc\n"));
    let args = &fs.seen.lock()[0];
    assert_eq!(
        msgpack::to_json(args),
        json!({"path": "/p/a.txt", "line": 2, "limit": 2})
    );
    // The whole text is what it saw, and the buffer's state is known.
    let files = host.sync.files();
    assert_eq!(
        files.seen(&sid("s1"), &cp("/p/a.txt")).as_deref(),
        Some("a\nb\nc\n")
    );
    assert_eq!(
        files.buffer(&cp("/p/a.txt")),
        Some(&BufferText {
            text: "a\nb\nc\n".into(),
            version: 3
        })
    );
}

#[tokio::test]
async fn a_read_of_an_unchanged_buffer_ships_the_range_only() {
    // An agent paging through a 1,000,000-line buffer: the backend holds
    // the whole text of the buffer's tick from the first read.
    let (host, fs, _rx) = host_with(FakeFs::answering(
        json!({"text": "c\n", "tick": 3, "unchanged": true}),
        Json::Null,
    ));
    let path = &cp("/p/a.txt");
    host.sync.files().reported(
        path,
        BufferText {
            text: "a\nb\nc\n".into(),
            version: 3,
        },
    );
    let read = ReadTextFile {
        session_id: sid("s1"),
        path: path.clone(),
        line: Some(3),
        limit: Some(1),
    };
    let got = host.sync.read(&read).await.unwrap();
    assert_eq!(got.as_deref(), Some("c\n"));
    assert_eq!(
        msgpack::to_json(&fs.seen.lock()[0]),
        json!({"path": "/p/a.txt", "line": 3, "limit": 1, "known": 3})
    );
    assert_eq!(
        host.sync.files().seen(&sid("s1"), path).as_deref(),
        Some("a\nb\nc\n")
    );
    // "Unchanged" at a tick the backend does not hold is a broken
    // contract, said as such.
    host.sync.files().reported(
        path,
        BufferText {
            text: "newer\n".into(),
            version: 4,
        },
    );
    let err = host.sync.read(&read).await.unwrap_err().to_string();
    assert!(
        err.contains("update the editor plugin and the client together"),
        "{err}"
    );
}

#[tokio::test]
async fn a_read_without_buffer_falls_back_to_disk() {
    let (host, _fs, _rx) = host_with(FakeFs::answering(Json::Null, Json::Null));
    let got = host
        .sync
        .read(&ReadTextFile {
            session_id: sid("s1"),
            path: cp("/p/a.txt"),
            line: None,
            limit: None,
        })
        .await
        .unwrap();
    assert_eq!(got, None);
}

#[tokio::test]
async fn a_write_merged_into_a_modified_buffer_is_kept_unsaved() {
    let (host, fs, _rx) = host_with(FakeFs::answering(
        json!({"text": "old\nmine\n", "tick": 4}),
        json!({"status": "merged", "revision": 1, "tick": 5}),
    ));
    host.sync
        .read(&ReadTextFile {
            session_id: sid("s1"),
            path: cp("/p/a.txt"),
            line: None,
            limit: None,
        })
        .await
        .unwrap();
    let outcome = host.sync.write(&write("new\nmine\n")).await.unwrap();
    assert_eq!(
        outcome,
        WriteOutcome::MergedUnsaved {
            seen: Some("old\nmine\n".into()),
            buffer: "new\nmine\n".into()
        }
    );
    assert_eq!(
        msgpack::to_json(&fs.seen.lock()[1]),
        json!({"path": "/p/a.txt", "revision": 1, "content": "new\nmine\n",
               "merged": "new\nmine\n", "tick": 4})
    );
    // It knows what it wrote; the buffer is known at its new tick.
    let files = host.sync.files();
    assert_eq!(
        files.seen(&sid("s1"), &cp("/p/a.txt")).as_deref(),
        Some("new\nmine\n")
    );
    assert_eq!(files.buffer(&cp("/p/a.txt")).unwrap().version, 5);
}

#[tokio::test]
async fn a_write_through_the_buffer_returns_the_old_content() {
    let (host, fs, _rx) = host_with(FakeFs::answering(
        Json::Null,
        json!({"status": "saved", "revision": 1, "tick": 9, "old_content": "old\n"}),
    ));
    let outcome = host.sync.write(&write("new\n")).await.unwrap();
    assert_eq!(
        outcome,
        WriteOutcome::Saved {
            old_content: Some("old\n".into())
        }
    );
    assert_eq!(
        msgpack::to_json(&fs.seen.lock()[0]),
        json!({"path": "/p/a.txt", "revision": 1, "content": "new\n"})
    );
}

#[tokio::test]
async fn an_answer_naming_another_revision_is_an_error() {
    let (host, fs, _rx) = host_with(FakeFs::answering(
        Json::Null,
        json!({"status": "stale", "revision": 1, "text": "x\n", "tick": 2}),
    ));
    // The first instruction is revision 1 (stale), the second 2: its
    // answer still names 1.
    let err = host.sync.write(&write("y\n")).await.unwrap_err();
    assert!(err.to_string().contains("revision"), "{err}");
    assert_eq!(fs.seen.lock().len(), 2);
}

/// A Lua side whose buffer changes under every instruction.
struct AlwaysStale {
    instructions: Mutex<u64>,
}

#[async_trait]
impl Editor for AlwaysStale {
    async fn dispatch(&self, _events: Vec<Value>) -> Result<(), crate::editor::LuaError> {
        Ok(())
    }
    async fn fs_read(&self, _args: Value) -> Result<Value, crate::editor::LuaError> {
        Ok(Value::Nil)
    }
    async fn fs_apply(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
        let mut n = self.instructions.lock();
        *n += 1;
        let revision = msgpack::to_json(&args)["revision"].clone();
        Ok(msgpack::from_json(
            &json!({"status": "stale", "revision": revision, "text": format!("typed {n}\n"), "tick": *n}),
        ))
    }
}

#[tokio::test]
async fn a_buffer_that_stays_stale_gets_the_write_on_disk_and_later() {
    let lua = Arc::new(AlwaysStale {
        instructions: Mutex::new(0),
    });
    let (events, _rx) = EventQueue::new();
    let host = NvimHost::new(
        "demo",
        events,
        lua.clone(),
        Arc::new(Prompts::new()),
        Decisions::new(),
    );
    let outcome = host.sync.write(&write("y\n")).await.unwrap();
    // The buffer is left alone; the client writes the disk and the
    // write is merged into the buffer later, as a disk edit.
    assert_eq!(outcome, WriteOutcome::Waiting { seen: None });
    assert_eq!(*lua.instructions.lock() as usize, buffer_sync::MAX_ATTEMPTS);
    assert_eq!(host.sync.files().pending(&cp("/p/a.txt")), Some("y\n"));
    // Tried again as a disk edit once the client wrote and recorded it
    // (bounded too); the user's next report tries it after that.
    host.sync.write_recorded(&sid("s1"), &cp("/p/a.txt"), true);
    host.sync.disk_synced().await;
    assert_eq!(
        *lua.instructions.lock() as usize,
        2 * buffer_sync::MAX_ATTEMPTS
    );
    assert_eq!(host.sync.files().pending(&cp("/p/a.txt")), Some("y\n"));
}

/// A Lua side answering instructions from a script, in order (the
/// revision echoed), and keeping every instruction it got. A gated one
/// holds its answer to the first instruction until the gate opens.
struct Scripted {
    replies: Mutex<VecDeque<Json>>,
    seen: Mutex<Vec<Json>>,
    gate: Option<tokio::sync::Notify>,
}

impl Scripted {
    fn new(replies: Vec<Json>) -> Arc<Self> {
        Arc::new(Self {
            replies: Mutex::new(replies.into()),
            seen: Mutex::default(),
            gate: None,
        })
    }

    fn gated(replies: Vec<Json>) -> Arc<Self> {
        Arc::new(Self {
            replies: Mutex::new(replies.into()),
            seen: Mutex::default(),
            gate: Some(tokio::sync::Notify::new()),
        })
    }
}

#[async_trait]
impl Editor for Scripted {
    async fn dispatch(&self, _events: Vec<Value>) -> Result<(), crate::editor::LuaError> {
        Ok(())
    }
    async fn fs_read(&self, _args: Value) -> Result<Value, crate::editor::LuaError> {
        Ok(Value::Nil)
    }
    async fn fs_apply(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
        let args = msgpack::to_json(&args);
        let mut reply = self
            .replies
            .lock()
            .pop_front()
            .expect("an instruction the script did not expect");
        reply["revision"] = args["revision"].clone();
        let first = {
            let mut seen = self.seen.lock();
            seen.push(args);
            seen.len() == 1
        };
        if let (Some(gate), true) = (&self.gate, first) {
            gate.notified().await;
        }
        Ok(msgpack::from_json(&reply))
    }
}

fn scripted_host(replies: Vec<Json>) -> (NvimHost, Arc<Scripted>) {
    let lua = Scripted::new(replies);
    let (events, _rx) = EventQueue::new();
    let host = NvimHost::new(
        "demo",
        events,
        lua.clone(),
        Arc::new(Prompts::new()),
        Decisions::new(),
    );
    (host, lua)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_of_a_write_and_a_disk_edit_go_out_one_at_a_time() {
    let lua = Scripted::gated(vec![
        json!({"status": "saved", "tick": 3}),
        json!({"status": "reloaded", "tick": 4}),
    ]);
    let (events, _rx) = EventQueue::new();
    let host = Arc::new(NvimHost::new(
        "demo",
        events,
        lua.clone(),
        Arc::new(Prompts::new()),
        Decisions::new(),
    ));
    let path = &cp("/p/a.txt");
    let writer = {
        let host = host.clone();
        tokio::spawn(async move { host.sync.write(&write("w\n")).await })
    };
    while lua.seen.lock().is_empty() {
        tokio::task::yield_now().await;
    }
    // The agent's disk edit comes while the write's answer is on its
    // way: its instruction waits, or its answer could be recorded first
    // and the write's older one over it.
    host.sync.disk_changed(&sid("s1"), path, Some("w\n"), "d\n");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(lua.seen.lock().len(), 1, "the disk edit waited");
    if let Some(gate) = &lua.gate {
        gate.notify_one();
    }
    writer.await.unwrap().unwrap();
    host.sync.disk_synced().await;
    assert_eq!(lua.seen.lock().len(), 2);
    let files = host.sync.files();
    assert_eq!(
        files.buffer(path),
        Some(&BufferText {
            text: "d\n".into(),
            version: 4
        })
    );
    assert_eq!(files.disk(path), Some("d\n"));
}

#[tokio::test]
async fn a_disk_edit_reloads_an_unmodified_buffer_with_one_instruction() {
    let (host, lua) = scripted_host(vec![json!({"status": "reloaded", "tick": 3})]);
    let path = &cp("/p/a.txt");
    host.register(sid("s1"), chat("c7"), None);
    host.sync
        .disk_changed(&sid("s1"), path, Some("old\n"), "new\n");
    host.sync.disk_synced().await;
    // The text is on disk already: the unmodified buffer takes it
    // without saving (`disk`); its text is not known, so no merge. The
    // chat is named: the buffer's saves are reported to it at once.
    assert_eq!(
        *lua.seen.lock(),
        [
            json!({"path": "/p/a.txt", "revision": 1, "content": "new\n", "disk": true,
                "chat_id": "c7"})
        ]
    );
    {
        let files = host.sync.files();
        assert_eq!(files.disk(path), Some("new\n"));
        assert_eq!(
            files.buffer(path),
            Some(&BufferText {
                text: "new\n".into(),
                version: 3
            })
        );
    }
    // The watcher reading the same text after the diff: nothing sent.
    host.sync
        .disk_changed(&sid("s1"), path, Some("old\n"), "new\n");
    host.sync.disk_synced().await;
    assert_eq!(lua.seen.lock().len(), 1);
}

#[tokio::test]
async fn a_disk_edit_merges_into_unsaved_edits_on_the_synced_text_with_one_instruction() {
    let (host, lua) = scripted_host(vec![json!({"status": "merged", "tick": 5})]);
    let path = &cp("/p/a.txt");
    // Saved by the user (the disk text), then typed in.
    assert!(
        host.buffer_reported(path, "a\nb\n".into(), 2, OnDisk::Saved)
            .await
    );
    assert!(
        host.buffer_reported(path, "mine\na\nb\n".into(), 4, OnDisk::No)
            .await
    );
    // Review's "before" is older than what the buffer was in sync with.
    host.sync
        .disk_changed(&sid("s1"), path, Some("a\n"), "a\nB\n");
    host.sync.disk_synced().await;
    assert_eq!(
        *lua.seen.lock(),
        [
            json!({"path": "/p/a.txt", "revision": 1, "content": "a\nB\n", "disk": true,
                "merged": "mine\na\nB\n", "tick": 4})
        ]
    );
    let files = host.sync.files();
    assert_eq!(files.disk(path), Some("a\nB\n"));
    assert_eq!(files.buffer(path).unwrap().version, 5);
    assert_eq!(files.pending(path), None);
}

#[tokio::test]
async fn a_disk_edit_waits_for_open_conflicts_and_goes_out_once_they_are_resolved() {
    let (host, lua) = scripted_host(vec![
        json!({"status": "waiting", "tick": 3}),
        json!({"status": "merged", "tick": 6}),
    ]);
    let path = &cp("/p/a.txt");
    let blocks = "<<<<<<< buffer\nmine\n=======\nagent\n>>>>>>> agent\nz\n";
    host.buffer_reported(path, "old\nz\n".into(), 1, OnDisk::Read)
        .await;
    host.buffer_reported(path, blocks.into(), 2, OnDisk::No)
        .await;
    host.sync.disk_changed(&sid("s1"), path, None, "old\nZ\n");
    host.sync.disk_synced().await;
    // One instruction, answered waiting.
    assert_eq!(lua.seen.lock().len(), 1);
    assert_eq!(lua.seen.lock()[0]["tick"], 2);
    // Typing with the blocks open: recorded (by the reviews that lack the
    // agent's waiting text; the one holding it skips it), nothing sent.
    let typed = format!("{blocks}typed\n");
    assert!(
        host.buffer_reported(path, typed.as_str().into(), 3, OnDisk::No)
            .await
    );
    host.sync.disk_synced().await;
    assert_eq!(lua.seen.lock().len(), 1);
    // Resolved: the waiting text goes out again, merged on the synced
    // text.
    assert!(
        host.buffer_reported(path, "mine\nz\n".into(), 5, OnDisk::No)
            .await
    );
    host.sync.disk_synced().await;
    assert_eq!(
        lua.seen.lock()[1],
        json!({"path": "/p/a.txt", "revision": 2, "content": "old\nZ\n", "disk": true,
               "merged": "mine\nZ\n", "tick": 5})
    );
    assert_eq!(host.sync.files().pending(path), None);
    // The next report is the user's again.
    assert!(
        host.buffer_reported(path, "mine\nZ\nmore\n".into(), 7, OnDisk::No)
            .await
    );
}

#[tokio::test]
async fn an_agent_write_to_a_buffer_with_open_conflicts_is_tried_as_a_disk_edit() {
    let (host, lua) = scripted_host(vec![
        json!({"status": "waiting", "tick": 2}),
        json!({"status": "merged", "tick": 3}),
    ]);
    let path = &cp("/p/a.txt");
    let blocks = "<<<<<<< buffer\nmine\n=======\nagent\n>>>>>>> agent\nz\n";
    host.buffer_reported(path, "agent\nz\n".into(), 1, OnDisk::Read)
        .await;
    host.buffer_reported(path, blocks.into(), 2, OnDisk::No)
        .await;
    let outcome = host.sync.write(&write("agent\nz\nmore\n")).await.unwrap();
    assert_eq!(outcome, WriteOutcome::Waiting { seen: None });
    host.sync.disk_synced().await;
    assert_eq!(
        lua.seen.lock().len(),
        1,
        "not before the client recorded it"
    );
    host.sync.write_recorded(&sid("s1"), &cp("/p/a.txt"), true);
    host.sync.disk_synced().await;
    // Its merge around the open blocks does not conflict: taken.
    let seen = lua.seen.lock();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1]["disk"], true);
    assert_eq!(
        seen[1]["merged"],
        "<<<<<<< buffer\nmine\n=======\nagent\n>>>>>>> agent\nz\nmore\n"
    );
}

#[tokio::test]
async fn a_malformed_write_reply_is_an_error_for_the_agent() {
    let (host, _fs, _rx) = host_with(FakeFs {
        read: Value::from(3),
        apply: Value::from(true),
        seen: Mutex::default(),
    });
    assert!(matches!(
        host.sync.write(&write("x")).await,
        Err(acp_client::Error::Host(_))
    ));
    let r = ReadTextFile {
        session_id: sid("s1"),
        path: cp("/p/a.txt"),
        line: None,
        limit: None,
    };
    assert!(matches!(
        host.sync.read(&r).await,
        Err(acp_client::Error::Host(_))
    ));
}

#[tokio::test]
async fn the_text_before_a_turn_is_the_prompts_until_the_user_saves() {
    let (host, fs, _rx) = host_with(FakeFs::answering(Json::Null, Json::Null));
    let (p, q) = (&cp("/p/a.txt"), &cp("/p/b.txt"));
    let text_before = |path| host.sync.text_before_turn(&sid("s1"), path);
    assert_eq!(text_before(p), None);
    let at_prompt = |path: &Path, text: &str, disk: Option<&str>| crate::command::PromptBuffer {
        path: path.to_path_buf(),
        text: text.into(),
        tick: 1,
        disk: disk.map(Into::into),
    };
    host.buffers_at_prompt(
        &sid("s1"),
        vec![
            at_prompt(p, "old\n", None),
            at_prompt(q, "typed\n", Some("b\n")),
        ],
    );
    // No call into Lua: the backend holds the texts it was sent.
    assert_eq!(text_before(p).as_deref(), Some("old\n"));
    assert_eq!(
        text_before(q).as_deref(),
        Some("b\n"),
        "a modified buffer's file text"
    );
    assert_eq!(host.sync.text_before_turn(&sid("s2"), p), None);
    // A save: later differences are the user's.
    host.file_saved(p);
    assert_eq!(text_before(p), None);
    assert_eq!(text_before(q).as_deref(), Some("b\n"));
    // The next prompt without q: q's text is an earlier turn's.
    host.buffers_at_prompt(&sid("s1"), vec![at_prompt(p, "new\n", None)]);
    assert_eq!(text_before(p).as_deref(), Some("new\n"));
    assert_eq!(text_before(q), None);
    assert!(fs.seen.lock().is_empty());
}

#[tokio::test]
async fn restores_merge_against_the_text_review_knew_and_leave_the_disk() {
    let (host, fs, _rx) = host_with(FakeFs::answering(
        Json::Null,
        json!({"status": "merged", "revision": 1, "tick": 5}),
    ));
    host.buffer_reported(&cp("/p/a.txt"), "a\nnew\nb\nmine\n".into(), 4, OnDisk::No)
        .await;
    let restore = WriteTextFile {
        kind: WriteKind::Restore {
            current: Some("a\nnew\nb\n".into()),
        },
        ..write("a\nold\nb\n")
    };
    let outcome = host.sync.write(&restore).await.unwrap();
    assert_eq!(outcome, WriteOutcome::Saved { old_content: None });
    assert_eq!(
        msgpack::to_json(&fs.seen.lock()[0]),
        json!({"path": "/p/a.txt", "revision": 1, "content": "a\nold\nb\n",
               "merged": "a\nold\nb\nmine\n", "tick": 4, "restore": true})
    );
}

#[tokio::test]
async fn permission_prompts_are_answered_through_the_backend_id() {
    let (host, _fs, mut rx) = host_with(FakeFs::answering(Json::Null, Json::Null));
    host.register(sid("s1"), chat("a"), None);
    let prompts = host.prompts.clone();
    let waiting = tokio::spawn({
        let host = Arc::new(host);
        async move { host.request_permission(permission("s1", 7)).await }
    });
    let Event::PermissionRequest { request_id, .. } = rx.recv().await.unwrap() else {
        panic!("expected a permission request");
    };
    assert!(prompts.answer(request_id, Some("no".into())));
    assert_eq!(
        waiting.await.unwrap(),
        PermissionDecision::Selected {
            option_id: "no".into()
        }
    );
    assert!(prompts.is_empty());
}

#[tokio::test]
async fn a_dismissed_prompt_is_cancelled() {
    let (host, _fs, mut rx) = host_with(FakeFs::answering(Json::Null, Json::Null));
    host.register(sid("s1"), chat("a"), None);
    let prompts = host.prompts.clone();
    let host = Arc::new(host);
    let waiting = tokio::spawn({
        let host = host.clone();
        async move { host.request_permission(permission("s1", 8)).await }
    });
    let Event::PermissionRequest { request_id, .. } = rx.recv().await.unwrap() else {
        panic!("expected a permission request");
    };
    assert!(prompts.answer(request_id, None));
    assert_eq!(waiting.await.unwrap(), PermissionDecision::Cancelled);
    assert!(host.routes().prompt_ids.is_empty());
}
