//! Agents from the ACP registry: where acp.nvim installs them, and installing
//! one on first use.

use std::path::PathBuf;

use acp_client::Error;

use super::args::Options;

/// `$XDG_<kind>_HOME/nvim/acp` (`~/.local/share`, `~/.cache` by default):
/// where acp.nvim keeps registry agents and the registry cache, so that
/// both share them.
fn nvim_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    let base = std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))?;
    Some(base.join("nvim").join("acp"))
}

/// The program, arguments and environment of registry agent `id`,
/// installing it first when it is not installed.
pub(super) async fn registry_agent(
    opts: &Options,
    id: &str,
) -> Result<(Vec<String>, Vec<(String, String)>), Error> {
    use acp_client::agents::registry::install::{CancelToken, InstallOptions, Installer};
    use acp_client::agents::registry::{self, LoadMode, RegistrySource};
    let no_home =
        || Error::Registry("set HOME or --agents-dir to say where agents are installed".into());
    let agents_dir = match &opts.agents_dir {
        Some(d) => d.clone(),
        None => nvim_dir("XDG_DATA_HOME", ".local/share")
            .ok_or_else(no_home)?
            .join("agents"),
    };
    let cache_dir =
        nvim_dir("XDG_CACHE_HOME", ".cache").unwrap_or_else(|| agents_dir.join(".cache"));
    let mut source = RegistrySource::new(cache_dir);
    if let Some(url) = &opts.registry {
        source.url = url.clone();
    }
    let id = id.to_owned();
    let allow_unverified = opts.allow_unverified;
    let installed = tokio::task::spawn_blocking(move || {
        let installer = Installer::new(
            agents_dir,
            InstallOptions {
                insecure_urls: registry::user_index_is_plain(&source.url),
                allow_unverified,
                ..InstallOptions::default()
            },
        );
        if let Some(installed) = installer.installed_agent(&id)? {
            return Ok(installed);
        }
        let loaded = registry::load(&source, LoadMode::Cached)?;
        if let Some(warning) = &loaded.warning {
            eprintln!("{warning}");
        }
        let agent = loaded.registry.agent(&id).ok_or_else(|| {
            let ids: Vec<&str> = loaded
                .registry
                .agents
                .iter()
                .map(|a| a.id.as_str())
                .collect();
            Error::Registry(format!(
                "the registry has no agent `{id}`; it has: {}",
                ids.join(", ")
            ))
        })?;
        if installer.unverified(agent) {
            // Told before anything is downloaded.
            if !allow_unverified {
                return Err(Error::Registry(format!(
                    "{}'s registry entry gives no SHA-256 checksum for its archive, so the download cannot be verified; it was not installed (pass --allow-unverified to install it anyway)",
                    agent.name
                )));
            }
            eprintln!(
                "warning: {} has no SHA-256 checksum in the registry; installing it unverified (--allow-unverified)",
                agent.name
            );
        }
        eprintln!("installing {} {}...", agent.name, agent.version);
        let mut last = String::new();
        installer.install(agent, &CancelToken::new(), &mut |p| {
            if p.message != last {
                eprintln!("  {}", p.message);
                last = p.message;
            }
        })
    })
    .await
    .map_err(|e| Error::Registry(format!("the install task failed: {e}")))??;
    Ok((installed.cmd, installed.env.into_iter().collect()))
}
