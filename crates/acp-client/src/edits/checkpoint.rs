//! Checkpoints per turn: the text every file had before the agent first
//! touched it in a turn, so the workspace can be taken back to its state
//! before any turn ([`Checkpoints::plan`]).
//!
//! Nothing is copied when a turn starts: the first time an agent edit of a
//! file is recorded in a turn (through `fs/write_text_file`, a tool call's
//! diff or a change seen on disk), the text before that edit is kept. A file
//! the agent created is kept as "did not exist", one it deleted with its
//! text. Rewinding to before turn N restores, for every file touched in
//! turns N and later, the text it had before the earliest of them.
//!
//! The store is bounded like the review's snapshots: a file larger than
//! [`FILE_MAX_BYTES`] is not kept (its turn cannot be rewound, and says
//! which file is why), and when all texts together pass
//! [`TOTAL_MAX_BYTES`] the oldest turns are forgotten first. It serializes
//! to JSON so an editor can save it with its transcript and hand it back to
//! a reopened session. Its paths are therefore plain paths, not
//! [`CanonicalPath`]s (a saved store is input the user may have edited):
//! what goes in is canonical ([`Checkpoints::touch`] takes the key review
//! holds), and review resolves a plan's paths again before they key
//! anything (`edits::review::rewind`).
//!
//! This module is data only: the review service (`edits::review`) feeds it and applies a
//! plan through the editor's buffers.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::path::CanonicalPath;

/// Largest file text kept in a checkpoint (the review's snapshot limit).
pub const FILE_MAX_BYTES: usize = 8 * 1024 * 1024;
/// Largest sum of the texts kept by one store; the oldest turns go first.
pub const TOTAL_MAX_BYTES: usize = 64 * 1024 * 1024;
/// Most characters of a turn's label (the prompt's first line) kept.
const LABEL_MAX_CHARS: usize = 200;

/// A turn's number in its chat, from 1. A rewind to before turn N makes the
/// next turn N again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TurnNumber(u32);

impl TurnNumber {
    /// The number as an integer.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl From<u32> for TurnNumber {
    fn from(n: u32) -> Self {
        Self(n)
    }
}

impl fmt::Display for TurnNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A file's text before a turn touched it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Before {
    /// The file had this text.
    Text { text: String },
    /// The file did not exist (the agent created it).
    Missing,
    /// Too large to keep: the turn cannot be rewound.
    TooLarge,
}

impl Before {
    fn bytes(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::Missing | Self::TooLarge => 0,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Turn {
    turn: TurnNumber,
    label: String,
    /// Seconds since the Unix epoch when the prompt was sent.
    started: u64,
    files: BTreeMap<PathBuf, Before>,
    /// Each file's text after the agent's last edit of it in this turn: a
    /// rewind over several turns undoes them one by one against these, so
    /// a line the user saved between two rewound turns is the user's and
    /// stays. Absent in stores saved before it was kept.
    #[serde(default)]
    after: BTreeMap<PathBuf, Before>,
}

impl Turn {
    fn bytes(&self) -> usize {
        self.files
            .values()
            .chain(self.after.values())
            .map(Before::bytes)
            .sum()
    }
}

/// One turn as a picker shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnInfo {
    /// The turn's number.
    pub turn: TurnNumber,
    /// The prompt's first line.
    pub label: String,
    /// Seconds since the Unix epoch when the prompt was sent.
    pub started: u64,
    /// The files the agent touched in the turn, sorted.
    pub files: Vec<PathBuf>,
}

/// What a rewind does to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restore {
    /// The file.
    pub path: PathBuf,
    /// Its text before the turn; `None`: it did not exist (remove it).
    pub text: Option<String>,
    /// The turn whose checkpoint this is (the earliest rewound turn that
    /// touched the file).
    pub turn: TurnNumber,
    /// The agent's last text of the file (what it wrote or last saw there),
    /// the base of the merge that keeps what the user changed since;
    /// `None` when not known (too large) or when the agent removed it.
    pub agent_text: Option<String>,
}

