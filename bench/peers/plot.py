#!/usr/bin/python3
"""bench/peers/plot.py RAW_TSV [--out DIR] [--figures DIR]: PNG charts of a bench/peers/run.sh run.

Grouped bar charts, one bar per system in every cell, bar = mean over the repetitions, whisker =
min..max when there are several, the mean written above each bar:
  peers_w1_enqueue.png      W1 jobs/s by N (1 and 100 jobs per transaction)
  peers_w2_drain.png        W2 jobs completed/s by N, one panel per claim batch B (hatched: the
                            queue emptied before the end; the rate is over the time it had jobs)
  peers_w3_mixed.png        W3 completed and enqueued jobs/s, claim statement latency
  peers_w4_slow_flush.png   W4 jobs/s with commit_delay, sync and async claim
  peers_dead_tuples.png     n_dead_tup at the end of every W2/W4 drain (symmetric log scale)
Written to --out (default: the directory of RAW_TSV) and, with --figures DIR or FIGURES=DIR in
the environment, also to DIR (a relative DIR is taken from the repository root, so
FIGURES=docs/figures writes into the repository's docs/figures).
Needs matplotlib (Debian: apt-get install -y python3-matplotlib); runs headless (Agg).
"""
import argparse
import csv
import os
import re
import statistics
from collections import defaultdict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

NAME = {"skip": "SKIP LOCKED", "pgq": "PgQ", "pgmq": "pgmq", "awa": "awa", "pgboss": "pg-boss"}
COLOR = {"skip": "#8c8c8c", "pgq": "#e08a2c", "pgmq": "#3b75af", "awa": "#2e9e5b", "pgboss": "#9a4fb0"}
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def short(v):
    if v is None:
        return ""
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.1f}M"
    if a >= 1e4:
        return f"{v / 1e3:.0f}k"
    if a >= 1e3:
        return f"{v / 1e3:.1f}k"
    if a >= 10 or v == 0:
        return f"{v:.0f}"
    return f"{v:.2g}"


class Data:
    def __init__(self, path):
        with open(path, newline="") as f:
            self.rows = list(csv.DictReader(f, delimiter="\t"))
        self.meta = {}
        mpath = os.path.join(os.path.dirname(os.path.abspath(path)), "meta.tsv")
        if os.path.exists(mpath):
            with open(mpath) as f:
                for line in f:
                    k, _, v = line.rstrip("\n").partition("\t")
                    self.meta[k] = v
        self.systems = [s for s in NAME if any(r["system"] == s for r in self.rows)]
        self.by = defaultdict(list)
        for r in self.rows:
            self.by[(r["workload"], r["variant"], r["system"], r["N"], r["B"])].append(r)

    def values(self, key, system, col):
        wl, var, n, b = key
        return [v for v in (num(r[col]) for r in self.by.get((wl, var, system, n, b), [])) if v is not None]

    def drained(self, key, system):
        wl, var, n, b = key
        return any("drained" in r["note"].split(",") for r in self.by.get((wl, var, system, n, b), []))

    def ns(self, wl):
        return sorted({r["N"] for r in self.rows if r["workload"] == wl}, key=int)

    def bs(self, wl):
        return sorted({r["B"] for r in self.rows if r["workload"] == wl}, key=int)

    def subtitle(self):
        knobs = self.meta.get("knobs", "")
        t = re.search(r"\bT=(\d+)", knobs)
        reps = re.search(r"REPS=(\d+)", knobs)
        machine = self.meta.get("machine", "")
        cpus = re.search(r"(\d+) CPUs", machine)
        parts = []
        if t:
            parts.append(f"{t.group(1)} s per run")
        if reps:
            parts.append(f"{reps.group(1)} repetition(s)")
        if cpus:
            parts.append(f"{cpus.group(1)} CPUs")
        if self.meta.get("started"):
            parts.append(self.meta["started"][:10])
        return ", ".join(parts)


