//! The sessions this agent knows: stored ones from the scenario and live
//! ones, their recorded history, modes and config options, and listing.

use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::cancel::CancelToken;
use crate::scenario::{Modes, StoredSession};

/// Work run on a session's own thread, one job after the other, so turns
/// and session-start steps of one session never overlap.
pub type Job = Box<dyn FnOnce() + Send>;

/// One session, live or only stored.
#[derive(Debug)]
pub struct Record {
    pub id: String,
    pub cwd: String,
    pub title: Option<String>,
    pub updated_at: Option<String>,
    /// `SessionUpdate` objects in the order they were sent.
    pub history: Vec<Value>,
    /// Present while the session is open (new, loaded or resumed).
    pub live: Option<Live>,
    /// Modes and config options kept while the session is not open, so a
    /// load or resume (also by a later process) finds them as they were.
    pub saved: Saved,
    /// The `mcpServers` of the last new/load/resume of the session.
    pub mcp_servers: Value,
}

/// What a session keeps of its state while it is closed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Saved {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Modes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_options: Option<Vec<Value>>,
}

/// One session as the `sessionStore` file keeps it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredRecord {
    session_id: String,
    cwd: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    history: Vec<Value>,
    #[serde(default, flatten)]
    saved: Saved,
    #[serde(default)]
    mcp_servers: Value,
}

/// The state of an open session.
#[derive(Debug)]
pub struct Live {
    pub modes: Option<Modes>,
    pub config_options: Option<Vec<Value>>,
    jobs: mpsc::Sender<Job>,
    /// Tokens of the prompts received and not yet answered.
    pub turns: Vec<Arc<CancelToken>>,
    /// Position in the cycle of unconditional turns.
    pub turn_cursor: usize,
    /// Prompts received by this session since it was opened.
    pub prompts: u64,
}

impl Live {
    /// Opens a session: starts its thread.
    pub fn start(id: &str, modes: Option<Modes>, config_options: Option<Vec<Value>>) -> Self {
        let (jobs, queue) = mpsc::channel::<Job>();
        let name = format!("session {id}");
        // The thread ends when the session closes and its queue runs dry.
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            for job in queue {
                job();
            }
        });
        if let Err(err) = spawned {
            tracing::error!("cannot start a thread for session {id}: {err}");
        }
        Self {
            modes,
            config_options,
            jobs,
            turns: Vec::new(),
            turn_cursor: 0,
            prompts: 0,
        }
    }

    /// Queues a job; gives it back if the session thread is gone.
    pub fn queue(&self, job: Job) -> Result<(), Job> {
        self.jobs.send(job).map_err(|e| e.0)
    }

    /// Cancels every prompt of the session not answered yet.
    pub fn cancel_turns(&self) {
        for token in &self.turns {
            token.cancel();
        }
    }
}

/// Every session, in listing order: stored ones first, then new ones.
#[derive(Debug, Default)]
pub struct Store {
    records: Vec<Record>,
    created: u64,
}

impl Store {
    /// A store holding the scenario's stored sessions, none open.
    pub fn new(stored: &[StoredSession]) -> Self {
        let records = stored
            .iter()
            .map(|s| Record {
                id: s.session_id.clone(),
                cwd: s.cwd.clone(),
                title: s.title.clone(),
                updated_at: s.updated_at.clone(),
                history: s.history.clone(),
                live: None,
                saved: Saved::default(),
                mcp_servers: Value::Null,
            })
            .collect();
        Self {
            records,
            created: 0,
        }
    }

