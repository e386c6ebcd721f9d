#!/usr/bin/env python3
"""A scripted loopback mock of the model APIs published agents call.

Published agents talk to their model over HTTP: the Claude adapters
(claude-agent-acp, claude-code-acp) run the Claude Code CLI, which speaks
the Anthropic Messages API; codex-acp speaks the OpenAI Responses API.
Pointing an agent at this server (ANTHROPIC_BASE_URL=http://127.0.0.1:PORT,
or a Codex model provider with base_url http://127.0.0.1:PORT/v1) lets
tests/agents/ drive the real, published agent through acp.nvim with model
replies we choose, and without the internet.

Usage:
    model_mock.py --script SCRIPT.json --port-file FILE --log FILE [--port N] [--var NAME=VALUE]
                  [--exit-with-stdin]

The server binds 127.0.0.1 (port 0 = any free one, the default), writes the
port it got to --port-file once it listens, and appends one JSON line per
request to --log: method, path, the headers that matter, the decoded body,
"kind" (what the mock took the request for: messages, responses, side,
count_tokens, unknown) and, for model calls, "reply" (which script entry
answered) and "answer". Unknown endpoints are answered 404 and logged with
kind "unknown", so anything an agent starts calling is visible.

Endpoints:
- POST /v1/messages (Anthropic): streaming (SSE message_start,
  content_block_start/delta/stop, message_delta, message_stop, with a ping,
  as the real API sends them) and non-streaming;
- POST /v1/messages/count_tokens (Anthropic): a rough count;
- POST /v1/responses (OpenAI): streaming (SSE response.created,
  response.output_item.added/done, response.output_text.delta,
  response.completed) and non-streaming.

The script:

    {
      "turns": [
        {"match": "first question",
         "responses": [
           {"text": "An answer."},
           {"tool_use": [{"name": "Read", "input": {"file_path": "{{DIR}}/hello.txt"}}]},
           {"text": "Done."}
         ]},
        ...
      ],
      "side_text": "ok"
    }

A turn is one user prompt. Its responses are consumed in order as the agent
calls the model within that turn: the first answers the prompt, the next
one the request that carries the first response's tool results, and so on.
The mock finds its place from the request itself, not from a counter, so a
retry or an extra request cannot shift the script: the turn is the first
whose "match" occurs in the text of the latest user prompt (a user message
that carries no tool result), else the turn numbered by how many prompts
the conversation holds (agents add context messages of their own: prefer
"match"); the response is numbered by how many model replies follow that
prompt in the conversation. A response past the end of its turn's list is
logged as "script_exhausted" and answered with a text that says so.

Tool uses become Anthropic `tool_use` blocks or OpenAI `function_call`
items, with ids `toolu_mock_T_R_N` / `call_mock_T_R_N` (turn, response,
position). A tool name the agent does not offer is looked up as
`mcp__acp__NAME` (claude-code-acp routes its file tools through its own MCP
server). `{{NAME}}` in tool input strings is replaced by --var NAME=VALUE.

Anthropic requests that offer no tools are the CLI's side queries (session
titles, topic checks): they get "side_text" and do not consume the script.

Standard library only.
"""

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Headers worth keeping in the log: which client, which API features.
LOGGED_HEADERS = ("user-agent", "anthropic-version", "anthropic-beta", "x-app", "content-type", "openai-beta")


class Script:
    """The scripted replies and where a request is in them."""

    def __init__(self, script, variables):
        self.script = script
        self.variables = variables

    def substitute(self, value):
        if isinstance(value, str):
            for k, v in self.variables.items():
                value = value.replace("{{" + k + "}}", v)
            return value
        if isinstance(value, list):
            return [self.substitute(v) for v in value]
        if isinstance(value, dict):
            return {k: self.substitute(v) for k, v in value.items()}
        return value

    def reply(self, prompts, last_prompt_text, replies_since):
        """(response dict or None, turn, index, what answered).

        prompts: how many user prompts the conversation holds;
        last_prompt_text: the text of the latest;
        replies_since: model replies after it."""
        turns = self.script.get("turns") or []
        turn = None
        for i, t in enumerate(turns):
            if t.get("match") and t["match"] in last_prompt_text:
                turn = i
                break
        if turn is None:
            turn = max(0, prompts - 1)
        responses = turns[turn].get("responses", []) if turn < len(turns) else []
        if replies_since >= len(responses):
            return None, turn, replies_since, "script_exhausted"
        return self.substitute(responses[replies_since]), turn, replies_since, "turn %d response %d" % (turn, replies_since)

    def exhausted_text(self, turn, index, prompt):
        return "mock script exhausted at turn %d response %d (prompt %r)" % (turn, index, prompt[:80])


