"""A loopback HTTP server for tests/e2e/test_build.lua: serves a directory
laid out like the release downloads (<base>/v<version>/...).

    python3 -u tests/e2e/release_server.py DIR

Prints the port it listens on (127.0.0.1), then serves until its stdin
closes: the test's Neovim holds the other end, so the server never outlives
the test, however the test ends.
"""

import http.server
import sys
import threading

ROOT = sys.argv[1]


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=ROOT, **kwargs)

    def log_message(self, format, *args):  # noqa: A002 (the stdlib's name)
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.stdin.read()
server.shutdown()
