//! Frame batching of events for Lua.
//!
//! Agents stream text in many small chunks (hundreds per second). One
//! `nvim_exec_lua` per chunk would make Neovim redraw and the transcript
//! re-render each time, so events are collected for one frame (~16 ms, or
//! until 500 are queued) and sent in ONE call, in order. While a batch is
//! being delivered, new events wait in the queue and go with the next one.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::editor::Editor;
use crate::event::Event;

/// How long events are collected before they are sent.
pub const FRAME: Duration = Duration::from_millis(16);
/// A batch is sent at once when this many events are queued.
pub const MAX_BATCH: usize = 500;

/// Where the backend puts events for Lua. Cheap to clone; [`EventQueue::push`]
/// never blocks, so it is safe to call from acp-client's event callback.
#[derive(Debug, Clone)]
pub struct EventQueue {
    tx: mpsc::UnboundedSender<Event>,
}

impl EventQueue {
    /// A queue and the receiver to hand to [`run`].
    pub fn new() -> (EventQueue, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (EventQueue { tx }, rx)
    }

    /// Queues an event. Events pushed after the batcher stopped (Neovim is
    /// gone) are dropped.
    pub fn push(&self, event: Event) {
        if self.tx.send(event).is_err() {
            tracing::debug!("event dropped: the batcher has stopped");
        }
    }
}

/// Sends queued events to the editor in batches until every [`EventQueue`]
/// is dropped and the queue is empty.
pub async fn run(
    mut rx: mpsc::UnboundedReceiver<Event>,
    editor: Arc<dyn Editor>,
    frame: Duration,
    max_batch: usize,
) {
    let max_batch = max_batch.max(1);
    while let Some(first) = rx.recv().await {
        let deadline = Instant::now() + frame;
        let mut batch = vec![first.to_value()];
        while batch.len() < max_batch {
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
            match next {
                Some(ev) => batch.push(ev.to_value()),
                None => break,
            }
        }
        let n = batch.len();
        if tracing::enabled!(tracing::Level::TRACE) {
            tracing::trace!(n, "events to Lua: {batch:?}");
        }
        if let Err(e) = editor.dispatch(batch).await {
            tracing::warn!("could not deliver {n} events to Neovim: {e}");
        }
    }
    tracing::debug!("event batcher stopped");
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
pub(crate) mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use rmpv::Value;

    use super::*;
    use crate::command::ChatId;
    use crate::editor::LuaError;
    use crate::msgpack;

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
        async fn fs_write(&self, _args: Value) -> Result<Value, LuaError> {
            Ok(Value::Nil)
        }
    }

    fn numbered(i: usize) -> Event {
        Event::TurnEnded {
            chat_id: ChatId(i.to_string()),
            stop_reason: "end_turn".into(),
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
        run(rx, recorder.clone(), FRAME, MAX_BATCH).await;
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
        let task = tokio::spawn(run(rx, recorder.clone(), FRAME, MAX_BATCH));
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
        run(rx, recorder.clone(), FRAME, MAX_BATCH).await;
        let calls = recorder.calls.lock().unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(
            msgpack::field(&calls[0][0], "type").and_then(Value::as_str),
            Some("turn_ended")
        );
    }
}
