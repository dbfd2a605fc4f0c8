#!/usr/bin/env bats
# gleam-reduce's interface: flags, numbers, the listening line, signals,
# keys, and the benchmark driving real workers through a real aggregator
# (its own, or one started here, or one behind gleam-link), with results
# checked bit for bit.  The protocol's bad inputs are tests/unit's
# test_hreduce; the decoder is fuzzed by tests/fuzz/fuzz_reduce.c.

load test_helper

USAGE="usage: gleam-reduce [serve] [-ADv] [-k keyfile] [-l address:port] [-m size] [-P pidfile] [-T timeout] [-w workers]
       gleam-reduce bench [-gq] [--verify] [-b bits] [-d density] [-j threads] [-k keyfile] [-N count] [-o format] [-O overlap] [-r steps] [-s address:port] [-S seed] [-t tensors] [-w workers] [-x scheme] [-z chunk]"

# reduce_start [ARGS...]: an aggregator on a free port; sets RED_PID,
# RED_PORT and RED_LOG.
reduce_start() {
	RED_LOG=$BATS_TEST_TMPDIR/reduce.$$.$RANDOM.log
	"$GLEAM_BIN/gleam-reduce" -D -l 127.0.0.1:0 "$@" 2>"$RED_LOG" 3>&- &
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

@test "-h prints usage and every option of the mode with its long name on stdout, exits 0" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" -h
	[ "$(sed '/^$/,$d' <<<"$output")" = "$USAGE" ]
	for o in "-A, --allow-any" "-D, --foreground" "-k, --key=keyfile" \
	    "-l, --listen=address:port" "-m, --memory=size" \
	    "-P, --pid-file=pidfile" "-T, --timeout=timeout" "-v, --verbose" \
	    "-w, --workers=workers" "-h, --help" "-V, --version" \
	    "-d   use -D or --foreground" "-t timeout   use -T or --timeout"; do
		[[ "$output" == *"  $o"* ]] || { echo "no $o"; false; }
	done
	[ -z "$stderr" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" serve --help
	[ "$(sed '/^$/,$d' <<<"$output")" = "$USAGE" ]
	[[ "$output" == *"  -T, --timeout=timeout"* ]]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -h
	[ "$(sed '/^$/,$d' <<<"$output")" = "$USAGE" ]
	for o in "-b, --bits=bits" "-d, --density=density" "-g, --gpu" \
	    "-j, --threads=threads" "-k, --key=keyfile" "-N, --count=count" \
	    "-o, --format=format" "-O, --overlap=overlap" "-q, --quiet" \
	    "-r, --steps=steps" "-s, --server=address:port" "-S, --seed=seed" \
	    "-t, --tensors=tensors" "    --verify" "-w, --workers=workers" \
	    "-x, --scheme=scheme" "-z, --chunk=chunk" "-h, --help" \
	    "-V, --version" "-c address:port   use -s or --server" \
	    "-n count   use -N or --count"; do
		[[ "$output" == *"  $o"* ]] || { echo "no $o"; false; }
	done
}

@test "-V prints the version of lib/common/util.h; bench -V beside other arguments is refused" {
	for m in "" serve bench; do
		run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" $m -V
		[ "$output" = "gleam-reduce $(gleam_version)" ]
		run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" $m --version
		[ "$output" = "gleam-reduce $(gleam_version)" ]
	done
	# 0.1's bench -V was the check of the sums: never run unchecked.
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -V -w 2 -N 100
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "gleam-reduce: -V is the version now; --verify checks the sums" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -w 2 -qV
	[ "${stderr_lines[0]}" = "gleam-reduce: -V is the version now; --verify checks the sums" ]
}

@test "unknown flags and arguments are usage errors" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -x
	[ "${stderr_lines[0]}" = "gleam-reduce: unknown option -x" ]
	[[ "$stderr" == *"$USAGE"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -D extra
	[[ "$stderr" == *"unexpected argument: extra"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -Q
	[ "${stderr_lines[0]}" = "gleam-reduce: unknown option -Q" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --density
	[ "${stderr_lines[0]}" = "gleam-reduce: option --density needs an argument: density" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -l
	[ "${stderr_lines[0]}" = "gleam-reduce: option -l needs an argument: address:port" ]
	# The mode is the first word; a later one is an operand.
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -D bench
	[[ "$stderr" == *"unexpected argument: bench"* ]]
}

@test "long options, --name=value and --name value" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify \
	    --workers=2 --count 20000 --density=0.05 --steps 1 --scheme=dense \
	    --format yaml --quiet
	grep -qx "scheme: dense" <<<"$output"
	grep -qx "n: 20000" <<<"$output"
	grep -qx "mismatches: 0" <<<"$output"
	[ -z "$stderr" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" --timeout=0 --foreground
	[[ "$stderr" == *"-T: 0: not between 1ms and 1 day"* ]]
}

@test "the deprecated spellings work, each with a warning" {
	# bench -c, -n and -s SCHEME.
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify \
	    -w 2 -n 20000 -s dense -r 1 -o yaml
	grep -qx "scheme: dense" <<<"$output"
	grep -qx "n: 20000" <<<"$output"
	[[ "$stderr" == *"-n is deprecated and will go; use -N or --count"* ]]
	[[ "$stderr" == *"-s SCHEME is deprecated and will go; use -x dense (--scheme)"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -c 127.0.0.1:0
	[ "${stderr_lines[0]}" = "gleam-reduce: -c is deprecated and will go; use -s or --server" ]
	[ "${stderr_lines[1]}" = "gleam-reduce: -s: 127.0.0.1:0: port out of range" ]
	# The aggregator's -d and -t.
	RED_LOG=$BATS_TEST_TMPDIR/old.log
	"$GLEAM_BIN/gleam-reduce" -d -t 5s -l 127.0.0.1:0 2>"$RED_LOG" 3>&- &
	RED_PID=$!
	RED_PORT=$(wait_listen "$RED_LOG" "$RED_PID")
	grep -q -- "-d is deprecated and will go; use -D or --foreground" "$RED_LOG"
	grep -q -- "-t is deprecated and will go; use -T or --timeout" "$RED_LOG"
	reduce_stop
}

@test "bad numbers name the flag and the value" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -w 0
	[[ "$stderr" == *"-w: 0: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -w 2x
	[[ "$stderr" == *"-w: 2x: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -T 0
	[[ "$stderr" == *"-T: 0: not between 1ms and 1 day"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -m 10k
	[[ "$stderr" == *"-m: 10k: not between 1m and 1t"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -l 127.0.0.1:99999
	[[ "$stderr" == *"-l: 127.0.0.1:99999: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -d 1.5
	[[ "$stderr" == *"-d: 1.5: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -x sparse
	[[ "$stderr" == *"-x: sparse: not homo, dense, gather, omni or float"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -b 48
	[[ "$stderr" == *"-b: 48: not 32 or 64"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -z 512
	[[ "$stderr" == *"-z: 512: not between 1k and 64m"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -o json
	[[ "$stderr" == *"-o: json: not human or yaml"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -s 127.0.0.1:0
	[[ "$stderr" == *"-s: 127.0.0.1:0: port out of range"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -j 0
	[[ "$stderr" == *"-j: 0: too small"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -j 65
	[[ "$stderr" == *"-j: 65: too large"* ]]
}

@test "a missing key file is a configuration error" {
	run -3 --separate-stderr "$GLEAM_BIN/gleam-reduce" -D -k "$BATS_TEST_TMPDIR/none"
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
	run -4 --separate-stderr "$GLEAM_BIN/gleam-reduce" -D -l 127.0.0.1:$RED_PORT
	[[ "$stderr" == *"listen 127.0.0.1:$RED_PORT"* ]]
	reduce_stop
}

@test "bench with its own aggregator: every scheme, results checked" {
	for s in homo dense gather omni; do
		run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 3 \
		    -N 20000 -d 0.05 -r 2 -t 2 -z 4k -x $s
		[[ "$output" == "$s "*"W=3 "*"n=20000 x2 density 5%"*", 0 mismatches" ]]
	done
	# The float-cell scheme is lossy where peeling stalls; it still runs.
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 2 \
	    -N 20000 -d 0.05 -r 1 -x float
	[[ "$output" == "float "*"mismatches" ]]
}

@test "bench -o yaml has the documented keys" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -o yaml --verify \
	    -w 2 -N 5000 -r 1 -b 64
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
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -g -w 1 -N 10
	[[ "$stderr" == *"built without CUDA"*"reduce-cuda-build"* ]]
	[ -z "$output" ]
}

@test "the codec on threads (-j, GLEAM_REDUCE_THREADS) sums bit for bit alike" {
	# Large enough tensors that the codec really splits its work.
	for j in 1 3; do
		run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench \
		    -o yaml --verify -w 3 -N 600000 -t 3 -r 2 -d 0.02 -j "$j"
		grep -qx "mismatches: 0" <<<"$output"
		grep "^union_density: \|^core: \|^sent_per_worker: " \
		    <<<"$output" >"$BATS_TEST_TMPDIR/j$j"
	done
	cmp "$BATS_TEST_TMPDIR/j1" "$BATS_TEST_TMPDIR/j3"
	# The lossy float-cell peer, through the environment: the same
	# layout, so the same estimates.
	for j in 1 4; do
		GLEAM_REDUCE_THREADS=$j run -0 --separate-stderr \
		    "$GLEAM_BIN/gleam-reduce" bench -o yaml --verify -w 2 -N 600000 \
		    -r 1 -x float -d 0.3
		grep "^mismatches: \|^max_abs_error: \|^core: " <<<"$output" \
		    >"$BATS_TEST_TMPDIR/f$j"
	done
	cmp "$BATS_TEST_TMPDIR/f1" "$BATS_TEST_TMPDIR/f4"
}

@test "bench against a daemon with a key, and with the wrong key" {
	make_key "$BATS_TEST_TMPDIR/key"
	make_key "$BATS_TEST_TMPDIR/other" "some other secret, long enough"
	reduce_start -w 2 -k "$BATS_TEST_TMPDIR/key"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 2 \
	    -N 10000 -r 2 -s 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/key"
	[[ "$output" == *", 0 mismatches" ]]
	run -1 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -w 2 \
	    -N 10000 -r 1 -s 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/other"
	[[ "$stderr" == *"worker 0: aggregator refused us"* ]]
	# It still serves.
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 2 \
	    -N 10000 -r 1 -s 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/key"
	reduce_stop
}

@test "a daemon whose key file lists identities: a rank proves any one of them" {
	local k=$BATS_TEST_TMPDIR n
	: >"$k/ranks.keys"
	chmod 600 "$k/ranks.keys"
	for n in alice bob; do
		"$GLEAM_BIN/gleam-key" -i "$n" "$k/$n.key"
		cat "$k/$n.key" >>"$k/ranks.keys"
	done
	"$GLEAM_BIN/gleam-key" -i carol "$k/carol.key"
	reduce_start -v -w 2 -k "$k/ranks.keys"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$k/alice.key"
	[[ "$output" == *", 0 mismatches" ]]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$k/bob.key"
	# carol is not listed: refused, as a wrong key is.
	run -1 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$k/carol.key"
	[[ "$stderr" == *"worker 0: aggregator refused us"* ]]
	# SIGHUP reads the identities again: carol now, bob no more.
	grep -v '^bob ' "$k/ranks.keys" >"$k/new.keys"
	cat "$k/carol.key" >>"$k/new.keys"
	chmod 600 "$k/new.keys"
	mv "$k/new.keys" "$k/ranks.keys"
	kill -HUP "$RED_PID"
	for n in $(seq 1 100); do
		grep -q "SIGHUP: key read again from $k/ranks.keys (2 identities)" "$RED_LOG" && break
		sleep 0.05
	done
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$k/carol.key"
	run -1 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$k/bob.key"
	reduce_stop
	# Two lines of one name: refused at start, naming the file.
	cat "$k/alice.key" "$k/alice.key" >"$k/dup.keys"
	chmod 600 "$k/dup.keys"
	run -3 "$GLEAM_BIN/gleam-reduce" -D -l 127.0.0.1:0 -k "$k/dup.keys"
	[[ "$output" == *"dup.keys"*"identity alice again"* ]]
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
			    -o yaml --verify -w 2 -N 60000 -d 0.03 -r 2 -t 2 -z 8k \
			    -x $s -s 127.0.0.1:$RED_PORT "${kargs[@]}"
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

@test "-k -: the key from standard input, kept across SIGHUP; bench takes one too" {
	make_key "$BATS_TEST_TMPDIR/key"
	RED_LOG=$BATS_TEST_TMPDIR/reduce.log
	"$GLEAM_BIN/gleam-reduce" -D -v -w 2 -l 127.0.0.1:0 -k - \
	    <"$BATS_TEST_TMPDIR/key" 2>"$RED_LOG" 3>&- &
	RED_PID=$!
	RED_PORT=$(wait_listen "$RED_LOG" "$RED_PID")
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/key"
	kill -HUP "$RED_PID"
	for i in $(seq 50); do
		grep -q "SIGHUP: key read again" "$RED_LOG" && break
		sleep 0.1
	done
	grep -q "SIGHUP: key read again from stdin (as it was at start)" "$RED_LOG"
	# Its workers, forked, hold the key read before.
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 2 \
	    -n 10000 -r 1 -c 127.0.0.1:$RED_PORT -k - <"$BATS_TEST_TMPDIR/key"
	reduce_stop
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
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 2 \
	    -N 10000 -r 1 -s 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/key"
	run -1 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -w 2 \
	    -N 10000 -r 1 -s 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/old"
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
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -w 2 \
	    -N 10000 -r 1 -s 127.0.0.1:$RED_PORT -k "$BATS_TEST_TMPDIR/key"
	reduce_stop
}

@test "a group of another size is refused with a reason" {
	reduce_start -w 3
	run -1 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench -w 2 -N 1000 \
	    -r 1 -s 127.0.0.1:$RED_PORT
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
	run -0 --separate-stderr "$GLEAM_BIN/gleam-reduce" bench --verify -o yaml \
	    -w 2 -N 100000 -d 0.01 -r 2 -s 127.0.0.1:$port
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
	run -2 --separate-stderr "$GLEAM_BIN/gleam-reduce" -D -l 0.0.0.0:0
	[[ "$stderr" == *"-l 0.0.0.0:0 without a key: anyone who reaches it could join a round and spoil it; give -k, listen on 127.0.0.1, or say -A"* ]]
	"$GLEAM_BIN/gleam-reduce" -D -A -l 0.0.0.0:0 2>"$BATS_TEST_TMPDIR/a.log" 3>&- &
	local pid=$!
	wait_listen "$BATS_TEST_TMPDIR/a.log" "$pid" >/dev/null
	grep -q "listening on 0.0.0.0:" "$BATS_TEST_TMPDIR/a.log"
	kill "$pid"; wait "$pid" || true
	make_key "$BATS_TEST_TMPDIR/k"
	"$GLEAM_BIN/gleam-reduce" -D -k "$BATS_TEST_TMPDIR/k" -l 0.0.0.0:0 2>"$BATS_TEST_TMPDIR/k.log" 3>&- &
	pid=$!
	wait_listen "$BATS_TEST_TMPDIR/k.log" "$pid" >/dev/null
	kill "$pid"; wait "$pid" || true
}
