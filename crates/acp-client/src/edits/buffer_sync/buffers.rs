//! What an editor implements ([`Buffers`]) and what its reads answer.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::instruction::{Applied, Instruction};
use super::ReadTextFile;
use crate::error::Result;
use crate::path::CanonicalPath;
use crate::session::update::SessionId;

#[cfg(doc)]
use super::BufferSync;

/// A loaded buffer's answer to an agent's read ([`Buffers::read`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferRead {
    /// What the agent gets: the lines it asked for.
    pub text: String,
    /// The buffer's version now.
    pub version: u64,
    /// The whole buffer; `None` when it is still at the version the client
    /// said it knows (then it answers only the range: an agent paging
    /// through a 1,000,000-line buffer must not ship it each time).
    pub view: Option<BufferView>,
}

/// The whole of a buffer an agent read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferView {
    /// The whole text as the agent reads it (open conflict blocks as the
    /// agent's side): what it saw of the file.
    pub whole: Arc<str>,
    /// The buffer's text as it is (conflict blocks included).
    pub buffer: Arc<str>,
}

/// A buffer as a prompt goes out ([`BufferSync::turn_started`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferAtPrompt {
    /// The file, resolved by the editor where it decoded the path, so it
    /// keys the same record as the agent's requests.
    pub path: CanonicalPath,
    /// The buffer's text.
    pub text: String,
    /// The buffer's version.
    pub version: u64,
    /// The file's text on disk, when the buffer has unsaved edits.
    pub disk: Option<String>,
}

/// An editor's buffers, as the sync drives them: the one narrow trait an
/// editor implements to get agent reads of unsaved text, agent writes
/// merged into unsaved buffers, and the agent's own disk edits brought
/// into them ([`BufferSync`]). Every method is called from a task of its
/// own and must not wait on the user.
#[async_trait]
pub trait Buffers: Send + Sync + 'static {
    /// The loaded buffer of `request.path`, cut to `request.line` and
    /// `request.limit`; `None` when no loaded buffer has the file (the
    /// client reads the disk). `known`: the buffer version the client
    /// holds the text of (see [`BufferRead::view`]).
    async fn read(&self, request: &ReadTextFile, known: Option<u64>) -> Result<Option<BufferRead>> {
        let _ = (request, known);
        Ok(None)
    }

    /// Applies one instruction to the loaded buffer of its file (see
    /// [`Instruction`] for what each kind of buffer takes) and answers.
    async fn apply(&self, instruction: &Instruction) -> Result<Applied>;

    /// The file's text on disk (`None`: no file, not a regular file, too
    /// big, or not UTF-8). Defaults to reading it as the client reads a file
    /// for an agent: a FIFO or device in the workspace is refused, not
    /// waited on (found by the security test: a plain read of a FIFO with
    /// no writer hung the agent's `fs/read_text_file` forever). An editor
    /// with its own file system (a test's memory, a remote one) overrides
    /// it.
    async fn disk_text(&self, path: &Path) -> Option<String> {
        crate::edits::fs::read_text_file(path, None, None, crate::edits::fs::DEFAULT_MAX_READ_BYTES)
            .await
            .ok()
    }

    /// Tells the user something about a file an agent wrote (a refused
    /// write, a disk edit its buffer could not take); `session`: the agent's
    /// session, when known. Defaults to the log.
    fn tell_user(&self, path: &Path, session: Option<&SessionId>, message: String) {
        let _ = session;
        tracing::warn!(path = %path.display(), "{message}");
    }
}
