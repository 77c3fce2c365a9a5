#!/usr/bin/python3
"""A DOUBLE of a Confluent-compatible schema registry, for cppcdc's tests (not a real registry).

No real schema registry can run on this machine: Confluent's and Karapace are not served by the
package sources here, and Apicurio 3's application needs modules Maven Central does not serve
(see docs/schema-registry.md). This process speaks the part of the Confluent REST API that
cppcdc's client uses, over HTTP on loopback, with its own code, so that the client's requests,
retries, errors and caches are exercised against a separate server:

  GET  /subjects                                      the subject names
  POST /subjects/{s}/versions                         register (same schema: same id) -> {"id"}
  POST /subjects/{s}                                  look up -> {"subject","id","version","schema"}
  GET  /schemas/ids/{id}                              -> {"schema"[, "schemaType"]}
  GET  /subjects/{s}/versions/latest                  -> {"subject","id","version","schema"}
  POST /compatibility/subjects/{s}/versions/latest    -> {"is_compatible"}

Errors as Confluent writes them: {"error_code": 40401, "message": ...} (subject not found),
40403 (schema not found), 409 (incompatible), 42201 (invalid schema), 40101 (unauthorized).
Schemas compare as parsed JSON for AVRO and JSON. PROTOBUF schemas are checked with protoc (a
.proto it refuses is 42201) and kept, as Confluent keeps them, in a form of their own: without
comments and blank lines, which is what reads by id return; they compare by that form with the
runs of white space made one.

Test controls (not part of any registry's API):
  POST /__double/fail          {"status": 503, "count": 2, "retry_after": "1"} answers the next
                               `count` requests with that status (and Retry-After), or with
                               {"drop": 2} closes the next 2 connections without an answer
  POST /__double/incompatible  {"subject": "s"} makes the subject refuse new schemas (409)
  GET  /__double/requests      every request so far as "METHOD /path", one JSON list

Usage: schema_registry_double.py --port-file FILE [--port 0] [--user U --password P]
                                 [--token T] [--no-compatibility]
The port it listens on is written to FILE once it accepts connections.
"""

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.schemas = []  # index + 1 = id: (type, text)
        self.subjects = {}  # name -> [id, ...] (versions in order)
        self.incompatible = set()
        self.fail_status = None
        self.fail_count = 0
        self.fail_retry_after = None
        self.drop_count = 0
        self.requests = []


def proto_without_comments(text):
    """A .proto text without its comments and blank lines (string literals kept as written)."""
    out = []
    i = 0
    quote = None
    while i < len(text):
        c = text[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    lines = [line.rstrip() for line in "".join(out).split("\n")]
    return "\n".join(line for line in lines if line.strip()) + "\n"


def proto_error(text):
    """protoc's complaint about a .proto text, or None when it compiles (or protoc is absent)."""
    protoc = shutil.which("protoc")
    if protoc is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "schema.proto"), "w") as f:
            f.write(text)
        run = subprocess.run([protoc, "-I", d, "--descriptor_set_out=" + os.devnull,
                              os.path.join(d, "schema.proto")], capture_output=True, text=True)
        if run.returncode == 0:
            return None
        return run.stderr.strip() or "protoc failed"


def stored_form(schema_type, text):
    return proto_without_comments(text) if schema_type == "PROTOBUF" else text


