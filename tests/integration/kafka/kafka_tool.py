#!/usr/bin/python3
"""The tests' independent view of the Kafka broker, through confluent-kafka (Debian's
python3-confluent-kafka, over the same librdkafka the sink uses, but none of cppcdc's code).

Usage: kafka_tool.py BOOTSTRAP COMMAND ...
  create TOPIC PARTITIONS [NAME=VALUE ...]   create a topic (replication 1) with topic configs
  partitions TOPIC                           print the topic's partition count
  produce TOPIC KEY                          send one record, its value read from stdin
  delete TOPIC                               delete a topic and wait until it is gone
  config TOPIC NAME                          print the value of one of the topic's configs
  read TOPIC [read_committed|read_uncommitted]
      print every record from the beginning up to the end the topic had when the command
      started, one JSON object per line, partition by partition in offset order:
      {"partition": P, "offset": O, "key": "..."|null, "value": "..."|null,
       "headers": [["name", "value"], ...]}
      (keys, values and header values must be UTF-8; anything else fails)
  read-avro TOPIC VALUE_AVSC KEY_AVSC [bare|confluent|glue]
      as read (read_uncommitted), with keys and values decoded by Debian's python3-avro
      (an Avro implementation independent of cppcdc's) with the given schemas, after
      stripping the Confluent framing (magic byte 0, 4-byte big-endian schema id) when
      "confluent", or AWS Glue's (byte 3, a compression byte: 0 none or 5 zlib, the 16-byte
      schema version UUID; the payload inflated with Python's zlib) when "glue"; each
      record's "key" and "value" are then the decoded datums (Avro bytes shown as UTF-8 text)
      and "key_schema_id" / "value_schema_id" the framing's ids (the UUID's text for Glue;
      null when bare)
  read-avro-apicurio TOPIC SERVER_ROOT
      as read-avro ... confluent, but each datum is decoded with the schema the framing's id
      names in an Apicurio Registry 3 (its native API at SERVER_ROOT/apis/registry/v3: the id
      is a global id, fetched from /ids/globalIds/{id}), not with local .avsc files
  read-json-schema TOPIC REGISTRY_URL
      as read (read_uncommitted), with keys and values taken apart by confluent-kafka's own
      schema registry client and JSONDeserializer: the framing's schema id is looked up in the
      registry at REGISTRY_URL (which must call it a JSON schema), and the deserializer checks
      the magic byte and validates the document against that schema with python3-jsonschema;
      each record's "key" and "value" are then the documents, "key_schema_id" /
      "value_schema_id" the framing's ids and "key_title" / "value_title" the registered
      schemas' titles; "value_subject_id" / "key_subject_id" are the ids of the newest versions
      of the subjects TOPIC-value and TOPIC-key in that registry
  read-protobuf TOPIC bare PROTO_DIR
      as read (read_uncommitted), with keys and values parsed by Debian's python3-protobuf with
      classes Debian's protoc generates from PROTO_DIR/event.proto and event_key.proto
      (tests/protobuf_reader.py); "key" and "value" are the messages as JSON (bytes as UTF-8
      text, absent fields null), "same_bytes" whether python3-protobuf serializes both messages
      to exactly the bytes read
  read-protobuf TOPIC confluent REGISTRY_URL
      the same for records in Confluent's Protobuf framing, read the way a consumer without
      generated classes reads them: the framing taken apart (magic byte 0, schema id, the
      message-index array as zig-zag varints), the schema fetched by that id with
      python3-confluent-kafka's registry client (it must be a PROTOBUF schema), compiled by
      protoc, and the message the index path names in it parsed by python3-protobuf.
      "key_schema_id" / "value_schema_id", "key_indexes" / "value_indexes" and "key_message" /
      "value_message" (the full name of the message the path named) are the framing's;
      "key_subject_id" / "value_subject_id" the ids of the newest versions of the subjects
      TOPIC-key and TOPIC-value. Each key is also read by python3-confluent-kafka's own
      ProtobufDeserializer, as "key_by_deserializer" (that version reads the index array as
      plain varints, which agree with zig-zag ones only for the path [0])
  read-cloudevents TOPIC
      as read (read_uncommitted), each record turned into a CloudEvent by the CloudEvents
      Python SDK (the CNCF's "cloudevents" package from PyPI, put by scripts/install-deps.sh
      under ~/.cache/cppcdc/python/; CPPCDC_CLOUDEVENTS_SDK overrides the directory): binary
      mode when the record has a ce_specversion header, else structured; each line is then
      {"partition": P, "offset": O, "attributes": {...}, "data": {...}}
"""

