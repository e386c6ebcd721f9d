#!/usr/bin/env python3
"""Builds the fuzz seed corpus (committed under fuzz/seeds/) from
/work/shared/seeds/*.txt (protocol docs with JSON examples) and from the
official schema (one generated instance per message shape).

    python3 fuzz/seeds/extract.py [SEEDS_DIR] [SCHEMA]

Writes seeds/messages/*.jsonl (decoder and session targets: one JSON-RPC
message per line) and seeds/codec/*.bin (the codec target's 6-byte header
then a stream of those lines).
"""
import glob
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/seeds"
SCHEMA = sys.argv[2] if len(sys.argv) > 2 else "/work/shared/acp/schema.v1.json"

# Agent -> client methods, the traffic the client decodes.
AGENT_METHODS = {
    "WriteTextFileRequest": "fs/write_text_file",
    "ReadTextFileRequest": "fs/read_text_file",
    "RequestPermissionRequest": "session/request_permission",
    "CreateTerminalRequest": "terminal/create",
    "TerminalOutputRequest": "terminal/output",
    "ReleaseTerminalRequest": "terminal/release",
    "WaitForTerminalExitRequest": "terminal/wait_for_exit",
    "KillTerminalRequest": "terminal/kill",
}


def json_objects(text):
    """Every JSON object embedded in free text."""
    dec = json.JSONDecoder()
    i = 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return
        try:
            obj, end = dec.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if isinstance(obj, dict):
            yield obj
        i = end


def as_message(obj):
    if "jsonrpc" in obj or "method" in obj:
        return obj
    if "sessionUpdate" in obj:
        return {"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": "sess-1", "update": obj}}
    return None


class Gen:
    """Schema instances: every property filled, `oneOf`/`anyOf` alternatives
    chosen by `pick`, so calls with different picks cover the variants."""

    def __init__(self, schema):
        self.defs = schema["$defs"]

    def ref(self, s):
        return self.defs[s["$ref"].split("/")[-1]]

    def value(self, s, pick, depth=0):
        if depth > 8:
            return None
        if "$ref" in s:
            return self.value(self.ref(s), pick, depth + 1)
        if "const" in s:
            return s["const"]
        if "enum" in s:
            return s["enum"][pick % len(s["enum"])]
        for key in ("oneOf", "anyOf"):
            if key in s:
                alts = [a for a in s[key] if a.get("type") != "null"] or s[key]
                base = {k: v for k, v in s.items() if k != key}
                alt = self.value(alts[pick % len(alts)], pick // len(alts), depth + 1)
                if isinstance(alt, dict) and (base.get("properties") or base.get("allOf")):
                    merged = self.value(base, pick, depth + 1) or {}
                    merged.update(alt)
                    return merged
                return alt
        if "allOf" in s:
            out = {}
            for part in s["allOf"]:
                v = self.value(part, pick, depth + 1)
                if isinstance(v, dict):
                    out.update(v)
            for k, p in s.get("properties", {}).items():
                out[k] = self.value(p, pick, depth + 1)
            return out
        t = s.get("type")
        if isinstance(t, list):
            t = next((x for x in t if x != "null"), "null")
        if t == "object" or "properties" in s:
            return {k: self.value(p, pick, depth + 1)
                    for k, p in s.get("properties", {}).items()}
        if t == "array":
            return [self.value(s.get("items", {}), pick + i, depth + 1) for i in range(2)]
        if t == "string":
            return "/tmp/ws/a.txt" if "path" in s.get("description", "").lower() else "text-%d" % pick
        if t == "integer":
            return pick + 1
        if t == "number":
            return 1.5
        if t == "boolean":
            return pick % 2 == 0
        if t == "null":
            return None
        return {}


def schema_messages(schema):
    gen = Gen(schema)
    out = []
    updates = gen.defs["SessionUpdate"]["oneOf"]
    for variant in updates:
        for pick in range(3):
            update = gen.value(variant, pick)
            out.append({"jsonrpc": "2.0", "method": "session/update",
                        "params": {"sessionId": "sess-1", "update": update}})
    for name, method in AGENT_METHODS.items():
        for pick in range(2):
            params = gen.value(gen.defs[name], pick)
            out.append({"jsonrpc": "2.0", "id": pick, "method": method, "params": params})
    return out


def main():
    messages = []
    for path in sorted(glob.glob(os.path.join(SEEDS, "*.txt"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            for obj in json_objects(f.read()):
                msg = as_message(obj)
                if msg is not None:
                    messages.append(msg)
    with open(SCHEMA, encoding="utf-8") as f:
        messages += schema_messages(json.load(f))

    seen = set()
    unique = []
    for m in messages:
        line = json.dumps(m, separators=(",", ":"), sort_keys=True)
        if line not in seen:
            seen.add(line)
            unique.append(line)

    for sub in ("messages", "codec"):
        d = os.path.join(HERE, sub)
        os.makedirs(d, exist_ok=True)
        for old in glob.glob(os.path.join(d, "*")):
            os.remove(old)

    def write(sub, name, data):
        with open(os.path.join(HERE, sub, name), "wb") as f:
            f.write(data)

    for line in unique:
        digest = hashlib.sha1(line.encode()).hexdigest()[:12]
        write("messages", digest + ".jsonl", line.encode() + b"\n")
    # Whole conversations: every message in order, so the session target
    # starts from tool calls followed by their updates.
    stream = ("\n".join(unique) + "\n").encode()
    write("messages", "all.jsonl", stream)
    # Codec seeds: limit 200, plain and interrupted reads, varied sizes.
    write("codec", "plain.bin", bytes([200, 0, 7, 1, 64, 255]) + stream[:4096])
    write("codec", "interrupted.bin", bytes([64, 1, 3, 3, 3, 3]) + stream[:2048])
    write("codec", "crlf.bin", bytes([16, 0, 2, 5, 1, 9]) + b"ab\r\ncd\n\r\n\rx\r" + b"y" * 40)
    print(f"{len(unique)} messages", file=sys.stderr)


if __name__ == "__main__":
    main()
