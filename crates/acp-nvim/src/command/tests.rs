use super::*;
use crate::msgpack::{from_json, map};
use serde_json::json;

/// Decodes `params` as `method`; a decoded command must say it came as
/// `method` (the names in the serde renames and in `name()` agree).
pub(super) fn decode(method: &str, params: serde_json::Value) -> Result<Command, BadCommand> {
    let decoded = Command::decode(method, &[from_json(&params)]);
    if let Ok(cmd) = &decoded {
        assert_eq!(cmd.name(), method, "name() of {cmd:?}");
    }
    decoded
}

fn open_params() -> serde_json::Value {
    json!({
        "chat_id": "c1",
        "agent": {"name": "demo", "cmd": ["demo-agent", "--acp"], "env": {"B": "2", "A": "1"}},
        "cwd": "/tmp/project",
    })
}

#[test]
fn decodes_open_with_defaults_and_sorted_env() {
    let Command::Open(open) = decode("acp.open", open_params()).unwrap() else {
        panic!("not an open");
    };
    assert_eq!(open.chat_id, ChatId("c1".into()));
    assert_eq!(open.agent.name, "demo");
    assert_eq!(open.agent.cmd, vec!["demo-agent", "--acp"]);
    assert_eq!(
        open.agent.env,
        vec![("A".into(), "1".into()), ("B".into(), "2".into())]
    );
    assert_eq!(open.agent.cwd, None);
    assert_eq!(open.agent.init_timeout, None);
    assert_eq!(open.cwd, PathBuf::from("/tmp/project"));
    assert!(open.mcp_servers.is_empty());
    assert_eq!(open.load_session_id, None);
    assert_eq!(open.permission.auto_allow, None);
    assert_eq!(open.permission.remember, None);
}

#[test]
fn decodes_open_extras() {
    let mut p = open_params();
    p["mcp_servers"] = json!([{"name": "fs", "command": "/bin/mcp", "args": [], "env": []}]);
    p["load_session_id"] = json!("sess-9");
    p["permission"] = json!({"auto_allow": ["read", "search"], "remember": true});
    // An empty Lua table travels as an empty array.
    p["agent"]["env"] = json!([]);
    p["agent"]["init_timeout_ms"] = json!(250);
    p["agent"]["missing_file_read"] = json!("empty");
    p["additional_directories"] = json!(["/extra/a", "/extra/b"]);
    let Command::Open(open) = decode("acp.open", p).unwrap() else {
        panic!("not an open");
    };
    assert_eq!(
        open.additional_directories,
        vec![PathBuf::from("/extra/a"), PathBuf::from("/extra/b")]
    );
    assert!(open.agent.missing_file_read_empty);
    assert_eq!(open.mcp_servers.len(), 1);
    assert_eq!(open.load_session_id.as_deref(), Some("sess-9"));
    assert_eq!(
        open.permission.auto_allow,
        Some(vec!["read".to_owned(), "search".to_owned()])
    );
    assert_eq!(open.permission.remember, Some(true));
    assert!(open.agent.env.is_empty());
    assert_eq!(
        open.agent.init_timeout,
        Some(std::time::Duration::from_millis(250))
    );

    let mut p = open_params();
    p["permission"] = json!({"remember": false});
    let Command::Open(open) = decode("acp.open", p).unwrap() else {
        panic!("not an open");
    };
    assert!(!open.agent.missing_file_read_empty, "off by default");
    assert_eq!(open.permission.remember, Some(false));
    assert_eq!(open.permission.auto_allow, None);
    assert_eq!(
        open.agent.protocol_version,
        acp_client::ProtocolVersion::V1,
        "v1 until v2 is stable"
    );
}

#[test]
fn decodes_the_protocol_version_and_refuses_others() {
    let mut p = open_params();
    p["agent"]["protocol_version"] = json!(2);
    let Command::Open(open) = decode("acp.open", p).unwrap() else {
        panic!("not an open");
    };
    assert_eq!(open.agent.protocol_version, acp_client::ProtocolVersion::V2);
    for bad in [json!(3), json!("2"), json!(0)] {
        let mut p = open_params();
        p["agent"]["protocol_version"] = bad;
        let err = decode("acp.open", p).unwrap_err().to_string();
        assert!(
            err.contains("`agent.protocol_version` must be 1 or 2"),
            "{err}"
        );
    }
}