import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic


def fail(message):
    sys.stderr.write("kafka_tool.py: " + message + "\n")
    sys.exit(1)


def admin_config(bootstrap):
    # librdkafka lets a producer-type client (an AdminClient is one) ask the broker to create
    # a topic it looks up; the tests' broker would then make a checkpoint topic the test polls
    # for with cleanup.policy=delete before cppcdc creates it compacted.
    return {"bootstrap.servers": bootstrap, "allow.auto.create.topics": False}


def create(bootstrap, topic, partitions, configs):
    admin = AdminClient(admin_config(bootstrap))
    config = dict(c.split("=", 1) for c in configs)
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=int(partitions), replication_factor=1, config=config)],
        operation_timeout=30)
    try:
        futures[topic].result(timeout=60)
    except KafkaException as e:
        fail("creating %s: %s" % (topic, e))
    # Wait until the metadata shows every partition with a leader.
    deadline = time.time() + 60
    while time.time() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md and not md.error and len(md.partitions) == int(partitions) and all(
                p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.1)
    fail("topic %s has no leaders after 60 s" % topic)


def partitions(bootstrap, topic):
    admin = AdminClient(admin_config(bootstrap))
    md = admin.list_topics(topic, timeout=30).topics.get(topic)
    if md is None or md.error:
        fail("no topic %s: %s" % (topic, md.error if md else "absent"))
    print(len(md.partitions))


def text(b):
    return None if b is None else b.decode("utf-8")


def avro_reader(avsc, framed):
    import io
    import struct

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

    reader = avro.io.DatumReader(avro.schema.parse(open(avsc).read()))

    def decode(data):
        if data is None:
            return None, None
        schema_id = None
        if framed == "glue":
            import uuid
            import zlib

            if len(data) < 18 or data[0] != 3 or data[1] not in (0, 5):
                fail("a record without Glue's header (version 3, compression 0 or 5)")
            schema_id = str(uuid.UUID(bytes=data[2:18]))
            data = zlib.decompress(data[18:]) if data[1] == 5 else data[18:]
        elif framed:
            magic, schema_id = struct.unpack(">bI", data[:5])
            if magic != 0:
                fail("a record without the Confluent magic byte")
            data = data[5:]
        stream = io.BytesIO(data)
        datum = reader.read(avro.io.BinaryDecoder(stream))
        if stream.tell() != len(data):
            fail("%d bytes follow an Avro datum" % (len(data) - stream.tell()))
        return plain(datum), schema_id

    return decode


def apicurio_avro_reader(server_root):
    import io
    import struct
    import urllib.request

    import avro.io
    import avro.schema

    readers = {}

    def reader_for(global_id):
        if global_id not in readers:
            url = "%s/apis/registry/v3/ids/globalIds/%d" % (server_root.rstrip("/"), global_id)
            with urllib.request.urlopen(url, timeout=10) as answer:
                readers[global_id] = avro.io.DatumReader(avro.schema.parse(answer.read().decode()))
        return readers[global_id]

    def plain(value):
        if isinstance(value, bytes):
            return value.decode("utf-8")
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    def decode(data):
        if data is None:
            return None, None
        magic, global_id = struct.unpack(">bI", data[:5])
        if magic != 0:
            fail("a record without the magic byte 0")
        stream = io.BytesIO(data[5:])
        datum = reader_for(global_id).read(avro.io.BinaryDecoder(stream))
        if stream.tell() != len(data) - 5:
            fail("%d bytes follow an Avro datum" % (len(data) - 5 - stream.tell()))
        return plain(datum), global_id

    return decode


