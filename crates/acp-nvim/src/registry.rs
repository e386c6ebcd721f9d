//! `acp.agents_*`: the ACP agent registry for the plugin's `:Acp agents`.
//!
//! Loading the registry and installing agents take seconds to minutes
//! (downloads, `npm install`), so each runs in its own blocking task off
//! the command loop and answers with events: `agents_listed`,
//! `agent_install_progress`, then `agent_installed` or
//! `agent_install_failed`, and `agent_removed`. An install is cancelled by
//! `acp.agents_cancel` (and by shutdown); it then leaves nothing behind.
//!
//! The installed agents themselves are owned by acp-client's installer on
//! disk (`<dir>/<id>/installed.json`); the plugin reads those files to
//! start them and this module never keeps a copy.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_client::agents::registry::install::{
    CancelToken, InstallOptions, InstalledAgent, Installer,
};
use acp_client::agents::registry::{self, LoadMode, Loaded, RegistrySource};

use crate::batcher::EventQueue;
pub use crate::command::{Places, RegistryCommand};
use crate::protocol::{Event, InstalledListing, RegistryListing};

impl Places {
    fn source(&self) -> RegistrySource {
        RegistrySource {
            url: self.url.clone(),
            bundled: self.bundled.clone(),
            ..RegistrySource::new(&self.cache_dir)
        }
    }

    /// The installer; binaries without a SHA-256 only with
    /// `allow_unverified` (the user was asked), archives from anything but
    /// https only when the user set a plain index URL.
    fn installer(&self, allow_unverified: bool) -> Installer {
        Installer::new(
            &self.dir,
            InstallOptions {
                insecure_urls: registry::user_index_is_plain(&self.url),
                allow_unverified,
                ..InstallOptions::default()
            },
        )
    }
}

/// The running installs, by agent id.
#[derive(Debug, Clone)]
pub struct Installs {
    events: EventQueue,
    running: Arc<parking_lot::Mutex<HashMap<String, CancelToken>>>,
}

/// How often download progress goes to Lua at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

impl Installs {
    /// No installs yet.
    pub fn new(events: EventQueue) -> Self {
        Self {
            events,
            running: Arc::default(),
        }
    }

    /// Runs one command; long work goes to its own task.
    pub fn handle(&self, cmd: RegistryCommand) {
        match cmd {
            RegistryCommand::List {
                request_id,
                places,
                mode,
            } => {
                let events = self.events.clone();
                let installing: Vec<String> = self.running.lock().keys().cloned().collect();
                tokio::task::spawn_blocking(move || {
                    events.push(list(request_id, &places, mode, &installing));
                });
            }
            RegistryCommand::Install {
                id,
                places,
                allow_unverified,
            } => self.install(id, places, allow_unverified),
            RegistryCommand::Cancel { id } => match self.running.lock().get(&id) {
                Some(token) => token.cancel(),
                None => tracing::debug!(%id, "cancel of an install that is not running"),
            },
            RegistryCommand::Remove { id, places } => {
                if self.running.lock().contains_key(&id) {
                    self.events.push(Event::AgentRemoved {
                        id: id.clone(),
                        removed: false,
                        message: Some(format!(
                            "{id} is being installed; cancel that first (:Acp agents cancel {id})"
                        )),
                    });
                    return;
                }
                let events = self.events.clone();
                tokio::task::spawn_blocking(move || {
                    let event = match places.installer(false).remove(&id) {
                        Ok(true) => Event::AgentRemoved {
                            id,
                            removed: true,
                            message: None,
                        },
                        Ok(false) => Event::AgentRemoved {
                            message: Some(format!("{id} is not installed")),
                            id,
                            removed: false,
                        },
                        Err(e) => Event::AgentRemoved {
                            id,
                            removed: false,
                            message: Some(e.to_string()),
                        },
                    };
                    events.push(event);
                });
            }
        }
    }

    fn install(&self, id: String, places: Places, allow_unverified: bool) {
        let token = CancelToken::new();
        {
            let mut running = self.running.lock();
            if running.contains_key(&id) {
                self.events.push(Event::Warning {
                    chat_id: None,
                    message: format!("{id} is already being installed"),
                });
                return;
            }
            running.insert(id.clone(), token.clone());
        }
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut unverified = false;
            let result = install_blocking(
                &this.events,
                &id,
                &places,
                &token,
                allow_unverified,
                &mut unverified,
            );
            this.running.lock().remove(&id);
            this.events.push(match result {
                Ok(installed) => installed_event(&installed),
                Err(e) => {
                    tracing::warn!(%id, "install failed: {e}");
                    Event::AgentInstallFailed {
                        cancelled: matches!(e, acp_client::Error::InstallCancelled { .. }),
                        id,
                        message: e.to_string(),
                        unverified,
                    }
                }
            });
        });
    }

    /// Cancels every running install (the backend is stopping).
    pub fn cancel_all(&self) {
        for token in self.running.lock().values() {
            token.cancel();
        }
    }
}

