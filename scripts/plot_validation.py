#!/usr/bin/env python3
"""Scatter plot of a `tessera validate-cost` CSV: predicted vs simulated cycles per operator,
one colour per operator class, log-log, with the y = x line and +-5% band.

usage: plot_validation.py VALIDATION.csv OUT.png [--analytical]
Needs Debian's python3-matplotlib (run with /usr/bin/python3)."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    column = "analytical_cycles" if "--analytical" in argv[3:] else "predicted_cycles"
    by_class = {}
    with open(argv[1], newline="") as f:
        for row in csv.DictReader(f):
            sim, pred = float(row["simulated_cycles"]), float(row[column])
            if sim > 0 and pred > 0:
                by_class.setdefault(row["class"], ([], []))
                by_class[row["class"]][0].append(sim)
                by_class[row["class"]][1].append(pred)
    if not by_class:
        sys.exit(f"{argv[1]}: no rows with simulated and predicted cycles")
    fig, ax = plt.subplots(figsize=(6.4, 6.0))
    lo = min(min(s + p) for s, p in by_class.values())
    hi = max(max(s + p) for s, p in by_class.values())
    for cls in sorted(by_class):
        s, p = by_class[cls]
        ax.scatter(s, p, s=14, alpha=0.75, label=f"{cls} ({len(s)})")
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8)
    ax.fill_between([lo, hi], [lo * 0.95, hi * 0.95], [lo * 1.05, hi * 1.05], color="grey", alpha=0.2, label="±5%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("simulated cycles")
    ax.set_ylabel(column.replace("_", " "))
    ax.set_title(argv[1].rsplit("/", 1)[-1])
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=120)


if __name__ == "__main__":
    main(sys.argv)
