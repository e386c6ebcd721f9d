//! The edit layer: everything that follows a file an agent reads or
//! changes, from the agent's request to the user's buffer and disk.
//!
//! - [`fs`]: the workspace sandbox every agent path goes through, and the
//!   disk reads and atomic writes behind `fs/*`;
//! - [`buffer_sync`]: each file's one record ([`buffer_sync::FileRecords`]:
//!   its sync with the editor's open buffers, with instructions, merge
//!   bases and the user's reported text; and each session's review of it);
//! - [`merge`]: the line-based three-way merge both use;
//! - `diff`: line splitting and line diffs, under the merge, the hunks and
//!   the buffer sync;
//! - [`hunks`]: the data of a review, a file the agent changed as hunks,
//!   accepted or rejected one by one (kept in the file's record; a
//!   standalone [`hunks::EditTracker`] holds many);
//! - `review`: the review service, one per session: fed from `fs/*`
//!   writes, tool-call diffs and a file watcher, it applies the user's
//!   decisions and rewinds ([`crate::Review`] is its handle);
//! - [`checkpoint`]: each turn's texts, for a rewind;
//! - [`host`]: the editor boundary ([`host::EditorHost`], the events the
//!   client sends). It lives here because it is the seam of this layer:
//!   it names the buffer sync's and the hunks' types, and review serves the
//!   editor through it, so outside the folder it would make a cycle.

pub mod buffer_sync;
pub mod checkpoint;
pub(crate) mod diff;
pub mod fs;
pub mod host;
pub mod hunks;
pub mod merge;
pub(crate) mod review;
