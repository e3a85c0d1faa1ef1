"""Turn one tool's run into a row of bench/peers.sh's table.

Usage: row.py --tool T --rate R --dir DIR [--header] [options]

DIR holds what bench/peers.sh kept of the run: measure.json (measure.py),
truth.json (the server's GET /truth after the run; absent or not JSON when
the server has none) and the tool's own output:

  surge     loadgen.md (loadgen's --md row), run/summary.json (the run folder)
  vegeta    results.csv (vegeta encode --to csv)
  aiperf    aiperf/profile_export.jsonl, aiperf/profile_export_aiperf.json
  guidellm  benchmarks.json

It prints the markdown row on stdout and writes DIR/row.json with the same
figures unrounded. Column definitions: bench/peers.sh's header.
"""

import argparse
import csv
import glob
import json
import math
import os
import sys

NA = "–"

HEADER = (
    "| tool | asked/s | achieved/s | sent / ok / server's | send lag p50 / p99 | CPU-s per 1k req: whole run | "
    "CPU-s per 1k req: load only | peak RSS / PSS (procs) | TTFT p50 / p99 (tool) | "
    "TTFT p50 / p99 (server) | TTFT error p50 / p99 | server CPU, late p99 | quiet?; others gen / server |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
)


def rank(sorted_vals, q):
    """Nearest rank: the ceil(q*n)-th smallest value."""
    if not sorted_vals:
        return None
    i = max(0, min(len(sorted_vals) - 1, math.ceil(q * len(sorted_vals)) - 1))
    return sorted_vals[i]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def constant_lags(sends, rate):
    """Lags against a constant schedule rebuilt from the first send: the i-th
    send (in time order) was due at first + i/rate. Seconds."""
    sends = sorted(sends)
    if not sends:
        return []
    t0 = sends[0]
    return [s - (t0 + i / rate) for i, s in enumerate(sends)]


def achieved(sends, origin, rate):
    """sent / (last send - origin + 1/rate), as bench/loadgen computes it."""
    if not sends:
        return None
    return len(sends) / (max(sends) - origin + 1 / rate)


class Run:
    def __init__(self):
        self.achieved = None
        self.sent = self.ok = None
        self.lag = None  # (p50, p99) seconds
        self.lag_note = ""
        self.ttft = None  # (p50, p99) ms
        self.note = ""


def parse_surge(d, rate):
    r = Run()
    with open(os.path.join(d, "loadgen.md")) as f:
        row = [c.strip() for c in f.read().strip().splitlines()[-1].strip("|").split("|")]
    # | label | achieved/s (%) | sent | completed | outcomes | lag p50 | lag p99 | lag max | ...
    r.achieved = float(row[1].split()[0])
    r.sent = int(row[2])
    r.ok = 0
    for part in row[4].split(","):
        name, _, n = part.strip().rpartition(" ")
        if name == "ok":
            r.ok = int(n)
    ms = lambda s: float(s.split()[0]) / 1e3
    r.lag = (ms(row[5]), ms(row[6]))
    summ = load(os.path.join(d, "run", "summary.json"))
    if summ:
        lat = summ["analysis"]["phases"][0]["latency"]["ttft_send"]
        r.ttft = (lat["p50_ms"], lat["p99_ms"])
    return r


def parse_vegeta(d, rate):
    r = Run()
    sends, ok = [], 0
    with open(os.path.join(d, "results.csv"), newline="") as f:
        for rec in csv.reader(f):
            sends.append(int(rec[0]) / 1e9)
            ok += rec[1] == "200"
    r.sent, r.ok = len(sends), ok
    if sends:
        r.achieved = achieved(sends, min(sends), rate)
        lags = sorted(constant_lags(sends, rate))
        r.lag = (rank(lags, 0.5), rank(lags, 0.99))
        r.lag_note = "rebuilt"
    return r


