//! Permission prompts (and, in [`crate::elicitation`], elicitations)
//! waiting for the user's answer.
//!
//! acp-client numbers permission requests per agent, so two agents can both
//! have a request 1. The plugin answers by id without knowing the agent, so
//! the backend hands out its own ids, unique for the backend's lifetime.
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use tokio::sync::oneshot;

use crate::command::PromptId;
use crate::elicitation::Elicitations;

/// The answer to a prompt: the option id, or `None` when dismissed.
pub type Answer = Option<String>;

/// Every pending prompt, across all agents.
#[derive(Debug, Default)]
pub struct Prompts {
    next: AtomicU64,
    pending: Mutex<HashMap<PromptId, oneshot::Sender<Answer>>>,
    /// Pending elicitations (forms and URLs), numbered on their own.
    pub elicitations: Elicitations,
}

impl Prompts {
    /// An empty set; the first id is 1.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a new prompt and returns its id and the receiver of its
    /// answer. The receiver fails when the prompt is withdrawn.
    pub fn open(&self) -> (PromptId, oneshot::Receiver<Answer>) {
        let id = PromptId(self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, tx);
        (id, rx)
    }

    /// Delivers the user's answer; false when the prompt is no longer
    /// pending (answered already, or withdrawn because the turn was
    /// cancelled: a normal race with the user's key press).
    pub fn answer(&self, id: PromptId, answer: Answer) -> bool {
        match self.pending.lock().remove(&id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Forgets a prompt without an answer.
    pub fn withdraw(&self, id: PromptId) {
        self.pending.lock().remove(&id);
    }

    /// How many prompts are pending.
    pub fn len(&self) -> usize {
        self.pending.lock().len()
    }

    /// True when no prompt is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Withdraws a prompt when dropped, so a prompt whose request future was
/// dropped (turn cancelled) cannot be answered later.
#[derive(Debug)]
pub struct Withdraw<'a> {
    /// The set the prompt is in.
    pub prompts: &'a Prompts,
    /// The prompt to withdraw.
    pub id: PromptId,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.prompts.withdraw(self.id);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_reach_the_waiting_prompt_once() {
        let prompts = Prompts::new();
        let (a, rx_a) = prompts.open();
        let (b, rx_b) = prompts.open();
        assert_ne!(a, b);
        assert!(prompts.answer(b, Some("allow".into())));
        assert!(!prompts.answer(b, Some("again".into())));
        assert_eq!(rx_b.await.unwrap(), Some("allow".into()));
        assert!(prompts.answer(a, None));
        assert_eq!(rx_a.await.unwrap(), None);
        assert!(prompts.is_empty());
    }

    #[tokio::test]
    async fn a_withdrawn_prompt_cannot_be_answered() {
        let prompts = Prompts::new();
        let (id, rx) = prompts.open();
        drop(Withdraw {
            prompts: &prompts,
            id,
        });
        assert!(!prompts.answer(id, Some("allow".into())));
        assert!(rx.await.is_err());
    }
}
