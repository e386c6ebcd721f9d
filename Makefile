# acp.nvim: the two set-up commands are `make demo` and `make test`.
CARGO ?= cargo
# Tests run the debug build; the demo and lazy.nvim use the release build.
export CARGO_TERM_COLOR ?= never

.PHONY: all build release lint fmt unit e2e tui hostile test agents datasafety demo chat-demo clean bench bench-smoke

all: build

build:
	$(CARGO) build --workspace --bins

release:
	$(CARGO) build --release --workspace --bins

# Lua is formatted by StyLua (.stylua.toml; pinned, installed from npm into
# .cache/stylua by scripts/find-stylua.sh); `make fmt` formats both languages.
# Its LuaCATS annotations are type-checked by emmylua_check (.emmyrc.lua; built
# from crates.io into .cache/emmylua by scripts/find-luacheck.sh, once: minutes);
# any finding fails.
# Module layering: no import cycle between the modules of any folder of the
# three crates; the client core builds without the registry installer; no
# require cycle between the plugin's Lua modules (a require inside a function
# counts); no .rs or .lua file over 800 lines; every path doc/architecture.md
# names exists.
lint:
	$(CARGO) fmt --all -- --check
	"$$(scripts/find-stylua.sh)" --check $$(git ls-files '*.lua')
	scripts/lua-typecheck.sh
	python3 scripts/lua-requires.py lua/acp
	python3 scripts/doc-paths.py doc/architecture.md
	python3 scripts/file-sizes.py
	python3 scripts/module-layers.py crates/acp-client/src crates/acp-nvim/src crates/acp-testkit/src
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) check -p acp-client --no-default-features

fmt:
	$(CARGO) fmt --all
	"$$(scripts/find-stylua.sh)" $$(git ls-files '*.lua')

# --all-targets also runs each benchmark once at a tiny size (criterion's test
# mode), nothing timed; doc tests need their own run.
unit:
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

e2e: build
	@if [ -x tests/e2e/run.sh ]; then ACP_NVIM="$$(scripts/find-nvim.sh)" tests/e2e/run.sh; \
	else echo "e2e: no Neovim end-to-end suite in this checkout yet"; fi

# Neovim in tmux, typed into like a user (tests/tui; needs tmux).
tui: build
	ACP_NVIM="$$(scripts/find-nvim.sh)" tests/tui/run.sh

# Crafted hostile agents against the chat example and the plugin (issue 25;
# needs python3); under two minutes.
hostile: build
	ACP_NVIM="$$(scripts/find-nvim.sh)" tests/hostile/run.sh

test: lint unit e2e tui hostile

# acp.nvim against published agents (tests/agents/agents.json, installed
# from npm into .cache/agents) whose model API is a scripted loopback mock.
# Not part of `test`: it downloads the agents. `make agents AGENTS=claude-code-acp`
# runs one. Skips with the reason when npm or its registry is unreachable.
agents:
	ACP_NVIM="$$(scripts/find-nvim.sh)" tests/agents/run.sh $(AGENTS)

# The data-safety property test at scale, from a random seed (printed; a
# failure names the case to replay): `make datasafety CASES=1000`. The run's
# time limit grows with it (about 0.05 s a step on a quiet machine; 0.22 s
# with seven other runs on two cores, where 0.2 s a step killed a passing run
# of 1,000 cases at case 992: 0.5 s a step).
CASES ?= 1000
STEPS ?= 10
SEED ?= random
datasafety: build
	ACP_TEST_FILE_TIMEOUT="$$(( $(CASES) * $(STEPS) * 500 + 180000 ))" \
	ACP_DATASAFETY_SEED="$(SEED)" ACP_DATASAFETY_CASES="$(CASES)" ACP_DATASAFETY_STEPS="$(STEPS)" \
		ACP_NVIM="$$(scripts/find-nvim.sh)" tests/e2e/run.sh test_e2e_datasafety

# The terminal chat example against the bundled demo agent.
chat-demo:
	$(CARGO) build --release -p acp-testkit --bin acp-fake-agent
	$(CARGO) run --release -p acp-client --example chat -- --cwd "$(CURDIR)" -- target/release/acp-fake-agent

# Neovim with the plugin from this checkout, talking to the bundled demo agent.
demo:
	$(CARGO) build --release -p acp-nvim -p acp-testkit --bins
	"$$(scripts/find-nvim.sh)" --clean -u scripts/demo.lua

# Every benchmark at full size; writes doc/benchmarks.md (heavy: minutes).
# Streaming is also measured in a real TUI (tmux) against the cheapest client;
# the run ends with one PASS/FAIL line per budget. COMPARE=1 adds
# CodeCompanion.nvim and agentic.nvim, from COMPARE_DIR (and PLENARY_DIR) and
# AGENTIC_DIR or throwaway clones in .cache/compare.
bench:
	CARGO="$(CARGO)" COMPARE="$(COMPARE)" COMPARE_DIR="$(COMPARE_DIR)" PLENARY_DIR="$(PLENARY_DIR)" \
		AGENTIC_DIR="$(AGENTIC_DIR)" TUI_RUNS="$(TUI_RUNS)" \
		ACP_NVIM="$$(scripts/find-nvim.sh)" bench/run.sh

# Each benchmark once at a tiny size, nothing timed: checks the benches still work.
bench-smoke:
	CARGO="$(CARGO)" ACP_NVIM="$$(scripts/find-nvim.sh)" bench/run.sh --smoke

clean:
	$(CARGO) clean
	rm -rf .cache
