#!/usr/bin/env bats
# Migration (gleam-protocol(5), Migration; gleam-serve(8), SIGUSR1 and
# drain: migrate): a running program's session moves from one gleam-serve
# to another, its device memory, contexts, modules, functions, streams and
# events recreated at the same addresses, and the program goes on there
# as after a drop, its output identical to an uninterrupted run's.  Two
# servers on loopback, the host backend.

load test_helper

CUDA_BIN=${GLEAM_CUDA_BIN:-$BATS_TEST_DIRNAME/../../build/cuda}
WORKLOADS=${GLEAM_WORKLOADS:-$BATS_TEST_DIRNAME/../../build/workloads}
HOST_KERNELS=${GLEAM_HOST_KERNELS:-$BATS_TEST_DIRNAME/../../build/tests/host-kernels.so}
# bench/bulk.cu, built (nvcc -O2 -o build/bench/bulk bench/bulk.cu).
BULK_BIN=${GLEAM_BULK_BIN:-$BATS_TEST_DIRNAME/../../build/bench/bulk}

setup_file() {
	[ -x "$WORKLOADS/infer" ] || skip "workloads not built (make cuda-tests)"
	export MODEL=$BATS_FILE_TMPDIR/model
	"$WORKLOADS/infer" -g -d 128 -l 2 -s 20m "$MODEL" >/dev/null
}

setup() {
	[ -x "$WORKLOADS/infer" ] || skip "workloads not built (make cuda-tests)"
	[ -x "$CUDA_BIN/static/soak" ] || skip "CUDA test programs not built (make cuda-tests)"
	printf 'backend: host\nhost_kernels: %s\n' "$HOST_KERNELS" \
	    >"$BATS_TEST_TMPDIR/target.yaml"
	serve_start -c "$BATS_TEST_TMPDIR/target.yaml" ${TARGET_ARGS:-}
	T_PID=$SERVE_PID T_PORT=$SERVE_PORT T_LOG=$SERVE_LOG
	printf 'backend: host\nhost_kernels: %s\npeer: 127.0.0.1:%s\n%s' \
	    "$HOST_KERNELS" "$T_PORT" "${SOURCE_EXTRA:-}" \
	    >"$BATS_TEST_TMPDIR/source.yaml"
	serve_start -c "$BATS_TEST_TMPDIR/source.yaml" -v
	S_PID=$SERVE_PID S_PORT=$SERVE_PORT S_LOG=$SERVE_LOG
	ST=$BATS_TEST_TMPDIR/st.yaml
}

teardown() {
	mitm_kill
	local p
	for p in ${RUN_PID:-} ${S_PID:-} ${T_PID:-} ${F_PID:-}; do
		{ kill -KILL "$p" && wait "$p"; } 2>/dev/null || true
	done
}

# infer's lines that do not depend on time.
stable() {
	grep -v -e '_s:' -e '_ms' -e 'per_s:'
}

# start PROG [ARGS]: on the source, in the background; RUN_PID, OUT, ERR.
start() {
	OUT=$BATS_TEST_TMPDIR/out ERR=$BATS_TEST_TMPDIR/err
	timeout 120 "$GLEAM_BIN/gleam-run" -s "${VIA:-127.0.0.1:$S_PORT}" -O "$ST" \
	    -- "$@" >"$OUT" 2>"$ERR" 3>&- &
	RUN_PID=$!
}

# signal_until SIG: SIG to the source until it logs a migration (or the
# program ends): an order before the client is there reaches no one.
signal_until() {
	local i
	for i in $(seq 1 100); do
		grep -q "migrated to" "$S_LOG" && return 0
		kill -0 "$RUN_PID" 2>/dev/null || break
		kill "-$1" "$S_PID"
		sleep 0.2
	done
	grep -q "migrated to" "$S_LOG" || { cat "$S_LOG" "$ERR"; return 1; }
}

@test "infer: migrated mid-run (SIGUSR1), output identical, counted" {
	local rc=0
	"$GLEAM_BIN/gleam-run" -s "127.0.0.1:$T_PORT" -- "$WORKLOADS/infer" \
	    -K -b 2 -q 32 -n 100 "$MODEL" 2>/dev/null 3>&- | stable >"$BATS_TEST_TMPDIR/ref"
	start "$WORKLOADS/infer" -K -b 2 -q 32 -n 100 "$MODEL"
	signal_until USR1
	wait "$RUN_PID" || rc=$?
	RUN_PID=
	[ "$rc" -eq 0 ] || { cat "$ERR"; return 1; }
	diff "$BATS_TEST_TMPDIR/ref" <(stable <"$OUT")
	grep -q "checksum:" "$OUT"
	grep -q "(infer): migrated to 127.0.0.1:$T_PORT" "$S_LOG"
	grep -q "(infer): migrated in" "$T_LOG"
	grep -q "(infer): resumes session" "$T_LOG"
	[ "$(sed -n 's/^migrations: //p' "$ST")" = 1 ]
	[ "$(sed -n 's/^resumes: //p' "$ST")" = 1 ]
}

