"""A stub of the node agent's HTTP API on 127.0.0.1 for the client's unit tests (test_*.py):
StubHandler answers JSON (answer()), StubAgentCase starts a ThreadingHTTPServer with a handler
class per test and stops it; server.seen records every (path, body) a handler chooses to."""

import http.server
import json
import threading
import unittest


class StubHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def body(self):
        """The request's JSON body, recorded in server.seen with its path."""
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((self.path, body))
        return body

    def answer(self, code, payload):
        raw = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class StubAgentCase(unittest.TestCase):
    """self.server (a stub agent running `handler`) and self.url, per test."""

    handler = StubHandler

    def setUp(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self.handler)
        self.server.seen = []
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