    /// Adds the sessions of a `sessionStore` file; a session with the id of
    /// one already known replaces it. A missing file is an empty store.
    pub fn merge_file(&mut self, path: &Path) -> Result<(), String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let saved: Vec<StoredRecord> = serde_json::from_str(&text)
            .map_err(|e| format!("session store {} is invalid: {e}", path.display()))?;
        for s in saved {
            let record = Record {
                id: s.session_id,
                cwd: s.cwd,
                title: s.title,
                updated_at: s.updated_at,
                history: s.history,
                live: None,
                saved: s.saved,
                mcp_servers: s.mcp_servers,
            };
            match self.get_mut(&record.id) {
                Some(old) => *old = record,
                None => self.records.push(record),
            }
        }
        Ok(())
    }

    /// Writes every session (live ones with their current modes and
    /// options) to a `sessionStore` file, atomically.
    pub fn save_file(&self, path: &Path) -> Result<(), String> {
        let records: Vec<StoredRecord> = self
            .records
            .iter()
            .map(|r| StoredRecord {
                session_id: r.id.clone(),
                cwd: r.cwd.clone(),
                title: r.title.clone(),
                updated_at: r.updated_at.clone(),
                history: r.history.clone(),
                saved: r.current(),
                mcp_servers: r.mcp_servers.clone(),
            })
            .collect();
        let text = serde_json::to_string(&records).map_err(|e| e.to_string())?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| format!("cannot write session store {}: {e}", path.display()))
    }

    /// A fresh session id that no stored session uses.
    pub fn fresh_id(&mut self, prefix: &str) -> String {
        loop {
            self.created += 1;
            let id = format!("{prefix}{}", self.created);
            if self.get(&id).is_none() {
                return id;
            }
        }
    }

    /// Adds a session at the end of the listing order.
    pub fn insert(&mut self, record: Record) {
        self.records.push(record);
    }

    /// The session with this id.
    pub fn get(&self, id: &str) -> Option<&Record> {
        self.records.iter().find(|r| r.id == id)
    }

    /// The session with this id, to change it.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut Record> {
        self.records.iter_mut().find(|r| r.id == id)
    }

    /// Forgets a session (`session/delete`).
    pub fn remove(&mut self, id: &str) -> Option<Record> {
        let at = self.records.iter().position(|r| r.id == id)?;
        Some(self.records.remove(at))
    }

    /// One page of `session/list`: entries and the cursor of the next page.
    /// The cursor is the offset of the next entry, as text.
    pub fn list(
        &self,
        cwd: Option<&str>,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<(Vec<Value>, Option<String>), String> {
        let start = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .map_err(|_| format!("cursor `{c}` did not come from this agent"))?,
        };
        let matching: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| cwd.is_none_or(|cwd| r.cwd == cwd))
            .collect();
        let page: Vec<Value> = matching
            .iter()
            .skip(start)
            .take(page_size)
            .map(|r| info(r))
            .collect();
        let next = start + page.len();
        let cursor = (next < matching.len()).then(|| next.to_string());
        Ok((page, cursor))
    }
}

impl Record {
    /// The session's modes and options: the live ones while it is open.
    pub fn current(&self) -> Saved {
        match &self.live {
            Some(live) => Saved {
                modes: live.modes.clone(),
                config_options: live.config_options.clone(),
            },
            None => self.saved.clone(),
        }
    }

    /// Closes the session, keeping its modes and options.
    pub fn close(&mut self) -> Option<Live> {
        let live = self.live.take()?;
        self.saved = Saved {
            modes: live.modes.clone(),
            config_options: live.config_options.clone(),
        };
        Some(live)
    }
}

/// A `SessionInfo` for `session/list`.
fn info(record: &Record) -> Value {
    let mut info = json!({ "sessionId": record.id, "cwd": record.cwd });
    if let Some(title) = &record.title {
        info["title"] = json!(title);
    }
    if let Some(updated_at) = &record.updated_at {
        info["updatedAt"] = json!(updated_at);
    }
    info
}

/// Sets a config option from `session/set_config_option` params.
pub fn set_config_option(options: &mut [Value], params: &Value) -> Result<(), String> {
    let config_id = params
        .get("configId")
        .and_then(Value::as_str)
        .ok_or("missing string `configId`")?;
    let option = options
        .iter_mut()
        .find(|o| o.get("id").and_then(Value::as_str) == Some(config_id))
        .ok_or_else(|| format!("no config option `{config_id}`"))?;
    let value = params.get("value").ok_or("missing `value`")?;
    match option.get("type").and_then(Value::as_str) {
        Some("boolean") => {
            let on = value.as_bool().ok_or_else(|| {
                format!("`{config_id}` is a boolean option; send a boolean value")
            })?;
            option["currentValue"] = json!(on);
        }
        _ => {
            let wanted = value
                .as_str()
                .ok_or_else(|| format!("`{config_id}` is a select option; send a value id"))?;
            if !select_values(option).any(|v| v == wanted) {
                return Err(format!("`{wanted}` is not a value of `{config_id}`"));
            }
            option["currentValue"] = json!(wanted);
        }
    }
    Ok(())
}