def json_schema_reader(registry_url):
    import struct

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer
    from confluent_kafka.serialization import (MessageField, SerializationContext,
                                               SerializationError)

    client = SchemaRegistryClient({"url": registry_url})
    deserializers = {}  # schema id -> (JSONDeserializer, title)

    def decode(m):
        out = {}
        for name, data, field in (("value", m.value(), MessageField.VALUE),
                                  ("key", m.key(), MessageField.KEY)):
            out[name] = out[name + "_schema_id"] = out[name + "_title"] = None
            if data is None:
                continue
            if len(data) < 5:
                fail("a %s of %d bytes has no Confluent framing" % (name, len(data)))
            magic, schema_id = struct.unpack(">bI", data[:5])
            if magic != 0:
                fail("a %s without the Confluent magic byte" % name)
            if schema_id not in deserializers:
                schema = client.get_schema(schema_id)
                if schema.schema_type != "JSON":
                    fail("schema id %d is a %s schema, not JSON" % (schema_id, schema.schema_type))
                deserializers[schema_id] = (JSONDeserializer(schema.schema_str),
                                            json.loads(schema.schema_str).get("title"))
            deserializer, title = deserializers[schema_id]
            try:
                out[name] = deserializer(data, SerializationContext(m.topic(), field))
            except SerializationError as e:
                fail("the %s at offset %d does not validate: %s" % (name, m.offset(), e))
            out[name + "_schema_id"] = schema_id
            out[name + "_title"] = title
        for name in ("value", "key"):
            try:
                latest = client.get_latest_version("%s-%s" % (m.topic(), name))
                out[name + "_subject_id"] = latest.schema_id
            except Exception:  # no such subject: the ids cannot match
                out[name + "_subject_id"] = None
        return out

    return decode


def protobuf_module():
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    import protobuf_reader

    return protobuf_reader


def protobuf_reader(proto_dir):
    reader = protobuf_module()
    event_pb2, event_key_pb2 = reader.load(proto_dir)

    def decode(m):
        out = {"same_bytes": True}
        for name, data, message_class in (("value", m.value(), event_pb2.Event),
                                          ("key", m.key(), event_key_pb2.EventKey)):
            out[name] = None
            if data is None:
                continue
            try:
                r = reader.parse(data, message_class)
            except Exception as e:  # bytes python3-protobuf refuses
                fail("the %s at offset %d: %s" % (name, m.offset(), e))
            out[name] = r["datum"]
            out["same_bytes"] = out["same_bytes"] and r["same_bytes"]
        return out

    return decode


