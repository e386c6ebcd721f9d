//! The edit review commands (see "Edit review" in `doc/protocol.md`):
//! the user's decisions on the agent's changes, the user's own edits of
//! those files, and one diagnostic query (`acp.file_sync`). Lua asks
//! nothing to draw or decide: `review_changed` carries every review, and a
//! decision on a whole file or on everything names no hunk (the backend
//! resolves which hunks, of which chats, it covers).

use std::fmt;
use std::path::PathBuf;

use acp_client::edits::buffer_sync::OnDisk;
use acp_client::edits::hunks::HunkId;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use super::de as cmd_de;
use super::ChatId;

/// Which agent changes a review decision covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewTarget {
    /// These hunks of one file (ids from `review_changed`).
    Hunks {
        /// Absolute path of the file.
        path: PathBuf,
        /// The hunks, in the order given.
        ids: Vec<HunkId>,
    },
    /// Every change of one file.
    File {
        /// Absolute path of the file.
        path: PathBuf,
    },
    /// Every change of the chat's session (of every chat's, without a
    /// chat), but in these files: the user has new conflicts to resolve
    /// there first.
    All {
        /// Absolute paths of the files left out.
        except: Vec<PathBuf>,
    },
}

/// The edit review commands.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub enum ReviewCommand {
    /// `acp.file_sync` (request): what the backend holds of a file's sync
    /// with its buffer (diagnostics: tests, bug reports).
    #[serde(rename = "acp.file_sync")]
    Sync {
        /// The chat concerned.
        #[serde(deserialize_with = "cmd_de::chat_id")]
        chat_id: ChatId,
        /// Absolute path of the file.
        #[serde(deserialize_with = "cmd_de::abs_path")]
        path: PathBuf,
    },
    /// `acp.review_accept`: the changes stay, and leave the review.
    #[serde(rename = "acp.review_accept", deserialize_with = "decision")]
    Accept {
        /// The chat concerned; `None`: every chat whose review holds the
        /// target.
        chat_id: Option<ChatId>,
        /// What to accept.
        target: ReviewTarget,
    },
    /// `acp.review_reject`: the changes are undone (buffer and disk).
    #[serde(rename = "acp.review_reject", deserialize_with = "decision")]
    Reject {
        /// The chat concerned; `None`: every chat whose review holds the
        /// target.
        chat_id: Option<ChatId>,
        /// What to reject.
        target: ReviewTarget,
    },
    /// `acp.review_delete`: delete a file whose creation the user rejected
    /// and then confirmed deleting.
    #[serde(rename = "acp.review_delete")]
    Delete {
        /// The chat concerned.
        #[serde(deserialize_with = "cmd_de::chat_id")]
        chat_id: ChatId,
        /// Absolute path of the file.
        #[serde(deserialize_with = "cmd_de::abs_path")]
        path: PathBuf,
    },
    /// `acp.user_edit`: the user changed a file under review, so their text
    /// is not taken for the agent's.
    #[serde(rename = "acp.user_edit")]
    UserEdit {
        /// The chat concerned.
        #[serde(deserialize_with = "cmd_de::chat_id")]
        chat_id: ChatId,
        /// Absolute path of the file.
        #[serde(deserialize_with = "cmd_de::abs_path")]
        path: PathBuf,
        /// The buffer's whole text; `None` when the user deleted the file.
        #[serde(default)]
        content: Option<String>,
        /// Then accept the hunks of the new text touching these 0-based
        /// lines (`[start, end)`): a conflict the user just resolved.
        #[serde(default, deserialize_with = "line_range")]
        accept_lines: Option<(usize, usize)>,
        /// The buffer's tick (`acp.edits.fs.tick`) at `content`: the backend merges the
        /// agent's next write against this text (see
        /// `acp_client::edits::buffer_sync`).
        #[serde(default)]
        tick: Option<u64>,
        /// `content` is the file's text on disk: the user saved the buffer
        /// (`saved`), or it was just read (`read`: not an edit, only the
        /// buffer's state, the base of merging the agent's next disk edit).
        #[serde(default = "not_on_disk", deserialize_with = "on_disk")]
        disk: OnDisk,
    },
}

