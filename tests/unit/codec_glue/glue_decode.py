#!/usr/bin/python3
"""Reads records in AWS Glue Schema Registry framing without cppcdc's code, for
tests/unit/codec_glue: Python's struct, uuid and zlib take the 18-byte header apart and inflate
the payload; Debian's python3-avro decodes the datum with SCHEMA. Prints one JSON object per
FILE, in argument order: {"version": header byte 0, "compression": byte 1, "uuid": the schema
version UUID as text, "datum": the decoded record}, Avro bytes shown as UTF-8 text.

Usage: glue_decode.py SCHEMA FILE...
"""

import io
import json
import sys
import uuid
import zlib

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
    reader = avro.io.DatumReader(schema)
    for path in args:
        data = open(path, "rb").read()
        if len(data) < 18:
            raise SystemExit("%s: %d bytes, shorter than the Glue header" % (path, len(data)))
        version, compression = data[0], data[1]
        version_id = uuid.UUID(bytes=data[2:18])
        payload = data[18:]
        if compression == 5:
            payload = zlib.decompress(payload)
        elif compression != 0:
            raise SystemExit("%s: compression byte %d" % (path, compression))
        stream = io.BytesIO(payload)
        datum = reader.read(avro.io.BinaryDecoder(stream))
        left = len(payload) - stream.tell()
        if left:
            raise SystemExit("%s: %d bytes left after the datum" % (path, left))
        print(json.dumps({"version": version, "compression": compression,
                          "uuid": str(version_id), "datum": plain(datum)}))


if __name__ == "__main__":
    main()