def tool_name(name, offered):
    """The script's tool name as this agent offers it. claude-code-acp routes
    file tools through its own MCP server when the client can read and write
    files (`mcp__acp__Read`, ...), claude-agent-acp offers the built-in `Read`:
    one script serves both."""
    if name in offered or ("mcp__acp__" + name) not in offered:
        return name
    return "mcp__acp__" + name


# --- Anthropic Messages -----------------------------------------------------


def anthropic_has_tool_result(message):
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def anthropic_text(message):
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def anthropic_answer(script, body):
    """(content blocks, stop reason, what answered)."""
    if not body.get("tools"):
        return [{"type": "text", "text": script.script.get("side_text", "ok")}], "end_turn", "side"
    messages = body.get("messages") or []
    prompts = [i for i, m in enumerate(messages) if m.get("role") == "user" and not anthropic_has_tool_result(m)]
    last = prompts[-1] if prompts else -1
    text = anthropic_text(messages[last]) if prompts else ""
    replies = sum(1 for m in messages[last + 1 :] if m.get("role") == "assistant")
    r, turn, index, what = script.reply(len(prompts), text, replies)
    if r is None:
        return [{"type": "text", "text": script.exhausted_text(turn, index, text)}], "end_turn", what
    offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    blocks = []
    if r.get("text"):
        blocks.append({"type": "text", "text": r["text"]})
    for n, tu in enumerate(r.get("tool_use") or []):
        blocks.append(
            {
                "type": "tool_use",
                "id": "toolu_mock_%d_%d_%d" % (turn, index, n),
                "name": tool_name(tu["name"], offered),
                "input": tu.get("input") or {},
            }
        )
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return blocks, stop, what


# --- OpenAI Responses -------------------------------------------------------

OPENAI_OUTPUT_ITEMS = ("message", "function_call", "custom_tool_call", "local_shell_call", "reasoning")


def openai_text(item):
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def openai_answer(script, body):
    """(output items, what answered)."""
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    prompts = [i for i, it in enumerate(items) if it.get("type", "message") == "message" and it.get("role") == "user"]
    last = prompts[-1] if prompts else -1
    text = openai_text(items[last]) if prompts else ""
    # A reply is a run of output items (its reasoning, text and calls); the
    # tool outputs the agent sends back separate one reply from the next.
    replies, in_reply = 0, False
    for it in items[last + 1 :]:
        is_output = it.get("type", "message") in OPENAI_OUTPUT_ITEMS and it.get("role", "assistant") == "assistant"
        if is_output and not in_reply:
            replies += 1
        in_reply = is_output
    r, turn, index, what = script.reply(len(prompts), text, replies)
    if r is None:
        r = {"text": script.exhausted_text(turn, index, text)}
    out = []
    if r.get("text"):
        out.append(
            {
                "type": "message",
                "id": "msg_mock_%d_%d" % (turn, index),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": r["text"], "annotations": []}],
            }
        )
    offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    for n, tu in enumerate(r.get("tool_use") or []):
        out.append(
            {
                "type": "function_call",
                "id": "fc_mock_%d_%d_%d" % (turn, index, n),
                "call_id": "call_mock_%d_%d_%d" % (turn, index, n),
                "name": tool_name(tu["name"], offered),
                "arguments": json.dumps(tu.get("input") or {}),
                "status": "completed",
            }
        )
    return out, what


