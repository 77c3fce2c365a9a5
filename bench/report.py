#!/usr/bin/env python3
"""Turns the records bench/run.sh collected into the result JSON and the printed table.

  report.py latency RECORDS          analyse the latency run's files; prints one JSON record
  report.py summary RECORDS --out F  aggregate everything, write F, print the table
  report.py table RESULT.json        print the table of an existing result file
"""

import json
import statistics
import sys
from datetime import datetime

WORKLOADS = {
    "a": "(a) inserts, 1000-row tx, 6 cols",
    "b": "(b) inserts, one tx, 6 cols",
    "c": "(c) updates, 20 KB TOAST unchanged",
    "d": "(d) inserts, 1000-row tx, 50 cols",
}
DECODERS = ["cppcdc", "pgoutput", "wal2json", "cppcdc_admin"]

TARGETS = {
    "ratio_pgoutput": 0.95,   # cppcdc / pg_recvlogical+pgoutput, workloads a and b
    "ratio_wal2json": 1.2,    # cppcdc / pg_recvlogical+wal2json, every workload
    "latency_p99_ms": 10.0,   # at 1,000 tx/s
    "rss_b_mb": 128.0,
    "instructions_ratio_admin": 1.02,  # the same under --callgrind, in instructions
    "ratio_admin": 0.98,      # cppcdc with [admin] (metrics scraped) / without        # peak RSS of cppcdc on (b)
    "ns_per_event_6col": 500.0,
}


