---@mod acp.chat.view.form.fields What each field of a form accepts: its
--- value checked as the backend checks it (acp-client's `FormSchema::validate`),
--- the text typed parsed into a value, and the words that describe it (hint,
--- choices, value shown). No window here.

local M = {}

--- Agent text drawn on one line: newlines and other control characters are
--- shown as their pictures (they broke the row layout, and a carriage return
--- or escape sequence could rewrite the screen).
---@param s any
---@return string
local function clean(s)
  -- The one display sanitizer: nothing an agent sends can break or disguise a line.
  return require("acp.sanitize").line(s)
end

---@param n number
---@return string
local function num(n)
  if n == math.floor(n) and math.abs(n) < 1e15 then
    return ("%d"):format(n)
  end
  return tostring(n)
end

-- Validation: the rules of acp-client's FormSchema::validate (elicitation.rs),
-- with its sentences, so what the form says is what the backend would say.

-- Rust's char::is_whitespace: ASCII space and the Unicode spaces (U+0085,
-- U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
local function has_space(s)
  return s:find("%s") ~= nil
    or s:find("\194[\133\160]") ~= nil
    or s:find("\225\154\128") ~= nil
    or s:find("\226\128[\128-\138\168\169\175]") ~= nil
    or s:find("\226\129\159") ~= nil
    or s:find("\227\128\128") ~= nil
end

local function is_email(s)
  local at = s:match("^.*()@")
  if not at then
    return false
  end
  local loc, domain = s:sub(1, at - 1), s:sub(at + 1)
  return loc ~= ""
    and not has_space(s)
    and domain:find(".", 1, true) ~= nil
    and domain:sub(1, 1) ~= "."
    and domain:sub(-1) ~= "."
end

local function is_uri(s)
  local scheme, rest = s:match("^([^:]*):(.*)$")
  return scheme ~= nil and scheme:match("^%a[%w+%-.]*$") ~= nil and rest ~= "" and not has_space(s)
end

local function is_date(s)
  local y, m, d = s:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)$")
  if not y then
    return false
  end
  y, m, d = tonumber(y), tonumber(m), tonumber(d)
  if not y or not m or not d then
    return false
  end
  local leap = (y % 4 == 0 and y % 100 ~= 0) or y % 400 == 0
  ---@type integer[]
  local month_days = { 31, leap and 29 or 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }
  local days = month_days[m]
  return days ~= nil and d >= 1 and d <= days
end

local function is_date_time(s)
  local date, time = s:match("^(%d%d%d%d%-%d%d%-%d%d)[Tt](.+)$")
  if not date or not is_date(date) then
    return false
  end
  local clock, offset = time:match("^(.-)[Zz]$"), nil
  if not clock then
    clock, offset = time:match("^(.*)[+-](%d%d:%d%d)$")
    if not clock then
      return false
    end
  end
  clock = clock:gsub("%.%d+$", "")
  local h, mi, se = clock:match("^(%d%d):(%d%d):(%d%d)$")
  if not h or tonumber(h) > 23 or tonumber(mi) > 59 or tonumber(se) > 60 then
    return false
  end
  if offset then
    local oh, om = offset:match("^(%d%d):(%d%d)$")
    return tonumber(oh) < 24 and tonumber(om) < 60
  end
  return true
end

local FORMATS = {
  email = { is_email, "an email address such as name@example.com" },
  uri = { is_uri, "a URI such as https://example.com/page" },
  date = { is_date, "a date such as 2026-07-28" },
  ["date-time"] = { is_date_time, "a date and time such as 2026-07-28T14:30:00Z" },
}

