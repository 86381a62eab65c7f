#!/usr/bin/env bash
# End-to-end checks of the tessera command line: exit codes, messages, output files.
set -u
# Usage: cli_test.sh TESSERA SOURCE_DIR [PART]. ctest runs each part as a test of its own
# (test/CMakeLists.txt), so that two of them run at once; without PART, all of them run.
tessera="$1"; src="$2"; part="${3:-all}"; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
parts="basics cost collective traffic torch torch-t10 torch-vgm time-order sweep partition parallel pipeline"
case " $parts all " in *" $part "*) ;; *) echo "cli_test.sh: unknown part '$part': expected one of: $parts, all" >&2; exit 2;; esac
want() { [ "$part" = all ] || [ "$part" = "$1" ]; }
fail=0
check() { if ! eval "$2"; then echo "FAILED: $1"; fail=1; else echo "ok: $1"; fi; }

if want basics; then
"$tessera" --help >"$tmp/help" 2>&1
check "help lists simulate" "grep -q simulate $tmp/help"
# hostile input found by the audit of 2026-11-29 (each crashed, hung, or gave a wrong answer)
cp "$src/workloads/programs/example-small.json" "$tmp/same.json"
"$tessera" program convert "$tmp/same.json" "$tmp/same.json" >"$tmp/out" 2>&1
check "program convert onto its own input is refused and the input kept" "[ $? -eq 1 ] && grep -q 'are the same file' $tmp/out && cmp -s $tmp/same.json $src/workloads/programs/example-small.json"
"$tessera" gen ring --cores 3000000 >"$tmp/out" 2>&1
check "gen: a ring of 3 million cores is refused (it grew to 7 GB)" "[ $? -eq 1 ]"
"$tessera" compile --config "$src/configs/ipu-mk2.json" --workload nerf --reserve-bytes -1 >"$tmp/out" 2>&1
check "compile: a negative reserve is refused (it wrapped round)" "[ $? -eq 1 ] && grep -q 'expected a number >= 0, got -1' $tmp/out"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload nerf --force-calibration >"$tmp/out" 2>&1
check "--force-calibration without a calibration is named, not ignored" "[ $? -eq 1 ] && grep -q 'give --calibration' $tmp/out"
"$tessera" calibrate --config "$src/configs/mesh-8x8.json" --hold-out-config "$src/configs/mesh-8x8.json" --out "$tmp/k.json" >"$tmp/out" 2>&1
check "calibrate: a held-out config that is also fitted is named" "[ $? -eq 1 ] && grep -q 'also given as --config' $tmp/out"
TESSERA_MEMORY_LIMIT_GB=inf "$tessera" --help >"$tmp/out" 2>&1
check "an infinite memory limit is a named error (std::bad_alloc before)" "[ $? -eq 1 ] && grep -q 'TESSERA_MEMORY_LIMIT_GB=.inf.: expected 1 .. 1e6 GiB' $tmp/out"

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
# Compiler: compile writes a program that simulate runs; run prints the operator table and
# checks values in functional mode; bad input names what is wrong.
"$tessera" compile --config "$src/configs/ipu-mk2.json" --workload "$src/workloads/tiny-mlp.json" --out "$tmp/p.json" >"$tmp/out" 2>&1
check "compile exits 0" "[ $? -eq 0 ]"
"$tessera" simulate --config "$src/configs/ipu-mk2.json" --program "$tmp/p.json" --out "$tmp/r2.json" >"$tmp/out" 2>&1
check "compiled program simulates" "[ $? -eq 0 ] && grep -q '\"operators\"' $tmp/r2.json"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload "$src/workloads/tiny-mlp.json" --functional --out "$tmp/r3.json" >"$tmp/out" 2>&1
check "functional run matches the reference" "grep -q 'outputs match the reference' $tmp/out"
check "operator table printed" "grep -q '^fc1 ' $tmp/out"
check "results carry the operator table" "grep -q operator_table $tmp/r3.json"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload nerf --planner vgm --quiet >"$tmp/out" 2>&1
check "built-in model runs with vgm" "[ $? -eq 0 ] && grep -q 'vgm planner' $tmp/out"
# The paper's reconciliation alone keeps the fastest-plan choice; the default says which it kept.
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload nerf --quiet --paper-reconciliation --out "$tmp/pr.json" >/dev/null 2>&1
check "--paper-reconciliation keeps the fastest plans" "[ $? -eq 0 ] && grep -q '\"plan_choice\": \"fastest\"' $tmp/pr.json"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload nerf --quiet --layout-following none --out "$tmp/lf.json" >/dev/null 2>&1
check "--layout-following none is what the results say" "[ $? -eq 0 ] && grep -q '\"layout_following\": \"none\"' $tmp/lf.json"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload nerf --quiet --no-look-ahead --out "$tmp/nla.json" >/dev/null 2>&1
check "--no-look-ahead keeps the search's own states" "[ $? -eq 0 ] && grep -q '\"plan_choice\"' $tmp/nla.json && ! grep -q 'looked ahead' $tmp/nla.json"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload nerf --quiet --layout-following sometimes >"$tmp/out" 2>&1
check "--layout-following: an unknown mode is named, exit 1" "[ $? -eq 1 ] && grep -q 'layout-following' $tmp/out"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload nerf --planner vgm --quiet --out "$tmp/pv.json" >/dev/null 2>&1
check "vgm results carry no plan_choice" "[ $? -eq 0 ] && ! grep -q plan_choice $tmp/pv.json"
# Fast-forward: NeRF's stretches between global barriers repeat; replaying them gives the same
# results file as simulating every one (3471 cycles), but for the fast_forward counts.
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload nerf --quiet --out "$tmp/ff.json" >/dev/null 2>&1
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload nerf --quiet --out "$tmp/noff.json" --no-fast-forward >/dev/null 2>&1
check "fast-forward replays and changes nothing else" "/usr/bin/python3 -c \"
import json, sys
a, b = json.load(open('$tmp/ff.json')), json.load(open('$tmp/noff.json'))
ff = a.pop('fast_forward')
sys.exit(0 if a == b and ff['replayed'] == 3 and a['total_cycles'] == 3471 else 1)\""
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload no-such-model >"$tmp/out" 2>"$tmp/err"
check "unknown workload exits non-zero" "[ $? -ne 0 ] && grep -q \"workload 'no-such-model'\" $tmp/err"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload "$src/workloads/tiny-mlp.json" --batch 4 >"$tmp/out" 2>"$tmp/err"
check "a batch size for a workload JSON is named, not ignored" "[ $? -eq 1 ] && grep -q 'a workload JSON has its own shapes' $tmp/err"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload llama2-13b --batch 64 >"$tmp/out" 2>"$tmp/err"
check "a model that cannot fit says by how much" "[ $? -ne 0 ] && grep -q 'does not fit' $tmp/err && grep -q 'short by' $tmp/err"
fi

