//! `fs/*`: the workspace sandbox and disk-backed reads and writes.
