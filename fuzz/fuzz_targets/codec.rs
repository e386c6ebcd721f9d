//! The line codec against the reference split on `\n`: any bytes, any read
//! sizes, any limit, futures dropped mid-line. Input layout: byte 0 is the
//! line limit, byte 1 says whether reads are interrupted, bytes 2..6 are
//! four read sizes (cycled), the rest is the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/acp-client/tests/properties/model.rs"]
mod model;

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let limit = usize::from(data[0]);
    let interrupt = data[1] & 1 == 1;
    let sizes = data[2..6].iter().map(|&b| usize::from(b) + 1).collect();
    model::check_codec(&data[6..], limit, sizes, interrupt);
});