/// The checkpoints of one chat. See the [module documentation](self).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Checkpoints {
    turns: Vec<Turn>,
    /// Turns before this one were forgotten (bounds) and cannot be rewound.
    #[serde(default)]
    forgotten_before: Option<TurnNumber>,
    /// Each file's text after the agent's last edit of it (a rewind merges
    /// against it: a line the user saved since is the user's, and stays).
    #[serde(default)]
    last: BTreeMap<PathBuf, Before>,
    /// The number the next turn gets.
    #[serde(default)]
    next: u32,
    #[serde(skip)]
    bytes: usize,
    /// A turn is running: edits are kept in the last turn.
    #[serde(skip)]
    open: bool,
}

impl Checkpoints {
    /// An empty store; the first turn is 1.
    pub fn new() -> Self {
        Self {
            next: 1,
            ..Self::default()
        }
    }

    /// Reads a store saved with [`to_json`](Self::to_json).
    pub fn from_json(json: &str) -> Result<Self> {
        let mut store: Self = serde_json::from_str(json).map_err(|e| Error::Decode {
            what: "saved checkpoints".to_owned(),
            reason: e.to_string(),
        })?;
        store.next = store
            .next
            .max(store.turns.last().map_or(1, |t| t.turn.0 + 1));
        store.bytes = store.turns.iter().map(Turn::bytes).sum::<usize>()
            + store.last.values().map(Before::bytes).sum::<usize>();
        store.enforce(TOTAL_MAX_BYTES);
        Ok(store)
    }

    /// The store as JSON, to save with a transcript.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }

    /// A prompt is being sent: its turn begins. `label` is the prompt's
    /// first line.
    pub fn begin_turn(&mut self, label: &str, started: SystemTime) -> TurnNumber {
        let turn = TurnNumber(self.next.max(1));
        self.next = turn.0 + 1;
        let label: String = label.chars().take(LABEL_MAX_CHARS).collect();
        self.turns.push(Turn {
            turn,
            label,
            started: started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            files: BTreeMap::new(),
            after: BTreeMap::new(),
        });
        self.open = true;
        turn
    }

    /// The turn ended: edits outside a turn are not kept. A late end of
    /// an earlier turn leaves a newer running one open.
    pub fn end_turn(&mut self, turn: TurnNumber) {
        if self.last_turn() == Some(turn) {
            self.open = false;
        }
    }

    /// An agent edit of `path` is being recorded; `before` is the file's
    /// text before it and `after` its text after it (`None`: the file does
    /// not exist). Only the first edit of a file in a turn keeps its
    /// `before`; every edit updates the agent's last text. Edits outside a
    /// turn are not the agent's turn's: they are not kept.
    pub fn touch(&mut self, path: &CanonicalPath, before: Option<&str>, after: Option<&str>) {
        if !self.open {
            return;
        }
        let Some(turn) = self.last_turn() else {
            return;
        };
        self.touch_with_limit(turn, path, before, after, FILE_MAX_BYTES, TOTAL_MAX_BYTES);
    }

    /// Like [`touch`](Self::touch), for an edit seen late (a disk change
    /// found after its prompt returned): kept in `turn`, its own turn, even
    /// when the next one has begun; nothing when `turn` is gone.
    pub fn touch_in(
        &mut self,
        turn: TurnNumber,
        path: &CanonicalPath,
        before: Option<&str>,
        after: Option<&str>,
    ) {
        self.touch_with_limit(turn, path, before, after, FILE_MAX_BYTES, TOTAL_MAX_BYTES);
    }

    fn touch_with_limit(
        &mut self,
        turn: TurnNumber,
        path: &Path,
        before: Option<&str>,
        after: Option<&str>,
        file_max: usize,
        total_max: usize,
    ) {
        let Some(t) = self.turns.iter_mut().find(|t| t.turn == turn) else {
            return;
        };
        let kept = |text: Option<&str>| match text {
            None => Before::Missing,
            Some(text) if text.len() > file_max => Before::TooLarge,
            Some(text) => Before::Text {
                text: text.to_owned(),
            },
        };
        if !t.files.contains_key(path) {
            let before = kept(before);
            self.bytes += before.bytes();
            t.files.insert(path.to_owned(), before);
        }
        let after = kept(after);
        self.bytes += 2 * after.bytes();
        if let Some(old) = t.after.insert(path.to_owned(), after.clone()) {
            self.bytes -= old.bytes();
        }
        if let Some(old) = self.last.insert(path.to_owned(), after) {
            self.bytes -= old.bytes();
        }
        self.enforce(total_max);
    }