def rough_tokens(value):
    return max(1, len(json.dumps(value)) // 4)


def make_handler(script, log):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # the JSON log is the record; keep stderr quiet
            pass

        def read_body(self):
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw) if raw else None
            except ValueError:
                return {"_unparsed": raw.decode("utf-8", "replace")}

        def entry(self, body, kind, **extra):
            headers = {h: self.headers[h] for h in LOGGED_HEADERS if self.headers.get(h)}
            e = {"method": self.command, "path": self.path, "headers": headers, "kind": kind, "body": body}
            e.update(extra)
            return log(e)

        def send_json(self, status, obj):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def not_found(self, body):
            self.entry(body, "unknown")
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock: no " + self.path}})

        def do_GET(self):
            self.not_found(None)

        def do_HEAD(self):
            self.entry(None, "unknown")
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self):
            body = self.read_body()
            path = self.path.split("?", 1)[0]
            if not isinstance(body, dict):
                return self.not_found(body)
            if path.endswith("/v1/messages/count_tokens"):
                self.entry(body, "count_tokens")
                return self.send_json(200, {"input_tokens": rough_tokens(body)})
            if path.endswith("/v1/messages"):
                return self.anthropic(body)
            if path.endswith("/responses"):
                return self.openai(body)
            return self.not_found(body)

        # Server-sent events in chunked transfer: the real APIs stream
        # without a length.
        def start_stream(self):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()

        def event(self, name, data):
            chunk = ("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()

        def end_stream(self):
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def anthropic(self, body):
            blocks, stop, what = anthropic_answer(script, body)
            seq = self.entry(body, "side" if what == "side" else "messages", reply=what, answer=blocks)
            model = body.get("model") or "claude-mock"
            usage_in = rough_tokens(body.get("messages"))
            message = {
                "id": "msg_mock_%d" % seq,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": blocks,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": usage_in, "output_tokens": 10},
            }
            if not body.get("stream"):
                return self.send_json(200, message)
            self.start_stream()
            start = dict(message, content=[], stop_reason=None, usage={"input_tokens": usage_in, "output_tokens": 1})
            self.event("message_start", {"type": "message_start", "message": start})
            self.event("ping", {"type": "ping"})
            for i, b in enumerate(blocks):
                if b["type"] == "text":
                    first, kind, key, whole = {"type": "text", "text": ""}, "text_delta", "text", b["text"]
                else:
                    first = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                    kind, key, whole = "input_json_delta", "partial_json", json.dumps(b["input"])
                self.event("content_block_start", {"type": "content_block_start", "index": i, "content_block": first})
                # A few deltas, as the real API splits its output.
                step = max(1, len(whole) // 3)
                for k in range(0, len(whole), step):
                    delta = {"type": kind, key: whole[k : k + step]}
                    self.event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
                self.event("content_block_stop", {"type": "content_block_stop", "index": i})
            self.event(
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 10}},
            )
            self.event("message_stop", {"type": "message_stop"})
            self.end_stream()

        def openai(self, body):
            output, what = openai_answer(script, body)
            seq = self.entry(body, "responses", reply=what, answer=output)
            usage_in = rough_tokens(body.get("input"))
            response = {
                "id": "resp_mock_%d" % seq,
                "object": "response",
                "status": "completed",
                "model": body.get("model") or "mock",
                "output": output,
                "usage": {
                    "input_tokens": usage_in,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 10,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": usage_in + 10,
                },
            }
            if not body.get("stream"):
                return self.send_json(200, response)
            self.start_stream()
            pending = dict(response, status="in_progress", output=[], usage=None)
            self.event("response.created", {"type": "response.created", "response": pending})
            for i, item in enumerate(output):
                if item["type"] == "message":
                    self.event(
                        "response.output_item.added",
                        {"type": "response.output_item.added", "output_index": i, "item": dict(item, status="in_progress", content=[])},
                    )
                    text = item["content"][0]["text"]
                    step = max(1, len(text) // 3)
                    for k in range(0, len(text), step):
                        self.event(
                            "response.output_text.delta",
                            {
                                "type": "response.output_text.delta",
                                "item_id": item["id"],
                                "output_index": i,
                                "content_index": 0,
                                "delta": text[k : k + step],
                            },
                        )
                else:
                    self.event("response.output_item.added", {"type": "response.output_item.added", "output_index": i, "item": item})
                self.event("response.output_item.done", {"type": "response.output_item.done", "output_index": i, "item": item})
            self.event("response.completed", {"type": "response.completed", "response": response})
            self.end_stream()

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--script", required=True, help="JSON script of model replies")
    ap.add_argument("--port-file", required=True, help="where the listening port is written")
    ap.add_argument("--log", required=True, help="JSON-lines log of every request")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--var", action="append", default=[], help="NAME=VALUE for {{NAME}} in tool inputs")
    ap.add_argument(
        "--exit-with-stdin",
        action="store_true",
        help="stop when stdin reaches its end: a parent that holds the pipe takes the mock with it however it exits",
    )
    args = ap.parse_args()
    with open(args.script, encoding="utf-8") as f:
        script = Script(json.load(f), dict(v.split("=", 1) for v in args.var))
    lock = threading.Lock()
    counter = [0]

    def log(entry):
        with lock:
            counter[0] += 1
            entry["seq"] = counter[0]
            with open(args.log, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")
            return counter[0]

    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(script, log))
    server.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)  # whole or absent: the reader polls for it
    if args.exit_with_stdin:

        def watch_stdin():
            while sys.stdin.buffer.read(4096):
                pass
            server.shutdown()

        threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