if want cost; then
# Cost model: calibrate a small run (one class), use it, validate with a plot; another config's
# calibration is refused unless forced.
"$tessera" calibrate --config "$src/configs/mesh-10x12.json" --ops elementwise --samples 12 --out "$tmp/cal.json" >"$tmp/out" 2>"$tmp/err"
check "calibrate exits 0 with progress" "[ $? -eq 0 ] && grep -q 'calibrate: elementwise: 12/12 samples' $tmp/err"
check "calibration file names its config" "grep -q '\"name\": \"mesh-10x12\"' $tmp/cal.json && grep -q fingerprint $tmp/cal.json"
"$tessera" run --config "$src/configs/mesh-10x12.json" --workload "$src/workloads/tiny-mlp.json" --calibration "$tmp/cal.json" --out "$tmp/r4.json" --quiet >"$tmp/out" 2>&1
check "run with a calibration" "[ $? -eq 0 ] && grep -q '\"cost_model\": \"$tmp/cal.json\"' $tmp/r4.json"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload "$src/workloads/tiny-mlp.json" --calibration "$tmp/cal.json" >"$tmp/out" 2>"$tmp/err"
check "another config's calibration is refused" "[ $? -ne 0 ] && grep -q \"fitted on config 'mesh-10x12'\" $tmp/err"
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload "$src/workloads/tiny-mlp.json" --calibration "$tmp/cal.json" --force-calibration --quiet >"$tmp/out" 2>&1
check "--force-calibration uses it anyway" "[ $? -eq 0 ]"
"$tessera" run --config "$src/configs/mesh-10x12.json" --workload "$src/workloads/tiny-mlp.json" --calibration "$tmp/cal.json" --planner vgm >"$tmp/out" 2>"$tmp/err"
check "vgm refuses a calibration" "[ $? -ne 0 ] && grep -q 'vgm baseline keeps the analytical model' $tmp/err"
"$tessera" run --config "$src/configs/mesh-10x12.json" --workload "$src/workloads/tiny-mlp.json" --price-by simulate --out "$tmp/r5.json" --quiet >"$tmp/out" 2>&1
check "run priced by the oracle" "[ $? -eq 0 ] && grep -q '\"cost_model\": \"simulate (oracle)\"' $tmp/r5.json"
"$tessera" run --config "$src/configs/mesh-10x12.json" --workload "$src/workloads/tiny-mlp.json" --price-by simulate --calibration "$tmp/cal.json" >"$tmp/out" 2>"$tmp/err"
check "the oracle and a calibration are one or the other" "[ $? -ne 0 ] && grep -q 'drop --calibration' $tmp/err"
"$tessera" validate-cost --config "$src/configs/mesh-10x12.json" --workload "$src/workloads/tiny-mlp.json" --calibration "$tmp/cal.json" \
  --csv "$tmp/v.csv" --json "$tmp/v.json" --plot "$tmp/v.png" --rank-ops 1 --rank-plans 3 >"$tmp/out" 2>"$tmp/err"
check "validate-cost exits 0" "[ $? -eq 0 ] && grep -q 'end to end: predicted' $tmp/out"
check "validate-cost CSV has a row per operator" "[ \$(wc -l < $tmp/v.csv) -eq 5 ] && [ -s $tmp/v.ranks.csv ]"
check "validate-cost summary JSON" "grep -q analytical_mape $tmp/v.json"
check "validate-cost plot is a PNG" "head -c 4 $tmp/v.png | grep -q PNG"
"$tessera" bench cost --config "$src/configs/mesh-8x8.json" --workload nerf --ops 1 --plans 2 >"$tmp/out" 2>"$tmp/err"
check "bench cost prints the pricing speedup on a line of its own" "[ $? -eq 0 ] && grep -Eq '^pricing speedup: [0-9]+$' $tmp/out"
"$tessera" calibrate --config "$src/configs/mesh-10x12.json" --ops gemm --out "$tmp/x.json" >"$tmp/out" 2>"$tmp/err"
check "unknown class is an error" "[ $? -ne 0 ] && grep -q \"operator class 'gemm'\" $tmp/err"
fi

if want collective; then
# Collectives between chips: the ideal engine on the ACE torus, its results JSON, bad input.
"$tessera" collective --config "$src/configs/ace-torus-64.json" --op allreduce --algorithm hierarchical --bytes 1MiB \
  --out "$tmp/coll.json" >"$tmp/out" 2>&1
check "collective exits 0 and sends 2.25 N per chip" "[ $? -eq 0 ] && grep -q '(2.2500 .. 2.2500 x bytes)' $tmp/out"
check "collective results JSON" "grep -q '\"injected_gb_per_s\"' $tmp/coll.json && grep -q 'link.chip0->chip1' $tmp/coll.json"
"$tessera" collective --config "$src/configs/ace-torus-64.json" --op allreduce --algorithm hierarchical --bytes 1MiB \
  --engine ace --memory-gb-per-s 128 >"$tmp/out" 2>"$tmp/err"
check "collective --engine ace reads and writes N per chip" "[ $? -eq 0 ] && grep -q 'read 1048576 .. 1048576 (1.0000 .. 1.0000 x bytes), written 1048576' $tmp/out"
"$tessera" simulate --config "$src/configs/ace-torus-16.json" --program "$src/workloads/programs/collective-overlap.json" \
  --collective-engine ace --out "$tmp/co.json" >"$tmp/out" 2>"$tmp/err"
