-- The published claude-agent-acp offered ACP v2 (protocol_version = 2 in its
-- agent config; tests/agents/agents.json) through acp.nvim against the mock
-- model API: tests/agents/scenarios.lua. Run by tests/agents/run.sh.
dofile(vim.fn.getcwd() .. "/tests/agents/scenarios.lua")("claude-agent-acp-v2")
