#!/usr/bin/env bats
# Resume (gleam-protocol(5), Resume; gleam-client(7), GLEAM_RESUME): a
# program whose link drops goes on where it was, its output identical to
# an uninterrupted run's.  gleam-link -F cuts, resets or black-holes the
# link between gleam-run's client and the server, at byte counts spread
# over a run (measured first from the link's log, uninterrupted), on the
# host backend as in remote.bats.

load test_helper

CUDA_BIN=${GLEAM_CUDA_BIN:-$BATS_TEST_DIRNAME/../../build/cuda}
HOST_KERNELS=${GLEAM_HOST_KERNELS:-$BATS_TEST_DIRNAME/../../build/tests/host-kernels.so}
# Drops per run of a program (gleam-link takes up to 64 faults), and in
# the test of many.
POINTS=${RESUME_POINTS:-12}
MANY=${RESUME_MANY:-50}
# bench/bulk.cu, built (nvcc -O2 -o build/bench/bulk bench/bulk.cu).
BULK_BIN=${GLEAM_BULK_BIN:-$BATS_TEST_DIRNAME/../../build/bench/bulk}

setup_file() {
	[ -x "$CUDA_BIN/static/vecadd" ] || skip "CUDA test programs not built (make cuda-tests)"
	command -v python3 >/dev/null || skip "no python3"
	export SERVE_CONF=$BATS_FILE_TMPDIR/host.yaml
	printf 'backend: host\nhost_kernels: %s\n' "$HOST_KERNELS" >"$SERVE_CONF"
	# The server grants resumable sessions, or every test here fails.
	serve_start -c "$SERVE_CONF"
	GLEAM_DEBUG=2 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
	    "$CUDA_BIN/static/vecadd" 2>&1 3>&- | grep -q "resumable for" || {
		serve_kill
		echo "gleam-serve granted no resumable session" >&2
		return 1
	}
	serve_kill
}

setup() {
	[ -x "$CUDA_BIN/static/vecadd" ] || skip "CUDA test programs not built (make cuda-tests)"
	serve_start -c "$SERVE_CONF"
	target_start
}

teardown() {
	if [ -n "${BG_PID:-}" ]; then { kill -KILL "$BG_PID" && wait "$BG_PID"; } 2>/dev/null || true; fi
	link_stop
	serve_kill
	sanitizer_check
}

# target_start: what the clients' link leads to, the server; sets
# TARGET_PORT and RESUME_LOG (where resumes are logged).
target_start() {
	TARGET_PORT=$SERVE_PORT
	RESUME_LOG=$SERVE_LOG
}

# serve_crash: the server dies at once, its workers with it (a SIGTERM
# would let it serve its clients on until drain_timeout).
serve_crash() {
	{ kill -KILL "$SERVE_PID" && wait "$SERVE_PID"; } 2>/dev/null || true
	SERVE_PID=
}

# target_restart: the server crashes and restarts on the same port,
# forgetting every session.
target_restart() {
	serve_crash
	SERVE_LOG=$BATS_TEST_TMPDIR/serve2.log
	"$GLEAM_BIN/gleam-serve" -D -c "$SERVE_CONF" \
	    -l "127.0.0.1:$SERVE_PORT" 2>"$SERVE_LOG" 3>&- &
	SERVE_PID=$!
	wait_listen "$SERVE_LOG" "$SERVE_PID" >/dev/null
}

# link_start [FAULT...]: gleam-link before the target, with these faults.
link_start() {
	local f=() a
	for a; do f+=(-F "$a"); done
	LINK_LOG=$BATS_TEST_TMPDIR/link.$RANDOM.log
	"$GLEAM_BIN/gleam-link" -v "${f[@]}" -l 127.0.0.1:0 \
	    "127.0.0.1:$TARGET_PORT" 2>"$LINK_LOG" 3>&- &
	LINK_PID=$!
	LINK_ADDR=127.0.0.1:$(wait_listen "$LINK_LOG" "$LINK_PID") || return 1
}

link_stop() {
	[ -n "${LINK_PID:-}" ] || return 0
	{ kill -TERM "$LINK_PID" && wait "$LINK_PID"; } 2>/dev/null || true
	LINK_PID=
}

