#!/usr/bin/python3
"""Validates records of the json_schema codec with Debian's python3-jsonschema (a JSON Schema
implementation independent of cppcdc), for tests/unit/codec. SCHEMA is a draft-07 schema file
(checked as one first); each FILE holds one record in the Confluent framing: magic byte 0, the
4-byte big-endian schema id, then a JSON document. Prints one JSON object per file, in argument
order: {"magic": m, "schema_id": id, "valid": true|false, "errors": [message, ...]}, with
"errors" listing every violation the validator finds (a document that is not JSON gives one).

Usage: json_schema_validate.py SCHEMA FILE...
"""

import json
import struct
import sys

import jsonschema


def main():
    args = sys.argv[1:]
    with open(args.pop(0)) as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    for path in args:
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < 5:
            raise SystemExit("%s: %d bytes, too short for the framing" % (path, len(data)))
        magic, schema_id = struct.unpack(">bI", data[:5])
        try:
            instance = json.loads(data[5:].decode("utf-8"))
            errors = sorted(e.message for e in validator.iter_errors(instance))
        except ValueError as e:
            errors = ["not JSON: %s" % e]
        print(json.dumps({"magic": magic, "schema_id": schema_id, "valid": not errors,
                          "errors": errors}))


if __name__ == "__main__":
    main()
