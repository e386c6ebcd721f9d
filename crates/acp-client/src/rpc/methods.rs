//! Every ACP method name this crate sends or handles, in one place.
//!
//! The names come from the official schema crate so a rename upstream is a
//! compile error here, not a silent mismatch on the wire.

use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, CLIENT_METHOD_NAMES, PROTOCOL_LEVEL_METHOD_NAMES,
};

// Client -> agent.
/// `initialize`.
pub const INITIALIZE: &str = AGENT_METHOD_NAMES.initialize;
/// `authenticate`.
pub const AUTHENTICATE: &str = AGENT_METHOD_NAMES.authenticate;
/// `logout`.
pub const LOGOUT: &str = AGENT_METHOD_NAMES.logout;
/// `auth/login`: v2's `authenticate`.
pub const AUTH_LOGIN: &str = agent_client_protocol_schema::v2::AGENT_METHOD_NAMES.auth_login;
/// `auth/logout`: v2's `logout`.
pub const AUTH_LOGOUT: &str = agent_client_protocol_schema::v2::AGENT_METHOD_NAMES.auth_logout;
/// `session/new`.
pub const SESSION_NEW: &str = AGENT_METHOD_NAMES.session_new;
/// `session/load`.
pub const SESSION_LOAD: &str = AGENT_METHOD_NAMES.session_load;
/// `session/resume`.
pub const SESSION_RESUME: &str = AGENT_METHOD_NAMES.session_resume;
/// `session/list`.
pub const SESSION_LIST: &str = AGENT_METHOD_NAMES.session_list;
/// `session/close`.
pub const SESSION_CLOSE: &str = AGENT_METHOD_NAMES.session_close;
/// `session/delete`.
pub const SESSION_DELETE: &str = AGENT_METHOD_NAMES.session_delete;
/// `session/set_mode`.
pub const SESSION_SET_MODE: &str = AGENT_METHOD_NAMES.session_set_mode;
/// `session/set_config_option`.
pub const SESSION_SET_CONFIG_OPTION: &str = AGENT_METHOD_NAMES.session_set_config_option;
/// `session/prompt`.
pub const SESSION_PROMPT: &str = AGENT_METHOD_NAMES.session_prompt;
/// `session/fork` (unstable): a new session with the history of another,
/// whole or before a session cursor.
pub const SESSION_FORK: &str = AGENT_METHOD_NAMES.session_fork;
/// `session/cancel` (notification).
pub const SESSION_CANCEL: &str = AGENT_METHOD_NAMES.session_cancel;

// Agent -> client.
/// `session/update` (notification).
pub const SESSION_UPDATE: &str = CLIENT_METHOD_NAMES.session_update;
/// `session/request_permission`.
pub const REQUEST_PERMISSION: &str = CLIENT_METHOD_NAMES.session_request_permission;
/// `fs/read_text_file`.
pub const FS_READ_TEXT_FILE: &str = CLIENT_METHOD_NAMES.fs_read_text_file;
/// `fs/write_text_file`.
pub const FS_WRITE_TEXT_FILE: &str = CLIENT_METHOD_NAMES.fs_write_text_file;
/// `terminal/create`.
pub const TERMINAL_CREATE: &str = CLIENT_METHOD_NAMES.terminal_create;
/// `terminal/output`.
pub const TERMINAL_OUTPUT: &str = CLIENT_METHOD_NAMES.terminal_output;
/// `terminal/wait_for_exit`.
pub const TERMINAL_WAIT_FOR_EXIT: &str = CLIENT_METHOD_NAMES.terminal_wait_for_exit;
/// `terminal/kill`.
pub const TERMINAL_KILL: &str = CLIENT_METHOD_NAMES.terminal_kill;
/// `elicitation/create`.
pub const ELICITATION_CREATE: &str = CLIENT_METHOD_NAMES.elicitation_create;
/// `elicitation/complete` (notification).
pub const ELICITATION_COMPLETE: &str = CLIENT_METHOD_NAMES.elicitation_complete;
/// `terminal/release`.
pub const TERMINAL_RELEASE: &str = CLIENT_METHOD_NAMES.terminal_release;

// Both directions.
/// `$/cancel_request` (notification).
pub const CANCEL_REQUEST: &str = PROTOCOL_LEVEL_METHOD_NAMES.cancel_request;
