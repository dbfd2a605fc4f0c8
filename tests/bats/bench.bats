#!/usr/bin/env bats
# The benchmark scripts' command lines: -h prints the usage on standard
# output and exits 0; an unknown option prints it on standard error and
# exits 2, having run nothing.

load test_helper

ROOT=$BATS_TEST_DIRNAME/../..

teardown() {
	serve_kill
	sanitizer_check
}

SCRIPTS="bulk cache-load graph-replay hash-cost hr-trace infer infer-gpu link-accuracy migrate plot
    reduce-bench reduce-correctness reduce-nccl sched-dos sched-gen sched-real sched-sim"

@test "every benchmark script answers -h with its usage, status 0" {
	for s in $SCRIPTS; do
		run --separate-stderr "$ROOT/bench/$s" -h
		echo "$s: status $status: $output" >&2
		[ "$status" -eq 0 ]
		[[ "$output" == *"usage: "* ]]
	done
}

@test "every benchmark script refuses an unknown option with status 2" {
	for s in $SCRIPTS; do
		run --separate-stderr "$ROOT/bench/$s" -Q
		echo "$s: status $status: $stderr" >&2
		[ "$status" -eq 2 ]
		[[ "$stderr" == *"usage: "* || "$stderr" == *"not found"* ]]
	done
}

@test "hash-cost: a row per hash and size, and a bad size refused" {
	run -0 --separate-stderr "$ROOT/bench/hash-cost" -r 1 -t 1 64k 5m
	[ "${#lines[@]}" -eq 12 ]
	for h in xxh3-128 blake2b-256 sha-256 cname cname_strong; do
		grep -Eq "^5m +$h +[0-9]+\.[0-9]{2}\$" <<<"$output"
	done
	run -2 --separate-stderr "$ROOT/bench/hash-cost" -r 1 12q
	[[ "$stderr" == *"hash-cost: 12q: "* ]]
	run -2 --separate-stderr "$ROOT/bench/hash-cost" -r 0
}

@test "hr-trace: a worker's means per tensor from GLEAM_HR_TRACE lines" {
	cat >"$BATS_TEST_TMPDIR/t" <<-EOF
	noise that is not a trace line
	hrtrace 10.000 0 1 submit
	hrtrace 10.002 0 1 queued1
	hrtrace 10.012 0 1 done1
	hrtrace 10.018 0 1 queued2
	hrtrace 10.030 0 1 done2
	hrtrace 10.034 0 1 decoded
	hrtrace 10.000 1 1 submit
	hrtrace 10.001 1 1 queued1
	EOF
	run -0 "$ROOT/bench/hr-trace" "$BATS_TEST_TMPDIR/t"
	[ "${lines[0]}" = "RANK   TENSORS   BITMAP    WAIT1   ENCODE    WAIT2   DECODE" ]
	[ "${lines[1]}" = "0            1    2.000   10.000    6.000   12.000    4.000" ]
	[ "${#lines[@]}" -eq 2 ]
}

@test "reduce-bench: the overlap sweep (-c) and its refusals" {
	run -0 --separate-stderr "$ROOT/bench/reduce-bench" -r 1 -s 1 -n 20000 \
	    -w 2 -d 0.05 -c "0 1" -b 1gbit -S "dense homo" \
	    -O "$BATS_TEST_TMPDIR/rb" "$GLEAM_BIN"
	[[ "$output" == *"| link | W | density | overlap | dense | homo |"* ]]
	grep -q '^| 1gbit | 2 | 5% | 0 | ' <<<"$output"
	grep -q '^| 1gbit | 2 | 5% | 1 | ' <<<"$output"
	# The same support everywhere: the union is the density.
	grep -q "^union_density: 0.0[45]" "$BATS_TEST_TMPDIR"/rb/1gbit-w2-d0.05-o1-homo-1.yaml
	grep -q "^overlap: 1" "$BATS_TEST_TMPDIR"/rb/1gbit-w2-d0.05-o1-homo-1.yaml
	run -2 --separate-stderr "$ROOT/bench/reduce-bench" -c 2 "$GLEAM_BIN"
	[[ "$stderr" == *"-c: 2: not an overlap"* ]]
	run -2 --separate-stderr "$ROOT/bench/reduce-bench" -g /nonexistent "$GLEAM_BIN"
	[[ "$stderr" == *"-g: no program /nonexistent"* ]]
}

@test "sched-real -G: a GPU a server needs the cuda backend" {
	run -2 --separate-stderr "$ROOT/bench/sched-real" -G -g host
	[[ "$stderr" == *"-G: a GPU a server needs the cuda backend"* ]]
}

@test "reduce-nccl: bad densities are refused before anything runs" {
	run -2 --separate-stderr "$ROOT/bench/reduce-nccl" -d "0.01 x"
	[[ "$stderr" == *"-d: 0.01 x: not densities"* ]]
	run -2 --separate-stderr "$ROOT/bench/reduce-nccl" -d 0
	[[ "$stderr" == *"densities in (0, 1]"* ]]
}