#[test]
fn rejects_bad_open_params_with_a_reason() {
    let cases = [
        (
            json!({"agent": {"cmd": ["x"]}, "cwd": "/"}),
            "`chat_id` is missing",
        ),
        (
            json!({"chat_id": "c", "agent": {"cmd": []}, "cwd": "/"}),
            "agent.cmd",
        ),
        (
            json!({"chat_id": "c", "agent": {"cmd": "x"}, "cwd": "/"}),
            "must be a list",
        ),
        (
            json!({"chat_id": "c", "agent": {"cmd": ["x"]}, "cwd": "rel"}),
            "absolute",
        ),
        (
            json!({"chat_id": "c", "agent": {"cmd": ["x"]}}),
            "`cwd` is missing",
        ),
        (
            json!({"chat_id": "c", "agent": {"cmd": ["x"], "env": {"A": 1}}, "cwd": "/"}),
            "agent.env",
        ),
        (
            json!({"chat_id": "c", "agent": {"cmd": ["x"]}, "cwd": "/", "mcp_servers": [{"bogus": 1}]}),
            "McpServer",
        ),
        (
            json!({"chat_id": "c", "agent": {"cmd": ["x"]}, "cwd": "/", "load_session_id": "a", "resume_session_id": "b"}),
            "not both",
        ),
        (
            json!({"chat_id": "c", "agent": {"cmd": ["x"]}, "cwd": "/", "permission": {"remember": "yes"}}),
            "`permission.remember` must be true or false",
        ),
        (
            json!({"chat_id": "c", "agent": {"cmd": ["x"], "init_timeout_ms": 0}, "cwd": "/"}),
            "`agent.init_timeout_ms` must be a positive number of milliseconds, got 0",
        ),
    ];
    for (params, want) in cases {
        let err = decode("acp.open", params.clone()).unwrap_err();
        assert_eq!(err.method, "acp.open");
        assert!(err.reason.contains(want), "{params}: {}", err.reason);
    }
}

#[test]
fn decodes_prompt_blocks_into_content_blocks() {
    let cmd = decode(
        "acp.prompt",
        json!({"chat_id": 7, "blocks": [{"type": "text", "text": "hi"}]}),
    )
    .unwrap();
    let Command::Prompt {
        chat_id,
        blocks,
        buffers,
    } = cmd
    else {
        panic!("not a prompt");
    };
    assert_eq!(chat_id, ChatId("7".into()));
    assert!(matches!(&blocks[..], [schema::ContentBlock::Text(t)] if t.text == "hi"));
    assert!(buffers.is_empty());
}

#[test]
fn a_prompt_carries_the_unsaved_buffers_and_leaves_out_bad_ones() {
    let cmd = decode(
        "acp.prompt",
        json!({"chat_id": "c", "blocks": [{"type": "text", "text": "hi"}], "buffers": [
            {"path": "/w/a.txt", "text": "mine\n", "tick": 9, "disk": "disk\n"},
            {"path": "rel.txt", "text": "x", "tick": 1},
            {"path": "/w/b.txt", "tick": 2},
            {"path": "/w/c.txt", "text": "clean\n", "tick": 3}
        ]}),
    )
    .unwrap();
    let Command::Prompt { buffers, .. } = cmd else {
        panic!("not a prompt");
    };
    assert_eq!(
        buffers,
        vec![
            PromptBuffer {
                path: "/w/a.txt".into(),
                text: "mine\n".into(),
                tick: 9,
                disk: Some("disk\n".into()),
            },
            PromptBuffer {
                path: "/w/c.txt".into(),
                text: "clean\n".into(),
                tick: 3,
                disk: None,
            }
        ]
    );
    let err = decode(
        "acp.prompt",
        json!({"chat_id": "c", "blocks": [{"type": "text", "text": "hi"}], "buffers": 3}),
    )
    .unwrap_err();
    assert!(
        err.reason.contains("`buffers` must be a list"),
        "{}",
        err.reason
    );
}

