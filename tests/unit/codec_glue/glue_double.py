#!/usr/bin/python3
"""A DOUBLE of the AWS Glue Schema Registry API, for tests/unit/codec_glue: a separate process on
loopback answering the four operations cppcdc uses (GetSchemaByDefinition,
RegisterSchemaVersion, CreateSchema, GetSchemaVersion) in Glue's JSON 1.1 protocol, with its
own code. It is not AWS: its answers follow Glue's API reference as far as cppcdc reads them.

Every request's AWS Signature Version 4 is checked with Debian's python3-botocore (an
implementation independent of cppcdc's): botocore computes the signature of the request as
received, from the headers the request says it signed, and a mismatch is answered 400
InvalidSignatureException, as AWS does. A request must sign host, x-amz-date, x-amz-target and
content-type (and x-amz-security-token when it carries one).

Test controls (unsigned, not Glue's API):
  POST /__double/fail     {"count": N, "status": 400, "type": "ThrottlingException"}: the next
                          N Glue requests get that answer
  GET  /__double/requests every Glue request so far: {"op", "signature_ok", "signed_headers"}

Usage: glue_double.py --port-file FILE [--registry NAME] [--region R] [--access-key K]
                      [--secret-key S] [--session-token T] [--pending]
  --pending: a new version is PENDING until GetSchemaVersion has been asked about it once.
"""

