#!/usr/bin/python3
"""A DOUBLE of Apicurio Registry 3's native API, for cppcdc's tests (not a real registry).

Apicurio Registry's application does not resolve from the Maven mirror on this machine (see
docs/schema-registry.md), so no real Apicurio runs here. This process speaks, with its own
code and over HTTP on loopback, the part of the native v3 API (/apis/registry/v3) that
cppcdc's "apicurio" client uses, so that its requests, retries, errors and caches meet a
separate server:

  GET  /groups/{g}/artifacts?limit&offset           {"artifacts": [{"artifactId", ...}], "count"}
  POST /groups/{g}/artifacts?ifExists&canonical     create the artifact (CreateArtifact body);
                                                    FIND_OR_CREATE_VERSION finds a version with
                                                    the same content -> {"artifact", "version"}
  GET  /groups/{g}/artifacts/{a}                    the artifact's metadata
  POST /groups/{g}/artifacts/{a}/versions[?dryRun]  a new version (CreateVersion body)
  GET  /groups/{g}/artifacts/{a}/versions/branch=latest   the newest version's metadata
  POST /search/versions?groupId&artifactId&canonical&artifactType   the body is the content
  GET  /search/versions?globalId                    {"versions": [...], "count"}
  GET  /ids/globalIds/{id}                          the raw content

Version metadata carries "globalId", "contentId", "version" (a string), "artifactType",
"groupId", "artifactId". Global ids start at 101 and content ids at 1, so a client that
confused them would be caught. Errors are problem details: {"status", "title", "detail",
"name"} with the server's exception name (ArtifactNotFoundException, RuleViolationException
as 400, ...). "canonical" comparison here is parsed-JSON equality for AVRO and JSON and
white-space-insensitive text for PROTOBUF: a stand-in for Apicurio's canonical forms, not
their implementation.

Test controls (not part of any registry's API):
  POST /__double/fail          {"status": 503, "count": 2, "retry_after": "1"} answers the next
                               `count` requests with that status (and Retry-After), or with
                               {"drop": 2} closes the next 2 connections without an answer
  POST /__double/incompatible  {"artifact": "a"} makes the artifact's rules refuse new content
  GET  /__double/requests      every request so far as "METHOD /path?query", one JSON list
  GET  /__double/headers       the Authorization header of every request so far, one JSON list

Usage: apicurio_registry_double.py --port-file FILE [--port 0] [--user U --password P]
                                   [--token T]
The port it listens on is written to FILE once it accepts connections.
"""

import argparse
import base64
import json
import os
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API = "/apis/registry/v3"


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.contents = []  # index + 1 = content id: (type, text)
        self.versions = []  # every version's metadata, in global id order
        self.artifacts = {}  # (group, artifact) -> {"type": ..., "versions": [metadata, ...]}
        self.incompatible = set()
        self.fail_status = None
        self.fail_count = 0
        self.fail_retry_after = None
        self.drop_count = 0
        self.requests = []
        self.auth = []


