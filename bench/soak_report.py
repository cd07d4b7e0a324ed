#!/usr/bin/python3
"""bench/soak_report.py CSV PRODUCER_RATE: the per-phase tables and the contract verdicts of a
bench/soak.sh run, as markdown on stdout. Exit status 1 if a contract item fails.

Per phase, from the 1 s samples: a phase runs from the last sample of the previous phase (the
first sample for warmup) to its own last sample; rates are the change of the cumulative
counters over that interval / its length. Dead tuples are the peak, over the phase's samples, of
the largest n_dead_tup among a family's partitions.

Contract (the issue's maintenance acceptance items):
  1. every lease_claim_closures partition at 0 dead tuples, in every sample;
  2. claim-evidence partitions (lease_claim_batches, lease_claims, lease_claim_closure_batches)
     under 200 dead tuples, in every sample;
  3. queue-ring partitions (ready_entries, ready_tombstones,
     ready_claim_attempt_batches, done_entries, receipt_completion_batches) at 0, in every sample;
  4. the rotation ledgers see no UPDATE and no DELETE (n_tup_upd = n_tup_del = 0 at the end);
  5. throughput returns to the producer rate after the idle phase: in recovery and in clean2 the
     completion rate is within 5 % of the producer rate (the enqueue rate measured in the same
     phase; the offered rate is shown too). Recovery may exceed it while a backlog drains, so
     there only a shortfall counts; clean2 must be within 5 % both ways. Whether 2 % holds too is
     printed;
  6. the worker's RSS is flat: private memory (RssAnon) at the end of the run no more than
     max(1 MiB, 5 %) above its value at the end of the clean phase (by then its caches are warm:
     they fill over the first ~100 s). VmRSS also counts the shared buffers the worker touched
     (RssShmem) and mapped libraries (RssFile; LLVM when a query was JIT-compiled), so it is
     shown, not judged. Steps of 2 MiB or more and the first sample with LLVM mapped are listed.
     A run whose clean phase ends before t = 100 s (a smoke run) gets NOT JUDGED here, which
     neither passes nor fails.
Validity (the experiment did what it says): the idle session held an xid in >= 90 % of the
idle_in_tx samples and in no other phase's; the producers reached >= 95 % of the offered rate
in every measured phase; no job failed, was cancelled or went to the DLQ; no maintenance errors.
"""
import csv
import sys

PHASES = ["warmup", "clean", "idle_in_tx", "recovery", "clean2"]
CLOSURES = ["lease_claim_closures"]
CLAIM_EVIDENCE = ["lease_claim_batches", "lease_claims", "lease_claim_closure_batches"]
QUEUE_RING = ["ready_entries", "ready_tombstones", "ready_claim_attempt_batches",
              "done_entries", "receipt_completion_batches"]
OTHER = ["leases", "attempt_state", "deferred_jobs"]
CLK_TCK = 100


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k, v in r.items():
            if k in ("phase", "prune_queue", "prune_claim"):
                continue
            r[k] = float(v)
    return rows