    /// Forgets the oldest turns until the texts fit in `max` (the running
    /// turn is kept even alone over the bound: its files are the ones a
    /// rewind is most likely to want).
    fn enforce(&mut self, max: usize) {
        while self.bytes > max && self.turns.len() > 1 {
            let old = self.turns.remove(0);
            self.bytes -= old.bytes();
            // The agent's last text of a file no kept turn touched is of no
            // use to a rewind any more.
            for path in old.files.keys() {
                if !self.turns.iter().any(|t| t.files.contains_key(path)) {
                    if let Some(gone) = self.last.remove(path) {
                        self.bytes -= gone.bytes();
                    }
                }
            }
            let first_kept = self.turns.first().map(|t| t.turn);
            tracing::debug!(turn = %old.turn, "checkpoint of an old turn forgotten: over the size bound");
            self.forgotten_before = first_kept;
        }
    }

    /// The chat already had `turns` turns before this store goes on (a
    /// loaded session's replayed prompts): the next turn is numbered after
    /// them at least, so that the numbers the user sees match.
    pub fn continue_after(&mut self, turns: u32) {
        self.next = self.next.max(turns.saturating_add(1));
    }

    /// The number the next turn gets.
    pub fn next_turn(&self) -> TurnNumber {
        TurnNumber(self.next.max(1))
    }

    /// Every turn still held, oldest first.
    pub fn turns(&self) -> Vec<TurnInfo> {
        self.turns
            .iter()
            .map(|t| TurnInfo {
                turn: t.turn,
                label: t.label.clone(),
                started: t.started,
                files: t.files.keys().cloned().collect(),
            })
            .collect()
    }

    /// The number of the last turn, if any.
    pub fn last_turn(&self) -> Option<TurnNumber> {
        self.turns.last().map(|t| t.turn)
    }

    /// What rewinding to before `turn` restores: for every file touched in
    /// `turn` and later, its text before the earliest of those turns.
    pub fn plan(&self, turn: TurnNumber) -> Result<Vec<Restore>> {
        let Some(index) = self.turns.iter().position(|t| t.turn == turn) else {
            let why = match (self.forgotten_before, self.turns.first(), self.turns.last()) {
                (Some(first), _, _) if turn < first => format!(
                    "the checkpoints of turns before {first} were dropped to stay within {} MiB; rewind to turn {first} or later",
                    TOTAL_MAX_BYTES / (1024 * 1024)
                ),
                (_, Some(first), Some(last)) => format!(
                    "there is no turn {turn}; rewind to a turn from {} to {}",
                    first.turn, last.turn
                ),
                _ => format!("there is no turn {turn}: this chat has no turns to rewind yet"),
            };
            return Err(Error::NotFound(why));
        };
        let rewound = &self.turns[index..];
        let mut plan: BTreeMap<&Path, Restore> = BTreeMap::new();
        for t in rewound {
            for (path, before) in &t.files {
                if plan.contains_key(path.as_path()) {
                    continue;
                }
                let text = match before {
                    Before::Text { text } => Some(text.clone()),
                    Before::Missing => None,
                    Before::TooLarge => {
                        return Err(Error::FileTooLarge {
                            path: path.clone(),
                            limit: FILE_MAX_BYTES,
                        })
                    }
                };
                let agent_text = match self.last.get(path) {
                    Some(Before::Text { text }) => Some(text.clone()),
                    _ => None,
                };
                let text = text.map(|first| undo_turns(rewound, path).unwrap_or(first));
                plan.insert(
                    path,
                    Restore {
                        path: path.clone(),
                        text,
                        turn: t.turn,
                        agent_text,
                    },
                );
            }
        }
        Ok(plan.into_values().collect())
    }

