-- emmylua_check's configuration (scripts/find-luacheck.sh installs it; `make
-- lint` runs it over lua/ and plugin/). Lua rather than JSON so that each
-- choice can say why.
return {
  runtime = {
    -- Neovim embeds LuaJIT (Lua 5.1 plus its extensions: bit, ffi, jit).
    version = "LuaJIT",
    requirePattern = { "?.lua", "?/init.lua" },
  },
  workspace = {
    -- The running Neovim's own annotated Lua (vim.api, vim.fn, vim.uv, ...):
    -- `make lint` sets VIMRUNTIME from the Neovim the tests use. types/ adds
    -- the libuv binding, which the runtime names but does not define.
    library = { "$VIMRUNTIME/lua", "./types" },
  },
  strict = {
    -- Off: with it, every `list[i]` is `T|nil` even inside `for i = 1, #list`
    -- and on the fixed-size tuples Neovim returns (nvim_win_get_cursor),
    -- which buried the real nil checks in noise. lua-language-server does
    -- the same by default.
    arrayIndex = false,
  },
  diagnostics = {
    globals = { "vim" },
    disable = {
      -- Off: it flags `if x then` wherever the annotation says x is never
      -- nil, but most such x come from an agent's JSON (or Neovim's event
      -- data) whose annotation says what a well-behaved peer sends; the
      -- check is the plugin's guard against a hostile or broken one, which
      -- the house rules require (tests/hostile). Removing them on this
      -- checker's say-so would turn bad input into Lua errors.
      "unnecessary-if",
    },
  },
}