check "simulate runs a program's collective items on the ACE engine" "[ $? -eq 0 ] && grep -q '\"collectives_done_cycle\"' $tmp/co.json"
"$tessera" simulate --config "$src/configs/ace-torus-16.json" --program "$src/workloads/programs/collective-overlap.json" \
  --collective-engine magic >"$tmp/out" 2>"$tmp/err"
check "simulate: an unknown collective engine is a named error, exit 1" "[ $? -eq 1 ] && grep -q 'collective-engine magic: expected ideal, cores or ace' $tmp/err"
# the flit level of the chip links: the same 2.25 N per chip as flits; an unknown level is an error
"$tessera" collective --config "$src/configs/ace-torus-16.json" --op allreduce --algorithm hierarchical --bytes 256KiB \
  --model flit --out "$tmp/collf.json" >"$tmp/out" 2>&1
check "collective --model flit runs the chip links at flit level" "[ $? -eq 0 ] && grep -q 'flit level' $tmp/out && grep -q '\"network_model\": \"flit\"' $tmp/collf.json"
# forwarding: the config's (packet, for the ACE configs) or the command line's; the results say which
"$tessera" collective --config "$src/configs/ace-torus-16.json" --op allreduce --algorithm hierarchical --bytes 256KiB \
  --out "$tmp/fwd-p.json" >"$tmp/out" 2>&1
check "collective forwards by packet as the ACE config says" "[ $? -eq 0 ] && grep -q '^forwarding by packet' $tmp/out && grep -q '\"forwarding\": \"packet\"' $tmp/fwd-p.json"
"$tessera" collective --config "$src/configs/ace-torus-16.json" --op allreduce --algorithm hierarchical --bytes 256KiB \
  --forwarding message --out "$tmp/fwd-m.json" >"$tmp/out" 2>&1
check "collective --forwarding message overrides it" "[ $? -eq 0 ] && ! grep -q '^forwarding by packet' $tmp/out && grep -q '\"forwarding\": \"message\"' $tmp/fwd-m.json"
"$tessera" collective --config "$src/configs/ace-torus-16.json" --bytes 1MiB --forwarding flit >"$tmp/out" 2>"$tmp/err"
check "collective: an unknown --forwarding is an error naming the choices, exit non-zero" "[ $? -ne 0 ] && grep -q 'forwarding' $tmp/err && grep -q 'message' $tmp/err"
"$tessera" collective --config "$src/configs/ace-torus-16.json" --bytes 1MiB --model phit >"$tmp/out" 2>"$tmp/err"
check "collective: an unknown --model is a named error, exit 1" "[ $? -eq 1 ] && grep -q 'model: unknown model \"phit\"' $tmp/err"
"$tessera" collective --config "$src/configs/ace-torus-64.json" --bytes 1MiB --engine magic >"$tmp/out" 2>"$tmp/err"
check "collective: an unknown engine is a named error, exit 1" "[ $? -eq 1 ] && grep -q 'engine magic: unknown engine' $tmp/err"
"$tessera" train --config "$src/configs/ace-torus-16.json" --layers "$src/workloads/train/resnet-50-b8.json" --mode ideal \
  --out "$tmp/train.json" >"$tmp/out" 2>"$tmp/err"
check "train runs a layer table and writes its results" "[ $? -eq 0 ] && grep -q 'ideal: iteration' $tmp/out && grep -q '\"exposed_comm_cycles\"' $tmp/train.json"
echo '{"name": "x", "batch_per_npu": 1, "layers": [{"name": "a", "parameters": 1, "forward": {"flops": "many", "bytes": 0}}]}' >"$tmp/bad-table.json"
"$tessera" train --config "$src/configs/ace-torus-16.json" --layers "$tmp/bad-table.json" >"$tmp/out" 2>"$tmp/err"
check "train: a bad layer table names the file and field, exit 1" "[ $? -eq 1 ] && grep -q 'bad-table.json' $tmp/err && grep -q 'layers\[0\].forward.flops' $tmp/err"
"$tessera" collective --config "$src/configs/ipu-mk2.json" --bytes 1MiB >"$tmp/out" 2>"$tmp/err"
check "collective on one chip is a named error, exit 1" "[ $? -eq 1 ] && grep -q 'has one chip' $tmp/err"
# sizes that crashed or wrapped round (2^32 chunks became none; -1 became 2^64 - 1; nan passed)
"$tessera" collective --config "$src/configs/ace-torus-64.json" --bytes 256TiB --engine ace >"$tmp/out" 2>"$tmp/err"
check "collective: a plan of 2^32 chunks is a named error, not a crash" "[ $? -eq 1 ] && grep -q 'make 4294967296 chunks; at most 134217728 messages' $tmp/err"
"$tessera" collective --config "$src/configs/ace-torus-64.json" --bytes 1MiB --chunk-bytes -65536 >"$tmp/out" 2>"$tmp/err"
check "collective: a negative size is a named error" "[ $? -eq 1 ] && grep -q 'chunk-bytes: expected a size >= 0 (e.g. 64KiB), got -65536' $tmp/err"
"$tessera" collective --config "$src/configs/ace-torus-64.json" --bytes 1MiB --engine cores --memory-gb-per-s nan >"$tmp/out" 2>"$tmp/err"
check "collective: nan is not a positive number" "[ $? -eq 1 ] && grep -q 'memory-gb-per-s: expected a number > 0, got nan' $tmp/err"
"$tessera" collective --config "$src/configs/ace-torus-64.json" --bytes 1MiB --model flit --packet-bytes 2GiB >"$tmp/out" 2>"$tmp/err"
check "collective: flit-level packets too large to hold are refused before allocating" "[ $? -eq 1 ] && grep -q 'at most 1 MiB at the flit level' $tmp/err"
"$tessera" collective --config "$tmp" --bytes 1MiB >"$tmp/out" 2>"$tmp/err"
check "collective: a directory as the config is named" "[ $? -eq 1 ] && grep -q 'not a regular file' $tmp/err"
fi