impl ReviewCommand {
    /// The method name the command arrived as.
    pub fn name(&self) -> &'static str {
        match self {
            ReviewCommand::Sync { .. } => "acp.file_sync",
            ReviewCommand::Accept { .. } => "acp.review_accept",
            ReviewCommand::Reject { .. } => "acp.review_reject",
            ReviewCommand::Delete { .. } => "acp.review_delete",
            ReviewCommand::UserEdit { .. } => "acp.user_edit",
        }
    }

    /// The chat concerned; `None` for a decision of every chat.
    pub fn chat_id(&self) -> Option<&ChatId> {
        match self {
            ReviewCommand::Accept { chat_id, .. } | ReviewCommand::Reject { chat_id, .. } => {
                chat_id.as_ref()
            }
            ReviewCommand::Sync { chat_id, .. }
            | ReviewCommand::Delete { chat_id, .. }
            | ReviewCommand::UserEdit { chat_id, .. } => Some(chat_id),
        }
    }

    /// True for the request that answers with data (the diagnostic
    /// `acp.file_sync`).
    pub fn is_query(&self) -> bool {
        matches!(self, ReviewCommand::Sync { .. })
    }
}

/// `acp.review_accept` and `acp.review_reject`: `chat_id?`, `path?`,
/// `hunks?` and `except?`: hunks of a file (of one chat: ids are a chat's),
/// a whole file, or (no path) all but the `except` files.
fn decision<'de, D: Deserializer<'de>>(d: D) -> Result<(Option<ChatId>, ReviewTarget), D::Error> {
    #[derive(Deserialize)]
    struct Params {
        #[serde(default, deserialize_with = "opt_chat_id")]
        chat_id: Option<ChatId>,
        #[serde(default, deserialize_with = "cmd_de::opt_abs_path")]
        path: Option<PathBuf>,
        #[serde(default, deserialize_with = "hunk_ids")]
        hunks: Option<Vec<HunkId>>,
        #[serde(default, deserialize_with = "cmd_de::abs_paths")]
        except: Vec<PathBuf>,
    }
    let p = Params::deserialize(d)?;
    if p.path.is_some() && !p.except.is_empty() {
        return Err(de::Error::custom(
            "`except` is for a decision of all files; leave out `path`",
        ));
    }
    let target = match (p.path, p.hunks) {
        (None, None) => ReviewTarget::All { except: p.except },
        (None, Some(_)) => return Err(de::Error::custom("`hunks` needs the `path` of their file")),
        (Some(_), Some(_)) if p.chat_id.is_none() => {
            return Err(de::Error::custom(
                "`hunks` needs the `chat_id` whose review numbered them",
            ))
        }
        (Some(path), None) => ReviewTarget::File { path },
        (Some(path), Some(ids)) => ReviewTarget::Hunks { path, ids },
    };
    Ok((p.chat_id, target))
}

/// An optional `chat_id`.
fn opt_chat_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ChatId>, D::Error> {
    cmd_de::chat_id(d).map(Some)
}

/// `hunks`: a non-empty list of hunk ids.
fn hunk_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<HunkId>>, D::Error> {
    struct Id(HunkId);
    impl<'de> Deserialize<'de> for Id {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct IdVisitor;
            impl Visitor<'_> for IdVisitor {
                type Value = HunkId;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a list of hunk ids, which are integers")
                }
                fn visit_u64<E: de::Error>(self, n: u64) -> Result<HunkId, E> {
                    Ok(HunkId::from(n))
                }
            }
            d.deserialize_any(IdVisitor).map(Id)
        }
    }
    struct Ids;
    impl<'de> Visitor<'de> for Ids {
        type Value = Vec<HunkId>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of hunk ids")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<HunkId>, A::Error> {
            let mut ids = Vec::new();
            while let Some(Id(id)) = seq.next_element()? {
                ids.push(id);
            }
            if ids.is_empty() {
                return Err(de::Error::custom(
                    "is empty; leave it out to decide on the whole file",
                ));
            }
            Ok(ids)
        }
    }
    d.deserialize_seq(Ids).map(Some)
}

