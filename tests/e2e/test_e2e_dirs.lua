-- End to end: additional workspace directories of a chat, from open() and
-- from :Acp add-dir (the session continues with the new root). The fake
-- agent reads a file in the extra directory: refused outside the
-- workspace, served once the directory is one of the chat's roots.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()
local extra = T.tmpdir()
T.write_file(extra .. "/note.txt", "extra!")

T.setup_fake({
  dirs = {
    turns = {
      {
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = extra .. "/note.txt" },
            saveAs = "r",
            onOk = { { type = "text", text = "read: {{r.content}}\n" } },
            onError = { { type = "text", text = "denied {{r.error.code}}\n" } },
          },
        },
      },
    },
  },
}, dir)
T.require_binaries()

T.test(":Acp add-dir makes a directory part of the chat's workspace; the session goes on", function()
  local chat = T.open_chat("dirs", dir)
  T.eq("end_turn", T.turn(chat, "read it"), "first turn")
  T.wait_text(chat, "denied -32002")
  local id = chat.session_id
  vim.api.nvim_set_current_buf(chat.bufnr)
  vim.cmd("Acp add-dir " .. extra)
  T.wait_text(chat, "— directory added: " .. extra .. " —")
  T.wait(function()
    return chat.status == "ready" and chat.session_id ~= nil
  end, "session continued; transcript:\n" .. T.text(chat.bufnr))
  T.eq(id, chat.session_id, "the same session, resumed")
  T.eq("end_turn", T.turn(chat, "read it again"), "second turn")
  T.wait_text(chat, "read: extra!")
  local ok, err = chat:add_directory(extra)
  T.eq(false, ok, "a directory is added once")
  T.contains(err, "already", "says so")
end)

T.test("open() takes additional directories", function()
  local chat = assert(require("acp").open({ agent = "dirs", cwd = dir, additional_directories = { extra } }))
  T.wait(function()
    return chat.session_id ~= nil
  end, "session")
  T.eq("end_turn", T.turn(chat, "read it"), "turn")
  T.wait_text(chat, "read: extra!")
  local bad, err = require("acp").open({ agent = "dirs", cwd = dir, additional_directories = { dir .. "/nope" } })
  T.eq(nil, bad, "refused")
  T.contains(err, "is not a directory", "named")
end)

T.run()
