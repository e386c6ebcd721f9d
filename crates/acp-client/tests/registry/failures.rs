//! An install cut short (cancelled, killed) or fed a bad artifact (corrupt,
//! wrong checksum, climbing paths) leaves nothing installed.

use acp_client::agents::registry::install::CancelToken;
use acp_client::Error;

use super::{run_turn, Fixture};

#[test]
fn a_cancelled_download_leaves_nothing_and_the_installed_version_works() {
    let f = Fixture::new();
    let installer = f.installer();
    let reg = f.registry("1.0.0");
    // `slow` is installed at an older version first: cancelling the
    // update must leave it as it was.
    let mut old = reg.agent("fake-bin").unwrap().clone();
    old.id = "slow".into();
    old.version = "0.9.0".into();
    let previous = installer
        .install(&old, &CancelToken::new(), &mut |_| {})
        .unwrap();

    let cancel = CancelToken::new();
    let mut saw_bytes = false;
    let e = installer
        .install(reg.agent("slow").unwrap(), &cancel, &mut |p| {
            if p.done.is_some_and(|d| d > 0) {
                saw_bytes = true;
                cancel.cancel();
            }
        })
        .unwrap_err();
    assert!(saw_bytes, "progress reported downloaded bytes");
    assert!(
        matches!(e, Error::InstallCancelled { .. }),
        "unexpected {e:?}"
    );
    assert!(e.to_string().contains("cancelled"), "{e}");
    assert_eq!(
        installer.installed_agent("slow").unwrap().as_ref(),
        Some(&previous)
    );
    f.assert_clean("slow", Some("0.9.0"));
    let said = run_turn(&previous, &f.scenario, f.dir.path());
    assert!(said.contains("hello from the fake agent"), "{said}");
}

#[test]
fn a_killed_install_leaves_no_installed_version_and_is_cleaned_up() {
    let f = Fixture::new();
    let installer = f.installer();
    // What a Neovim killed mid-install leaves: a temporary directory.
    let leftover = f.dir.path().join("agents/fake-bin/.tmp-1.0.0-1-2");
    std::fs::create_dir_all(leftover.join("bin")).unwrap();
    std::fs::write(leftover.join("bin/acp-fake-agent"), b"half").unwrap();
    assert!(installer.installed_agent("fake-bin").unwrap().is_none());
    assert!(installer.installed().unwrap().is_empty());
    f.install(&f.registry("1.0.0"), "fake-bin").unwrap();
    f.assert_clean("fake-bin", Some("1.0.0"));
}

#[test]
fn a_corrupt_archive_or_a_wrong_checksum_installs_nothing() {
    let f = Fixture::new();
    let reg = f.registry("1.0.0");
    let e = f.install(&reg, "broken").unwrap_err();
    assert!(e.to_string().contains("corrupt"), "{e}");
    f.assert_clean("broken", None);
    let e = f.install(&reg, "bad-hash").unwrap_err();
    assert!(e.to_string().contains("SHA-256"), "{e}");
    f.assert_clean("bad-hash", None);
}

#[test]
fn an_archive_with_climbing_paths_is_refused() {
    let f = Fixture::new();
    let reg = f.registry("1.0.0");
    let e = f.install(&reg, "climbing").unwrap_err();
    assert!(e.to_string().contains("`../../escaped`"), "{e}");
    assert!(e.to_string().contains("outside its directory"), "{e}");
    f.assert_clean("climbing", None);
    // Two levels up from the temporary directory is the install root.
    assert!(!f.dir.path().join("agents/escaped").exists());
    assert!(!f.dir.path().join("escaped").exists());
}
