#!/usr/bin/env python3
"""A webhook receiver for the HTTP sink's integration tests and benchmark.

It checks what cppcdc sends with its own code (Python's hmac, base64, gzip and json modules),
keeps what it accepted, and misbehaves when told to.

Usage: http_receiver.py --store DIR [--port P] [--secret whsec_... ...] [--bearer TOKEN]
                        [--tls-cert CRT --tls-key KEY [--client-ca CA]] [--discard]

  --port P         listen on 127.0.0.1:P (0, the default: a free port); the port is written
                   to DIR/port once the socket listens
  --secret S       a Standard Webhooks secret to verify (repeatable: every one must match)
  --bearer TOKEN   require "Authorization: Bearer TOKEN" (401 otherwise)
  --tls-cert/--tls-key   serve HTTPS; --client-ca also requires a client certificate
  --discard        answer 200 without parsing or keeping anything (benchmarks)

Kept: DIR/kept.jsonl holds the records of every accepted batch, one JSON text per line (JSON
lines bodies byte for byte; JSON array bodies one element per line), each webhook-id once;
DIR/ids.txt lists the ids kept. Both are flushed before the 200 is sent, and read back at
start, so a restarted receiver still drops repeats.

Control (on the same port):
  POST /control  {"status": 500, "count": 3, "retry_after": "1", "stall_ms": 0,
                  "drop": false, "body": "..."}
                 the next `count` data requests (-1: all until the next /control) are answered
                 with `status` (and `body`, and a Retry-After), after `stall_ms`, or their
                 connection is closed without an answer (`drop`). {} restores normal service.
  GET /stats     {"requests", "kept_batches", "kept_records", "duplicates", "bad_signatures",
                  "unauthorized", "truncated", "statuses": {...}}
A data request whose body ends before its Content-Length (the sender was killed while sending)
is counted in "truncated" and its connection closed without an answer: it is neither checked
nor kept, as a real receiver cannot have read a whole request from it.
Any other POST is a data request.
"""

import argparse
import base64
import gzip
import hashlib
import hmac
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_S = 300  # Standard Webhooks receivers refuse timestamps further off than this


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.keys = []
        for s in args.secret:
            text = s[len("whsec_"):] if s.startswith("whsec_") else s
            self.keys.append(base64.b64decode(text + "=" * (-len(text) % 4)))
        self.rule = None  # dict from /control
        self.left = 0
        self.stats = {"requests": 0, "kept_batches": 0, "kept_records": 0, "duplicates": 0,
                      "bad_signatures": 0, "unauthorized": 0, "truncated": 0, "statuses": {}}
        self.seen = set()
        self.kept = None
        self.ids = None
        if not args.discard:
            os.makedirs(args.store, exist_ok=True)
            ids_path = os.path.join(args.store, "ids.txt")
            if os.path.exists(ids_path):
                with open(ids_path) as f:
                    self.seen = {line.strip() for line in f if line.strip()}
            self.kept = open(os.path.join(args.store, "kept.jsonl"), "ab")
            self.ids = open(ids_path, "a")

    def next_rule(self):
        """The rule for the next data request, or None (normal service)."""
        with self.lock:
            if self.rule is None:
                return None
            rule = self.rule
            if self.left > 0:
                self.left -= 1
                if self.left == 0:
                    self.rule = None
            return rule

    def signature_ok(self, headers, body):
        if not self.keys:
            return True
        msg_id = headers.get("webhook-id", "")
        ts = headers.get("webhook-timestamp", "")
        sigs = headers.get("webhook-signature", "").split(" ")
        if not msg_id or not ts.isdigit() or abs(time.time() - int(ts)) > TOLERANCE_S:
            return False
        signed = msg_id.encode() + b"." + ts.encode() + b"." + body
        for key in self.keys:
            want = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
            if not any(hmac.compare_digest(want, s) for s in sigs):
                return False
        return True

    def keep(self, msg_id, content_type, body):
        """Stores the batch unless its id was kept before. Returns False for a repeat."""
        if content_type.startswith("application/x-ndjson"):
            lines = body if body.endswith(b"\n") or not body else body + b"\n"
            count = body.count(b"\n")
        else:
            records = json.loads(body)
            if not isinstance(records, list):
                raise ValueError("the body is not a JSON array")
            lines = b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode()
                             + b"\n" for r in records)
            count = len(records)
        with self.lock:
            if msg_id and msg_id in self.seen:
                self.stats["duplicates"] += 1
                return False
            self.kept.write(lines)
            self.kept.flush()
            if msg_id:
                self.seen.add(msg_id)
                self.ids.write(msg_id + "\n")
                self.ids.flush()
            self.stats["kept_batches"] += 1
            self.stats["kept_records"] += count
            return True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver
    state = None

    def log_message(self, fmt, *args):  # quiet
        pass

    def answer(self, status, body=b"", headers=None):
        with self.state.lock:
            s = self.state.stats["statuses"]
            s[str(status)] = s.get(str(status), 0) + 1
        try:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def read_body(self):
        length = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        if self.path == "/stats":
            with self.state.lock:
                body = json.dumps(self.state.stats).encode()
            self.answer(200, body, {"Content-Type": "application/json"})
        else:
            self.answer(404)

    def do_POST(self):
        st = self.state
        if self.path == "/control":
            rule = json.loads(self.read_body() or b"{}")
            with st.lock:
                if rule:
                    st.rule = rule
                    st.left = int(rule.get("count", -1))
                else:
                    st.rule = None
            self.answer(200, b"{}")
            return
        raw = self.read_body()
        if len(raw) < int(self.headers.get("Content-Length", "0")):
            with st.lock:
                st.stats["truncated"] += 1
            self.close_connection = True
            return
        if st.args.discard:
            self.answer(200)
            return
        with st.lock:
            st.stats["requests"] += 1
        headers = {k.lower(): v for k, v in self.headers.items()}
        rule = st.next_rule()
        if rule and rule.get("drop"):
            # No answer at all: reset the connection.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if rule and rule.get("stall_ms"):
            time.sleep(rule["stall_ms"] / 1000.0)
        if st.args.bearer and headers.get("authorization") != "Bearer " + st.args.bearer:
            with st.lock:
                st.stats["unauthorized"] += 1
            self.answer(401, b"missing or wrong bearer token")
            return
        body = gzip.decompress(raw) if headers.get("content-encoding") == "gzip" else raw
        if not st.signature_ok(headers, body):
            with st.lock:
                st.stats["bad_signatures"] += 1
            self.answer(401, b"bad webhook signature")
            return
        if rule and "status" in rule and not 200 <= int(rule["status"]) <= 299:
            extra = {"Retry-After": rule["retry_after"]} if "retry_after" in rule else None
            self.answer(int(rule["status"]), rule.get("body", "").encode(), extra)
            return
        try:
            st.keep(headers.get("webhook-id", ""), headers.get("content-type", ""), body)
        except ValueError as e:
            self.answer(400, ("cannot read the body: %s" % e).encode())
            return
        self.answer(200)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--store", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--secret", action="append", default=[])
    p.add_argument("--bearer")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--client-ca")
    p.add_argument("--discard", action="store_true")
    args = p.parse_args()
    Handler.state = State(args)
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(args.client_ca)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    os.makedirs(args.store, exist_ok=True)
    port_file = os.path.join(args.store, "port")
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
