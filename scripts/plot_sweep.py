#!/usr/bin/python3
"""Plots and tables from a sweep's results.csv (tessera sweep, docs/sweep.md).

Usage: /usr/bin/python3 scripts/plot_sweep.py DIR_OR_CSV KIND ... [--out FILE.png|.svg]

  line X Y [--group G]        Y over axis X, one line per value of G (default: every other axis)
  heatmap X Y Z               Z over axes X and Y (mean where other axes vary), e.g. utilisation
                              over topology x memory bandwidth, DFModel style
  bars X Y --baseline V [--by A]
                              speedup of each X over X = V (Y_baseline / Y), per value of A
  pareto X Y                  points by X and Y (both minimised), the Pareto front drawn
  table Y [--top N] [--max]   Markdown table of the N best points by Y (smallest, or --max)
  grid ROWS COLS Z [--where A=V ...]
                              Markdown table of Z with a row per value of ROWS (axes, comma-
                              separated) and a column per value of COLS; a failed point shows
                              its status; the other axes must be fixed by --where

Only rows with status "ok" are used; the others are counted in the title. Matplotlib from
Debian (python3-matplotlib); PNG or SVG by the output's extension (default DIR/<kind>.png).
"""
import argparse
import collections
import csv
import math
import os
import sys


def load(path):
    if os.path.isdir(path):
        path = os.path.join(path, "results.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no rows")
    ok = [r for r in rows if r["status"] == "ok"]
    return path, rows, ok


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def need(rows, *cols):
    for c in cols:
        if c not in rows[0]:
            sys.exit(f"no column '{c}' in results.csv; columns: {', '.join(rows[0].keys())}")


def axis_columns(rows):
    cols = list(rows[0].keys())
    return cols[3:cols.index("error")]  # point, key, status, <axes>, error, <results>


def sort_key(v):
    v = num(v)
    return (0, v, "") if isinstance(v, float) else (1, 0.0, v)


def plot_line(ax, ok, a):
    groups = collections.defaultdict(list)
    others = [c for c in axis_columns(ok) if c != a.x]
    for r in ok:
        g = r[a.group] if a.group else ", ".join(f"{c}={r[c]}" for c in others)
        groups[g].append((num(r[a.x]), num(r[a.y])))
    for g in sorted(groups, key=sort_key):
        pts = sorted(groups[g])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=g)
    ax.set_xlabel(a.x)
    ax.set_ylabel(a.y)
    if len(groups) > 1:
        ax.legend(fontsize=7)


def plot_heatmap(ax, ok, a):
    cells = collections.defaultdict(list)
    for r in ok:
        cells[(r[a.x], r[a.y])].append(num(r[a.z]))
    xs = sorted({k[0] for k in cells}, key=sort_key)
    ys = sorted({k[1] for k in cells}, key=sort_key)
    grid = [[sum(cells[(x, y)]) / len(cells[(x, y)]) if (x, y) in cells else math.nan for x in xs] for y in ys]
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(xs)), xs, rotation=45)
    ax.set_yticks(range(len(ys)), ys)
    ax.set_xlabel(a.x)
    ax.set_ylabel(a.y)
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            if not math.isnan(v):
                ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7, color="w")
    ax.figure.colorbar(im, ax=ax, label=a.z)


def plot_bars(ax, ok, a):
    by = collections.defaultdict(dict)
    for r in ok:
        by[r[a.by] if a.by else ""][r[a.x]] = num(r[a.y])
    labels = sorted(by, key=sort_key)
    xs = sorted({x for d in by.values() for x in d if x != a.baseline}, key=sort_key)
    width = 0.8 / max(1, len(xs))
    for k, x in enumerate(xs):
        vals = [by[l][a.baseline] / by[l][x] if a.baseline in by[l] and x in by[l] else 0 for l in labels]
        ax.bar([i + k * width for i in range(len(labels))], vals, width, label=f"{a.x}={x}")
    ax.axhline(1.0, color="k", lw=0.5)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(labels))], labels, rotation=45)
    ax.set_ylabel(f"speedup over {a.x}={a.baseline} ({a.y})")
    ax.legend(fontsize=7)


