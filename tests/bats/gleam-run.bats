#!/usr/bin/env bats
# gleam-run's interface: flags, the environment it sets, exit statuses.

load test_helper

USAGE="usage: gleam-run [-Fqv] [-k keyfile] [-O stats.yaml]"

# keyed_start KEYFILE: a second server, demanding the key; KEYED_ADDR.
keyed_start() {
	local pid=$SERVE_PID addr=$SERVE_ADDR
	serve_start -c "$BATS_FILE_TMPDIR/host.yaml" -k "$1"
	KEYED_PID=$SERVE_PID KEYED_ADDR=$SERVE_ADDR
	SERVE_PID=$pid SERVE_ADDR=$addr
}

# gleam-run checks the server before the program runs: one on a private
# port for the tests about something else.
setup_file() {
	printf 'backend: host\n' >"$BATS_FILE_TMPDIR/host.yaml"
	serve_start -c "$BATS_FILE_TMPDIR/host.yaml"
	export SERVE_PID SERVE_ADDR
}

teardown_file() {
	serve_kill
	sanitizer_check "$BATS_FILE_TMPDIR"
}

setup() {
	unset GLEAM_SERVER GLEAM_KEY_FILE GLEAM_FALLBACK GLEAM_STATS GLEAM_STATS_PID
	export GLEAM_RUN_CONFIG=$BATS_TEST_TMPDIR/none.yaml
}

teardown() {
	daemon_stop ${KEYED_PID:-}
	sanitizer_check
}

@test "-h and --help print the usage and every option on stdout and exit 0" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -h
	[ "${lines[0]}" = "$USAGE" ]
	[ -z "$stderr" ]
	for o in -s,--server= -S,--sched= -t,--task= -k,--key= -O,--stats= \
	    -F,--fallback -q,--quiet -v,--verbose -h,--help -V,--version; do
		[[ "$output" == *"  ${o%%,*}, ${o#*,}"* ]]
	done
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" --help
	[ "${lines[0]}" = "$USAGE" ]
}

@test "-V and --version print the version" {
	v=$(gleam_version)
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -V
	[ "$output" = "gleam-run $v" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" --version
	[ "$output" = "gleam-run $v" ]
}

@test "long options, and options end at the program" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" --verbose --stats "$BATS_TEST_TMPDIR/s.yaml" --server="$SERVE_ADDR" \
	    sh -c 'echo "$GLEAM_STATS $GLEAM_VERBOSE" "$@"' sh -v -x
	[ "$output" = "$BATS_TEST_TMPDIR/s.yaml 1 -v -x" ]
}

@test "-o is the deprecated spelling of -O: it works, with a warning" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -o "$BATS_TEST_TMPDIR/s.yaml" -s "$SERVE_ADDR" -- \
	    sh -c 'echo "$GLEAM_STATS"'
	[ "$output" = "$BATS_TEST_TMPDIR/s.yaml" ]
	[ "$stderr" = "gleam-run: -o is deprecated and will go; use -O or --stats" ]
}

@test "-q quiets the warnings and the library's progress" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -q -F -s 127.0.0.1:1 -- sh -c 'echo "[$GLEAM_PROGRESS]"'
	[ "$output" = "[]" ]
	[ -z "$stderr" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -q -s "$SERVE_ADDR" -- sh -c 'echo "[$GLEAM_PROGRESS]"'
	[ "$output" = "[0]" ]
}

