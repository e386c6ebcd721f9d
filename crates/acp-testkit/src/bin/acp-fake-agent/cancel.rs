//! Cancellation of one turn by `session/cancel`.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Set once by `session/cancel`; waited on by steps that block.
#[derive(Debug, Default)]
pub struct CancelToken {
    cancelled: Mutex<bool>,
    changed: Condvar,
}

impl CancelToken {
    /// Marks the turn cancelled and wakes whoever waits.
    pub fn cancel(&self) {
        *self.flag() = true;
        self.changed.notify_all();
    }

    /// Whether `session/cancel` reached this turn.
    pub fn is_cancelled(&self) -> bool {
        *self.flag()
    }

    /// Blocks until cancelled.
    pub fn wait(&self) {
        let mut cancelled = self.flag();
        while !*cancelled {
            cancelled = self
                .changed
                .wait(cancelled)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Sleeps for `duration` or until cancelled; returns whether cancelled.
    pub fn sleep(&self, duration: Duration) -> bool {
        let deadline = Instant::now() + duration;
        let mut cancelled = self.flag();
        while !*cancelled {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            cancelled = self
                .changed
                .wait_timeout(cancelled, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    fn flag(&self) -> std::sync::MutexGuard<'_, bool> {
        self.cancelled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn cancel_wakes_a_waiter_and_ends_a_sleep() {
        let token = Arc::new(CancelToken::default());
        assert!(!token.sleep(Duration::from_millis(1)));
        let waiter = {
            let token = token.clone();
            std::thread::spawn(move || {
                token.wait();
                token.sleep(Duration::from_secs(3600))
            })
        };
        token.cancel();
        assert!(waiter.join().unwrap_or(false));
        assert!(token.is_cancelled());
    }
}
