//! Frame batching of events for Lua.
//!
//! Agents stream text in many small chunks (hundreds per second). One
//! `nvim_exec_lua` per chunk would make Neovim redraw and the transcript
//! re-render each time, so events are collected for one frame (~16 ms, or
//! until 500 are queued) and sent in ONE call, in order. While a batch is
//! being delivered, new events wait in the queue and go with the next one.
//!
//! The queue cannot make the agent wait (acp-client hands events over from
//! its read loop, which must not block), so when the agent streams faster
//! than Neovim renders, events pile up here. A streamed text chunk that
//! continues the text chunk queued last is therefore merged into it, and a
//! tool call's new state replaces the state queued last for the same tool
//! call: a backlog of a million 10-byte chunks is then a few events holding
//! the text, not a million events of ~450 bytes of overhead each (the
//! backend reached 456 MiB RSS in bench/rss.lua before this, see
//! doc/benchmarks.md).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};
use rmpv::Value;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use acp_client::tools::terminal::TerminalEvent;

use crate::editor::Editor;
use crate::protocol::Event;
pub use crate::protocol::MAX_MERGED_TEXT;
use crate::transcript::{self, Transcripts};

/// How long events are collected before they are sent.
pub const FRAME: Duration = Duration::from_millis(16);
/// A batch is sent at once when this many events are queued.
pub const MAX_BATCH: usize = 500;
/// A batch is sent at once when it holds this much streamed text, so that
/// merged chunks never make one Lua call long enough to stall a frame
/// (500 unmerged 100-byte chunks are 50 KB).
pub const MAX_BATCH_TEXT: usize = 64 * 1024;

#[derive(Debug, Default)]
struct Inner {
    state: Mutex<State>,
    /// Wakes the receiver: an event was queued or the last sender left.
    ready: Notify,
}

#[derive(Debug, Default)]
struct State {
    events: VecDeque<Event>,
    senders: usize,
    receiver_gone: bool,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }
}

/// Where the backend puts events for Lua. Cheap to clone; [`EventQueue::push`]
/// never blocks, so it is safe to call from acp-client's event callback.
#[derive(Debug)]
pub struct EventQueue {
    inner: Arc<Inner>,
}

/// The batcher's end of an [`EventQueue`].
#[derive(Debug)]
pub struct EventReceiver {
    inner: Arc<Inner>,
}

impl EventQueue {
    /// A queue and the receiver to hand to [`run`].
    pub fn new() -> (EventQueue, EventReceiver) {
        let inner = Arc::new(Inner::default());
        inner.lock().senders = 1;
        (
            EventQueue {
                inner: inner.clone(),
            },
            EventReceiver { inner },
        )
    }

    /// Queues an event, merged into the last queued one when it continues
    /// its text (see the module docs). Events pushed after the batcher
    /// stopped (Neovim is gone) are dropped.
    pub fn push(&self, event: Event) {
        {
            let mut state = self.inner.lock();
            if state.receiver_gone {
                tracing::debug!("event dropped: the batcher has stopped");
                return;
            }
            let Some(event) = merge_terminal_output(&mut state.events, event) else {
                return;
            };
            let event = match state.events.back_mut() {
                Some(last) => match last.merge(event) {
                    None => return,
                    Some(event) => event,
                },
                None => event,
            };
            state.events.push_back(event);
        }
        self.inner.ready.notify_one();
    }
}

impl Clone for EventQueue {
    fn clone(&self) -> Self {
        self.inner.lock().senders += 1;
        EventQueue {
            inner: self.inner.clone(),
        }
    }
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        let last = {
            let mut state = self.inner.lock();
            state.senders -= 1;
            state.senders == 0
        };
        if last {
            self.inner.ready.notify_one();
        }
    }
}

impl EventReceiver {
    /// The next event; `None` once every [`EventQueue`] is dropped and the
    /// queue is empty.
    pub async fn recv(&mut self) -> Option<Event> {
        loop {
            match self.try_recv() {
                Ok(event) => return Some(event),
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                // A push between try_recv and here leaves a permit in
                // `ready`, so this never misses it.
                Err(mpsc::error::TryRecvError::Empty) => self.inner.ready.notified().await,
            }
        }
    }

