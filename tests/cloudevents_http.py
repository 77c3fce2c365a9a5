#!/usr/bin/python3
"""Reads HTTP requests with the CloudEvents Python SDK (the CNCF's "cloudevents" package from
PyPI, which scripts/install-deps.sh puts under ~/.cache/cppcdc/python/; CPPCDC_CLOUDEVENTS_SDK
overrides the directory) -- none of cppcdc's code.

stdin: a JSON array of requests, each {"headers": {"name": "value", ...}, "body": "..."}.
stdout: one JSON object per CloudEvent found, in order: {"attributes": {...}, "data": ...}.
A request whose Content-Type is application/cloudevents-batch+json holds an array of
structured events; any other goes to the SDK's from_http (binary or structured mode).
"""

import json
import os
import sys

sdk = os.environ.get("CPPCDC_CLOUDEVENTS_SDK") or os.path.expanduser(
    "~/.cache/cppcdc/python/cloudevents-1.11.0")
if not os.path.isdir(sdk):
    sys.exit("the CloudEvents Python SDK is not in %s: run scripts/install-deps.sh" % sdk)
sys.path.insert(0, sdk)

from cloudevents.http import from_http, from_json  # noqa: E402


def show(event):
    print(json.dumps({"attributes": dict(event.get_attributes()), "data": event.get_data()},
                     ensure_ascii=False))


for request in json.load(sys.stdin):
    headers = request["headers"]
    body = request["body"]
    content_type = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
    if content_type.startswith("application/cloudevents-batch+json"):
        for element in json.loads(body):
            show(from_json(json.dumps(element)))
    else:
        show(from_http(headers, body))