def read_records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, int(-(-p * len(sorted_values) // 100)) - 1))
    return sorted_values[k]


def stats_ms(values_ns):
    v = sorted(x / 1e6 for x in values_ns)
    if not v:
        return None
    return {
        "count": len(v),
        "p50_ms": round(percentile(v, 50), 3),
        "p90_ms": round(percentile(v, 90), 3),
        "p99_ms": round(percentile(v, 99), 3),
        "p999_ms": round(percentile(v, 99.9), 3),
        "max_ms": round(v[-1], 3),
        "mean_ms": round(statistics.fmean(v), 3),
        "min_ms": round(v[0], 3),
    }


def parse_pg_timestamp_ns(text):
    # "2026-11-30 09:40:22.123456+00" (cppcdc fixes TimeZone=UTC and DateStyle=ISO)
    dt = datetime.fromisoformat(text)
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def read_times(path):
    times = {}
    with open(path) as f:
        for line in f:
            n, t = line.split()
            times[int(n)] = int(t)
    return times


def analyse_latency(records):
    rec = next(r for r in records if r["kind"] == "latency")
    seen = read_times(rec["seen"])
    commits = {}
    with open(rec["commits"]) as f:
        for line in f:
            i, send, ack = line.split()
            commits[int(i)] = (int(send), int(ack))
    from_insert, from_commit_ms, from_ack, from_send = [], [], [], []
    ids = set()
    with open(rec["sink"]) as f:
        for n, line in enumerate(f, start=1):
            ev = json.loads(line)
            row_id = int(ev["after"]["id"])
            if row_id == 0 or n not in seen:
                continue  # the warm-up row
            ids.add(row_id)
            t = seen[n]
            send, ack = commits[row_id]
            from_insert.append(t - parse_pg_timestamp_ns(ev["after"]["created_at"]))
            from_commit_ms.append(t - ev["source"]["timestamp"] * 1_000_000)
            from_ack.append(t - ack)
            from_send.append(t - send)
    result = {
        "kind": "latency_result",
        "rate": rec["rate"],
        "seconds": rec["seconds"],
        "loadgen": rec["loadgen"],
        "events": len(ids),
        "missing": len(commits) - len(ids),
        "rss_peak_kb": rec["rss_peak_kb"],
        "cpu_s": rec["cpu_s"],
        # primary: the server's clock_timestamp() in the inserting transaction -> line written
        "insert_to_sink": stats_ms(from_insert),
        # source.timestamp is the commit time truncated to ms: overstates by up to 1 ms
        "commit_ms_to_sink": stats_ms(from_commit_ms),
        # client-side: after the COMMIT was acknowledged / before the INSERT was sent
        "client_ack_to_sink": stats_ms(from_ack),
        "client_send_to_sink": stats_ms(from_send),
    }
    if rec.get("reference"):
        ref_seen = read_times(rec["reference_seen"])
        ref = []
        with open(rec["reference"]) as f:
            for n, line in enumerate(f, start=1):
                ev = json.loads(line)
                cols = {c["name"]: c["value"] for c in ev.get("columns", [])}
                if ev.get("action") != "I" or int(cols["id"]) == 0 or n not in ref_seen:
                    continue
                ref.append(ref_seen[n] - parse_pg_timestamp_ns(cols["created_at"]))
        result["reference_wal2json_insert_to_file"] = stats_ms(ref)
    return result


def summarise(records):
    meta = next((r for r in records if r["kind"] == "meta"), {})
    end = next((r for r in records if r["kind"] == "end"), {})
    out = {"meta": {**meta, **{k: v for k, v in end.items() if k != "kind"}}, "throughput": {},
           "latency": None, "micro": None, "targets": []}
    out["meta"].pop("kind", None)
    for w, desc in WORKLOADS.items():
        load = next((r for r in records if r["kind"] == "load" and r["workload"] == w), None)
        if load is None:
            continue
        entry = {"description": desc, "events": load["events"], "wal_bytes": load["wal_bytes"],
                 "load_s": load["load_s"], "decoders": {}}
        for d in DECODERS:
            runs = [r for r in records if r["kind"] == "throughput" and r["workload"] == w
                    and r["decoder"] == d]
            if not runs:
                continue
            rows = []
            for r in runs:
                wall = (r["end_ns"] - r["start_ns"]) / 1e9
                row = {"rep": r["rep"], "wall_s": round(wall, 3),
                       "events_per_s": round(r["events"] / wall),
                       "wal_mb_per_s": round(load["wal_bytes"] / 1e6 / wall, 2),
                       "cpu_s": r["cpu_s"], "rss_peak_mb": round(r["rss_peak_kb"] / 1024, 1)}
                if "walsender_cpu_s" in r:
                    row["walsender_cpu_s"] = r["walsender_cpu_s"]
                if r.get("instructions"):
                    row["instructions"] = r["instructions"]
                if "output_bytes" in r:
                    row["output_bytes"] = r["output_bytes"]
                    row["sink_last_write_wall_s"] = round((r["sink_end_ns"] - r["start_ns"]) / 1e9, 3)
                    if r.get("first_batch_ns"):
                        row["first_batch_durable_s"] = round((r["first_batch_ns"] - r["start_ns"]) / 1e9, 3)
                rows.append(row)
            med_wall = statistics.median(x["wall_s"] for x in rows)
            entry["decoders"][d] = {
                "runs": rows,
                "wall_s": med_wall,
                "events_per_s": round(load["events"] / med_wall),
                "wal_mb_per_s": round(load["wal_bytes"] / 1e6 / med_wall, 2),
                "cpu_s": statistics.median(x["cpu_s"] for x in rows),
                "rss_peak_mb": max(x["rss_peak_mb"] for x in rows),
            }
            if all("instructions" in x for x in rows):
                entry["decoders"][d]["instructions"] = statistics.median(
                    x["instructions"] for x in rows)
            if all("walsender_cpu_s" in x for x in rows):
                entry["decoders"][d]["walsender_cpu_s"] = statistics.median(
                    x["walsender_cpu_s"] for x in rows)
        dec = entry["decoders"]
        # The best ratio cppcdc could show against each reference if it took no time at all:
        # it cannot finish before its walsender has done its CPU work (one core).
        wsnd = dec.get("cppcdc", {}).get("walsender_cpu_s")
        for ref in ("pgoutput", "wal2json"):
            if wsnd and ref in dec:
                entry[f"ceiling_to_{ref}"] = round(dec[ref]["wall_s"] / wsnd, 3)
        entry["ratio_to_pgoutput"] = (round(dec["cppcdc"]["events_per_s"] / dec["pgoutput"]["events_per_s"], 3)
                                      if "cppcdc" in dec and "pgoutput" in dec else None)
        entry["ratio_to_wal2json"] = (round(dec["cppcdc"]["events_per_s"] / dec["wal2json"]["events_per_s"], 3)
                                      if "cppcdc" in dec and "wal2json" in dec else None)
        entry["ratio_admin"] = (round(dec["cppcdc_admin"]["events_per_s"] / dec["cppcdc"]["events_per_s"], 3)
                                if "cppcdc" in dec and "cppcdc_admin" in dec else None)
        # Under --callgrind: instructions with [admin] / without (deterministic, unlike wall time).
        entry["instructions_ratio_admin"] = (
            round(dec["cppcdc_admin"]["instructions"] / dec["cppcdc"]["instructions"], 4)
            if dec.get("cppcdc", {}).get("instructions") and dec.get("cppcdc_admin", {}).get("instructions")
            else None)
        out["throughput"][w] = entry

    lat = next((r for r in records if r["kind"] == "latency_result"), None)
    if lat:
        lat = dict(lat)
        lat.pop("kind")
        out["latency"] = lat

    micro = next((r for r in records if r["kind"] == "micro"), None)
    if micro:
        res = {}
        for b in micro["results"]["benchmarks"]:
            agg = b.get("aggregate_name")
            if agg not in ("median", "min", None):
                continue
            name = b.get("run_name", b["name"])
            stage, rec = name.split("/", 1)
            ns = b["cpu_time"] / b["events"]  # time_unit is ns
            res.setdefault(rec, {}).setdefault(stage, {})[agg or "single"] = round(ns, 1)
        out["micro"] = {"ns_per_event": res, "context": micro["results"].get("context", {})}

    t = out["targets"]
    for w in ("a", "b"):
        e = out["throughput"].get(w)
        if e and e["ratio_to_pgoutput"] is not None:
            t.append({"target": f"({w}) cppcdc / pg_recvlogical+pgoutput", "want": ">= 0.95",
                      "measured": e["ratio_to_pgoutput"],
                      "ceiling": e.get("ceiling_to_pgoutput"),
                      "met": e["ratio_to_pgoutput"] >= TARGETS["ratio_pgoutput"]})
    for w, e in out["throughput"].items():
        if e["ratio_to_wal2json"] is not None:
            t.append({"target": f"({w}) cppcdc / pg_recvlogical+wal2json", "want": ">= 1.2",
                      "measured": e["ratio_to_wal2json"],
                      "ceiling": e.get("ceiling_to_wal2json"),
                      "met": e["ratio_to_wal2json"] >= TARGETS["ratio_wal2json"]})
    for w, e in out["throughput"].items():
        if e.get("instructions_ratio_admin") is not None:
            t.append({"target": f"({w}) cppcdc instructions with [admin] / without", "want": "<= 1.02",
                      "measured": e["instructions_ratio_admin"],
                      "met": e["instructions_ratio_admin"] <= TARGETS["instructions_ratio_admin"]})
        if e.get("ratio_admin") is not None:
            t.append({"target": f"({w}) cppcdc with [admin] / without", "want": ">= 0.98",
                      "measured": e["ratio_admin"],
                      "met": e["ratio_admin"] >= TARGETS["ratio_admin"]})
    if lat and lat["insert_to_sink"]:
        p99 = lat["insert_to_sink"]["p99_ms"]
        t.append({"target": f"latency p99 at {lat['rate']} tx/s", "want": "<= 10 ms",
                  "measured": p99, "met": p99 <= TARGETS["latency_p99_ms"]})
    b = out["throughput"].get("b")
    if b and "cppcdc" in b["decoders"]:
        rss = b["decoders"]["cppcdc"]["rss_peak_mb"]
        t.append({"target": "(b) cppcdc peak RSS", "want": "<= 128 MB", "measured": rss,
                  "met": rss <= TARGETS["rss_b_mb"]})
    if out["micro"]:
        pipe = out["micro"]["ns_per_event"].get("6col", {}).get("pipeline", {})
        ns = pipe.get("median", pipe.get("single"))
        if ns is not None:
            t.append({"target": "6-column row, decode+assemble+JSON", "want": "<= 500 ns/event",
                      "measured": ns, "measured_min": pipe.get("min"),
                      "met": ns <= TARGETS["ns_per_event_6col"]})
    return out


def fmt_int(x):
    return f"{x:,}" if x is not None else "-"


def print_table(res, f=sys.stdout):
    m = res["meta"]
    p = lambda s="": print(s, file=f)
    p(f"cppcdc benchmark ({m.get('mode')} mode, {m.get('started_at')}; {m.get('nproc')} CPUs, "
      f"load average {m.get('loadavg_start')} at start, {m.get('loadavg_end')} at end; "
      f"{m.get('server')}; wal2json format-version {m.get('wal2json_format')}; "
      f"cppcdc stream_in_progress {str(m.get('cppcdc_stream_in_progress', False)).lower()}; "
      f"median of {m.get('repeat')} run(s))")
    if res["throughput"]:
        p()
        p("Throughput (wall: decoder start to last event durable; WAL MB/s: the load's WAL / wall)")
        hdr = (f"{'workload':36} {'events':>9} {'WAL MB':>7} | {'cppcdc ev/s':>11} {'WAL MB/s':>8} "
               f"{'RSS MB':>7} {'CPU s':>6} {'wsnd s':>6} | {'pgoutput ev/s':>13} {'wal2json ev/s':>13} "
               f"| {'/pgoutput':>9} {'/wal2json':>9}")
        p(hdr)
        p("-" * len(hdr))
        for w, e in res["throughput"].items():
            d = e["decoders"]
            c = d.get("cppcdc", {})
            p(f"{e['description']:36} {e['events']:>9,} {e['wal_bytes'] / 1e6:>7.0f} | "
              f"{fmt_int(c.get('events_per_s')):>11} {c.get('wal_mb_per_s', 0):>8.1f} "
              f"{c.get('rss_peak_mb', 0):>7.1f} {c.get('cpu_s', 0):>6.1f} {c.get('walsender_cpu_s', 0):>6.1f} | "
              f"{fmt_int(d.get('pgoutput', {}).get('events_per_s')):>13} "
              f"{fmt_int(d.get('wal2json', {}).get('events_per_s')):>13} | "
              f"{e['ratio_to_pgoutput'] if e['ratio_to_pgoutput'] is not None else '-':>9} "
              f"{e['ratio_to_wal2json'] if e['ratio_to_wal2json'] is not None else '-':>9}")
        p()
        p("Walsender CPU s (the server's decoding, one core each; cppcdc's is read before it exits, the")
        p("references' sampled every 20 ms) and the ceiling: reference wall / cppcdc's walsender CPU, the")
        p("ratio cppcdc would show if it cost nothing")
        p(f"  {'workload':36} {'cppcdc':>7} {'pgoutput':>9} {'wal2json':>9} | {'ceiling /pgoutput':>17} {'/wal2json':>9}")
        for w, e in res["throughput"].items():
            d = e["decoders"]
            cell = lambda k: (f"{d[k]['walsender_cpu_s']:.2f}" if d.get(k, {}).get("walsender_cpu_s") else "-")
            ceil = lambda k: (f"{e[k]:.3f}" if e.get(k) else "-")
            p(f"  {e['description']:36} {cell('cppcdc'):>7} {cell('pgoutput'):>9} {cell('wal2json'):>9} | "
              f"{ceil('ceiling_to_pgoutput'):>17} {ceil('ceiling_to_wal2json'):>9}")
    lat = res.get("latency")
    if lat:
        p()
        lg = lat["loadgen"]
        p(f"Latency: commit -> line written to the sink file ({lat['events']:,} single-row tx, "
          f"asked {lat['rate']}/s, achieved {lg['achieved_tx_per_s']:.0f}/s; cppcdc peak RSS "
          f"{lat['rss_peak_kb'] / 1024:.1f} MB, {lat['cpu_s']} CPU s)")
        p(f"  {'measured from':44} {'p50':>7} {'p90':>7} {'p99':>7} {'p99.9':>7} {'max':>7}  ms")
        rows = [("cppcdc: server clock at insert (primary)", lat["insert_to_sink"]),
                ("cppcdc: source.timestamp (commit, ms)", lat["commit_ms_to_sink"]),
                ("cppcdc: client, COMMIT acknowledged", lat["client_ack_to_sink"]),
                ("reference: pg_recvlogical+wal2json, no fsync", lat.get("reference_wal2json_insert_to_file"))]
        for name, st in rows:
            if st:
                p(f"  {name:44} {st['p50_ms']:>7.2f} {st['p90_ms']:>7.2f} {st['p99_ms']:>7.2f} "
                  f"{st['p999_ms']:>7.2f} {st['max_ms']:>7.2f}")
    mi = res.get("micro")
    if mi:
        p()
        p("CPU per event in isolation (Google Benchmark; ns of CPU per event, median / min of the repetitions)")
        p(f"  {'recording':10} {'decode':>13} {'+assemble':>13} {'+JSON = pipeline':>17} {'JSON alone':>13}")
        def cell(v, stage):
            x = v.get(stage, {})
            med = x.get("median", x.get("single"))
            return f"{med:.0f} / {x['min']:.0f}" if med is not None and "min" in x else (f"{med:.0f}" if med is not None else "-")
        for rec, v in sorted(mi["ns_per_event"].items(), key=lambda kv: int(''.join(ch for ch in kv[0] if ch.isdigit()) or 0)):
            p(f"  {rec:10} {cell(v, 'decode'):>13} {cell(v, 'assemble'):>13} {cell(v, 'pipeline'):>17} {cell(v, 'json'):>13}")
    if res["targets"]:
        p()
        p("Targets")
        for t in res["targets"]:
            p(f"  {'met   ' if t['met'] else 'MISSED'}  {t['target']:42} want {t['want']:>16}  "
              f"measured {t['measured']}"
              + (f"  (ceiling {t['ceiling']})" if t.get("ceiling") else ""))


def main(argv):
    if len(argv) >= 3 and argv[1] == "latency":
        print(json.dumps(analyse_latency(read_records(argv[2]))))
        return 0
    if len(argv) >= 3 and argv[1] == "summary":
        res = summarise(read_records(argv[2]))
        if "--out" in argv:
            with open(argv[argv.index("--out") + 1], "w") as f:
                json.dump(res, f, indent=2)
                f.write("\n")
        print_table(res)
        return 0
    if len(argv) >= 3 and argv[1] == "table":
        with open(argv[2]) as f:
            print_table(json.load(f))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
