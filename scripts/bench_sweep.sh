#!/usr/bin/env bash
# The sweep runner's overhead: the 200 points of workloads/sweeps/bench-200.yaml run by the sweep
# (--jobs 1 and --jobs 2) and by hand (the same commands in a shell loop, and two at a time with
# xargs -P 2). Prints wall and CPU seconds of each, the overhead per point and the cores in use.
#   scripts/bench_sweep.sh [TESSERA] [SPEC]
set -euo pipefail
cd "$(dirname "$0")/.."
tessera=$(realpath "${1:-build/cli/tessera}")
spec=${2:-workloads/sweeps/bench-200.yaml}
work=$(mktemp -d /tmp/tessera-bench-sweep-XXXXXX)
trap 'rm -rf "$work"' EXIT

# wall and CPU (user + sys, children included) seconds of a command, as "wall cpu"
timed() { /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" >/dev/null 2>&1 || true
          awk '{printf "%.2f %.2f", $1, $2 + $3}' "$work/time"; }

read -r w1 c1 <<<"$(timed "$tessera" sweep "$spec" --out "$work/jobs1" --jobs 1 --quiet)"
read -r w2 c2 <<<"$(timed "$tessera" sweep "$spec" --out "$work/jobs2" --jobs 2 --quiet)"
cmp -s "$work/jobs1/results.jsonl" "$work/jobs2/results.jsonl" || { echo "results differ between --jobs 1 and 2"; exit 1; }
n=$(wc -l <"$work/jobs1/results.jsonl")

# By hand: the command each point ran (the swept config; --workload and the spec's args fixed).
workload=$(sed -n 's/^workloads: \[\(.*\)\]/\1/p' "$spec")
sed -n 's/.*"key":"\([0-9a-f]*\)".*/\1/p' "$work/jobs1/results.jsonl" >"$work/keys"
mkdir -p "$work/hand"
cat >"$work/one.sh" <<SH
"$tessera" run --config "$work/jobs1/configs/\$1.json" --workload "$workload" --quiet --out "$work/hand/\$1.json" >/dev/null 2>&1 || true
SH
read -r wh ch <<<"$(timed bash -c "while read -r k; do bash '$work/one.sh' \$k; done <'$work/keys'")"
read -r wp cp <<<"$(timed bash -c "xargs -P 2 -n 1 bash '$work/one.sh' <'$work/keys'")"

awk -v n="$n" -v w1="$w1" -v c1="$c1" -v w2="$w2" -v c2="$c2" -v wh="$wh" -v ch="$ch" -v wp="$wp" -v cp="$cp" 'BEGIN {
  printf "points                      %d\n", n
  printf "                            wall s   CPU s   cores busy\n"
  printf "by hand, one at a time     %7.2f %7.2f   %.2f\n", wh, ch, ch / wh
  printf "sweep --jobs 1             %7.2f %7.2f   %.2f\n", w1, c1, c1 / w1
  printf "by hand, xargs -P 2        %7.2f %7.2f   %.2f\n", wp, cp, cp / wp
  printf "sweep --jobs 2             %7.2f %7.2f   %.2f\n", w2, c2, c2 / w2
  printf "overhead per point, --jobs 1 vs by hand:    %+.1f ms wall, %+.1f ms CPU\n", 1000 * (w1 - wh) / n, 1000 * (c1 - ch) / n
  printf "overhead per point, --jobs 2 vs xargs -P 2: %+.1f ms wall, %+.1f ms CPU\n", 1000 * (w2 - wp) / n, 1000 * (c2 - cp) / n
  printf "speedup of --jobs 2 over --jobs 1: %.2fx\n", w1 / w2
}'
