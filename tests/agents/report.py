#!/usr/bin/env python3
"""What a published agent did during tests/agents/run.sh, from its logs.

    report.py AGENT LOG_DIR

LOG_DIR holds wire.jsonl (tests/agents/wire_tap.py: every ACP line both
ways), model-requests.jsonl (tests/agents/model_mock.py: every HTTP
request to the model API) and acp.log (the backend's log, debug level).
Prints the agent's identity and capabilities, the methods it called and
the session/update kinds it sent (extension methods, i.e. names starting
with `_`, and anything acp.nvim ignored or kept as unknown called out),
odd but legal habits (a tool call announced twice, empty message chunks),
errors either side answered, the model API endpoints it used (unknown ones
called out) and the backend's warnings. Informational: exits 1 only when
the logs are missing (the run did not get as far as starting the agent).
"""

import collections
import json
import os
import re
import sys


def jsonl(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def keys(obj):
    return ", ".join(sorted(obj)) if isinstance(obj, dict) else "-"


def counted(counter):
    return ", ".join("%s x%d" % (k, n) for k, n in sorted(counter.items())) or "none"


def meta_keys(value, found, where):
    """Collect the keys of every `_meta` object inside `value`."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "_meta" and isinstance(v, dict):
                for mk in v:
                    found[mk].add(where)
            else:
                meta_keys(v, found, where)
    elif isinstance(value, list):
        for v in value:
            meta_keys(v, found, where)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: report.py AGENT LOG_DIR\n")
        return 2
    agent, logs = sys.argv[1], sys.argv[2]
    wire = jsonl(os.path.join(logs, "wire.jsonl"))
    model = jsonl(os.path.join(logs, "model-requests.jsonl"))
    print("== %s: what the agent did (logs: %s)" % (agent, logs))
    if not wire:
        if os.environ.get("ACP_AGENTS_TAP") == "0":
            print("  no wire log: ACP_AGENTS_TAP=0 ran the agent without tests/agents/wire_tap.py")
        else:
            print("  no wire log: the agent never started (see the test output above)")
            return 1

    # Requests by id per direction, to pair answers with what they answer.
    # Ids restart with each agent process: key them by the process (each
    # `initialize` from us starts one).
    process = 0
    sent = {}  # (process, dir, id) -> method
    from_agent_requests = collections.Counter()
    from_agent_notifications = collections.Counter()
    to_agent_requests = collections.Counter()
    update_kinds = collections.Counter()
    errors = []
    announced = collections.Counter()  # (process, toolCallId) -> `tool_call` count
    empty_chunks = 0
    metas = collections.defaultdict(set)
    init_result = None
    new_results = []
    for e in wire:
        m, d = e["msg"], e["dir"]
        if "_raw" in m:
            errors.append("%s sent a line that is not JSON: %r" % ("agent" if d == "from_agent" else "client", m["_raw"][:120]))
            continue
        method = m.get("method")
        if d == "to_agent" and method == "initialize":
            process += 1
        if method is not None:
            if "id" in m:
                sent[(process, d, m["id"])] = method
                (from_agent_requests if d == "from_agent" else to_agent_requests)[method] += 1
            elif d == "from_agent":
                from_agent_notifications[method] += 1
            if d == "from_agent" and method != "session/update":
                meta_keys(m.get("params"), metas, method)
            if method == "session/update" and d == "from_agent":
                u = (m.get("params") or {}).get("update") or {}
                kind = u.get("sessionUpdate", "?")
                update_kinds[kind] += 1
                meta_keys(u, metas, "session/update " + kind)
                if kind == "tool_call":
                    announced[(process, u.get("toolCallId"))] += 1
                if kind == "agent_message_chunk" and (u.get("content") or {}).get("text") == "":
                    empty_chunks += 1
            continue
        # An answer: to the other direction's request.
        asked = sent.get((process, "to_agent" if d == "from_agent" else "from_agent", m.get("id")), "?")
        if "error" in m:
            who = "agent" if d == "from_agent" else "acp.nvim"
            err = m["error"] or {}
            errors.append("%s answered %s with error %s: %s" % (who, asked, err.get("code"), err.get("message")))
        elif d == "from_agent" and asked == "initialize":
            init_result = m.get("result")
        elif d == "from_agent" and asked == "session/new":
            new_results.append(m.get("result") or {})
        if d == "from_agent":
            meta_keys(m.get("result"), metas, asked + " result")

    if init_result:
        info = init_result.get("agentInfo") or {}
        print("  agent: %s %s, protocol version %s" % (info.get("name"), info.get("version"), init_result.get("protocolVersion")))
        caps = init_result.get("agentCapabilities") or {}
        print("  agentCapabilities: %s" % json.dumps(caps, sort_keys=True))
        methods = [a.get("id") for a in init_result.get("authMethods") or []]
        print("  authMethods: %s" % (", ".join(str(x) for x in methods) or "none"))
        print("  initialize result fields: %s" % keys(init_result))
    if new_results:
        print("  session/new result fields: %s" % keys(new_results[0]))
        modes = new_results[0].get("modes") or {}
        if modes:
            print("  initial mode: %s of %s" % (modes.get("currentModeId"), ", ".join(x.get("id", "?") for x in modes.get("availableModes") or [])))
    print("  agent processes started: %d" % process)
    print("  we asked: %s" % counted(to_agent_requests))
    print("  agent asked: %s" % counted(from_agent_requests))
    print("  agent notified: %s" % counted(from_agent_notifications))
    extensions = sorted(k for k in list(from_agent_requests) + list(from_agent_notifications) if k.startswith("_"))
    if extensions:
        print("  extension methods (names starting with `_`): %s" % ", ".join(extensions))
    print("  session/update kinds: %s" % counted(update_kinds))
    twice = sum(1 for n in announced.values() if n > 1)
    if twice:
        print("  tool calls announced with `tool_call` more than once (same id; the later ones update): %d of %d" % (twice, len(announced)))
    if empty_chunks:
        print("  empty agent_message_chunk texts: %d" % empty_chunks)
    if metas:
        print("  _meta keys: %s" % "; ".join("%s (on %s)" % (k, ", ".join(sorted(v))) for k, v in sorted(metas.items())))
    for line in errors:
        print("  ERROR ANSWER: %s" % line)

    kinds = collections.Counter(e.get("kind") for e in model)
    print("  model API requests: %s" % counted(kinds))
    paths = collections.Counter("%s %s" % (e.get("method"), e.get("path", "").split("?")[0]) for e in model)
    print("  model API endpoints: %s" % counted(paths))
    for e in model:
        if e.get("kind") == "unknown":
            print("  UNKNOWN ENDPOINT: %s %s" % (e.get("method"), e.get("path")))
        if e.get("reply") == "script_exhausted":
            print("  SCRIPT EXHAUSTED: the agent called the model more often than the scenario scripted (request %s)" % e.get("seq"))

    acp_log = os.path.join(logs, "acp.log")
    if os.path.exists(acp_log):
        notes = collections.Counter()
        pattern = re.compile(r"^\S+\s+(WARN|ERROR)\s+(.*)$|^\S+\s+DEBUG\s+\S+: (ignoring notification .*|keeping .*|agent request .* failed.*|ignoring .*)$")
        with open(acp_log, encoding="utf-8", errors="replace") as f:
            for line in f:
                mt = pattern.match(line.rstrip("\n"))
                if mt:
                    text = mt.group(2) or mt.group(3)
                    notes[(mt.group(1) or "NOTE") + " " + text[:200]] += 1
        if notes:
            for k, n in sorted(notes.items()):
                print("  backend %s (x%d)" % (k, n))
        else:
            print("  backend: no warnings, nothing ignored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