#[test]
fn rejects_unknown_or_empty_blocks() {
    let err = decode(
        "acp.prompt",
        json!({"chat_id": "c", "blocks": [{"type": "hologram"}]}),
    )
    .unwrap_err();
    assert!(err.reason.contains("block 1"), "{}", err.reason);
    let err = decode("acp.prompt", json!({"chat_id": "c", "blocks": []})).unwrap_err();
    assert!(err.reason.contains("empty"));
}

#[test]
fn decodes_permission_respond_with_and_without_option() {
    assert_eq!(
        decode(
            "acp.permission_respond",
            json!({"request_id": 4, "option_id": "allow"})
        )
        .unwrap(),
        Command::PermissionRespond {
            request_id: PromptId(4),
            option_id: Some("allow".into())
        }
    );
    // Lua's nil is simply absent from the table.
    assert_eq!(
        decode("acp.permission_respond", json!({"request_id": 4})).unwrap(),
        Command::PermissionRespond {
            request_id: PromptId(4),
            option_id: None
        }
    );
    for bad in [
        json!({"request_id": "4"}),
        json!({"request_id": -1}),
        json!({}),
    ] {
        assert!(decode("acp.permission_respond", bad).is_err());
    }
}

#[test]
fn decodes_the_small_commands() {
    assert_eq!(
        decode("acp.hello", json!({"plugin_version": "0.1.0"})).unwrap(),
        Command::Hello {
            plugin_version: "0.1.0".into()
        }
    );
    assert_eq!(
        decode("acp.cancel", json!({"chat_id": "c"})).unwrap(),
        Command::Cancel {
            chat_id: ChatId("c".into()),
            subagent: None,
        }
    );
    assert_eq!(
        decode(
            "acp.cancel",
            json!({"chat_id": "c", "session_id": "child-1"})
        )
        .unwrap(),
        Command::Cancel {
            chat_id: ChatId("c".into()),
            subagent: Some("child-1".into()),
        }
    );
    assert_eq!(
        decode("acp.close", json!({"chat_id": "c"})).unwrap(),
        Command::Close {
            chat_id: ChatId("c".into())
        }
    );
    assert_eq!(
        decode("acp.set_mode", json!({"chat_id": "c", "mode_id": "plan"})).unwrap(),
        Command::SetMode {
            chat_id: ChatId("c".into()),
            mode_id: "plan".into()
        }
    );
    assert_eq!(
        decode(
            "acp.set_config_option",
            json!({"chat_id": "c", "config_id": "model", "value": "opus"})
        )
        .unwrap(),
        Command::SetConfigOption {
            chat_id: ChatId("c".into()),
            config_id: "model".into(),
            value: OptionValue::Id("opus".into())
        }
    );
    assert_eq!(
        decode(
            "acp.set_config_option",
            json!({"chat_id": "c", "config_id": "fast", "value": true})
        )
        .unwrap(),
        Command::SetConfigOption {
            chat_id: ChatId("c".into()),
            config_id: "fast".into(),
            value: OptionValue::Bool(true)
        }
    );
    assert_eq!(
        Command::decode("acp.shutdown", &[]).unwrap(),
        Command::Shutdown
    );
    assert_eq!(
        Command::decode("acp.shutdown", &[Value::Array(vec![])]).unwrap(),
        Command::Shutdown
    );
}

