//! `acp.complete_files`: workspace files for `@` completion in the prompt.
//!
//! One [`FileIndex`] per workspace directory (and hidden-files choice),
//! opened by the first completion there and kept fresh by its watcher, so
//! a keystroke only ranks paths already in memory. The few most recently
//! used indexes are kept; older ones are dropped with their watchers.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use acp_client::tools::index::{FileIndex, IndexOptions};
use rmpv::Value;
use serde::Serialize;

use crate::protocol::wire;

/// The answer to `acp.complete_files`.
#[derive(Debug, Serialize)]
struct FilesReply {
    /// Paths relative to `cwd`, `/`-separated, best match first.
    paths: Vec<String>,
    /// The index had finished its walk.
    ready: bool,
    /// The index stopped at its file limit.
    truncated: bool,
}

/// How long the first completion in a directory waits for its walk. Later
/// ones answer at once; a walk that takes longer answers with what it has
/// found so far (`ready = false`).
const READY_WAIT: Duration = Duration::from_secs(1);

/// Indexes kept at once.
const MAX_INDEXES: usize = 8;

/// Most paths one answer may hold.
pub const MAX_LIMIT: usize = 500;

/// A decoded `acp.complete_files` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileQuery {
    /// Absolute workspace directory (the chat's cwd).
    pub cwd: PathBuf,
    /// What the user typed after `@`.
    pub query: String,
    /// Most paths wanted (at most [`MAX_LIMIT`]).
    pub limit: usize,
    /// Index hidden files and directories too.
    pub hidden: bool,
}

type Key = (PathBuf, bool);

/// The backend's file indexes.
#[derive(Debug, Default)]
pub struct WorkspaceFiles {
    /// Most recently used last.
    indexes: Mutex<Vec<(Key, Arc<FileIndex>)>>,
}

impl WorkspaceFiles {
    /// No index yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn index(&self, key: Key) -> acp_client::Result<Arc<FileIndex>> {
        let mut list = self.indexes.lock();
        if let Some(pos) = list.iter().position(|(k, _)| *k == key) {
            let entry = list.remove(pos);
            let index = entry.1.clone();
            list.push(entry);
            return Ok(index);
        }
        let options = IndexOptions {
            hidden: key.1,
            ..IndexOptions::default()
        };
        let index = Arc::new(FileIndex::open(key.0.clone(), options)?);
        list.push((key, index.clone()));
        if list.len() > MAX_INDEXES {
            let (old, _) = list.remove(0);
            tracing::debug!(root = %old.0.display(), "dropping the least recently used file index");
        }
        Ok(index)
    }

    /// Answers a query ([`FilesReply`]);
    /// the error is a sentence for the user.
    pub async fn complete(self: Arc<Self>, q: FileQuery) -> Result<Value, Value> {
        let task = tokio::task::spawn_blocking(move || {
            let index = self.index((q.cwd.clone(), q.hidden))?;
            let ready = index.wait_ready(READY_WAIT);
            let paths = index.query(&q.query, q.limit.min(MAX_LIMIT));
            Ok::<_, acp_client::Error>((paths, ready, index.is_truncated()))
        });
        match task.await {
            Ok(Ok((paths, ready, truncated))) => Ok(wire::encode(&FilesReply {
                paths,
                ready,
                truncated,
            })),
            Ok(Err(e)) => Err(Value::from(e.to_string())),
            Err(e) => {
                tracing::error!("file completion task failed: {e}");
                Err(Value::from(
                    "file completion failed; see the acp.nvim log (:Acp log)",
                ))
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use crate::msgpack;

    fn paths(v: &Value) -> Vec<String> {
        msgpack::field(v, "paths")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn answers_from_the_index_and_reuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join(".gitignore"), "skip.rs\n").unwrap();
        std::fs::write(root.join("main.rs"), "x").unwrap();
        std::fs::write(root.join("skip.rs"), "x").unwrap();
        let files = Arc::new(WorkspaceFiles::new());
        let q = FileQuery {
            cwd: root.clone(),
            query: ".rs".into(),
            limit: 10,
            hidden: false,
        };
        let v = files.clone().complete(q.clone()).await.unwrap();
        assert_eq!(paths(&v), vec!["main.rs"]);
        assert_eq!(msgpack::field(&v, "ready"), Some(&Value::from(true)));
        files.clone().complete(q).await.unwrap();
        assert_eq!(files.indexes.lock().len(), 1);
    }

    #[tokio::test]
    async fn a_missing_directory_is_an_error_sentence() {
        let files = Arc::new(WorkspaceFiles::new());
        let err = files
            .complete(FileQuery {
                cwd: "/no/such/dir/anywhere".into(),
                query: String::new(),
                limit: 5,
                hidden: false,
            })
            .await
            .unwrap_err();
        assert!(err.as_str().unwrap().contains("not a directory"), "{err}");
    }
}
