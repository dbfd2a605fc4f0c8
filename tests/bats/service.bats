#!/usr/bin/env bats
# The daemons as a service manager sees them, with none running: readiness
# through the sd_notify protocol (a datagram socket of our own, read by
# sd-notify-listen), pid files, stderr as journald's stream, detaching
# without syslog, and the units in systemd/ (systemd-analyze verify).

load test_helper

# gleam-sched's daemon reads the example inputs (examples/README).
SCHED=$BATS_TEST_DIRNAME/../../examples

setup() {
	T=$BATS_TEST_TMPDIR
	NOTIFY_OUT=$T/notify.out
	"$BATS_TEST_DIRNAME/sd-notify-listen" "$T/notify.sock" "$NOTIFY_OUT" \
	    3>&- &
	LISTEN_PID=$!
	until_line "$NOTIFY_OUT" bound
}

teardown() {
	daemon_stop ${DAEMON_PID:-} ${OTHER_PID:-}
	if [ -n "${LISTEN_PID:-}" ]; then { kill -KILL "$LISTEN_PID" && wait "$LISTEN_PID"; } 2>/dev/null || true; fi
	sanitizer_check
}

# until_line FILE TEXT: waits up to 10 s for a line of FILE that starts
# with TEXT.
until_line() {
	local i
	for i in $(seq 1 200); do
		grep -q "^$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "no line '$2' in $1:" >&2
	cat "$1" >&2
	return 1
}

# until_count FILE TEXT N: waits up to 10 s for N lines starting with TEXT.
until_count() {
	local i
	for i in $(seq 1 200); do
		[ "$(grep -c "^$2" "$1")" -ge "$3" ] && return 0
		sleep 0.05
	done
	cat "$1" >&2
	return 1
}

# start PROGRAM ARGS...: in the foreground, told where to notify; sets
# DAEMON_PID and DAEMON_LOG.
start() {
	DAEMON_LOG=$T/daemon.$RANDOM.log
	NOTIFY_SOCKET=$T/notify.sock "$@" 2>"$DAEMON_LOG" 3>&- &
	DAEMON_PID=$!
}

serve() { start "$GLEAM_BIN/gleam-serve" -D -c /dev/null -l 127.0.0.1:0 "$@"; }
sched() {
	start "$GLEAM_BIN/gleam-sched" serve -i 0.2 -l 127.0.0.1:0 \
	    -L "$SCHED/links.yaml" -s "$SCHED/servers.yaml" "$@"
}
reduce() { start "$GLEAM_BIN/gleam-reduce" -D -l 127.0.0.1:0 "$@"; }

# notify_cycle: READY=1 naming the daemon's pid once it listens;
# RELOADING=1 then READY=1 around a SIGHUP; STOPPING=1 on SIGTERM, then a
# clean exit.
notify_cycle() {
	until_line "$NOTIFY_OUT" "READY=1 MAINPID=$DAEMON_PID "
	grep -q "listening on" "$DAEMON_LOG"
	kill -HUP "$DAEMON_PID"
	until_count "$NOTIFY_OUT" "READY=1" 2
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID"
	DAEMON_PID=
	# The datagram is queued by now, but the listener may not have
	# written it out yet.
	until_line "$NOTIFY_OUT" "STOPPING=1"
	[ "$(cut -d' ' -f1 "$NOTIFY_OUT" | tr '\n' ' ')" = \
	    "bound READY=1 RELOADING=1 READY=1 STOPPING=1 " ]
	grep -q "^RELOADING=1 MONOTONIC_USEC=[0-9]" "$NOTIFY_OUT"
}

@test "gleam-serve: READY=1, RELOADING=1 and READY=1 on SIGHUP, STOPPING=1 on SIGTERM" {
	serve
	notify_cycle
}

@test "gleam-sched serve: READY=1, RELOADING=1 and READY=1 on SIGHUP, STOPPING=1 on SIGTERM" {
	sched
	notify_cycle
}

