#!/usr/bin/env python3
"""A loopback HTTPS server for fetch tests: real TLS (a CA made per run),
byte ranges, and fault injection by path prefix. With REQUEST_LOG=FILE in
the environment, one line per request ("GET /path") is appended to FILE, so
a test can tell that nothing was asked.

usage: tests/https-server.py ROOT CERT KEY PORTFILE [WRONG_CERT WRONG_KEY]
Writes "PORT [WRONG_PORT]" to PORTFILE once listening.

  /<path>                     the file, with Range support
  /fault/truncate-once/<path> first request: full Content-Length, half the body, close
  /fault/reset-once/<path>    first request: half the body, then a TCP reset
  /fault/stall-once/<path>    first request: half the body, then silence for 60 s
  /fault/500-once/<path>      first request: HTTP 500
  /fault/429-once/<path>      first request: HTTP 429
  /fault/flip/<path>          one byte in the middle flipped, every time
  /fault/404/<path>           HTTP 404
  /fault/redirect-http/<path> 302 to http://
  /fault/norange/<path>       ignores Range (always 200, whole body)
  /fault/truncate-norange/<path> first request truncated; Range ignored after
  /seq/<id>/<f1>,<f2>,.../<path> the Nth request of sequence <id> gets fault fN
                              (then none): ok, truncate, reset, 500, 429, 503,
                              flip, norange, extra (a byte more than the file),
                              404, redirect-http, stall (2 s of silence)
"""
import http.server
import os
import socket
import ssl
import struct
import sys
import urllib.parse
import threading
import time

ROOT = sys.argv[1]
RATE = float(os.environ.get("RATE_MBPS", "0"))  # limit each transfer like a real link
seen = set()
seqs = {}
lock = threading.Lock()


def seq_fault(sid, faults):
    """The fault of this request of sequence sid (then none)."""
    with lock:
        n = seqs.get(sid, 0)
        seqs[sid] = n + 1
    return faults[n] if n < len(faults) else "ok"


def first(key):
    with lock:
        if key in seen:
            return False
        seen.add(key)
        return True


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        if os.environ.get("REQUEST_LOG"):
            with lock, open(os.environ["REQUEST_LOG"], "a") as log:
                log.write("GET %s\n" % self.path)
        path = self.path.split("?")[0]
        mode = None
        if path.startswith("/fault/"):
            _, _, mode, rest = path.split("/", 3)
            path = "/" + rest
        elif path.startswith("/seq/"):
            _, _, sid, faults, rest = path.split("/", 4)
            path = "/" + rest
            mode = {"truncate": "truncate-once", "reset": "reset-once", "500": "500-once", "429": "429-once",
                    "503": "503-once"}.get(*[seq_fault(sid, faults.split(","))] * 2)
            if mode in ("ok", "stall"):
                if mode == "stall":
                    time.sleep(2)
                mode = None
        # apt quotes a pool file's '~' and '+' (Ubuntu's 6.8.0-48.48~22.04.1+1)
        fs = os.path.join(ROOT, urllib.parse.unquote(path).lstrip("/"))
        if mode == "404" or not os.path.isfile(fs):
            return self.simple(404)
        # a sequence's fault is its request's own; a /fault/ one the first request's
        if mode in ("500-once", "429-once", "503-once") and (self.path.startswith("/seq/") or first(self.path)):
            return self.simple(int(mode[:3]))
        if mode == "redirect-http":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:9/" + path.lstrip("/"))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = open(fs, "rb").read()
        if mode == "extra":
            data = data + b"x"
        if mode == "flip":
            b = bytearray(data)
            b[len(b) // 2] ^= 0x01
            data = bytes(b)
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and mode not in ("norange", "truncate-norange"):
            start = int(rng[6:].split("-")[0])
            if start >= len(data):
                return self.simple(416)
        body = data[start:]
        if mode in ("truncate-once", "reset-once", "stall-once", "truncate-norange") and (
                self.path.startswith("/seq/") or first(self.path)):
            self.send_response(206 if start else 200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            if mode == "stall-once":
                time.sleep(60)
            elif mode == "reset-once":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if RATE > 0:
            step = 1 << 20
            for off in range(0, len(body), step):
                t = time.time()
                self.wfile.write(body[off:off + step])
                time.sleep(max(0, step / (RATE * 1e6) - (time.time() - t)))
        else:
            self.wfile.write(memoryview(body))

    def do_HEAD(self):
        # libzypp probes a repository with HEAD (repodata/repomd.xml, then
        # content); an unanswered HEAD (501) reads "Valid metadata not found"
        fs = os.path.join(ROOT, self.path.split("?")[0].lstrip("/"))
        if not os.path.isfile(fs):
            return self.simple(404)
        self.send_response(200)
        self.send_header("Content-Length", str(os.path.getsize(fs)))
        self.end_headers()

    def simple(self, code):
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()


def serve(cert, key):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1]


ports = [serve(sys.argv[2], sys.argv[3])]
if len(sys.argv) > 6:
    ports.append(serve(sys.argv[5], sys.argv[6]))
with open(sys.argv[4] + ".tmp", "w") as f:
    f.write(" ".join(map(str, ports)) + "\n")
os.rename(sys.argv[4] + ".tmp", sys.argv[4])
while True:
    time.sleep(3600)
