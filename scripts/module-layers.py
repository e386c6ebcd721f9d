#!/usr/bin/env python3
"""Layers of a crate's modules, from the paths each one names.

Prints the top-level modules in layers, bottom first, and checks every
folder of modules the same way: a cycle between two modules of one parent
(`permission/memory` naming `super::store` while `store` names
`super::memory`) fails like a cycle between top-level ones. Paths counted:
`crate::a::b`, `super::a` and `use crate::{a, b}` / `use super::{a, b}`;
comments, `#[cfg(test)] mod tests` blocks and test files are left out.
Exits 1 on any cycle, naming it.

    scripts/module-layers.py crates/acp-client/src [crates/acp-nvim/src ...]
"""
import os
import re
import sys


def module_path(rel):
    """`permission/memory.rs` -> ('permission', 'memory'); `lib.rs` -> ()."""
    parts = rel.removesuffix(".rs").split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def source_of(path):
    text = re.sub(r"//[^\n]*", "", open(path, encoding="utf-8").read())
    return re.split(r"\n#\[cfg\(test\)\]\s*\n(?:#\[[^\n]*\]\s*\n)*mod tests \{", text)[0]


def named_paths(mod, text):
    """Every module path (a tuple from the crate root) the text names."""
    found = []
    for head, tail in re.findall(r"\b(crate|super)::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", text):
        found.append((head, tail.split("::")))
    for head, group in re.findall(r"\buse (crate|super)::\{([^}]*)\}", text):
        for name in re.findall(r"(?:^|,)\s*([a-z_][a-z0-9_]*)", group):
            found.append((head, [name]))
    out = []
    for head, tail in found:
        base = () if head == "crate" else mod[:-1]
        out.append(base + tuple(tail))
    return out


def read_crate(root):
    mods = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if rel.endswith("tests.rs") or "/tests/" in rel or rel.startswith("tests/"):
                continue
            mod = module_path(rel)
            if mod:
                mods[mod] = named_paths(mod, source_of(path))
    return mods


def edges(mods):
    """Edges between siblings: parent -> {child: {sibling it names}}."""
    known = set(mods)
    graph = {}
    for mod, paths in mods.items():
        for parent_len in range(len(mod)):
            parent, child = mod[:parent_len], mod[parent_len]
            graph.setdefault(parent, {}).setdefault(child, set())
        for target in paths:
            k = 0
            while k < min(len(mod), len(target)) and mod[k] == target[k]:
                k += 1
            if k >= len(mod) or k >= len(target):
                continue  # a module naming its own ancestor or descendant
            sibling = target[: k + 1]
            if sibling in known:
                graph.setdefault(mod[:k], {}).setdefault(mod[k], set()).add(target[k])
    return graph


def cycles(graph):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def layers(graph):
    layer = {}

    def depth(v):
        if v not in layer:
            deps = [w for w in graph[v] if w in graph]
            layer[v] = 1 + max(map(depth, deps)) if deps else 0
        return layer[v]

    for v in graph:
        depth(v)
    return layer


def check(root):
    graph = edges(read_crate(root))
    failed = False
    for parent in sorted(graph, key=lambda p: (len(p), p)):
        for scc in cycles(graph[parent]):
            where = "::".join(parent) or "crate"
            print(f"{root}: CYCLE in {where}: {' <-> '.join(scc)}")
            failed = True
    if failed:
        return False
    top = layers(graph.get((), {}))
    print(root)
    for n in sorted(set(top.values())):
        print(n, " ".join(sorted(m for m in top if top[m] == n)))
    print("no cycles")
    return True


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ok = all([check(root) for root in sys.argv[1:]])
    sys.exit(0 if ok else 1)
