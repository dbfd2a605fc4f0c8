# Shared set-up for the bats tests: where the programs are, and servers
# started on private loopback ports (port 0: the kernel picks a free one).

bats_require_minimum_version 1.5.0

GLEAM_BIN=${GLEAM_BIN:-$BATS_TEST_DIRNAME/../../bin}
export GLEAM_BIN
# NVML may exist on a developer's machine; tests want the same answers
# everywhere.
export GLEAM_NO_NVML=1
# The client library keeps names of cached copies per program and server;
# tests keep theirs out of the home directory.
export XDG_CACHE_HOME=${BATS_RUN_TMPDIR:-${TMPDIR:-/tmp}}/xdg-cache

# gleam_version: the version as lib/common/util.h has it, the one place
# it is written (the tests read it there, never a copy).
gleam_version() {
	sed -n 's/^#define GLEAM_VERSION[^"]*"\([^"]*\)".*/\1/p' \
	    "$BATS_TEST_DIRNAME/../../lib/common/util.h"
}

# wait_listen LOG PID: waits for "listening on HOST:PORT" in LOG and prints
# PORT; fails if PID dies first or 10 s pass.
wait_listen() {
	local log=$1 pid=$2 i port
	for i in $(seq 1 200); do
		port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$log" | head -n 1)
		if [ -n "$port" ]; then
			echo "$port"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; return 1; }
		sleep 0.05
	done
	echo "no 'listening on' line in $log" >&2
	return 1
}