def parse_aiperf(d, rate):
    r = Run()
    base = os.path.join(d, "aiperf")
    recs = []
    path = os.path.join(base, "profile_export.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    recs.append(json.loads(line))
    sends, credits, ok = [], [], 0
    for rec in recs:
        md = rec.get("metadata", {})
        if md.get("benchmark_phase", "profiling") != "profiling":
            continue
        if md.get("request_start_ns"):
            sends.append(md["request_start_ns"] / 1e9)
            credits.append((md.get("credit_issued_ns") or md["request_start_ns"], md["request_start_ns"]))
        ok += not rec.get("error") and not md.get("was_cancelled")
    r.sent, r.ok = len(sends), ok
    if sends:
        # The i-th credit issued is the i-th arrival of AIPerf's constant
        # schedule; its send is request_start_ns.
        credits.sort()
        t0 = credits[0][0] / 1e9
        lags = sorted(s / 1e9 - (t0 + i / rate) for i, (_, s) in enumerate(credits))
        r.lag = (rank(lags, 0.5), rank(lags, 0.99))
        r.lag_note = "rebuilt"
        r.achieved = achieved(sends, t0, rate)
    summ = load(os.path.join(base, "profile_export_aiperf.json"))
    if summ and "time_to_first_token" in summ:
        t = summ["time_to_first_token"]
        r.ttft = (t.get("p50"), t.get("p99"))
    return r


def parse_guidellm(d, rate):
    r = Run()
    doc = load(os.path.join(d, "benchmarks.json"))
    if not doc or not doc.get("benchmarks"):
        return r
    b = doc["benchmarks"][0]
    reqs = b["requests"]
    sends, lags, targets = [], [], []
    for group in ("successful", "errored", "incomplete"):
        for q in reqs.get(group) or []:
            t = q["info"]["timings"]
            if t.get("request_start") is None:
                continue
            sends.append(t["request_start"])
            if t.get("targeted_start") is not None:
                targets.append(t["targeted_start"])
                lags.append(t["request_start"] - t["targeted_start"])
    r.sent = len(sends)
    r.ok = len(reqs.get("successful") or [])
    if sends:
        origin = min(targets) if targets else min(sends)
        r.achieved = achieved(sends, origin, rate)
    if lags:
        lags.sort()
        r.lag = (rank(lags, 0.5), rank(lags, 0.99))
    pct = b["metrics"]["time_to_first_token_ms"]["successful"]["percentiles"]
    r.ttft = (pct["p50"], pct["p99"])
    if r.sent and r.ok < r.sent:
        r.note = f"{r.sent - r.ok} cancelled or failed"
    return r


PARSERS = {"surge": parse_surge, "vegeta": parse_vegeta, "aiperf": parse_aiperf, "guidellm": parse_guidellm}


def load_window_cpu(m):
    """CPU-seconds of the tree while the server had streams open: from the
    first sample with streams > 0 to the first sample after the last one
    with streams > 0 (samples are read every ~0.2 s). None without /streams."""
    s = m.get("samples") or []
    busy = [i for i, x in enumerate(s) if x[2] > 0]
    if not busy:
        return None, None
    i0, i1 = busy[0], min(busy[-1] + 1, len(s) - 1)
    return s[i1][1] - s[i0][1], s[i1][0] - s[i0][0]


def f(v, fmt):
    return NA if v is None else fmt.format(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--header", action="store_true")
    ap.add_argument("--tool")
    ap.add_argument("--label")
    ap.add_argument("--rate", type=float)
    ap.add_argument("--dir")
    ap.add_argument("--quiet", default="?", help="yes, or how long the wait gave up after")
    ap.add_argument("--busy", default="", help="busy CPU-seconds of the tool's and the server's CPU over the run")
    ap.add_argument("--server-cpu", type=float, default=None, help="the server's CPU-seconds over the run")
    a = ap.parse_args()
    if a.header:
        sys.stdout.write(HEADER)
        return
    d = a.dir
    m = load(os.path.join(d, "measure.json")) or {}
    try:
        r = PARSERS[a.tool](d, a.rate)
    except (OSError, ValueError, KeyError, IndexError) as e:
        r = Run()
        r.note = f"output not parsed: {type(e).__name__}: {e}"
    if m.get("rc"):
        r.note = (r.note + "; " if r.note else "") + f"exit status {m['rc']}"

    truth = load(os.path.join(d, "truth.json"))
    tt = None
    if isinstance(truth, dict) and isinstance(truth.get("ttft_ms"), dict):
        tt = (truth["ttft_ms"].get("p50"), truth["ttft_ms"].get("p99"))
    err = None
    if tt and r.ttft and None not in tt and None not in r.ttft:
        err = (r.ttft[0] - tt[0], r.ttft[1] - tt[1])

    cpu, wall = m.get("cpu_s"), m.get("wall_s")
    per1k = cpu / r.sent * 1000 if cpu is not None and r.sent else None
    wcpu, wwall = load_window_cpu(m) if m else (None, None)
    wper1k = wcpu / r.sent * 1000 if wcpu is not None and r.sent else None

    others = "?"
    srv_share = None
    if a.busy and wall:
        bg, bs = (float(x) for x in a.busy.split())
        og = max(0.0, bg - (cpu or 0)) / wall
        osrv = max(0.0, bs - (a.server_cpu or 0) - m.get("self_cpu_s", 0)) / wall
        others = f"{100 * og:.0f} / {100 * osrv:.0f} %"
    if a.server_cpu is not None and wwall:
        srv_share = a.server_cpu / wwall  # over the load window: the server idles outside it

    late = ""
    if isinstance(truth, dict) and isinstance(truth.get("late_ms"), dict) and truth["late_ms"].get("p99") is not None:
        late = f", {truth['late_ms']['p99']:.1f} ms"
    lag = NA
    if r.lag:
        lag = f"{r.lag[0] * 1e3:.2f} / {r.lag[1] * 1e3:.2f} ms" + (" ᵃ" if r.lag_note == "rebuilt" else "")
    sent_ok = NA if r.sent is None else f"{r.sent} / {r.ok}"
    if isinstance(truth, dict) and "requests" in truth:
        sent_ok += f" / {truth['requests']}"
    if r.note:
        sent_ok += f" ({r.note})"
    ach = NA
    if r.achieved is not None:
        ach = f"{r.achieved:.1f} ({100 * r.achieved / a.rate:.1f} %)"
    mem = NA
    if m.get("rss_peak_mib") is not None:
        mem = f"{m['rss_peak_mib']:.0f} / {m['pss_peak_mib']:.0f} MiB ({m['procs_max']})"
    pair = lambda p, unit="ms", sign="": NA if not p or None in p else f"{p[0]:{sign}.2f} / {p[1]:{sign}.2f} {unit}"
    cells = [
        a.label or a.tool,
        f"{a.rate:g}",
        ach,
        sent_ok,
        lag,
        f(per1k, "{:.3f}"),
        f(wper1k, "{:.3f}"),
        mem,
        pair(r.ttft),
        pair(tt),
        pair(err, sign="+"),
        f(None if srv_share is None else 100 * srv_share, "{:.0f} %") + late,
        f"{a.quiet}; {others}",
    ]
    sys.stdout.write("| " + " | ".join(cells) + " |\n")
    with open(os.path.join(d, "row.json"), "w") as fo:
        json.dump({"tool": a.tool, "rate": a.rate, "achieved": r.achieved, "sent": r.sent, "ok": r.ok,
                   "lag_s": r.lag, "lag_rebuilt": r.lag_note == "rebuilt", "cpu_s": cpu, "wall_s": wall,
                   "cpu_per_1k": per1k, "load_cpu_s": wcpu, "load_wall_s": wwall, "load_cpu_per_1k": wper1k,
                   "rss_peak_mib": m.get("rss_peak_mib"), "pss_peak_mib": m.get("pss_peak_mib"),
                   "maxrss_mib": m.get("maxrss_mib"), "procs_max": m.get("procs_max"),
                   "ttft_ms": r.ttft, "truth": truth, "ttft_error_ms": err,
                   "server_cpu_s": a.server_cpu, "quiet": a.quiet, "others": others, "note": r.note}, fo, indent=1)


if __name__ == "__main__":
    main()
