//! Stopping an install from another thread: shared by the download, the
//! archive unpacking and the installer, which sits above both (a module of
//! its own so that `archive` and `download` do not import `install`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[cfg(doc)]
use crate::error::Error;

/// Stops an install from another thread; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token not cancelled yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the install to stop; it cleans up and fails with
    /// [`Error::InstallCancelled`].
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// True once [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
