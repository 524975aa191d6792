#!/usr/bin/env python3
"""A stand-in for the Docker Engine's API on 127.0.0.1:2375 (docs/envoy.md, quick start): it
answers every request 200 with what it received and prints one line per request, so that you
see which calls Envoy let through. Point Envoy at your real Docker Engine instead when it listens
on TCP. Usage: actuator.py [PORT]"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Actuator(BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        print(f"actuator received {self.command} {self.path} {body}", flush=True)
        reply = json.dumps({"actuator": "stand-in", "method": self.command, "path": self.path}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 2375
    ThreadingHTTPServer(("127.0.0.1", port), Actuator).serve_forever()
