//! Loading the registry index: offline from the cache then the bundled
//! snapshot, from a file URL, and not asking an unreachable registry again
//! for a while.

use std::io::Read;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use acp_client::agents::registry::{self, LoadMode, Origin, RegistrySource};

use super::{Fixture, Route};

#[test]
fn offline_the_cache_then_the_bundled_snapshot_serve() {
    let f = Fixture::new();
    f.server.route(
        "/registry.json",
        Route::Body(Arc::new(f.registry_json("1.0.0").into_bytes())),
    );
    let source = RegistrySource {
        url: format!("{}/registry.json", f.server.base()),
        cache_dir: f.dir.path().join("cache"),
        bundled: None,
        max_age: Duration::from_secs(3600),
    };
    let loaded = registry::load(&source, LoadMode::Cached).unwrap();
    assert_eq!(loaded.origin, Origin::Network);
    assert!(loaded.registry.agent("fake-bin").is_some());
    let again = registry::load(&source, LoadMode::Cached).unwrap();
    assert_eq!(again.origin, Origin::Cache, "a fresh cache is used");
    assert!(again.warning.is_none());
    assert_eq!(f.server.hits("/registry.json"), 1);

    // The network goes away.
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let offline = RegistrySource {
        url: format!("http://{dead}/registry.json"),
        ..source.clone()
    };
    // The cache belongs to its URL: another URL's cache is not used.
    let e = registry::load(&offline, LoadMode::Refresh).unwrap_err();
    assert!(e.to_string().contains("no saved copy"), "{e}");
    drop(f.server);
    let cached = registry::load(&source, LoadMode::Refresh).unwrap();
    assert_eq!(cached.origin, Origin::Cache);
    let warning = cached.warning.unwrap();
    assert!(warning.contains("could not fetch"), "{warning}");
    assert!(
        warning.contains("using the copy fetched just now"),
        "{warning}"
    );
    assert!(cached.registry.agent("fake-bin").is_some());
    let quiet = registry::load(&source, LoadMode::Offline).unwrap();
    assert_eq!(quiet.origin, Origin::Cache);
    assert!(quiet.warning.is_none());

    // No cache: the bundled snapshot, else an error naming the fix.
    let bare = RegistrySource {
        cache_dir: f.dir.path().join("empty-cache"),
        ..source.clone()
    };
    let e = registry::load(&bare, LoadMode::Cached).unwrap_err();
    assert!(
        e.to_string().contains("check your network connection"),
        "{e}"
    );
    let snapshot = f.dir.path().join("bundled.json");
    std::fs::write(
        &snapshot,
        r#"{"version": "1.0.0", "agents": [{"id": "x", "version": "1.0.0"}]}"#,
    )
    .unwrap();
    let bundled = registry::load(
        &RegistrySource {
            bundled: Some(snapshot),
            ..bare
        },
        LoadMode::Cached,
    )
    .unwrap();
    assert_eq!(bundled.origin, Origin::Bundled);
    assert!(bundled.warning.unwrap().contains("bundled with the plugin"));
    assert!(bundled.registry.agent("x").is_some());
}

#[test]
fn the_index_loads_from_a_file_url() {
    let f = Fixture::new();
    let path = f.dir.path().join("registry.json");
    std::fs::write(&path, f.registry_json("1.0.0")).unwrap();
    let source = RegistrySource {
        url: format!("file://{}", path.display()),
        cache_dir: f.dir.path().join("cache"),
        bundled: None,
        max_age: Duration::from_secs(3600),
    };
    let loaded = registry::load(&source, LoadMode::Refresh).unwrap();
    assert_eq!(loaded.origin, Origin::Network);
    assert_eq!(loaded.registry.agents.len(), 8);
    // The unknown kind was kept, not fatal.
    let bin = loaded.registry.agent("fake-bin").unwrap();
    assert!(bin.distribution.other.contains_key("docker"));
    let mut buf = String::new();
    std::fs::File::open(source.cache_dir.join("registry.json"))
        .unwrap()
        .read_to_string(&mut buf)
        .unwrap();
    assert!(
        buf.contains("fetched_at"),
        "the cache records its fetch time"
    );
}

#[test]
fn an_unreachable_registry_is_not_asked_again_for_a_while() {
    // Offline, every `:Acp agents` waited 3-10 s for the network to fail
    // again and showed the URL twice (issue 29).
    let f = Fixture::new();
    let snapshot = f.dir.path().join("bundled.json");
    std::fs::write(
        &snapshot,
        r#"{"version": "1.0.0", "agents": [{"id": "x", "version": "1.0.0"}]}"#,
    )
    .unwrap();
    // No route: the server answers 404, and counts the asks.
    let url = format!("{}/registry.json", f.server.base());
    let source = RegistrySource {
        url: url.clone(),
        cache_dir: f.dir.path().join("cache"),
        bundled: Some(snapshot),
        max_age: Duration::from_secs(3600),
    };
    let first = registry::load(&source, LoadMode::Cached).unwrap();
    assert_eq!(first.origin, Origin::Bundled);
    assert_eq!(f.server.hits("/registry.json"), 1);
    let warning = first.warning.unwrap();
    assert_eq!(warning.matches(&url).count(), 1, "the URL once: {warning}");
    assert!(!warning.contains('\n'), "one line: {warning}");

    let second = registry::load(&source, LoadMode::Cached).unwrap();
    assert_eq!(second.origin, Origin::Bundled);
    assert_eq!(
        f.server.hits("/registry.json"),
        1,
        "a recent failure is not tried again"
    );
    let warning = second.warning.unwrap();
    assert!(warning.contains("unreachable"), "{warning}");
    assert!(warning.contains(":Acp agents update"), "{warning}");
    assert!(!warning.contains('\n'), "one line: {warning}");

    // Asking for the newest tries again, and a success forgets the failure.
    let _ = registry::load(&source, LoadMode::Refresh).unwrap();
    assert_eq!(f.server.hits("/registry.json"), 2);
    f.server.route(
        "/registry.json",
        Route::Body(Arc::new(f.registry_json("1.0.0").into_bytes())),
    );
    let fetched = registry::load(&source, LoadMode::Refresh).unwrap();
    assert_eq!(fetched.origin, Origin::Network);
    let stale = RegistrySource {
        max_age: Duration::ZERO,
        ..source.clone()
    };
    let again = registry::load(&stale, LoadMode::Cached).unwrap();
    assert_eq!(again.origin, Origin::Network, "no failure remembered");
    assert_eq!(f.server.hits("/registry.json"), 4);
}
