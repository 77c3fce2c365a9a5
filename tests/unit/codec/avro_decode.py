#!/usr/bin/python3
"""Decodes Avro datums with Debian's python3-avro (an implementation independent of cppcdc's),
for tests/unit/codec: each FILE holds one datum of the schema in SCHEMA (bare, or after the
5-byte Confluent header with --framed). Prints one JSON object per file, in argument order:
{"schema_id": id or null, "datum": the decoded record}, with Avro bytes shown as UTF-8 text.

Usage: avro_decode.py SCHEMA [--framed] FILE...
"""

import io
import json
import struct
import sys

import avro.io
import avro.schema


def plain(value):
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def main():
    args = sys.argv[1:]
    schema = avro.schema.parse(open(args.pop(0)).read())
    framed = False
    if args and args[0] == "--framed":
        framed = True
        args.pop(0)
    reader = avro.io.DatumReader(schema)
    for path in args:
        data = open(path, "rb").read()
        schema_id = None
        if framed:
            magic, schema_id = struct.unpack(">bI", data[:5])
            assert magic == 0, "magic byte %d" % magic
            data = data[5:]
        stream = io.BytesIO(data)
        datum = reader.read(avro.io.BinaryDecoder(stream))
        left = len(data) - stream.tell()
        if left:
            raise SystemExit("%s: %d bytes left after the datum" % (path, left))
        print(json.dumps({"schema_id": schema_id, "datum": plain(datum)}))


if __name__ == "__main__":
    main()
