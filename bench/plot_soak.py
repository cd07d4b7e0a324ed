#!/usr/bin/python3
"""bench/plot_soak.py CSV OUTDIR [PRODUCER_RATE]: draws a bench/soak.sh run (its 1 s samples) as
three PNGs in OUTDIR, each with the phases shaded:
  soak_rates.png        enqueue and completion rate per second (5 s moving mean over the raw
                        per-second rates), the offered producer rate, and the backlog;
  soak_dead_tuples.png  n_dead_tup of the largest partition of each ring family (top) and of the
                        plain tables and rotation ledgers (bottom), symmetric-log scale so 0 shows;
  soak_worker_rss.png   the maintenance worker's VmRSS, RssAnon, RssShmem and RssFile, and when LLVM
                        (JIT) was first mapped into it.
Needs matplotlib (Debian's python3-matplotlib, which scripts/install-deps.sh installs; without it
bench/soak.sh writes its report without figures).
"""
import csv
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PHASE_COLORS = {"warmup": "#eeeeee", "clean": "#e3f2e1", "idle_in_tx": "#fbe3d6",
                "recovery": "#e1ecf7", "clean2": "#e3f2e1"}
RING_FAMILIES = ["lease_claim_closures", "lease_claim_closure_batches", "lease_claim_batches", "lease_claims",
                 "ready_entries", "ready_tombstones", "ready_claim_attempt_batches",
                 "done_entries", "receipt_completion_batches", "leases"]
PLAIN = ["attempt_state", "deferred_jobs"]


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    num = {}
    for k in rows[0]:
        if k in ("phase", "prune_queue", "prune_claim"):
            continue
        num[k] = [float(r[k]) for r in rows]
    return rows, num


def phase_bands(ax, rows, t, label=True):
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i]["phase"] != rows[start]["phase"]:
            p = rows[start]["phase"]
            t0 = t[start - 1] if start > 0 else t[0]
            t1 = t[i - 1]
            ax.axvspan(t0, t1, color=PHASE_COLORS.get(p, "#ffffff"), zorder=0, lw=0)
            if label:
                ax.text((t0 + t1) / 2, 1.0, p, transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                        fontsize=8, color="#444444")
            start = i


def per_second(t, c):
    out = [float("nan")]
    for i in range(1, len(t)):
        dt = t[i] - t[i - 1]
        out.append((c[i] - c[i - 1]) / dt if dt > 0 else float("nan"))
    return out


def moving_mean(v, w=5):
    out = []
    for i in range(len(v)):
        xs = [x for x in v[max(0, i - w + 1):i + 1] if x == x]
        out.append(sum(xs) / len(xs) if xs else float("nan"))
    return out


def main():
    rows, num = load(sys.argv[1])
    outdir = sys.argv[2]
    offered = float(sys.argv[3]) if len(sys.argv) > 3 else None
    os.makedirs(outdir, exist_ok=True)
    t = num["t"]

    # --- rates
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    enq = per_second(t, num["enqueued"])
    comp = per_second(t, num["completed"])
    phase_bands(ax, rows, t)
    phase_bands(ax2, rows, t, label=False)
    ax.plot(t, enq, color="#1f77b4", lw=0.5, alpha=0.35)
    ax.plot(t, comp, color="#d62728", lw=0.5, alpha=0.35)
    ax.plot(t, moving_mean(enq), color="#1f77b4", lw=3.0, label="enqueued (5 s mean; thin: per second)")
    ax.plot(t, moving_mean(comp), color="#d62728", lw=1.4, ls="--", label="completed (5 s mean; thin: per second)")
    if offered:
        ax.axhline(offered, color="black", ls="--", lw=1, label=f"offered producer rate ({offered:.0f}/s)")
    ax.set_ylabel("jobs / s")
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("awa soak: enqueue and completion rate per phase (maintenance worker on)", pad=16)
    ax2.plot(t, num["available"], color="#2ca02c", lw=1, label="backlog (available)")
    ax2.plot(t, num["running"], color="#9467bd", lw=1, label="running")
    ax2.set_ylabel("jobs")
    ax2.set_xlabel("time since the load started (s)")
    ax2.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "soak_rates.png"), dpi=110)
    plt.close(fig)

    # --- dead tuples
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(13, 8), sharex=True)
    phase_bands(ax, rows, t)
    phase_bands(ax2, rows, t, label=False)
    cmap = plt.get_cmap("tab20")
    for i, f in enumerate(RING_FAMILIES):
        v = num["dead_max_" + f]
        ax.plot(t, v, color=cmap(i), lw=1.4 if max(v) > 0 else 1.0,
                ls="-" if max(v) > 0 else ":", label=f"{f} (peak {max(v):.0f})")
    ax.axhline(200, color="black", ls="--", lw=1, label="claim-evidence limit (200)")
    ax.set_yscale("symlog", linthresh=1)
    ax.set_ylim(-0.5, max(1000, max(max(num["dead_max_" + f]) for f in RING_FAMILIES) * 2))
    ax.set_ylabel("n_dead_tup, largest partition")
    ax.set_title("awa soak: dead tuples per ring family (max over the family's partitions)", pad=16)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    for i, f in enumerate(PLAIN):
        ax2.plot(t, num["dead_max_" + f], color=cmap(12 + i), lw=1.2, label=f"{f} n_dead_tup")
    ax2.plot(t, num["ledger_dead"], color="#7f7f7f", lw=1.2, label="ring ledgers n_dead_tup (3 tables)")
    ax2.plot(t, num["ledger_upd"], color="#bcbd22", lw=1.2, ls="--", label="ring ledgers n_tup_upd")
    ax2.plot(t, num["ledger_del"], color="#17becf", lw=1.2, ls=":", label="ring ledgers n_tup_del")
    ax2.set_yscale("symlog", linthresh=1)
    ax2.set_ylim(-0.5, max(10, max(max(num["dead_max_" + f]) for f in PLAIN) * 2,
                           max(num["ledger_dead"]) * 2, max(num["ledger_upd"]) * 2, max(num["ledger_del"]) * 2))
    ax2.set_ylabel("tuples")
    ax2.set_xlabel("time since the load started (s)")
    ax2.set_title("plain tables and rotation ledgers", fontsize=9)
    ax2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "soak_dead_tuples.png"), dpi=110)
    plt.close(fig)

    # --- worker RSS
    fig, ax = plt.subplots(figsize=(11, 4.5))
    phase_bands(ax, rows, t)
    ax.plot(t, [v / 1024 for v in num["rss_kb"]], color="#1f77b4", lw=1.5, label="VmRSS")
    ax.plot(t, [v / 1024 for v in num["rss_anon_kb"]], color="#d62728", lw=1.5, label="RssAnon (private memory)")
    ax.plot(t, [v / 1024 for v in num["rss_shmem_kb"]], color="#2ca02c", lw=1.0, ls="--",
            label="RssShmem (shared buffers touched)")
    if "rss_file_kb" in num:
        ax.plot(t, [v / 1024 for v in num["rss_file_kb"]], color="#ff7f0e", lw=1.0, ls=":",
                label="RssFile (mapped files: binaries, libraries)")
    if "worker_llvm" in num:
        jit = [x for x, v in zip(t, num["worker_llvm"]) if v > 0]
        if jit:
            ax.axvline(jit[0], color="black", ls="-.", lw=1, label=f"LLVM (JIT) mapped from t={jit[0]:.0f}s")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("MiB")
    ax.set_xlabel("time since the load started (s)")
    ax.set_title("awa soak: maintenance worker memory (/proc/<pid>/status)", pad=16)
    ax.legend(loc="center right", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "soak_worker_rss.png"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