    /// Keeps only the files `keep` accepts (a saved store's paths checked
    /// against the workspace of the session that adopts it).
    pub fn retain_files(&mut self, mut keep: impl FnMut(&Path) -> bool) {
        let bytes = &mut self.bytes;
        let mut retain = |path: &PathBuf, before: &mut Before| {
            let kept = keep(path);
            if !kept {
                *bytes -= before.bytes();
            }
            kept
        };
        for t in &mut self.turns {
            t.files.retain(&mut retain);
            t.after.retain(&mut retain);
        }
        self.last.retain(retain);
    }

    /// The workspace went back to before `turn`: its checkpoints and the
    /// later ones go, and the next turn is `turn` again. Each restored
    /// file's text before the turn becomes the agent's last text of it (it
    /// is what the agent last left there).
    pub fn rewound(&mut self, turn: TurnNumber) {
        let Some(index) = self.turns.iter().position(|t| t.turn == turn) else {
            return;
        };
        let mut restored: BTreeMap<PathBuf, Before> = BTreeMap::new();
        for t in self.turns.drain(index..) {
            self.bytes -= t.bytes();
            for (path, before) in t.files {
                restored.entry(path).or_insert(before);
            }
        }
        for (path, before) in restored {
            let touched_before = self.turns.iter().any(|t| t.files.contains_key(&path));
            let old = if touched_before {
                self.bytes += before.bytes();
                self.last.insert(path, before)
            } else {
                self.last.remove(&path)
            };
            if let Some(old) = old {
                self.bytes -= old.bytes();
            }
        }
        self.next = turn.0;
        self.open = false;
    }
}