if want traffic; then
# Network: synthetic traffic at both levels, its outputs, and bad input named with exit 1.
"$tessera" traffic --config "$src/configs/mesh-8x8.json" --rate 0.01,0.03 --measure 2000 --out "$tmp/tr.json" \
  --plot "$tmp/tr.png" >"$tmp/out" 2>"$tmp/err"
check "traffic exits 0 with a table" "[ $? -eq 0 ] && grep -q 'channel-load bound 0.4922' $tmp/out"
check "traffic results JSON has points and links" "grep -q accepted_flits_per_node_cycle $tmp/tr.json && grep -q 'chip0.r0c0.E' $tmp/tr.json"
check "traffic CSV and PNG" "[ \$(wc -l < $tmp/tr.png.csv) -eq 3 ] && head -c 4 $tmp/tr.png | grep -q PNG"
"$tessera" traffic --config "$src/configs/mesh-8x8.json" --model flit --pattern transpose --rate 0.05 --measure 1000 >"$tmp/out" 2>&1
check "flit-level transpose runs" "[ $? -eq 0 ] && grep -q 'flit level' $tmp/out"
"$tessera" traffic --config "$src/configs/mesh-8x8.json" --rate 1 >"$tmp/out" 2>"$tmp/err"
check "injection rate 1 is an error" "[ $? -eq 1 ] && grep -q 'expected more than 0 and less than 1' $tmp/err"
"$tessera" traffic --config "$src/configs/mesh-8x8.json" --rate 0.01,,0.02 >"$tmp/out" 2>"$tmp/err"
check "an empty --rate entry is an error (it was skipped)" "[ $? -eq 1 ] && grep -q -- '--rate 0.01,,0.02: an empty entry' $tmp/err"
"$tessera" traffic --config "$src/configs/mesh-8x8.json" --rate 0.01x >"$tmp/out" 2>"$tmp/err"
check "a --rate entry that is not a number is named" "[ $? -eq 1 ] && grep -q -- '--rate: expected a finite number, got \"0.01x\"' $tmp/err"
"$tessera" traffic --config "$src/configs/mesh-10x12.json" --pattern bit-complement --rate 0.01 >"$tmp/out" 2>"$tmp/err"
check "bit-complement on 120 cores is an error" "[ $? -eq 1 ] && grep -q 'power-of-two core count' $tmp/err"
"$tessera" traffic --config "$src/configs/mesh-8x8.json" --model wormhole --rate 0.01 >"$tmp/out" 2>"$tmp/err"
check "unknown --model is an error" "[ $? -eq 1 ] && grep -q 'unknown model \"wormhole\"' $tmp/err"
sed 's/"vcs": 4/"vcs": 0/; s/"model": "packet"/"model": "flit"/' "$src/configs/mesh-8x8.json" >"$tmp/vc0.json"
"$tessera" traffic --config "$tmp/vc0.json" --rate 0.01 >"$tmp/out" 2>"$tmp/err"
check "zero virtual channels is an error naming the field" "[ $? -eq 1 ] && grep -q 'chip.mesh.vcs' $tmp/err"
"$tessera" simulate --config "$src/configs/ipu-mk2.json" --program "$src/workloads/programs/overlap.json" --out "$tmp/ov.json" >"$tmp/out" 2>&1
# core 0 sends 2 KiB (512 cycles) while its matmul runs (558); core 1 receives at 542, sends it back
# while computing (543 + 558 = 1101; the send is done at 1054, received at 1084). Blocking: 1612.
check "asynchronous transfers overlap compute" "[ $? -eq 0 ] && grep -q '\"total_cycles\": 1101' $tmp/ov.json"
"$tessera" traffic --config "$src/configs/mesh-8x8.json" --sweep 0 >"$tmp/out" 2>"$tmp/err"
check "a bad argument exits 1" "[ $? -eq 1 ] && grep -q 'not in range' $tmp/err"
"$tessera" traffic --config "$src/configs/mesh-8x8.json" --rate 0.01 --measure -1 >"$tmp/out" 2>"$tmp/err"
check "traffic: a negative window is a named error (it wrapped round to 2^64 - 1)" "[ $? -eq 1 ] && grep -q 'measure: expected a number >= 0, got -1' $tmp/err"
"$tessera" traffic --config "$src/configs/mesh-8x8.json" --rate 0.01 --sweep 3 >"$tmp/out" 2>"$tmp/err"
check "traffic: --sweep with --rate is named, not ignored" "[ $? -eq 1 ] && grep -q 'does not go with --rate' $tmp/err"
"$tessera" traffic --config "$src/configs/mesh-8x8.json" --rate 0.01 --out "$tmp/no-such-dir/t.json" >"$tmp/out" 2>"$tmp/err"
check "traffic: an --out in a missing directory is named before the run" "[ $? -eq 1 ] && grep -q 'no-such-dir does not exist' $tmp/err && [ ! -s $tmp/out ]"
"$tessera" bench sim --config "$src/configs/ipu-mk2.json" --mesh-config "$src/configs/ipu-mk2.json" --steps 1 >"$tmp/out" 2>"$tmp/err"
check "bench sim: a --mesh-config without a mesh is named before anything runs (it divided by zero)" "[ $? -eq 1 ] && grep -q 'has no chip.mesh' $tmp/err && ! grep -q 'ring' $tmp/out"
fi

if want torch; then
# Stock PyTorch exports (scripts/export_torch_models.py --small: the ten model families of issue
# 11, reduced in size, opset 17): every one imports (the LSTM unrolled); bad --dim values and
# memory are named. The parts torch-t10 and torch-vgm below run the transformers and the LSTM in
# functional mode against the reference evaluation.
/usr/bin/python3 "$src/scripts/export_torch_models.py" "$tmp/torch" --small --opsets 17 >"$tmp/out" 2>&1
check "PyTorch models export" "[ $? -eq 0 ] && [ \$(ls $tmp/torch/*.onnx | wc -l) -eq 10 ]"
for m in resnet18 resnet50 mobilenet_v2 efficientnet_b0 convnext_tiny vit_b_16 swin_t transformer_encoder gpt_block; do
  "$tessera" inspect "$tmp/torch/$m-op17.onnx" >"$tmp/out" 2>&1
  check "torch $m imports" "[ $? -eq 0 ] && grep -q '^imports: ' $tmp/out"
