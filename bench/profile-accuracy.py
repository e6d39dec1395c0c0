#!/usr/bin/env python3
"""Profile accuracy and overhead, as the 2015 paper measured them (Table 1: ten functions
taking 50, 20, 15, 5, 5, 1, 1, 1, 1, 1 % of the CPU).

    bench/profile-accuracy.py [--reps 3] [--py-rounds 800] [--c-rounds 2700] [--python PY]

Python (crates/cli/tests/programs/shares.py, a fixed number of rounds), each repetition
running, one after the other:
  * the program alone (its own elapsed time is the baseline);
  * `tracelens record -e sched --python --period 1` (1 kHz of CPU time), shares from
    `tracelens profile --json` (samples with fK on the stack);
  * `py-spy record --rate 1000 --format raw` (1 kHz of wall time), shares from the raw
    stacks (samples with fK on the stack);
  * `python -m cProfile`, shares from each fK's cumulative time.
C (bench/shares.c, cc -O2 -g): alone, `tracelens record -e sched --stacks --period 1` (with its
default 16 KiB stack copies, and with perf's 8 KiB), and
`perf record -e cpu-clock -c 1000000 --call-graph dwarf` (1 ms of CPU time, 8 KiB stack
copies), shares from `perf report --no-children` (each fK is a leaf).

Shares are normalized over the ten functions. Each table gives, per function, the designed
share, the share the program measured itself (its CPU clock around each call, averaged over
the runs), and each tool's mean share; then the RMS difference from the designed and from
the measured shares, the samples per run, and the overhead: median elapsed time and median
CPU time (the program's own, all threads: what sampling costs in the program's context) of
the program under the tool / alone - 1; on a shared machine the CPU time is the steadier. Needs root (tracelens, perf, py-spy), cc, py-spy (pip)
and perf (linux-perf).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TL = os.environ.get("TL", os.path.join(ROOT, "target/release/tracelens"))
FUNCS = ["f%d" % k for k in range(10)]
DESIGN = [50.0, 20.0, 15.0, 5.0, 5.0, 1.0, 1.0, 1.0, 1.0, 1.0]


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(cmd), p.stderr[-2000:]))
    return p


def normalize(counts):
    total = sum(counts.get(f, 0.0) for f in FUNCS) or 1.0
    return [100.0 * counts.get(f, 0.0) / total for f in FUNCS]


def program_json(stdout):
    return json.loads([l for l in stdout.splitlines() if l.startswith("{")][-1])


def tracelens_counts(rec, suffix):
    p = json.loads(run([TL, "profile", rec, "--json", "--limit", "0"]).stdout)
    counts = {}
    for f in p["functions"]:
        if f["name"] in FUNCS and f["module"].endswith(suffix):
            counts[f["name"]] = counts.get(f["name"], 0) + f["samples"]
    return counts, p["samples"]


def pyspy_counts(raw):
    counts, samples = {}, 0
    for line in open(raw):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        n = int(n)
        samples += n
        frames = stack.split(";")
        for f in FUNCS:
            if any(fr.startswith(f + " (") for fr in frames):
                counts[f] = counts.get(f, 0) + n
    return counts, samples


def cprofile_counts(prof, python):
    code = (
        "import pstats, json, sys\n"
        "s = pstats.Stats(sys.argv[1]).stats\n"
        "print(json.dumps({k[2]: v[3] for k, v in s.items() if k[0].endswith('shares.py')}))\n"
    )
    out = json.loads(run([python, "-c", code, prof]).stdout)
    return {f: out.get(f, 0.0) for f in FUNCS}, 0


def perf_counts(data):
    out = run(["perf", "report", "-i", data, "--no-children", "--sort", "symbol", "--stdio", "-g", "none"]).stdout
    counts = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[\.\]\s+(f\d)\b", line)
        if m:
            counts[m.group(2)] = float(m.group(1))
    m = re.search(r"# Samples: ([\d.]+)([KM]?)", out)
    n = float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6}[m.group(2)] if m else 0
    return counts, n


def result(counted, out):
    """One run of a tool: its shares and samples (`counted`: the counts and samples), and the
    program's elapsed and CPU time under it (`out`: the program's JSON)."""
    counts, samples = counted
    return {"shares": normalize(counts), "samples": samples, "elapsed": out["elapsed_ns"], "cpu": out["process_cpu_ns"]}


def rms(a, b):
    return (sum((x - y) ** 2 for x, y in zip(a, b)) / len(a)) ** 0.5


def table(title, tools, measured, results, base):
    print("\n### %s\n" % title)
    head = "| function | designed % | measured by the program % | " + " | ".join("%s %%" % t for t in tools) + " |"
    print(head)
    print("|" + "---|" * (3 + len(tools)))
    means = {t: [statistics.mean(r["shares"][k] for r in results[t]) for k in range(10)] for t in tools}
    for k, f in enumerate(FUNCS):
        print("| %s | %.1f | %.2f | %s |" % (f, DESIGN[k], measured[k], " | ".join("%.2f" % means[t][k] for t in tools)))
    print("| **RMS vs designed** | | %.2f | %s |" % (rms(measured, DESIGN), " | ".join("%.2f" % rms(means[t], DESIGN) for t in tools)))
    print("| **RMS vs measured** | | | %s |" % " | ".join("%.2f" % rms(means[t], measured) for t in tools))
    print("| samples per run | | | %s |" % " | ".join("%d" % statistics.mean(r["samples"] for r in results[t]) for t in tools))
    base_wall = statistics.median(a[0] for a in base)
    base_cpu = statistics.median(a[1] for a in base)
    for what, k, b in [("elapsed", "elapsed", base_wall), ("CPU time of the program", "cpu", base_cpu)]:
        print("| overhead: %s (median under the tool / alone - 1) | | | %s |" % (what, " | ".join(
            "%+.1f%%" % (100.0 * (statistics.median(r[k] for r in results[t]) / b - 1)) for t in tools)))
    print("\nalone: median %.3f s elapsed, %.3f s of CPU, over %d runs" % (base_wall / 1e9, base_cpu / 1e9, len(base)))


def python_part(args, w):
    prog = os.path.join(ROOT, "crates/cli/tests/programs/shares.py")
    cmd = [args.python, prog, "0", "2000", str(args.py_rounds)]
    tools = ["tracelens", "py-spy", "cProfile"]
    results = {t: [] for t in tools}
    alone, measured = [], []
    for rep in range(args.reps):
        a = program_json(run(cmd).stdout)
        alone.append((a["elapsed_ns"], a["process_cpu_ns"]))
        rec = os.path.join(w, "py-rec")
        shutil.rmtree(rec, ignore_errors=True)
        out = program_json(run([TL, "record", "-q", "-e", "sched", "-o", rec, "--python", "--period", "1", "--"] + cmd).stdout)
        measured.append([out["measured_pct"][f] for f in FUNCS])
        results["tracelens"].append(result(tracelens_counts(rec, "shares.py"), out))
        raw = os.path.join(w, "spy.txt")
        out = program_json(run(["py-spy", "record", "--rate", "1000", "--format", "raw", "-o", raw, "--"] + cmd).stdout)
        results["py-spy"].append(result(pyspy_counts(raw), out))
        prof = os.path.join(w, "out.prof")
        out = program_json(run([args.python, "-m", "cProfile", "-o", prof] + cmd[1:]).stdout)
        results["cProfile"].append(result(cprofile_counts(prof, args.python), out))
        print("python rep %d done" % (rep + 1), file=sys.stderr)
    m = [statistics.mean(x[k] for x in measured) for k in range(10)]
    table("Python (%s, %d rounds)" % (run([args.python, "--version"]).stdout.strip(), args.py_rounds), tools, m, results, alone)


def c_part(args, w):
    exe = os.path.join(w, "shares")
    run(["cc", "-O2", "-g", "-o", exe, os.path.join(ROOT, "bench/shares.c")])
    cmd = [exe, str(args.c_rounds)]
    tools = ["tracelens (16 KiB stacks)", "tracelens (8 KiB)", "perf --call-graph dwarf (8 KiB)"]
    results = {t: [] for t in tools}
    alone, measured = [], []
    for rep in range(args.reps):
        a = program_json(run(cmd).stdout)
        alone.append((a["elapsed_ns"], a["process_cpu_ns"]))
        for tool, size in [(tools[0], "16K"), (tools[1], "8K")]:
            rec = os.path.join(w, "c-rec")
            shutil.rmtree(rec, ignore_errors=True)
            out = program_json(run([TL, "record", "-q", "-e", "sched", "-o", rec, "--stacks", "--period", "1", "--stack-size", size, "--"] + cmd).stdout)
            measured.append([out["measured_pct"][f] for f in FUNCS])
            results[tool].append(result(tracelens_counts(rec, "shares"), out))
        data = os.path.join(w, "perf.data")
        out = program_json(run(["perf", "record", "-q", "-e", "cpu-clock", "-c", "1000000", "--call-graph", "dwarf", "-o", data, "--"] + cmd).stdout)
        results[tools[2]].append(result(perf_counts(data), out))
        print("c rep %d done" % (rep + 1), file=sys.stderr)
    m = [statistics.mean(x[k] for x in measured) for k in range(10)]
    table("C (cc -O2 -g, %d rounds)" % args.c_rounds, tools, m, results, alone)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--py-rounds", type=int, default=800)
    ap.add_argument("--c-rounds", type=int, default=2700)
    ap.add_argument("--python", default=shutil.which("python3"))
    ap.add_argument("--only", choices=["python", "c"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracelens-accuracy-") as w:
        print("load before: %s" % open("/proc/loadavg").read().strip())
        if args.only != "c":
            python_part(args, w)
        if args.only != "python":
            c_part(args, w)
        print("\nload after: %s" % open("/proc/loadavg").read().strip())


main()
