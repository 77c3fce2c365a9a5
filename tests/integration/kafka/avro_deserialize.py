#!/usr/bin/python3
"""Reads a topic of Confluent-framed Avro records the way a Python consumer of cppcdc does:
python3-confluent-kafka's Consumer, and its schema_registry.avro.AvroDeserializer with a
SchemaRegistryClient at REGISTRY_URL for both keys and values (no cppcdc code, and no local
schema: each record's schema is fetched from the registry by the id in its framing).

Usage: avro_deserialize.py BOOTSTRAP TOPIC REGISTRY_URL

Prints one JSON object per record, from the beginning of the topic up to the end it had when
the command started, partition by partition in offset order:
  {"partition": P, "offset": O, "key": {...}|null, "value": {...}|null,
   "key_schema_id": N|null, "value_schema_id": N|null}
(Avro bytes shown as UTF-8 text; the ids are the framing's). Exits 77 when fastavro, which the deserializer needs, cannot
be imported (Debian 12 does not package it; scripts/install-deps.sh puts it under
~/.cache/cppcdc/python/fastavro-<version>, CPPCDC_FASTAVRO names another directory).
"""
import glob
import json
import os
import sys

for d in [os.environ.get("CPPCDC_FASTAVRO", "")] + sorted(
        glob.glob(os.path.expanduser("~/.cache/cppcdc/python/fastavro-*"))):
    if d and os.path.isdir(d):
        sys.path.insert(0, d)
        break
try:
    import fastavro  # noqa: F401  (what AvroDeserializer needs)
except ImportError:
    print("fastavro is not installed: run scripts/install-deps.sh", file=sys.stderr)
    sys.exit(77)

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402


def plain(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def framing_id(raw):
    return None if raw is None or len(raw) < 5 else int.from_bytes(raw[1:5], "big")


def main(bootstrap, topic, registry_url):
    registry = SchemaRegistryClient({"url": registry_url})
    deserialize = AvroDeserializer(registry)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cppcdc-avro-deserialize",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    metadata = consumer.list_topics(topic, timeout=30)
    if topic not in metadata.topics or metadata.topics[topic].error is not None:
        print("no topic %s" % topic, file=sys.stderr)
        sys.exit(1)
    for partition in sorted(metadata.topics[topic].partitions):
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
        if high <= low:
            continue
        consumer.assign([TopicPartition(topic, partition, low)])
        offset = low
        while offset < high:
            msg = consumer.poll(30)
            if msg is None:
                print("no record at offset %d of partition %d" % (offset, partition),
                      file=sys.stderr)
                sys.exit(1)
            if msg.error():
                print(str(msg.error()), file=sys.stderr)
                sys.exit(1)
            key = msg.key()
            value = msg.value()
            out = {
                "partition": partition,
                "offset": msg.offset(),
                "key": None if key is None else plain(deserialize(
                    key, SerializationContext(topic, MessageField.KEY))),
                "value": None if value is None else plain(deserialize(
                    value, SerializationContext(topic, MessageField.VALUE))),
            }
            out["key_schema_id"] = framing_id(key)
            out["value_schema_id"] = framing_id(value)
            print(json.dumps(out, sort_keys=True))
            offset = msg.offset() + 1
    consumer.close()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(*sys.argv[1:])