def grouped_bars(ax, data, cats, col, ylabel, symlog=False, hatch_drained=False):
    """cats: [(x label, (workload, variant, N, B))]"""
    systems = data.systems
    width = 0.8 / max(1, len(systems))
    top = 0
    for i, s in enumerate(systems):
        xs, means, lo, hi, hatches = [], [], [], [], []
        for j, (_, key) in enumerate(cats):
            vals = data.values(key, s, col)
            if not vals:
                continue
            m = statistics.mean(vals)
            xs.append(j - 0.4 + width * (i + 0.5))
            means.append(m)
            lo.append(m - min(vals))
            hi.append(max(vals) - m)
            hatches.append("//" if hatch_drained and data.drained(key, s) else "")
            top = max(top, max(vals))
        if not xs:
            continue
        yerr = [lo, hi] if any(lo) or any(hi) else None
        bars = ax.bar(xs, means, width * 0.92, color=COLOR[s], label=NAME[s], yerr=yerr,
                      capsize=2, error_kw={"elinewidth": 0.8})
        for bar, h, m, up in zip(bars, hatches, means, hi):
            if h:
                bar.set_hatch(h)
                bar.set_edgecolor("white")
            # the mean, written above the whisker's top
            ax.annotate(short(m), (bar.get_x() + bar.get_width() / 2, m + up), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=6.5,
                        rotation=90 if len(systems) * len(cats) > 12 else 0)
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels([c[0] for c in cats])
    ax.set_ylabel(ylabel)
    if symlog:
        ax.set_yscale("symlog", linthresh=10)
        ax.set_ylim(0, max(10, top) * 8)
    else:
        ax.set_ylim(0, max(1, top) * 1.18)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def finish(fig, data, title, path, outs, note=""):
    """Title, one legend for the figure (below the title), the run's subtitle, then save."""
    fig.suptitle(title, fontsize=11)
    handles, labels = [], []
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                # a plain patch per system: the first bar of a series may be hatched
                sys_key = next((k for k, v in NAME.items() if v == lab), None)
                handles.append(Patch(color=COLOR[sys_key]) if sys_key else h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, 0.94))
    sub = "; ".join(x for x in (data.subtitle(), note) if x)
    if sub:
        fig.text(0.5, 0.005, sub, ha="center", va="bottom", fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 0.89))
    for d in outs:
        fig.savefig(os.path.join(d, path), dpi=130)
    plt.close(fig)
    print("wrote", ", ".join(os.path.join(d, path) for d in outs))


def drained_note(data, keys):
    if any(data.drained(k, s) for k in keys for s in data.systems):
        return "hatched: the queue emptied before the end (rate over the time it had jobs)"
    return ""


def plot_w1(data, outs):
    ns = data.ns("W1")
    if not ns:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (var, b, label) in zip(axes, [("enq1", "1", "1 job per transaction"), ("enq100", "100", "100 jobs per transaction")]):
        grouped_bars(ax, data, [(f"N={n}", ("W1", var, n, b)) for n in ns], "jobs_per_s", "jobs/s")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("clients")
    finish(fig, data, "W1 enqueue: jobs/s", "peers_w1_enqueue.png", outs)


def plot_w2(data, outs):
    ns, bs = data.ns("W2"), data.bs("W2")
    if not ns:
        return
    fig, axes = plt.subplots(1, len(bs), figsize=(max(7, 5.2 * len(bs)), 4), squeeze=False)
    for ax, b in zip(axes[0], bs):
        grouped_bars(ax, data, [(f"N={n}", ("W2", "drain", n, b)) for n in ns], "jobs_per_s",
                     "jobs completed/s", hatch_drained=True)
        ax.set_title(f"claim batch B={b}", fontsize=9)
        ax.set_xlabel("workers")
    finish(fig, data, "W2 drain of pre-loaded jobs: jobs completed/s", "peers_w2_drain.png", outs,
           note=drained_note(data, [("W2", "drain", n, b) for n in ns for b in bs]))


def plot_w3(data, outs):
    if not any(r["workload"] == "W3" for r in data.rows):
        return

    def enq(r):
        m = re.search(r"enq_per_s=([\d.]+)", r["note"])
        return m.group(1) if m else None

    for r in data.rows:
        if r["workload"] == "W3":
            r["enq_per_s"] = enq(r)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    key = ("W3", "mixed", "8", "10")
    two_metric_bars(axes[0], data, key)
    rate = re.search(r"RATE=(\d+)", data.meta.get("knobs", ""))
    if rate:
        axes[0].axhline(int(rate.group(1)), color="#444444", linestyle="--", linewidth=0.8,
                        label=f"offered ({int(rate.group(1)):,} jobs/s)")
    axes[0].set_title("completed and enqueued jobs/s", fontsize=9)
    grouped_bars(axes[1], data, [("claim statement", key)], "claim_ms", "ms")
    axes[1].set_title("claim statement latency (pgbench -r)", fontsize=9)
    finish(fig, data, "W3 steady mixed load: 4 producers at a fixed rate + 8 workers (B=10)", "peers_w3_mixed.png", outs)


