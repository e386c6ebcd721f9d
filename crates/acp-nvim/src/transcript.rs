//! The client's own transcript of every session: JSONL files the plugin can
//! reopen read-only after a restart, also for agents that cannot load
//! sessions.
//!
//! A chat whose `acp.open` named a `transcript_dir` writes
//! `<dir>/<agent>/<session id>.jsonl`. Each line is one event exactly as Lua
//! got it (without `chat_id`), so the plugin renders a transcript with the
//! same code as a live chat; the first line of each opening is a header
//! (`{"type": "transcript", ...}`).
//!
//! The batcher hands over each finished batch ([`Transcripts::record_batch`]),
//! so events are recorded in the order Lua sees them. Recording starts at
//! the chat's `session_started`: the replay of a `session/load` (sent
//! before it) is already in the file or is the agent's to give. Streamed
//! text is merged by the protocol's one rule ([`Event::merge`]) across
//! batches too, and the file is written through a buffer that is flushed
//! when a turn ends, when the chat closes, and otherwise at most once per
//! [`FLUSH_EVERY`], so a stream of chunks never costs one write each.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use serde_json::{json, Value as Json};

use crate::msgpack;
use crate::protocol::{ChatId, Event};

/// Buffered records are written at least this often while events flow.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Version of the record format, in each header. 2: every key snake_case
/// (version 1 records carried acp-client's camelCase; the plugin renames
/// them when it replays an old file, `acp.rpc.protocol.decode_record`).
pub const FORMAT_VERSION: u32 = 2;

/// The file of a session's transcript under `dir`. Names are kept to
/// `[A-Za-z0-9._-]` (anything else becomes `_`) so that an agent name or a
/// session id can never leave `dir`; the header keeps the real values.
pub fn path_for(dir: &Path, agent_name: &str, session_id: &str) -> PathBuf {
    dir.join(safe_name(agent_name))
        .join(format!("{}.jsonl", safe_name(session_id)))
}

fn safe_name(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with('.') {
        out.insert(0, '_');
    }
    out
}

/// How a session was opened, for the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// `session/new`.
    New,
    /// `session/load`.
    Load,
    /// `session/resume`.
    Resume,
}

impl Opening {
    fn as_str(self) -> &'static str {
        match self {
            Opening::New => "new",
            Opening::Load => "load",
            Opening::Resume => "resume",
        }
    }
}

/// A transcript the chat task announced, waiting for its `session_started`.
#[derive(Debug)]
struct Writer {
    session_id: String,
    path: PathBuf,
    header: Json,
    file: Option<BufWriter<File>>,
    /// Streamed text not written yet.
    pending: Option<Event>,
    dirty: bool,
}

impl Writer {
    fn activate(&mut self) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let mut file = BufWriter::with_capacity(64 * 1024, file);
        write_line(&mut file, &self.header)?;
        self.file = Some(file);
        self.dirty = true;
        Ok(())
    }

    fn record(&mut self, event: &Event) -> std::io::Result<()> {
        if event.appended_text().is_some() {
            let next = match &mut self.pending {
                Some(pending) => pending.merge(event.clone()),
                None => Some(event.clone()),
            };
            if let Some(next) = next {
                self.write_pending()?;
                self.pending = Some(next);
            }
            return Ok(());
        }
        self.write_pending()?;
        self.write(event)
    }

    fn write_pending(&mut self) -> std::io::Result<()> {
        match self.pending.take() {
            Some(event) => self.write(&event),
            None => Ok(()),
        }
    }

    /// Writes an event as its record: what Lua gets, without `chat_id`.
    fn write(&mut self, event: &Event) -> std::io::Result<()> {
        if let Some(file) = &mut self.file {
            msgpack::write_json(file, &event.encode(), Some("chat_id"))?;
            file.write_all(b"\n")?;
            self.dirty = true;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.write_pending()?;
        if let Some(file) = &mut self.file {
            file.flush()?;
        }
        self.dirty = false;
        Ok(())
    }
}

fn write_line(out: &mut impl Write, record: &Json) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, record)?;
    out.write_all(b"\n")
}

/// Whether an event ends a unit worth having on disk at once.
fn flushes(event: &Event) -> bool {
    matches!(
        event,
        Event::TurnEnded { .. } | Event::PromptFailed { .. } | Event::AgentExited { .. }
    )
}

