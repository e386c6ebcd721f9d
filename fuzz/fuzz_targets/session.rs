//! The session model fed with whatever decodes from any input, one line per
//! update (`!cancel` cancels unfinished tool calls), its invariants checked
//! after every update.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/acp-client/tests/properties/model.rs"]
mod model;

fuzz_target!(|data: &[u8]| {
    model::feed_session(data);
});
