//! An index of a workspace's files, for `@` mentions in prompts.
//!
//! [`FileIndex::open`] walks the directory once with the `ignore` crate (the
//! walker ripgrep uses) on a background thread, then keeps the list fresh
//! from file system events: a query never walks the disk.
//!
//! What is indexed:
//! - regular files (symbolic links are listed, never followed);
//! - not what `.gitignore`, `.ignore`, `.git/info/exclude` or the global git
//!   excludes file ignore, also outside a git repository (users expect
//!   `.gitignore` to apply to a fresh project before `git init`);
//! - no hidden files or directories (names starting with `.`) unless
//!   [`IndexOptions::hidden`] is set; `.git` itself is never indexed;
//! - at most [`IndexOptions::max_files`] files: opening Neovim in `$HOME`
//!   must not walk the whole disk. [`FileIndex::is_truncated`] tells.
//! - paths that are not UTF-8 are skipped (they cannot travel in a prompt).
//!
//! Freshness: every indexed directory is watched, not recursively, so
//! events from ignored trees (`target/`, `node_modules/`) never arrive.
//! Events are debounced; then each directory that saw a change is listed
//! again (one `read_dir`, with the ignore rules of its ancestors) and the
//! difference applied: new files and directories are added (a new directory
//! is walked), vanished ones removed with everything under them. A change to
//! an ignore file re-walks the directory that holds it.

mod rank;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::error::{Error, Result};

/// How a [`FileIndex`] walks and watches.
#[derive(Debug, Clone)]
pub struct IndexOptions {
    /// Also index hidden files and directories (names starting with `.`).
    /// `.git` is never indexed.
    pub hidden: bool,
    /// Stop indexing after this many files.
    pub max_files: usize,
    /// Quiet time after the last file system event before the index is
    /// updated: builds and checkouts touch many files in a burst.
    pub debounce: Duration,
}

impl Default for IndexOptions {
    fn default() -> Self {
        Self {
            hidden: false,
            max_files: 100_000,
            debounce: Duration::from_millis(50),
        }
    }
}

/// The longest a burst of events can hold back an update.
const MAX_DEBOUNCE: Duration = Duration::from_secs(1);

/// Names of the files whose change re-walks their directory.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// The indexed files of one workspace directory, kept fresh by a watcher.
///
/// Dropping it stops the watcher and its thread.
#[derive(Debug)]
pub struct FileIndex {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    root: PathBuf,
    options: IndexOptions,
    state: Mutex<State>,
    ready: Condvar,
    /// Held by the index only: dropping the index drops the watcher, which
    /// closes the event channel and ends the worker thread.
    watcher: Mutex<Option<RecommendedWatcher>>,
}

#[derive(Debug, Default)]
struct State {
    /// Files, relative to the root, `/`-separated.
    files: BTreeSet<String>,
    /// Directories whose content is indexed, relative to the root (`""` is
    /// the root).
    dirs: BTreeSet<String>,
    truncated: bool,
    ready: bool,
    generation: u64,
    /// A watch could not be added (e.g. the inotify limit): warned once.
    watch_failed: bool,
}

impl FileIndex {
    /// Starts indexing `root` (an existing directory) on a background
    /// thread and watching it. Queries answer from what is indexed so far;
    /// [`FileIndex::wait_ready`] waits for the first walk.
    pub fn open(root: impl Into<PathBuf>, options: IndexOptions) -> Result<FileIndex> {
        let root = root.into();
        let fail = |reason: String| Error::FileIndex {
            root: root.clone(),
            reason,
        };
        if !root.is_absolute() {
            return Err(fail("the path is not absolute".into()));
        }
        if !root.is_dir() {
            return Err(fail("it is not a directory".into()));
        }
        let (tx, rx) = mpsc::channel();
        let watcher = notify::recommended_watcher(tx).map_err(|e| fail(e.to_string()))?;
        let shared = Arc::new(Shared {
            root: root.clone(),
            options,
            state: Mutex::new(State::default()),
            ready: Condvar::new(),
            watcher: Mutex::new(Some(watcher)),
        });
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("acp-file-index".into())
            .spawn(move || worker(weak, rx))
            .map_err(|e| fail(format!("could not start its thread: {e}")))?;
        Ok(FileIndex { shared })
    }

