#!/usr/bin/env bats
# gleam-link's interface: flags, numbers, addresses, signals, and that it
# relays bytes both ways with the delay and the rate asked for.  The
# upstream servers and the timed clients are small Python programs
# (below); the tests that need them skip where python3 is missing.

load test_helper

USAGE="usage: gleam-link [-v] [-b rate[/rate]] [-d delay[/delay]] [-F fault] [-j jitter[/jitter]] [-Q size] [-S seed] -l address:port target:port"

setup_file() {
	cat >"$BATS_FILE_TMPDIR/link.py" <<'EOF'
# link.py upstream MODE PORTFILE [PORT]: serve on 127.0.0.1 until killed.
#   echo: send back what comes, then end the stream after the client's end
#   count: read to the client's end, then send the byte count and close
# link.py client MODE PORT [ARG]: one connection, then print a result.
#   echo N: send N random bytes, read the echo; "ok SECONDS" if identical
#   count N: send N bytes, end, read the reply; "COUNT SECONDS"
#   ping K: K one-byte round trips; "MIN MAX" in seconds
#   fault N: send N bytes (errors ignored), read to the end; "eof K" or
#     "reset K" with K the bytes received
import errno, os, socket, sys, threading, time

def upstream(mode, portfile, port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(mode, c), daemon=True).start()

def serve(mode, c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    n = 0
    try:
        while True:
            d = c.recv(1 << 16)
            if not d:
                break
            n += len(d)
            if mode == "echo":
                c.sendall(d)
        if mode == "count":
            c.sendall(b"%d\n" % n)
        c.shutdown(socket.SHUT_WR)
        while c.recv(1 << 16):
            pass
    except OSError:
        pass
    c.close()

def client(mode, port, arg):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode == "ping":
        times = []
        for _ in range(arg):
            t0 = time.monotonic()
            s.sendall(b"x")
            if s.recv(1) != b"x":
                sys.exit("ping: bad echo")
            times.append(time.monotonic() - t0)
        print("%.4f %.4f" % (min(times), max(times)))
        return
    if mode == "fault":
        def push():
            try:
                s.sendall(os.urandom(arg))
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        th = threading.Thread(target=push, daemon=True)
        th.start()
        k, how = 0, "eof"
        try:
            while True:
                d = s.recv(1 << 16)
                if not d:
                    break
                k += len(d)
        except ConnectionResetError:
            how = "reset"
        print("%s %d" % (how, k))
        return
    data = os.urandom(arg)
    def send():
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
    t0 = time.monotonic()
    th = threading.Thread(target=send)
    th.start()
    got = bytearray()
    while True:
        d = s.recv(1 << 16)
        if not d:
            break
        got += d
    elapsed = time.monotonic() - t0
    th.join()
    if mode == "echo":
        print(("ok" if bytes(got) == data else "differ") + " %.4f" % elapsed)
    else:
        print("%s %.4f" % (got.decode().strip(), elapsed))

if sys.argv[1] == "upstream":
    upstream(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0)
else:
    client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
EOF
}

teardown() {
	link_kill
	if [ -n "${LINK_UP_PID:-}" ]; then
		kill "$LINK_UP_PID" 2>/dev/null || true
		wait "$LINK_UP_PID" 2>/dev/null || true
		LINK_UP_PID=
	fi
	sanitizer_check
}

link_need_python() {
	command -v python3 >/dev/null 2>&1 || skip "python3 is not installed"
}

# link_port LOG PID: waits for "listening on ...:PORT" in LOG, prints PORT;
# fails if PID exits first or 10 s pass.
link_port() {
	local log=$1 pid=$2 i port
	for i in $(seq 1 200); do
		port=$(sed -n 's/^gleam-link: listening on .*:\([0-9][0-9]*\)$/\1/p' \
		    "$log" | head -n 1)
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

# link_start ARGS... TARGET: starts gleam-link on a free loopback port;
# sets LINK_PID, LINK_PORT and LINK_LOG.
link_start() {
	LINK_LOG=$BATS_TEST_TMPDIR/link.$RANDOM.log
	"$GLEAM_BIN/gleam-link" -l 127.0.0.1:0 "$@" 2>"$LINK_LOG" 3>&- &
	LINK_PID=$!
	LINK_PORT=$(link_port "$LINK_LOG" "$LINK_PID")
}

# link_kill: TERM and wait, whatever state the test left it in.
link_kill() {
	[ -n "${LINK_PID:-}" ] || return 0
	kill -TERM "$LINK_PID" 2>/dev/null || true
	wait "$LINK_PID" 2>/dev/null || true
	LINK_PID=
}

# link_upstream MODE [PORT]: starts a Python upstream; sets LINK_UP_PID
# and LINK_UP_PORT.
link_upstream() {
	local pf=$BATS_TEST_TMPDIR/up.$RANDOM.port i
	python3 "$BATS_FILE_TMPDIR/link.py" upstream "$1" "$pf" ${2:+"$2"} \
	    3>&- &
	LINK_UP_PID=$!
	for i in $(seq 1 200); do
		[ -s "$pf" ] && break
		sleep 0.05
	done
	LINK_UP_PORT=$(cat "$pf")
}

# link_client MODE ARG: one client through the link; prints its result.
link_client() {
	python3 "$BATS_FILE_TMPDIR/link.py" client "$1" "$LINK_PORT" "$2"
}

@test "-h prints usage and every option with its long name on stdout, exits 0" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-link" -h
	[ "${lines[0]}" = "$USAGE" ]
	for o in "-b, --rate=rate[/rate]" "-d, --delay=delay[/delay]" \
	    "-F, --fault=fault" "-j, --jitter=jitter[/jitter]" \
	    "-l, --listen=address:port" "-Q, --queue=size" "-S, --seed=seed" \
	    "-v, --verbose" "-h, --help" "-V, --version" \
	    "-q size   use -Q or --queue"; do
		[[ "$output" == *"  $o"* ]] || { echo "no $o"; false; }
	done
	[ -z "$stderr" ]
}

@test "-V and --version print the version of lib/common/util.h" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-link" -V
	[ "$output" = "gleam-link $(gleam_version)" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-link" --version
	[ "$output" = "gleam-link $(gleam_version)" ]
}

@test "an unknown flag is a usage error" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -x -l :0 h:1
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "gleam-link: unknown option -x" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -l
	[ "${stderr_lines[0]}" = "gleam-link: option -l needs an argument: address:port" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" --listen
	[ "${stderr_lines[0]}" = "gleam-link: option --listen needs an argument: address:port" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" --lisen=:0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: unknown option --lisen=:0" ]
}

@test "long options: --name=value and --name value, also after the target" {
	link_need_python
	link_upstream echo
	LINK_LOG=$BATS_TEST_TMPDIR/link.log
	"$GLEAM_BIN/gleam-link" "127.0.0.1:$LINK_UP_PORT" --listen 127.0.0.1:0 \
	    --delay=20ms --rate 64mbit --queue=1m --seed 3 2>"$LINK_LOG" 3>&- &
	LINK_PID=$!
	LINK_PORT=$(link_port "$LINK_LOG" "$LINK_PID")
	run -0 link_client ping 3
	read -r min max <<<"$output"
	python3 -c "import sys; sys.exit(not (0.040 <= $min and $max < 0.5))"
	! grep -q deprecated "$LINK_LOG"
}

@test "the deprecated -q works, with a warning" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -q 100 -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -q is deprecated and will go; use -Q or --queue" ]
	[ "${stderr_lines[1]}" = "gleam-link: -Q: 100: not between 1k and 1g" ]
}

