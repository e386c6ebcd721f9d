#!/usr/bin/env python3
"""Every file or folder a map of the code names must exist.

Usage: scripts/doc-paths.py doc/architecture.md [...]

doc/architecture.md tells a newcomer where a change goes; a file moved or
renamed without the doc leaves them looking for something that is not
there. Checked: each `path` in backticks that has a `/` or ends in .rs or
.lua, and each .rs / .lua name inside a fenced picture. In the "where a
change goes" table, the acp-client, acp-nvim and Lua columns are relative
to `crates/acp-client/src/`, `crates/acp-nvim/src/` and `lua/acp/`;
elsewhere a path may be relative to the repository or to one of those.
ACP method names (`fs/read_text_file`, `$/cancel_request`) are not paths.
Exits 1 naming each path that is missing.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = ["", "crates/acp-client/src/", "crates/acp-nvim/src/", "lua/acp/"]
COLUMNS = {1: PARTS[1], 2: PARTS[2], 3: PARTS[3]}
METHODS = ("fs/", "session/", "terminal/", "elicitation/", "tools/call", "tools/list", "http")


def is_path(tok: str) -> bool:
    if tok.startswith("/") or tok.startswith(METHODS) or not re.fullmatch(r"[\w.\-/]+", tok):
        return False
    return "/" in tok or tok.endswith((".rs", ".lua"))


def exists(tok: str, bases: list[str]) -> bool:
    tok = tok.rstrip("/")
    names = [tok, tok + ".rs", tok + ".lua"]
    return any((ROOT / base / name).exists() for base in bases for name in names)


def missing(doc: Path) -> list[str]:
    out, in_code, in_table = [], False, False
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        in_table = line.startswith("| a change you want to make") or (in_table and line.startswith("|"))
        checks = []
        if in_table:
            for i, cell in enumerate(line.split("|")[1:-1]):
                for tok in re.findall(r"`([^`]+)`", cell):
                    root_relative = tok.startswith(("doc/", "tests/", "crates/", "lua/"))
                    checks.append((tok, [""] if root_relative else [COLUMNS.get(i, "")]))
        elif in_code:
            checks = [(t, PARTS) for t in re.findall(r"[\w./\-]+\.(?:rs|lua)\b", line)]
        else:
            checks = [(t, PARTS) for t in re.findall(r"`([^`]+)`", line)]
        for tok, bases in checks:
            tok = re.sub(r"[:,;.)]+$", "", tok)
            if is_path(tok) and not exists(tok, bases):
                out.append(f"{doc}:{n}: `{tok}` does not exist (moved? update the doc)")
    return out


if __name__ == "__main__":
    problems = [p for arg in sys.argv[1:] for p in missing(Path(arg))]
    print("\n".join(problems) or f"doc-paths: every path in {' '.join(sys.argv[1:])} exists")
    sys.exit(1 if problems else 0)