done
"$tessera" inspect "$tmp/torch/lstm-op17.onnx" >"$tmp/out" 2>&1
check "torch LSTM imports (unrolled)" "[ $? -eq 0 ] && grep -q '^imports: ' $tmp/out"
"$tessera" inspect "$tmp/torch/gpt_block-op17.onnx" --dim batch=2 >"$tmp/out" 2>&1
check "--dim of a dimension the model lacks is an error" "[ $? -eq 1 ] && grep -q 'no symbolic input dimension of that name' $tmp/out"
"$tessera" inspect "$tmp/torch/gpt_block-op17.onnx" --dim batch >"$tmp/out" 2>&1
check "malformed --dim is an error" "[ $? -eq 1 ] && grep -q \"expected NAME=VALUE\" $tmp/out"
TESSERA_MEMORY_LIMIT_GB=1 "$tessera" run --config "$src/configs/ipu-mk2.json" --workload "$tmp/torch/resnet18-op17.onnx" --functional >"$tmp/out" 2>"$tmp/err"
check "running out of host memory is a named error" "[ $? -eq 1 ] && grep -q 'ran out of host memory (limit 1.0 GiB' $tmp/err"
fi

# The functional runs of the exported models, one part per planner (swin_t alone takes minutes).
for p in t10 vgm; do if want torch-$p; then
/usr/bin/python3 "$src/scripts/export_torch_models.py" "$tmp/torch" --small --opsets 17 --models gpt_block,vit_b_16,swin_t,lstm >"$tmp/out" 2>&1
check "PyTorch models export ($p part)" "[ $? -eq 0 ]"
for m in gpt_block vit_b_16 swin_t lstm; do
  "$tessera" run --config "$src/configs/ipu-mk2.json" --workload "$tmp/torch/$m-op17.onnx" --planner $p --functional --quiet >"$tmp/out" 2>&1
  check "torch $m ($p) runs and matches the reference" "[ $? -eq 0 ] && grep -q 'outputs match the reference' $tmp/out"
done
fi; done

if want time-order; then
# Time order: the same program never gets slower when the mesh links get faster (NeRF on
# mesh-8x8 at 2 ... 64 B/cycle; before the sub-cycle packet fix, 4 B/cycle beat 8 and 16 beat 32).
# Compiled without layout following, so that every operator re-lays out its input (30,716 cycles
# at 2 B/cycle, 5,704 at 64): with following NeRF's layers keep one layout and move nothing.
"$tessera" compile --config "$src/configs/mesh-8x8.json" --workload nerf --layout-following none --out "$tmp/nerf.json" >/dev/null 2>&1
prev=999999999; monotone=1
for bw in 2 4 6 8 16 32 64; do
  sed "s/\"link_bytes_per_cycle\": 16/\"link_bytes_per_cycle\": $bw/" "$src/configs/mesh-8x8.json" >"$tmp/mesh-$bw.json"
  c=$("$tessera" simulate --config "$tmp/mesh-$bw.json" --program "$tmp/nerf.json" | sed -n 's/^total \([0-9]*\) cycles.*/\1/p')
  [ -n "$c" ] && [ "$c" -le "$prev" ] || { monotone=0; echo "link $bw B/cycle: $c cycles after $prev"; }
  prev=${c:-0}
done
check "mesh: faster links never make the same program slower" "[ $monotone -eq 1 ] && [ $prev -eq 5704 ]"
fi

if want sweep; then
# tessera sweep: the shipped example runs every point; a point at the base config's values gives
# what a plain run gives (nerf on mesh-8x8 with t10: 3190 cycles); a sweep killed with SIGKILL
# and resumed ends with the same files as one that ran through; a bad point is recorded.
"$tessera" sweep "$src/workloads/sweeps/mesh-nerf.yaml" --out "$tmp/swA" --jobs 2 --quiet >"$tmp/out" 2>&1
check "sweep: 32 points ok" "[ $? -eq 0 ] && grep -q '32 points: 32 ok, 0 failed' $tmp/out && [ \$(wc -l < $tmp/swA/results.jsonl) -eq 32 ]"
check "sweep: the base point has the plain run's cycles" \
  "grep -q '\"link_bytes_per_cycle\":16,\"planner\":\"t10\",\"sram_bytes\":262144' $tmp/swA/results.jsonl && grep '\"link_bytes_per_cycle\":16,\"planner\":\"t10\",\"sram_bytes\":262144' $tmp/swA/results.jsonl | grep -q '\"total_cycles\":3190'"
"$tessera" sweep "$src/workloads/sweeps/mesh-nerf.yaml" --out "$tmp/swB" --jobs 1 --quiet >/dev/null 2>&1 &
sweep_pid=$!
for _ in $(seq 1 400); do [ -f "$tmp/swB/results.jsonl" ] && [ "$(wc -l < "$tmp/swB/results.jsonl")" -ge 3 ] && break; sleep 0.01; done
kill -9 $sweep_pid; wait $sweep_pid 2>/dev/null
partial=$(wc -l < "$tmp/swB/results.jsonl")
check "sweep: killed part way ($partial of 32 points)" "[ $partial -ge 3 ] && [ $partial -lt 32 ]"
"$tessera" sweep "$src/workloads/sweeps/mesh-nerf.yaml" --out "$tmp/swB" --quiet >"$tmp/out" 2>&1
check "sweep: without --resume an existing sweep is not overwritten" "[ $? -eq 1 ] && grep -q 'already holds a sweep' $tmp/out"
"$tessera" sweep "$src/workloads/sweeps/mesh-nerf.yaml" --out "$tmp/swB" --resume --jobs 2 >"$tmp/out" 2>&1
check "sweep: resume runs only the rest" "[ $? -eq 0 ] && grep -q \"$partial of 32 points finished earlier; \$((32 - partial)) to run\" $tmp/out"
check "sweep: killed and resumed = run through (results.jsonl, results.csv)" \
  "cmp -s $tmp/swA/results.jsonl $tmp/swB/results.jsonl && cmp -s $tmp/swA/results.csv $tmp/swB/results.csv"
