#!/usr/bin/env python3
"""No tracked source file over the line limit (issue 32).

Counts the lines of every `*.rs` and `*.lua` file git tracks (`git ls-files`,
run from the repository root) and fails, naming each file over the limit
with its count, when one is longer than 800 lines. Prints nothing on success.

    scripts/file-sizes.py [--known scripts/file-sizes.known]

With --known, the files listed there (`<lines> <path>`, the ones not split
yet) may stay over the limit up to their listed count; a listed file that
grew past it, or that is now under the limit (take it off the list), fails,
so the list only shrinks.
"""
import subprocess
import sys

LIMIT = 800


def main():
    root = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
    ).stdout.strip()
    files = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.rs", "*.lua"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.split("\0")
    over = []
    for name in filter(None, files):
        try:
            with open(f"{root}/{name}", "rb") as f:
                count = sum(1 for _ in f)
        except FileNotFoundError:
            continue  # deleted in the work tree, not yet in the index
        if count > LIMIT:
            over.append((count, name))
    known = {}
    if len(sys.argv) == 3 and sys.argv[1] == "--known":
        with open(sys.argv[2]) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    n, name = line.split(maxsplit=1)
                    known[name] = int(n)
    elif len(sys.argv) != 1:
        sys.exit("usage: scripts/file-sizes.py [--known FILE]")
    bad = [(c, n) for c, n in over if c > known.get(n, LIMIT)]
    over_names = {n for _, n in over}
    shrunk = sorted(n for n in known if n not in over_names)
    if bad:
        print(f"files over {LIMIT} lines (or over their count in the known list):", file=sys.stderr)
        for count, name in sorted(bad, reverse=True):
            print(f"{count:6} {name}", file=sys.stderr)
    if shrunk:
        print("now under the limit or gone, take them off the known list:", file=sys.stderr)
        for name in shrunk:
            print(f"       {name}", file=sys.stderr)
    if bad or shrunk:
        sys.exit(1)


if __name__ == "__main__":
    main()