def main():
    rows = load(sys.argv[1])
    offered = float(sys.argv[2])
    out = []
    fails = []
    invalid = []

    bounds = {}
    prev_last = None
    for p in PHASES:
        idx = [i for i, r in enumerate(rows) if r["phase"] == p]
        if not idx:
            continue
        first = prev_last if prev_last is not None else idx[0]
        bounds[p] = (first, idx[-1], idx)
        prev_last = idx[-1]

    stats = {}
    for p, (a, b, idx) in bounds.items():
        ra, rb = rows[a], rows[b]
        dt = rb["t"] - ra["t"]
        s = {"dt": dt}
        s["enq"] = (rb["enqueued"] - ra["enqueued"]) / dt if dt > 0 else 0.0
        s["comp"] = (rb["completed"] - ra["completed"]) / dt if dt > 0 else 0.0
        s["backlog_max"] = max(rows[i]["available"] for i in idx)
        s["backlog_end"] = rb["available"]
        s["running_max"] = max(rows[i]["running"] for i in idx)
        s["qrot"] = rb["queue_gen"] - ra["queue_gen"]
        s["crot"] = rb["claim_gen"] - ra["claim_gen"]
        s["dead"] = {f: max(rows[i]["dead_max_" + f] for i in idx)
                     for f in CLOSURES + CLAIM_EVIDENCE + QUEUE_RING + OTHER}
        s["dead_sum"] = {f: max(rows[i]["dead_sum_" + f] for i in idx)
                         for f in CLOSURES + CLAIM_EVIDENCE + QUEUE_RING + OTHER}
        s["ledger_dead"] = max(rows[i]["ledger_dead"] for i in idx)
        s["ledger_upd"] = rb["ledger_upd"]
        s["ledger_del"] = rb["ledger_del"]
        s["rss"] = (ra["rss_kb"], rb["rss_kb"])
        s["anon"] = (ra["rss_anon_kb"], rb["rss_anon_kb"])
        busy = rb["cpu_busy_jiffies"] - ra["cpu_busy_jiffies"]
        ours = rb["cpu_ours_jiffies"] - ra["cpu_ours_jiffies"]
        s["cpu_ours"] = ours / CLK_TCK / dt if dt > 0 else 0.0
        s["cpu_others"] = max(busy - ours, 0) / CLK_TCK / dt if dt > 0 else 0.0
        s["idle_xid"] = sum(1 for i in idx if rows[i]["idle_xid_age"] > 0)
        s["idle_xid_age_max"] = max(rows[i]["idle_xid_age"] for i in idx)
        s["xmin_age_max"] = max(rows[i]["xmin_age"] for i in idx)
        s["n"] = len(idx)
        stats[p] = s

    # --- per-phase table
    out.append("## Per phase")
    out.append("")
    out.append(f"Producer rate offered: {offered:.0f} jobs/s.")
    out.append("")
    out.append("| phase | s | enqueued jobs/s | completed jobs/s | completed / enqueued | completed / offered | "
               "backlog max / end | running max | queue / claim rotations | idle xid held (samples) | "
               "oldest xmin age max | worker VmRSS start / end MiB | RssAnon start / end MiB | "
               "CPU cores us / others |")
    out.append("|---|---:|---:|---:|---:|---:|---|---:|---|---|---:|---|---|---|")
    for p, s in stats.items():
        out.append("| {} | {:.0f} | {:.1f} | {:.1f} | {:.3f} | {:.3f} | {:.0f} / {:.0f} | {:.0f} | {:.0f} / {:.0f} | "
                   "{} of {} (age max {:.0f}) | {:.0f} | {:.1f} / {:.1f} | {:.2f} / {:.2f} | {:.2f} / {:.2f} |".format(
                       p, s["dt"], s["enq"], s["comp"], s["comp"] / s["enq"] if s["enq"] else 0,
                       s["comp"] / offered, s["backlog_max"], s["backlog_end"], s["running_max"],
                       s["qrot"], s["crot"], s["idle_xid"], s["n"], s["idle_xid_age_max"], s["xmin_age_max"],
                       s["rss"][0] / 1024, s["rss"][1] / 1024, s["anon"][0] / 1024, s["anon"][1] / 1024,
                       s["cpu_ours"], s["cpu_others"]))
    out.append("")

    # --- dead tuples table
    out.append("## Peak dead tuples per family (largest partition; in parentheses: the family's sum)")
    out.append("")
    out.append("| family | group | " + " | ".join(stats.keys()) + " |")
    out.append("|---|---|" + "---:|" * len(stats))
    groups = ([(f, "closures: must be 0") for f in CLOSURES] +
              [(f, "claim evidence: must be < 200") for f in CLAIM_EVIDENCE] +
              [(f, "queue ring: must be 0") for f in QUEUE_RING] +
              [(f, "not in the contract") for f in OTHER])
    for f, g in groups:
        out.append(f"| {f} | {g} | " + " | ".join(
            "{:.0f} ({:.0f})".format(s["dead"][f], s["dead_sum"][f]) for s in stats.values()) + " |")
    out.append("| ring ledgers (3 tables) | n_dead_tup, summed | " +
               " | ".join("{:.0f}".format(s["ledger_dead"]) for s in stats.values()) + " |")
    out.append("| ring ledgers (3 tables) | n_tup_upd / n_tup_del at the phase's end: must be 0 | " +
               " | ".join("{:.0f} / {:.0f}".format(s["ledger_upd"], s["ledger_del"]) for s in stats.values()) + " |")
    out.append("")

    # --- contract
    def peak(fams):
        return max(max(r["dead_max_" + f] for r in rows) for f in fams)

    def where(fams):
        hits = [f"{f} {r['phase']} t={r['t']:.0f}s: {r['dead_max_' + f]:.0f}"
                for f in fams for r in rows if r["dead_max_" + f] > 0]
        return "; ".join(hits[:5]) + (" ..." if len(hits) > 5 else "")

    items = []
    v = peak(CLOSURES)
    items.append(("every lease_claim_closures partition at 0 dead tuples", v == 0,
                  f"peak {v:.0f}" + ("" if v == 0 else f" ({where(CLOSURES)})")))
    v = peak(CLAIM_EVIDENCE)
    items.append(("claim-evidence partitions (lease_claim_batches, lease_claims, lease_claim_closure_batches) "
                  "under 200 dead tuples", v < 200, f"peak {v:.0f}"))
    v = peak(QUEUE_RING)
    items.append(("queue-ring partitions (6 families) at 0 dead tuples", v == 0,
                  f"peak {v:.0f}" + ("" if v == 0 else f" ({where(QUEUE_RING)})")))
    last = rows[-1]
    ok = last["ledger_upd"] == 0 and last["ledger_del"] == 0
    items.append(("ring ledgers: no UPDATE, no DELETE", ok,
                  f"n_tup_upd {last['ledger_upd']:.0f}, n_tup_del {last['ledger_del']:.0f}, "
                  f"n_dead_tup peak {max(r['ledger_dead'] for r in rows):.0f}"))
    detail = []
    ok = True
    for p in ("recovery", "clean2"):
        if p not in stats:
            ok = False
            detail.append(f"{p}: no samples")
            continue
        s = stats[p]
        dev = s["comp"] / s["enq"] - 1 if s["enq"] else -1
        good = dev >= -0.05 if p == "recovery" else abs(dev) <= 0.05
        ok = ok and good
        detail.append(f"{p}: {s['comp']:.1f} completed vs {s['enq']:.1f} enqueued jobs/s ({dev * 100:+.2f} %, "
                      f"{'within' if abs(dev) <= 0.02 else 'outside'} 2 %), {s['comp'] / offered * 100:.1f} % of offered")
    items.append(("throughput back at the producer rate after the idle phase (5 % bound)", ok, "; ".join(detail)))
    if "clean" in stats and "clean2" in stats and rows[bounds["clean"][1]]["t"] < 100:
        # A short run (a smoke test): the baseline would be taken while the caches still fill.
        items.append(("maintenance worker RSS flat", None,
                      f"not judged: the clean phase ended at t={rows[bounds['clean'][1]]['t']:.0f}s, before the "
                      "worker's caches are warm (~100 s); run with the default phase lengths"))
    elif "clean" in stats and "clean2" in stats:
        # Baseline: the end of the clean phase (2.5 min of load with the defaults): by then the
        # worker's caches hold every ring partition and plan (they fill over the first ~100 s).
        base = rows[bounds["clean"][1]]
        last = rows[-1]
        first = rows[0]
        a0, a1 = base["rss_anon_kb"], last["rss_anon_kb"]
        ok = a1 - a0 <= max(1024, 0.05 * a0)
        # Least-squares slope of RssAnon from the baseline on, kB per minute.
        pts = [(r["t"], r["rss_anon_kb"]) for r in rows[bounds["clean"][1]:]]
        n = len(pts)
        mt = sum(t for t, _ in pts) / n
        ma = sum(a for _, a in pts) / n
        den = sum((t - mt) ** 2 for t, _ in pts)
        slope = sum((t - mt) * (a - ma) for t, a in pts) / den * 60 if den else 0.0
        steps = []
        for i in range(1, len(rows)):
            d = rows[i]["rss_anon_kb"] - rows[i - 1]["rss_anon_kb"]
            if d >= 2048:
                steps.append(f"+{d / 1024:.1f} MiB at t={rows[i]['t']:.0f}s ({rows[i]['phase']})")
        jit = [r for r in rows if r.get("worker_llvm", 0) > 0]
        jit_note = ("LLVM (JIT) mapped into the worker from t={:.0f}s ({})".format(jit[0]["t"], jit[0]["phase"])
                    if jit else "no JIT in the worker (LLVM never mapped)")
        items.append(("maintenance worker RSS flat: RssAnon growth from the end of clean to the end of the run "
                      "within max(1 MiB, 5 %)", ok,
                      f"RssAnon {a0 / 1024:.2f} -> {a1 / 1024:.2f} MiB (slope {slope:+.1f} kB/min); "
                      f"whole run RssAnon {first['rss_anon_kb'] / 1024:.2f} -> {a1 / 1024:.2f} MiB, "
                      f"VmRSS {first['rss_kb'] / 1024:.1f} -> {last['rss_kb'] / 1024:.1f} MiB "
                      f"(RssShmem {first['rss_shmem_kb'] / 1024:.1f} -> {last['rss_shmem_kb'] / 1024:.1f}, "
                      f"RssFile {first['rss_file_kb'] / 1024:.1f} -> {last['rss_file_kb'] / 1024:.1f}); "
                      f"steps of 2 MiB or more: {', '.join(steps) if steps else 'none'}; {jit_note}"))
    else:
        items.append(("maintenance worker RSS flat", False, "phases missing"))

    out.append("## Contract")
    out.append("")
    for name, ok, d in items:
        out.append(f"- **{'NOT JUDGED' if ok is None else 'PASS' if ok else 'FAIL'}** {name}: {d}")
        if ok is False:
            fails.append(name)

    # --- validity of the experiment
    if "idle_in_tx" in stats:
        s = stats["idle_in_tx"]
        if s["idle_xid"] < 0.9 * s["n"]:
            invalid.append(f"the idle session held an xid in only {s['idle_xid']} of {s['n']} idle_in_tx samples")
    for p, s in stats.items():
        if p != "idle_in_tx" and s["idle_xid"] > 1:
            invalid.append(f"{s['idle_xid']} samples of {p} saw a session idle in transaction")
        if p != "warmup" and s["enq"] < 0.95 * offered:
            invalid.append(f"{p}: producers reached {s['enq']:.1f} jobs/s, under 95 % of the offered {offered:.0f}")
    bad = [r for r in rows if r["failed"] or r["cancelled"] or r["dlq"] or r["scheduled"] or r["retryable"]]
    if bad:
        invalid.append(f"{len(bad)} samples with failed/cancelled/dlq/scheduled/retryable jobs "
                       "(the completed count assumes none)")
    if rows[-1]["maint_errors"]:
        invalid.append(f"maintenance_status reports {rows[-1]['maint_errors']:.0f} errors")
    pids = sorted({int(r["worker_pid"]) for r in rows})
    if len(pids) != 1 or pids[0] == 0:
        invalid.append(f"maintenance worker pids seen: {pids}")
    out.append("")
    if invalid:
        for m in invalid:
            out.append(f"- **INVALID RUN** {m}")
    else:
        out.append("- Run validity: the idle session held an xid through idle_in_tx and only then; the producers "
                   "reached >= 95 % of the offered rate in every measured phase; no job failed, retried or was "
                   "cancelled; one maintenance worker (pid {}) for the whole run, 0 step errors.".format(pids[0]))
    print("\n".join(out))
    return 1 if fails or invalid else 0


if __name__ == "__main__":
    sys.exit(main())