cat >"$tmp/bad-point.json" <<SPEC
{"config": "$src/configs/mesh-8x8.json", "workloads": ["nerf"],
 "axes": [{"pointer": "/chip/core/sram_bytes", "values": [262144, 0]}], "args": ["--quiet"]}
SPEC
"$tessera" sweep "$tmp/bad-point.json" --out "$tmp/swC" >"$tmp/out" 2>&1
check "sweep: a bad point is recorded with its error and the sweep goes on" \
  "[ $? -eq 0 ] && grep -q '2 points: 1 ok, 1 failed' $tmp/out && grep -q '\"status\":\"error\"' $tmp/swC/results.jsonl && grep -q 'sram_bytes' $tmp/swC/results.csv"
# The shipped faults spec: past the time limit, out of memory, a bad config field; the rest finish.
row() { grep "\"point\":$1," "$tmp/swF/results.jsonl"; }
"$tessera" sweep "$src/workloads/sweeps/faults.yaml" --out "$tmp/swF" --jobs 2 --quiet >"$tmp/out" 2>&1
check "sweep: faults.yaml finishes 3 points and names 3 failures" \
  "[ $? -eq 0 ] && grep -q '6 points: 3 ok, 3 failed' $tmp/out"
check "sweep: a point past its time limit is a timeout" "row 2 | grep -q '\"error\":\"stopped after 20 s (limits.time_s)\"'"
check "sweep: a point out of memory names the limit" "row 3 | grep -q 'ran out of host memory (limit 2.0 GiB'"
check "sweep: a bad config field is named" "row 4 | grep -q 'link_efficiency: expected a share in (0, 1\]'"
check "sweep: the other points are ok" "row 0 | grep -q '\"status\":\"ok\"' && row 1 | grep -q '\"status\":\"ok\"' && row 5 | grep -q '\"status\":\"ok\"'"
printf '{"config": "%s/configs/mesh-8x8.json", "axes": [{"pointer": "/chip/cores", "valuez": [1]}]}' "$src" >"$tmp/bad-spec.json"
"$tessera" sweep "$tmp/bad-spec.json" --out "$tmp/swD" >"$tmp/out" 2>&1
check "sweep: a bad spec is a named error, exit 1" "[ $? -eq 1 ] && grep -q 'bad-spec.json: axes\[0\]' $tmp/out"
printf 'config: &c [*c]\n' >"$tmp/alias.yaml"
"$tessera" sweep "$tmp/alias.yaml" --out "$tmp/swE" --dry-run >"$tmp/out" 2>&1
check "sweep: an alias that contains itself is a named error (a segfault before)" "[ $? -eq 1 ] && grep -q 'an alias that contains itself' $tmp/out"
printf 'config: configs/mesh-8x8.json\naxes:\n  - pointer: /chip/cores\n    values: [64]\n    values: [16]\n' >"$tmp/dup.yaml"
"$tessera" sweep "$tmp/dup.yaml" --out "$tmp/swG" --dry-run >"$tmp/out" 2>&1
check "sweep: a YAML key given twice is a named error (the last was kept)" "[ $? -eq 1 ] && grep -q 'line 5: key \"values\" is given twice' $tmp/out"
"$tessera" sweep "$src/workloads/sweeps/mesh-nerf.yaml" --out "$tmp/swH" --sbatch-arg=--partition=debug >"$tmp/out" 2>&1
check "sweep: a Slurm option with the local backend is named (it was ignored)" "[ $? -eq 1 ] && grep -q -- '--chunk-points and --sbatch-arg apply to --backend slurm' $tmp/out"
fi

if want partition; then
# tessera partition (docs/partition.md): a given placement of tiny-mlp on two chiplets, a greedy
# search writing its placement and results, and placements that are named errors.
cat >"$tmp/pl.json" <<'EOF2'
{"operators": [{"name": "fc1", "chip": 0}, {"name": "bias1", "chip": 0}, {"name": "act", "chip": 1}, {"name": "fc2", "chip": 1}]}
EOF2
"$tessera" partition --config "$src/configs/mcm-ring-36.json" --workload "$src/workloads/tiny-mlp.json" --placement "$tmp/pl.json" \
  --results "$tmp/part.json" >"$tmp/out" 2>&1
check "partition: a given placement runs as a 2-chip pipeline" "[ $? -eq 0 ] && grep -q 'pipeline of 4 micro-batches on 2 chips' $tmp/out && grep -q '\"interval_cycles\"' $tmp/part.json"
"$tessera" partition --config "$src/configs/mcm-ring-36.json" --workload "$src/workloads/tiny-mlp.json" --search greedy \
  --out "$tmp/greedy.json" --results "$tmp/greedy-r.json" >"$tmp/out" 2>&1