def plot_pareto(ax, ok, a):
    pts = sorted((num(r[a.x]), num(r[a.y])) for r in ok)
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=12, alpha=0.6)
    front, best = [], math.inf
    for x, y in pts:
        if y < best:
            front.append((x, y))
            best = y
    ax.step([p[0] for p in front], [p[1] for p in front], where="post", color="r", label="Pareto front")
    ax.set_xlabel(a.x)
    ax.set_ylabel(a.y)
    ax.legend()


def table(ok, a):
    need(ok, a.y)
    rows = sorted(ok, key=lambda r: num(r[a.y]), reverse=a.max)[: a.top]
    cols = axis_columns(ok)
    print("| " + " | ".join(cols + [a.y]) + " |")
    print("|" + "---|" * (len(cols) + 1))
    for r in rows:
        print("| " + " | ".join([r[c] for c in cols] + [r[a.y]]) + " |")


def grid(rows, a):
    row_axes = a.rows.split(",")
    need(rows, *row_axes, a.cols, a.z)
    for w in a.where:
        k, _, v = w.partition("=")
        need(rows, k)
        rows = [r for r in rows if r[k] == v or num(r[k]) == num(v)]
    cols = sorted({r[a.cols] for r in rows}, key=sort_key)
    keys = sorted({tuple(r[c] for c in row_axes) for r in rows}, key=lambda t: [sort_key(v) for v in t])
    cells = {}
    for r in rows:
        k = (tuple(r[c] for c in row_axes), r[a.cols])
        if k in cells:
            same = [x for x in rows if (tuple(x[c] for c in row_axes), x[a.cols]) == k]
            free = [c for c in axis_columns(rows) if len({x[c] for x in same}) > 1]
            sys.exit(f"more than one point per cell: fix the axes {', '.join(free)} with --where AXIS=VALUE")
        cells[k] = r[a.z] if r["status"] == "ok" else r["status"]
    print("| " + " | ".join(row_axes) + " | " + " | ".join(f"{a.cols} {c}" for c in cols) + " |")
    print("|" + "---|" * (len(row_axes) + len(cols)))
    for k in keys:
        print("| " + " | ".join(k) + " | " + " | ".join(cells.get((k, c), "") for c in cols) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    sub = ap.add_subparsers(dest="kind", required=True)
    p = sub.add_parser("line"); p.add_argument("x"); p.add_argument("y"); p.add_argument("--group")
    p = sub.add_parser("heatmap"); p.add_argument("x"); p.add_argument("y"); p.add_argument("z")
    p = sub.add_parser("bars"); p.add_argument("x"); p.add_argument("y")
    p.add_argument("--baseline", required=True); p.add_argument("--by")
    p = sub.add_parser("pareto"); p.add_argument("x"); p.add_argument("y")
    p = sub.add_parser("table"); p.add_argument("y"); p.add_argument("--top", type=int, default=10)
    p.add_argument("--max", action="store_true")
    p = sub.add_parser("grid"); p.add_argument("rows"); p.add_argument("cols"); p.add_argument("z")
    p.add_argument("--where", action="append", default=[], metavar="AXIS=VALUE")
    for s in sub.choices.values():
        s.add_argument("--out")
    a = ap.parse_args()
    path, rows, ok = load(a.results)
    if a.kind == "grid":
        return grid(rows, a)
    if not ok:
        sys.exit(f"{path}: no point finished with status ok")
    if a.kind == "table":
        return table(ok, a)
    need(ok, *[c for c in (a.x, a.y, getattr(a, "z", None), getattr(a, "group", None), getattr(a, "by", None)) if c])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    {"line": plot_line, "heatmap": plot_heatmap, "bars": plot_bars, "pareto": plot_pareto}[a.kind](ax, ok, a)
    failed = len(rows) - len(ok)
    ax.set_title(f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}: {len(ok)} points"
                 + (f" ({failed} failed, not shown)" if failed else ""), fontsize=9)
    fig.tight_layout()
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(path)), f"{a.kind}.png")
    fig.savefig(out, metadata={"Date": None} if out.endswith(".svg") else None)
    print(f"{out} written")


if __name__ == "__main__":
    sys.exit(main())
