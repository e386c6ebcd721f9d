#!/usr/bin/env python3
"""The require graph of the plugin's Lua modules; fails on a cycle.

Usage: scripts/lua-requires.py [lua/acp] [--dot]

Every `require("acp...")` counts, at the top of a file or inside a function
alike (a require inside a function is still a dependency: it only runs
later), and so do `pcall(require, "acp...")`, `package.loaded["acp..."]`
(a module read only when loaded still knows the other) and any other string
that is exactly the name of a module (a list of modules loaded in a loop, a
lazy-require helper): better a dependency too many than one missed. A cycle is printed as
the modules on it, with one loop through them, and the script exits 1.
`--dot` prints the graph in Graphviz form instead.
"""

import re
import sys
from pathlib import Path

REQUIRE = re.compile(
    r"""(?:require\s*\(?\s*|pcall\(\s*require\s*,\s*|package\.loaded\[\s*)["'](acp(?:\.[A-Za-z_][A-Za-z0-9_]*)*)["']"""
)


NAMED = re.compile(r"""["'](acp(?:\.[A-Za-z_][A-Za-z0-9_]*)+)["']""")


def module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "init":
        parts.pop()
    return ".".join(parts)


def strip_comments(text: str) -> str:
    # Lua comments: `--[[ ... ]]` blocks and `-- ...` to the end of the line;
    # a require named in a comment is no dependency.
    text = re.sub(r"--\[(=*)\[.*?\]\1\]", "", text, flags=re.S)
    return re.sub(r"--[^\n]*", "", text)


def graph(root: Path) -> dict[str, set[str]]:
    files = {module_name(root, p): p for p in sorted(root.rglob("*.lua"))}
    edges: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        code = strip_comments(path.read_text())
        for target in REQUIRE.findall(code):
            if target == mod:
                continue
            if target not in files:
                sys.exit(f"{path}: requires {target}, which is no module under {root}")
            edges[mod].add(target)
        for target in NAMED.findall(code):
            if target != mod and target in files:
                edges[mod].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan),
    each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def loop_in(edges: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One concrete loop inside a component: a path back to its first module."""
    members = set(comp)
    start = comp[0]
    # breadth-first from start's successors back to start, inside the component
    prev: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w not in seen:
                    seen.add(w)
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def main() -> int:
    argv = sys.argv[1:]
    args = [a for a in argv if not a.startswith("--")]
    root = Path(args[0] if args else "lua/acp")
    edges = graph(root)
    if "--dot" in sys.argv:
        print("digraph acp {")
        for v in sorted(edges):
            for w in sorted(edges[v]):
                print(f'  "{v}" -> "{w}";')
        print("}")
        return 0
    found = cycles(edges)
    for comp in found:
        print(
            f"require cycle among {len(comp)} modules: {', '.join(comp)}\n"
            f"  for example: {' -> '.join(loop_in(edges, comp))}",
            file=sys.stderr,
        )
    if found:
        return 1
    print(f"lua-requires: {len(edges)} modules, no require cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
