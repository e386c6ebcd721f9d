//! The `acp.agents_*` commands: listing, installing and removing agents of
//! the ACP registry (carried out by `crate::registry`).

use std::path::PathBuf;

use acp_client::agents::registry::LoadMode;
use serde::{Deserialize, Deserializer};

use super::de as cmd_de;

/// Where the registry and the installed agents live, as the plugin says
/// (the `registry` table).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Places {
    /// The registry index URL.
    pub url: String,
    /// The install root (`stdpath("data")/acp/agents`).
    #[serde(deserialize_with = "cmd_de::abs_path")]
    pub dir: PathBuf,
    /// Where the fetched index is cached.
    #[serde(deserialize_with = "cmd_de::abs_path")]
    pub cache_dir: PathBuf,
    /// The snapshot bundled with the plugin.
    #[serde(default, deserialize_with = "cmd_de::opt_abs_path")]
    pub bundled: Option<PathBuf>,
}

/// The registry commands.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub enum RegistryCommand {
    /// `acp.agents_list`: the registry's agents and the installed ones.
    #[serde(rename = "acp.agents_list")]
    List {
        /// Echoed in `agents_listed`.
        #[serde(deserialize_with = "cmd_de::text_or_number")]
        request_id: String,
        /// Where things are.
        #[serde(rename = "registry")]
        places: Places,
        /// How much the network may be used.
        #[serde(default = "cached", deserialize_with = "load_mode")]
        mode: LoadMode,
    },
    /// `acp.agents_install`: install (or update to) the registry version.
    #[serde(rename = "acp.agents_install")]
    Install {
        /// The registry id.
        id: String,
        /// Where things are.
        #[serde(rename = "registry")]
        places: Places,
        /// The user agreed to install a binary the registry gives no
        /// SHA-256 for (asked after an `agent_install_failed` with
        /// `unverified`).
        #[serde(default)]
        allow_unverified: bool,
    },
    /// `acp.agents_cancel`: stop the running install of `id`.
    #[serde(rename = "acp.agents_cancel")]
    Cancel {
        /// The registry id.
        id: String,
    },
    /// `acp.agents_remove`: delete an installed agent.
    #[serde(rename = "acp.agents_remove")]
    Remove {
        /// The registry id.
        id: String,
        /// Where things are.
        #[serde(rename = "registry")]
        places: Places,
    },
}

impl RegistryCommand {
    /// The method name the command arrived as.
    pub fn name(&self) -> &'static str {
        match self {
            RegistryCommand::List { .. } => "acp.agents_list",
            RegistryCommand::Install { .. } => "acp.agents_install",
            RegistryCommand::Cancel { .. } => "acp.agents_cancel",
            RegistryCommand::Remove { .. } => "acp.agents_remove",
        }
    }
}

fn cached() -> LoadMode {
    LoadMode::Cached
}

/// `mode` of `acp.agents_list`.
fn load_mode<'de, D: Deserializer<'de>>(d: D) -> Result<LoadMode, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Cached,
        Refresh,
        Offline,
    }
    Ok(match Mode::deserialize(d)? {
        Mode::Cached => LoadMode::Cached,
        Mode::Refresh => LoadMode::Refresh,
        Mode::Offline => LoadMode::Offline,
    })
}
