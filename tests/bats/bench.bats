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
