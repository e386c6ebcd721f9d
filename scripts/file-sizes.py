#!/usr/bin/env python3
"""No tracked source file over the line limit (issue 32).

Counts the lines of every `*.rs` and `*.lua` file git tracks (`git ls-files`,
run from the repository root) and fails, naming each file over the limit
with its count, when one is longer than 800 lines. Prints nothing on success.

    scripts/file-sizes.py
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
    if len(sys.argv) != 1:
        sys.exit("usage: scripts/file-sizes.py")
    if over:
        print(f"files over {LIMIT} lines:", file=sys.stderr)
        for count, name in sorted(over, reverse=True):
            print(f"{count:6} {name}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