/// Whether an event belongs in a transcript. Permission prompts do not (a
/// reopened transcript cannot answer them; their outcome shows in the tool
/// call), nor do warnings or failures to open.
fn recorded(event: &Event) -> bool {
    matches!(
        event,
        Event::SessionStarted { .. }
            | Event::Session { .. }
            | Event::PermissionAuto { .. }
            | Event::Terminal { .. }
            | Event::TurnEnded { .. }
            | Event::PromptFailed { .. }
            | Event::AgentExited { .. }
    )
}

/// The transcripts of every chat.
#[derive(Debug, Default)]
pub struct Transcripts {
    writers: Mutex<HashMap<ChatId, Writer>>,
    /// When buffered records were last written while events flowed.
    last_flush: Mutex<Option<Instant>>,
}

impl Transcripts {
    /// No transcripts yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Announces the transcript of `session_id` in `chat`, at `path`; it
    /// starts with the chat's `session_started` for that session. Replaces
    /// what the chat had (its previous session's file is flushed).
    pub fn expect(
        &self,
        chat: &ChatId,
        session_id: &str,
        path: PathBuf,
        agent_name: &str,
        cwd: &Path,
        opening: Opening,
    ) {
        let header = json!({
            "type": "transcript",
            "version": FORMAT_VERSION,
            "agent_name": agent_name,
            "session_id": session_id,
            "cwd": cwd,
            "opening": opening.as_str(),
            "opened_at": SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        });
        let writer = Writer {
            session_id: session_id.to_owned(),
            path,
            header,
            file: None,
            pending: None,
            dirty: false,
        };
        if let Some(mut old) = self.writers.lock().insert(chat.clone(), writer) {
            if let Err(e) = old.flush() {
                tracing::warn!(path = %old.path.display(), "could not write a transcript: {e}");
            }
        }
    }

    /// Flushes and forgets the transcript of `chat` if it is the one of
    /// `session_id` (a newer session of the same chat stays).
    pub fn close(&self, chat: &ChatId, session_id: &str) {
        let mut writers = self.writers.lock();
        if writers
            .get(chat)
            .is_some_and(|w| w.session_id == session_id)
        {
            if let Some(mut w) = writers.remove(chat) {
                if let Err(e) = w.flush() {
                    tracing::warn!(path = %w.path.display(), "could not write a transcript: {e}");
                }
            }
        }
    }

    /// Records a batch of events on its way to Lua, in order.
    pub fn record_batch(&self, events: &[Event]) {
        for event in events {
            self.record(event);
        }
        let due = {
            let mut last = self.last_flush.lock();
            let now = Instant::now();
            match *last {
                Some(t) if now.duration_since(t) < FLUSH_EVERY => false,
                Some(_) => {
                    *last = Some(now);
                    true
                }
                None => {
                    *last = Some(now);
                    false
                }
            }
        };
        if due {
            self.flush_all();
        }
    }

    /// Records one event on its way to Lua.
    pub fn record(&self, event: &Event) {
        if !recorded(event) {
            return;
        }
        let Some(chat) = event.chat_id() else {
            return;
        };
        let mut writers = self.writers.lock();
        let Some(writer) = writers.get_mut(chat) else {
            return;
        };
        let result = (|| {
            if let Event::SessionStarted { session_id, .. } = event {
                if *session_id != writer.session_id {
                    return Ok(());
                }
                if writer.file.is_none() {
                    writer.activate()?;
                }
            }
            if writer.file.is_none() {
                // Before its session started: a load's replay, or events of
                // the chat's previous session.
                return Ok(());
            }
            writer.record(event)?;
            if flushes(event) {
                writer.flush()?;
            }
            Ok::<(), std::io::Error>(())
        })();
        if let Err(e) = result {
            tracing::warn!(path = %writer.path.display(), "could not write the transcript; it stops here: {e}");
            writers.remove(chat);
        }
    }