    /// The next event if one is queued.
    pub fn try_recv(&mut self) -> Result<Event, mpsc::error::TryRecvError> {
        let mut state = self.inner.lock();
        match state.events.pop_front() {
            Some(event) => Ok(event),
            None if state.senders == 0 => Err(mpsc::error::TryRecvError::Disconnected),
            None => Err(mpsc::error::TryRecvError::Empty),
        }
    }
}

impl Drop for EventReceiver {
    fn drop(&mut self) {
        let mut state = self.inner.lock();
        state.receiver_gone = true;
        state.events.clear();
    }
}

/// Terminal output kept per queued event: what the transcript keeps of a
/// terminal (`MAX_TERMINAL_BYTES` in lua/acp/chat/session.lua), so nothing Lua would
/// drop is queued.
pub const MAX_QUEUED_TERMINAL_OUTPUT: usize = 64 * 1024;

/// Queued events searched for an earlier output event of the same terminal.
const TERMINAL_LOOKBACK: usize = 256;

/// Folds a terminal's new output into its output event still queued, keeping
/// the newest [`MAX_QUEUED_TERMINAL_OUTPUT`] bytes, or trims it to them when
/// there is none. Without this, an agent running 16 `yes` terminals (issue
/// 25) queued a megabyte per terminal per 50 ms faster than Neovim drew
/// them, and the backend passed 600 MB. Only output events merge, and only
/// while no other event of that terminal (started, exited, released) lies
/// between them, so each terminal's events keep their order. Gives the
/// event back when it still has to be queued.
fn merge_terminal_output(queue: &mut VecDeque<Event>, mut event: Event) -> Option<Event> {
    let Event::Terminal {
        chat_id,
        terminal:
            TerminalEvent::Output {
                terminal_id,
                data,
                truncated,
                ..
            },
    } = &mut event
    else {
        return Some(event);
    };
    for queued in queue.iter_mut().rev().take(TERMINAL_LOOKBACK) {
        let Event::Terminal {
            chat_id: queued_chat,
            terminal: queued_terminal,
        } = queued
        else {
            continue;
        };
        if queued_chat != chat_id || terminal_id_of(queued_terminal) != Some(&*terminal_id) {
            continue;
        }
        if let TerminalEvent::Output {
            data: queued_data,
            truncated: queued_truncated,
            ..
        } = queued_terminal
        {
            queued_data.push_str(data);
            *queued_truncated |= *truncated | keep_tail(queued_data);
            return None;
        }
        break;
    }
    *truncated |= keep_tail(data);
    Some(event)
}

fn terminal_id_of(event: &TerminalEvent) -> Option<&acp_client::tools::terminal::TerminalId> {
    match event {
        TerminalEvent::Started { terminal_id, .. }
        | TerminalEvent::Output { terminal_id, .. }
        | TerminalEvent::Exited { terminal_id, .. }
        | TerminalEvent::Released { terminal_id, .. } => Some(terminal_id),
        _ => None,
    }
}

/// Drops the oldest bytes past [`MAX_QUEUED_TERMINAL_OUTPUT`] (at a
/// character boundary); true when it dropped any.
fn keep_tail(data: &mut String) -> bool {
    if data.len() <= MAX_QUEUED_TERMINAL_OUTPUT {
        return false;
    }
    let mut cut = data.len() - MAX_QUEUED_TERMINAL_OUTPUT;
    while !data.is_char_boundary(cut) {
        cut += 1;
    }
    data.drain(..cut);
    true
}

/// Bytes of streamed text an event carries (for the batch size).
fn streamed_text(event: &Event) -> usize {
    event.appended_text().map_or(0, str::len)
}

/// Whether an event is one the user waits for with nothing streaming
/// behind it, so its batch goes at once instead of waiting out the frame:
/// the end of a turn (every streamed answer reached the screen up to one
/// frame late) and the outcome of opening a session (`:Acp` was ready one
/// frame after the agent answered `session/new`, issue #30).
fn ends_batch(event: &Event) -> bool {
    matches!(
        event,
        Event::TurnEnded { .. }
            | Event::SessionStarted { .. }
            | Event::OpenFailed { .. }
            | Event::AuthRequired { .. }
    )
}

/// The batcher running on its own thread ([`spawn`]).
#[derive(Debug)]
pub struct BatcherThread {
    stop: Arc<Notify>,
}

