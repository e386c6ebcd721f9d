//! Cancellation of one turn by `session/cancel`.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Set once by `session/cancel`; waited on by steps that block.
#[derive(Debug, Default)]
pub struct CancelToken {
    cancelled: Mutex<bool>,
    changed: Condvar,
}

impl CancelToken {
    /// Marks the turn cancelled and wakes whoever waits.
    pub fn cancel(&self) {
        *self.cancelled.lock() = true;
        self.changed.notify_all();
    }

    /// Whether `session/cancel` reached this turn.
    pub fn is_cancelled(&self) -> bool {
        *self.cancelled.lock()
    }

    /// Blocks until cancelled.
    pub fn wait(&self) {
        let mut cancelled = self.cancelled.lock();
        while !*cancelled {
            self.changed.wait(&mut cancelled);
        }
    }

    /// Sleeps for `duration` or until cancelled; returns whether cancelled.
    pub fn sleep(&self, duration: Duration) -> bool {
        let deadline = Instant::now() + duration;
        let mut cancelled = self.cancelled.lock();
        while !*cancelled {
            if self
                .changed
                .wait_until(&mut cancelled, deadline)
                .timed_out()
            {
                return *cancelled;
            }
        }
        true
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
