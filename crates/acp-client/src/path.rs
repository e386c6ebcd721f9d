//! A file's one key: [`CanonicalPath`], made by one function.
//!
//! Every holder of a file's state (the buffer sync's records, review,
//! checkpoints) and every gate an agent's path goes through
//! ([`crate::edits::fs::Workspace::resolve`]) keys the file by the same
//! path: absolute, `.` and `..` resolved, every symbolic link on the way
//! followed the way the kernel walks it. Before this type there were three
//! normalisers (the workspace's walk, `std::fs::canonicalize` for a
//! prompt's embedded files, and a lexical one for permission roots), and a
//! file reached through a symlink or a missing directory could be two keys.

use std::borrow::Borrow;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::ops::Deref;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};

/// How many symbolic links one path may pass through, as Linux's `MAXSYMLINKS`.
const MAX_SYMLINK_FOLLOWS: u32 = 40;

/// An absolute path with `.` and `..` resolved and its symbolic links
/// followed: the one key of a file's state. Made only by
/// [`CanonicalPath::resolve`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct CanonicalPath(PathBuf);

impl CanonicalPath {
    /// The one normalising function: walks the absolute `path` component by
    /// component like the kernel does (`link/..` is the parent of the
    /// link's target), replacing every existing symlink by its target;
    /// components that do not exist yet are kept as written, so a file
    /// about to be created keys the same as once it exists. A relative
    /// path is taken against the current directory. Blocking: one `lstat`
    /// (and `readlink` per symlink) per component.
    pub fn resolve(path: &Path) -> Result<Self> {
        let absolute = std::path::absolute(path).map_err(|source| Error::FileIo {
            path: path.to_owned(),
            action: "make absolute",
            source,
        })?;
        resolve_symlinks(&absolute).map(Self)
    }

    /// The path.
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// The path, owned.
    pub fn into_path_buf(self) -> PathBuf {
        self.0
    }
}

impl Deref for CanonicalPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for CanonicalPath {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

/// Maps keyed by [`CanonicalPath`] are looked up by `&Path` (an already
/// canonical path the caller holds); `Hash` and `Eq` are `Path`'s.
impl Borrow<Path> for CanonicalPath {
    fn borrow(&self) -> &Path {
        &self.0
    }
}

/// Comparing with a plain path only reads it (a test's expected path, an
/// editor's own table of paths); nothing is keyed by the plain one.
impl PartialEq<Path> for CanonicalPath {
    fn eq(&self, other: &Path) -> bool {
        self.0 == other
    }
}

impl PartialEq<&Path> for CanonicalPath {
    fn eq(&self, other: &&Path) -> bool {
        self.0 == *other
    }
}

impl PartialEq<PathBuf> for CanonicalPath {
    fn eq(&self, other: &PathBuf) -> bool {
        self.0 == *other
    }
}

impl PartialEq<CanonicalPath> for PathBuf {
    fn eq(&self, other: &CanonicalPath) -> bool {
        *self == other.0
    }
}

impl PartialEq<CanonicalPath> for Path {
    fn eq(&self, other: &CanonicalPath) -> bool {
        self == other.0
    }
}

impl From<CanonicalPath> for PathBuf {
    fn from(path: CanonicalPath) -> Self {
        path.0
    }
}

impl fmt::Display for CanonicalPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.display().fmt(f)
    }
}

/// One step left to walk while resolving a path.
enum Step {
    Parent,
    Name(OsString),
}

fn push_steps_front(queue: &mut VecDeque<Step>, path: &Path) {
    let steps: Vec<Step> = path
        .components()
        .filter_map(|c| match c {
            Component::ParentDir => Some(Step::Parent),
            Component::Normal(n) => Some(Step::Name(n.to_owned())),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    for step in steps.into_iter().rev() {
        queue.push_front(step);
    }
}

/// Walks an absolute path component by component like the kernel does:
/// `..` goes to the parent of what was resolved so far (so `link/..` is the
/// parent of the link's target, not the directory holding the link), and
/// every existing symlink is replaced by its target. Components that do not
/// exist are appended as written. A dangling symlink is followed too, so a
/// write that would create its target is checked against the target.
fn resolve_symlinks(path: &Path) -> Result<PathBuf> {
    let mut out = PathBuf::from("/");
    let mut queue = VecDeque::new();
    push_steps_front(&mut queue, path);
    let mut follows = 0;
    while let Some(step) = queue.pop_front() {
        match step {
            Step::Parent => {
                out.pop();
            }
            Step::Name(name) => {
                let candidate = out.join(&name);
                let is_link = std::fs::symlink_metadata(&candidate)
                    .map(|m| m.file_type().is_symlink())
                    // Missing, or not searchable: the kernel could not follow
                    // anything there either, so treat it as a plain name.
                    .unwrap_or(false);
                if !is_link {
                    out = candidate;
                    continue;
                }
                follows += 1;
                if follows > MAX_SYMLINK_FOLLOWS {
                    return Err(Error::InvalidParams(format!(
                        "path `{}` passes through too many symbolic links (a loop?)",
                        path.display()
                    )));
                }
                let target = std::fs::read_link(&candidate).map_err(|source| Error::FileIo {
                    path: candidate.clone(),
                    action: "read the symbolic link",
                    source,
                })?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_steps_front(&mut queue, &target);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    #[test]
    fn resolve_follows_dotdot_after_a_symlink_like_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::os::unix::fs::symlink(root.join("a/b"), root.join("link")).unwrap();
        assert_eq!(
            CanonicalPath::resolve(&root.join("link/../x"))
                .unwrap()
                .as_path(),
            root.join("a/x")
        );
    }

    #[test]
    fn a_missing_file_keys_as_it_will_once_created() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        let before = CanonicalPath::resolve(&root.join("link/./new.txt")).unwrap();
        std::fs::write(root.join("real/new.txt"), "x").unwrap();
        let after = CanonicalPath::resolve(&root.join("real/new.txt")).unwrap();
        assert_eq!(before, after);
        assert_eq!(after.as_path(), root.join("real/new.txt"));
    }
}
