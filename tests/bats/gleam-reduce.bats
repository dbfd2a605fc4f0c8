#!/usr/bin/env bats
# gleam-reduce's interface: flags, numbers, the listening line, signals,
# keys, and the benchmark driving real workers through a real aggregator
# (its own, or one started here, or one behind gleam-link), with results
# checked bit for bit.  The protocol's bad inputs are tests/unit's
# test_hreduce; the decoder is fuzzed by tests/fuzz/fuzz_reduce.c.

load test_helper

USAGE="usage: gleam-reduce [-Adv] [-k keyfile] [-l address:port] [-m size] [-P pidfile] [-t timeout] [-w workers]
       gleam-reduce bench [-gqV] [-b bits] [-c address:port] [-d density] [-j threads] [-k keyfile] [-n count] [-o format] [-O overlap] [-r steps] [-s scheme] [-S seed] [-t tensors] [-w workers] [-z chunk]"

# reduce_start [ARGS...]: an aggregator on a free port; sets RED_PID,
# RED_PORT and RED_LOG.
reduce_start() {
	RED_LOG=$BATS_TEST_TMPDIR/reduce.$$.$RANDOM.log
	"$GLEAM_BIN/gleam-reduce" -d -l 127.0.0.1:0 "$@" 2>"$RED_LOG" 3>&- &
	RED_PID=$!
	RED_PORT=$(wait_listen "$RED_LOG" "$RED_PID") || return 1
}

reduce_stop() {
	[ -n "${RED_PID:-}" ] || return 0
	kill -TERM "$RED_PID" 2>/dev/null || true
	local rc=0
	wait "$RED_PID" || rc=$?
	RED_PID=
	return $rc
}

teardown() {
	daemon_stop ${RED_PID:-} ${LINK_PID:-}
	sanitizer_check
}

@test "-h prints usage on stdout and exits 0" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" -h
	[ "$output" = "$USAGE" ]
	[ -z "$stderr" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -h
	[ "$output" = "$USAGE" ]
}