#[test]
fn decodes_complete_files_with_defaults() {
    assert_eq!(
        decode(
            "acp.complete_files",
            json!({"cwd": "/p", "query": "ma", "limit": 7, "hidden": true})
        )
        .unwrap(),
        Command::CompleteFiles(crate::files::FileQuery {
            cwd: PathBuf::from("/p"),
            query: "ma".into(),
            limit: 7,
            hidden: true,
        })
    );
    assert_eq!(
        decode("acp.complete_files", json!({"cwd": "/p"})).unwrap(),
        Command::CompleteFiles(crate::files::FileQuery {
            cwd: PathBuf::from("/p"),
            query: String::new(),
            limit: 50,
            hidden: false,
        })
    );
    for (bad, want) in [
        (json!({"cwd": "rel"}), "absolute"),
        (json!({}), "`cwd` is missing"),
        (json!({"cwd": "/p", "limit": -1}), "negative"),
        (json!({"cwd": "/p", "limit": "3"}), "integer"),
        (json!({"cwd": "/p", "hidden": 1}), "true or false"),
    ] {
        let err = decode("acp.complete_files", bad).unwrap_err();
        assert!(err.reason.contains(want), "{}", err.reason);
    }
}

#[test]
fn rejects_bad_shapes_without_panicking() {
    let weird = [
        Value::Nil,
        Value::from(3),
        Value::from("x"),
        Value::Binary(vec![0xff]),
        Value::Ext(1, vec![]),
        map([("chat_id", Value::Map(vec![]))]),
        map([("chat_id", Value::from(1.5))]),
    ];
    for method in [
        "acp.hello",
        "acp.open",
        "acp.prompt",
        "acp.cancel",
        "acp.permission_respond",
        "acp.close",
        "acp.set_mode",
        "acp.set_config_option",
        "acp.complete_files",
    ] {
        for w in &weird {
            assert!(
                Command::decode(method, std::slice::from_ref(w)).is_err(),
                "{method} {w:?}"
            );
        }
        assert!(Command::decode(method, &[Value::Nil, Value::Nil]).is_err());
    }
    let err = decode("acp.frobnicate", json!({})).unwrap_err();
    assert!(err.to_string().contains("`acp.frobnicate`"));
    assert!(err.to_string().contains("checkhealth"));
}
#[test]
fn decodes_list_sessions_logout_and_the_auth_and_transcript_fields_of_open() {
    let cmd = decode(
        "acp.list_sessions",
        json!({"request_id": 3, "agent": {"name": "demo", "cmd": ["demo-agent"]},
               "cwd": "/p", "all": true, "delete": "s-9"}),
    )
    .unwrap();
    let Command::ListSessions {
        request_id,
        agent,
        cwd,
        all,
        delete,
    } = cmd
    else {
        panic!("not a list");
    };
    assert_eq!(request_id, "3");
    assert_eq!(agent.cmd, vec!["demo-agent"]);
    assert_eq!(cwd, PathBuf::from("/p"));
    assert!(all);
    assert_eq!(delete.as_deref(), Some("s-9"));
    for (bad, want) in [
        (json!({"agent": {"cmd": ["x"]}, "cwd": "/p"}), "request_id"),
        (
            json!({"request_id": "r", "cwd": "/p"}),
            "`agent` is missing",
        ),
        (
            json!({"request_id": "r", "agent": {"cmd": ["x"]}, "cwd": "/p", "all": 1}),
            "`all`",
        ),
        (
            json!({"request_id": "r", "agent": {"cmd": ["x"]}, "cwd": "p"}),
            "absolute",
        ),
    ] {
        let err = decode("acp.list_sessions", bad).unwrap_err();
        assert!(err.reason.contains(want), "{}", err.reason);
    }
    assert_eq!(
        decode("acp.logout", json!({"chat_id": "c"})).unwrap(),
        Command::Logout {
            chat_id: ChatId("c".into())
        }
    );
    let mut p = open_params();
    p["auth_method_id"] = json!("login");
    p["transcript_dir"] = json!("/state/acp/transcripts");
    let Command::Open(open) = decode("acp.open", p).unwrap() else {
        panic!("not an open");
    };
    assert_eq!(open.auth_method_id.as_deref(), Some("login"));
    assert_eq!(
        open.transcript_dir,
        Some(PathBuf::from("/state/acp/transcripts"))
    );
    let mut p = open_params();
    p["transcript_dir"] = json!("relative");
    assert!(decode("acp.open", p).is_err());
}