# link_bytes: every byte the link carried, once its connections closed.
link_bytes() {
	local i
	for i in $(seq 1 100); do
		[ "$(grep -c ': closed, ' "$LINK_LOG")" -ge 2 ] && break
		sleep 0.02
	done
	sed -n 's/.*closed, \([0-9]*\) bytes up, \([0-9]*\) bytes down.*/\1 \2/p' \
	    "$LINK_LOG" | awk '{ s += $1 + $2 } END { print s + 0 }'
}

# run_linked PROG [ARGS]: the program (in CUDA_BIN/static, or a path)
# through the link; statistics in ST.
run_linked() {
	local prog=$1
	shift
	[[ "$prog" == */* ]] || prog=$CUDA_BIN/static/$prog
	ST=$BATS_TEST_TMPDIR/st.yaml
	run --separate-stderr "$BATS_TEST_DIRNAME/hang-guard" 60 "$GLEAM_BIN/gleam-run" -s "$LINK_ADDR" \
	    ${KEY:+-k "$KEY"} -o "$ST" -- "$prog" "$@"
}

stat() {
	sed -n "s/^$1: //p" "$ST"
}

# reference PROG [ARGS]: an uninterrupted run (after one that warms the
# caches); sets REF (its output), TOTAL (the link's bytes) and WALL.
reference() {
	local prog=$1
	[[ "$prog" == */* ]] || prog=$CUDA_BIN/static/$prog
	"$GLEAM_BIN/gleam-run" -s "127.0.0.1:$TARGET_PORT" ${KEY:+-k "$KEY"} \
	    -- "$prog" "${@:2}" >/dev/null 2>&1 3>&-
	link_start
	run_linked "$@"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	REF=$output
	WALL=$(stat wall_s)
	link_stop
	TOTAL=$(link_bytes)
	[ "$TOTAL" -gt 10000 ]
}

