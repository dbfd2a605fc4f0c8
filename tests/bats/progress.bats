#!/usr/bin/env bats
# Progress of large uploads on the program's stderr (gleam-client(7),
# GLEAM_PROGRESS): tests/cuda/cacheload loads a buffer through gleam-run
# and the client library, over gleam-link at 100 Mbit/s in front of
# gleam-serve's host backend, so that the load takes seconds.  A
# terminal is made with tests/bats/ptyrun.py.

load test_helper

CUDA_BIN=${GLEAM_CUDA_BIN:-$BATS_TEST_DIRNAME/../../build/cuda}
HOST_KERNELS=${GLEAM_HOST_KERNELS:-$BATS_TEST_DIRNAME/../../build/tests/host-kernels.so}
PTYRUN=$BATS_TEST_DIRNAME/ptyrun.py

setup() {
	[ -x "$CUDA_BIN/static/cacheload" ] || skip "CUDA test programs not built (make cuda-tests)"
	export XDG_CACHE_HOME=$BATS_TEST_TMPDIR/xdg
	unset GLEAM_PROGRESS
	printf 'backend: host\nhost_kernels: %s\n' "$HOST_KERNELS" \
	    >"$BATS_TEST_TMPDIR/s.yaml"
	serve_start -c "$BATS_TEST_TMPDIR/s.yaml"
}

teardown() {
	serve_kill
	if [ -n "${LINK_PID:-}" ]; then { kill -KILL "$LINK_PID" && wait "$LINK_PID"; } 2>/dev/null || true; fi
	sanitizer_check
}

# slow_link: gleam-link at 100 Mbit/s before the server; sets LINK_ADDR.
slow_link() {
	local log=$BATS_TEST_TMPDIR/link.$RANDOM.log
	"$GLEAM_BIN/gleam-link" -b 100M -l 127.0.0.1:0 "$SERVE_ADDR" \
	    2>"$log" 3>&- &
	LINK_PID=$!
	LINK_ADDR=127.0.0.1:$(wait_listen "$log" "$LINK_PID")
}

# load ADDR [ARGS]: cacheload -m 24 through gleam-run; stderr apart.
load_24() {
	local addr=$1
	shift
	run --separate-stderr timeout 120 "$GLEAM_BIN/gleam-run" -s "$addr" \
	    -- "$CUDA_BIN/static/cacheload" -m 24 "$@"
	[ "$status" -eq 0 ] || { echo "$output $stderr" >&2; return 1; }
	[ "${lines[-1]}" = "cacheload: ok" ]
}

@test "GLEAM_PROGRESS=1: a slow upload shows bytes, rate and time left, then erases the line" {
	slow_link
	GLEAM_PROGRESS=1 GLEAM_CACHE=0 load_24 "$LINK_ADDR" -w
	# One line rewritten: carriage returns, no newline.
	[[ "$stderr" != *$'\n'* ]]
	[[ "$stderr" == $'\r'"gleam: sent "*"/24.0 MiB "*"%"* ]]
	grep -Eq 'gleam: sent [0-9.]+ MiB/24.0 MiB [0-9]+% [0-9.]+ MiB/s ETA [0-9]+s' <<<"$stderr"
	# Erased at the end: blanks between the last two carriage returns.
	[[ "$stderr" =~ $'\r'\ +$'\r'$ ]]
}

@test "GLEAM_PROGRESS=1: uploads into the weight cache count, as one running total" {
	slow_link
	GLEAM_PROGRESS=1 load_24 "$LINK_ADDR" -s 11
	grep -Eq 'gleam: sent [0-9.]+ MiB/[0-9.]+ MiB' <<<"$stderr"
	[[ "$stderr" =~ $'\r'\ +$'\r'$ ]]
	[[ "$stderr" != *$'\n'* ]]
}

@test "no terminal: nothing on stderr, whatever the link" {
	slow_link
	GLEAM_CACHE=0 load_24 "$LINK_ADDR" -w
	[ -z "$stderr" ]
	GLEAM_PROGRESS=auto GLEAM_CACHE=0 load_24 "$LINK_ADDR" -w
	[ -z "$stderr" ]
}

@test "GLEAM_PROGRESS=0 and off: nothing, even on a terminal" {
	slow_link
	for v in 0 off; do
		GLEAM_PROGRESS=$v GLEAM_CACHE=0 run -0 python3 "$PTYRUN" \
		    "$BATS_TEST_TMPDIR/tty" timeout 120 "$GLEAM_BIN/gleam-run" \
		    -s "$LINK_ADDR" -- "$CUDA_BIN/static/cacheload" -m 24 -w
		[ "${lines[-1]}" = "cacheload: ok" ]
		[ ! -s "$BATS_TEST_TMPDIR/tty" ]
	done
}

@test "on a terminal: a slow upload shows progress, a fast one nothing" {
	slow_link
	GLEAM_CACHE=0 run -0 python3 "$PTYRUN" "$BATS_TEST_TMPDIR/tty" \
	    timeout 120 "$GLEAM_BIN/gleam-run" -s "$LINK_ADDR" -- \
	    "$CUDA_BIN/static/cacheload" -m 24 -w
	[ "${lines[-1]}" = "cacheload: ok" ]
	grep -aEq 'gleam: sent [0-9.]+ MiB/24.0 MiB [0-9]+% ' "$BATS_TEST_TMPDIR/tty"
	# Not before a second had passed: never at 0%.
	! grep -aq 'gleam: sent 0 B' "$BATS_TEST_TMPDIR/tty"
	# Straight to the server, 4 MiB take far less than a second.
	GLEAM_CACHE=0 run -0 python3 "$PTYRUN" "$BATS_TEST_TMPDIR/tty" \
	    timeout 120 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
	    "$CUDA_BIN/static/cacheload" -m 4 -w
	[ "${lines[-1]}" = "cacheload: ok" ]
	[ ! -s "$BATS_TEST_TMPDIR/tty" ]
}

@test "GLEAM_PROGRESS with another value: a warning, then as auto" {
	GLEAM_PROGRESS=sometimes GLEAM_CACHE=0 load_24 "$SERVE_ADDR" -w
	[[ "$stderr" == *"GLEAM_PROGRESS=sometimes: expected auto, 0, off, 1 or on: taken as auto"* ]]
	[[ "$stderr" != *"gleam: sent"* ]]
}