def protobuf_registry_reader(registry_url):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    reader = protobuf_module()
    client = SchemaRegistryClient({"url": registry_url})
    compiled = {}  # schema id -> protobuf_reader.compile_text() of the registry's text

    def decode(m):
        out = {"same_bytes": True, "key_by_deserializer": None}
        for name, data in (("value", m.value()), ("key", m.key())):
            for field in ("", "_schema_id", "_indexes", "_message"):
                out[name + field] = None
            if data is None:
                continue
            try:
                schema_id, indexes, payload = reader.read_frame(data)
                if schema_id not in compiled:
                    schema = client.get_schema(schema_id)
                    if schema.schema_type != "PROTOBUF":
                        fail("schema id %d is a %s schema, not PROTOBUF" %
                             (schema_id, schema.schema_type))
                    compiled[schema_id] = reader.compile_text(schema.schema_str)
                message_class = reader.message_class_at(compiled[schema_id], indexes)
                r = reader.parse(payload, message_class)
            except Exception as e:  # a frame, schema or message that does not hold up
                fail("the %s at offset %d: %s" % (name, m.offset(), e))
            out[name] = r["datum"]
            out[name + "_schema_id"] = schema_id
            out[name + "_indexes"] = indexes
            out[name + "_message"] = message_class.DESCRIPTOR.full_name
            out["same_bytes"] = out["same_bytes"] and r["same_bytes"]
            if name == "key":
                try:
                    key = ProtobufDeserializer(message_class)(
                        data, SerializationContext(m.topic(), MessageField.KEY))
                except Exception as e:
                    fail("ProtobufDeserializer refuses the key at offset %d: %s" % (m.offset(), e))
                out["key_by_deserializer"] = reader.key_dict(key)
        for name in ("value", "key"):
            try:
                latest = client.get_latest_version("%s-%s" % (m.topic(), name))
                out[name + "_subject_id"] = latest.schema_id
            except Exception:  # no such subject: the ids cannot match
                out[name + "_subject_id"] = None
        return out

    return decode


def cloudevents_reader():
    sdk = os.environ.get("CPPCDC_CLOUDEVENTS_SDK") or os.path.expanduser(
        "~/.cache/cppcdc/python/cloudevents-1.11.0")
    if not os.path.isdir(sdk):
        fail("the CloudEvents Python SDK is not in %s: run scripts/install-deps.sh" % sdk)
    sys.path.insert(0, sdk)
    from cloudevents.kafka import KafkaMessage, from_binary, from_structured

    def decode(m):
        headers = {k: v for k, v in (m.headers() or [])}
        message = KafkaMessage(headers, m.key(), m.value())
        event = from_binary(message) if "ce_specversion" in headers else from_structured(message)
        attributes = {k: (v.decode("utf-8") if isinstance(v, bytes) else v)
                      for k, v in event.get_attributes().items()}
        return {"attributes": attributes, "data": event.get_data()}

    return decode


def read(bootstrap, topic, isolation, avro=None, cloudevents=None, json_schema=None,
         protobuf=None):
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "cppcdc-test-reader",  # never joined: partitions are assigned by hand
        "enable.auto.commit": False,
        "isolation.level": isolation,
        # The end is found by the EOF event: a transactional topic's last offsets are commit
        # or abort markers, which no record is returned for.
        "enable.partition.eof": True,
    })
    md = consumer.list_topics(topic, timeout=30).topics.get(topic)
    if md is None or md.error:
        fail("no topic %s: %s" % (topic, md.error if md else "absent"))
    # The end to reach is the log's end, aborted and still-open transactions included: a
    # read_committed reader gets there once every transaction before it ended (a transaction
    # left hanging by a broker outage holds it back until the broker aborts it).
    probe = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "cppcdc-test-reader",
        "isolation.level": "read_uncommitted",
    })
    ends = {}
    for p in sorted(md.partitions):
        low, high = probe.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        if high > low:
            ends[p] = (low, high)
    probe.close()
    records = {p: [] for p in ends}
    if ends:
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
    remaining = set(ends)
    deadline = time.time() + 180
    while remaining:
        if time.time() > deadline:
            fail("reading %s: partitions %s did not reach their end in 180 s" %
                 (topic, sorted(remaining)))
        m = consumer.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                p = m.partition()
                if p in remaining and m.offset() >= ends[p][1]:
                    remaining.discard(p)
                    consumer.pause([TopicPartition(topic, p)])
                continue
            fail("reading %s: %s" % (topic, m.error()))
        p = m.partition()
        record = {
            "partition": p, "offset": m.offset(),
            "headers": [[k, text(v)] for k, v in (m.headers() or [])]}
        if cloudevents:
            record.update(cloudevents(m))
            del record["headers"]
        elif json_schema:
            record.update(json_schema(m))
        elif protobuf:
            record.update(protobuf(m))
            del record["headers"]
        elif avro:
            record["value"], record["value_schema_id"] = avro[0](m.value())
            record["key"], record["key_schema_id"] = avro[1](m.key())
        else:
            record["key"], record["value"] = text(m.key()), text(m.value())
        records[p].append(record)
        if m.offset() + 1 >= ends[p][1]:
            remaining.discard(p)
            consumer.pause([TopicPartition(topic, p)])
    consumer.close()
    out = sys.stdout
    for p in sorted(records):
        for r in records[p]:
            out.write(json.dumps(r, ensure_ascii=False) + "\n")