impl BatcherThread {
    /// Stops the batcher: the batch being sent is its last.
    pub fn stop(&self) {
        self.stop.notify_one();
    }
}

/// Runs [`run`] on a thread of its own, with a single-threaded runtime.
/// On the backend's shared runtime the batcher was woken by the task that
/// reads the agent (its pushes), queued behind it, and an agent streaming
/// flat out kept that task busy: no batch left for up to 114 ms of a
/// 100,000-chunk answer (bench/tui_stream.lua; 8-13 ms on its own thread).
/// The editor's I/O stays on the runtime that made it; polling it from
/// here is what tokio's I/O types allow.
pub fn spawn(
    rx: EventReceiver,
    editor: Arc<dyn Editor>,
    transcripts: Option<Arc<Transcripts>>,
) -> std::io::Result<BatcherThread> {
    let stop = Arc::new(Notify::new());
    let stopped = stop.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    std::thread::Builder::new()
        .name("acp-batcher".into())
        .spawn(move || {
            runtime.block_on(async move {
                tokio::select! {
                    () = run(rx, editor, FRAME, MAX_BATCH, transcripts) => {}
                    () = stopped.notified() => tracing::debug!("event batcher stopped at shutdown"),
                }
            });
        })?;
    Ok(BatcherThread { stop })
}

