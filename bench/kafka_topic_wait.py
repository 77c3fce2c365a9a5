#!/usr/bin/python3
"""Waits until a Kafka topic holds a number of records, for bench/kafka_run.sh.

Polls the end offsets (high watermarks) of every partition of TOPIC every --interval seconds
with one librdkafka consumer (Debian's python3-confluent-kafka; no group is joined, nothing is
consumed while waiting) and prints one line when their sum reaches --count:

    <ns when the first record was seen> <ns when --count was reached> <end offset sum> <last key>

Times are CLOCK_REALTIME in nanoseconds (the clock of `date +%s%N`). <last key> is the key of
the record at the last offset of partition 0, as text, for the caller's check of what arrived
last. Exits 1 (with a message on stderr) when --pid exits first, or when the sum has not moved
for --stall seconds.

Usage: kafka_topic_wait.py --bootstrap HOST:PORT --topic T --count N [--pid P]
                           [--interval S] [--stall S]
"""
import argparse
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition


def alive(pid):
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by the shell) counts as gone.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--stall", type=float, default=120.0)
    a = ap.parse_args()

    c = Consumer({
        "bootstrap.servers": a.bootstrap,
        "group.id": "cppcdc-bench-topic-wait",
        "enable.auto.commit": False,
        "allow.auto.create.topics": False,
        "log_level": 3,
    })
    partitions = None
    first_ns = None
    total = -1
    last_move = time.monotonic()
    while True:
        if partitions is None:
            md = c.list_topics(a.topic, timeout=2)
            t = md.topics.get(a.topic)
            if t is not None and t.error is None and t.partitions:
                partitions = sorted(t.partitions)
        if partitions is not None:
            try:
                now_total = sum(
                    c.get_watermark_offsets(TopicPartition(a.topic, p), timeout=2,
                                            cached=False)[1] for p in partitions)
            except KafkaException:
                now_total = total
            now_ns = time.time_ns()
            if now_total > 0 and first_ns is None:
                first_ns = now_ns
            if now_total != total:
                total = now_total
                last_move = time.monotonic()
            if total >= a.count:
                break
        if not alive(a.pid):
            sys.exit(f"kafka_topic_wait: pid {a.pid} exited with {max(total, 0)} records in "
                     f"{a.topic}")
        if time.monotonic() - last_move > a.stall:
            sys.exit(f"kafka_topic_wait: {a.topic} stalled at {max(total, 0)} records")
        time.sleep(a.interval)

    key = ""
    lo, hi = c.get_watermark_offsets(TopicPartition(a.topic, partitions[0]), timeout=5)
    if hi > lo:
        c.assign([TopicPartition(a.topic, partitions[0], hi - 1)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            key = (m.key() or b"").decode("utf-8", "replace").replace(" ", "")
            break
    c.close()
    print(first_ns, now_ns, total, key or "-")


if __name__ == "__main__":
    main()