# wait_for PATTERN FILE [TRIES [PAUSE [COMMAND...]]]: waits until a line
# of FILE matches PATTERN (grep's), looking TRIES times (50) PAUSE seconds
# (0.1) apart and running COMMAND, if any, before each pause; fails if no
# line does by then, or once COMMAND fails.
wait_for() {
	local pat=$1 file=$2 tries=${3:-50} pause=${4:-0.1} i
	shift $(($# < 4 ? $# : 4))
	for ((i = 0; i < tries; i++)); do
		grep -q -- "$pat" "$file" 2>/dev/null && return 0
		if [ $# -gt 0 ]; then "$@" || break; fi
		sleep "$pause"
	done
	grep -q -- "$pat" "$file" 2>/dev/null
}

# probe_until TEXT: asks the server at SERVE_ADDR (gleam-probe's YAML)
# until its answer holds TEXT, 40 times 0.05 s apart; fails if none did.
# The last answer stays in $output.
probe_until() {
	local i
	for ((i = 0; i < 40; i++)); do
		run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
		[[ "$output" == *"$1"* ]] && return 0
		sleep 0.05
	done
	return 1
}

# serve_start [ARGS...]: starts gleam-serve in the foreground on a free
# port, its standard input SERVE_IN (/dev/null); sets SERVE_PID,
# SERVE_PORT, SERVE_ADDR and SERVE_LOG.  A -c in ARGS comes after the
# helper's own -c /dev/null, and wins.
serve_start() {
	SERVE_LOG=${BATS_TEST_TMPDIR:-$BATS_FILE_TMPDIR}/serve.$$.$RANDOM.log
	"$GLEAM_BIN/gleam-serve" -D -c /dev/null -l 127.0.0.1:0 "$@" \
	    <"${SERVE_IN:-/dev/null}" 2>"$SERVE_LOG" 3>&- &
	SERVE_PID=$!
	SERVE_PORT=$(wait_listen "$SERVE_LOG" "$SERVE_PID") || return 1
	SERVE_ADDR=127.0.0.1:$SERVE_PORT
}

# serve_stop: TERM and wait; fails if the server does not exit cleanly.
serve_stop() {
	[ -n "${SERVE_PID:-}" ] || return 0
	kill -TERM "$SERVE_PID" 2>/dev/null || true
	local rc=0
	wait "$SERVE_PID" || rc=$?
	SERVE_PID=
	return $rc
}

# serve_reload [PID [LOG]]: SIGHUP to a gleam-serve (SERVE_PID, whose log
# is SERVE_LOG), then waits until LOG says how the reload went: succeeds
# if it took the new configuration, fails if it kept the running one or
# said nothing within 10 s.
serve_reload() {
	local pid=${1:-$SERVE_PID} log=${2:-$SERVE_LOG} n i
	local ok='configuration reloaded' kept='keeping the running configuration'
	n=$(grep -c -e "$ok" -e "$kept" "$log" || true)
	kill -HUP "$pid"
	for i in $(seq 1 100); do
		if [ "$(grep -c -e "$ok" -e "$kept" "$log" || true)" -gt "$n" ]; then
			grep -e "$ok" -e "$kept" "$log" | tail -n 1 |
			    grep -q -- "$ok"
			return
		fi
		sleep 0.1
	done
	echo "no word of the reload in $log" >&2
	return 1
}

# serve_check STATUS FILE FORMAT [ARGS...]: writes printf's FORMAT ARGS to
# FILE and checks it with gleam-serve -n -c FILE, which must exit STATUS;
# bats' run, so $output (stdout) and $stderr tell the rest.
serve_check() {
	local rc=$1 file=$2 fmt=$3
	shift 3
	printf -- "$fmt" "$@" >"$file"
	run "-$rc" --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c "$file"
}

# The key files used by the authentication tests.
make_key() {
	# A key as gleam-key writes one, but the same for the same words.
	printf '%s' "${2:-correct horse battery staple 42}" | sha256sum |
	    cut -c1-64 >"$1"
	chmod 600 "$1"
}

# daemon_stop PID...: for teardown: TERM, and KILL what has not exited
# within 10 s; no word from bash about them.  A daemon that exits runs
# its sanitizer's leak check (make asan), which KILL would skip.
daemon_stop() {
	local p i
	for p; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p; do
		# Exited: gone, or a zombie until wait.
		for i in $(seq 1 200); do
			[ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" = Z ] &&
			    break
			[ -e "/proc/$p" ] || break
			sleep 0.05
		done
		{ kill -KILL "$p"; wait "$p"; } 2>/dev/null || true
	done
}

# serve_kill: for teardown; the server stops as daemon_stop stops one.
serve_kill() {
	[ -n "${SERVE_PID:-}" ] || return 0
	daemon_stop "$SERVE_PID"
	SERVE_PID=
}

# sanitizer_check [DIR...]: for teardown, once the daemons are stopped:
# fails, naming the file, if a file under DIR (default: the test's
# temporary directory) holds a report of AddressSanitizer, UBSan,
# LeakSanitizer or ThreadSanitizer, such as the daemons the test started
# write to their logs (make asan, make tsan).
SANITIZER_RE='ERROR: AddressSanitizer|runtime error:|LeakSanitizer|WARNING: ThreadSanitizer'
sanitizer_check() {
	local d f bad=0
	for d in "${@:-${BATS_TEST_TMPDIR:-}}"; do
		[ -n "$d" ] && [ -d "$d" ] || continue
		while IFS= read -r f; do
			echo "sanitizer report in $f:" >&2
			grep -a -m 10 -E -A 6 "$SANITIZER_RE" "$f" >&2
			bad=1
		done < <(grep -rlas -E "$SANITIZER_RE" "$d")
	done
	return "$bad"
}

# mitm_start TARGET-PORT [MITM-ARGS...]: tests/bats/mitm.py between the
# clients and a server, to attack its records; sets MITM_PID, MITM_ADDR.
mitm_start() {
	local port=$1 log=${BATS_TEST_TMPDIR:-$BATS_FILE_TMPDIR}/mitm.$$.$RANDOM.log
	shift
	python3 "$BATS_TEST_DIRNAME/mitm.py" "$@" "$port" 2>"$log" 3>&- &
	MITM_PID=$!
	MITM_ADDR=127.0.0.1:$(wait_listen "$log" "$MITM_PID") || return 1
}

# mitm_kill: for teardown, and between two proxies in a test.
mitm_kill() {
	[ -n "${MITM_PID:-}" ] || return 0
	{ kill -KILL "$MITM_PID" && wait "$MITM_PID"; } 2>/dev/null || true
	MITM_PID=
}
