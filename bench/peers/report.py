#!/usr/bin/env python3
"""bench/peers/report.py RAW_TSV: markdown report of a bench/peers/run.sh run on stdout.

Every cell shows the mean over the repetitions (each repetition in parentheses when there are
several). Throughput tables get ratio columns awa/SKIP LOCKED, awa/PgQ and awa/pgmq (mean of awa
divided by the peer's mean in the same cell; above 1 = awa faster). meta.tsv next to raw.tsv
(written by run.sh) supplies the header: machine, versions, settings, knobs.
Standard library only.
"""
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

NAME = {"skip": "SKIP LOCKED", "pgq": "PgQ", "pgmq": "pgmq", "awa": "awa", "pgboss": "pg-boss"}
PEERS = ["skip", "pgq", "pgmq", "pgboss"]


def num(v):
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def mean(vals):
    vals = [v for v in vals if v is not None]
    return statistics.mean(vals) if vals else None


def cell(vals, fmt="{:,.0f}"):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "n/a"
    if len(vals) == 1:
        return fmt.format(vals[0])
    return fmt.format(statistics.mean(vals)) + " (" + " / ".join(fmt.format(v) for v in vals) + ")"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}"


def is_failure(note):
    """A note flag that marks a failed or doubtful run (run.sh): pgbench_rc=..., awa_check_failed,
    no_awa_worker, awa_counters_...; not ok, drained or W3's key=value figures."""
    if note.startswith("pgbench_rc"):
        return True
    return bool(note) and note not in ("ok", "drained") and "=" not in note


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    meta = {}
    mpath = os.path.join(os.path.dirname(os.path.abspath(path)), "meta.tsv")
    if os.path.exists(mpath):
        with open(mpath) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("\t")
                meta[k] = v
    return rows, meta


def loop_latency(logdir, r):
    """tps-weighted mean of pgbench -P 5 interval latencies (whole worker loop: claim +
    complete, and the idle pause after an empty claim) over the intervals that ended before
    the queue emptied."""
    fn = os.path.join(logdir, f"r{r['rep']}_{r['workload']}_{r['variant']}_{r['system']}_n{r['N']}_b{r['B']}.log")
    try:
        with open(fn) as f:
            txt = f.read()
    except OSError:
        return None
    drained = num(r["drained_at_s"])
    tot = w = 0.0
    for m in re.finditer(r"progress: ([\d.]+) s, ([\d.]+) tps, lat ([\d.]+) ms", txt):
        t, tps, lat = map(float, m.groups())
        if drained is not None and t > drained:
            continue
        tot += tps * lat
        w += tps
    return tot / w if w else None