/// Sends queued events to the editor in batches until every [`EventQueue`]
/// is dropped and the queue is empty. Each finished batch is handed to
/// `transcripts` (in the order Lua gets it) before it is encoded; their
/// buffered records are also flushed when events stop for
/// [`FLUSH_EVERY`](crate::transcript::FLUSH_EVERY).
pub async fn run(
    mut rx: EventReceiver,
    editor: Arc<dyn Editor>,
    frame: Duration,
    max_batch: usize,
    transcripts: Option<Arc<Transcripts>>,
) {
    let max_batch = max_batch.max(1);
    loop {
        let first = match &transcripts {
            None => rx.recv().await,
            Some(t) => match tokio::time::timeout(transcript::FLUSH_EVERY, rx.recv()).await {
                Ok(ev) => ev,
                Err(_idle) => {
                    t.flush_all();
                    continue;
                }
            },
        };
        let Some(first) = first else {
            break;
        };
        let deadline = Instant::now() + frame;
        let mut text = streamed_text(&first);
        let mut done = ends_batch(&first);
        let mut batch = vec![first];
        while !done && batch.len() < max_batch && text < MAX_BATCH_TEXT {
            // The frame ends the batch also while events keep coming: an
            // agent whose text trickles in steadily (chunks merged into one
            // event, never 64 KB of them) kept the queue from ever being
            // empty, and the batch from going, for up to 114 ms of a
            // 100,000-chunk answer in bench/tui_stream.lua.
            if Instant::now() >= deadline {
                break;
            }
            // Take what is already queued without waiting, then wait for
            // the rest of the frame.
            let next = match rx.try_recv() {
                Ok(ev) => Some(ev),
                Err(mpsc::error::TryRecvError::Empty) => {
                    match tokio::time::timeout_at(deadline, rx.recv()).await {
                        Ok(ev) => ev,
                        Err(_elapsed) => break,
                    }
                }
                Err(mpsc::error::TryRecvError::Disconnected) => None,
            };
            let Some(ev) = next else {
                break;
            };
            text += streamed_text(&ev);
            done = ends_batch(&ev);
            // The queue's merge rule again: chunks that arrived one by one
            // while the batch filled become one event.
            let merged = match batch.last_mut() {
                Some(last) => last.merge(ev),
                None => Some(ev),
            };
            batch.extend(merged);
        }
        if let Some(t) = &transcripts {
            t.record_batch(&batch);
        }
        let batch: Vec<Value> = batch.iter().map(Event::encode).collect();
        let n = batch.len();
        if tracing::enabled!(tracing::Level::TRACE) {
            tracing::trace!(n, "events to Lua: {batch:?}");
        }
        if let Err(e) = editor.dispatch(batch).await {
            tracing::warn!("could not deliver {n} events to Neovim: {e}");
        }
    }
    if let Some(t) = &transcripts {
        t.flush_all();
    }
    tracing::debug!("event batcher stopped");
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
pub(crate) mod tests {
    use std::sync::Mutex;

    use acp_client::schema;
    use acp_client::session::update::{Content, ToolKind, ToolStatus};
    use acp_client::session::{Entry, SessionChange, ToolCallState};
    use async_trait::async_trait;

    use super::*;
    use crate::editor::LuaError;
    use crate::msgpack;
    use crate::protocol::ChatId;

    /// Records every dispatch call.
    #[derive(Default)]
    pub(crate) struct Recorder {
        pub(crate) calls: Mutex<Vec<Vec<Value>>>,
    }

    #[async_trait]
    impl Editor for Recorder {
        async fn dispatch(&self, events: Vec<Value>) -> Result<(), LuaError> {
            self.calls.lock().unwrap().push(events);
            Ok(())
        }
        async fn fs_read(&self, _args: Value) -> Result<Value, LuaError> {
            Ok(Value::Nil)
        }
        async fn fs_apply(&self, _args: Value) -> Result<Value, LuaError> {
            Ok(Value::Nil)
        }
    }

    /// An event that neither merges nor ends a turn.
    fn numbered(i: usize) -> Event {
        Event::PromptFailed {
            chat_id: ChatId::from(i.to_string()),
            message: "failed".into(),
        }
    }

    fn chat_ids(batch: &[Value]) -> Vec<usize> {
        batch
            .iter()
            .map(|v| {
                msgpack::field(v, "chat_id")
                    .and_then(Value::as_str)
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn queued_events_go_in_batches_of_at_most_max_in_order() {
        let (queue, rx) = EventQueue::new();
        for i in 0..1200 {
            queue.push(numbered(i));
        }
        drop(queue);
        let recorder = Arc::new(Recorder::default());
        run(rx, recorder.clone(), FRAME, MAX_BATCH, None).await;
        let calls = recorder.calls.lock().unwrap();
        let sizes: Vec<usize> = calls.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![500, 500, 200]);
        let all: Vec<usize> = calls.iter().flat_map(|b| chat_ids(b)).collect();
        assert_eq!(all, (0..1200).collect::<Vec<_>>());
    }

    #[tokio::test(start_paused = true)]
    async fn events_of_one_frame_go_in_one_call() {
        let (queue, rx) = EventQueue::new();
        let recorder = Arc::new(Recorder::default());
        let task = tokio::spawn(run(rx, recorder.clone(), FRAME, MAX_BATCH, None));
        queue.push(numbered(1));
        // Within the frame (virtual time: no real waiting).
        tokio::time::sleep(FRAME / 4).await;
        queue.push(numbered(2));
        queue.push(numbered(3));
        // Well after the frame: a new batch.
        tokio::time::sleep(FRAME * 4).await;
        queue.push(numbered(4));
        drop(queue);
        task.await.unwrap();
        let calls = recorder.calls.lock().unwrap();
        let batches: Vec<Vec<usize>> = calls.iter().map(|b| chat_ids(b)).collect();
        assert_eq!(batches, vec![vec![1, 2, 3], vec![4]]);
    }

    #[tokio::test(start_paused = true)]
    async fn each_event_is_encoded_as_a_typed_map() {
        let (queue, rx) = EventQueue::new();
        queue.push(numbered(9));
        drop(queue);
        let recorder = Arc::new(Recorder::default());
        run(rx, recorder.clone(), FRAME, MAX_BATCH, None).await;
        let calls = recorder.calls.lock().unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(
            msgpack::field(&calls[0][0], "type").and_then(Value::as_str),
            Some("prompt_failed")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_end_goes_at_once_with_what_came_before() {
        let (queue, rx) = EventQueue::new();
        let recorder = Arc::new(Recorder::default());
        let task = tokio::spawn(run(rx, recorder.clone(), FRAME, MAX_BATCH, None));
        let start = Instant::now();
        queue.push(numbered(1));
        queue.push(Event::TurnEnded {
            chat_id: ChatId("1".into()),
            stop_reason: "end_turn".into(),
        });
        // Give the batcher a turn without reaching the end of the frame.
        tokio::time::sleep(FRAME / 8).await;
        let sent = recorder.calls.lock().unwrap().len();
        assert_eq!(
            sent, 1,
            "the batch ending the turn did not wait out the frame"
        );
        assert!(Instant::now() - start < FRAME);
        queue.push(numbered(2));
        drop(queue);
        task.await.unwrap();
        let calls = recorder.calls.lock().unwrap();
        let sizes: Vec<usize> = calls.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![2, 1]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_outcome_of_an_open_goes_at_once() {
        let started = Event::SessionStarted {
            chat_id: ChatId("1".into()),
            session_id: "s1".into(),
            agent_name: "demo".into(),
            modes: None,
            config_options: Vec::new(),
            capabilities: schema::AgentCapabilities::default(),
            auth_methods: Vec::new(),
            transcript_path: None,
            turn_base: 0,
        };
        let failed = Event::OpenFailed {
            chat_id: ChatId("2".into()),
            message: "the agent exited".into(),
            stderr_tail: None,
        };
        for outcome in [started, failed] {
            let (queue, rx) = EventQueue::new();
            let recorder = Arc::new(Recorder::default());
            let task = tokio::spawn(run(rx, recorder.clone(), FRAME, MAX_BATCH, None));
            let start = Instant::now();
            queue.push(outcome);
            tokio::time::sleep(FRAME / 8).await;
            assert_eq!(
                recorder.calls.lock().unwrap().len(),
                1,
                "the open's outcome did not wait out the frame"
            );
            assert!(Instant::now() - start < FRAME);
            drop(queue);
            task.await.unwrap();
        }
    }
    fn appended(chat: &str, index: usize, content: Content) -> Event {
        Event::Session {
            chat_id: ChatId(chat.into()),
            change: SessionChange::TextAppended {
                index,
                content,
                message_id: None,
            },
        }
    }

    fn text(t: &str) -> Content {
        Content::text(t)
    }

    fn drain(rx: &mut EventReceiver) -> Vec<Event> {
        std::iter::from_fn(|| rx.try_recv().ok()).collect()
    }

    #[test]
    fn queued_text_chunks_of_one_message_merge_into_one_event() {
        let (queue, mut rx) = EventQueue::new();
        for chunk in ["Hel", "lo", ", world"] {
            queue.push(appended("c1", 3, text(chunk)));
        }
        assert_eq!(
            drain(&mut rx),
            vec![appended("c1", 3, text("Hello, world"))]
        );
        // Once the batcher took an event, later text starts a new one.
        queue.push(appended("c1", 3, text("!")));
        queue.push(appended("c1", 3, text("?")));
        assert_eq!(drain(&mut rx), vec![appended("c1", 3, text("!?"))]);
    }

    #[test]
    fn only_plain_text_of_the_same_chat_entry_and_message_merges() {
        let (queue, mut rx) = EventQueue::new();
        let with_id = |t: &str, id: &str| Event::Session {
            chat_id: ChatId("c1".into()),
            change: SessionChange::TextAppended {
                index: 1,
                content: text(t),
                message_id: Some(id.into()),
            },
        };
        let annotated = Content::Known(schema::ContentBlock::Text(
            schema::TextContent::new("b").annotations(schema::Annotations::new().priority(1.0)),
        ));
        let sequence = vec![
            appended("c1", 1, text("a")),
            appended("c2", 1, text("other chat")),
            appended("c2", 2, text("other entry")),
            appended("c2", 2, annotated.clone()),
            appended("c2", 2, text("after annotated")),
            with_id("m1 ", "m1"),
            with_id("m2", "m2"),
            numbered(7),
            appended("c2", 2, text("after another event")),
        ];
        for ev in sequence.clone() {
            queue.push(ev);
        }
        assert_eq!(drain(&mut rx), sequence);

        let (queue, mut rx) = EventQueue::new();
        queue.push(with_id("a", "m1"));
        queue.push(with_id("b", "m1"));
        assert_eq!(drain(&mut rx), vec![with_id("ab", "m1")]);
    }

    #[tokio::test]
    async fn the_receiver_ends_when_every_queue_is_dropped() {
        let (queue, mut rx) = EventQueue::new();
        let other = queue.clone();
        drop(queue);
        other.push(numbered(1));
        let task = tokio::spawn(async move {
            let mut seen = Vec::new();
            while let Some(ev) = rx.recv().await {
                seen.push(ev);
            }
            seen
        });
        tokio::task::yield_now().await;
        other.push(numbered(2));
        drop(other);
        assert_eq!(task.await.unwrap(), vec![numbered(1), numbered(2)]);
    }
    fn tool(chat: &str, change: &str, index: usize, status: &str) -> Event {
        let mut state = ToolCallState::placeholder(format!("t{index}").into());
        state.title = "Run".into();
        state.kind = ToolKind::Execute;
        state.status = ToolStatus::from_wire(status);
        let change = match change {
            "entry_added" => SessionChange::EntryAdded {
                index,
                entry: Entry::ToolCall(state),
            },
            _ => SessionChange::ToolCallChanged {
                index,
                tool_call: state,
            },
        };
        Event::Session {
            chat_id: ChatId(chat.into()),
            change,
        }
    }

    #[test]
    fn a_queued_tool_call_takes_the_newer_state_of_the_same_tool_call() {
        let (queue, mut rx) = EventQueue::new();
        queue.push(tool("c1", "entry_added", 4, "pending"));
        queue.push(tool("c1", "tool_call_changed", 4, "in_progress"));
        queue.push(tool("c1", "tool_call_changed", 4, "completed"));
        queue.push(tool("c1", "tool_call_changed", 5, "in_progress"));
        queue.push(tool("c1", "tool_call_changed", 5, "completed"));
        queue.push(tool("c2", "tool_call_changed", 5, "failed"));
        queue.push(appended("c2", 6, text("x")));
        queue.push(tool("c2", "tool_call_changed", 5, "completed"));
        assert_eq!(
            drain(&mut rx),
            vec![
                tool("c1", "entry_added", 4, "completed"),
                tool("c1", "tool_call_changed", 5, "completed"),
                tool("c2", "tool_call_changed", 5, "failed"),
                appended("c2", 6, text("x")),
                tool("c2", "tool_call_changed", 5, "completed"),
            ]
        );
    }
    #[test]
    fn merged_text_stays_under_the_limit_per_event() {
        let (queue, mut rx) = EventQueue::new();
        let chunk = "x".repeat(1000);
        for _ in 0..40 {
            queue.push(appended("c1", 1, text(&chunk)));
        }
        let sizes: Vec<usize> = drain(&mut rx).iter().map(streamed_text).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 40_000);
        assert!(sizes.iter().all(|&n| n <= MAX_MERGED_TEXT), "{sizes:?}");
        assert_eq!(
            sizes.len(),
            40_000usize.div_ceil(MAX_MERGED_TEXT / 1000 * 1000)
        );
    }

    #[tokio::test]
    async fn a_frame_ends_the_batch_while_events_keep_coming() {
        // The queue is never empty while the batch is collected (everything
        // is queued already), and no limit of size ends it: only the frame
        // can, and collecting 100,000 events takes far longer than 50 µs
        // (real time).
        let (queue, rx) = EventQueue::new();
        let n = 100_000;
        for i in 0..n {
            queue.push(numbered(i));
        }
        drop(queue);
        let recorder = Arc::new(Recorder::default());
        run(
            rx,
            recorder.clone(),
            Duration::from_micros(50),
            usize::MAX,
            None,
        )
        .await;
        let calls = recorder.calls.lock().unwrap();
        assert!(
            calls.len() > 1,
            "the frame ended no batch: {} events in one",
            calls[0].len()
        );
        let all: Vec<usize> = calls.iter().flat_map(|b| chat_ids(b)).collect();
        assert_eq!(all, (0..n).collect::<Vec<_>>());
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_ends_once_it_holds_enough_text() {
        let (queue, rx) = EventQueue::new();
        let chunk = "y".repeat(MAX_MERGED_TEXT);
        // Different entries, so nothing merges: one full event per entry.
        for index in 0..10 {
            queue.push(appended("c1", index, text(&chunk)));
        }
        drop(queue);
        let recorder = Arc::new(Recorder::default());
        run(rx, recorder.clone(), FRAME, MAX_BATCH, None).await;
        let sizes: Vec<usize> = recorder
            .calls
            .lock()
            .unwrap()
            .iter()
            .map(Vec::len)
            .collect();
        let per_batch = MAX_BATCH_TEXT / MAX_MERGED_TEXT;
        assert_eq!(sizes, vec![per_batch, per_batch, 10 - 2 * per_batch]);
    }
}
