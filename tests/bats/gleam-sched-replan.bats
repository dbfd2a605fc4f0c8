#!/usr/bin/env bats
# The daemon's re-planning (gleam-sched(1), Re-planning): a program that
# gleam-run -S started as movable is moved by the daemon (MIGRATE_ONE)
# when its server gets worse, its output identical to an unmoved run's;
# one that is not movable stays; the margin and the stay keep a client
# from going back and forth; -R 0 moves nothing.  Two gleam-serve on
# loopback, the host backend.

load test_helper

WORKLOADS=${GLEAM_WORKLOADS:-$BATS_TEST_DIRNAME/../../build/workloads}
HOST_KERNELS=${GLEAM_HOST_KERNELS:-$BATS_TEST_DIRNAME/../../build/tests/host-kernels.so}

setup_file() {
	[ -x "$WORKLOADS/infer" ] || skip "workloads not built (make cuda-tests)"
	export MODEL=$BATS_FILE_TMPDIR/model
	"$WORKLOADS/infer" -g -d 128 -l 2 -s 20m "$MODEL" >/dev/null
	# What a run that is not moved prints (its lines that do not
	# depend on time), once for the file.
	printf 'backend: host\nhost_kernels: %s\n' "$HOST_KERNELS" \
	    >"$BATS_FILE_TMPDIR/host.yaml"
	serve_start -c "$BATS_FILE_TMPDIR/host.yaml"
	"$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$WORKLOADS/infer" \
	    -K -b 2 -q 32 -n 150 "$MODEL" 2>/dev/null 3>&- |
	    stable >"$BATS_FILE_TMPDIR/ref"
	serve_kill
}

# infer's lines that do not depend on time.
stable() {
	grep -v -e '_s:' -e '_ms' -e 'per_s:'
}

# servers FAST-SPEED SLOW-SPEED: the daemon's servers.yaml.
servers() {
	local n a sp
	for n in fast slow; do
		if [ $n = fast ]; then a=$FAST sp=$1; else a=$SLOW sp=$2; fi
		printf -- '- host: %s\n  address: %s\n  protocol: 2\n' $n "$a"
		printf '  backend: host\n  max_clients: 64\n  gpus:\n'
		printf '  - {index: 0, name: G, memory_total: 17179869184, memory_free: 17179869184, utilization: 0}\n'
		printf '  clients: []\n  speed: %s\n' "$sp"
	done >"$BATS_TEST_TMPDIR/servers.yaml.new"
	sed -i '1i servers:' "$BATS_TEST_TMPDIR/servers.yaml.new"
	mv "$BATS_TEST_TMPDIR/servers.yaml.new" "$BATS_TEST_TMPDIR/servers.yaml"
}

# reloaded LOG: waits for a server's "configuration reloaded".
reloaded() {
	local i
	for i in $(seq 1 50); do
		grep -q "configuration reloaded" "$1" && return 0
		sleep 0.1
	done
	return 1
}

setup() {
	[ -x "$WORKLOADS/infer" ] || skip "workloads not built (make cuda-tests)"
	local d=$BATS_TEST_TMPDIR
	cp "$BATS_FILE_TMPDIR/host.yaml" "$d/fast.yaml"
	cp "$BATS_FILE_TMPDIR/host.yaml" "$d/slow.yaml"
	serve_start -c "$d/fast.yaml" -v
	FAST_PID=$SERVE_PID FAST=$SERVE_ADDR FAST_LOG=$SERVE_LOG
	serve_start -c "$d/slow.yaml" -v
	SLOW_PID=$SERVE_PID SLOW=$SERVE_ADDR SLOW_LOG=$SERVE_LOG
	SERVE_PID=
	# Each the other's peer: a session keeps what it needs to move
	# (gleam-serve.yaml(5), peer).
	printf 'peer: %s\n' "$SLOW" >>"$d/fast.yaml"
	printf 'peer: %s\n' "$FAST" >>"$d/slow.yaml"
	kill -HUP "$FAST_PID" "$SLOW_PID"
	reloaded "$FAST_LOG" && reloaded "$SLOW_LOG"
	servers 4 1
	cat >"$BATS_TEST_TMPDIR/links.yaml" <<-EOT
	c1:
	  probes:
	  - {server: fast, ok: true, rtt_ms: {median: 0.3}, up_mbit_s: 900, down_mbit_s: 900}
	  - {server: slow, ok: true, rtt_ms: {median: 0.3}, up_mbit_s: 900, down_mbit_s: 900}
	EOT
	# The lease ends when the client comes, not before; a client may
	# move as soon as it runs.
	export GLEAM_SCHED_LEASE=30s GLEAM_SCHED_STAY=0
	ST=$BATS_TEST_TMPDIR/st.yaml
}

