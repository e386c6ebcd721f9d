//! `acp-fake-agent`: a scripted ACP agent for tests, demos and benchmarks.
//!
//! stdout is the ACP channel (one JSON-RPC message per line); logs go to
//! stderr (level from `ACP_FAKE_LOG`, default `info`). The scenario comes
//! from `--scenario FILE` or `ACP_FAKE_SCENARIO`, else the bundled demo.
//! The scenario format is documented in the crate's README.md.

mod agent;
mod cancel;
mod expect;
mod fork;
mod mcp;
mod scenario;
mod sessions;
mod step;
mod subst;
mod turn;
mod wire;

use std::path::PathBuf;
use std::process::ExitCode;

use scenario::Scenario;

/// The demo scenario, built in so the binary runs anywhere without files.
const DEMO: &str = include_str!("../../../scenarios/demo.json");

const USAGE: &str = "usage: acp-fake-agent [--scenario FILE.json] [--login]

A scripted Agent Client Protocol agent speaking JSON-RPC on stdin/stdout.
Without a scenario (flag or ACP_FAKE_SCENARIO) it plays the bundled demo.
Logs go to stderr; set ACP_FAKE_LOG (e.g. debug) to change their level.
--login: log in the way a terminal auth method does (writes the scenario's
authFile) and exit, instead of speaking ACP.";

fn main() -> ExitCode {
    init_logging();
    let (path, login) = match parse_args(std::env::args().skip(1)) {
        Ok(Args {
            scenario: Some(path),
            login,
        }) => (Some(path), login),
        Ok(Args {
            scenario: None,
            login,
        }) => (
            std::env::var_os("ACP_FAKE_SCENARIO").map(PathBuf::from),
            login,
        ),
        Err(Help) => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
    };
    let loaded = match &path {
        Some(path) => Scenario::load(path),
        None => Scenario::parse(DEMO).map_err(|e| format!("the bundled demo is invalid: {e}")),
    };
    let scenario = match loaded {
        Ok(scenario) => scenario,
        Err(err) => {
            eprintln!("acp-fake-agent: {err}");
            return ExitCode::from(2);
        }
    };
    if login {
        return log_in(&scenario);
    }
    match &path {
        Some(path) => tracing::info!("playing scenario {}", path.display()),
        None => tracing::info!("playing the bundled demo scenario"),
    }
    if let Some(description) = &scenario.description {
        tracing::info!("scenario: {description}");
    }
    agent::Agent::new(scenario).serve();
    ExitCode::SUCCESS
}

/// `--help` was asked for (or the arguments made no sense).
struct Help;

/// The command line.
#[derive(Debug, PartialEq)]
struct Args {
    scenario: Option<PathBuf>,
    /// `--login`: the login command of a terminal auth method.
    login: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, Help> {
    let mut parsed = Args {
        scenario: None,
        login: false,
    };
    while let Some(arg) = args.next() {
        if arg == "--scenario" {
            parsed.scenario = Some(PathBuf::from(args.next().ok_or(Help)?));
        } else if let Some(value) = arg.strip_prefix("--scenario=") {
            parsed.scenario = Some(PathBuf::from(value));
        } else if arg == "--login" {
            parsed.login = true;
        } else {
            return Err(Help);
        }
    }
    Ok(parsed)
}

/// The login command a terminal auth method runs: writes the scenario's
/// `authFile` with the user name from `ACP_FAKE_LOGIN_USER` (default
/// `user`), so the next agent process started with the scenario needs no
/// `authenticate`. Says what it did on stdout, for the user's terminal.
fn log_in(scenario: &Scenario) -> ExitCode {
    let Some(path) = &scenario.auth_file else {
        eprintln!("acp-fake-agent: --login needs `authFile` in the scenario");
        return ExitCode::from(2);
    };
    let user = std::env::var("ACP_FAKE_LOGIN_USER").unwrap_or_else(|_| "user".to_owned());
    if let Err(err) = std::fs::write(path, &user) {
        eprintln!("acp-fake-agent: cannot write {}: {err}", path.display());
        return ExitCode::from(1);
    }
    println!("acp-fake-agent: logged in as {user}");
    ExitCode::SUCCESS
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ACP_FAKE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .init();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn args(list: &[&str]) -> Result<Option<PathBuf>, Help> {
        parse_args(list.iter().map(|s| s.to_string())).map(|a| a.scenario)
    }

    #[test]
    fn parses_the_scenario_flag_both_ways() {
        assert_eq!(args(&[]).ok().unwrap(), None);
        assert_eq!(
            args(&["--scenario", "a.json"]).ok().unwrap(),
            Some(PathBuf::from("a.json"))
        );
        assert_eq!(
            args(&["--scenario=b.json"]).ok().unwrap(),
            Some(PathBuf::from("b.json"))
        );
        assert!(args(&["--scenario"]).is_err());
        let login = parse_args(
            ["--login", "--scenario", "c.json"]
                .map(String::from)
                .into_iter(),
        );
        assert_eq!(
            login.ok().unwrap(),
            Args {
                scenario: Some(PathBuf::from("c.json")),
                login: true
            }
        );
        assert!(args(&["--help"]).is_err());
    }

    #[test]
    fn the_bundled_demo_is_valid() {
        Scenario::parse(DEMO).unwrap();
    }
}