#[test]
fn open_takes_the_directory_of_remembered_permissions() {
    let Command::Open(open) = decode("acp.open", open_params()).unwrap() else {
        panic!("not an open");
    };
    assert_eq!(open.permission_dir, None, "optional");
    let mut p = open_params();
    p["permission_dir"] = json!("/state/acp/permissions");
    let Command::Open(open) = decode("acp.open", p).unwrap() else {
        panic!("not an open");
    };
    assert_eq!(
        open.permission_dir,
        Some(PathBuf::from("/state/acp/permissions"))
    );
    let mut p = open_params();
    p["permission_dir"] = json!("relative/dir");
    assert!(decode("acp.open", p).is_err(), "a relative path is refused");
}

#[test]
fn registry_commands_carry_where_things_are() {
    use crate::registry::{Places, RegistryCommand};
    let registry = json!({"url": "file:///r.json", "dir": "/d/agents", "cache_dir": "/c"});
    let places = Places {
        url: "file:///r.json".into(),
        dir: "/d/agents".into(),
        cache_dir: "/c".into(),
        bundled: None,
    };
    assert_eq!(
        decode(
            "acp.agents_list",
            json!({"request_id": 3, "registry": registry, "mode": "refresh"})
        )
        .unwrap(),
        Command::Registry(RegistryCommand::List {
            request_id: "3".into(),
            places: places.clone(),
            mode: acp_client::agents::registry::LoadMode::Refresh,
        })
    );
    assert_eq!(
        decode(
            "acp.agents_install",
            json!({"id": "gemini", "registry": registry})
        )
        .unwrap(),
        Command::Registry(RegistryCommand::Install {
            id: "gemini".into(),
            places,
            allow_unverified: false,
        })
    );
    assert_eq!(
        decode("acp.agents_cancel", json!({"id": "gemini"})).unwrap(),
        Command::Registry(RegistryCommand::Cancel {
            id: "gemini".into()
        })
    );
    let e = decode("acp.agents_remove", json!({"id": "x"})).unwrap_err();
    assert!(e.reason.contains("`registry` is missing"), "{e}");
    let e = decode(
        "acp.agents_install",
        json!({"id": "x", "registry": {"url": "u", "dir": "rel", "cache_dir": "/c"}}),
    )
    .unwrap_err();
    assert!(
        e.reason.contains("`registry.dir` must be an absolute path"),
        "{e}"
    );
    let e = decode(
        "acp.agents_list",
        json!({"request_id": "r", "registry": registry, "mode": "sometimes"}),
    )
    .unwrap_err();
    assert!(e.reason.contains("`mode` must be"), "{e}");
}

#[test]
fn messages_name_the_field_what_it_must_be_and_what_came() {
    let reason =
        |method: &str, params: serde_json::Value| decode(method, params).unwrap_err().reason;
    let open = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut p = open_params();
        f(&mut p);
        reason("acp.open", p)
    };
    assert_eq!(reason("acp.close", json!({})), "`chat_id` is missing");
    assert_eq!(
        reason("acp.set_mode", json!({"chat_id": "c", "mode_id": true})),
        "`mode_id` must be a string, got a boolean"
    );
    assert_eq!(
        open(&|p| p["agent"]["cmd"] = json!([""])),
        "`agent.cmd` must be a list starting with the program, like { \"claude-agent-acp\" }"
    );
    assert_eq!(
        open(&|p| p["agent"]["env"] = json!({"A": 1})),
        "`agent.env.A` must be a string, got a number"
    );
    assert_eq!(
        open(&|p| p["agent"]["missing_file_read"] = json!("skip")),
        "`agent.missing_file_read` must be \"error\" or \"empty\", got \"skip\""
    );
    assert_eq!(
        open(&|p| p["system_prompt"] = json!({"mode": "replace", "text": "x"})),
        "`system_prompt.mode` must be \"append\" or \"override\", got \"replace\""
    );
    assert_eq!(
        open(&|p| p["system_prompt"] = json!(3)),
        "`system_prompt` must be a string or { mode = ..., text = ... }, got a number"
    );
    assert_eq!(
        open(&|p| p["additional_directories"] = json!(["/a", "b"])),
        "`additional_directories` must be an absolute path, got `b`"
    );
    assert_eq!(
        reason("acp.rewind", json!({"chat_id": "c", "turn": 0})),
        "`turn` must be a turn number from 1, got 0"
    );
    assert_eq!(
        reason("acp.complete_files", json!({"cwd": "/p", "limit": -1})),
        "`limit` must be a non-negative integer, got -1"
    );
    assert_eq!(
        reason("acp.prompt", json!({"chat_id": "c", "blocks": []})),
        "`blocks` is empty; a prompt needs at least one content block"
    );
    assert_eq!(
        reason(
            "acp.open",
            json!({"chat_id": "c", "agent": {"cmd": ["x"]}, "cwd": "/", "load_session_id": "a", "resume_session_id": "b"})
        ),
        "give `load_session_id` or `resume_session_id`, not both"
    );
    // The answer's own problems come from the client's one decode of it.
    let err = reason("acp.elicitation_respond", json!({"request_id": 1}));
    assert!(err.contains("the answer needs an `action`"), "{err}");
    assert_eq!(reason("acp.frobnicate", json!({})), "no such method");
}

