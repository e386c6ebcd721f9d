---@mod acp.sanitize Agent text made safe to draw.
---
--- Every string an agent controls (option names, questions, titles,
--- locations, URLs) goes through here before it is drawn. A crafted agent
--- (issue 25) put a newline in a permission option name: nvim_buf_set_lines
--- refused the line, the prompt never appeared and stayed pending. A newline
--- could also forge a second option line, a carriage return or a
--- right-to-left override could make text read as something else. So:
---
--- - `line`: one display line. Newlines show as `⏎`, other control
---   characters as their visible symbol (`␛` for escape, `␍`, `␇`), C1 controls
---   and bidirectional overrides as `�`; tabs become a space.
--- - `lines`: text that may span lines (a question), split at newlines, each
---   line made safe as by `line`.
--- - `url` and `openable`: a URL shown shortened, opened only when it is a
---   plain http(s) link.

local M = {}

--- Bytes of a URL shown before it is shortened (the full URL is available
--- with the elicitation's `y` key).
M.URL_SHOWN = 200

--- Longer URLs are not opened: no real page needs 8 KiB of link, and a
--- megabyte of URL given to a browser is an attack, not a login.
M.URL_MAX = 8192

-- C0 controls (except newline and tab, handled first) and DEL as the
-- Unicode "control pictures": visible, one cell, never interpreted.
local PICTURE = {}
for b = 0, 31 do
  PICTURE[string.char(b)] = vim.fn.nr2char(0x2400 + b)
end
PICTURE["\127"] = "␡"
PICTURE["\t"] = " "
PICTURE["\n"] = "⏎"

-- Multi-byte code points that reorder or hide text: C1 controls
-- (U+0080-U+009F), the bidi embeddings, overrides and isolates
-- (U+202A-U+202E, U+2066-U+2069), the marks U+200E, U+200F and U+061C.
local HIDDEN = {
  "\194[\128-\159]",
  "\226\128[\170-\174]",
  "\226\129[\166-\169]",
  "\226\128[\142\143]",
  "\216\156",
}

---@param s string
---@return string
local function hidden_out(s)
  for _, pat in ipairs(HIDDEN) do
    s = s:gsub(pat, "�")
  end
  return s
end

--- One display line of agent text: nothing in it can break the line, move
--- the cursor or reorder what follows. Non-strings are shown with tostring.
---@param s any
---@param max? integer bytes kept (then "…" and the count of the rest)
---@return string
function M.line(s, max)
  s = type(s) == "string" and s or tostring(s == nil and "" or s)
  if max and #s > max then
    -- Cut on a character boundary (never inside a UTF-8 sequence).
    local cut = max
    while cut > 0 and s:byte(cut + 1) and s:byte(cut + 1) >= 0x80 and s:byte(cut + 1) < 0xC0 do
      cut = cut - 1
    end
    s = ("%s… (%d more bytes)"):format(s:sub(1, cut), #s - cut)
  end
  if s:find("[%c\127]") then
    s = s:gsub("[%c\127]", PICTURE)
  end
  if s:find("[\194\216\226]") then
    s = hidden_out(s)
  end
  return s
end

--- Agent text that may hold several lines, each made safe as by `line`.
---@param s any
---@return string[]
function M.lines(s)
  s = type(s) == "string" and s or tostring(s == nil and "" or s)
  local out = {}
  for part in (s:gsub("\r\n", "\n") .. "\n"):gmatch("(.-)\n") do
    out[#out + 1] = M.line(part)
  end
  return out
end

--- A URL as shown: made safe and shortened to `URL_SHOWN` bytes.
---@param url any
---@return string
function M.url(url)
  return M.line(url, M.URL_SHOWN)
end

--- Whether a URL may be handed to vim.ui.open: an http or https link with a
--- host, no whitespace or control character, at most `URL_MAX` bytes.
--- `javascript:`, `file://`, `data:` and anything else are never opened.
---@param url any
---@return boolean ok, string? why not (a sentence for the user)
function M.openable(url)
  if type(url) ~= "string" or url == "" then
    return false, "the agent gave no link"
  end
  if #url > M.URL_MAX then
    return false, ("the link is %d bytes long, more than a real page needs (%d)"):format(#url, M.URL_MAX)
  end
  local scheme = url:match("^(%a[%w+.-]*):")
  scheme = scheme and scheme:lower()
  if scheme ~= "http" and scheme ~= "https" then
    return false, ("only http and https links are opened, not `%s:`"):format(M.line(scheme or "?", 40))
  end
  if url:find("[%c%s\127]") or url:find("[\194\216\226]") and hidden_out(url) ~= url then
    return false, "the link holds spaces or control characters that could disguise where it goes"
  end
  if not url:match("^%a+://[^/?#]+") then
    return false, "the link names no host"
  end
  return true
end

return M