# stat KEY: the last run's statistic KEY.
stat() {
	sed -n "s/^$1: //p" "$ST"
}

@test "bulk lanes: migrated mid-run, the lanes opened again at the target, the bytes checked" {
	[ -x "$BULK_BIN" ] || skip "bench/bulk.cu not built (nvcc -O2 -o build/bench/bulk bench/bulk.cu)"
	TARGET_ARGS=-vv
	teardown
	setup
	export GLEAM_LANES=4 GLEAM_CACHE=0
	local rc=0 runs=30
	# The program checks every byte that comes back; its times vary.
	start "$BULK_BIN" -m 32 -r $runs
	signal_until USR1
	wait "$RUN_PID" || rc=$?
	RUN_PID=
	[ "$rc" -eq 0 ] || { cat "$ERR" "$S_LOG"; return 1; }
	[ "$(grep -c '^- {dir: htod, mib: 32, s:' "$OUT")" = $runs ]
	[ "$(grep -c '^- {dir: dtoh, mib: 32, s:' "$OUT")" = $runs ]
	grep -q "(bulk): migrated to 127.0.0.1:$T_PORT" "$S_LOG"
	grep -q "(bulk): migrated in" "$T_LOG"
	# New lanes at the target, taken there.
	grep -q ": 4 lane(s)" "$T_LOG"
	[ "$(stat migrations)" = 1 ]
	[ "$(stat lanes)" = 4 ]
	# Most of the copies' bytes over the lanes, none twice.
	local b
	b=$(stat lane_bytes)
	[ "$b" -gt $((runs * 32 << 20)) ] && [ "$b" -le $((2 * runs * 32 << 20)) ] ||
	    { echo "lane_bytes $b"; return 1; }
}

@test "bulk lanes: along three servers, whatever copy is in hand when the session moves, every byte checked" {
	[ -x "$BULK_BIN" ] || skip "bench/bulk.cu not built (nvcc -O2 -o build/bench/bulk bench/bulk.cu)"
	printf 'backend: host\nhost_kernels: %s\n' "$HOST_KERNELS" \
	    >"$BATS_TEST_TMPDIR/far.yaml"
	serve_start -c "$BATS_TEST_TMPDIR/far.yaml" -v
	F_PID=$SERVE_PID F_PORT=$SERVE_PORT F_LOG=$SERVE_LOG
	printf 'backend: host\nhost_kernels: %s\npeer: 127.0.0.1:%s\n' \
	    "$HOST_KERNELS" "$F_PORT" >"$BATS_TEST_TMPDIR/target.yaml"
	kill -HUP "$T_PID"
	sleep 0.3
	export GLEAM_LANES=4 GLEAM_CACHE=0 GLEAM_DEBUG=2
	local rc=0 i runs=40
	start "$BULK_BIN" -m 32 -r $runs
	# Orders to both, often: a copy is often on the lanes when one lands.
	for i in $(seq 1 200); do
		grep -q "migrated in" "$F_LOG" && break
		kill -0 "$RUN_PID" 2>/dev/null || break
		kill -USR1 "$S_PID" "$T_PID"
		sleep 0.1
	done
	wait "$RUN_PID" || rc=$?
	RUN_PID=
	[ "$rc" -eq 0 ] || { cat "$ERR" "$S_LOG" "$T_LOG"; return 1; }
	[ "$(grep -c '^- {dir: ' "$OUT")" = $((2 * runs)) ]
	[ "$(stat migrations)" = 2 ] || { grep -h migrat "$S_LOG" "$T_LOG"; return 1; }
	[ "$(stat lanes)" = 4 ]
	grep -q "(bulk): migrated in" "$F_LOG"
	# The old servers' lanes were never tried again after the move.
	! grep -q "bulk lane [0-9]* back" "$S_LOG" "$T_LOG"
	! grep -q "lost" "$ERR"
}

@test "a REDIRECT lost in a drop: the source tells the client again where its session went" {
	local rc=0
	"$GLEAM_BIN/gleam-run" -s "127.0.0.1:$T_PORT" -- "$WORKLOADS/infer" \
	    -K -b 2 -q 32 -n 100 "$MODEL" 2>/dev/null 3>&- | stable >"$BATS_TEST_TMPDIR/ref"
	# The link to the source is cut where the REDIRECT would cross.
	mitm_start "$S_PORT" -x 25
	VIA=$MITM_ADDR start "$WORKLOADS/infer" -K -b 2 -q 32 -n 100 "$MODEL"
	signal_until USR1
	wait "$RUN_PID" || rc=$?
	RUN_PID=
	[ "$rc" -eq 0 ] || { cat "$ERR" "$S_LOG"; return 1; }
	diff "$BATS_TEST_TMPDIR/ref" <(stable <"$OUT")
	grep -q "(infer): migrated to 127.0.0.1:$T_PORT" "$S_LOG"
	grep -q "session [0-9]* moved to 127.0.0.1:$T_PORT: told so again" "$S_LOG"
	grep -q "(infer): resumes session" "$T_LOG"
	grep -q "the session moves to 127.0.0.1:$T_PORT" "$ERR"
	[ "$(stat migrations)" = 1 ]
	[ "$(stat drops)" = 1 ]
	[ "$(stat resumes)" = 1 ]
}