/// `path`'s text before the first of `turns` that touched it, with the
/// user's edits made between those turns kept: the agent's turns are undone
/// one at a time, newest first, each as a three-way merge of the text so far
/// against that turn's after (base) and before (theirs). Without it a line
/// the user saved after turn N and before turn N+1 went back with them.
/// `None` when the plain before-text must do: one turn touched the file, a
/// text is missing (created, deleted, too large, or a store saved before
/// `after` was kept), or an undo conflicts (the user changed what the
/// agent changed; the restore's own merge then shows it).
fn undo_turns(turns: &[Turn], path: &Path) -> Option<String> {
    fn text(b: Option<&Before>) -> Option<&str> {
        match b {
            Some(Before::Text { text }) => Some(text.as_str()),
            _ => None,
        }
    }
    let touched: Vec<&Turn> = turns
        .iter()
        .filter(|t| t.files.contains_key(path))
        .collect();
    let (newest, older) = touched.split_last()?;
    if older.is_empty() {
        return None;
    }
    let mut acc = text(newest.files.get(path))?.to_owned();
    for t in older.iter().rev() {
        let merged =
            crate::edits::merge::merge3(text(t.after.get(path))?, &acc, text(t.files.get(path))?);
        acc = merged.clean_text()?;
    }
    Some(acc)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    /// A file's key (`/w` does not exist, so it resolves as written).
    fn p(s: &str) -> CanonicalPath {
        CanonicalPath::resolve(Path::new(s)).unwrap()
    }

    #[test]
    fn a_line_saved_between_two_rewound_turns_stays() {
        // Turn 2 changes s2; the user saves a line on top; turn 3 changes
        // s3. Rewinding to before turn 2 undoes both agent changes and
        // keeps the saved line (it went back with turn 3 before).
        let mut c = Checkpoints::new();
        let now = SystemTime::now();
        c.begin_turn("one", now);
        c.touch(&p("/w/other"), Some("o\n"), Some("o1\n"));
        c.end_turn(1.into());
        c.begin_turn("two", now);
        c.touch(&p("/w/s"), Some("s1\ns2\ns3\n"), Some("s1\nS2\ns3\n"));
        c.end_turn(2.into());
        c.begin_turn("three", now);
        c.touch(
            &p("/w/s"),
            Some("mine\ns1\nS2\ns3\n"),
            Some("mine\ns1\nS2\nS3\n"),
        );
        c.end_turn(3.into());
        let plan = c.plan(2.into()).unwrap();
        let s = plan.iter().find(|r| r.path == p("/w/s")).unwrap();
        assert_eq!(s.text.as_deref(), Some("mine\ns1\ns2\ns3\n"));
        assert_eq!(s.agent_text.as_deref(), Some("mine\ns1\nS2\nS3\n"));
        // Saved and read back (the store a reopened session gets): the same.
        let back = Checkpoints::from_json(&c.to_json()).unwrap();
        assert_eq!(back.plan(2.into()).unwrap(), plan);
        // A user edit of the very line a later turn changed back is a
        // conflict of the undo: the plain checkpoint, and the restore's own
        // merge shows the conflict.
        let mut c = Checkpoints::new();
        c.begin_turn("two", now);
        c.touch(&p("/w/s"), Some("a\n"), Some("b\n"));
        c.end_turn(1.into());
        c.begin_turn("three", now);
        c.touch(&p("/w/s"), Some("mine\n"), Some("agent\n"));
        c.end_turn(2.into());
        let plan = c.plan(1.into()).unwrap();
        assert_eq!(plan[0].text.as_deref(), Some("a\n"));
    }

    #[test]
    fn a_store_saved_without_after_texts_rewinds_as_before() {
        let mut c = three_turns();
        let mut json: serde_json::Value = serde_json::from_str(&c.to_json()).unwrap();
        for t in json["turns"].as_array_mut().unwrap() {
            t.as_object_mut().unwrap().remove("after");
        }
        let old = Checkpoints::from_json(&json.to_string()).unwrap();
        assert_eq!(old.plan(1.into()).unwrap(), c.plan(1.into()).unwrap());
        c.rewound(2.into());
        assert_eq!(c.next_turn(), 2.into());
    }

    fn three_turns() -> Checkpoints {
        let mut c = Checkpoints::new();
        let now = SystemTime::now();
        c.begin_turn("write a", now);
        c.touch(&p("/w/a"), Some("a0\n"), Some("a1\n"));
        c.touch(&p("/w/a"), Some("a1\n"), Some("a1\n")); // second edit in the turn: ignored
        c.end_turn(1.into());
        c.begin_turn("create b, edit a", now);
        c.touch(&p("/w/b"), None, Some("b1\n"));
        c.touch(&p("/w/a"), Some("a1\n"), Some("a2\n"));
        c.end_turn(2.into());
        c.begin_turn("delete c, edit b", now);
        c.touch(&p("/w/c"), Some("c0\n"), None);
        c.touch(&p("/w/b"), Some("b1\n"), Some("b2\n"));
        c.end_turn(3.into());
        c
    }

    #[test]
    fn the_earliest_before_of_each_file_from_the_turn_on_is_restored() {
        let c = three_turns();
        let plan = c.plan(2.into()).unwrap();
        assert_eq!(
            plan,
            vec![
                Restore {
                    path: p("/w/a").into(),
                    text: Some("a1\n".into()),
                    turn: 2.into(),
                    agent_text: Some("a2\n".into()),
                },
                Restore {
                    path: p("/w/b").into(),
                    text: None,
                    turn: 2.into(),
                    agent_text: Some("b2\n".into()),
                },
                Restore {
                    path: p("/w/c").into(),
                    text: Some("c0\n".into()),
                    turn: 3.into(),
                    agent_text: None,
                },
            ]
        );
        let plan = c.plan(1.into()).unwrap();
        assert_eq!(plan[0].text.as_deref(), Some("a0\n"));
    }

    #[test]
    fn edits_outside_a_turn_are_not_kept() {
        let mut c = Checkpoints::new();
        c.touch(&p("/w/a"), Some("x"), Some("y"));
        c.begin_turn("t", SystemTime::now());
        c.end_turn(1.into());
        c.touch(&p("/w/a"), Some("x"), Some("y"));
        assert!(c.turns()[0].files.is_empty());
    }

    #[test]
    fn a_late_end_or_edit_of_a_turn_stays_in_that_turn() {
        let mut c = Checkpoints::new();
        c.begin_turn("one", SystemTime::now());
        c.begin_turn("two", SystemTime::now());
        c.touch_in(1.into(), &p("/w/late"), Some("x"), Some("x2"));
        c.end_turn(1.into());
        c.touch(&p("/w/a"), Some("y"), Some("y2"));
        let t = c.turns();
        assert_eq!(t[0].files, [p("/w/late")]);
        assert_eq!(t[1].files, [p("/w/a")]);
    }

    #[test]
    fn a_rewind_drops_the_turns_and_numbers_the_next_one_again() {
        let mut c = three_turns();
        c.rewound(2.into());
        assert_eq!(c.last_turn(), Some(1.into()));
        assert_eq!(c.begin_turn("again", SystemTime::now()), 2.into());
        // Turn 1's before and after, and a.txt's text as the rewind left it
        // (what the agent last left there); b and c were not the agent's
        // before.
        assert_eq!(c.bytes, "a0\n".len() + 2 * "a1\n".len());
        assert_eq!(
            c.plan(1.into()).unwrap()[0].agent_text.as_deref(),
            Some("a1\n")
        );
    }

    #[test]
    fn unknown_turns_are_refused_with_the_range() {
        let c = three_turns();
        let e = c.plan(7.into()).unwrap_err().to_string();
        assert!(e.contains("from 1 to 3"), "{e}");
        let e = Checkpoints::new().plan(1.into()).unwrap_err().to_string();
        assert!(e.contains("no turns to rewind yet"), "{e}");
    }

    #[test]
    fn a_file_over_the_bound_makes_its_turn_unrewindable_and_names_it() {
        let mut c = Checkpoints::new();
        c.begin_turn("big", SystemTime::now());
        c.touch_with_limit(1.into(), &p("/w/big"), Some("0123456789"), None, 4, 1000);
        c.touch_with_limit(1.into(), &p("/w/small"), Some("ok"), None, 4, 1000);
        c.end_turn(1.into());
        let e = c.plan(1.into()).unwrap_err();
        assert!(matches!(e, Error::FileTooLarge { ref path, .. } if path == &p("/w/big")));
    }

    #[test]
    fn the_oldest_turns_go_first_when_over_the_total_bound() {
        let mut c = Checkpoints::new();
        for i in 0..4 {
            let turn = c.begin_turn(&format!("t{i}"), SystemTime::now());
            c.touch_with_limit(
                turn,
                &p(&format!("/w/{i}")),
                Some("0123456789"),
                None,
                100,
                25,
            );
            c.end_turn(c.last_turn().unwrap());
        }
        let kept: Vec<u32> = c.turns().iter().map(|t| t.turn.get()).collect();
        assert_eq!(kept, vec![3, 4]);
        let e = c.plan(1.into()).unwrap_err().to_string();
        assert!(e.contains("rewind to turn 3 or later"), "{e}");
        assert!(c.plan(3.into()).is_ok());
    }

    #[test]
    fn a_saved_store_reads_back_and_can_still_rewind() {
        let c = three_turns();
        let back = Checkpoints::from_json(&c.to_json()).unwrap();
        assert_eq!(back.turns(), c.turns());
        assert_eq!(back.plan(2.into()).unwrap(), c.plan(2.into()).unwrap());
        assert_eq!(back.bytes, c.bytes);
        let mut back = back;
        assert_eq!(back.begin_turn("next", SystemTime::now()), 4.into());
    }

    #[test]
    fn a_hostile_save_is_a_clear_error() {
        let e = Checkpoints::from_json("{\"turns\": 3}").unwrap_err();
        assert!(e.to_string().contains("saved checkpoints"), "{e}");
    }

    #[test]
    fn a_loaded_history_numbers_the_next_turn_after_it() {
        let mut c = Checkpoints::new();
        c.continue_after(3);
        assert_eq!(c.next_turn(), 4.into());
        assert_eq!(c.begin_turn("fourth", SystemTime::now()), 4.into());
        // A store that is ahead keeps its numbers.
        c.continue_after(1);
        assert_eq!(c.next_turn(), 5.into());
    }

    #[test]
    fn long_labels_are_cut() {
        let mut c = Checkpoints::new();
        c.begin_turn(&"x".repeat(1000), SystemTime::now());
        assert_eq!(c.turns()[0].label.chars().count(), LABEL_MAX_CHARS);
    }
}