/// Installs `id`; sets `unverified` when it was refused because the
/// registry gives no SHA-256 for its binary and the user was not asked yet.
fn install_blocking(
    events: &EventQueue,
    id: &str,
    places: &Places,
    cancel: &CancelToken,
    allow_unverified: bool,
    unverified: &mut bool,
) -> acp_client::Result<InstalledAgent> {
    events.push(Event::AgentInstallProgress {
        id: id.to_owned(),
        message: "reading the agent registry".into(),
        done: None,
        total: None,
    });
    let loaded = registry::load(&places.source(), LoadMode::Cached)?;
    let agent = loaded.registry.agent(id).ok_or_else(|| {
        acp_client::Error::Registry(format!(
            "the agent registry has no agent `{id}`; see :Acp agents for the list"
        ))
    })?;
    let installer = places.installer(allow_unverified);
    *unverified = !allow_unverified && installer.unverified(agent);
    let mut last: Option<(String, Instant)> = None;
    installer.install(agent, cancel, &mut |p| {
        // Steps always go out; byte counts at most every PROGRESS_EVERY.
        let now = Instant::now();
        let same_step = last.as_ref().is_some_and(|(m, _)| *m == p.message);
        let recent = last
            .as_ref()
            .is_some_and(|(_, t)| now.duration_since(*t) < PROGRESS_EVERY);
        let finished = p.done.is_some() && p.done == p.total;
        if same_step && recent && !finished {
            return;
        }
        last = Some((p.message.clone(), now));
        events.push(Event::AgentInstallProgress {
            id: id.to_owned(),
            message: p.message,
            done: p.done,
            total: p.total,
        });
    })
}

fn installed_event(installed: &InstalledAgent) -> Event {
    Event::AgentInstalled {
        id: installed.id.clone(),
        name: installed.name.clone(),
        version: installed.version.clone(),
    }
}

fn list(request_id: String, places: &Places, mode: LoadMode, installing: &[String]) -> Event {
    let installed = match places.installer(false).installed() {
        Ok(list) => list,
        Err(e) => {
            tracing::warn!("installed agents not read: {e}");
            Vec::new()
        }
    };
    let installed_listing = installed
        .iter()
        .map(|a| InstalledListing {
            id: a.id.clone(),
            name: a.name.clone(),
            version: a.version.clone(),
            kind: a.kind,
        })
        .collect();
    match registry::load(&places.source(), mode) {
        Ok(loaded) => Event::AgentsListed {
            request_id,
            agents: Some(listings(
                &loaded,
                &installed,
                installing,
                &places.installer(false),
            )),
            installed: installed_listing,
            origin: Some(loaded.origin),
            fetched_at: loaded.fetched_at,
            message: loaded.warning,
        },
        Err(e) => Event::AgentsListed {
            request_id,
            agents: None,
            installed: installed_listing,
            origin: None,
            fetched_at: None,
            message: Some(e.to_string()),
        },
    }
}

/// The registry's agents for the picker, sorted by name.
fn listings(
    loaded: &Loaded,
    installed: &[InstalledAgent],
    installing: &[String],
    installer: &Installer,
) -> Vec<RegistryListing> {
    let platform = registry::current_platform();
    let mut agents: Vec<RegistryListing> = loaded
        .registry
        .agents
        .iter()
        .map(|a| {
            let mine = installed.iter().find(|i| i.id == a.id);
            RegistryListing {
                id: a.id.clone(),
                name: a.name.clone(),
                version: a.version.clone(),
                description: a.description.clone(),
                homepage: a.homepage.clone(),
                kinds: a.distribution.kinds(platform),
                installed_version: mine.map(|i| i.version.clone()),
                update: mine.is_some_and(|i| registry::version_cmp(&a.version, &i.version).is_gt()),
                installing: installing.contains(&a.id),
                unverified: installer.unverified(a),
            }
        })
        .collect();
    agents.sort_by_key(|a| a.name.to_lowercase());
    agents
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_list_marks_installed_agents_and_updates() {
        let doc = json!({"agents": [
            {"id": "b", "name": "Beta", "version": "2.0.0", "distribution": {"npx": {"package": "b@2.0.0"}}},
            {"id": "a", "name": "alpha", "version": "1.0.0", "distribution": {}}
        ]});
        let loaded = Loaded {
            registry: registry::Registry::parse(doc.to_string().as_bytes()).unwrap(),
            origin: registry::Origin::Cache,
            fetched_at: Some(1),
            warning: None,
        };
        let installed = vec![InstalledAgent {
            id: "b".into(),
            name: "Beta".into(),
            version: "1.9.0".into(),
            kind: registry::DistributionKind::Npx,
            cmd: vec!["/x/b".into()],
            env: Default::default(),
            dir: "/x".into(),
            installed_at: 0,
        }];
        let list = listings(
            &loaded,
            &installed,
            &["a".to_owned()],
            &Installer::new("/nonexistent", InstallOptions::default()),
        );
        let event = Event::AgentsListed {
            request_id: "r".into(),
            agents: Some(list),
            installed: Vec::new(),
            origin: Some(registry::Origin::Cache),
            fetched_at: Some(1),
            message: None,
        };
        let j = event.json_view();
        assert_eq!(j["type"], "agents_listed");
        assert_eq!(j["origin"], "cache");
        let j = &j["agents"];
        assert_eq!(j[0]["id"], "a", "sorted by name, case-insensitively");
        assert_eq!(j[0]["installing"], true);
        assert_eq!(j[0]["kinds"], json!([]));
        assert!(j[0].get("installed_version").is_none(), "no nils for Lua");
        assert!(j[0].get("homepage").is_none());
        assert_eq!(j[1]["installed_version"], "1.9.0");
        assert_eq!(j[1]["update"], true);
        assert_eq!(j[1]["kinds"], json!(["npx"]));
    }
}