@test "graph-replay on the host backend: graph, eager and the CPU reference agree; a replay is 3 messages, 1 round trip" {
	prog=${GLEAM_GRAPH_REPLAY:-$ROOT/build/workloads/graph-replay}
	hk=${GLEAM_HOST_KERNELS:-$ROOT/build/tests/host-kernels.so}
	[ -x "$prog" ] || skip "graph-replay not built (make cuda-tests)"
	[ -f "$hk" ] || skip "no host kernels (make cuda-tests)"
	run -0 "$prog" -R -d 48 -l 2 -b 3 -n 6 -w 1
	want=$(sed -n 's/^checksum: //p' <<<"$output")
	run -0 --separate-stderr timeout 120 "$ROOT/bench/graph-replay" \
	    -H "$hk" -d 48 -l 2 -b 3 -n 6 -w 1 -r 2 "$GLEAM_BIN" "$prog"
	echo "$output" >&2
	[[ "${lines[2]}" == "graph  remote "*" 3.00 "*" 1.00 same" ]]
	[[ "${lines[3]}" == "eager  remote "*" 13.00 "*" 1.00 same" ]]
	[[ "$output" == *"cuGraphLaunch messages per replay: 1.00 (want 1): met"* ]]
	# The remote checksum is the CPU reference's.
	printf 'backend: host\nhost_kernels: %s\n' "$hk" >"$BATS_TEST_TMPDIR/host.yaml"
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	run -0 --separate-stderr timeout 120 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
	    "$prog" -d 48 -l 2 -b 3 -n 6 -w 1
	[ "$(sed -n 's/^checksum: //p' <<<"$output")" = "$want" ]
	serve_kill
}


@test "bench/plot draws every committed figure from its data" {
	command -v gnuplot >/dev/null 2>&1 || skip "no gnuplot (make plots installs gnuplot-nox)"
	src=$BATS_TEST_DIRNAME/../../bench/plots
	d=$BATS_TEST_TMPDIR/plots
	mkdir "$d"
	cp "$src"/*.tsv "$d"
	run -0 "$BATS_TEST_DIRNAME/../../bench/plot" "$d"
	n=0
	for f in "$src"/*.svg; do
		g=$d/${f##*/}
		[ -s "$g" ] || { echo "not drawn: ${f##*/}" >&2; return 1; }
		grep -q '<svg' "$g"
		# The same gnuplot draws the same bytes: the committed figure
		# is the data's.
		if [ "$(grep -m1 'Produced by' "$f")" = "$(grep -m1 'Produced by' "$g")" ]; then
			cmp "$f" "$g"
		fi
		n=$((n + 1))
	done
	[ "$n" -eq "$(ls "$d"/*.svg | wc -l)" ]
	# A data file missing or bad is an error, not a blank figure.
	rm "$d/infer.tsv"
	run -1 --separate-stderr "$BATS_TEST_DIRNAME/../../bench/plot" "$d"
	[[ "$stderr" == *"infer.tsv: cannot read"* ]]
	printf 'workload\tloopback\nx\t1\n' >"$d/infer.tsv"
	run -1 --separate-stderr "$BATS_TEST_DIRNAME/../../bench/plot" "$d"
	[[ "$stderr" == "plot: infer.svg: "* ]]
	[ ! -e "$d/infer.svg" ]
}

@test "fw-steps: -h prints its usage, a missing server or workload is a usage error" {
	run "$BATS_TEST_DIRNAME/../../bench/fw-steps" -h
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: bench/fw-steps "* ]]
	run --separate-stderr "$BATS_TEST_DIRNAME/../../bench/fw-steps" torch torch_infer
	[ "$status" -eq 2 ]
	[[ "$stderr" == "usage: bench/fw-steps "* ]]
	run --separate-stderr "$BATS_TEST_DIRNAME/../../bench/fw-steps" -s 127.0.0.1:1
	[ "$status" -eq 2 ]
}

@test "frameworks: a row's ratio, the link's bound, the serial bound and a decode's token bound, from the runs" {
	# Two pairs of runs (steps a second: local 2000 and 2500, remote
	# 500 and 625) of a step with 4 bytes and one synchronization, on
	# the 1 Gbit/s path (1 ms): bound 1 / (32 / 1e9 + 1e-3), serial
	# 1 / (1 / 2250 + 32 / 1e9 + 1e-3).
	run -0 python3 - "$BATS_TEST_DIRNAME/../../bench/frameworks" <<'PY'
import sys
from importlib.machinery import SourceFileLoader
fw = SourceFileLoader("fw", sys.argv[1]).load_module()
b = fw.Bench.__new__(fw.Bench)
b.meas, b.loop, b.failed = {}, None, 0
def run(sec):
    return {"name": "ggml_decode", "steps": 100, "seconds": sec,
            "bytes_per_step": 4, "syncs_per_step": 1, "error": None}
r = b.row("ggml_decode", "1gbit", [run(0.05), run(0.04)],
          [run(0.2), run(0.16)])
t = 32 / 1e9 + 1e-3
checks = [
    (r["runs"], 2),
    (round(r["local_per_s"], 6), 2250.0),
    (round(r["remote_per_s"], 6), 562.5),
    (round(r["ratio"], 6), 0.25),
    (round(r["bound_per_s"], 6), round(1 / t, 6)),
    (round(r["of_best"], 6), round(562.5 * t, 6)),
    (round(r["serial_per_s"], 6), round(1 / (1 / 2250 + t), 6)),
    (round(r["of_serial"], 6), round(562.5 * (1 / 2250 + t), 6)),
    (round(r["token_bound_ms"], 6), round(1e3 * (1 / 2250 + t), 6)),
    (r["token_met"], False),
    (r["met"], False),
]
for got, want in checks:
    print(got, want)
    assert got == want, (got, want)
# Loopback: the probed rate and round trip, the target 0.95 of local.
b.loop = (1e10, 25e-6)
r = b.row("ggml_decode", "loopback", [run(0.05)], [run(0.06)])
assert r["target"] == 0.95 and r["met"] is False
assert round(r["serial_per_s"], 6) == round(1 / (0.0005 + 32 / 1e10 + 25e-6), 6)
print("ok")
PY
	[ "${lines[-1]}" = "ok" ]
}