@test "gleam-reduce: READY=1, RELOADING=1 and READY=1 on SIGHUP, STOPPING=1 on SIGTERM" {
	reduce
	notify_cycle
}

@test "a reload that fails still ends with READY=1" {
	printf 'max_clients: 4\n' >"$T/serve.yaml"
	start "$GLEAM_BIN/gleam-serve" -D -c "$T/serve.yaml" -l 127.0.0.1:0
	until_line "$NOTIFY_OUT" "READY=1"
	printf 'max_clients: many\n' >"$T/serve.yaml"
	kill -HUP "$DAEMON_PID"
	until_count "$NOTIFY_OUT" "READY=1" 2
	grep -q "reload failed" "$DAEMON_LOG"
}

# pid_cycle PIDFILE: the file names the daemon once it is ready, and is
# gone once it has exited.
pid_cycle() {
	# This daemon's READY (the file may hold an earlier daemon's too).
	until_line "$NOTIFY_OUT" "READY=1 MAINPID=$DAEMON_PID"
	[ "$(cat "$1")" = "$DAEMON_PID" ]
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID"
	DAEMON_PID=
	[ ! -e "$1" ]
}

@test "-P: each daemon writes its pid once listening and removes it at exit" {
	serve -P "$T/serve.pid"
	pid_cycle "$T/serve.pid"
	sched -P "$T/sched.pid"
	pid_cycle "$T/sched.pid"
	reduce -P "$T/reduce.pid"
	pid_cycle "$T/reduce.pid"
}

@test "pid_file: in gleam-serve.yaml, relative to the file; -P outranks it" {
	mkdir "$T/conf"
	printf 'pid_file: serve.pid\n' >"$T/conf/serve.yaml"
	start "$GLEAM_BIN/gleam-serve" -D -c "$T/conf/serve.yaml" \
	    -l 127.0.0.1:0
	pid_cycle "$T/conf/serve.pid"
	start "$GLEAM_BIN/gleam-serve" -D -c "$T/conf/serve.yaml" \
	    -l 127.0.0.1:0 -P "$T/other.pid"
	until_line "$NOTIFY_OUT" "READY=1"
	[ ! -e "$T/conf/serve.pid" ]
	pid_cycle "$T/other.pid"
}

@test "a second copy on the same pid file is refused (exit 6) and leaves the file alone" {
	serve -P "$T/serve.pid"
	until_line "$NOTIFY_OUT" "READY=1"
	run -6 --separate-stderr "$GLEAM_BIN/gleam-serve" -D -c /dev/null \
	    -l 127.0.0.1:0 -P "$T/serve.pid"
	[ "$stderr" = "gleam-serve: pid file $T/serve.pid: gleam-serve is already running as pid $DAEMON_PID" ]
	[ "$(cat "$T/serve.pid")" = "$DAEMON_PID" ]
	OTHER_PID=$DAEMON_PID
	reduce -P "$T/reduce.pid"
	until_line "$NOTIFY_OUT" "READY=1 MAINPID=$DAEMON_PID"
	run -6 --separate-stderr "$GLEAM_BIN/gleam-reduce" -D \
	    -l 127.0.0.1:0 -P "$T/reduce.pid"
	[[ "$stderr" == *"gleam-reduce is already running as pid $DAEMON_PID" ]]
}

@test "a stale pid file (a dead process, another program) is taken over" {
	sh -c 'exit 0' &
	dead=$!
	wait "$dead"
	echo "$dead" >"$T/serve.pid"
	serve -P "$T/serve.pid"
	pid_cycle "$T/serve.pid"
	sleep 60 3>&- &
	OTHER_PID=$!
	echo "$OTHER_PID" >"$T/serve.pid"
	serve -P "$T/serve.pid"
	pid_cycle "$T/serve.pid"
	printf 'not a pid\n' >"$T/serve.pid"
	serve -P "$T/serve.pid"
	pid_cycle "$T/serve.pid"
}