def same_content(schema_type, a, b, canonical):
    if not canonical:
        return a == b
    if schema_type in ("AVRO", "JSON"):
        try:
            return json.loads(a) == json.loads(b)
        except ValueError:
            return a == b
    return re.sub(r"\s+", " ", a).strip() == re.sub(r"\s+", " ", b).strip()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None
    options = None

    def log_message(self, *args):
        pass

    def send(self, status, data, content_type, extra_headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra_headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def answer(self, status, body, extra_headers=()):
        self.send(status, json.dumps(body).encode(), "application/json", extra_headers)

    def problem(self, status, name, detail):
        self.answer(status, {"status": status, "title": detail, "detail": detail, "name": name})

    def raw_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

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
        split = urllib.parse.urlsplit(self.path)
        path = split.path
        query = dict(urllib.parse.parse_qsl(split.query))
        raw = self.raw_body() if method == "POST" else b""
        if path.startswith("/__double/"):
            return self.control(method, path, raw)
        with st.lock:
            st.requests.append(f"{method} {self.path}")
            st.auth.append(self.headers.get("Authorization") or "")
            if st.drop_count > 0:
                st.drop_count -= 1
                self.close_connection = True
                self.connection.close()
                return
            if st.fail_count > 0:
                st.fail_count -= 1
                headers = [("Retry-After", st.fail_retry_after)] if st.fail_retry_after else []
                return self.answer(st.fail_status, {"status": st.fail_status,
                                                    "title": "failing on purpose"}, headers)
        if not self.authorized():
            return self.problem(401, "AuthenticationFailedException", "Unauthorized")
        if not path.startswith(API + "/"):
            # What a server answers for a path it does not serve: no exception name.
            return self.answer(404, {"status": 404, "title": "Not Found"})
        parts = [urllib.parse.unquote(p) for p in path[len(API) + 1:].split("/")]
        with st.lock:
            return self.route(method, parts, query, raw)

    def control(self, method, path, raw):
        st = self.state
        body = json.loads(raw) if raw else {}
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
                st.incompatible.add(body["artifact"])
                return self.answer(200, {})
            if path == "/__double/requests":
                return self.answer(200, st.requests)
            if path == "/__double/headers":
                return self.answer(200, st.auth)
        return self.answer(404, {"status": 404, "title": "no such control"})

    # --- the registry ---------------------------------------------------------------------

    def add_version(self, group, artifact_id, schema_type, text):
        st = self.state
        for cid, (t, c) in enumerate(st.contents, start=1):
            if t == schema_type and c == text:
                break
        else:
            st.contents.append((schema_type, text))
            cid = len(st.contents)
        entry = st.artifacts[(group, artifact_id)]
        meta = {"groupId": group, "artifactId": artifact_id, "artifactType": schema_type,
                "version": str(len(entry["versions"]) + 1), "globalId": 101 + len(st.versions),
                "contentId": cid, "state": "ENABLED", "owner": "", "createdOn": "2026-12-04T00:00:00Z"}
        entry["versions"].append(meta)
        st.versions.append(meta)
        return meta

    def find_version(self, group, artifact_id, schema_type, text, canonical):
        entry = self.state.artifacts.get((group, artifact_id))
        if not entry:
            return None
        for meta in entry["versions"]:
            t, c = self.state.contents[meta["contentId"] - 1]
            if t == schema_type and same_content(t, c, text, canonical):
                return meta
        return None

    def check_content(self, schema_type, text):
        """A problem-details answer (status, name, detail) for content the double refuses."""
        if schema_type not in ("AVRO", "JSON", "PROTOBUF"):
            return 400, "InvalidArtifactTypeException", f"unknown artifact type {schema_type}"
        if schema_type in ("AVRO", "JSON"):
            try:
                json.loads(text)
            except ValueError:
                return 400, "InvalidContentException", "the content is not valid JSON"
        return None

    def artifact_meta(self, group, artifact_id):
        entry = self.state.artifacts[(group, artifact_id)]
        return {"groupId": group, "artifactId": artifact_id, "artifactType": entry["type"],
                "owner": "", "createdOn": "2026-12-04T00:00:00Z"}

    def route(self, method, parts, query, raw):
        st = self.state
        if parts[0] == "groups" and len(parts) >= 3 and parts[2] == "artifacts":
            group = parts[1]
            if len(parts) == 3 and method == "GET":
                names = sorted(a for (g, a) in st.artifacts if g == group)
                offset = int(query.get("offset", 0))
                limit = int(query.get("limit", 20))
                page = [self.artifact_meta(group, a) for a in names[offset:offset + limit]]
                return self.answer(200, {"artifacts": page, "count": len(names)})
            if len(parts) == 3 and method == "POST":
                try:
                    body = json.loads(raw)
                    artifact_id = body["artifactId"]
                    schema_type = body["artifactType"]
                    text = body["firstVersion"]["content"]["content"]
                except (ValueError, KeyError, TypeError):
                    return self.problem(400, "BadRequestException", "not a CreateArtifact body")
                bad = self.check_content(schema_type, text)
                if bad:
                    return self.problem(*bad)
                if_exists = query.get("ifExists", "FAIL")
                canonical = query.get("canonical") == "true"
                if (group, artifact_id) in st.artifacts:
                    if if_exists == "FAIL":
                        return self.problem(409, "ArtifactAlreadyExistsException",
                                            f"artifact {artifact_id} exists")
                    if if_exists == "FIND_OR_CREATE_VERSION":
                        found = self.find_version(group, artifact_id, schema_type, text, canonical)
                        if found:
                            return self.answer(200, {"artifact": self.artifact_meta(group, artifact_id),
                                                     "version": found})
                    if artifact_id in st.incompatible:
                        return self.problem(400, "RuleViolationException",
                                            "Incompatible artifact: the compatibility rule failed")
                else:
                    st.artifacts[(group, artifact_id)] = {"type": schema_type, "versions": []}
                meta = self.add_version(group, artifact_id, schema_type, text)
                return self.answer(200, {"artifact": self.artifact_meta(group, artifact_id),
                                         "version": meta})
            if len(parts) >= 4:
                artifact_id = parts[3]
                entry = st.artifacts.get((group, artifact_id))
                if entry is None:
                    return self.problem(404, "ArtifactNotFoundException",
                                        f"No artifact with ID '{artifact_id}' in group '{group}' was found.")
                if len(parts) == 4 and method == "GET":
                    return self.answer(200, self.artifact_meta(group, artifact_id))
                if len(parts) == 5 and parts[4] == "versions" and method == "POST":
                    try:
                        body = json.loads(raw)
                        text = body["content"]["content"]
                    except (ValueError, KeyError, TypeError):
                        return self.problem(400, "BadRequestException", "not a CreateVersion body")
                    bad = self.check_content(entry["type"], text)
                    if bad:
                        return self.problem(*bad)
                    if artifact_id in st.incompatible:
                        return self.problem(400, "RuleViolationException",
                                            "Incompatible artifact: the compatibility rule failed")
                    if query.get("dryRun") == "true":
                        return self.answer(200, {"groupId": group, "artifactId": artifact_id,
                                                 "artifactType": entry["type"], "version": "0",
                                                 "globalId": 0, "contentId": 0})
                    return self.answer(200, self.add_version(group, artifact_id, entry["type"], text))
                if (len(parts) == 6 and parts[4] == "versions" and parts[5] == "branch=latest"
                        and method == "GET"):
                    if not entry["versions"]:
                        return self.problem(404, "VersionNotFoundException", "no versions")
                    return self.answer(200, entry["versions"][-1])
        if parts == ["search", "versions"]:
            if method == "GET":
                found = st.versions
                if "globalId" in query:
                    found = [v for v in found if str(v["globalId"]) == query["globalId"]]
                return self.answer(200, {"versions": found, "count": len(found)})
            if method == "POST":
                if not raw:
                    return self.problem(400, "BadRequestException", "empty content")
                canonical = query.get("canonical") == "true"
                schema_type = query.get("artifactType")
                if canonical and not schema_type:
                    return self.problem(400, "BadRequestException",
                                        "canonical=true needs artifactType")
                text = raw.decode()
                found = []
                for v in st.versions:
                    if "groupId" in query and v["groupId"] != query["groupId"]:
                        continue
                    if "artifactId" in query and v["artifactId"] != query["artifactId"]:
                        continue
                    t, c = st.contents[v["contentId"] - 1]
                    if schema_type and t != schema_type:
                        continue
                    if same_content(t, c, text, canonical):
                        found.append(v)
                limit = int(query.get("limit", 20))
                return self.answer(200, {"versions": found[:limit], "count": len(found)})
        if len(parts) == 3 and parts[:2] == ["ids", "globalIds"] and method == "GET":
            for v in st.versions:
                if str(v["globalId"]) == parts[2]:
                    t, c = st.contents[v["contentId"] - 1]
                    ct = "application/x-protobuf" if t == "PROTOBUF" else "application/json"
                    return self.send(200, c.encode(), ct, [("X-Registry-ArtifactType", t)])
            return self.problem(404, "ArtifactNotFoundException",
                                f"No content with global id {parts[2]}")
        return self.answer(404, {"status": 404, "title": "Not Found"})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--token")
    options = parser.parse_args()
    Handler.state = State()
    Handler.options = options
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    server.daemon_threads = True
    with open(options.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(options.port_file + ".tmp", options.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
