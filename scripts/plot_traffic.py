#!/usr/bin/env python3
"""Latency-throughput curve of a `tessera traffic` CSV: average and 99th-percentile latency
against the offered load (flits per node per cycle), accepted throughput on a second axis, and
the channel-load bound as a vertical line.

usage: plot_traffic.py TRAFFIC.csv OUT.png [TITLE]
Needs Debian's python3-matplotlib (run with /usr/bin/python3)."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(argv[1], newline="")))
    if not rows:
        sys.exit(f"{argv[1]}: no rows")
    offered = [float(r["offered_flits"]) for r in rows]
    accepted = [float(r["accepted_flits"]) for r in rows]
    mean = [float(r["latency_mean"]) for r in rows]
    p99 = [float(r["latency_p99"]) for r in rows]
    saturated = [r["saturated"] == "1" for r in rows]
    bound = float(rows[0]["bound_flits"])
    fig, ax = plt.subplots(figsize=(7.0, 4.8))
    ax.plot(offered, mean, "o-", label="mean latency")
    ax.plot(offered, p99, "s--", label="99th percentile")
    for x, y, s in zip(offered, mean, saturated):
        if s:
            ax.annotate("saturated", (x, y), textcoords="offset points", xytext=(0, 8), ha="center", fontsize=7)
    ax.axvline(bound, color="grey", linestyle=":", label=f"channel-load bound {bound:.3f}")
    ax.set_xlabel("offered load (flits / node / cycle)")
    ax.set_ylabel("latency (cycles)")
    ax.set_yscale("log")
    ax2 = ax.twinx()
    ax2.plot(offered, accepted, "^-", color="tab:green", label="accepted throughput")
    ax2.set_ylabel("accepted (flits / node / cycle)")
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper left", fontsize=8)
    ax.set_title(argv[3] if len(argv) > 3 else "latency-throughput")
    fig.tight_layout()
    fig.savefig(argv[2], dpi=120)


if __name__ == "__main__":
    main(sys.argv)
