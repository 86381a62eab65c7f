#!/usr/bin/env bash
# End-to-end checks of the tessera command line: exit codes, messages, output files.
set -u
tessera="$1"; src="$2"; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAILED: $1"; fail=1; else echo "ok: $1"; fi; }

"$tessera" --help >"$tmp/help" 2>&1
check "help lists simulate" "grep -q simulate $tmp/help"

"$tessera" simulate --config "$src/configs/ipu-mk2.json" --program "$src/workloads/programs/example-small.json" \
  --out "$tmp/r.json" --trace "$tmp/t.json" >"$tmp/out" 2>&1
check "simulate exits 0" "[ $? -eq 0 ]"
check "results file has total_cycles 5972" "grep -q '\"total_cycles\": 5972' $tmp/r.json"
check "summary printed" "grep -q 'total 5972 cycles' $tmp/out"
check "trace is JSON with events" "grep -q traceEvents $tmp/t.json"

printf '{"format":"tessera-program","version":1,"cores":[{"core":0,"items":[{"op":"send","peer":1,"buffer":"b"}]}]}' >"$tmp/bad.json"
"$tessera" simulate --config "$src/configs/ipu-mk2.json" --program "$tmp/bad.json" >"$tmp/out" 2>"$tmp/err"
check "bad program exits non-zero" "[ $? -ne 0 ]"
check "error names file, item and buffer" "grep -q \"bad.json: cores\\[0\\].items\\[0\\]: core 0: buffer 'b' is not allocated\" $tmp/err"

"$tessera" simulate --config "$tmp/missing.json" --program "$tmp/bad.json" 2>"$tmp/err"
check "missing config exits non-zero" "[ $? -ne 0 ]"
check "missing config is named" "grep -q 'missing.json: cannot open file' $tmp/err"
exit $fail