--- The problem of one field's value, as a sentence without the field's
--- name (drawn under the field), or nil.
---@param f acp.ElicitationField
---@param v any
---@param text? string text typed that is no value of the field's type
---@return string?
function M.check(f, v, text)
  if text then
    if f.type == "integer" then
      return ("`%s` is not a whole number"):format(clean(text))
    end
    return ("`%s` is not a number"):format(clean(text))
  end
  if v == nil or (f.type == "multi_select" and type(v) == "table" and #v == 0 and f.required) then
    if f.type == "unknown" and f.required then
      return ("has type `%s`, which this client cannot fill: decline the question"):format(clean(f.wire_type))
    end
    if f.required then
      return f.type == "multi_select" and "is required: pick at least one" or "is required"
    end
    return nil
  end
  local t = f.type
  if t == "string" or t == "enum" then
    if type(v) ~= "string" then
      return "must be text"
    end
    if t == "enum" then
      for _, c in ipairs(f.choices or {}) do
        if c.value == v then
          return nil
        end
      end
      return "must be one of the choices"
    end
    local len = vim.fn.strchars(v)
    if f.min_length and len < f.min_length then
      return ("must be at least %d characters long"):format(f.min_length)
    end
    if f.max_length and len > f.max_length then
      return ("must be at most %d characters long (it has %d)"):format(f.max_length, len)
    end
    local fmt = FORMATS[f.format or ""]
    if fmt and not fmt[1](v) then
      return "must be " .. fmt[2]
    end
  elseif t == "integer" or t == "number" then
    if type(v) ~= "number" then
      return "must be a number"
    end
    if t == "integer" and v ~= math.floor(v) then
      return "must be a whole number"
    end
    if f.minimum and v < f.minimum then
      return "must be at least " .. num(f.minimum)
    end
    if f.maximum and v > f.maximum then
      return "must be at most " .. num(f.maximum)
    end
  elseif t == "boolean" then
    if type(v) ~= "boolean" then
      return "must be yes or no"
    end
  elseif t == "multi_select" then
    local n = #v
    if f.min_items and n < f.min_items then
      return ("needs at least %d choices"):format(f.min_items)
    end
    if f.max_items and n > f.max_items then
      return ("allows at most %d choices"):format(f.max_items)
    end
  elseif t == "unknown" then
    return ("has type `%s`, which this client cannot fill"):format(clean(f.wire_type))
  end
  return nil
end

--- What a field takes, in a few words (on the right of its label).
---@param f acp.ElicitationField
---@return string
local function hint(f)
  local t = f.type
  if t == "string" then
    ---@type table<string, string>
    local formats = { email = "email", uri = "URI", date = "date YYYY-MM-DD", ["date-time"] = "date and time" }
    local fmt = formats[f.format or ""]
    local s = fmt or "text"
    if f.min_length and f.max_length then
      s = ("%s, %d-%d chars"):format(s, f.min_length, f.max_length)
    elseif f.max_length then
      s = ("%s, up to %d chars"):format(s, f.max_length)
    elseif f.min_length then
      s = ("%s, at least %d chars"):format(s, f.min_length)
    end
    return s
  elseif t == "integer" or t == "number" then
    local s = t == "integer" and "whole number" or "number"
    if f.minimum and f.maximum then
      return ("%s, %s to %s"):format(s, num(f.minimum), num(f.maximum))
    elseif f.minimum then
      return ("%s, at least %s"):format(s, num(f.minimum))
    elseif f.maximum then
      return ("%s, at most %s"):format(s, num(f.maximum))
    end
    return s
  elseif t == "boolean" then
    return "yes or no"
  elseif t == "enum" then
    return "pick one"
  elseif t == "multi_select" then
    if f.min_items or f.max_items then
      return ("pick %s to %s"):format(f.min_items or 0, f.max_items or "any")
    end
    return "pick any"
  end
  return "type " .. clean(f.wire_type)
end

--- The choices drawn on a field's rows: enums and multi-selects have the
--- agent's, booleans yes and no.
---@param f acp.ElicitationField
---@return {value: any, title: string}[]?
local function choices_of(f)
  if f.type == "boolean" then
    return { { value = true, title = "yes" }, { value = false, title = "no" } }
  elseif f.type == "enum" or f.type == "multi_select" then
    return f.choices or {}
  end
  return nil
end

---@param v any
---@return string
local function value_text(v)
  if v == nil then
    return ""
  end
  return clean(type(v) == "number" and num(v) or tostring(v))
end

--- Turn typed text into a field's value: nil for empty text; numbers
--- parsed (text that is none is kept and named as the problem).
---@param f acp.ElicitationField
---@param text string
---@return any value, string? bad
local function parse(f, text)
  if text == "" then
    return nil
  end
  if f.type == "integer" or f.type == "number" then
    local n = tonumber(vim.trim(text))
    if not n or n ~= n or n == math.huge or n == -math.huge then
      return nil, text
    end
    if f.type == "integer" and n ~= math.floor(n) then
      return nil, text
    end
    return n
  end
  return text
end

M.clean = clean
M.num = num
M.hint = hint
M.choices_of = choices_of
M.value_text = value_text
M.parse = parse

return M
