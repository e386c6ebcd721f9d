-- The plugin version. The backend compares it with its own CARGO_PKG_VERSION
-- in `acp.hello`, so bump both together.
return "0.1.0"