def two_metric_bars(ax, data, key):
    """completed and enqueued jobs/s side by side, bars per system."""
    systems = data.systems
    width = 0.8 / max(1, len(systems))
    top = 0
    for i, s in enumerate(systems):
        rs = data.by.get(key[:2] + (s,) + key[2:], [])
        for j, col in enumerate(["jobs_per_s", "enq_per_s"]):
            vals = [v for v in (num(r.get(col)) for r in rs) if v is not None]
            if not vals:
                continue
            m = statistics.mean(vals)
            top = max(top, max(vals))
            x = j - 0.4 + width * (i + 0.5)
            ax.bar([x], [m], width * 0.92, color=COLOR[s], label=NAME[s] if j == 0 else None,
                   yerr=[[m - min(vals)], [max(vals) - m]] if len(vals) > 1 else None, capsize=2)
            ax.annotate(short(m), (x, max(vals)), xytext=(0, 2), textcoords="offset points", ha="center",
                        va="bottom", fontsize=6.5)
    ax.set_xticks([0, 1])
    ax.set_xticklabels(["completed", "enqueued"])
    ax.set_ylabel("jobs/s")
    ax.set_ylim(0, max(1, top) * 1.2)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def plot_w4(data, outs):
    if not any(r["workload"] == "W4" for r in data.rows):
        return
    cats = []
    if any(data.values(("W2", "drain", "16", "1"), s, "jobs_per_s") for s in data.systems):
        cats.append(("no delay (W2 N=16 B=1)", ("W2", "drain", "16", "1")))
    cats += [("commit_delay, sync claim", ("W4", "delay_sync", "16", "1")),
             ("commit_delay, async claim", ("W4", "delay_asyncclaim", "16", "1"))]
    fig, ax = plt.subplots(figsize=(8, 4))
    grouped_bars(ax, data, cats, "jobs_per_s", "jobs completed/s", hatch_drained=True)
    finish(fig, data, "W4 slow WAL flush (commit_delay = 5 ms): drain, N=16, B=1", "peers_w4_slow_flush.png", outs,
           note=drained_note(data, [c[1] for c in cats]))


def plot_dead(data, outs):
    cats = []
    for b in data.bs("W2"):
        for n in data.ns("W2"):
            cats.append((f"W2\nN={n} B={b}", ("W2", "drain", n, b)))
    if any(r["workload"] == "W4" for r in data.rows):
        cats += [("W4\nsync claim", ("W4", "delay_sync", "16", "1")),
                 ("W4\nasync claim", ("W4", "delay_asyncclaim", "16", "1"))]
    if not cats:
        return
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(cats) + 2), 4))
    grouped_bars(ax, data, cats, "dead_total", "n_dead_tup, all tables (symlog)", symlog=True)
    finish(fig, data, "Dead tuples at the end of each drain (1.5 s after pgbench exits)", "peers_dead_tuples.png", outs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw")
    ap.add_argument("--out", help="directory for the PNGs (default: the directory of RAW_TSV)")
    ap.add_argument("--figures", default=os.environ.get("FIGURES") or None,
                    help="also write the PNGs here; relative to the repository root (default: $FIGURES)")
    args = ap.parse_args()
    outs = [args.out or os.path.dirname(os.path.abspath(args.raw))]
    if args.figures:
        fig_dir = args.figures if os.path.isabs(args.figures) else os.path.join(REPO, args.figures)
        outs.append(fig_dir)
    for d in outs:
        os.makedirs(d, exist_ok=True)
    data = Data(args.raw)
    if not data.rows:
        raise SystemExit(f"{args.raw}: no measured runs")
    for plot in (plot_w1, plot_w2, plot_w3, plot_w4, plot_dead):
        plot(data, outs)


if __name__ == "__main__":
    main()