def produce(bootstrap, topic, key):
    value = sys.stdin.buffer.read()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    errors = []
    producer.produce(topic, key=key.encode("utf-8"), value=value,
                     on_delivery=lambda err, msg: errors.append(err) if err else None)
    if producer.flush(60) != 0 or errors:
        fail("producing to %s: %s" % (topic, errors or "not delivered within 60 s"))


def delete(bootstrap, topic):
    admin = AdminClient(admin_config(bootstrap))
    futures = admin.delete_topics([topic], operation_timeout=30)
    try:
        futures[topic].result(timeout=60)
    except KafkaException as e:
        fail("deleting %s: %s" % (topic, e))
    deadline = time.time() + 60
    while time.time() < deadline:
        if topic not in admin.list_topics(timeout=10).topics:
            return
        time.sleep(0.1)
    fail("topic %s still listed 60 s after its deletion" % topic)


def config(bootstrap, topic, name):
    admin = AdminClient(admin_config(bootstrap))
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    try:
        entries = admin.describe_configs([resource])[resource].result(timeout=60)
    except KafkaException as e:
        fail("describing %s: %s" % (topic, e))
    if name not in entries:
        fail("topic %s has no config %s" % (topic, name))
    print(entries[name].value)


def main(argv):
    if len(argv) < 3:
        fail(__doc__)
    bootstrap, command, args = argv[1], argv[2], argv[3:]
    if command == "create" and len(args) >= 2:
        create(bootstrap, args[0], args[1], args[2:])
    elif command == "delete" and len(args) == 1:
        delete(bootstrap, args[0])
    elif command == "config" and len(args) == 2:
        config(bootstrap, args[0], args[1])
    elif command == "partitions" and len(args) == 1:
        partitions(bootstrap, args[0])
    elif command == "produce" and len(args) == 2:
        produce(bootstrap, args[0], args[1])
    elif command == "read-avro" and len(args) in (3, 4):
        framed = {"confluent": True, "glue": "glue"}.get(args[3], False) if len(args) == 4 else False
        read(bootstrap, args[0], "read_uncommitted",
             (avro_reader(args[1], framed), avro_reader(args[2], framed)))
    elif command == "read-avro-apicurio" and len(args) == 2:
        decode = apicurio_avro_reader(args[1])
        read(bootstrap, args[0], "read_uncommitted", (decode, decode))
    elif command == "read-json-schema" and len(args) == 2:
        read(bootstrap, args[0], "read_uncommitted", json_schema=json_schema_reader(args[1]))
    elif command == "read-protobuf" and len(args) == 3 and args[1] == "bare":
        read(bootstrap, args[0], "read_uncommitted", protobuf=protobuf_reader(args[2]))
    elif command == "read-protobuf" and len(args) == 3 and args[1] == "confluent":
        read(bootstrap, args[0], "read_uncommitted",
             protobuf=protobuf_registry_reader(args[2]))
    elif command == "read-cloudevents" and len(args) == 1:
        read(bootstrap, args[0], "read_uncommitted", cloudevents=cloudevents_reader())
    elif command == "read" and len(args) in (1, 2):
        read(bootstrap, args[0], args[1] if len(args) == 2 else "read_uncommitted")
    else:
        fail(__doc__)


if __name__ == "__main__":
    main(sys.argv)