teardown() {
	[ -z "${RUN_PID:-}" ] || { kill -KILL "$RUN_PID"; wait "$RUN_PID"; } 2>/dev/null || true
	daemon_stop ${SCHED_PID:-} ${FAST_PID:-} ${SLOW_PID:-}
	SCHED_PID= FAST_PID= SLOW_PID= RUN_PID=
	sanitizer_check
}

# daemon_start [ARGS...]: gleam-sched serve, status every 0.2 s, on a
# private port; SCHED_PID, SCHED_ADDR, SCHED_LOG.
daemon_start() {
	SCHED_LOG=$BATS_TEST_TMPDIR/sched.log
	: >"$SCHED_LOG"
	"$GLEAM_BIN/gleam-sched" serve -i 0.2 -l 127.0.0.1:0 \
	    -L "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml" \
	    "$@" 2>"$SCHED_LOG" 3>&- &
	SCHED_PID=$!
	SCHED_ADDR=127.0.0.1:$(wait_listen "$SCHED_LOG" "$SCHED_PID") || return 1
}

# start [ENV...]: infer through gleam-run -S, in the background, as task
# chat of c1; RUN_PID, OUT, ERR.  Waits until the daemon follows it.
start() {
	OUT=$BATS_TEST_TMPDIR/out ERR=$BATS_TEST_TMPDIR/err
	env GLEAM_CLIENT=c1 "$@" timeout 60 "$GLEAM_BIN/gleam-run" \
	    -S "$SCHED_ADDR" -t chat -O "$ST" -- "$WORKLOADS/infer" \
	    -K -b 2 -q 32 -n "${N:-150}" "$MODEL" >"$OUT" 2>"$ERR" 3>&- &
	RUN_PID=$!
	until_log "chat of c1 on fast: its client connected"
}

# until_log TEXT: waits up to 8 s for TEXT in the daemon's log.
until_log() {
	local i
	for i in $(seq 1 80); do
		grep -q -- "$1" "$SCHED_LOG" && return 0
		sleep 0.1
	done
	cat "$SCHED_LOG" "${ERR:-/dev/null}" "$FAST_LOG" "$SLOW_LOG" >&2
	return 1
}

# finish: waits for the program; it must have succeeded.
finish() {
	local rc=0
	wait "$RUN_PID" || rc=$?
	RUN_PID=
	[ "$rc" -eq 0 ] || { cat "$ERR" "$SCHED_LOG" "$FAST_LOG" >&2; return 1; }
}

# sched_status: the daemon's STATUS, as YAML.
sched_status() {
	python3 "$BATS_TEST_DIRNAME/sched-attack.py" "${SCHED_ADDR##*:}" status
}

