use super::*;
use serde_json::json;

#[test]
fn npm_executables_follow_npx() {
    assert_eq!(
        npm_bin("@s/tool", &json!({"bin": "cli.js"})).as_deref(),
        Some("tool")
    );
    assert_eq!(
        npm_bin("x", &json!({"bin": {"only": "a.js"}})).as_deref(),
        Some("only")
    );
    assert_eq!(
        npm_bin("x", &json!({"bin": {"x": "a.js", "y": "b.js"}})).as_deref(),
        Some("x")
    );
    assert_eq!(
        npm_bin("x", &json!({"bin": {"a": "a.js", "b": "b.js"}})),
        None
    );
    assert_eq!(npm_bin("x", &json!({})), None);
}

#[test]
fn pypi_specs_and_names() {
    assert_eq!(pip_spec("mistral-vibe@2.0.2"), "mistral-vibe==2.0.2");
    assert_eq!(pip_spec("pkg==1"), "pkg==1");
    assert_eq!(
        pip_spec("/tmp/a-1.0-py3-none-any.whl"),
        "/tmp/a-1.0-py3-none-any.whl"
    );
    assert_eq!(python_name("mistral-vibe@2.0.2"), "mistral-vibe");
    assert_eq!(python_name("pkg[extra]==1"), "pkg");
    assert_eq!(
        python_name("/tmp/tiny_agent-1.0-py3-none-any.whl"),
        "tiny-agent"
    );
}

#[test]
fn versions_must_be_plain_directory_names() {
    assert!(valid_version("1.0.0-beta.2+build.5"));
    assert!(!valid_version("../1.0.0"));
    assert!(!valid_version("1.0/2"));
    assert!(!valid_version(".."));
}

#[test]
fn a_second_installer_of_the_same_agent_is_refused_while_the_first_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = Installer::new(dir.path(), InstallOptions::default());
    let b = Installer::new(dir.path(), InstallOptions::default());
    let held = a.lock("x").unwrap();
    let e = b.lock("x").err().unwrap();
    assert!(e.to_string().contains("another editor"), "{e}");
    assert!(b.lock("y").is_ok(), "other agents are not held");
    drop(held);
    assert!(b.lock("x").is_ok());
}

#[test]
fn output_tail_keeps_the_last_lines() {
    let mut t = OutputTail::default();
    for i in 0..100 {
        t.push(format!("line {i}\n").as_bytes());
    }
    let text = t.text();
    assert!(text.ends_with("line 99"));
    assert_eq!(text.lines().count(), 20);
}