@test "unknown flags and arguments are usage errors" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -x
	[[ "$stderr" == *"-x: unknown option"* ]]
	[[ "$stderr" == *"$USAGE"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -d extra
	[[ "$stderr" == *"unexpected argument: extra"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -Q
	[[ "$stderr" == *"-Q: unknown option"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -l
	[[ "$stderr" == *"-l: missing argument"* ]]
}

@test "bad numbers name the flag and the value" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -w 0
	[[ "$stderr" == *"-w: 0: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -w 2x
	[[ "$stderr" == *"-w: 2x: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -t 0
	[[ "$stderr" == *"-t: 0: not between 1ms and 1 day"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -m 10k
	[[ "$stderr" == *"-m: 10k: not between 1m and 1t"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -l 127.0.0.1:99999
	[[ "$stderr" == *"-l: 127.0.0.1:99999: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -d 1.5
	[[ "$stderr" == *"-d: 1.5: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -s sparse
	[[ "$stderr" == *"-s: sparse: not homo, dense, gather, omni or float"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -b 48
	[[ "$stderr" == *"-b: 48: not 32 or 64"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -z 512
	[[ "$stderr" == *"-z: 512: not between 1k and 64m"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -o json
	[[ "$stderr" == *"-o: json: not human or yaml"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -c 127.0.0.1:0
	[[ "$stderr" == *"-c: 127.0.0.1:0: port out of range"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -j 0
	[[ "$stderr" == *"-j: 0: too small"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -j 65
	[[ "$stderr" == *"-j: 65: too large"* ]]
}

@test "a missing key file is a configuration error" {
	run -3 --separate-stderr "$GLEAM_BIN/gleam-reduce" -d -k "$BATS_TEST_TMPDIR/none"
	[[ "$stderr" == *"$BATS_TEST_TMPDIR/none"* ]]
}

@test "listens, says where, and exits 0 on TERM" {
	reduce_start -w 2
	[ -n "$RED_PORT" ]
	grep -q "^gleam-reduce: listening on 127.0.0.1:$RED_PORT\$" "$RED_LOG"
	reduce_stop
}

@test "an address in use is a network error" {
	reduce_start
	run -4 --separate-stderr "$GLEAM_BIN/gleam-reduce" -d -l 127.0.0.1:$RED_PORT
	[[ "$stderr" == *"listen 127.0.0.1:$RED_PORT"* ]]
	reduce_stop
}

@test "bench with its own aggregator: every scheme, results checked" {
	for s in homo dense gather omni; do
		run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -V -w 3 \
		    -n 20000 -d 0.05 -r 2 -t 2 -z 4k -s $s
		[[ "$output" == "$s "*"W=3 "*"n=20000 x2 density 5%"*", 0 mismatches" ]]
	done
	# The float-cell scheme is lossy where peeling stalls; it still runs.
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -V -w 2 \
	    -n 20000 -d 0.05 -r 1 -s float
	[[ "$output" == "float "*"mismatches" ]]
}

@test "bench -o yaml has the documented keys" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -o yaml -V \
	    -w 2 -n 5000 -r 1 -b 64
	for k in scheme workers n tensors density overlap steps cell_bits gpu \
	    median_step_s throughput_Bps sent_per_worker received_per_worker \
	    union_density core mismatches max_abs_error; do
		grep -q "^$k: " <<<"$output" || { echo "no $k"; return 1; }
	done
	grep -qx "scheme: homo" <<<"$output"
	grep -qx "cell_bits: 64" <<<"$output"
	grep -qx "mismatches: 0" <<<"$output"
	grep -qx "gpu: false" <<<"$output"
}

@test "bench -g without CUDA in the build: a usage error that says so" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -g -w 1 -n 10
	[[ "$stderr" == *"built without CUDA"*"reduce-cuda-build"* ]]
	[ -z "$output" ]
}

@test "the codec on threads (-j, GLEAM_REDUCE_THREADS) sums bit for bit alike" {
	# Large enough tensors that the codec really splits its work.
	for j in 1 3; do
		run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench \
		    -o yaml -V -w 3 -n 600000 -t 3 -r 2 -d 0.02 -j "$j"
		grep -qx "mismatches: 0" <<<"$output"
		grep "^union_density: \|^core: \|^sent_per_worker: " \
		    <<<"$output" >"$BATS_TEST_TMPDIR/j$j"
	done
	cmp "$BATS_TEST_TMPDIR/j1" "$BATS_TEST_TMPDIR/j3"
	# The lossy float-cell peer, through the environment: the same
	# layout, so the same estimates.
	for j in 1 4; do
		GLEAM_REDUCE_THREADS=$j run -0 --separate-stderr \
		    "$GLEAM_BIN/gleam-reduce" bench -o yaml -V -w 2 -n 600000 \
		    -r 1 -s float -d 0.3
		grep "^mismatches: \|^max_abs_error: \|^core: " <<<"$output" \
		    >"$BATS_TEST_TMPDIR/f$j"
	done
	cmp "$BATS_TEST_TMPDIR/f1" "$BATS_TEST_TMPDIR/f4"
}

@test "bench against a daemon with a key, and with the wrong key" {
	make_key "$BATS_TEST_TMPDIR/key"
	make_key "$BATS_TEST_TMPDIR/other" "some other secret, long enough"
	reduce_start -w 2 -k "$BATS_TEST_TMPDIR/key"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -V -w 2 \
	    -n 10000 -r 2 -c 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/key"
	[[ "$output" == *", 0 mismatches" ]]
	run -1 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/other"
	[[ "$stderr" == *"worker 0: aggregator refused us"* ]]
	# It still serves.
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -V -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/key"
	reduce_stop
}

@test "rounds through a keyed daemon (sealed) sum bit for bit as in the clear" {
	# Two workers: a float sum of two does not depend on the order.
	make_key "$BATS_TEST_TMPDIR/key"
	for k in none key; do
		if [ $k = key ]; then
			reduce_start -w 2 -k "$BATS_TEST_TMPDIR/key"
			kargs=(-k "$BATS_TEST_TMPDIR/key")
		else
			reduce_start -w 2
			kargs=()
		fi
		for s in homo dense gather omni; do
			run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench \
			    -o yaml -V -w 2 -n 60000 -d 0.03 -r 2 -t 2 -z 8k \
			    -s $s -c 127.0.0.1:$RED_PORT "${kargs[@]}"
			grep -qx "mismatches: 0" <<<"$output"
			grep "^union_density: \|^core: \|^max_abs_error: " \
			    <<<"$output" >"$BATS_TEST_TMPDIR/$s.$k"
		done
		reduce_stop
	done
	for s in homo dense gather omni; do
		cmp "$BATS_TEST_TMPDIR/$s.none" "$BATS_TEST_TMPDIR/$s.key"
	done
}

@test "SIGHUP reads the key file again; the daemon lives on" {
	make_key "$BATS_TEST_TMPDIR/key"
	make_key "$BATS_TEST_TMPDIR/old"
	reduce_start -v -w 2 -k "$BATS_TEST_TMPDIR/key"
	make_key "$BATS_TEST_TMPDIR/key" "the rotated secret, long enough too"
	kill -HUP "$RED_PID"
	for i in $(seq 50); do
		grep -q "SIGHUP: key read again" "$RED_LOG" && break
		sleep 0.1
	done
	grep -q "SIGHUP: key read again from $BATS_TEST_TMPDIR/key" "$RED_LOG"
	kill -0 "$RED_PID"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -V -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/key"
	run -1 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/old"
	[[ "$stderr" == *"aggregator refused us"* ]]
	# A file that no longer reads keeps the key in use.
	rm "$BATS_TEST_TMPDIR/key"
	kill -HUP "$RED_PID"
	for i in $(seq 50); do
		grep -q "keeping the key in use" "$RED_LOG" && break
		sleep 0.1
	done
	grep -q "keeping the key in use" "$RED_LOG"
	make_key "$BATS_TEST_TMPDIR/key" "the rotated secret, long enough too"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -V -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/key"
	reduce_stop
}

@test "a group of another size is refused with a reason" {
	reduce_start -w 3
	run -1 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -w 2 -n 1000 \
	    -r 1 -c 127.0.0.1:$RED_PORT
	[[ "$stderr" == *"group of 3 workers, not 2"* ]]
	reduce_stop
}

@test "bench through gleam-link at 1 Gbit/s" {
	reduce_start -w 2
	LINK_LOG=$BATS_TEST_TMPDIR/link.log
	"$GLEAM_BIN/gleam-link" -b 1gbit -d 100us -l 127.0.0.1:0 \
	    127.0.0.1:$RED_PORT 2>"$LINK_LOG" 3>&- &
	LINK_PID=$!
	port=$(wait_listen "$LINK_LOG" "$LINK_PID")
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -V -o yaml \
	    -w 2 -n 100000 -d 0.01 -r 2 -c 127.0.0.1:$port
	grep -qx "mismatches: 0" <<<"$output"
	reduce_stop
}

# The PyTorch DDP hooks (python/): skipped where torch is missing or the
# programs are an ASan build (the library would need ASan inside python).
@test "DDP hooks train to the fixed-point reference's parameters, bit for bit" {
	py=
	for p in python3 /usr/bin/python3; do
		if command -v "$p" >/dev/null 2>&1 &&
		    "$p" -c 'import torch' 2>/dev/null; then
			py=$p
			break
		fi
	done
	[ -n "$py" ] || skip "torch is not installed (Debian: python3-torch)"
	liba=
	for a in "$GLEAM_BIN/../lib/libgleam.a" "$GLEAM_BIN/../libgleam.a"; do
		[ -f "$a" ] && { liba=$a; break; }
	done
	[ -n "$liba" ] || skip "no libgleam.a beside $GLEAM_BIN"
	if nm "$liba" 2>/dev/null | grep -q __asan_init; then
		skip "ASan build: the DDP test runs in the plain pass"
	fi
	run -0 "$BATS_TEST_DIRNAME/../../python/build-lib" "$liba" \
	    "$BATS_TEST_TMPDIR/libgleam-hreduce.so"
	GLEAM_HREDUCE_LIB=$BATS_TEST_TMPDIR/libgleam-hreduce.so \
	    run -0 "$py" "$BATS_TEST_DIRNAME/../../python/test_ddp.py" "$GLEAM_BIN"
	[[ "$output" == *"test_ddp: 14 passed, 0 failed"* ]]
}

@test "without a key only this host may join, unless -A says so" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -d -l 0.0.0.0:0
	[[ "$stderr" == *"-l 0.0.0.0:0 without a key: anyone who reaches it could join a round and spoil it; give -k, listen on 127.0.0.1, or say -A"* ]]
	"$GLEAM_BIN/gleam-reduce" -d -A -l 0.0.0.0:0 2>"$BATS_TEST_TMPDIR/a.log" 3>&- &
	local pid=$!
	wait_listen "$BATS_TEST_TMPDIR/a.log" "$pid" >/dev/null
	grep -q "listening on 0.0.0.0:" "$BATS_TEST_TMPDIR/a.log"
	kill "$pid"; wait "$pid" || true
	make_key "$BATS_TEST_TMPDIR/k"
	"$GLEAM_BIN/gleam-reduce" -d -k "$BATS_TEST_TMPDIR/k" -l 0.0.0.0:0 2>"$BATS_TEST_TMPDIR/k.log" 3>&- &
	pid=$!
	wait_listen "$BATS_TEST_TMPDIR/k.log" "$pid" >/dev/null
	kill "$pid"; wait "$pid" || true
}