/// What Lua sends that JSON has no word for: nil entries, empty tables of
/// either kind, integer keys, bytes that are not UTF-8, buffer handles.
#[test]
fn lua_shapes_decode_as_lua_means_them() {
    // A nil field is an absent one: optional fields get their default,
    // required ones are missing.
    let nil_option = map([("chat_id", Value::from("c")), ("session_id", Value::Nil)]);
    assert_eq!(
        Command::decode("acp.cancel", &[nil_option]).unwrap(),
        Command::Cancel {
            chat_id: ChatId("c".into()),
            subagent: None
        }
    );
    let nil_required = map([("chat_id", Value::Nil)]);
    let err = Command::decode("acp.close", &[nil_required]).unwrap_err();
    assert_eq!(err.reason, "`chat_id` is missing");
    // An empty table as a map where a list is wanted, and the other way.
    let mut p = open_params();
    p["additional_directories"] = json!({});
    p["agent"]["env"] = json!([]);
    let Command::Open(open) = decode("acp.open", p).unwrap() else {
        panic!("not an open");
    };
    assert!(open.additional_directories.is_empty() && open.agent.env.is_empty());
    // A table with integer keys (a list with holes, or mixed) is refused
    // with a reason, not misread as fields by position.
    let mixed = Value::Map(vec![
        (Value::from(1), Value::from("x")),
        (Value::from("chat_id"), Value::from("c")),
    ]);
    let err = Command::decode("acp.close", &[mixed]).unwrap_err();
    assert_eq!(err.reason, "keys must be strings, got a number");
    // Text that is not UTF-8: refused as a field, made lossy in a prompt
    // block, which goes to the agent as JSON.
    // A msgpack str of two bytes, the second not UTF-8, as Neovim may send.
    let bad_utf8 = rmpv::decode::read_value(&mut &[0xa2, b'h', 0xff][..]).unwrap();
    let err = Command::decode(
        "acp.set_mode",
        &[map([
            ("chat_id", Value::from("c")),
            ("mode_id", bad_utf8.clone()),
        ])],
    )
    .unwrap_err();
    assert_eq!(
        err.reason,
        "`mode_id` must be a string, got text that is not UTF-8"
    );
    let block = map([("type", Value::from("text")), ("text", bad_utf8)]);
    let prompt = map([
        ("chat_id", Value::from("c")),
        ("blocks", Value::Array(vec![block])),
    ]);
    let Command::Prompt { blocks, .. } = Command::decode("acp.prompt", &[prompt]).unwrap() else {
        panic!("not a prompt");
    };
    assert!(matches!(&blocks[..], [schema::ContentBlock::Text(t)] if t.text == "h\u{fffd}"));
    // A buffer handle where a string is wanted.
    let err =
        Command::decode("acp.close", &[map([("chat_id", Value::Ext(0, vec![1]))])]).unwrap_err();
    assert_eq!(err.reason, "`chat_id` must be a string, got a handle");
}