@test "a movable client is moved off a server that got worse; its output is an unmoved run's" {
	daemon_start -R 30
	start GLEAM_MOVABLE=1
	grep -q "placed chat of c1 on fast (.*movable)" "$SCHED_LOG"
	# fast is now the slower by far: the files read again re-plan.
	servers 0.25 1
	kill -HUP "$SCHED_PID"
	until_log "re-planning (the files were read again): 1 client running, 1 movable"
	until_log "moving chat of c1 from fast to slow: .* ms per request there, .* ms on slow; the plan's cost .* s to .* s, [0-9]*% of its cost saved (20% needed)"
	until_log "chat of c1 moved from fast to slow (127.0.0.1:[0-9]*, session [0-9]* there)"
	finish
	diff "$BATS_FILE_TMPDIR/ref" <(stable <"$OUT")
	grep -q "(infer): migrated to $SLOW" "$FAST_LOG"
	grep -q "(infer): migrated in" "$SLOW_LOG"
	[ "$(sed -n 's/^migrations: //p' "$ST")" = 1 ]
	# One move, and no more: slow stays the better.
	[ "$(grep -c "gleam-sched: moving chat" "$SCHED_LOG")" = 1 ]
}

@test "a client that is not movable stays, however its server gets worse" {
	daemon_start -R 1
	start
	grep -q "placed chat of c1 on fast (.* ms per request), leased" "$SCHED_LOG"
	run -0 sched_status
	[[ "$output" == *"task: chat"*"server: fast"*"movable: false"* ]]
	servers 0.05 1
	kill -HUP "$SCHED_PID"
	until_log "re-planning (the files were read again): 1 client running, 0 movable"
	finish
	diff "$BATS_FILE_TMPDIR/ref" <(stable <"$OUT")
	! grep -q "gleam-sched: moving chat" "$SCHED_LOG"
	! grep -q "ordered to" "$FAST_LOG"
	[ "$(sed -n 's/^migrations: //p' "$ST")" = 0 ]
}

@test "the margin and the stay keep a client from going back and forth" {
	export GLEAM_SCHED_STAY=3s
	daemon_start -R 1
	N=1000 start GLEAM_MOVABLE=1
	# slow a little faster: the plan would move it, for too little.
	servers 1 1.1
	kill -HUP "$SCHED_PID"
	until_log "not moving chat of c1 from fast to slow: it would save [0-9.]*% of its cost there (.* ms per request against .* ms), less than the margin of 20%"
	# Then much faster: it moves, once it has been on fast 3 s.
	servers 0.25 1
	kill -HUP "$SCHED_PID"
	until_log "chat of c1 moved from fast to slow"
	# And fast again the faster: not back before it has been 3 s on slow.
	servers 1 0.25
	kill -HUP "$SCHED_PID"
	until_log "not moving chat of c1 from slow to fast (it would save [0-9]*% of its cost): on slow for [0-9.]* s, less than the 3 s a client stays"
	[ "$(grep -c "gleam-sched: moving chat" "$SCHED_LOG")" = 1 ]
	run -0 sched_status
	[[ "$output" == *"moves: 1"* ]]
	[[ "$output" == *"server: slow"*"moves: 1"*"last_move: {from: fast, to: slow, ago_s: "* ]]
}

@test "-R 0: no re-planning; the clients are followed, none is moved" {
	daemon_start -R 0
	grep -q "no re-planning (-R 0): running clients stay where they are" "$SCHED_LOG"
	start GLEAM_MOVABLE=1
	servers 0.05 1
	kill -HUP "$SCHED_PID"
	until_log "reloaded: 2 servers"
	sleep 1
	run -0 sched_status
	[[ "$output" == *"replan_s: 0.0"*"moves: 0"* ]]
	[[ "$output" == *"running:"*"task: chat"*"server: fast"*"movable: true"*"moving: null"*"last_move: null"* ]]
	finish
	! grep -q "re-planning\|moving chat" "$SCHED_LOG"
	! grep -q "ordered to" "$FAST_LOG"
	diff "$BATS_FILE_TMPDIR/ref" <(stable <"$OUT")
	# Once the program has ended, the daemon follows it no more.
	until_log "chat of c1 on fast: its client is gone after [0-9.]* s, 0 moves"
	run -0 sched_status
	[[ "$output" == *"running: []"* ]]
}
