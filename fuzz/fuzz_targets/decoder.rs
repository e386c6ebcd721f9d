//! `Incoming::decode`, `decode_session_notification` and
//! `decode_tool_call_fields` on every line of any input: errors are fine,
//! panics are bugs.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/acp-client/tests/properties/model.rs"]
mod model;

fuzz_target!(|data: &[u8]| {
    model::feed_decoders(data);
});
