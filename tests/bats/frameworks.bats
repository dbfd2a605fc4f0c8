#!/usr/bin/env bats
# tests/frameworks/compare, the framework suite's judge (tests/gpu/run
# frameworks runs the cases on the GPU): its verdicts on outputs written
# here in fwcommon.py's format.

load test_helper

CMP=$BATS_TEST_DIRNAME/../frameworks/compare

# out FILE [LINE...]: a run's output, the lines then "case: done".
out() {
	local f=$BATS_TEST_TMPDIR/$1
	shift
	printf '%s\n' "$@" >"$f"
}

A="a sha=aaaa sum=10.0 n=4"
B="b sha=bbbb sum=20.0 n=4"

@test "compare: identical parts, and a done line in every run, pass" {
	out l1 "$A" "$B" "case: done"
	out l2 "$A" "$B" "case: done"
	out r "$A" "$B" "case: done"
	run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 0 ]
	[ "$output" = "ok 2 identical, 0 within the local spread" ]
}

@test "compare: a part the local runs agree on, different remotely, fails (within FW_RTOL it passes)" {
	out l1 "$A" "case: done"
	out l2 "$A" "case: done"
	out r "a sha=cccc sum=10.00000001 n=4" "case: done"
	run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 1 ]
	[[ "$output" == "FAIL 1 of 1 parts: a: local runs identical, remote differs"* ]]
	FW_RTOL=1e-6 run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 0 ]
	[[ "$output" == *"1 within FW_RTOL"* ]]
}

@test "compare: local runs that differ set the tolerance" {
	out l1 "a sha=1111 sum=10.0 n=4" "case: done"
	out l2 "a sha=2222 sum=10.001 n=4" "case: done"
	out r "a sha=3333 sum=10.003 n=4" "case: done"
	run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 0 ]
	[ "$output" = "ok 0 identical, 1 within the local spread" ]
	out r "a sha=3333 sum=10.01 n=4" "case: done"
	run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 1 ]
}

@test "compare: a local run cut short is no reference (the GPU's max-autotune case, cut off after its forward)" {
	out l1 "$A"
	out l2 "$A" "$B" "case: done"
	out r "$A" "b sha=dddd sum=20.0001 n=4" "case: done"
	run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 1 ]
	[[ "$output" == *"local run 1 did not finish"* ]]
	out l1 "$A" "$B" "case: done"
	out l2 "$A"
	run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 1 ]
	[[ "$output" == *"local run 2 did not finish"* ]]
}

@test "compare: a remote run that stopped, lost a part or raised fails, naming it" {
	out l1 "$A" "$B" "case: done"
	out l2 "$A" "$B" "case: done"
	out r "$A" "$B"
	run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 1 ]
	[[ "$output" == *"the remote run did not finish"* ]]
	out r "$A" "case: done"
	run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 1 ]
	[[ "$output" == *"b missing"* ]]
	out r "$A" "b ERROR RuntimeError: CUDA error: invalid device context" "case: done"
	run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 1 ]
	[[ "$output" == *"b ERROR RuntimeError: CUDA error: invalid device context"* ]]
}

@test "compare: no local parts at all is a failure, not a pass" {
	out l1 "case: done"
	out l2 "case: done"
	out r "case: done"
	run "$CMP" "$BATS_TEST_TMPDIR/l1" "$BATS_TEST_TMPDIR/l2" "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 1 ]
	[ "$output" = "FAIL the local run printed no parts" ]
}

@test "run: a case whose own limit does not fit before FW_END is skipped, said so, never started" {
	RUN=$BATS_TEST_DIRNAME/../frameworks/run
	now=$(date +%s)
	# max-autotune's first local run takes minutes: 100 s left is not
	# enough for a run that may take 420, and nothing is run.
	FW_TIMEOUT_compile_max_autotune=420 FW_END=$((now + 100)) \
	    GLEAM_BIN=$GLEAM_BIN run "$RUN" 127.0.0.1:1 "$BATS_TEST_TMPDIR/o" compile_max_autotune
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "compile_max_autotune"*"SKIP  out of time (FW_END: a run may take 420 s)" ]]
	[ ! -e "$BATS_TEST_TMPDIR/o/compile_max_autotune.local1" ]
}