class Report:
    def __init__(self, rows, meta, logdir):
        self.rows = rows
        self.meta = meta
        self.systems = [s for s in NAME if any(r["system"] == s for r in rows)]
        self.peers = [p for p in PEERS if p in self.systems] if "awa" in self.systems else []
        self.by = defaultdict(list)
        for r in rows:
            if r["workload"] in ("W2", "W4"):
                r["loop_ms"] = loop_latency(logdir, r)
            self.by[(r["workload"], r["variant"], r["system"], r["N"], r["B"])].append(r)
        m = re.search(r"PRELOAD=(\d+)", meta.get("knobs", ""))
        self.preload = int(m.group(1)) if m else None
        m = re.search(r"RATE=(\d+)", meta.get("knobs", ""))
        self.rate = int(m.group(1)) if m else None

    def flags(self, rs, all_notes):
        """Notes worth showing next to a value: drained@Xs, and failures (always)."""
        out = set()
        for r in rs:
            for note in r["note"].split(","):
                if note == "drained":
                    if all_notes:
                        out.add(f"drained@{r['drained_at_s']}s")
                elif is_failure(note):
                    out.add(note)
        return " [" + ",".join(sorted(out)) + "]" if out else ""

    def header_row(self, first, ratios):
        cols = [first] + [NAME[s] for s in self.systems]
        if ratios:
            cols += [f"awa/{NAME[p]}" for p in self.peers]
        print("| " + " | ".join(cols) + " |")
        print("|---|" + "---:|" * (len(cols) - 1))

    def table(self, title, keys, col, fmt="{:,.0f}", ratios=True, all_notes=False):
        """keys: [(row label, (workload, variant, N, B))]"""
        print(f"\n### {title}\n")
        ratios = ratios and bool(self.peers)
        self.header_row(keys[0][2] if len(keys[0]) > 2 else "N", ratios)
        for k in keys:
            label, (wl, var, n, b) = k[0], k[1]
            cells, means = [], {}
            for s in self.systems:
                rs = self.by.get((wl, var, s, n, b), [])
                vals = [num(r[col]) for r in rs]
                means[s] = mean(vals)
                cells.append(cell(vals, fmt) + self.flags(rs, all_notes))
            if ratios:
                cells += [ratio(means.get("awa"), means.get(p)) for p in self.peers]
            print(f"| {label} | " + " | ".join(cells) + " |")

    def ns(self, wl):
        return sorted({r["N"] for r in self.rows if r["workload"] == wl}, key=int)

    def bs(self, wl):
        return sorted({r["B"] for r in self.rows if r["workload"] == wl}, key=int)

    def intro(self):
        print("# awa and its peers under pgbench (bench/peers)\n")
        for k, label in [("started", "Run"), ("command", "Command"), ("systems", "Systems"),
                         ("skipped", "Skipped"), ("knobs", "Knobs"), ("machine", "Machine"),
                         ("postgresql", "PostgreSQL"), ("awa", "awa"), ("pgq", "PgQ"), ("pgmq", "pgmq"),
                         ("settings", "Settings"), ("awa_settings", "awa settings")]:
            if self.meta.get(k):
                v = self.meta[k]
                if k == "command":
                    v = f"`{v}`"
                print(f"- {label}: {v}")
        print("\nValues: mean of the repetitions (each repetition in parentheses when there are several). "
              "`awa/X`: awa's mean divided by X's mean in the same row (above 1: awa does more jobs/s). "
              "`[drained@Xs]`: the queue emptied X s after the start; the rate is then taken over the time "
              "it still had jobs. Any other bracket is a failure flag (README.md, 'Notes').")

    def w1(self):
        ns = self.ns("W1")
        if not ns:
            return
        print("\n## W1 enqueue")
        self.table("W1 enqueue, 1 job per transaction: jobs/s", [(n, ("W1", "enq1", n, "1")) for n in ns], "jobs_per_s")
        self.table("W1 enqueue, 100 jobs per transaction: jobs/s", [(n, ("W1", "enq100", n, "100")) for n in ns], "jobs_per_s")
        self.table("W1 enqueue, 1 job per transaction: n_dead_tup at the end", [(n, ("W1", "enq1", n, "1")) for n in ns],
                   "dead_total", ratios=False)

    def w2(self):
        ns = self.ns("W2")
        if not ns:
            return
        pre = f"{self.preload:,}" if self.preload else "the"
        print(f"\n## W2 drain of {pre} pre-loaded jobs (N workers, claim batch B)")
        for b in self.bs("W2"):
            keys = [(n, ("W2", "drain", n, b)) for n in ns]
            self.table(f"W2 drain, B={b}: jobs completed/s", keys, "jobs_per_s", all_notes=True)
            self.table(f"W2 drain, B={b}: n_dead_tup (all tables) at the end", keys, "dead_total", ratios=False)
            self.table(f"W2 drain, B={b}: claim statement latency, ms (pgbench -r, whole run)", keys, "claim_ms",
                       "{:,.2f}", ratios=False)
            self.table(f"W2 drain, B={b}: worker loop latency, ms (pgbench -P intervals before the queue emptied)",
                       keys, "loop_ms", "{:,.2f}", ratios=False)
        print("\nWorst tables by n_dead_tup (W2):\n")
        for b in self.bs("W2"):
            for n in ns:
                for s in self.systems:
                    for r in self.by.get(("W2", "drain", s, n, b), []):
                        print(f"- B={b} N={n} {NAME[s]} (rep {r['rep']}): {r['dead_top3']} "
                              f"(autovacuum runs: {r['autovac']}, database {r['db_mb']} MB)")

    def w2_nosync(self):
        ns = sorted({r["N"] for r in self.rows if r["workload"] == "W2" and r["variant"] == "drain_nosync"}, key=int)
        if not ns:
            return
        print("\n## W2 drain, B=1, with synchronous_commit = off (whole cluster)\n")
        print("The batch-1 drain cells again with no commit waiting for its WAL flush: on a small machine the "
              "flush bounds the durable cells for every system alike, here CPU does. Cost per job: below.")
        keys = [(n, ("W2", "drain_nosync", n, "1")) for n in ns]
        self.table("W2 drain, B=1, synchronous_commit = off: jobs completed/s", keys, "jobs_per_s", all_notes=True)
        self.table("W2 drain, B=1, synchronous_commit = off: n_dead_tup at the end", keys, "dead_total", ratios=False)

    # ------------------------------------------------------------------ cost per job
    COST = [("WAL bytes/job", "wal_bytes", 1.0, "{:,.0f}"), ("commits/job", "commits", 1.0, "{:,.2f}"),
            ("WAL flushes/job", "wal_syncs", 1.0, "{:,.3f}"), ("CPU ms/job", "cpu_s", 1000.0, "{:,.3f}")]

    @staticmethod
    def per_job(r, col, scale):
        v, j = num(r.get(col)), num(r.get("cost_jobs"))
        if v is None or not j:
            return None
        return v * scale / j

    def cost_cells(self):
        """(label, key) of every non-P cell present, in report order."""
        order = {"W1": 0, "W2": 1, "W3": 2, "W4": 3}
        vorder = {"enq1": 0, "enq100": 1, "drain": 0, "drain_nosync": 1, "mixed": 0, "delay_sync": 0,
                  "delay_asyncclaim": 1}
        keys = sorted({(r["workload"], r["variant"], r["N"], r["B"]) for r in self.rows if r["workload"] in order},
                      key=lambda k: (order[k[0]], vorder.get(k[1], 9) if k[0] != "W2" else 0, int(k[3]),
                                     vorder.get(k[1], 9), int(k[2])))
        names = {"enq1": "W1 enqueue, 1/tx", "enq100": "W1 enqueue, 100/tx", "drain": "W2 drain",
                 "drain_nosync": "W2 drain, sync_commit off", "mixed": "W3 mixed",
                 "delay_sync": "W4 commit_delay, sync claim", "delay_asyncclaim": "W4 commit_delay, async claim"}
        out = []
        for wl, var, n, b in keys:
            label = names.get(var, f"{wl} {var}") + (f" N={n}" if var in ("enq1", "enq100") else f" N={n} B={b}")
            out.append((label, (wl, var, n, b)))
        return out

    def cost(self):
        cells = self.cost_cells()
        if not cells or not any(num(r.get("cpu_s")) is not None for r in self.rows):
            return
        print("\n## Cost per job (whole cluster, hardware-independent)\n")
        print("Between two snapshots around each run (after pgbench has exited and backends have flushed their "
              "statistics), divided by the jobs the run did (W1: jobs enqueued, W2-W4: jobs completed): WAL bytes "
              "(`pg_current_wal_insert_lsn()`), commits (`xact_commit` over all databases: read-only transactions "
              "such as empty claims count too), WAL flushes (`pg_stat_wal.wal_sync`) and server CPU time "
              "(utime + stime of the postmaster and all its children, from /proc). A drain that emptied the queue "
              "before T ended also pays for its empty claims after that.\n")
        print("| cell | system | jobs/s | WAL bytes/job | commits/job | WAL flushes/job | CPU ms/job |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for label, (wl, var, n, b) in cells:
            for s in self.systems:
                rs = self.by.get((wl, var, s, n, b), [])
                if not rs:
                    continue
                vals = [cell([num(r["jobs_per_s"]) for r in rs]) + self.flags(rs, True)]
                for _, col, scale, fmt in self.COST:
                    vals.append(cell([self.per_job(r, col, scale) for r in rs], fmt))
                print(f"| {label} | {NAME[s]} | " + " | ".join(vals) + " |")
        if not self.peers:
            return
        for title, col, scale in (("CPU per job", "cpu_s", 1000.0), ("WAL bytes per job", "wal_bytes", 1.0),
                                  ("WAL flushes per job", "wal_syncs", 1.0)):
            print(f"\n### {title}, awa / peer (below 1: awa spends less per job)\n")
            print("| cell | " + " | ".join(f"awa/{NAME[p]}" for p in self.peers) + " |")
            print("|---|" + "---:|" * len(self.peers))
            for label, (wl, var, n, b) in cells:
                m = {s: mean([self.per_job(r, col, scale) for r in self.by.get((wl, var, s, n, b), [])])
                     for s in self.systems}
                print(f"| {label} | " + " | ".join(ratio(m.get("awa"), m.get(p)) for p in self.peers) + " |")

    # ------------------------------------------------------------------ P: pressure phases
    @staticmethod
    def kv(r):
        return dict(x.split("=", 1) for x in r["note"].split(",") if "=" in x)

    def phases(self):
        prs = [r for r in self.rows if r["workload"] == "P"]
        if not prs:
            return
        labels = sorted({r["variant"] for r in prs}, key=lambda v: int(v.split("_", 1)[0]))
        m = re.search(r"P_T=(\d+)", self.meta.get("knobs", ""))
        pt = f"{m.group(1)} s" if m else "P_T s"
        print(f"\n## P: pressure phases ({pt} each, one database, workers draining throughout)\n")
        print("Phases of the public long-horizon harness for PostgreSQL job queues "
              "(hardbyte/postgresql-job-queue-benchmarking, docs/method.md), run in this order: "
              + " → ".join(l.split("_", 1)[1] for l in labels) + ". `completed/s`: jobs whose completion "
              "committed in the phase; `÷ clean`: divided by the first clean phase of the same repetition; "
              "pickup: claim time minus the job's enqueue timestamp, for the jobs claimed in the phase; backlog, "
              "dead tuples (`n_dead_tup`; awa: schema awa) and storage (database size without the harness's "
              "`bench_pickup`) at the end of the phase; CPU and WAL per completed job over the phase.\n")

        def clean_of(r):
            for c in prs:
                if c["system"] == r["system"] and c["rep"] == r["rep"] and c["variant"].split("_", 1)[1] == "clean":
                    return num(c["jobs_per_s"])
            return None

        def rel(r):
            c = clean_of(r)
            v = num(r["jobs_per_s"])
            return v / c if v is not None and c else None

        def offered(r):
            o, v = num(self.kv(r).get("offered")), num(r["jobs_per_s"])
            return v / o if v is not None and o else None

        metrics = [
            ("offered jobs/s", lambda r: num(self.kv(r).get("offered")), "{:,.0f}"),
            ("enqueued jobs/s", lambda r: num(self.kv(r).get("enq_per_s")), "{:,.0f}"),
            ("completed jobs/s", lambda r: num(r["jobs_per_s"]), "{:,.0f}"),
            ("completed ÷ clean", rel, "{:.2f}"),
            ("completed ÷ offered", offered, "{:.2f}"),
            ("pickup p50 ms", lambda r: num(self.kv(r).get("pickup_p50_ms")), "{:,.1f}"),
            ("pickup p99 ms", lambda r: num(self.kv(r).get("pickup_p99_ms")), "{:,.1f}"),
            ("backlog at end", lambda r: num(r["remaining"]), "{:,.0f}"),
            ("dead tuples at end", lambda r: num(r["dead_total"]), "{:,.0f}"),
            ("storage MB at end", lambda r: num(r["db_mb"]), "{:,.1f}"),
            ("CPU ms/job", lambda r: self.per_job(r, "cpu_s", 1000.0), "{:,.3f}"),
            ("WAL bytes/job", lambda r: self.per_job(r, "wal_bytes", 1.0), "{:,.0f}"),
        ]
        for s in self.systems:
            if not any(r["system"] == s for r in prs):
                continue
            print(f"\n### {NAME[s]}\n")
            print("| metric | " + " | ".join(l.replace("_", " ", 1) for l in labels) + " |")
            print("|---|" + "---:|" * len(labels))
            for name, get, fmt in metrics:
                vals = [cell([get(r) for r in self.by.get(("P", l, s, r0["N"], r0["B"]), [])], fmt)
                        for l in labels for r0 in [next(r for r in prs if r["system"] == s)]]
                print(f"| {name} | " + " | ".join(vals) + " |")
            rs = [r for r in prs if r["system"] == s]
            tops = sorted({f"{r['variant']}: {r['dead_top3']}" for r in rs if r["dead_top3"] not in ("-", "")})
            if tops:
                print("\nWorst tables by n_dead_tup at the end of each phase: " + "; ".join(tops))
        print("\n### Side by side\n")
        print("| phase | " + " | ".join(f"{NAME[s]} ÷ clean" for s in self.systems) + " | "
              + " | ".join(f"{NAME[s]} p50/p99 ms" for s in self.systems) + " | "
              + " | ".join(f"{NAME[s]} dead" for s in self.systems) + " |")
        print("|---|" + "---:|" * (3 * len(self.systems)))
        for l in labels:
            a, b, c = [], [], []
            for s in self.systems:
                rs = [r for r in prs if r["system"] == s and r["variant"] == l]
                a.append(cell([rel(r) for r in rs], "{:.2f}"))
                p50 = mean([num(self.kv(r).get("pickup_p50_ms")) for r in rs])
                p99 = mean([num(self.kv(r).get("pickup_p99_ms")) for r in rs])
                b.append("n/a" if p50 is None or p99 is None else f"{p50:,.1f} / {p99:,.1f}")
                c.append(cell([num(r["dead_total"]) for r in rs]))
            print(f"| {l.replace('_', ' ', 1)} | " + " | ".join(a + b + c) + " |")
        aw = [r for r in prs if r["system"] == "awa"]
        if aw:
            print("\nawa against the targets of issue 19 §6 (to be met by engine work; today's figures):\n")
            for kind in ("idle_tx", "readers"):
                v = [rel(r) for r in aw if r["variant"].split("_", 1)[1] == kind]
                v = [x for x in v if x is not None]
                if v:
                    print(f"- completed/s in {kind} ÷ clean ≥ 0.95: {', '.join(f'{x:.2f}' for x in v)} "
                          f"({'met' if min(v) >= 0.95 else 'not met'})")
            rec = [r for r in aw if r["variant"].split("_", 1)[1] == "recovery"]
            if rec and any(r["variant"].split("_", 1)[1] == "burst" for r in aw):
                left = [num(r["remaining"]) for r in rec]
                # Drained: back to what the clean phase leaves in flight at the offered rate
                # (jobs enqueued in the last moments of a phase, or claimed and still at work).
                steady = [num(r["remaining"]) for r in aw if r["variant"].split("_", 1)[1] == "clean"]
                steady = max([x for x in steady if x is not None] or [0])
                print(f"- burst backlog drained within recovery: backlog at the end of recovery "
                      f"{', '.join(f'{x:,.0f}' for x in left if x is not None)}, at the end of clean {steady:,.0f} "
                      f"({'met' if all(x <= steady for x in left if x is not None) else 'not met'})")
            rd = [num(self.kv(r).get("ring_dead")) for r in aw]
            rd = [x for x in rd if x is not None]
            if rd:
                print(f"- dead tuples on the ring families 0 at every phase end: max {max(rd):,.0f} "
                      f"({'met' if max(rd) == 0 else 'not met'})")

    def empty_claims(self):
        rows = [r for r in self.rows if r["system"] == "awa" and num(r["empty_claim_frac"]) is not None]
        if not rows:
            return
        print("\n## awa: claims that returned no job\n")
        print("Share of awa's claims (one per pgbench transaction) that returned nothing. awa counts its "
              "non-empty claims in `awa.claim_batch_id_seq`. In a drain that emptied the queue only the claims "
              "made while it still had jobs count (pgbench's per-second transaction counts up to the last "
              "sample that saw jobs). W3 is the whole run, including the time the queue was simply empty.\n")
        print("| workload | N | B | empty claims | claims in the whole run (pgbench transactions) |")
        print("|---|---:|---:|---:|---:|")
        seen = []
        for r in rows:
            k = (r["workload"], r["variant"], r["N"], r["B"])
            if k not in seen:
                seen.append(k)
        order = {"drain": 0, "delay_sync": 1, "delay_asyncclaim": 2, "mixed": 3}
        seen.sort(key=lambda k: (order.get(k[1], 9), int(k[3]), int(k[2])))
        for wl, var, n, b in seen:
            rs = self.by.get((wl, var, "awa", n, b), [])
            label = {"drain": "W2 drain", "delay_sync": "W4 commit_delay, sync claim",
                     "delay_asyncclaim": "W4 commit_delay, async claim", "mixed": "W3 mixed"}.get(var, f"{wl} {var}")
            frac = [num(r["empty_claim_frac"]) for r in rs]
            frac = [100 * v if v is not None else None for v in frac]
            print(f"| {label} | {n} | {b} | {cell(frac, '{:.1f} %')}{self.flags(rs, True)} | "
                  f"{cell([num(r['claims']) for r in rs])} |")

    def w3(self):
        rs3 = [r for r in self.rows if r["workload"] == "W3"]
        if not rs3:
            return
        rate = f"{self.rate:,}" if self.rate else "a fixed rate of"
        print(f"\n## W3 steady mixed load: 4 producers at {rate} jobs/s in total + 8 workers (B=10)\n")
        ratios = bool(self.peers)
        self.header_row("metric", ratios)

        def notes(r):
            return dict(kv.split("=", 1) for kv in r["note"].split(",") if "=" in kv)

        metrics = [
            ("completed jobs/s", lambda r: num(r["jobs_per_s"]), "{:,.0f}"),
            ("enqueued jobs/s", lambda r: num(notes(r).get("enq_per_s")), "{:,.0f}"),
            ("claim statement latency, ms (pgbench -r mean, client side)", lambda r: num(r["claim_ms"]), "{:,.2f}"),
            ("claim statement p50, ms (server side, sampled)", lambda r: num(notes(r).get("claim_p50_ms")), "{:,.3f}"),
            ("claim statement p99, ms (server side, sampled)", lambda r: num(notes(r).get("claim_p99_ms")), "{:,.3f}"),
            ("worker script latency, ms (incl. idle pauses)", lambda r: num(r["lat_ms"]), "{:,.2f}"),
            ("producer latency, ms", lambda r: num(notes(r).get("prod_lat_ms")), "{:,.2f}"),
            ("backlog at the end, jobs", lambda r: num(r["remaining"]), "{:,.0f}"),
            ("n_dead_tup at the end", lambda r: num(r["dead_total"]), "{:,.0f}"),
        ]
        for label, get, fmt in metrics:
            cells, means = [], {}
            for s in self.systems:
                rs = [r for r in rs3 if r["system"] == s]
                vals = [get(r) for r in rs]
                means[s] = mean(vals)
                cells.append(cell(vals, fmt) + (self.flags(rs, False) if label.startswith("completed") else ""))
            if ratios:
                cells += [ratio(means.get("awa"), means.get(p)) for p in self.peers]
            print(f"| {label} | " + " | ".join(cells) + " |")
        print("\n(Ratios in W3 are awa/peer for every metric; for latencies, backlog and dead tuples below 1 is better for awa.)")

    def w4(self):
        if not any(r["workload"] == "W4" for r in self.rows):
            return
        print("\n## W4 slow WAL flush (commit_delay = 5000, commit_siblings = 0): drain with N=16, B=1")
        keys = [("W2 N=16 B=1, no delay", ("W2", "drain", "16", "1")),
                ("commit_delay, sync claim", ("W4", "delay_sync", "16", "1")),
                ("commit_delay, async claim", ("W4", "delay_asyncclaim", "16", "1"))]
        if not self.by.get(("W2", "drain", "awa", "16", "1")) and not any(
                self.by.get(("W2", "drain", s, "16", "1")) for s in self.systems):
            keys = keys[1:]
        self.table("W4: jobs completed/s (async claim: SET LOCAL synchronous_commit = off in the claim "
                   "transaction; awa: awa.async_claim_commit = on)", [(k[0], k[1], "cell") for k in keys],
                   "jobs_per_s", all_notes=True)
        self.table("W4: n_dead_tup at the end", [(k[0], k[1], "cell") for k in keys[-2:]], "dead_total", ratios=False)
        self.table("W4: claim statement latency, ms", [(k[0], k[1], "cell") for k in keys[-2:]], "claim_ms",
                   "{:,.2f}", ratios=False)

    # ------------------------------------------------------------------ L: limits
    LVAR = {("awa", "free"): "awa, no limit", ("awa", "conc"): "awa, max_running (never binds)",
            ("awa", "rate"): "awa, rate limit (never binds)", ("awa", "both"): "awa, both",
            ("pgboss", "free"): "pg-boss, standard queue",
            ("pgboss", "key1"): "pg-boss, singleton policy, a key per job (never binds)",
            ("awa", "bind_conc"): "awa, max_running", ("pgboss", "bind_conc"): "pg-boss, singleton policy over keys",
            ("awa", "bind_rate"): "awa, rate limit",
            ("awa", "keyfree"): "awa, keyed jobs, fairness 'key', no limit",
            ("awa", "keylim"): "awa, keyed jobs, limits per key (never bind)",
            ("awa", "bind_key"): "awa, key_max_running 1 over keys"}

    def limits(self):
        lrs = [r for r in self.rows if r["workload"] == "L"]
        if not lrs:
            return
        kn = self.meta.get("knobs", "")
        print("\n## L: what limits cost in the drain cells, and binding limits (issue 21 §7)\n")
        m = re.search(r"\(non-binding: ([^)]*)\)", kn)
        print("Each cell drains the same pre-loaded queue without a limit and with limits that never bind "
              f"({m.group(1) if m else 'see meta.tsv'}; pg-boss: its singleton policy, every job its own "
              "singleton key, so at most one active job per key), in one order on odd repetitions and the "
              "reverse on even ones. `x/none`: the limited mean divided by the unlimited mean of the same "
              "system and cell (each repetition's own ratio in parentheses); the issue's target for awa is "
              "at least 0.90. awa's keyed cells drain the same jobs spread round-robin over L_KEYS concurrency "
              "keys with fairness 'key', without and with limits per key that never bind (key_max_running, "
              "key_rate_limit, key_burst as the queue's); their ratio is to the keyed cell without a limit. "
              "pg-boss's singleton-per-key column is its per-key limit.\n")
        cells = sorted({(r["N"], r["B"]) for r in lrs if not r["variant"].startswith("bind")},
                       key=lambda k: (int(k[1]), int(k[0])))
        have = lambda s, v: any(r["system"] == s and r["variant"] == v for r in lrs)
        cols = [(s, v) for s, v in [("awa", "free"), ("awa", "conc"), ("awa", "rate"), ("awa", "both"),
                                    ("awa", "keyfree"), ("awa", "keylim"),
                                    ("pgboss", "free"), ("pgboss", "key1")] if have(s, v)]
        base = lambda v: "keyfree" if v == "keylim" else "free"
        rcols = [(s, v) for s, v in cols if v not in ("free",) and have(s, base(v))]

        def jps(s, v, n, b):
            return self.by.get(("L", v, s, n, b), [])

        def rep_ratios(s, v, n, b):
            lim = {r["rep"]: num(r["jobs_per_s"]) for r in jps(s, v, n, b)}
            free = {r["rep"]: num(r["jobs_per_s"]) for r in jps(s, base(v), n, b)}
            out = [lim[k] / free[k] for k in sorted(lim) if lim.get(k) and free.get(k)]
            return out
        if cells:
            print("### Jobs completed/s\n")
            hdr = ["N", "B"] + [self.LVAR[c] for c in cols] + [f"{NAME[s]} {v}/{'keyfree' if base(v) == 'keyfree' else 'none'}"
                                                                for s, v in rcols]
            if have("awa", "free") and have("pgboss", "free"):
                hdr.append("awa/pg-boss, no limit")
            print("| " + " | ".join(hdr) + " |")
            print("|---|---|" + "---:|" * (len(hdr) - 2))
            for n, b in cells:
                vals = []
                for s, v in cols:
                    rs = jps(s, v, n, b)
                    vals.append(cell([num(r["jobs_per_s"]) for r in rs]) + self.flags(rs, True))
                for s, v in rcols:
                    a = mean([num(r["jobs_per_s"]) for r in jps(s, v, n, b)])
                    f = mean([num(r["jobs_per_s"]) for r in jps(s, base(v), n, b)])
                    rr = rep_ratios(s, v, n, b)
                    vals.append(ratio(a, f) + (" (" + " / ".join(f"{x:.2f}" for x in rr) + ")" if len(rr) > 1 else ""))
                if have("awa", "free") and have("pgboss", "free"):
                    vals.append(ratio(mean([num(r["jobs_per_s"]) for r in jps("awa", "free", n, b)]),
                                      mean([num(r["jobs_per_s"]) for r in jps("pgboss", "free", n, b)])))
                print(f"| {n} | {b} | " + " | ".join(vals) + " |")
            print("\n### Cost per job (whole cluster, as in the cost table above)\n")
            print("| N | B | system, limit | jobs/s | WAL bytes/job | commits/job | WAL flushes/job | CPU ms/job |")
            print("|---|---|---|---:|---:|---:|---:|---:|")
            for n, b in cells:
                for s, v in cols:
                    rs = jps(s, v, n, b)
                    vals = [cell([num(r["jobs_per_s"]) for r in rs]) + self.flags(rs, True)]
                    for _, col, scale, fmt in self.COST:
                        vals.append(cell([self.per_job(r, col, scale) for r in rs], fmt))
                    print(f"| {n} | {b} | {self.LVAR[(s, v)]} | " + " | ".join(vals) + " |")
        brs = [r for r in lrs if r["variant"].startswith("bind")]
        if brs:
            print("\n### Binding limits\n")
            print("Concurrency: one session reads the queue's running (awa: `awa.queue_counts()`, pg-boss: its active "
                  "jobs) every 10 ms for the whole run; `max seen` must not exceed the limit. Rate: the jobs done "
                  "between the workers' start and end against rate × elapsed + burst. `claims_limited`: awa's claims "
                  "its concurrency limit gave fewer jobs than asked. `ERROR lines`: the server log's ERROR lines "
                  "during the run (pg-boss: a fetch that would make a second job of a singleton key active "
                  "fails on its unique index; pg-boss swallows the error and returns no job).\n")
            print("| system, limit | N | B | rep | jobs/s | check | held | claims_limited | ERROR lines |")
            print("|---|---:|---:|---:|---:|---|---|---:|---:|")
            for r in sorted(brs, key=lambda r: (r["variant"], r["system"], int(r["B"]), int(r["rep"]))):
                kv = self.kv(r)
                if r["variant"] in ("bind_conc", "bind_key"):
                    chk = (f"limit {kv.get('limit')}: max seen {kv.get('max_running')}, mean "
                           f"{num(kv.get('mean_running')) or 0:.2f} over {kv.get('samples')} samples")
                else:
                    chk = (f"{r['done']} jobs in {kv.get('elapsed_s')} s = {kv.get('achieved_per_s')}/s; bound "
                           f"{kv.get('rate')} × {kv.get('elapsed_s')} + {kv.get('burst')} = {kv.get('bound')}")
                held = "no" if "limit_exceeded" in r["note"].split(",") else "yes"
                print(f"| {self.LVAR[(r['system'], r['variant'])]} | {r['N']} | {r['B']} | {r['rep']} | "
                      f"{cell([num(r['jobs_per_s'])])} | {chk} | {held} | {kv.get('claims_limited', 'n/a')} | "
                      f"{r['log_errors']} |")

    def checks(self):
        print("\n## Notes\n")
        bad = [r for r in self.rows if any(is_failure(n) for n in r["note"].split(","))]
        errs = [r for r in self.rows if (num(r.get("log_errors")) or 0) > 0]
        awa_runs = [r for r in self.rows if r["system"] == "awa"]
        if awa_runs:
            failed = [r for r in awa_runs if "awa_check_failed" in r["note"]]
            print(f"- awa checks after each run (no attempt left open, nothing retried or failed, counters = "
                  f"exact count, no maintenance error): {len(awa_runs) - len(failed)} of {len(awa_runs)} runs passed.")
        print(f"- Runs with a failure flag: {len(bad)}" + ("" if not bad else ": " + "; ".join(
            f"{r['workload']} {r['variant']} {r['system']} N={r['N']} B={r['B']} rep {r['rep']}: {r['note']}" for r in bad)))
        print(f"- Runs with ERROR/PANIC lines in the server log: {len(errs)}" + ("" if not errs else ": " + "; ".join(
            f"{r['workload']} {r['variant']} {r['system']} N={r['N']} B={r['B']} rep {r['rep']}: {r['log_errors']}"
            for r in errs)))

    def print(self):
        self.intro()
        self.w1()
        self.w2()
        self.w3()
        self.w2_nosync()
        self.w4()
        self.cost()
        self.limits()
        self.phases()
        self.empty_claims()
        self.checks()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report.py RAW_TSV")
    rows, meta = load(sys.argv[1])
    if not rows:
        sys.exit(f"{sys.argv[1]}: no measured runs")
    Report(rows, meta, os.path.dirname(os.path.abspath(sys.argv[1]))).print()


if __name__ == "__main__":
    main()
