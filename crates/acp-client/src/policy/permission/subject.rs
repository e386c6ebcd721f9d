//! What a permission request is about: the key an "always" answer is
//! remembered under, so it never covers another kind of action or another
//! thing.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::session::update::{ToolCallFields, ToolContent, ToolKind};

/// The subject a remembered decision is about, so an "always" answer only
/// ever covers the same kind of action on the same thing.
///
/// - `execute`: the command line, from `rawInput.command` or `rawInput.cmd`
///   (a string, or an array of strings joined with spaces), else the title.
/// - `read`, `edit`, `delete`, `move`: the lexically normalized paths the
///   call touches, from its locations and diff contents (in order, without
///   duplicates, one per line), else `rawInput.path` / `file_path` /
///   `abs_path`, else the title. All paths count, not just the first, so an
///   "always" for editing `a.rs` cannot approve a call that edits `a.rs`
///   and `b.rs`.
/// - any other kind (or none): the title.
///
/// Empty when nothing identifies the action; [`PermissionPolicy`](super::PermissionPolicy) never
/// remembers or matches an empty subject.
pub fn subject_of(tool_call: &ToolCallFields) -> String {
    let title = || tool_call.title.as_deref().unwrap_or("").trim().to_owned();
    match &tool_call.kind {
        Some(ToolKind::Execute) => command_of(tool_call.raw_input.as_ref()).unwrap_or_else(title),
        Some(ToolKind::Read | ToolKind::Edit | ToolKind::Delete | ToolKind::Move) => {
            let paths = paths_of(tool_call);
            if paths.is_empty() {
                title()
            } else {
                paths.join("\n")
            }
        }
        _ => title(),
    }
}

fn command_of(raw_input: Option<&Value>) -> Option<String> {
    let raw = raw_input?;
    let value = raw.get("command").or_else(|| raw.get("cmd"))?;
    let command = match value {
        Value::String(s) => s.trim().to_owned(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    (!command.is_empty()).then_some(command)
}

fn paths_of(tool_call: &ToolCallFields) -> Vec<String> {
    fn add(paths: &mut Vec<String>, p: &Path) {
        let p = normalize_lexically(p).to_string_lossy().into_owned();
        if !p.is_empty() && !paths.contains(&p) {
            paths.push(p);
        }
    }
    let mut paths = Vec::new();
    for location in tool_call.locations.iter().flatten() {
        add(&mut paths, &location.path);
    }
    for content in tool_call.content.iter().flatten() {
        if let ToolContent::Diff { path, .. } = content {
            add(&mut paths, path);
        }
    }
    if paths.is_empty() {
        if let Some(raw) = &tool_call.raw_input {
            let field = ["path", "file_path", "abs_path"]
                .iter()
                .find_map(|k| raw.get(*k).and_then(Value::as_str));
            if let Some(p) = field {
                add(&mut paths, Path::new(p));
            }
        }
    }
    paths
}

/// Resolves `.` and `..` without touching the disk (the subject must not
/// depend on what exists right now).
pub(super) fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                // A relative path climbing above its start keeps its `..`.
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The tool kind's wire name; ACP defaults an omitted kind to `other`.
pub(crate) fn tool_kind_name(tool_call: &ToolCallFields) -> String {
    tool_call
        .kind
        .as_ref()
        .map_or("other", ToolKind::as_str)
        .to_owned()
}
