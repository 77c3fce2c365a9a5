#!/usr/bin/python3
"""Compares what Debezium's PostgreSQL connector and cppcdc's debezium_json codec wrote for the
same changes (tests/integration/kafka/debezium_compare_test.cpp runs both).

    debezium_compare.py BOOTSTRAP COUNT DBZ_TOPIC:CPPCDC_TOPIC... [--envelope TOPIC]
                        [--golden PATH --catalog PATH]

Reads COUNT records (tombstones skipped) from each topic with python3-confluent-kafka and, pair
by pair and record by record, compares op, every column value of before and after, each
column's field schema (type, optional, name, version, parameters) and the key (payload and
schema). A difference listed in KNOWN below is reported as known; any other fails the run
(exit 1). With --golden, writes the Debezium records, the envelopes of --envelope (cppcdc's
json codec: the texts the encoder starts from) and the column catalog of --catalog into one
JSON file for the unit test DebeziumJson.MatchesDebeziumsRecordsOfTheGoldenFile.
"""

import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition

# Column -> why its value or schema differs. Mirrored by kKnownDifferences in
# tests/unit/codec/codec_test.cpp and by the Limits of docs/codecs.md.
KNOWN = {
    "c_name": "Debezium 3.6.1 writes null for a column of type name; cppcdc writes its text",
    "c_mood": "an enum: Debezium names it io.debezium.data.Enum with its labels; the shape "
              "cppcdc gets does not carry the labels, so it is a plain string",
    "c_point": "Debezium writes a point as the struct io.debezium.data.geometry.Point; cppcdc "
               "writes its text",
}
# The option sets of the pairs, in order, as the golden file names them (the test's order).
OPTION_SETS = ["defaults", "decimal_string_time_connect_binary_hex",
               "decimal_double_time_adaptive_time_microseconds_binary_base64"]
# Field schema keys cppcdc does not write: Debezium declares a column's default value.
IGNORED_SCHEMA_KEYS = {"default"}


def read(bootstrap, topic, count, deadline, raw=False):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "debezium-compare",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out = []
    while len(out) < count and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is None or m.error() or m.value() is None:
            continue
        if raw:  # the record's text as it is (json columns keep their exact text)
            out.append(m.value().decode("utf-8"))
            continue
        out.append({"key": json.loads(m.key()) if m.key() else None,
                    "value": json.loads(m.value())})
    consumer.close()
    return out


def column_schemas(value, field):
    for f in value["schema"]["fields"]:
        if f["field"] == field:
            return {c["field"]: {k: v for k, v in c.items()
                                 if k != "field" and k not in IGNORED_SCHEMA_KEYS}
                    for c in f["fields"]}
    return {}


def compare(pair, dbz, ours):
    """The differences of one pair of topics, as (column or '', text)."""
    diffs = []
    if len(dbz) != len(ours):
        diffs.append(("", f"{len(dbz)} Debezium records, {len(ours)} cppcdc records"))
    for i, (d, o) in enumerate(zip(dbz, ours)):
        dp, op_ = d["value"]["payload"], o["value"]["payload"]
        if dp["op"] != op_["op"]:
            diffs.append(("", f"record {i}: op {dp['op']!r} against {op_['op']!r}"))
        for field in ("before", "after"):
            dv, ov = dp[field], op_[field]
            if (dv is None) != (ov is None):
                diffs.append(("", f"record {i}: {field} {dv!r} against {ov!r}"))
                continue
            if dv is None:
                continue
            ds, os_ = column_schemas(d["value"], field), column_schemas(o["value"], field)
            for col in sorted(set(dv) | set(ov)):
                if dv.get(col, "<absent>") != ov.get(col, "<absent>"):
                    diffs.append((col, f"record {i} {field}.{col}: Debezium "
                                       f"{json.dumps(dv.get(col, '<absent>'))}, cppcdc "
                                       f"{json.dumps(ov.get(col, '<absent>'))}"))
                if i == 0 and field == "after" and ds.get(col) != os_.get(col):
                    diffs.append((col, f"schema of {col}: Debezium {json.dumps(ds.get(col))}, "
                                       f"cppcdc {json.dumps(os_.get(col))}"))
        dk, ok = d["key"], o["key"]
        if (dk or {}).get("payload") != (ok or {}).get("payload"):
            diffs.append(("", f"record {i}: key {json.dumps(dk)} against {json.dumps(ok)}"))
        elif i == 0 and dk["schema"]["fields"] != ok["schema"]["fields"]:
            diffs.append(("", f"key schema {json.dumps(dk['schema'])} against "
                              f"{json.dumps(ok['schema'])}"))
    return diffs


def main(argv):
    bootstrap, count = argv[1], int(argv[2])
    pairs, envelope, golden, catalog = [], None, None, None
    args = argv[3:]
    while args:
        a = args.pop(0)
        if a == "--envelope":
            envelope = args.pop(0)
        elif a == "--golden":
            golden = args.pop(0)
        elif a == "--catalog":
            catalog = args.pop(0)
        else:
            pairs.append(tuple(a.split(":")))
    deadline = time.time() + 180
    unexpected = 0
    records = {}
    for dbz_topic, our_topic in pairs:
        dbz = read(bootstrap, dbz_topic, count, deadline)
        ours = read(bootstrap, our_topic, count, deadline)
        records[dbz_topic] = dbz
        print(f"== {dbz_topic} ({len(dbz)} records) against {our_topic} ({len(ours)} records)")
        if len(dbz) < count or len(ours) < count:
            print(f"   UNEXPECTED: expected {count} records on each")
            unexpected += 1
        for col, text in compare((dbz_topic, our_topic), dbz, ours):
            if col in KNOWN:
                print(f"   known    {text}  [{KNOWN[col]}]")
            else:
                print(f"   UNEXPECTED {text}")
                unexpected += 1
    if golden:
        # Per option set: the value and key schemas once (they are the same in every
        # record), then each record's payload and key payload.
        out = {"debezium": {}}
        for (dbz_topic, _), options in zip(pairs, OPTION_SETS):
            rs = records[dbz_topic]
            out["debezium"][options] = {
                "value_schema": rs[0]["value"]["schema"], "key_schema": rs[0]["key"]["schema"],
                "payloads": [r["value"]["payload"] for r in rs],
                "keys": [r["key"]["payload"] for r in rs]}
        if envelope:
            out["envelopes"] = read(bootstrap, envelope, count, deadline, raw=True)
        if catalog:
            with open(catalog) as f:
                out["columns"] = json.load(f)
        with open(golden, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True, ensure_ascii=False)
            f.write("\n")
    print(f"{unexpected} unexpected difference(s)")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
