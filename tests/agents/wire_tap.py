#!/usr/bin/env python3
"""Run an ACP agent and record every line of its stdio in both directions.

    wire_tap.py LOG.jsonl -- AGENT [ARGS...]

tests/agents/ puts this between acp.nvim and a published agent so that what
the agent really sent (methods, fields, capabilities, its answers to ours)
is kept for the report (tests/agents/report.py), without changing what
either side sees: lines are passed on unchanged and at once, stderr is the
agent's own (inherited), and the tap exits with the agent's exit code. Each
log line is {"dir": "to_agent"|"from_agent", "t": seconds, "msg": parsed
JSON or {"_raw": text}}. The agent runs in the tap's process group, so the
client's kill of the group reaches it.
"""

import json
import subprocess
import sys
import threading
import time


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.stderr.write("usage: wire_tap.py LOG.jsonl -- AGENT [ARGS...]\n")
        return 2
    log = open(sys.argv[1], "a", encoding="utf-8")
    lock = threading.Lock()
    start = time.monotonic()

    def record(direction, line):
        text = line.decode("utf-8", "replace").rstrip("\n")
        try:
            msg = json.loads(text)
        except ValueError:
            msg = {"_raw": text}
        with lock:
            log.write(json.dumps({"dir": direction, "t": round(time.monotonic() - start, 3), "msg": msg}) + "\n")
            log.flush()

    child = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def to_agent():
        try:
            for line in iter(sys.stdin.buffer.readline, b""):
                record("to_agent", line)
                child.stdin.write(line)
                child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        finally:
            try:
                child.stdin.close()
            except OSError:
                pass

    threading.Thread(target=to_agent, daemon=True).start()
    out = sys.stdout.buffer
    try:
        for line in iter(child.stdout.readline, b""):
            record("from_agent", line)
            out.write(line)
            out.flush()
    except (BrokenPipeError, OSError):
        pass
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
