#!/usr/bin/env bats
# The benchmark scripts' command lines: -h prints the usage on standard
# output and exits 0; an unknown option prints it on standard error and
# exits 2, having run nothing.

load test_helper

ROOT=$BATS_TEST_DIRNAME/../..

SCRIPTS="bulk cache-load infer infer-gpu link-accuracy reduce-bench
    reduce-correctness sched-gen sched-real sched-sim"

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