@test "-P with a directory that does not exist exits 6 before binding" {
	run -6 --separate-stderr "$GLEAM_BIN/gleam-serve" -D -c /dev/null \
	    -l 127.0.0.1:0 -P "$T/no/such.pid"
	[[ "$stderr" == "gleam-serve: pid file $T/no/such.pid: No such file or directory" ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -P "$T/x.pid" \
	    -L "$SCHED/links.yaml" -s "$SCHED/servers.yaml" -t "$SCHED/tasks.yaml"
	[[ "$stderr" == "gleam-sched: -P: only with serve"* ]]
}

@test "stderr that is journald's stream (JOURNAL_STREAM) gets each line's priority" {
	: >"$T/j.log"
	JOURNAL_STREAM=$(stat -c '%d:%i' "$T/j.log") \
	    "$GLEAM_BIN/gleam-serve" -D -c /dev/null -l 127.0.0.1:0 \
	    2>>"$T/j.log" 3>&- &
	DAEMON_PID=$!
	wait_listen "$T/j.log" "$DAEMON_PID" >/dev/null
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID"
	DAEMON_PID=
	grep -q '^<6>gleam-serve: listening on 127.0.0.1:' "$T/j.log"
	grep -q '^<4>gleam-serve: running as root' "$T/j.log" ||
	    [ "$(id -u)" -ne 0 ]
	! grep -v '^<[0-7]>gleam-serve: ' "$T/j.log"
	# Another file's stream: plain lines.
	JOURNAL_STREAM=1:2 "$GLEAM_BIN/gleam-serve" -D -c /dev/null \
	    -l 127.0.0.1:0 2>"$T/plain.log" 3>&- &
	DAEMON_PID=$!
	wait_listen "$T/plain.log" "$DAEMON_PID" >/dev/null
	grep -q '^gleam-serve: listening on' "$T/plain.log"
}

# detached_cycle LOG PIDFILE: the daemon that detached logs a reload and
# its exit on the stderr it was given.
detached_cycle() {
	local i
	for i in $(seq 1 200); do
		[ -s "$2" ] && break
		sleep 0.05
	done
	DAEMON_PID=$(cat "$2")
	kill -HUP "$DAEMON_PID"
	until_line "$1" "gleam-serve: configuration reloaded"
	kill -TERM "$DAEMON_PID"
	until_line "$1" "gleam-serve: exiting"
	for i in $(seq 1 200); do
		[ -e "$2" ] || break
		sleep 0.05
	done
	[ ! -e "$2" ]
	DAEMON_PID=
}

@test "detached under a service manager (INVOCATION_ID), the log stays on stderr" {
	INVOCATION_ID=0123456789abcdef "$GLEAM_BIN/gleam-serve" \
	    -c /dev/null -l 127.0.0.1:0 -P "$T/serve.pid" \
	    </dev/null >/dev/null 2>"$T/d.log" 3>&-
	detached_cycle "$T/d.log" "$T/serve.pid"
}

@test "detached without a syslog socket, the log stays on stderr" {
	[ ! -S /dev/log ] || skip "this host has a syslog socket"
	"$GLEAM_BIN/gleam-serve" -c /dev/null -l 127.0.0.1:0 \
	    -P "$T/serve.pid" </dev/null >/dev/null 2>"$T/d.log" 3>&-
	detached_cycle "$T/d.log" "$T/serve.pid"
}

@test "the units in systemd/ pass systemd-analyze verify" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	local u top=$BATS_TEST_DIRNAME/../..
	mkdir "$T/units"
	for u in gleam-serve@.service gleam-sched.service gleam-reduce.service; do
		sed "s|@BINDIR@|$GLEAM_BIN|g" "$top/systemd/$u" >"$T/units/$u"
	done
	cd "$T/units"
	run -0 systemd-analyze verify --man=no gleam-serve@.service \
	    gleam-sched.service gleam-reduce.service
	[ -z "$output" ]
	# One instance's reload signals that instance alone.
	grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' gleam-serve@.service
	grep -q '^Environment=CUDA_VISIBLE_DEVICES=%i ' gleam-serve@.service
	grep -qx 'Type=notify' gleam-sched.service
}