/// The value ids of a select option, grouped or not.
fn select_values(option: &Value) -> impl Iterator<Item = &str> {
    let entries = option
        .get("options")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    entries.flat_map(|entry| {
        let grouped = entry.get("options").and_then(Value::as_array);
        let items: Vec<&Value> = match grouped {
            Some(items) => items.iter().collect(),
            None => vec![entry],
        };
        items
            .into_iter()
            .filter_map(|item| item.get("value").and_then(Value::as_str))
    })
}

/// The current time as an ISO 8601 UTC timestamp.
pub fn now_iso8601() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    iso8601(secs)
}

fn iso8601(secs: u64) -> String {
    // Civil-from-days (Howard Hinnant's algorithm), to avoid a date crate.
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn store(n: usize) -> Store {
        let stored: Vec<StoredSession> = (0..n)
            .map(|i| StoredSession {
                session_id: format!("s{i}"),
                cwd: if i % 2 == 0 { "/even" } else { "/odd" }.to_owned(),
                title: Some(format!("Session {i}")),
                updated_at: None,
                history: Vec::new(),
            })
            .collect();
        Store::new(&stored)
    }

    fn ids(page: &[Value]) -> Vec<&str> {
        page.iter()
            .map(|s| s["sessionId"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn pages_follow_the_cursor_to_the_end() {
        let store = store(5);
        let (page, cursor) = store.list(None, None, 2).unwrap();
        assert_eq!(ids(&page), ["s0", "s1"]);
        let (page, cursor) = store.list(None, cursor.as_deref(), 2).unwrap();
        assert_eq!(ids(&page), ["s2", "s3"]);
        let (page, cursor) = store.list(None, cursor.as_deref(), 2).unwrap();
        assert_eq!(ids(&page), ["s4"]);
        assert_eq!(cursor, None);
        assert!(store.list(None, Some("bogus"), 2).is_err());
    }

    #[test]
    fn list_filters_by_cwd() {
        let (page, cursor) = store(5).list(Some("/odd"), None, 10).unwrap();
        assert_eq!(ids(&page), ["s1", "s3"]);
        assert_eq!(cursor, None);
        assert_eq!(page[0]["title"], "Session 1");
    }

    #[test]
    fn fresh_ids_skip_stored_ones() {
        let mut store = store(3);
        assert_eq!(store.fresh_id("s"), "s3");
        assert_eq!(store.fresh_id("s"), "s4", "numbers keep counting");
    }

    #[test]
    fn config_options_take_valid_values_only() {
        let mut options = vec![
            json!({"id": "model", "name": "Model", "type": "select", "currentValue": "a",
                   "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]}),
            json!({"id": "grouped", "name": "G", "type": "select", "currentValue": "x",
                   "options": [{"group": "g", "name": "G", "options": [{"value": "x", "name": "X"}, {"value": "y", "name": "Y"}]}]}),
            json!({"id": "fast", "name": "Fast", "type": "boolean", "currentValue": false}),
        ];
        set_config_option(&mut options, &json!({"configId": "model", "value": "b"})).unwrap();
        assert_eq!(options[0]["currentValue"], "b");
        set_config_option(&mut options, &json!({"configId": "grouped", "value": "y"})).unwrap();
        assert_eq!(options[1]["currentValue"], "y");
        set_config_option(
            &mut options,
            &json!({"configId": "fast", "type": "boolean", "value": true}),
        )
        .unwrap();
        assert_eq!(options[2]["currentValue"], true);
        assert!(
            set_config_option(&mut options, &json!({"configId": "model", "value": "zzz"})).is_err()
        );
        assert!(
            set_config_option(&mut options, &json!({"configId": "fast", "value": "yes"})).is_err()
        );
        assert!(
            set_config_option(&mut options, &json!({"configId": "nope", "value": "a"})).is_err()
        );
        assert_eq!(
            options[0]["currentValue"], "b",
            "failed sets change nothing"
        );
    }

    #[test]
    fn timestamps_are_iso8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(951_782_400 + 3_723), "2000-02-29T01:02:03Z");
        assert_eq!(iso8601(1_735_689_599), "2024-12-31T23:59:59Z");
    }
}