check "partition: greedy writes a placement of every operator and its convergence" "[ $? -eq 0 ] && grep -q '\"fc2\"' $tmp/greedy.json && grep -q '\"convergence\"' $tmp/greedy-r.json"
sed 's/"fc2"/"fc3"/' "$tmp/pl.json" >"$tmp/pl-bad.json"
"$tessera" partition --config "$src/configs/mcm-ring-36.json" --workload "$src/workloads/tiny-mlp.json" --placement "$tmp/pl-bad.json" >"$tmp/out" 2>&1
check "partition: an unknown operator is a named error, exit 1" "[ $? -eq 1 ] && grep -q \"pl-bad.json: operators\[3\]: 'fc3' is not an operator\" $tmp/out"
sed 's/"chip": 0}, {"name": "bias1"/"chip": 0, "chips": 2}, {"name": "bias1"/' "$tmp/pl.json" >"$tmp/pl-key.json"
"$tessera" partition --config "$src/configs/mcm-ring-36.json" --workload "$src/workloads/tiny-mlp.json" --placement "$tmp/pl-key.json" >"$tmp/out" 2>&1
check "partition: an unknown key in a placement is a named error, not ignored" "[ $? -eq 1 ] && grep -q \"operators\[0\]: unknown field 'chips' (known: name, chip)\" $tmp/out"
sed 's/"fc1", "chip": 0/"fc1", "chip": 1/; s/"act", "chip": 1/"act", "chip": 0/' "$tmp/pl.json" >"$tmp/pl-back.json"
"$tessera" partition --config "$src/configs/mcm-ring-36.json" --workload "$src/workloads/tiny-mlp.json" --placement "$tmp/pl-back.json" >"$tmp/out" 2>&1
check "partition: a backward edge is the validator's error, exit 1" "[ $? -eq 1 ] && grep -q 'from chip 1 back to chip 0' $tmp/out"
"$tessera" partition --config "$src/configs/ipu-mk2.json" --workload "$src/workloads/tiny-mlp.json" >"$tmp/out" 2>&1
check "partition: a one-chip config is a named error" "[ $? -eq 1 ] && grep -q 'has one chip' $tmp/out"
"$tessera" partition --config "$src/configs/mcm-ring-36.json" --workload "$src/workloads/tiny-mlp.json" --chips-per-device 2 >"$tmp/out" 2>&1
check "partition: devices of part of a unidirectional ring are a named error" "[ $? -eq 1 ] && grep -q 'devices of 2 chips on config .mcm-ring-36.*unidirectional ring' $tmp/out"
"$tessera" partition --config "$src/configs/vipu-2.json" --workload "$src/workloads/tiny-mlp.json" --chips-per-device two >"$tmp/out" 2>&1
check "partition: a device size that is not a number is a named error" "[ $? -eq 1 ] && grep -q \"chips-per-device 'two': expected 'auto' or a number of chips from 1 to 2\" $tmp/out"
"$tessera" partition --config "$src/configs/vipu-2.json" --workload "$src/workloads/tiny-mlp.json" --chips-per-device auto --placement "$tmp/pl.json" >"$tmp/out" 2>&1
check "partition: auto device size with a given placement is a named error" "[ $? -eq 1 ] && grep -q 'placement and --serve need a number of chips per device' $tmp/out"
"$tessera" partition --config "$src/configs/vipu-2.json" --workload "$src/workloads/tiny-mlp.json" --chips-per-device auto \
  --search greedy --score-by model --results "$tmp/auto.json" >"$tmp/out" 2>&1
check "partition: auto tries every device size and says which it chose" "[ $? -eq 0 ] && grep -q 'chose devices of' $tmp/out && grep -q '\"devices_tried\"' $tmp/auto.json"
"$tessera" partition --config "$src/configs/vipu-2.json" --workload "$src/workloads/tiny-mlp.json" --chips-per-device 2 \
  --search greedy --budget-samples 1 --out "$tmp/dev.json" >"$tmp/out" 2>&1
check "partition: a device of both chips of vipu-2 runs, its placement says so" "[ $? -eq 0 ] && grep -q '1 devices (2 chips each) of 2944 cores' $tmp/out && grep -q '\"chips_per_device\": 2' $tmp/dev.json"
printf '{"proposal": [1, 0, 1, 1], "seed": 3}\n{"proposal": [0]}\n' | "$tessera" partition --config "$src/configs/mcm-ring-36.json" \
  --workload "$src/workloads/tiny-mlp.json" --serve --score-by model >"$tmp/out" 2>&1
# FIX keeps what it can of [1, 0, 1, 1]: fc1 cannot stay on chip 1 above bias1 on chip 0 with
# chip 0 then holding nothing before it, so the repair is a valid placement starting on chip 0.
check "partition --serve: the graph, a repaired proposal and a named error, one JSON line each" \
  "[ $? -eq 0 ] && sed -n 1p $tmp/out | grep -q '\"edges\":\[\[0,1\],\[1,2\],\[2,3\]\]' && sed -n 2p $tmp/out | grep -q '\"placement\":\[0,' && sed -n 3p $tmp/out | grep -q 'request 2: expected'"
fi