    /// Writes what is buffered.
    pub fn flush_all(&self) {
        for w in self.writers.lock().values_mut() {
            if w.dirty || w.pending.is_some() {
                if let Err(e) = w.flush() {
                    tracing::warn!(path = %w.path.display(), "could not write a transcript: {e}");
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    fn chat() -> ChatId {
        ChatId("c1".into())
    }

    fn started(session: &str) -> Event {
        Event::SessionStarted {
            chat_id: chat(),
            session_id: session.into(),
            agent_name: "demo".into(),
            modes: None,
            config_options: Vec::new(),
            capabilities: acp_client::schema::AgentCapabilities::default(),
            auth_methods: Vec::new(),
            transcript_path: None,
            turn_base: 0,
        }
    }

    fn chunk(index: usize, text: &str) -> Event {
        Event::Session {
            chat_id: chat(),
            change: acp_client::session::SessionChange::TextAppended {
                index,
                content: acp_client::session::update::Content::text(text),
                message_id: None,
            },
        }
    }

    fn turn_ended() -> Event {
        Event::TurnEnded {
            chat_id: chat(),
            stop_reason: "end_turn".into(),
        }
    }

    fn records(path: &Path) -> Vec<Json> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn names_cannot_leave_the_directory() {
        let p = path_for(Path::new("/t"), "../evil agent", "a/b\\c");
        assert_eq!(p, PathBuf::from("/t/_.._evil_agent/a_b_c.jsonl"));
        assert_eq!(
            path_for(Path::new("/t"), "", ".hidden"),
            PathBuf::from("/t/_/_.hidden.jsonl")
        );
    }

    #[test]
    fn records_start_at_session_started_and_chunks_are_coalesced() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "demo", "s1");
        let t = Transcripts::new();
        t.expect(
            &chat(),
            "s1",
            path.clone(),
            "demo",
            dir.path(),
            Opening::Load,
        );
        // A load's replay comes before session_started: not recorded.
        t.record(&chunk(0, "replayed"));
        t.record(&started("s1"));
        t.record(&chunk(1, "Hel"));
        t.record(&chunk(1, "lo"));
        t.record(&chunk(2, "!"));
        t.record(&Event::Warning {
            chat_id: Some(chat()),
            message: "not kept".into(),
        });
        t.record(&turn_ended());
        // Flushed at the end of the turn, without closing.
        let r = records(&path);
        assert_eq!(r.len(), 5, "{r:#?}");
        assert_eq!(r[0]["type"], "transcript");
        assert_eq!(r[0]["session_id"], "s1");
        assert_eq!(r[0]["opening"], "load");
        assert_eq!(r[0]["version"], FORMAT_VERSION);
        assert_eq!(r[1]["type"], "session_started");
        assert!(r[1].get("chat_id").is_none());
        assert_eq!(r[2]["change"]["content"]["text"], "Hello");
        assert_eq!(r[2]["change"]["index"], 1);
        assert_eq!(r[3]["change"]["content"]["text"], "!");
        assert_eq!(
            r[4],
            json!({"type": "turn_ended", "stop_reason": "end_turn"})
        );
    }

    #[test]
    fn a_reopened_session_appends_a_new_header_and_close_flushes() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "demo", "s1");
        let t = Transcripts::new();
        for opening in [Opening::New, Opening::Resume] {
            t.expect(&chat(), "s1", path.clone(), "demo", dir.path(), opening);
            t.record(&started("s1"));
            t.record(&chunk(0, "text"));
            t.close(&chat(), "s1");
        }
        let r = records(&path);
        let kinds: Vec<&str> = r.iter().map(|r| r["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "transcript",
                "session_started",
                "session",
                "transcript",
                "session_started",
                "session"
            ]
        );
        assert_eq!(r[3]["opening"], "resume");
    }

    #[test]
    fn closing_an_old_session_leaves_the_chats_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new();
        t.expect(
            &chat(),
            "old",
            path_for(dir.path(), "d", "old"),
            "d",
            dir.path(),
            Opening::New,
        );
        t.expect(
            &chat(),
            "new",
            path_for(dir.path(), "d", "new"),
            "d",
            dir.path(),
            Opening::New,
        );
        t.close(&chat(), "old");
        t.record(&started("new"));
        t.record(&turn_ended());
        assert_eq!(records(&path_for(dir.path(), "d", "new")).len(), 3);
        assert!(!path_for(dir.path(), "d", "old").exists());
    }

    #[test]
    fn batches_are_recorded_in_order_and_text_merges_across_them() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new();
        let path = path_for(dir.path(), "demo", "s1");
        t.expect(
            &chat(),
            "s1",
            path.clone(),
            "demo",
            dir.path(),
            Opening::New,
        );
        t.record_batch(&[started("s1"), chunk(0, "a")]);
        t.record_batch(&[chunk(0, "b"), turn_ended(), chunk(1, "c")]);
        t.flush_all();
        let r = records(&path);
        let texts: Vec<&Json> = r
            .iter()
            .filter_map(|rec| rec.get("change")?.get("content")?.get("text"))
            .collect();
        assert_eq!(texts, [&json!("ab"), &json!("c")]);
        assert_eq!(r[3]["type"], "turn_ended");
    }
}
