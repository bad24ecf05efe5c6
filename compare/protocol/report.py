"""The tables of compare/protocol/run: `python3 report.py OUT_DIR ROUNDS`.

Reads the JSON each case left in OUT_DIR (the load generator's reports, `walab bench
--json` for the bare WAL) and prints every case per round, the medians over the rounds
(min - max) and each target beside the measured ratio. It judges nothing a run did not
measure: a missing or failed case is printed as such.
"""
import glob
import json
import os
import statistics
import sys

out, rounds = sys.argv[1], int(sys.argv[2])


def load(name):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read().strip()
    return json.loads(text) if text else {"error": "empty report"}


def med(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)} - {format(max(values), fmt)})"


def rows(prefix):
    """Every (round, report) of a case name without its `-rN`."""
    found = []
    for r in range(1, rounds + 1):
        j = load(f"{prefix}-r{r}")
        if j is not None:
            found.append((r, j))
    return found


def ok(j):
    return j is not None and "error" not in j


def verdict(met):
    return "met" if met else "NOT met"


def s2_section():
    names = sorted({os.path.basename(p)[:-5].rsplit("-r", 1)[0] for p in glob.glob(os.path.join(out, "s2-*.json"))})
    if not names:
        return
    systems = sorted({n.split("-")[1] + "-" + n.split("-")[2] for n in names})
    walabs = [s for s in systems if s.startswith("walab-")]
    labels = {}
    if os.path.exists(os.path.join(out, "systems.txt")):
        for line in open(os.path.join(out, "systems.txt")):
            key, _, text = line.strip().partition(" ")
            labels[key] = text
    for key in walabs:
        print(f"{key}: walab serve, S3 WAL URL ?{labels.get(key, '?')}")
    counts = sorted({int(n.rsplit("-", 1)[1]) for n in names})
    print("\n## walab serve (S3 WAL) beside s2-lite, both on the S3 test server (s3-standard)")
    floor = os.path.join(out, "floor.txt")
    if os.path.exists(floor):
        print("the floor (native/examples/s3_floor, same server, before the cases):")
        print(open(floor).read().rstrip())
    print(f"{'producers':>9} {'system':<20} {'acked/s':>26} {'p50 ms':>24} {'p99 ms':>24} {'S3 req/msg':>26} {'server us/msg':>22}")
    table = {}
    for w in counts:
        for s in systems:
            reps = [j for _, j in rows(f"s2-{s}-{w}")]
            good = [j for j in reps if ok(j)]
            for j in reps:
                if not ok(j):
                    print(f"{w:>9} {s:<20} failed: {j['error'][:200]}")
            if not good:
                continue
            table[(w, s)] = good
            print(f"{w:>9} {s:<20} {med([j['acked_per_s'] for j in good], '.0f'):>26} "
                  f"{med([j['latency_ms']['p50'] for j in good], '.2f'):>24} "
                  f"{med([j['latency_ms']['p99'] for j in good], '.2f'):>24} "
                  f"{med([j.get('s3_requests_per_message') for j in good], '.4f'):>26} "
                  f"{med([j.get('server_cpu_us_per_message') for j in good], '.1f'):>22}")
    print("S3 requests per acknowledged message by kind (median over rounds):")
    for (w, s), good in sorted(table.items()):
        kinds = sorted({k for j in good for k in (j.get("s3_requests") or {})})
        parts = [f"{k} {statistics.median([(j['s3_requests'] or {}).get(k, 0) / max(j['acked_messages'], 1) for j in good]):.4f}"
                 for k in kinds]
        print(f"{w:>9} {s:<20} " + ", ".join(parts))
    print("targets (medians; each walab fence against each s2-lite setting):")
    for w, wal, s in [(w, wal, s) for w in counts for wal in walabs for s in systems]:
        a = table.get((w, wal))
        if s.startswith("walab-") or (w, s) not in table or not a:
            continue
        b = table[(w, s)]
        m = lambda rs, f: statistics.median([f(j) for j in rs])
        p50a, p50b = m(a, lambda j: j["latency_ms"]["p50"]), m(b, lambda j: j["latency_ms"]["p50"])
        p99a, p99b = m(a, lambda j: j["latency_ms"]["p99"]), m(b, lambda j: j["latency_ms"]["p99"])
        ra, rb = m(a, lambda j: j["s3_requests_per_message"]), m(b, lambda j: j["s3_requests_per_message"])
        line = (f"{w:>9} {wal} vs {s}: p50 {p50a:.2f} / {p50b:.2f} ms ({verdict(p50a <= p50b)}), "
                f"S3 requests/msg {ra:.4f} / {rb:.4f} ({verdict(ra <= rb)})")
        if w >= 64:
            line += f", p99 {p99a:.2f} / {p99b:.2f} ms ({verdict(p99a <= p99b)})"
        line += f", acked/s {m(a, lambda j: j['acked_per_s']) / m(b, lambda j: j['acked_per_s']):.2f}x"
        print(line)