    /// The indexed directory.
    pub fn root(&self) -> &Path {
        &self.shared.root
    }

    /// True once the first walk is done.
    pub fn is_ready(&self) -> bool {
        self.shared.state.lock().ready
    }

    /// Waits (blocking) until the first walk is done, at most `timeout`;
    /// true when it is.
    pub fn wait_ready(&self, timeout: Duration) -> bool {
        let mut state = self.shared.state.lock();
        self.shared
            .ready
            .wait_while_for(&mut state, |s| !s.ready, timeout);
        state.ready
    }

    /// True when the walk stopped at [`IndexOptions::max_files`].
    pub fn is_truncated(&self) -> bool {
        self.shared.state.lock().truncated
    }

    /// Number of indexed files.
    pub fn len(&self) -> usize {
        self.shared.state.lock().files.len()
    }

    /// True when no file is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A number that grows each time the index changes (the first walk, or
    /// a batch of file system events applied).
    pub fn generation(&self) -> u64 {
        self.shared.state.lock().generation
    }

    /// True when `path` (relative, `/`-separated) is indexed.
    pub fn contains(&self, path: &str) -> bool {
        self.shared.state.lock().files.contains(path)
    }

    /// At most `limit` indexed files matching `query`, best first, as paths
    /// relative to the root with `/` separators. Matching ignores ASCII
    /// case; a file name equal to or starting with the query ranks first,
    /// then paths starting with it, containing it, and last paths holding
    /// its characters in order (`mrs` finds `src/main.rs`). An empty query
    /// lists the shortest paths.
    pub fn query(&self, query: &str, limit: usize) -> Vec<String> {
        let state = self.shared.state.lock();
        rank::best(state.files.iter().map(String::as_str), query, limit)
    }
}

impl Drop for FileIndex {
    fn drop(&mut self) {
        // Stops the events at once, even while the worker still holds a
        // strong reference during a walk.
        self.shared.watcher.lock().take();
    }
}

/// The relative `/`-separated form of `path` under `root`.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut out = String::new();
    for c in rel.components() {
        let part = c.as_os_str().to_str()?;
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(part);
    }
    Some(out)
}

/// Everything under `dir` (exclusive) in a set of relative paths.
fn under<'a>(set: &'a BTreeSet<String>, dir: &'a str) -> impl Iterator<Item = &'a String> + 'a {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    set.range(prefix.clone()..)
        .take_while(move |p| p.starts_with(&prefix))
}

/// What one walk found.
#[derive(Debug, Default)]
struct Found {
    files: Vec<String>,
    dirs: Vec<String>,
}

impl Shared {
    fn walker(&self, dir: &Path, max_depth: Option<usize>) -> ignore::Walk {
        let mut b = ignore::WalkBuilder::new(dir);
        b.hidden(!self.options.hidden)
            .parents(true)
            .ignore(true)
            .git_ignore(true)
            .git_global(true)
            .git_exclude(true)
            .require_git(false)
            .follow_links(false)
            .max_depth(max_depth)
            .filter_entry(|e| e.file_name() != ".git");
        b.build()
    }