if want parallel; then
# tessera plan-parallel (docs/parallel.md): DFModel-style mappings; fixed mappings and bad input.
"$tessera" plan-parallel --config "$src/configs/sn10-ring-8.json" --out "$tmp/par.json" >"$tmp/out" 2>&1
check "plan-parallel: GPT-3 175B on the SN10 ring, fused TP8 first" "[ $? -eq 0 ] && grep -q 'TP TP8 PP1 DP1 fused' $tmp/out && grep -q '\"utilisation\"' $tmp/par.json"
"$tessera" plan-parallel --config "$src/configs/sn10-torus-4x2.json" --training --global-batch 8 --trace "$tmp/pp.json" >"$tmp/out" 2>&1
check "plan-parallel: a training iteration's timeline as a trace" "[ $? -eq 0 ] && grep -q 'timeline of' $tmp/out && grep -q '\"backward\"' $tmp/pp.json"
"$tessera" plan-parallel --config "$src/configs/sn10-torus-4x2.json" --mapping TP >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: a mapping per dimension is required" "[ $? -eq 1 ] && grep -q 'the system has 2 dimensions' $tmp/err"
"$tessera" plan-parallel --config "$src/configs/sn10-ring-8.json" --mapping TP --partitions 3,4,x >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: bad partition sizes are named" "[ $? -eq 1 ] && grep -q \"'x' is not a positive kernel count\" $tmp/err"
"$tessera" plan-parallel --config "$src/configs/sn10-ring-8.json" --sim-no-stream >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: --sim-no-stream needs --simulate" "[ $? -eq 1 ] && grep -q 'requires --simulate' $tmp/err"
"$tessera" plan-parallel --config "$src/configs/sn10-ring-8.json" --model gpt5 >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: unknown model" "[ $? -eq 1 ] && grep -q \"unknown model 'gpt5'\" $tmp/err"
"$tessera" plan-parallel --config "$src/configs/sn10-ring-8.json" --hidden 1000 --heads 7 >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: hidden not a multiple of heads" "[ $? -eq 1 ] && grep -q 'hidden must be a multiple of heads' $tmp/err"
"$tessera" plan-parallel --config "$src/configs/ipu-mk2.json" --model gpt3-1t >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: a model that fits nowhere says why" "[ $? -eq 1 ] && grep -q 'no mapping of gpt3-1t fits ipu-mk2' $tmp/err"
"$tessera" plan-parallel --config "$src/configs/a100-switch-4.json" --model gpt3-1.3b --mapping TP --fusion fused --seq-tile 32 --compute systolic --out "$tmp/sys.json" >"$tmp/out" 2>&1
check "plan-parallel --compute systolic: a tile's cycles in the results" "[ $? -eq 0 ] && grep -q '\"tile_cycles\": 6144' $tmp/sys.json"
"$tessera" plan-parallel --config "$src/configs/a100-switch-4.json" --compute systolic --array 16y16 >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: a malformed --array is named" "[ $? -eq 1 ] && grep -q \"'16y16' (expected rows x columns\" $tmp/err"
"$tessera" plan-parallel --config "$src/configs/a100-switch-4.json" --compute systolic --array 1024x1024 >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: a peak that is not whole arrays is named" "[ $? -eq 1 ] && grep -q 'not a whole number of 1024x1024 arrays' $tmp/err"
"$tessera" plan-parallel --config "$src/configs/a100-switch-4.json" --array 8x8 >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: --array without --compute systolic is named, not ignored" "[ $? -eq 1 ] && grep -q \"the MAC arrays are --compute systolic's\" $tmp/err"
"$tessera" plan-parallel --config "$src/configs/a100-switch-4.json" --model gpt3-1.3b --seq-tile 4096 >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: a tile longer than the sequence is named, not clamped" "[ $? -eq 1 ] && grep -q \"seq-tile 4096: more than a sequence's 2048 tokens\" $tmp/err"
"$tessera" plan-parallel --config "$src/configs/a100-switch-4.json" --layers 0 >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: --layers 0 is an error, not the preset" "[ $? -eq 1 ] && grep -q 'layers' $tmp/err"
"$tessera" plan-parallel --config "$src/configs/a100-switch-4.json" --compute systolic --simulate >"$tmp/out" 2>"$tmp/err"
check "plan-parallel: --simulate runs the peak model only" "[ $? -eq 1 ] && grep -q 'does not go with --compute systolic' $tmp/err"
"$tessera" plan-parallel --config "$src/configs/a100-switch-4.json" --model gpt3-1.3b --layers 2 --mapping TP --fusion fused --simulate --sim-micro-batches 1 --out "$tmp/pps.json" >"$tmp/out" 2>&1
check "plan-parallel --simulate: a TP4 mapping on the simulator" "[ $? -eq 0 ] && grep -q 'simulated TP TP4 PP1 DP1 fused: 1 micro-batches' $tmp/out && grep -q '\"simulated_over_model\"' $tmp/pps.json"
"$tessera" plan-parallel --config "$src/configs/sn10-torus-4x2.json" --model gpt3-1.3b --layers 4 --training --global-batch 4 --mapping DP,PP --simulate >"$tmp/out" 2>&1
check "plan-parallel --simulate: a training iteration (1F1B, DP all-reduce) on the simulator" "[ $? -eq 0 ] && grep -q 'simulated DP,PP TP1 PP2 DP4 fused: 1 micro-batches (a training iteration)' $tmp/out"
fi

if want pipeline; then
# tessera plan-pipeline (docs/pipeline.md): GraphPipe vs the sequential pipeline, simulated.
"$tessera" plan-pipeline --config "$src/configs/summit-32.json" --model dlrm --devices 4 --out "$tmp/gp.json" --trace "$tmp/gpt.json" >"$tmp/out" 2>&1
check "plan-pipeline: DLRM on 4 devices, both planners simulated, a trace" "[ $? -eq 0 ] && grep -q 'graphpipe vs sequential' $tmp/out && grep -q '\"simulated_throughput\"' $tmp/gp.json && grep -q 'S0 F0' $tmp/gpt.json"
"$tessera" plan-pipeline --config "$src/configs/summit-32.json" --model resnet >"$tmp/out" 2>"$tmp/err"
check "plan-pipeline: unknown model" "[ $? -eq 1 ] && grep -q \"unknown pipeline model 'resnet'\" $tmp/err"
"$tessera" plan-pipeline --config "$src/configs/summit-32.json" --batch 100 >"$tmp/out" 2>"$tmp/err"
check "plan-pipeline: a mini-batch that is not a power of two" "[ $? -eq 1 ] && grep -q 'must be powers of two' $tmp/err"
"$tessera" plan-pipeline --config "$src/configs/summit-32.json" --devices 64 >"$tmp/out" 2>"$tmp/err"
check "plan-pipeline: more devices than chips" "[ $? -eq 1 ] && grep -q 'has 32 chips' $tmp/err"
"$tessera" plan-pipeline --config "$src/configs/ipu-mk2.json" >"$tmp/out" 2>"$tmp/err"
check "plan-pipeline: a config without NPUs" "[ $? -eq 1 ] && grep -q 'has no system.npu' $tmp/err"
"$tessera" plan-pipeline --config "$src/configs/summit-32.json" --schedule zb >"$tmp/out" 2>"$tmp/err"
check "plan-pipeline: unknown schedule" "[ $? -eq 1 ] && grep -q 'expected 1f1b, kfkb or greedy' $tmp/err"
"$tessera" plan-pipeline --config "$src/configs/summit-32.json" --planner pipedream >"$tmp/out" 2>"$tmp/err"
check "plan-pipeline: unknown planner" "[ $? -eq 1 ] && grep -q 'expected graphpipe, sequential or both' $tmp/err"
"$tessera" plan-pipeline --config "$src/configs/ace-torus-1024.json" --devices 1024 >"$tmp/out" 2>"$tmp/err"
check "plan-pipeline: more devices than the search handles is an error, not a hang" "[ $? -eq 1 ] && grep -q 'expected 1 to 128' $tmp/err"
# --planner collage (docs/compiler.md, "Collage"): per operator T10 or VGM; says how many ran VGM.
"$tessera" run --config "$src/configs/ipu-mk2.json" --workload "$src/workloads/tiny-mlp.json" --planner collage --functional --quiet \
  --out "$tmp/col.json" >"$tmp/out" 2>&1
check "collage run matches the reference and reports its mix" "[ $? -eq 0 ] && grep -q 'outputs match the reference' $tmp/out && grep -q 'operators on VGM plans' $tmp/out && grep -q '\"schedule_planner\"' $tmp/col.json"
fi

exit $fail
