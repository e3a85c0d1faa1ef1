"""Run one load tool and measure what its whole process tree costs.

Usage: measure.py --out FILE.json [--cpu N] [--streams-url URL] [--every S] [--limit S] -- CMD ARGS...

Starts CMD (pinned to CPU N with sched_setaffinity when --cpu is given, so
every process and thread it starts inherits the pin), and every --every
seconds (0.2) walks its process tree through /proc/PID/task/TID/children and
reads, for each process, utime + stime from /proc/PID/stat and VmRSS from
/proc/PID/status (and Pss from /proc/PID/smaps_rollup every fifth sample);
with --streams-url it also reads the server's count of open streams
(GET /streams). When CMD exits it writes FILE.json:

  rc             CMD's exit status
  wall_s         CMD's wall time
  cpu_s          CPU-seconds of the whole tree: the larger of the rusage of
                 the reaped children (RUSAGE_CHILDREN: CMD and every
                 descendant that was waited for) and the sum, over every
                 process seen, of its last sampled utime + stime (catches
                 descendants that were re-parented and never reaped here)
  rss_peak_mib   largest sum of VmRSS over the tree at one sample (shared
                 pages of forked processes count once per process)
  pss_peak_mib   largest sum of Pss at one sample (shared pages divided
                 among the processes that share them)
  maxrss_mib     ru_maxrss of the children: the largest single process
  procs_max      most processes alive in the tree at one sample
  self_cpu_s     the sampler's own CPU-seconds
  samples        [[t_epoch_s, tree_cpu_s, streams_or_-1], ...]: the load
                 window and the CPU used in it are computed from these

The sampler itself should run on another CPU than CMD (bench/peers.sh runs
it on the server's); it costs ~1 ms per sample.
"""

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out.extend(int(c) for c in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def tree(root):
    seen, todo = [], [root]
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(children(p))
    return seen


def proc_cpu(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    fields = s[s.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def proc_rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:
        return 0


def proc_pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def streams(host, port):
    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            s.sendall(b"GET /streams HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                data += b
        head, _, body = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            return -1
        return int(body.strip() or b"-1")
    except (OSError, ValueError):
        return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpu", type=int)
    ap.add_argument("--streams-url", help="http://HOST:PORT of the server (GET /streams)")
    ap.add_argument("--every", type=float, default=0.2)
    ap.add_argument("--limit", type=float, default=0, help="stop CMD (TERM, then KILL 30 s later) after this many seconds (0 = never)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        sys.exit("measure.py: no command")
    host = port = None
    if a.streams_url:
        hp = a.streams_url.split("://", 1)[-1].rstrip("/")
        host, _, port = hp.rpartition(":")
        port = int(port)

    def pin():
        if a.cpu is not None:
            os.sched_setaffinity(0, {a.cpu})
        os.setpgid(0, 0)  # its own process group, so the script can stop the whole tool

    t0 = time.time()
    p = subprocess.Popen(cmd, preexec_fn=pin)

    def forward(sig, _frame):
        try:
            os.killpg(p.pid, sig)
        except OSError:
            pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    last = {}  # pid -> last utime+stime seen
    samples, rss_peak, pss_peak, procs_max, n = [], 0, 0, 0, 0
    rc = None
    termed = 0.0
    while rc is None:
        now = time.time()
        if a.limit and now - t0 > a.limit and not termed:
            print(f"measure.py: {cmd[0]} ran past {a.limit:g} s: stopping it", file=sys.stderr)
            forward(signal.SIGTERM, None)
            termed = now
        elif termed and now - termed > 30:
            forward(signal.SIGKILL, None)
            termed = float("inf")
        pids = tree(p.pid)
        procs_max = max(procs_max, len(pids))
        rss = 0
        for pid in pids:
            c = proc_cpu(pid)
            if c is not None:
                last[pid] = c
            rss += proc_rss(pid)
        rss_peak = max(rss_peak, rss)
        if n % 5 == 0:
            pss_peak = max(pss_peak, sum(proc_pss(pid) for pid in pids))
        n += 1
        st = streams(host, port) if host else -1
        samples.append([time.time(), sum(last.values()), st])
        deadline = time.time() + a.every
        while rc is None and time.time() < deadline:
            rc = p.poll()
            if rc is None:
                time.sleep(0.02)
    wall = time.time() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    me = resource.getrusage(resource.RUSAGE_SELF)
    cpu = max(ru.ru_utime + ru.ru_stime, sum(last.values()))
    samples.append([time.time(), cpu, -1])
    with open(a.out, "w") as f:
        json.dump({"cmd": cmd, "rc": rc, "wall_s": wall, "cpu_s": cpu,
                   "rss_peak_mib": rss_peak / 2**20, "pss_peak_mib": pss_peak / 2**20,
                   "maxrss_mib": ru.ru_maxrss / 1024, "procs_max": procs_max,
                   "self_cpu_s": me.ru_utime + me.ru_stime,
                   "samples": samples}, f)
    sys.exit(rc if rc >= 0 else 128 - rc)


if __name__ == "__main__":
    main()
