-- The published claude-code-acp (tests/agents/agents.json) through acp.nvim against the
-- mock model API: tests/agents/scenarios.lua. Run by tests/agents/run.sh.
dofile(vim.fn.getcwd() .. "/tests/agents/scenarios.lua")("claude-code-acp")