/// `accept_lines` of `acp.user_edit`: `{start, end}`, 0-based, end
/// excluded.
fn line_range<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(usize, usize)>, D::Error> {
    struct Pair;
    impl<'de> Visitor<'de> for Pair {
        type Value = (usize, usize);
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a pair {start, end}")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(usize, usize), A::Error> {
            let mut lines = Vec::new();
            while let Some(cmd_de::LossyJson(v)) = seq.next_element()? {
                lines.push(v);
            }
            let [a, b] = &lines[..] else {
                return Err(de::Error::custom("must be a pair {start, end}"));
            };
            match (a.as_u64(), b.as_u64()) {
                (Some(a), Some(b)) if a <= b => Ok((
                    usize::try_from(a).unwrap_or(usize::MAX),
                    usize::try_from(b).unwrap_or(usize::MAX),
                )),
                _ => Err(de::Error::custom(
                    "must be {start, end} with 0 <= start <= end",
                )),
            }
        }
    }
    d.deserialize_seq(Pair).map(Some)
}

fn not_on_disk() -> OnDisk {
    OnDisk::No
}

/// `disk` of `acp.user_edit`.
fn on_disk<'de, D: Deserializer<'de>>(d: D) -> Result<OnDisk, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Disk {
        Saved,
        Read,
    }
    Ok(match Disk::deserialize(d)? {
        Disk::Saved => OnDisk::Saved,
        Disk::Read => OnDisk::Read,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use crate::command::tests::decode;
    use crate::command::Command;
    use serde_json::json;

    #[test]
    fn decodes_review_queries_and_decisions() {
        let chat = || ChatId("c".into());
        // Lua asks nothing to draw or decide (issue 24): the reviews come
        // with `review_changed`.
        for gone in ["acp.review_files", "acp.review_file"] {
            assert!(decode(gone, json!({"chat_id": "c", "path": "/p/a.rs"})).is_err());
        }
        let sync = decode("acp.file_sync", json!({"chat_id": "c", "path": "/p/a.rs"})).unwrap();
        assert_eq!(
            sync,
            Command::Review(ReviewCommand::Sync {
                chat_id: chat(),
                path: "/p/a.rs".into()
            })
        );
        assert!(matches!(&sync, Command::Review(r) if r.is_query()));
        assert_eq!(
            decode(
                "acp.review_accept",
                json!({"chat_id": "c", "path": "/p/a.rs", "hunks": [3, 7]})
            )
            .unwrap(),
            Command::Review(ReviewCommand::Accept {
                chat_id: Some(chat()),
                target: ReviewTarget::Hunks {
                    path: "/p/a.rs".into(),
                    ids: vec![HunkId::from(3), HunkId::from(7)]
                }
            })
        );
        assert_eq!(
            decode(
                "acp.review_reject",
                json!({"chat_id": "c", "path": "/p/a.rs"})
            )
            .unwrap(),
            Command::Review(ReviewCommand::Reject {
                chat_id: Some(chat()),
                target: ReviewTarget::File {
                    path: "/p/a.rs".into()
                }
            })
        );
        assert_eq!(
            decode("acp.review_reject", json!({"chat_id": "c"})).unwrap(),
            Command::Review(ReviewCommand::Reject {
                chat_id: Some(chat()),
                target: ReviewTarget::All { except: vec![] }
            })
        );
        // `:Acp accept file`: every chat whose review holds the file.
        assert_eq!(
            decode("acp.review_accept", json!({"path": "/p/a.rs"})).unwrap(),
            Command::Review(ReviewCommand::Accept {
                chat_id: None,
                target: ReviewTarget::File {
                    path: "/p/a.rs".into()
                }
            })
        );
        // `:Acp reject all` with new conflicts in one file: every chat,
        // all files but that one.
        assert_eq!(
            decode("acp.review_reject", json!({"except": ["/p/b.rs"]})).unwrap(),
            Command::Review(ReviewCommand::Reject {
                chat_id: None,
                target: ReviewTarget::All {
                    except: vec!["/p/b.rs".into()]
                }
            })
        );
        assert_eq!(
            decode(
                "acp.review_delete",
                json!({"chat_id": "c", "path": "/p/new.rs"})
            )
            .unwrap(),
            Command::Review(ReviewCommand::Delete {
                chat_id: chat(),
                path: "/p/new.rs".into()
            })
        );
        assert_eq!(
            decode(
                "acp.user_edit",
                json!({"chat_id": "c", "path": "/p/a.rs", "content": "x\n", "accept_lines": [2, 5], "tick": 12, "disk": "saved"})
            )
            .unwrap(),
            Command::Review(ReviewCommand::UserEdit {
                chat_id: chat(),
                path: "/p/a.rs".into(),
                content: Some("x\n".into()),
                accept_lines: Some((2, 5)),
                tick: Some(12),
                disk: OnDisk::Saved,
            })
        );
        // No content: the user deleted the file.
        assert_eq!(
            decode("acp.user_edit", json!({"chat_id": "c", "path": "/p/a.rs"})).unwrap(),
            Command::Review(ReviewCommand::UserEdit {
                chat_id: chat(),
                path: "/p/a.rs".into(),
                content: None,
                accept_lines: None,
                tick: None,
                disk: OnDisk::No,
            })
        );
        // The merge of a disk edit is the backend's now: no `acp.merge`.
        assert!(decode(
            "acp.merge",
            json!({"base": "a\n", "ours": "b\n", "theirs": "c\n"})
        )
        .is_err());
    }

    #[test]
    fn rejects_bad_review_params_with_a_reason() {
        let cases = [
            (
                "acp.file_sync",
                json!({"chat_id": "c"}),
                "`path` is missing",
            ),
            (
                "acp.review_accept",
                json!({"chat_id": "c", "path": "rel.rs"}),
                "absolute",
            ),
            (
                "acp.review_accept",
                json!({"path": "/a", "hunks": [1]}),
                "needs the `chat_id`",
            ),
            (
                "acp.review_reject",
                json!({"path": "/a", "except": ["/b"]}),
                "leave out `path`",
            ),
            (
                "acp.review_reject",
                json!({"except": ["rel.rs"]}),
                "absolute",
            ),
            (
                "acp.review_accept",
                json!({"chat_id": "c", "hunks": [1]}),
                "needs the `path`",
            ),
            (
                "acp.review_accept",
                json!({"chat_id": "c", "path": "/a", "hunks": []}),
                "is empty",
            ),
            (
                "acp.review_reject",
                json!({"chat_id": "c", "path": "/a", "hunks": ["1"]}),
                "integers",
            ),
            (
                "acp.review_reject",
                json!({"chat_id": "c", "path": "/a", "hunks": [-1]}),
                "integers",
            ),
            (
                "acp.review_reject",
                json!({"chat_id": "c", "path": "/a", "hunks": 1}),
                "list of hunk ids",
            ),
            (
                "acp.user_edit",
                json!({"chat_id": "c", "path": "/a", "accept_lines": [3, 1]}),
                "start <= end",
            ),
            (
                "acp.user_edit",
                json!({"chat_id": "c", "path": "/a", "accept_lines": [3]}),
                "pair",
            ),
            (
                "acp.user_edit",
                json!({"chat_id": "c", "path": "/a", "content": 3}),
                "must be a string",
            ),
            (
                "acp.user_edit",
                json!({"chat_id": "c", "path": "/a", "disk": "yes"}),
                "`disk` must be",
            ),
            (
                "acp.file_sync",
                json!({"path": "/a"}),
                "`chat_id` is missing",
            ),
        ];
        for (method, params, want) in cases {
            let err = decode(method, params.clone()).unwrap_err();
            assert_eq!(err.method, method);
            assert!(
                err.reason.contains(want),
                "{method} {params}: {}",
                err.reason
            );
        }
    }
}
