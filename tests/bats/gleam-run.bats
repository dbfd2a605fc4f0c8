#!/usr/bin/env bats
# gleam-run's interface: flags, the environment it sets, exit statuses.

load test_helper

USAGE="usage: gleam-run [-v] [-k keyfile] [-o stats.yaml] [-s host[:port] | -S host[:port]] [-t task] -- prog [args ...]"

setup() {
	unset GLEAM_SERVER GLEAM_KEY_FILE
	export GLEAM_RUN_CONFIG=$BATS_TEST_TMPDIR/none.yaml
}

@test "-h prints usage on stdout and exits 0" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -h
	[ "$output" = "$USAGE" ]
}

@test "no program is a usage error" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -s h
	[ "${stderr_lines[0]}" = "gleam-run: no program given" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
}

@test "no server is a usage error naming the ways to give one" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -- true
	[[ "$stderr" == "gleam-run: no server: give -s, set GLEAM_SERVER"* ]]
}

@test "a bad server address is a usage error" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -s h:0 -- true
	[ "${stderr_lines[0]}" = "gleam-run: -s h:0: port 0" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -s h:http -- true
	[ "${stderr_lines[0]}" = "gleam-run: -s h:http: bad port" ]
}

@test "the program's exit status passes through" {
	run -0 "$GLEAM_BIN/gleam-run" -s h -- true
	run -1 "$GLEAM_BIN/gleam-run" -s h -- false
	run -42 "$GLEAM_BIN/gleam-run" -s h -- sh -c 'exit 42'
}

@test "a program killed by a signal reads as 128+N" {
	run -143 "$GLEAM_BIN/gleam-run" -s h -- sh -c 'kill -TERM $$'
}

@test "a missing program exits 127, one that cannot run 126" {
	run -127 --separate-stderr "$GLEAM_BIN/gleam-run" -s h -- "$BATS_TEST_TMPDIR/nope"
	[[ "$stderr" == *"nope: No such file or directory" ]]
	printf 'data\n' >"$BATS_TEST_TMPDIR/plain"
	chmod 644 "$BATS_TEST_TMPDIR/plain"
	run -126 --separate-stderr "$GLEAM_BIN/gleam-run" -s h -- "$BATS_TEST_TMPDIR/plain"
}

@test "the library comes first in LD_LIBRARY_PATH and LD_PRELOAD" {
	run -0 env LD_LIBRARY_PATH=/x LD_PRELOAD= "$GLEAM_BIN/gleam-run" -s gpu1:9 -- \
	    sh -c 'echo "$GLEAM_SERVER|$LD_LIBRARY_PATH|$LD_PRELOAD"'
	[[ "$output" == "gpu1:9|"*"/lib:/x|"*"/lib/libcuda.so.1" ]]
}

@test "-s beats GLEAM_SERVER, which beats the configuration" {
	printf 'server: from-config\n' >"$BATS_TEST_TMPDIR/run.yaml"
	export GLEAM_RUN_CONFIG=$BATS_TEST_TMPDIR/run.yaml
	run -0 "$GLEAM_BIN/gleam-run" -- sh -c 'echo $GLEAM_SERVER'
	[ "$output" = from-config ]
	run -0 env GLEAM_SERVER=from-env "$GLEAM_BIN/gleam-run" -- sh -c 'echo $GLEAM_SERVER'
	[ "$output" = from-env ]
	run -0 env GLEAM_SERVER=from-env "$GLEAM_BIN/gleam-run" -s from-flag -- sh -c 'echo $GLEAM_SERVER'
	[ "$output" = from-flag ]
}

@test "a bad configuration names file, line and key" {
	printf 'server: a\nport: 9\n' >"$BATS_TEST_TMPDIR/run.yaml"
	export GLEAM_RUN_CONFIG=$BATS_TEST_TMPDIR/run.yaml
	run -3 --separate-stderr "$GLEAM_BIN/gleam-run" -- true
	[ "$stderr" = "gleam-run: $BATS_TEST_TMPDIR/run.yaml:2: configuration: unknown key 'port'" ]
}

@test "an unreadable key file exits 3; a relative one is made absolute" {
	run -3 --separate-stderr "$GLEAM_BIN/gleam-run" -s h -k "$BATS_TEST_TMPDIR/none" -- true
	[[ "$stderr" == *"key file $BATS_TEST_TMPDIR/none: No such file or directory" ]]
	make_key "$BATS_TEST_TMPDIR/key"
	cd "$BATS_TEST_TMPDIR"
	run -0 "$GLEAM_BIN/gleam-run" -s h -k key -- sh -c 'echo $GLEAM_KEY_FILE'
	[ "$output" = "$BATS_TEST_TMPDIR/key" ]
}

@test "a missing client library exits 6" {
	run -6 --separate-stderr env GLEAM_LIBDIR="$BATS_TEST_TMPDIR" "$GLEAM_BIN/gleam-run" -s h -- true
	[[ "$stderr" == *"libcuda.so.1: No such file or directory (set GLEAM_LIBDIR)" ]]
}

@test "-o and -v reach the library" {
	run -0 "$GLEAM_BIN/gleam-run" -v -o "$BATS_TEST_TMPDIR/s.yaml" -s h -- \
	    sh -c 'echo "$GLEAM_STATS $GLEAM_VERBOSE"'
	[ "$output" = "$BATS_TEST_TMPDIR/s.yaml 1" ]
}

@test "-S asks a scheduler: not with -s; -t only with -S" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -s h -S g -- true
	[ "${stderr_lines[0]}" = "gleam-run: -s and -S: give one" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -s h -t chat -- true
	[ "${stderr_lines[0]}" = "gleam-run: -t: only with -S" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -S h:0 -- true
	[ "${stderr_lines[0]}" = "gleam-run: -S h:0: port 0" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -S h -t '' -- true
	[ "${stderr_lines[0]}" = "gleam-run: -t: a task name of 1 to 127 bytes" ]
}

@test "-S with no scheduler there: exit 4, the program does not run" {
	run -4 --separate-stderr "$GLEAM_BIN/gleam-run" -S 127.0.0.1:1 -- \
	    sh -c 'echo ran'
	[ -z "$output" ]
	[[ "$stderr" == "gleam-run: scheduler 127.0.0.1:1: "* ]]
}