@test "an unknown option or a missing argument is a usage error" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -x -- true
	[ "${stderr_lines[0]}" = "gleam-run: unknown option -x" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" --frobnicate -- true
	[ "${stderr_lines[0]}" = "gleam-run: unknown option --frobnicate" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -s
	[ "${stderr_lines[0]}" = "gleam-run: option -s needs an argument: host[:port]" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" --server
	[ "${stderr_lines[0]}" = "gleam-run: option --server needs an argument: host[:port]" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" --fallback=yes -- true
	[ "${stderr_lines[0]}" = "gleam-run: option --fallback takes no argument" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" --help=me
	[ "${stderr_lines[0]}" = "gleam-run: option --help takes no argument" ]
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
	run -0 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- true
	run -1 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- false
	run -42 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- sh -c 'exit 42'
	# Also when it ran without the library.
	run -42 "$GLEAM_BIN/gleam-run" -F -s 127.0.0.1:1 -- sh -c 'exit 42'
}

@test "a program killed by a signal reads as 128+N" {
	run -143 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- sh -c 'kill -TERM $$'
}

@test "a missing program exits 127, one that cannot run 126" {
	run -127 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$BATS_TEST_TMPDIR/nope"
	[[ "$stderr" == *"nope: No such file or directory" ]]
	printf 'data\n' >"$BATS_TEST_TMPDIR/plain"
	chmod 644 "$BATS_TEST_TMPDIR/plain"
	run -126 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$BATS_TEST_TMPDIR/plain"
}

@test "a program that opens libcuda.so or libnvidia-ml.so by name gets the client's" {
	# numba and other ctypes users ask for the development names: they
	# must not reach a real driver's libcuda.so further down the path.
	command -v python3 >/dev/null || skip "no python3"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
	    python3 -c 'import ctypes
ctypes.CDLL("libcuda.so"); ctypes.CDLL("libnvidia-ml.so")
for line in open("/proc/self/maps"):
	if "libcuda" in line or "libnvidia-ml" in line:
		print(line.split()[-1])'
	lib=$(cd "${GLEAM_LIBDIR:-$BATS_TEST_DIRNAME/../../lib}" && pwd -P)
	[ "$(printf '%s\n' "$output" | sort -u)" = "$(printf '%s\n' \
	    "$lib/libcuda.so.1" "$lib/libnvidia-ml.so.1")" ]
}

@test "the library comes first in LD_LIBRARY_PATH and LD_PRELOAD" {
	run -0 env LD_LIBRARY_PATH=/x LD_PRELOAD= "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
	    sh -c 'echo "$GLEAM_SERVER|$LD_LIBRARY_PATH|$LD_PRELOAD"'
	[[ "$output" == "$SERVE_ADDR|"*"/lib:/x|"*"/lib/libcuda.so.1:"*"/lib/libnvidia-ml.so.1" ]]
	# Without the NVML library beside it, the client library alone.
	mkdir "$BATS_TEST_TMPDIR/lib"
	cp "$BATS_TEST_DIRNAME/../../lib/libcuda.so.1" "$BATS_TEST_TMPDIR/lib/"
	run -0 env -u GLEAM_PRELOAD GLEAM_LIBDIR="$BATS_TEST_TMPDIR/lib" LD_PRELOAD= \
	    "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- sh -c 'echo "$LD_PRELOAD"'
	[ "$output" = "$BATS_TEST_TMPDIR/lib/libcuda.so.1" ]
	# GLEAM_PRELOAD goes ahead of it (a sanitizer's runtime).
	run -0 --separate-stderr env GLEAM_PRELOAD=/nonexistent/libfirst.so \
	    GLEAM_LIBDIR="$BATS_TEST_TMPDIR/lib" LD_PRELOAD= \
	    "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- sh -c 'echo "$LD_PRELOAD"'
	[ "$output" = "/nonexistent/libfirst.so:$BATS_TEST_TMPDIR/lib/libcuda.so.1" ]
}

@test "-s beats GLEAM_SERVER, which beats the configuration" {
	# The server checked is the one named: three that are not there.
	printf 'server: 127.0.0.1:1\n' >"$BATS_TEST_TMPDIR/run.yaml"
	export GLEAM_RUN_CONFIG=$BATS_TEST_TMPDIR/run.yaml
	run -125 --separate-stderr "$GLEAM_BIN/gleam-run" -- true
	[[ "$stderr" == "gleam-run: cannot use server 127.0.0.1:1: "* ]]
	run -125 --separate-stderr env GLEAM_SERVER=127.0.0.1:2 "$GLEAM_BIN/gleam-run" -- true
	[[ "$stderr" == "gleam-run: cannot use server 127.0.0.1:2: "* ]]
	run -125 --separate-stderr env GLEAM_SERVER=127.0.0.1:2 "$GLEAM_BIN/gleam-run" -s 127.0.0.1:3 -- true
	[[ "$stderr" == "gleam-run: cannot use server 127.0.0.1:3: "* ]]
	# And the program sees it.
	run -0 env GLEAM_SERVER=127.0.0.1:2 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- sh -c 'echo $GLEAM_SERVER'
	[ "$output" = "$SERVE_ADDR" ]
}

@test "a bad configuration names file, line and key" {
	printf 'server: a\nport: 9\n' >"$BATS_TEST_TMPDIR/run.yaml"
	export GLEAM_RUN_CONFIG=$BATS_TEST_TMPDIR/run.yaml
	run -3 --separate-stderr "$GLEAM_BIN/gleam-run" -- true
	[ "$stderr" = "gleam-run: $BATS_TEST_TMPDIR/run.yaml:2: configuration: unknown key 'port'" ]
}

@test "an unreadable key file exits 3; a relative one is made absolute" {
	run -3 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -k "$BATS_TEST_TMPDIR/none" -- true
	[[ "$stderr" == *"key file $BATS_TEST_TMPDIR/none: No such file or directory" ]]
	make_key "$BATS_TEST_TMPDIR/key"
	keyed_start "$BATS_TEST_TMPDIR/key"
	cd "$BATS_TEST_TMPDIR"
	run -0 "$GLEAM_BIN/gleam-run" -s "$KEYED_ADDR" -k key -- sh -c 'echo $GLEAM_KEY_FILE'
	[ "$output" = "$BATS_TEST_TMPDIR/key" ]
}

@test "no key from standard input: the program's client library could not read it" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -k - -- echo ran
	[ "$stderr" = "gleam-run: key file -: standard input is the program's; name a key file" ]
	[ -z "$output" ]
	GLEAM_KEY_FILE=- run -2 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- echo ran
	[ -z "$output" ]
}

@test "a missing client library exits 6" {
	run -6 --separate-stderr env GLEAM_LIBDIR="$BATS_TEST_TMPDIR" "$GLEAM_BIN/gleam-run" -s h -- true
	[[ "$stderr" == *"libcuda.so.1: No such file or directory (set GLEAM_LIBDIR)" ]]
}

@test "-O and -v reach the library" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -v -O "$BATS_TEST_TMPDIR/s.yaml" -s "$SERVE_ADDR" -- \
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

@test "an unreachable server: exit 125 naming it, the program does not run" {
	SECONDS=0
	run -125 --separate-stderr "$GLEAM_BIN/gleam-run" -s 127.0.0.1:1 -- \
	    touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "gleam-run: cannot use server 127.0.0.1:1: Connection refused" ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	[ "$SECONDS" -le 5 ]
}

@test "a server that does not answer: exit 125 after GLEAM_CHECK_TIMEOUT" {
	# A listener that never shakes hands.
	python3 -c 'import socket,time,sys
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(4)
print(s.getsockname()[1], flush=True); time.sleep(30)' >"$BATS_TEST_TMPDIR/port" 3>&- &
	KEYED_PID=$!
	local i
	for i in $(seq 1 100); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.05; done
	SECONDS=0
	GLEAM_CHECK_TIMEOUT=1 run -125 --separate-stderr "$GLEAM_BIN/gleam-run" \
	    -s "127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")" -- touch "$BATS_TEST_TMPDIR/ran"
	[[ "$stderr" == "gleam-run: cannot use server 127.0.0.1:"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	[ "$SECONDS" -le 3 ]
	GLEAM_CHECK_TIMEOUT=0 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- true
	[[ "$stderr" == "gleam-run: GLEAM_CHECK_TIMEOUT=0: "* ]]
}

@test "a wrong key or none: exit 125 naming the server, the program does not run" {
	make_key "$BATS_TEST_TMPDIR/key"
	make_key "$BATS_TEST_TMPDIR/other" "another key entirely, not the one"
	keyed_start "$BATS_TEST_TMPDIR/key"
	run -125 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$KEYED_ADDR" -k "$BATS_TEST_TMPDIR/other" -- \
	    touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "gleam-run: cannot use server $KEYED_ADDR: authentication failed: wrong key" ]
	run -125 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$KEYED_ADDR" -- touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "gleam-run: cannot use server $KEYED_ADDR: server requires a key" ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run -0 "$GLEAM_BIN/gleam-run" -s "$KEYED_ADDR" -k "$BATS_TEST_TMPDIR/key" -- touch "$BATS_TEST_TMPDIR/ran"
	[ -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "-F and GLEAM_FALLBACK=local run the program without the library, saying so" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -F -O "$BATS_TEST_TMPDIR/s.yaml" -s 127.0.0.1:1 -- \
	    sh -c 'echo "ran|$LD_PRELOAD|${GLEAM_SERVER:-none}"'
	[ "$output" = "ran||none" ]
	[ "$stderr" = "gleam-run: cannot use server 127.0.0.1:1: Connection refused: running sh without it (-F)" ]
	# -o holds why.
	grep -qx 'server: 127.0.0.1:1' "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx "error: 'cannot use server 127.0.0.1:1: Connection refused'" "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx 'fallback: local' "$BATS_TEST_TMPDIR/s.yaml"
	GLEAM_FALLBACK=local run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s 127.0.0.1:1 -- \
	    touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "gleam-run: cannot use server 127.0.0.1:1: Connection refused: running touch without it (GLEAM_FALLBACK=local)" ]
	[ -e "$BATS_TEST_TMPDIR/ran" ]
	# Any other value is ignored, with a word.
	GLEAM_FALLBACK=yes run -125 --separate-stderr "$GLEAM_BIN/gleam-run" -s 127.0.0.1:1 -- true
	[ "${stderr_lines[0]}" = "gleam-run: GLEAM_FALLBACK=yes: expected 'local': ignored" ]
	# With a server there, -F changes nothing.
	run -0 "$GLEAM_BIN/gleam-run" -F -s "$SERVE_ADDR" -- sh -c 'echo "$GLEAM_SERVER"'
	[ "$output" = "$SERVE_ADDR" ]
}

@test "-S and -F: with no scheduler there the program runs without the library" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -F -S 127.0.0.1:1 -- echo ran
	[ "$output" = ran ]
	[[ "${stderr_lines[-1]}" == "gleam-run: scheduler 127.0.0.1:1: no server: running echo without it (-F)" ]]
}

@test "statistics: written once, by the program gleam-run ran, not by its children" {
	# bash is the program (the library is preloaded into it too; bash,
	# unlike dash, leaves by exit(3)); its child bash, exec'd later and
	# exiting last, loads the library but writes nothing.
	run -7 "$GLEAM_BIN/gleam-run" -O "$BATS_TEST_TMPDIR/s.yaml" -s "$SERVE_ADDR" -- \
	    bash -c '(sleep 0.3; bash -c "exit 3") & exit 7'
	sleep 1
	grep -qx 'program: bash' "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx "server: $SERVE_ADDR" "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx 'error: null' "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx 'exit: 7' "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx 'round_trips: 0' "$BATS_TEST_TMPDIR/s.yaml"
	# A shell that execs the program leaves it the pid: the program writes.
	rm "$BATS_TEST_TMPDIR/s.yaml"
	run -5 "$GLEAM_BIN/gleam-run" -O "$BATS_TEST_TMPDIR/s.yaml" -s "$SERVE_ADDR" -- \
	    bash -c 'exec bash -c "exit 5"'
	grep -qx 'exit: 5' "$BATS_TEST_TMPDIR/s.yaml"
}

@test "statistics without gleam-run: the first process to load the library writes" {
	# The library gleam-run would use, with what gleam-run would put
	# ahead of it (make asan: the sanitizer's runtime; the shells' own
	# leaks are not for it to check).
	lib=$(cd "${GLEAM_LIBDIR:-$GLEAM_BIN/../lib}" && pwd)/libcuda.so.1
	run -7 env GLEAM_STATS="$BATS_TEST_TMPDIR/s.yaml" \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    LD_PRELOAD="${GLEAM_PRELOAD:+$GLEAM_PRELOAD:}$lib" \
	    bash -c '(sleep 0.3; bash -c "exit 3") & exit 7'
	sleep 1
	grep -qx 'exit: 7' "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx 'server: null' "$BATS_TEST_TMPDIR/s.yaml"
}