# faults KIND...: POINTS faults spread over TOTAL bytes, the kinds in turn.
faults() {
	local i k kinds=("$@")
	for i in $(seq 1 "$POINTS"); do
		k=${kinds[$((i % ${#kinds[@]}))]}
		echo "$k@$((TOTAL * i / (POINTS + 1)))"
	done
}

# lanes_drops_ok PROG [ARGS]: the program over 4 bulk lanes, which go
# through the link with the main connection (a resumable session's lanes
# go to the address it reached), POINTS faults of each kind in turn: the
# program's output identical (or its own check passed), every drop of the
# main connection resumed, lanes dropped too and their stripes moved
# again, and the server saying so.
lanes_drops_ok() {
	export GLEAM_LANES=4 GLEAM_CACHE=0
	reference "$@"
	[ "$(stat lanes)" = 4 ] || { echo "lanes: $(stat lanes)"; return 1; }
	local kinds
	for kinds in "cut reset" "reset cut"; do
		# shellcheck disable=SC2086
		mapfile -t F < <(faults $kinds)
		link_start "${F[@]}"
		run_linked "$@"
		link_stop
		if [ "$status" -ne 0 ] || [ "$output" != "$REF" ] ||
		    [ "$(stat lanes)" != 4 ] || [ "$(stat drops)" -lt 1 ] ||
		    [ "$(stat resumes)" != "$(stat drops)" ] ||
		    [ "$(stat lane_drops)" -lt 1 ] ||
		    [ "$(stat lane_bytes_resent)" -lt 1 ]; then
			echo "faults: ${F[*]}"
			echo "status $status; drops $(stat drops), resumes $(stat resumes)," \
			    "lane drops $(stat lane_drops), $(stat lane_bytes_resent) bytes again"
			echo "--- output"; echo "$output"
			echo "--- expected"; echo "$REF"
			echo "--- stderr"; echo "$stderr"
			return 1
		fi
	done
	grep -q "bulk lane [0-9]* back (epoch [1-9]" "$RESUME_LOG"
	grep -Eq "bulk lanes dropped [1-9][0-9]* times, [0-9]+ bytes" "$RESUME_LOG"
}

# drops_ok PROG [ARGS]: the program with POINTS drops of each kind in
# turn (cut, reset), output identical, each drop resumed.
drops_ok() {
	reference "$@"
	local kinds
	for kinds in "cut reset" "reset cut"; do
		# shellcheck disable=SC2086
		mapfile -t F < <(faults $kinds)
		link_start "${F[@]}"
		run_linked "$@"
		link_stop
		if [ "$status" -ne 0 ] || [ "$output" != "$REF" ] ||
		    [ "$(stat drops)" != "$POINTS" ] ||
		    [ "$(stat resumes)" != "$POINTS" ]; then
			echo "faults: ${F[*]}"
			echo "status $status; drops $(stat drops), resumes $(stat resumes)"
			echo "--- output"; echo "$output"
			echo "--- expected"; echo "$REF"
			echo "--- stderr"; echo "$stderr"
			return 1
		fi
	done
	grep -qi "resum" "$RESUME_LOG"
}

@test "vecadd: the link cut and reset at many points, output identical" {
	drops_ok vecadd
}

@test "memcpy: the link cut and reset at many points, output identical" {
	drops_ok memcpy
}

@test "oneway: many launches, memsets and async copies, dropped at many points" {
	drops_ok oneway
}

@test "graphs: captures, graph launches and updates, dropped at many points" {
	drops_ok graphs
}

@test "cacheload: a model upload without the cache, dropped at many points" {
	GLEAM_CACHE=0 drops_ok cacheload -m 16
}

@test "cacheload: a model upload by name, dropped at many points" {
	drops_ok cacheload -m 16 -s 7
}

@test "sealed records (a key): memcpy dropped at many points, output identical" {
	KEY=$BATS_TEST_TMPDIR/key
	make_key "$KEY"
	serve_kill
	serve_start -c "$SERVE_CONF" -k "$KEY"
	target_start
	GLEAM_CACHE=0 drops_ok memcpy
}

@test "drops during the resume's own handshake: the next attempt resumes" {
	reference memcpy
	local h=$((TOTAL / 2))
	link_start "cut@$h" "reset@$((h + 60))" "cut@$((h + 150))" "reset@$((h + 400))"
	run_linked memcpy
	[ "$status" -eq 0 ]
	[ "$output" = "$REF" ]
	[ "$(stat drops)" -ge 1 ]
	[ "$(stat resumes)" = "$(stat drops)" ]
}

@test "a 2 s black hole costs about 2 s, and no drop" {
	reference memcpy
	link_start "hole@$((TOTAL / 2))+2s"
	run_linked memcpy
	[ "$status" -eq 0 ]
	[ "$output" = "$REF" ]
	[ "$(stat drops)" = 0 ]
	# 1.5 s: see the same test over bulk lanes below.
	awk -v a="$WALL" -v b="$(stat wall_s)" 'BEGIN { d = b - a; exit !(d > 1.5 && d < 3.5) }' ||
	    { echo "uninterrupted $WALL s, with the hole $(stat wall_s) s"; false; }
}

@test "a server that restarted: a prompt, clear error" {
	reference memcpy
	# The link holds the traffic while the server side restarts.
	link_start "hole@$((TOTAL / 2))+1s"
	ST=$BATS_TEST_TMPDIR/st.yaml
	"$GLEAM_BIN/gleam-run" -s "$LINK_ADDR" -O "$ST" -- "$CUDA_BIN/static/memcpy" \
	    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	BG_PID=$!
	local i
	for i in $(seq 1 200); do
		grep -q "hole" "$LINK_LOG" && break
		sleep 0.02
	done
	target_restart
	local t0=$SECONDS rc=0
	wait "$BG_PID" || rc=$?
	BG_PID=
	[ "$rc" -ne 0 ]
	[ $((SECONDS - t0)) -le 5 ]
	grep -q "lost: the server no longer has this session" "$BATS_TEST_TMPDIR/err" ||
	    { cat "$BATS_TEST_TMPDIR/err"; false; }
	[ "$(stat drops)" = 1 ]
	[ "$(stat resumes)" = 0 ]
}

@test "GLEAM_RESUME=1: no server within the window: lost after it, saying why" {
	reference memcpy
	link_start "hole@$((TOTAL / 2))+1s"
	GLEAM_RESUME=1 "$GLEAM_BIN/gleam-run" -s "$LINK_ADDR" -- "$CUDA_BIN/static/memcpy" \
	    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	BG_PID=$!
	local i
	for i in $(seq 1 200); do
		grep -q "hole" "$LINK_LOG" && break
		sleep 0.02
	done
	# The server side goes and does not come back.
	serve_crash
	local rc=0
	wait "$BG_PID" || rc=$?
	BG_PID=
	[ "$rc" -ne 0 ]
	grep -q "lost: no resume within 1 s: " "$BATS_TEST_TMPDIR/err" ||
	    { cat "$BATS_TEST_TMPDIR/err"; false; }
}

@test "GLEAM_RESUME=0: the program fails at the drop, as without resume" {
	reference memcpy
	link_start "cut@$((TOTAL / 2))"
	GLEAM_RESUME=0 run_linked memcpy
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"lost: connection closed by the server"* ]]
	[[ "$stderr" != *"resuming"* ]]
	[ "$(stat drops)" = 0 ]
}

@test "bulk lanes: memcpy both ways over 4 lanes, the link (lanes and all) cut and reset at many points" {
	lanes_drops_ok memcpy
}

@test "bulk lanes, sealed (a key): memcpy over 4 lanes cut and reset at many points" {
	KEY=$BATS_TEST_TMPDIR/key
	make_key "$KEY"
	serve_kill
	serve_start -c "$SERVE_CONF" -k "$KEY"
	target_start
	lanes_drops_ok memcpy
}

@test "bulk lanes: the bulk bench's copies, both ways, cut and reset at many points, checked by the program" {
	[ -x "$BULK_BIN" ] || skip "bench/bulk.cu not built (nvcc -O2 -o build/bench/bulk bench/bulk.cu)"
	# Its output is its times: compared without them.
	export GLEAM_LANES=4 GLEAM_CACHE=0
	reference "$BULK_BIN" -m 48 -r 2
	local kinds ref
	ref=$(echo "$REF" | sed 's/, s: .*//')
	for kinds in "cut reset" "reset cut"; do
		# shellcheck disable=SC2086
		mapfile -t F < <(faults $kinds)
		link_start "${F[@]}"
		run_linked "$BULK_BIN" -m 48 -r 2
		link_stop
		[ "$status" -eq 0 ] || { echo "faults: ${F[*]}"; echo "$stderr"; false; }
		[ "$(echo "$output" | sed 's/, s: .*//')" = "$ref" ]
		[ "$(stat resumes)" = "$(stat drops)" ]
		[ "$(stat lane_drops)" -ge 1 ]
		[ "$(stat lane_bytes_resent)" -ge 1 ]
	done
}

@test "bulk lanes: a 2 s black hole costs about 2 s, and no drop of any lane" {
	export GLEAM_LANES=4 GLEAM_CACHE=0
	reference memcpy
	link_start "hole@$((TOTAL / 2))+2s"
	run_linked memcpy
	[ "$status" -eq 0 ]
	[ "$output" = "$REF" ]
	[ "$(stat lanes)" = 4 ]
	[ "$(stat drops)" = 0 ]
	[ "$(stat lane_drops)" = 0 ]
	# The hole's 2 s against one uninterrupted run, whose own time varies
	# by some tenths of a second on a loaded machine (CI runs the tests
	# in parallel): 1.5 s is the least a hole of 2 s could show.
	awk -v a="$WALL" -v b="$(stat wall_s)" 'BEGIN { d = b - a; exit !(d > 1.5 && d < 3.5) }' ||
	    { echo "uninterrupted $WALL s, with the hole $(stat wall_s) s"; false; }
}

# many_drops LANES: memcpy with MANY faults, cut and reset in turn.
many_drops() {
	export GLEAM_LANES=$1 GLEAM_CACHE=0
	reference memcpy
	POINTS=$MANY
	mapfile -t F < <(faults cut reset)
	link_start "${F[@]}"
	run_linked memcpy
	link_stop
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ "$output" = "$REF" ]
	[ "$(grep -c ': closed: fault: ' "$LINK_LOG")" -ge "$MANY" ]
}

@test "many drops in one run: the main connection dropped $MANY times, each resumed" {
	many_drops 0
	[ "$(stat drops)" = "$MANY" ]
	[ "$(stat resumes)" = "$MANY" ]
}

@test "many drops in one run, with 4 bulk lanes: $MANY faults, output identical" {
	many_drops 4
	[ "$(stat lanes)" = 4 ]
	[ "$(stat resumes)" = "$(stat drops)" ]
	[ "$(stat lane_drops)" -ge 1 ]
}