@test "a session that moved is told so again only with its token, and not after its window" {
	printf 'backend: host\nhost_kernels: %s\npeer: 127.0.0.1:%s\nresume: 2s\n' \
	    "$HOST_KERNELS" "$T_PORT" >"$BATS_TEST_TMPDIR/source.yaml"
	kill -HUP "$S_PID"
	sleep 0.3
	run -0 python3 "$BATS_TEST_DIRNAME/migwire.py" moved "$S_PORT" "$S_PID" "$T_PORT"
	echo "$output"
	[[ "${lines[0]}" == "redirect 127.0.0.1 $T_PORT "* ]]
	# Told again: the same session there, the same token.
	[ "${lines[1]}" = "${lines[0]/redirect/again}" ]
	[ "${lines[2]}" = "wrong token: error 6" ]
	[ "${lines[3]}" = "after the window: error 6" ]
}

@test "drain: migrate: SIGTERM moves the client instead of cutting it off" {
	SOURCE_EXTRA='drain: migrate
drain_timeout: 30s
'
	teardown
	setup
	local rc=0
	# Without lanes: a session moves only when no copy is on them, and a
	# soak that keeps them busy on a loaded machine may finish first (the
	# lanes' own migration tests are above).
	GLEAM_LANES=0 start "$CUDA_BIN/static/soak" 4 8
	# Once it is served (a signal before would end the server at once).
	for i in $(seq 1 100); do
		grep -q "(soak): remoting" "$S_LOG" && break
		sleep 0.05
	done
	kill -TERM "$S_PID"
	wait "$RUN_PID" || rc=$?
	RUN_PID=
	[ "$rc" -eq 0 ] || { cat "$ERR" "$S_LOG"; return 1; }
	grep -q "^soak: ok" "$OUT"
	grep -q "(soak): migrated in" "$T_LOG"
	# The source, its clients gone, exits.
	for i in $(seq 1 50); do kill -0 "$S_PID" 2>/dev/null || break; sleep 0.1; done
	run kill -0 "$S_PID"
	[ "$status" -ne 0 ]
}

@test "a session that cannot resume stays where it is" {
	local rc=0
	GLEAM_RESUME=0 start "$CUDA_BIN/static/soak" 2 4
	for i in $(seq 1 40); do
		grep -q "not migrated" "$S_LOG" && break
		kill -USR1 "$S_PID"
		sleep 0.1
	done
	wait "$RUN_PID" || rc=$?
	RUN_PID=
	[ "$rc" -eq 0 ]
	grep -q "^soak: ok" "$OUT"
	grep -q "not migrated: its session is not resumable" "$S_LOG"
	! grep -q "migrated in" "$T_LOG"
}

@test "a peer that is not there: the client stays and finishes" {
	printf 'backend: host\nhost_kernels: %s\npeer: 127.0.0.1:1\n' \
	    "$HOST_KERNELS" >"$BATS_TEST_TMPDIR/source.yaml"
	kill -HUP "$S_PID"
	sleep 0.3
	local rc=0
	start "$CUDA_BIN/static/soak" 2 4
	for i in $(seq 1 40); do
		grep -q "not migrated to" "$S_LOG" && break
		kill -USR1 "$S_PID"
		sleep 0.1
	done
	wait "$RUN_PID" || rc=$?
	RUN_PID=
	[ "$rc" -eq 0 ]
	grep -q "^soak: ok" "$OUT"
	grep -q "not migrated to 127.0.0.1:1: .*; it stays here" "$S_LOG"
}

@test "gleam-serve -n: peer and drain are checked" {
	printf 'peer: nowhere\n' >"$BATS_TEST_TMPDIR/bad.yaml"
	run "$GLEAM_BIN/gleam-serve" -n -c "$BATS_TEST_TMPDIR/bad.yaml"
	[ "$status" -eq 3 ]
	[[ "$output" == *"peer"* ]]
	printf 'drain: later\n' >"$BATS_TEST_TMPDIR/bad.yaml"
	run "$GLEAM_BIN/gleam-serve" -n -c "$BATS_TEST_TMPDIR/bad.yaml"
	[ "$status" -eq 3 ]
	[[ "$output" == *"drain"* ]]
	printf 'peer: gpu2:7393\ndrain: migrate\n' >"$BATS_TEST_TMPDIR/ok.yaml"
	run "$GLEAM_BIN/gleam-serve" -n -c "$BATS_TEST_TMPDIR/ok.yaml"
	[ "$status" -eq 0 ]
}