import argparse
import datetime
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ARGS = None
LOCK = threading.Lock()
REQUESTS = []
FAILURES = []  # pending injected answers: (status, type)
SCHEMAS = {}  # (registry, schema name) -> list of versions
VERSIONS = {}  # version id -> version dict


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def check_signature(handler, body):
    """True when botocore computes the same signature for the request as received."""
    auth = handler.headers.get("Authorization", "")
    prefix = "AWS4-HMAC-SHA256 "
    if not auth.startswith(prefix):
        return False, "no AWS4-HMAC-SHA256 Authorization header", []
    parts = dict(p.strip().split("=", 1) for p in auth[len(prefix):].split(","))
    signed = parts.get("SignedHeaders", "").split(";")
    required = {"host", "x-amz-date", "x-amz-target", "content-type"}
    if handler.headers.get("X-Amz-Security-Token") is not None:
        required.add("x-amz-security-token")
    if not required.issubset(signed):
        return False, "SignedHeaders %s lacks %s" % (signed, sorted(required - set(signed))), signed
    scope = parts.get("Credential", "").split("/")
    if len(scope) != 5 or scope[0] != ARGS.access_key or scope[2] != ARGS.region \
            or scope[3] != "glue" or scope[4] != "aws4_request":
        return False, "Credential scope %s" % parts.get("Credential"), signed
    token = handler.headers.get("X-Amz-Security-Token")
    if (token or None) != (ARGS.session_token or None):
        return False, "session token %r" % token, signed
    headers = {name: handler.headers[name] for name in signed}
    request = AWSRequest(method="POST", url="http://%s/" % handler.headers["Host"],
                         data=body, headers=headers)
    request.context["timestamp"] = handler.headers["X-Amz-Date"]
    signer = SigV4Auth(Credentials(ARGS.access_key, ARGS.secret_key, ARGS.session_token),
                       "glue", ARGS.region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if expected != parts.get("Signature"):
        return False, "signature mismatch; botocore's canonical request:\n" + canonical, signed
    return True, "", signed


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def error(self, type_, message, status=400):
        self.answer(status, {"__type": type_, "message": message})

    def do_GET(self):
        if self.path == "/__double/requests":
            with LOCK:
                self.answer(200, REQUESTS)
        else:
            self.error("UnknownOperationException", "GET " + self.path, 404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/__double/fail":
            spec = json.loads(body)
            with LOCK:
                FAILURES.extend([(spec.get("status", 400), spec.get("type", ""))] * spec["count"])
            self.answer(200, {})
            return
        target = self.headers.get("X-Amz-Target", "")
        op = target[len("AWSGlue."):] if target.startswith("AWSGlue.") else target
        ok, why, signed = check_signature(self, body)
        with LOCK:
            REQUESTS.append({"op": op, "signature_ok": ok, "signed_headers": signed})
            failure = FAILURES.pop(0) if FAILURES else None
        if not ok:
            self.error("InvalidSignatureException", why)
            return
        if self.headers.get("Content-Type") != "application/x-amz-json-1.1":
            self.error("SerializationException", "Content-Type " + str(self.headers.get("Content-Type")))
            return
        if failure is not None:
            status, type_ = failure
            if type_:
                self.error(type_, "injected by the test", status)
            else:
                self.answer(status, {"message": "injected by the test"})
            return
        try:
            request = json.loads(body)
        except ValueError:
            self.error("SerializationException", "body is not JSON")
            return
        handler = getattr(self, "op_" + op, None)
        if handler is None:
            self.error("UnknownOperationException", op)
            return
        with LOCK:
            handler(request)

    # ---- Glue's operations -------------------------------------------------------------

    def schema_key(self, schema_id):
        return (schema_id.get("RegistryName", "default-registry"), schema_id["SchemaName"])

    def registry_exists(self, name):
        return name == ARGS.registry

    def new_version(self, key, definition):
        versions = SCHEMAS[key]
        v = {"id": str(uuid.uuid4()), "definition": definition, "number": len(versions) + 1,
             "status": "PENDING" if ARGS.pending else "AVAILABLE", "key": key}
        versions.append(v)
        VERSIONS[v["id"]] = v
        return v

    def op_GetSchemaByDefinition(self, r):
        key = self.schema_key(r["SchemaId"])
        if not self.registry_exists(key[0]) or key not in SCHEMAS:
            self.error("EntityNotFoundException", "Schema is not found.")
            return
        for v in SCHEMAS[key]:
            if v["definition"] == r["SchemaDefinition"]:
                self.answer(200, {"SchemaVersionId": v["id"], "DataFormat": "AVRO",
                                  "Status": v["status"], "CreatedTime": now()})
                return
        self.error("EntityNotFoundException", "Schema version is not found.")

    def op_RegisterSchemaVersion(self, r):
        key = self.schema_key(r["SchemaId"])
        if not self.registry_exists(key[0]) or key not in SCHEMAS:
            self.error("EntityNotFoundException", "Schema is not found.")
            return
        for v in SCHEMAS[key]:
            if v["definition"] == r["SchemaDefinition"]:
                break
        else:
            v = self.new_version(key, r["SchemaDefinition"])
        self.answer(200, {"SchemaVersionId": v["id"], "VersionNumber": v["number"],
                          "Status": v["status"]})

    def op_CreateSchema(self, r):
        registry = r.get("RegistryId", {}).get("RegistryName", "default-registry")
        if not self.registry_exists(registry):
            self.error("EntityNotFoundException", "Registry is not found.")
            return
        key = (registry, r["SchemaName"])
        if key in SCHEMAS:
            self.error("AlreadyExistsException", "Schema already exists.")
            return
        if r.get("DataFormat") != "AVRO":
            self.error("InvalidInputException", "DataFormat %r" % r.get("DataFormat"))
            return
        SCHEMAS[key] = []
        v = self.new_version(key, r["SchemaDefinition"])
        self.answer(200, {"RegistryName": registry, "SchemaName": key[1], "DataFormat": "AVRO",
                          "Compatibility": r.get("Compatibility", "BACKWARD"),
                          "SchemaVersionId": v["id"], "SchemaVersionStatus": v["status"]})

    def op_GetSchemaVersion(self, r):
        v = VERSIONS.get(r.get("SchemaVersionId", ""))
        if v is None:
            self.error("EntityNotFoundException", "Schema version is not found.")
            return
        status = v["status"]
        if status == "PENDING":
            v["status"] = "AVAILABLE"  # ready by the next question
        self.answer(200, {"SchemaVersionId": v["id"], "SchemaDefinition": v["definition"],
                          "DataFormat": "AVRO", "VersionNumber": v["number"], "Status": status,
                          "SchemaArn": "arn:aws:glue:%s:000000000000:schema/%s/%s"
                                       % (ARGS.region, v["key"][0], v["key"][1])})


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--registry", default="cdc")
    p.add_argument("--region", default="eu-west-1")
    p.add_argument("--access-key", default="AKIDEXAMPLE")
    p.add_argument("--secret-key", default="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    p.add_argument("--session-token", default=None)
    p.add_argument("--pending", action="store_true")
    ARGS = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(tmp, ARGS.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
