//! Every ACP method name this crate sends or handles, in one place.
//!
//! The names come from the official schema crate so a rename upstream is a
//! compile error here, not a silent mismatch on the wire.

use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, CLIENT_METHOD_NAMES, PROTOCOL_LEVEL_METHOD_NAMES,
};

// Client -> agent.
pub const INITIALIZE: &str = AGENT_METHOD_NAMES.initialize;
pub const AUTHENTICATE: &str = AGENT_METHOD_NAMES.authenticate;
pub const LOGOUT: &str = AGENT_METHOD_NAMES.logout;
pub const SESSION_NEW: &str = AGENT_METHOD_NAMES.session_new;
pub const SESSION_LOAD: &str = AGENT_METHOD_NAMES.session_load;
pub const SESSION_RESUME: &str = AGENT_METHOD_NAMES.session_resume;
pub const SESSION_LIST: &str = AGENT_METHOD_NAMES.session_list;
pub const SESSION_CLOSE: &str = AGENT_METHOD_NAMES.session_close;
pub const SESSION_DELETE: &str = AGENT_METHOD_NAMES.session_delete;
pub const SESSION_SET_MODE: &str = AGENT_METHOD_NAMES.session_set_mode;
pub const SESSION_SET_CONFIG_OPTION: &str = AGENT_METHOD_NAMES.session_set_config_option;
pub const SESSION_PROMPT: &str = AGENT_METHOD_NAMES.session_prompt;
pub const SESSION_CANCEL: &str = AGENT_METHOD_NAMES.session_cancel;

// Agent -> client.
pub const SESSION_UPDATE: &str = CLIENT_METHOD_NAMES.session_update;
pub const REQUEST_PERMISSION: &str = CLIENT_METHOD_NAMES.session_request_permission;
pub const FS_READ_TEXT_FILE: &str = CLIENT_METHOD_NAMES.fs_read_text_file;
pub const FS_WRITE_TEXT_FILE: &str = CLIENT_METHOD_NAMES.fs_write_text_file;
pub const TERMINAL_CREATE: &str = CLIENT_METHOD_NAMES.terminal_create;
pub const TERMINAL_OUTPUT: &str = CLIENT_METHOD_NAMES.terminal_output;
pub const TERMINAL_WAIT_FOR_EXIT: &str = CLIENT_METHOD_NAMES.terminal_wait_for_exit;
pub const TERMINAL_KILL: &str = CLIENT_METHOD_NAMES.terminal_kill;
pub const TERMINAL_RELEASE: &str = CLIENT_METHOD_NAMES.terminal_release;

// Both directions.
pub const CANCEL_REQUEST: &str = PROTOCOL_LEVEL_METHOD_NAMES.cancel_request;