    /// Walks `dir` (absolute, under the root): its accepted files and
    /// directories (not `dir` itself), watching each directory entered.
    /// `budget` is how many more files may be indexed.
    fn walk(&self, dir: &Path, max_depth: Option<usize>, budget: usize) -> (Found, bool) {
        let mut found = Found::default();
        let mut truncated = false;
        for entry in self.walker(dir, max_depth) {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    tracing::debug!("file index: {e}");
                    continue;
                }
            };
            if entry.depth() == 0 {
                continue;
            }
            let Some(rel) = relative(&self.root, entry.path()) else {
                tracing::debug!(path = %entry.path().display(), "file index: skipping a path that is not UTF-8");
                continue;
            };
            match entry.file_type() {
                Some(t) if t.is_dir() => {
                    if max_depth != Some(1) {
                        self.watch(entry.path());
                    }
                    found.dirs.push(rel);
                }
                Some(_) => {
                    if found.files.len() >= budget {
                        truncated = true;
                        break;
                    }
                    found.files.push(rel);
                }
                None => {}
            }
        }
        (found, truncated)
    }

    fn watch(&self, dir: &Path) {
        let mut watcher = self.watcher.lock();
        let Some(w) = watcher.as_mut() else {
            return;
        };
        if let Err(e) = w.watch(dir, RecursiveMode::NonRecursive) {
            let mut state = self.state.lock();
            if !state.watch_failed {
                state.watch_failed = true;
                tracing::warn!(
                    "file index of {}: cannot watch {} ({e}); new files there will not be offered for @ completion. On Linux, raise fs.inotify.max_user_watches",
                    self.root.display(),
                    dir.display()
                );
            }
        }
    }

    fn unwatch(&self, dir: &Path) {
        if let Some(w) = self.watcher.lock().as_mut() {
            // Gone directories lose their watch by themselves; this only
            // tidies the watcher's own bookkeeping.
            let _ = w.unwatch(dir);
        }
    }

    /// The first walk.
    fn build(&self) {
        self.watch(&self.root);
        let (found, truncated) = self.walk(&self.root, None, self.options.max_files);
        let mut state = self.state.lock();
        state.dirs = found.dirs.into_iter().collect();
        state.dirs.insert(String::new());
        state.files = found.files.into_iter().collect();
        state.truncated = truncated;
        state.ready = true;
        state.generation += 1;
        if truncated {
            tracing::warn!(
                "file index of {}: stopped at {} files; @ completion offers only those",
                self.root.display(),
                self.options.max_files
            );
        }
        tracing::debug!(root = %self.root.display(), files = state.files.len(), "file index built");
        self.ready.notify_all();
    }

    /// Forgets `dir` and everything under it.
    fn remove_tree(&self, state: &mut State, dir: &str) {
        let files: Vec<String> = under(&state.files, dir).cloned().collect();
        for f in files {
            state.files.remove(&f);
        }
        let dirs: Vec<String> = under(&state.dirs, dir).cloned().collect();
        for d in dirs {
            self.unwatch(&self.root.join(&d));
            state.dirs.remove(&d);
        }
        if !dir.is_empty() {
            self.unwatch(&self.root.join(dir));
            state.dirs.remove(dir);
        }
    }

    fn add(&self, state: &mut State, found: Found) {
        state.dirs.extend(found.dirs);
        for f in found.files {
            if state.files.len() >= self.options.max_files {
                state.truncated = true;
                break;
            }
            state.files.insert(f);
        }
    }

    /// Walks `dir` (known) again from scratch.
    fn rewalk(&self, dir: &str) {
        let abs = self.root.join(dir);
        let budget = self.options.max_files;
        let (found, truncated) = if abs.is_dir() {
            self.walk(&abs, None, budget)
        } else {
            (Found::default(), false)
        };
        let mut state = self.state.lock();
        let dir_exists = abs.is_dir();
        let was_root = dir.is_empty();
        self.remove_tree(&mut state, dir);
        if dir_exists || was_root {
            state.dirs.insert(dir.to_owned());
            self.add(&mut state, found);
            state.truncated |= truncated;
        }
    }

    /// Lists `dir` (known) again and applies the difference.
    fn resync(&self, dir: &str) {
        let abs = self.root.join(dir);
        if !abs.is_dir() {
            let mut state = self.state.lock();
            self.remove_tree(&mut state, dir);
            return;
        }
        let (listed, _) = self.walk(&abs, Some(1), usize::MAX);
        let (now_files, now_dirs): (HashSet<String>, HashSet<String>) = (
            listed.files.into_iter().collect(),
            listed.dirs.into_iter().collect(),
        );
        let is_child = |p: &str| {
            let rest = if dir.is_empty() {
                p
            } else {
                &p[dir.len() + 1..]
            };
            !rest.contains('/')
        };
        let (old_files, old_dirs): (Vec<String>, Vec<String>) = {
            let state = self.state.lock();
            (
                under(&state.files, dir)
                    .filter(|p| is_child(p))
                    .cloned()
                    .collect(),
                under(&state.dirs, dir)
                    .filter(|p| is_child(p))
                    .cloned()
                    .collect(),
            )
        };
        let new_dirs: Vec<&String> = now_dirs.iter().filter(|d| !old_dirs.contains(d)).collect();
        // New directories are walked without the lock: they may be big.
        let mut walked = Vec::new();
        for d in new_dirs {
            let abs = self.root.join(d);
            self.watch(&abs);
            let (found, truncated) = self.walk(&abs, None, self.options.max_files);
            walked.push((d.clone(), found, truncated));
        }
        let mut state = self.state.lock();
        for f in old_files.iter().filter(|f| !now_files.contains(*f)) {
            state.files.remove(f);
        }
        for d in old_dirs.iter().filter(|d| !now_dirs.contains(*d)) {
            self.remove_tree(&mut state, d);
        }
        for f in now_files {
            if !state.files.contains(&f) {
                if state.files.len() >= self.options.max_files {
                    state.truncated = true;
                    break;
                }
                state.files.insert(f);
            }
        }
        for (d, found, truncated) in walked {
            state.dirs.insert(d);
            self.add(&mut state, found);
            state.truncated |= truncated;
        }
    }

    /// Applies a batch of file system events.
    fn apply(&self, events: Vec<Event>) {
        let mut resync: BTreeSet<String> = BTreeSet::new();
        let mut rewalk: BTreeSet<String> = BTreeSet::new();
        for event in events {
            if event.need_rescan() {
                // The kernel dropped events (inotify queue overflow).
                rewalk.insert(String::new());
                continue;
            }
            let content_only = matches!(
                event.kind,
                EventKind::Access(_)
                    | EventKind::Modify(
                        notify::event::ModifyKind::Data(_) | notify::event::ModifyKind::Metadata(_)
                    )
            );
            for path in &event.paths {
                let Some(rel) = relative(&self.root, path) else {
                    continue;
                };
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let parent = match rel.rfind('/') {
                    Some(i) => rel[..i].to_owned(),
                    None if rel.is_empty() => {
                        // The root itself changed (removed, renamed).
                        rewalk.insert(String::new());
                        continue;
                    }
                    None => String::new(),
                };
                if IGNORE_FILES.contains(&name) {
                    rewalk.insert(parent);
                } else if !content_only {
                    resync.insert(parent);
                }
            }
        }
        let known = |d: &String| self.state.lock().dirs.contains(d);
        for dir in rewalk.iter().filter(|d| known(d)) {
            self.rewalk(dir);
        }
        for dir in resync.iter().filter(|d| known(d)) {
            // A directory under one just walked again is up to date.
            if rewalk
                .iter()
                .any(|r| r.is_empty() || dir == r || dir.starts_with(&format!("{r}/")))
            {
                continue;
            }
            self.resync(dir);
        }
        let mut state = self.state.lock();
        state.generation += 1;
    }
}

/// The index's thread: the first walk, then event batches until the index
/// is dropped.
fn worker(shared: Weak<Shared>, rx: mpsc::Receiver<notify::Result<Event>>) {
    match shared.upgrade() {
        Some(s) => s.build(),
        None => return,
    }
    loop {
        let first = match rx.recv() {
            Ok(ev) => ev,
            Err(_) => return,
        };
        let Some(debounce) = shared.upgrade().map(|s| s.options.debounce) else {
            return;
        };
        let mut batch = vec![first];
        let started = Instant::now();
        loop {
            let left = MAX_DEBOUNCE.saturating_sub(started.elapsed());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(debounce.min(left)) {
                Ok(ev) => batch.push(ev),
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
        let events: Vec<Event> = batch
            .into_iter()
            .filter_map(|r| match r {
                Ok(ev) => Some(ev),
                Err(e) => {
                    tracing::debug!("file index watcher: {e}");
                    None
                }
            })
            .collect();
        let Some(s) = shared.upgrade() else {
            return;
        };
        s.apply(events);
    }
}
