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
# Drops per run of a program (gleam-link takes up to 16 faults).
POINTS=${RESUME_POINTS:-12}

setup_file() {
	[ -x "$CUDA_BIN/static/vecadd" ] || skip "CUDA test programs not built (make cuda-tests)"
	command -v python3 >/dev/null || skip "no python3"
	export SERVE_CONF=$BATS_FILE_TMPDIR/host.yaml
	printf 'backend: host\nhost_kernels: %s\n' "$HOST_KERNELS" >"$SERVE_CONF"
	# The server grants resumable sessions, or every test here fails.
	serve_start -f "$SERVE_CONF"
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
	serve_start -f "$SERVE_CONF"
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

# target_restart: the server restarts on the same port, forgetting every
# session.
target_restart() {
	serve_kill
	SERVE_LOG=$BATS_TEST_TMPDIR/serve2.log
	"$GLEAM_BIN/gleam-serve" -d -f "$SERVE_CONF" \
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

# run_linked PROG [ARGS]: the program through the link; statistics in ST.
run_linked() {
	local prog=$1
	shift
	ST=$BATS_TEST_TMPDIR/st.yaml
	run --separate-stderr timeout 60 "$GLEAM_BIN/gleam-run" -s "$LINK_ADDR" \
	    ${KEY:+-k "$KEY"} -o "$ST" -- "$CUDA_BIN/static/$prog" "$@"
}

stat() {
	sed -n "s/^$1: //p" "$ST"
}

# reference PROG [ARGS]: an uninterrupted run (after one that warms the
# caches); sets REF (its output), TOTAL (the link's bytes) and WALL.
reference() {
	"$GLEAM_BIN/gleam-run" -s "127.0.0.1:$TARGET_PORT" ${KEY:+-k "$KEY"} \
	    -- "$CUDA_BIN/static/$1" "${@:2}" >/dev/null 2>&1 3>&-
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
	serve_start -f "$SERVE_CONF" -k "$KEY"
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
	awk -v a="$WALL" -v b="$(stat wall_s)" 'BEGIN { d = b - a; exit !(d > 1.8 && d < 3.5) }' ||
	    { echo "uninterrupted $WALL s, with the hole $(stat wall_s) s"; false; }
}

@test "a server that restarted: a prompt, clear error" {
	reference memcpy
	# The link holds the traffic while the server side restarts.
	link_start "hole@$((TOTAL / 2))+1s"
	ST=$BATS_TEST_TMPDIR/st.yaml
	"$GLEAM_BIN/gleam-run" -s "$LINK_ADDR" -o "$ST" -- "$CUDA_BIN/static/memcpy" \
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
	serve_kill
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

@test "a resumable session opens no bulk lanes" {
	GLEAM_LANES=4 GLEAM_DEBUG=2 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" \
	    -s "127.0.0.1:$TARGET_PORT" -- "$CUDA_BIN/static/memcpy"
	[[ "$stderr" == *"lanes: none, the session is resumable"* ]]
}