@test "bad numbers name the flag and the value" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -b 1zbit -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -b: 1zbit: unknown unit 'zbit'" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -b 1gbit/1zbit -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -b: 1zbit: unknown unit 'zbit'" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -b 0 -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -b: 0: rate below 1 bit/s" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -d -2ms -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -d: -2ms: negative value" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -d 1ms/-2ms -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -d: -2ms: negative value" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -d 2msx -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -d: 2msx: unknown unit 'msx'" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -d 1ms/ -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -d: 1ms/: empty value" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -d 1/2/3 -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -d: 1/2/3: more than two values" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -Q 100 -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -Q: 100: not between 1k and 1g" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" --queue 1x -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -Q: 1x: unknown unit 'x'" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -S 12ab -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -S: 12ab: not a number" ]
}

@test "jitter above the delay is a usage error" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -d 1ms -j 2ms -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -j: jitter 2.000 ms exceeds the delay 1.000 ms" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -j 1ms -l :0 h:1
	[[ "${stderr_lines[0]}" == "gleam-link: -j: jitter 1.000 ms exceeds the delay "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -d 2ms/1ms -j 1.5ms -l :0 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -j: jitter 1.500 ms exceeds the delay 1.000 ms" ]
}

@test "addresses are checked" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" h:1
	[ "${stderr_lines[0]}" = "gleam-link: missing -l address:port" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -l 127.0.0.1:0
	[ "${stderr_lines[0]}" = "gleam-link: missing target:port" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -l 127.0.0.1:0 h:1 h:2
	[ "${stderr_lines[0]}" = "gleam-link: unexpected argument: h:2" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -l 127.0.0.1:0 h:99999
	[ "${stderr_lines[0]}" = "gleam-link: target: h:99999: port out of range" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -l 127.0.0.1:0 h:0
	[ "${stderr_lines[0]}" = "gleam-link: target: h:0: port out of range" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -l 127.0.0.1:0 h:x
	[ "${stderr_lines[0]}" = "gleam-link: target: h:x: bad port" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -l 127.0.0.1:0 h
	[ "${stderr_lines[0]}" = "gleam-link: target: h: missing port" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -l 127.0.0.1:70000 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -l: 127.0.0.1:70000: port out of range" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-link" -l 127.0.0.1 h:1
	[ "${stderr_lines[0]}" = "gleam-link: -l: 127.0.0.1: missing port" ]
}

@test "it says where it listens, and exits 0 on TERM and INT" {
	link_start 127.0.0.1:9
	[ -n "$LINK_PORT" ] && [ "$LINK_PORT" -gt 0 ]
	[ "$(cat "$LINK_LOG")" = "gleam-link: listening on 127.0.0.1:$LINK_PORT" ]
	local rc=0
	kill -TERM "$LINK_PID"
	wait "$LINK_PID" || rc=$?
	LINK_PID=
	[ "$rc" -eq 0 ]
	link_start -v 127.0.0.1:9
	kill -INT "$LINK_PID"
	wait "$LINK_PID" || rc=$?
	LINK_PID=
	[ "$rc" -eq 0 ]
}

@test "an address in use exits 4" {
	link_start 127.0.0.1:9
	run -4 --separate-stderr "$GLEAM_BIN/gleam-link" \
	    -l 127.0.0.1:"$LINK_PORT" 127.0.0.1:9
	[[ "$stderr" == "gleam-link: listen on 127.0.0.1:$LINK_PORT: Address already in use" ]]
}

@test "a target name that does not resolve exits 4" {
	run -4 --separate-stderr "$GLEAM_BIN/gleam-link" -l 127.0.0.1:0 \
	    no-such-host.invalid:7383
	[ "$stderr" = "gleam-link: target no-such-host.invalid: no such host" ]
}

@test "bytes go through both ways, and ends of streams follow them" {
	link_need_python
	link_upstream echo
	link_start -d 1ms -b 200mbit "127.0.0.1:$LINK_UP_PORT"
	run -0 link_client echo 1000000
	[[ "$output" == "ok "* ]]
	run -0 link_client echo 1
	[[ "$output" == "ok "* ]]
	# A second link in front of the first: the bytes survive two.
	local first=$LINK_PORT first_pid=$LINK_PID
	link_start -j 1ms -d 2ms "127.0.0.1:$first"
	run -0 link_client echo 300000
	[[ "$output" == "ok "* ]]
	link_kill
	LINK_PID=$first_pid
}

@test "half-close: the reply comes after the client's end of stream" {
	link_need_python
	link_upstream count
	link_start -v -d 1ms "127.0.0.1:$LINK_UP_PORT"
	run -0 link_client count 123457
	[[ "$output" == "123457 "* ]]
	# The connection is closed and counted once both ends are done.
	for i in $(seq 1 100); do
		grep -q "closed, 123457 bytes up, 7 bytes down" "$LINK_LOG" && break
		sleep 0.05
	done
	grep -q "connection 1: closed, 123457 bytes up, 7 bytes down" "$LINK_LOG"
}

@test "an unreachable target costs the client, not the proxy" {
	link_need_python
	# A port that was free a moment ago, most likely still free.
	link_upstream echo
	local port=$LINK_UP_PORT
	kill "$LINK_UP_PID"
	wait "$LINK_UP_PID" 2>/dev/null || true
	LINK_UP_PID=
	link_start "127.0.0.1:$port"
	run link_client echo 10
	[[ "$output" != "ok "* ]]
	grep -q "^gleam-link: connection 1: 127.0.0.1:[0-9]*: target 127.0.0.1:$port: Connection refused$" "$LINK_LOG"
	kill -0 "$LINK_PID"
	link_upstream echo "$port"
	run -0 link_client echo 10
	[[ "$output" == "ok "* ]]
}

@test "-d 20ms: a round trip takes at least 40 ms" {
	link_need_python
	link_upstream echo
	link_start -d 20ms "127.0.0.1:$LINK_UP_PORT"
	run -0 link_client ping 5
	read -r min max <<<"$output"
	echo "round trips: min $min max $max"
	python3 -c "import sys; sys.exit(not (0.040 <= $min and $max < 0.5))"
}

@test "-d 10ms/30ms: each way its own delay" {
	link_need_python
	link_upstream echo
	link_start -d 10ms/30ms "127.0.0.1:$LINK_UP_PORT"
	run -0 link_client ping 3
	read -r min max <<<"$output"
	echo "round trips: min $min max $max"
	python3 -c "import sys; sys.exit(not (0.040 <= $min and $max < 0.5))"
}

@test "-b 8mbit: a megabyte takes a second" {
	link_need_python
	link_upstream count
	link_start -b 8mbit "127.0.0.1:$LINK_UP_PORT"
	run -0 link_client count 1000000
	read -r count secs <<<"$output"
	echo "1000000 bytes in $secs s"
	[ "$count" = 1000000 ]
	python3 -c "import sys; sys.exit(not (0.9 <= $secs <= 1.1))"
}

@test "-b 64mbit/8mbit: each way its own rate" {
	link_need_python
	link_upstream echo
	link_start -b 64mbit/8mbit -q 16k "127.0.0.1:$LINK_UP_PORT"
	# Up at 8 MB/s, back at 1 MB/s: the echo of 500 kB takes 0.5 s
	# (0.5625 s with the way up).  Rates the wrong way round, or both
	# at one, would take 0.125 s or 1 s; the upper bound leaves a loaded
	# 2-core CI machine a third more (it took 0.657 s there once).
	run -0 link_client echo 500000
	read -r ok secs <<<"$output"
	echo "echo of 500000 bytes in $secs s"
	[ "$ok" = ok ]
	python3 -c "import sys; sys.exit(not (0.45 <= $secs <= 0.75))"
}

@test "-F: bad faults are usage errors naming the value" {
	run -2 "$GLEAM_BIN/gleam-link" -F nope@1 -l 127.0.0.1:0 127.0.0.1:1
	[[ "$output" == *"-F: nope@1: unknown fault"* ]]
	run -2 "$GLEAM_BIN/gleam-link" -F cut -l 127.0.0.1:0 127.0.0.1:1
	[[ "$output" == *"-F: cut: expected kind@trigger"* ]]
	run -2 "$GLEAM_BIN/gleam-link" -F hole@1m -l 127.0.0.1:0 127.0.0.1:1
	[[ "$output" == *"a hole needs +duration"* ]]
	run -2 "$GLEAM_BIN/gleam-link" -F cut@1m+1s -l 127.0.0.1:0 127.0.0.1:1
	[[ "$output" == *"only a hole takes +duration"* ]]
	run -2 "$GLEAM_BIN/gleam-link" -F reset@zz -l 127.0.0.1:0 127.0.0.1:1
	[[ "$output" == *"-F: reset@zz:"* ]]
}

@test "-F cut@N: exactly N bytes cross, both ends see the end; the next connection is whole" {
	link_need_python
	link_upstream echo
	link_start -v -F cut@100000 "127.0.0.1:$LINK_UP_PORT"
	run -0 link_client fault 1000000
	[[ "$output" == "eof "* ]]
	for i in $(seq 1 100); do
		grep -q "connection 1: closed" "$LINK_LOG" && break
		sleep 0.05
	done
	grep -q "fault: cut after 100000 bytes" "$LINK_LOG"
	local up down
	up=$(sed -n 's/.*connection 1: closed.*, \([0-9]*\) bytes up, \([0-9]*\) bytes down.*/\1/p' "$LINK_LOG")
	down=$(sed -n 's/.*connection 1: closed.*, \([0-9]*\) bytes up, \([0-9]*\) bytes down.*/\2/p' "$LINK_LOG")
	[ "$((up + down))" -eq 100000 ]
	# A fault fires once: a new connection goes through whole.
	run -0 link_client echo 300000
	[[ "$output" == "ok "* ]]
}

@test "-F reset@N: both ends see a reset" {
	link_need_python
	link_upstream echo
	link_start -v -F reset@50000 "127.0.0.1:$LINK_UP_PORT"
	run -0 link_client fault 1000000
	[[ "$output" == "reset "* ]]
	grep -q "fault: reset after 50000 bytes" "$LINK_LOG"
}

@test "-F cut@T: a timed cut ends every open connection" {
	link_need_python
	link_upstream echo
	link_start -v -b 8mbit -F cut@300ms "127.0.0.1:$LINK_UP_PORT"
	# 1 MB at 8 Mbit/s would take a second: the cut comes first.
	run -0 link_client fault 1000000
	[[ "$output" == "eof "* ]]
	grep -q "fault: cut at 0.300 s" "$LINK_LOG"
}

@test "-F hole@N+D: nothing crosses for D, then the stream goes on intact" {
	link_need_python
	link_upstream echo
	link_start -v -F hole@1000+1s "127.0.0.1:$LINK_UP_PORT"
	run -0 link_client echo 200000
	[[ "$output" == "ok "* ]]
	local secs=${output#ok }
	python3 -c "import sys; sys.exit(not (1.0 <= $secs < 3))"
	grep -q "fault: black hole after 1000 bytes" "$LINK_LOG"
	grep -q "the black hole ends" "$LINK_LOG"
}