def reference_section():
    ref, wal = rows("ref-reference"), rows("ref-walab-file")
    if not ref and not wal:
        return
    print("\n## walab serve (file WAL) beside the reference server (file mode): 64 producers, 1 message per request")
    print(f"{'round':>5} {'system':<12} {'acked/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'p99.9 ms':>9} {'server us/msg':>13}")
    for name, reps in (("reference", ref), ("walab-file", wal)):
        for r, j in reps:
            if not ok(j):
                print(f"{r:>5} {name:<12} failed: {j['error'][:200]}")
                continue
            l = j["latency_ms"]
            cpu = j.get("server_cpu_us_per_message")
            print(f"{r:>5} {name:<12} {j['acked_per_s']:>10.0f} {l['p50']:>9.2f} {l['p99']:>9.2f} {l['p999']:>9.2f} "
                  f"{cpu if cpu is None else round(cpu, 1)!s:>13}")
    pairs = [(a, b) for (ra, a) in wal for (rb, b) in ref if ra == rb and ok(a) and ok(b)]
    if pairs:
        t = [a["acked_per_s"] / b["acked_per_s"] for a, b in pairs]
        p = [(a["latency_ms"]["p99"], b["latency_ms"]["p99"]) for a, b in pairs]
        print(f"walab / reference acked/s per round: {', '.join(f'{x:.1f}x' for x in t)} "
              f"(target >= 50x: {verdict(statistics.median(t) >= 50)}); "
              f"p99 walab / reference: {', '.join(f'{a:.2f}/{b:.2f} ms' for a, b in p)} "
              f"(target lower: {verdict(all(a < b for a, b in p))})")


def batching_section():
    bare = rows("batch-bare")
    names = sorted({os.path.basename(p)[:-5].rsplit("-r", 1)[0] for p in glob.glob(os.path.join(out, "batch-walab-*.json"))},
                   key=lambda n: int(n.rsplit("-", 1)[1]))
    if not bare and not names:
        return
    print("\n## The client's batching at 1,024 producers (walab serve, file WAL) beside the bare WAL (1,024 writers)")
    print(f"{'round':>5} {'system':<22} {'acked/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'/ bare':>7} {'server us/msg':>13}")
    bare_rate = {}
    for r, j in bare:
        run = j["runs"][0]
        bare_rate[r] = run["acked_per_s"]
        print(f"{r:>5} {'bare WAL (bench)':<22} {run['acked_per_s']:>10.0f} {run['latency_ms']['p50']:>9.2f} "
              f"{run['latency_ms']['p99']:>9.2f} {'1.00':>7}")
    for name in names:
        b = name.rsplit("-", 1)[1]
        ratios = []
        for r, j in rows(name):
            if not ok(j):
                print(f"{r:>5} {'serve, ' + b + ' per request':<22} failed: {j['error'][:200]}")
                continue
            ratio = j["acked_per_s"] / bare_rate[r] if r in bare_rate else None
            if ratio is not None:
                ratios.append(ratio)
            cpu = j.get("server_cpu_us_per_message")
            print(f"{r:>5} {'serve, ' + b + ' per request':<22} {j['acked_per_s']:>10.0f} {j['latency_ms']['p50']:>9.2f} "
                  f"{j['latency_ms']['p99']:>9.2f} {ratio if ratio is None else f'{ratio:.2f}'!s:>7} "
                  f"{cpu if cpu is None else round(cpu, 1)!s:>13}")
        if ratios:
            print(f"      {b} per request / bare: median {statistics.median(ratios):.2f} "
                  f"(target >= 0.5: {verdict(statistics.median(ratios) >= 0.5)})")


def fanout_section():
    names = sorted({os.path.basename(p)[:-5].rsplit("-r", 1)[0] for p in glob.glob(os.path.join(out, "fanout-*.json"))})
    if not names:
        return
    print("\n## Fan-out: 1,000 SSE readers (walab serve, file WAL), delay from the append's acknowledgement")
    print(f"{'round':>5} {'streams':>7} {'delivered':>15} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'last reader p99':>15} {'append p50':>10} {'target p99 <= 50 ms':>20}")
    for name in names:
        for r, j in rows(name):
            if not ok(j):
                print(f"{r:>5} {name:<12} failed: {j['error'][:200]}")
                continue
            a, last = j["after_ack_ms"], j["last_reader_after_ack_ms"]
            full = j["delivered"] == j["expected"]
            print(f"{r:>5} {j['streams']:>7} {str(j['delivered']) + '/' + str(j['expected']):>15} {a['p50']:>8.2f} "
                  f"{a['p99']:>8.2f} {a['max']:>8.2f} {last['p99']:>15.2f} {j['append_ms']['p50']:>10.2f} "
                  f"{verdict(a['p99'] <= 50 and full):>20}")


s2_section()
reference_section()
batching_section()
fanout_section()
