-- The plugin version. The backend compares it with its own CARGO_PKG_VERSION
-- in `acp.hello`, and `:Acp build` downloads the release tagged v<version>:
-- bump it with the workspace version in Cargo.toml (a unit test in
-- crates/acp-nvim checks they agree, the release workflow checks the tag).
return "0.1.0"
