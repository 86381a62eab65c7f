#!/usr/bin/python3
"""Plot a `tessera partition --results` file: the best throughput against samples (the search's
convergence, with out-of-memory samples marked) and the per-chip times of the final placement.

  scripts/plot_partition.py results.json [--out partition.png]

Needs python3-matplotlib.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    try:
        with open(args.results) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{args.results}: {e}")
    for key in ("chips", "pipeline"):
        if key not in r:
            sys.exit(f"{args.results}: no \"{key}\": expected the results file of tessera partition --results")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    conv = r.get("convergence", [])
    fig, axes = plt.subplots(1, 2 if conv else 1, figsize=(11 if conv else 6, 4), squeeze=False)
    if conv:
        ax = axes[0][0]
        ax.plot([s["sample"] for s in conv], [s["best_per_second"] for s in conv], label="best so far")
        ax.scatter([s["sample"] for s in conv if s["fits"]], [s["throughput_per_second"] for s in conv if s["fits"]],
                   s=8, alpha=0.5, label="sample")
        oom = [s["sample"] for s in conv if not s["fits"]]
        ax.scatter(oom, [0] * len(oom), s=10, marker="x", color="tab:red", label="out of memory")
        ax.set_xlabel("samples")
        ax.set_ylabel(f"micro-batches/s ({r.get('score_by', '?')})")
        ax.set_title(f"{r['workload']} on {r['config']}: {r.get('search', '?')} search")
        ax.legend()
    ax = axes[0][-1]
    chips = r["chips"]
    xs = [c["chip"] for c in chips]
    ax.bar([x - 0.2 for x in xs], [c["predicted_cycles"] for c in chips], width=0.4, label="predicted")
    ax.bar([x + 0.2 for x in xs], [c["simulated_cycles"] for c in chips], width=0.4, label="simulated alone")
    ax.axhline(r["pipeline"]["interval_cycles"], color="black", linestyle="--", label="pipeline interval")
    ax.set_xlabel("chip")
    ax.set_ylabel("cycles per micro-batch")
    ax.legend()
    fig.tight_layout()
    out = args.out or args.results.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