def same_schema(schema_type, a, b):
    if schema_type in ("AVRO", "JSON"):
        try:
            return json.loads(a) == json.loads(b)
        except ValueError:
            return a == b
    if schema_type == "PROTOBUF":
        def flat(t):
            return re.sub(r"\s+", " ", proto_without_comments(t)).strip()
        return flat(a) == flat(b)
    return a == b


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None
    options = None

    def log_message(self, *args):
        pass

    def answer(self, status, body, extra_headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra_headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, code, message):
        self.answer(status, {"error_code": code, "message": message})

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return None

    def authorized(self):
        o = self.options
        given = self.headers.get("Authorization") or ""
        if o.user is not None:
            want = "Basic " + base64.b64encode(f"{o.user}:{o.password}".encode()).decode()
            return given == want
        if o.token is not None:
            return given == "Bearer " + o.token
        return True

    def do_GET(self):
        self.handle_request("GET")

    def do_POST(self):
        self.handle_request("POST")

    def handle_request(self, method):
        st = self.state
        path = urllib.parse.urlsplit(self.path).path
        body = self.body() if method == "POST" else {}
        if path.startswith("/__double/"):
            return self.control(method, path, body)
        with st.lock:
            st.requests.append(f"{method} {self.path}")
            if st.drop_count > 0:
                st.drop_count -= 1
                self.close_connection = True
                self.connection.close()
                return
            if st.fail_count > 0:
                st.fail_count -= 1
                headers = [("Retry-After", st.fail_retry_after)] if st.fail_retry_after else []
                return self.answer(st.fail_status, {"error_code": st.fail_status,
                                                    "message": "failing on purpose"}, headers)
        if not self.authorized():
            return self.error(401, 40101, "Unauthorized")
        if body is None:
            return self.error(400, 400, "the body is not JSON")
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        with st.lock:
            return self.route(method, parts, body)

    def control(self, method, path, body):
        st = self.state
        with st.lock:
            if path == "/__double/fail":
                if "drop" in body:
                    st.drop_count = int(body["drop"])
                else:
                    st.fail_status = int(body.get("status", 503))
                    st.fail_count = int(body.get("count", 1))
                    st.fail_retry_after = body.get("retry_after")
                return self.answer(200, {})
            if path == "/__double/incompatible":
                st.incompatible.add(body["subject"])
                return self.answer(200, {})
            if path == "/__double/requests":
                return self.answer(200, st.requests)
        return self.error(404, 404, "no such control")

    def find(self, subject, schema_type, text):
        for version, sid in enumerate(self.state.subjects.get(subject, []), start=1):
            t, s = self.state.schemas[sid - 1]
            if t == schema_type and same_schema(t, s, text):
                return sid, version
        return None

    def route(self, method, parts, body):
        st = self.state
        schema_type = body.get("schemaType", "AVRO") if isinstance(body, dict) else "AVRO"
        text = body.get("schema") if isinstance(body, dict) else None
        if method == "GET" and parts == ["subjects"]:
            return self.answer(200, sorted(st.subjects))
        if method == "GET" and len(parts) == 3 and parts[:2] == ["schemas", "ids"]:
            sid = int(parts[2]) if parts[2].isdigit() else 0
            if not 1 <= sid <= len(st.schemas):
                return self.error(404, 40403, f"Schema {parts[2]} not found")
            t, s = st.schemas[sid - 1]
            out = {"schema": s}
            if t != "AVRO":
                out["schemaType"] = t
            return self.answer(200, out)
        if len(parts) >= 2 and parts[0] == "subjects":
            subject = parts[1]
            if method == "POST" and len(parts) == 3 and parts[2] == "versions":
                if not isinstance(text, str):
                    return self.error(422, 42201, "no schema in the request")
                if schema_type in ("AVRO", "JSON"):
                    try:
                        json.loads(text)
                    except ValueError:
                        return self.error(422, 42201, "Invalid schema")
                if schema_type == "PROTOBUF":
                    problem = proto_error(text)
                    if problem:
                        return self.error(422, 42201, "Invalid schema: " + problem)
                found = self.find(subject, schema_type, text)
                if found:
                    return self.answer(200, {"id": found[0]})
                if subject in st.incompatible:
                    return self.error(409, 409, "Schema being registered is incompatible")
                for sid, (t, s) in enumerate(st.schemas, start=1):
                    if t == schema_type and same_schema(t, s, text):
                        break
                else:
                    st.schemas.append((schema_type, stored_form(schema_type, text)))
                    sid = len(st.schemas)
                st.subjects.setdefault(subject, []).append(sid)
                return self.answer(200, {"id": sid})
            if method == "POST" and len(parts) == 2:
                if subject not in st.subjects:
                    return self.error(404, 40401, f"Subject '{subject}' not found.")
                found = self.find(subject, schema_type, text or "")
                if not found:
                    return self.error(404, 40403, "Schema not found")
                return self.answer(200, {"subject": subject, "id": found[0],
                                         "version": found[1], "schema": text})
            if method == "GET" and parts[2:] == ["versions", "latest"]:
                if subject not in st.subjects:
                    return self.error(404, 40401, f"Subject '{subject}' not found.")
                sid = st.subjects[subject][-1]
                t, s = st.schemas[sid - 1]
                out = {"subject": subject, "id": sid, "version": len(st.subjects[subject]),
                       "schema": s}
                if t != "AVRO":
                    out["schemaType"] = t
                return self.answer(200, out)
        if (method == "POST" and len(parts) == 5 and parts[0] == "compatibility"
                and parts[1] == "subjects" and parts[3:] == ["versions", "latest"]):
            if self.options.no_compatibility:
                return self.error(404, 404, "HTTP 404 Not Found")
            if parts[2] not in st.subjects:
                return self.error(404, 40401, f"Subject '{parts[2]}' not found.")
            return self.answer(200, {"is_compatible": parts[2] not in st.incompatible})
        return self.error(404, 404, "HTTP 404 Not Found")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--token")
    parser.add_argument("--no-compatibility", action="store_true")
    options = parser.parse_args()
    Handler.state = State()
    Handler.options = options
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    server.daemon_threads = True
    with open(options.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(options.port_file + ".tmp", options.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
