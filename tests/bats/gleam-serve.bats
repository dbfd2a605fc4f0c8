#!/usr/bin/env bats
# gleam-serve's interface: flags, configuration, keys, signals, hostile input.

load test_helper

setup() {
	CONF=$BATS_TEST_TMPDIR/serve.yaml
}

teardown() {
	if [ -n "${BG_PID:-}" ]; then { kill -KILL "$BG_PID" && wait "$BG_PID"; } 2>/dev/null || true; fi
	serve_kill
	mitm_kill
	sanitizer_check
}

@test "-h prints usage and every option with its long name on stdout, exits 0" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-serve" -h
	[ "${lines[0]}" = "usage: gleam-serve [-Dnv] [-c file] [-k keyfile] [-l address:port] [-P pidfile]" ]
	for o in "-c, --config=file" "-D, --foreground" "-k, --key=keyfile" \
	    "-l, --listen=address:port" "-n, --dry-run" \
	    "-P, --pid-file=pidfile" "-v, --verbose" "-h, --help" \
	    "-V, --version" "-d   use -D or --foreground" \
	    "-f file   use -c or --config"; do
		[[ "$output" == *"  $o"* ]] || { echo "no $o"; false; }
	done
	[ -z "$stderr" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-serve" --help
	[ "${lines[0]}" = "usage: gleam-serve [-Dnv] [-c file] [-k keyfile] [-l address:port] [-P pidfile]" ]
}

@test "-V and --version print the version of lib/common/util.h" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-serve" -V
	[ "$output" = "gleam-serve $(gleam_version)" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-serve" --version
	[ "$output" = "gleam-serve $(gleam_version)" ]
}

@test "an unknown flag prints one line and the usage on stderr and exits 2" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-serve" -x
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = "gleam-serve: unknown option -x" ]
	[[ "${stderr_lines[1]}" == "usage: gleam-serve"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-serve" --frobnicate
	[ "${stderr_lines[0]}" = "gleam-serve: unknown option --frobnicate" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-serve" --config
	[ "${stderr_lines[0]}" = "gleam-serve: option --config needs an argument: file" ]
}

@test "long options: --name=value and --name value, after operands too" {
	echo 'name: long-one' >"$CONF"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-serve" --dry-run --config="$CONF"
	[ "$output" = "configuration OK" ]
	[ -z "$stderr" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-serve" --config "$CONF" --listen 127.0.0.1:0 --dry-run
	[ "$output" = "configuration OK" ]
	echo 'name: [' >"$CONF"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" --dry-run --config "$CONF"
	[[ "$stderr" == *"$CONF"* ]]
}

@test "the deprecated -f and -d work, each with one warning" {
	echo 'name: old' >"$CONF"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -f "$CONF"
	[ "$output" = "configuration OK" ]
	[ "$stderr" = "gleam-serve: -f is deprecated and will go; use -c or --config" ]
	"$GLEAM_BIN/gleam-serve" -d -d -f /dev/null -l 127.0.0.1:0 2>"$BATS_TEST_TMPDIR/log" 3>&- &
	SERVE_PID=$!
	wait_listen "$BATS_TEST_TMPDIR/log" "$SERVE_PID" >/dev/null
	serve_stop
	[ "$(grep -c 'is deprecated' "$BATS_TEST_TMPDIR/log")" -eq 2 ]
	grep -q -- '-d is deprecated and will go; use -D or --foreground' "$BATS_TEST_TMPDIR/log"
}

@test "an extra argument is refused" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-serve" -n extra
	[[ "$stderr" == *"unexpected argument: extra"* ]]
}

@test "-n checks a valid configuration" {
	cat >"$CONF" <<-EOF
	listen: 127.0.0.1:7999
	name: gpu-box
	max_clients: 8
	max_frame: 1m
	handshake_timeout: 2s
	drain_timeout: 500ms
	EOF
	run -0 "$GLEAM_BIN/gleam-serve" -n -c "$CONF"
	[ "$output" = "configuration OK" ]
}

@test "-n accepts an empty configuration" {
	: >"$CONF"
	run -0 "$GLEAM_BIN/gleam-serve" -n -c "$CONF"
	[ "$output" = "configuration OK" ]
}

@test "invalid YAML names the file and line and exits 3" {
	serve_check 3 "$CONF" 'listen: 127.0.0.1:1\nname: [unclosed\n'
	[[ "$stderr" == "gleam-serve: $CONF:"* ]]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
}

@test "an unknown key names file, line and key" {
	serve_check 3 "$CONF" 'name: a\nlisten_port: 7000\n'
	[ "$stderr" = "gleam-serve: $CONF:2: configuration: unknown key 'listen_port'" ]
}

@test "a bad value names file, line and key" {
	serve_check 3 "$CONF" 'name: a\n\nlisten: 127.0.0.1:99999\n'
	[ "$stderr" = "gleam-serve: $CONF:3: listen: '127.0.0.1:99999': port out of range" ]
	serve_check 3 "$CONF" 'max_clients: lots\n'
	[[ "$stderr" == "gleam-serve: $CONF:1: max_clients: 'lots': not a number"* ]]
	serve_check 3 "$CONF" 'drain_timeout: -1s\n'
	[ "$stderr" = "gleam-serve: $CONF:1: drain_timeout: '-1s': negative value" ]
	serve_check 3 "$CONF" 'max_frame: 1k\n'
	[[ "$stderr" == *"max_frame: must be between 64k and 1g" ]]
	serve_check 3 "$CONF" 'spin: 1s\n'
	[ "$stderr" = "gleam-serve: $CONF:1: spin: at most 100ms" ]
	serve_check 0 "$CONF" 'spin: 0\n'
	serve_check 3 "$CONF" 'spin_max: 200ms\n'
	[ "$stderr" = "gleam-serve: $CONF:1: spin_max: at most 100ms" ]
	serve_check 0 "$CONF" 'spin_max: 0\n'
	serve_check 3 "$CONF" 'lanes: 17\n'
	[[ "$stderr" == "gleam-serve: $CONF:1: lanes: "* ]]
	serve_check 0 "$CONF" 'lanes: 0\n'
	serve_check 3 "$CONF" 'port_rate: fast\n'
	[ "$stderr" = "gleam-serve: $CONF:1: port_rate: 'fast': not a number" ]
	serve_check 3 "$CONF" '- a\n- b\n'
	[[ "$stderr" == *"configuration: expected a mapping" ]]
}

@test "a missing -c file is an error, the default file may be absent" {
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c "$BATS_TEST_TMPDIR/nope.yaml"
	[[ "$stderr" == *"nope.yaml: No such file or directory" ]]
}

@test "-l with a bad address exits 2" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c /dev/null -l 127.0.0.1:http
	[ "$stderr" = "gleam-serve: -l 127.0.0.1:http: bad port" ]
}

@test "a key file others can read or write exits 3, as ssh refuses one" {
	make_key "$BATS_TEST_TMPDIR/k"
	chmod 644 "$BATS_TEST_TMPDIR/k"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c /dev/null -k "$BATS_TEST_TMPDIR/k"
	[[ "$stderr" == *"key file $BATS_TEST_TMPDIR/k: readable by others (chmod 600 it)" ]]
	chmod 640 "$BATS_TEST_TMPDIR/k"
	run -0 "$GLEAM_BIN/gleam-serve" -n -c /dev/null -k "$BATS_TEST_TMPDIR/k"
}

@test "a key file that is not a key, a weak passphrase or missing exits 3" {
	printf 'short\n' >"$BATS_TEST_TMPDIR/k"
	chmod 600 "$BATS_TEST_TMPDIR/k"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c /dev/null -k "$BATS_TEST_TMPDIR/k"
	[[ "$stderr" == *"k:1: not a key (32 random bytes in base64 or hex, as gleam-key prints"* ]]
	# A 16-byte key is too short: 32 random bytes or a passphrase.
	printf '0123456789abcdef0123456789abcdef\n' >"$BATS_TEST_TMPDIR/k"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c /dev/null -k "$BATS_TEST_TMPDIR/k"
	[[ "$stderr" == *"not a key"* ]]
	printf 'passphrase short\n' >"$BATS_TEST_TMPDIR/k"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c /dev/null -k "$BATS_TEST_TMPDIR/k"
	[[ "$stderr" == *"k:1: passphrase shorter than 8 characters" ]]
	printf '# nothing\n\n' >"$BATS_TEST_TMPDIR/k"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c /dev/null -k "$BATS_TEST_TMPDIR/k"
	[[ "$stderr" == *"no key in it (make one with gleam-key)" ]]
	"$GLEAM_BIN/gleam-key" >"$BATS_TEST_TMPDIR/k"
	run -0 "$GLEAM_BIN/gleam-serve" -n -c /dev/null -k "$BATS_TEST_TMPDIR/k"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c /dev/null -k "$BATS_TEST_TMPDIR/none"
	[[ "$stderr" == *"none: No such file or directory" ]]
}

@test "a port in use exits 4 with one clear line" {
	serve_start
	run -4 --separate-stderr "$GLEAM_BIN/gleam-serve" -D -c /dev/null -l "$SERVE_ADDR"
	[ "$stderr" = "gleam-serve: listen 127.0.0.1:$SERVE_PORT: Address already in use" ]
	serve_stop
}

@test "status reports host, no GPU and the connected client" {
	printf 'name: test-gpu-host\n' >"$CONF"
	serve_start -c "$CONF"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 3 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"    host: test-gpu-host"* ]]
	[[ "$output" == *"    gpus: []"* ]]
	[[ "$output" == *"    gpu_source: no GPU"* ]]
	[[ "$output" == *"      name: gleam-probe"* ]]
	serve_stop
}

@test "status reports the server's port rate: as configured, else null where the interface tells none (loopback)" {
	printf 'port_rate: 10gbit\n' >"$CONF"
	serve_start -c "$CONF"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"    port: 10gbit"* ]]
	serve_stop
	serve_start
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"    port: null"* ]]
	serve_stop
}

@test "SIGHUP reloads; a broken file keeps the running configuration" {
	printf 'name: before\n' >"$CONF"
	serve_start -c "$CONF"
	printf 'name: after\n' >"$CONF"
	serve_reload
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"host: after"* ]]
	printf 'name: [broken\n' >"$CONF"
	run -1 serve_reload
	grep -q "keeping the running configuration" "$SERVE_LOG"
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"host: after"* ]]
	serve_stop
}

@test "SIGTERM drains and exits 0" {
	serve_start
	serve_stop
	grep -q "exiting" "$SERVE_LOG"
}

@test "SIGTERM lets a running transfer finish" {
	serve_start
	"$GLEAM_BIN/gleam-probe" -N 2 -t 1s -o yaml "$SERVE_ADDR" >"$BATS_TEST_TMPDIR/p.yaml" 2>&1 3>&- &
	BG_PID=$!
	sleep 0.5
	kill -TERM "$SERVE_PID"
	wait "$BG_PID" || true
	BG_PID=
	serve_stop
	# The probe finished its measurement or was told why it could not.
	grep -q -e "ok: true" -e "server shutting down" "$BATS_TEST_TMPDIR/p.yaml"
	grep -q "signal 15: draining 1 clients" "$SERVE_LOG"
}

@test "many concurrent clients are all served" {
	serve_start
	pids=()
	for i in $(seq 1 24); do
		"$GLEAM_BIN/gleam-probe" -t 0 -N 20 -o yaml "$SERVE_ADDR" >"$BATS_TEST_TMPDIR/c$i" 2>&1 3>&- &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	[ "$(cat "$BATS_TEST_TMPDIR"/c* | grep -c 'ok: true')" -eq 24 ]
	serve_stop
}

@test "max_clients refuses the extra client with a clear reason" {
	printf 'max_clients: 1\n' >"$CONF"
	serve_start -c "$CONF"
	"$GLEAM_BIN/gleam-probe" -N 1 -t 4 "$SERVE_ADDR" >/dev/null 2>&1 3>&- &
	BG_PID=$!
	# On a loaded machine the first probe may take a while to connect.
	local i
	for i in $(seq 1 30); do
		sleep 0.1
		run --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 1 "$SERVE_ADDR"
		[ "$status" -eq 4 ] && break
	done
	[ "$status" -eq 4 ]
	[[ "$stderr" == *"$SERVE_ADDR: server busy: too many clients" ]]
	wait "$BG_PID"; BG_PID=
	serve_stop
}

@test "a server with a key refuses clients without it or with another" {
	make_key "$BATS_TEST_TMPDIR/key"
	make_key "$BATS_TEST_TMPDIR/other" "another secret of enough length"
	serve_start -k "$BATS_TEST_TMPDIR/key"
	run -5 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 1 "$SERVE_ADDR"
	[ "$stderr" = "gleam-probe: $SERVE_ADDR: server requires a key" ]
	run -5 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/other" "$SERVE_ADDR"
	[ "$stderr" = "gleam-probe: $SERVE_ADDR: authentication failed: wrong key" ]
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml -k "$BATS_TEST_TMPDIR/key" "$SERVE_ADDR"
	[[ "$output" == *"auth: true"* ]]
	grep -q "wrong key" "$SERVE_LOG"
	serve_stop
}

@test "the key never crosses the wire" {
	command -v strace >/dev/null || skip "strace not installed"
	printf 'passphrase do-not-leak-this-secret-XYZ\n' >"$BATS_TEST_TMPDIR/key"
	chmod 600 "$BATS_TEST_TMPDIR/key"
	serve_start -k "$BATS_TEST_TMPDIR/key"
	# LeakSanitizer cannot run under ptrace.
	run -0 env ASAN_OPTIONS=detect_leaks=0 strace -f -e trace=sendto,write,sendmsg -s 4096 -o "$BATS_TEST_TMPDIR/trace" \
	    "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/key" "$SERVE_ADDR"
	grep -q sendto "$BATS_TEST_TMPDIR/trace"
	! grep -q "do-not-leak" "$BATS_TEST_TMPDIR/trace"
	serve_stop
}

@test "a client that never finishes the handshake is dropped" {
	printf 'handshake_timeout: 300ms\n' >"$CONF"
	serve_start -c "$CONF" -v
	exec 5<>/dev/tcp/127.0.0.1/"$SERVE_PORT"
	sleep 0.8
	grep -q "handshake timed out" "$SERVE_LOG"
	exec 5>&-
	serve_stop
}

@test "hostile frames get errors while other clients keep being served" {
	command -v python3 >/dev/null || skip "python3 not installed"
	serve_start
	"$GLEAM_BIN/gleam-probe" -N 200 -t 1 -o yaml "$SERVE_ADDR" >"$BATS_TEST_TMPDIR/good.yaml" 2>&1 3>&- &
	BG_PID=$!
	run -0 "$BATS_TEST_DIRNAME/frame-storm" "$SERVE_PORT" 3
	[[ "$output" == *"storm: all attacks answered"* ]]
	wait "$BG_PID"; BG_PID=
	grep -q "ok: true" "$BATS_TEST_TMPDIR/good.yaml"
	# And it still serves newcomers.
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 2 "$SERVE_ADDR"
	serve_stop
}

# ---- the sealed channel, attacked by tests/bats/mitm.py -------------------

# probe_via [ARGS...]: gleam-probe's status and one echo through the proxy.
probe_via() {
	"$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$@" "$MITM_ADDR"
}

@test "sealed: a record tampered with on its way to the server ends the connection there; the client gets no answer" {
	make_key "$BATS_TEST_TMPDIR/key"
	serve_start -k "$BATS_TEST_TMPDIR/key"
	# Byte 20 is in the first record's body: the STATUS request.
	mitm_start "$SERVE_PORT" -f c2s:20
	run -4 --separate-stderr probe_via -k "$BATS_TEST_TMPDIR/key"
	[[ "$output" == *"ok: false"* ]]
	[[ "$output" != *"max_clients"* ]]
	grep -q "client 127.0.0.1:[0-9]* (gleam-probe): record 0 does not authenticate (tampered with, replayed or forged), closing" "$SERVE_LOG"
	serve_stop
}

@test "sealed: a record tampered with on its way to the client is refused there with the reason" {
	make_key "$BATS_TEST_TMPDIR/key"
	serve_start -k "$BATS_TEST_TMPDIR/key"
	# The status reply's first record.
	mitm_start "$SERVE_PORT" -f s2c:100
	run -1 --separate-stderr probe_via -k "$BATS_TEST_TMPDIR/key"
	[ "$stderr" = "gleam-probe: $MITM_ADDR: record 0 does not authenticate (tampered with, replayed or forged)" ]
	[[ "$output" == *"ok: false"* ]]
	[[ "$output" != *"max_clients"* ]]
	serve_stop
}

@test "sealed: with a key nothing after the handshake reads in the clear; without one the status does" {
	make_key "$BATS_TEST_TMPDIR/key"
	printf 'name: plain-sight-host\n' >"$CONF"
	serve_start -c "$CONF" -k "$BATS_TEST_TMPDIR/key"
	mitm_start "$SERVE_PORT" -c "$BATS_TEST_TMPDIR/sealed"
	run -0 --separate-stderr probe_via -k "$BATS_TEST_TMPDIR/key"
	[[ "$output" == *"host: plain-sight-host"* ]]
	mitm_kill
	serve_stop
	# The status went by, and not one of its words can be read.
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/sealed.s2c")" -gt 200 ]
	[ -s "$BATS_TEST_TMPDIR/sealed.c2s" ]
	! grep -a -q -e plain-sight-host -e max_clients -e gleam-probe "$BATS_TEST_TMPDIR/sealed.s2c" "$BATS_TEST_TMPDIR/sealed.c2s"
	serve_start -c "$CONF"
	mitm_start "$SERVE_PORT" -c "$BATS_TEST_TMPDIR/clear"
	run -0 --separate-stderr probe_via
	grep -a -q plain-sight-host "$BATS_TEST_TMPDIR/clear.s2c"
	grep -a -q max_clients "$BATS_TEST_TMPDIR/clear.s2c"
	serve_stop
}

@test "sealed: a record replayed, from another connection or twice in its own, does not open" {
	make_key "$BATS_TEST_TMPDIR/key"
	serve_start -k "$BATS_TEST_TMPDIR/key"
	mitm_start "$SERVE_PORT" -c "$BATS_TEST_TMPDIR/cap"
	run -0 --separate-stderr probe_via -k "$BATS_TEST_TMPDIR/key"
	mitm_kill
	# The earlier connection's STATUS request in place of this one's.
	mitm_start "$SERVE_PORT" -r "$BATS_TEST_TMPDIR/cap.c2s"
	run -4 --separate-stderr probe_via -k "$BATS_TEST_TMPDIR/key"
	[[ "$output" != *"max_clients"* ]]
	grep -q "record 0 does not authenticate" "$SERVE_LOG"
	mitm_kill
	mitm_start "$SERVE_PORT" -d
	run -4 --separate-stderr probe_via -k "$BATS_TEST_TMPDIR/key"
	grep -q "record 1 does not authenticate" "$SERVE_LOG"
	serve_stop
}

@test "a client holding a key refuses a server that asks for none" {
	make_key "$BATS_TEST_TMPDIR/key"
	serve_start
	run -5 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/key" "$SERVE_ADDR"
	[[ "$stderr" == "gleam-probe: $SERVE_ADDR: server does not ask for a key"* ]]
	serve_stop
}

@test "status reports the address clients reach it at: as bound, as configured, the host name for a wildcard" {
	serve_start
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"    address: $SERVE_ADDR"* ]]
	serve_stop
	printf 'address: gpu1.example:7400\n' >"$CONF"
	serve_start -c "$CONF"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"    address: gpu1.example:7400"* ]]
	serve_stop
	printf 'auth: off\n' >"$CONF"
	serve_start -c "$CONF" -l '*:0'
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"    address: $(hostname):$SERVE_PORT"* ]]
	serve_stop
	for bad in 'gpu1' ':7400' 'gpu1:http'; do
		serve_check 3 "$CONF" 'address: "%s"\n' "$bad"
		[[ "$stderr" == "gleam-serve: $CONF:1: address: '$bad': "* ]]
	done
}

@test "-f - reads the configuration from standard input, once: a reload parses the same text" {
	printf 'name: from-stdin\nbackend: none\n' >"$CONF"
	run -0 "$GLEAM_BIN/gleam-serve" -n -c - <"$CONF"
	[ "$output" = "configuration OK" ]
	printf 'name: [\n' | { run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c -
	    [[ "$stderr" == "gleam-serve: stdin:2: "* ]]; }
	SERVE_IN=$CONF serve_start -c -
	serve_reload
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"    host: from-stdin"* ]]
	serve_stop
}

@test "a configuration on standard input takes relative paths from the working directory" {
	mkdir "$BATS_TEST_TMPDIR/etc"
	make_key "$BATS_TEST_TMPDIR/etc/secret"
	cd "$BATS_TEST_TMPDIR/etc"
	printf 'key_file: secret\n' | { run -0 "$GLEAM_BIN/gleam-serve" -n -c -; }
	cd /
	printf 'key_file: secret\n' | { run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c -
	    [ "$stderr" = "gleam-serve: key file /secret: No such file or directory" ]; }
}

@test "-k - takes the key from standard input, its mode unchecked, and keeps it across reloads; with -f - it is refused" {
	make_key "$BATS_TEST_TMPDIR/k"
	cp "$BATS_TEST_TMPDIR/k" "$BATS_TEST_TMPDIR/open"
	chmod 644 "$BATS_TEST_TMPDIR/open"
	run -0 "$GLEAM_BIN/gleam-serve" -n -c /dev/null -k - <"$BATS_TEST_TMPDIR/open"
	printf 'short\n' | { run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c /dev/null -k -
	    [[ "$stderr" == "gleam-serve: key file stdin:1: not a key"* ]]; }
	printf 'backend: none\n' | { run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c - -k -
	    [ "$stderr" = "gleam-serve: stdin: already read as YAML (standard input gives one file)" ]; }
	SERVE_IN=$BATS_TEST_TMPDIR/k serve_start -k -
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/k" "$SERVE_ADDR"
	serve_reload
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k - "$SERVE_ADDR" <"$BATS_TEST_TMPDIR/k"
	run -5 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 "$SERVE_ADDR"
	serve_stop
}

@test "key_file in the configuration is relative to the configuration" {
	mkdir "$BATS_TEST_TMPDIR/etc"
	make_key "$BATS_TEST_TMPDIR/etc/secret"
	printf 'key_file: secret\n' >"$BATS_TEST_TMPDIR/etc/serve.yaml"
	cd /
	serve_start -c "$BATS_TEST_TMPDIR/etc/serve.yaml"
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/etc/secret" "$SERVE_ADDR"
	serve_stop
}

@test "the smallest max_frame still serves the probe's bulk tests" {
	printf 'max_frame: 64k\n' >"$CONF"
	serve_start -c "$CONF"
	run -0 "$GLEAM_BIN/gleam-probe" -N 2 -t 0.2 "$SERVE_ADDR"
	serve_stop
}

@test "a remoting call to a server without a CUDA backend is refused clearly" {
	command -v python3 >/dev/null || skip "python3 not installed"
	printf 'backend: none\n' >"$CONF"
	serve_start -c "$CONF"
	run -0 env PYTHONPATH="$BATS_TEST_DIRNAME" python3 - "$SERVE_PORT" <<-'PY'
	import socket, struct, sys
	from gleamwire import Conn
	c = Conn(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5))
	c.handshake()
	c.send(256, struct.pack("<I", 0), 7)
	t, _, _, p = c.frame()
	print(t, p[6:].decode())
	PY
	[ "$output" = "5 this server runs no CUDA backend (disabled)" ]
	serve_stop
}

@test "a configuration nested too deep, too large or of too many aliases is refused with its name, fast" {
	{ printf 'lanes: '; head -c 65536 /dev/zero | tr '\0' '['; } >"$CONF"
	local t0=$SECONDS
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c "$CONF"
	[ "$stderr" = "gleam-serve: $CONF:1: nested deeper than 32 levels" ]
	[ $((SECONDS - t0)) -lt 5 ]
	head -c 9000000 /dev/zero | tr '\0' '#' >"$CONF"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -n -c "$CONF"
	[ "$stderr" = "gleam-serve: $CONF: more than 8388608 bytes" ]
	serve_check 3 "$CONF" 'x: &x [1, 2]\nlanes: *x\n'
	[[ "$stderr" == "gleam-serve: $CONF:"* ]]
	serve_check 3 "$CONF" 'lanes: &x [*x]\n'
	[ "$stderr" = "gleam-serve: $CONF:1: alias *x: no complete node of that anchor before it" ]
}

@test "backend: with an unknown value names the key" {
	serve_check 3 "$CONF" 'backend: gpu\n'
	[ "$stderr" = "gleam-serve: $CONF:1: backend: 'gpu': expected auto, cuda, host or none" ]
}

@test "isolation: with an unknown value names the key" {
	serve_check 3 "$CONF" 'isolation: none\n'
	[ "$stderr" = "gleam-serve: $CONF:1: isolation: 'none': expected process or thread" ]
	serve_check 0 "$CONF" 'isolation: thread\n'
}

@test "without a key only loopback is served, unless auth: off says so" {
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -D -c /dev/null -l '*:0'
	[[ "$stderr" == *"no key, and listening on *: anyone who reaches it could use the GPU"*"or write auth: off" ]]
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -D -c /dev/null -l '0.0.0.0:0'
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -D -c /dev/null -l '[::]:0'
	printf 'auth: off\nlisten: "*:0"\n' >"$CONF"
	serve_start -c "$CONF" -l '0.0.0.0:0'
	serve_stop
	make_key "$BATS_TEST_TMPDIR/key"
	serve_start -l '0.0.0.0:0' -k "$BATS_TEST_TMPDIR/key"
	serve_stop
	serve_check 3 "$CONF" 'auth: off\nkey_file: %s\n' "$BATS_TEST_TMPDIR/key"
	[[ "$stderr" == *"auth: off and a key: choose one" ]]
	serve_check 3 "$CONF" 'auth: maybe\n'
}

@test "user: drops root after binding; a missing user stops it; root is warned about" {
	printf 'user: no-such-user-here\n' >"$CONF"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -D -c "$CONF" -l 127.0.0.1:0
	[[ "$stderr" == *"user: no-such-user-here: no such user" ]]
	if [ "$(id -u)" -ne 0 ]; then
		printf 'user: root\n' >"$CONF"
		run -3 --separate-stderr "$GLEAM_BIN/gleam-serve" -D -c "$CONF" -l 127.0.0.1:0
		[[ "$stderr" == *"only root can become another user" ]]
		skip "not root: the drop itself is not tested"
	fi
	serve_start -l 127.0.0.1:0
	# Said once the port is bound, which may be after "listening on".
	wait_for "running as root: " "$SERVE_LOG"
	serve_stop
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	printf 'user: nobody\n' >"$CONF"
	serve_start -c "$CONF" -v
	wait_for "running as nobody" "$SERVE_LOG"
	! grep -q "running as root: " "$SERVE_LOG"
	# The server's process is nobody's now.
	[ "$(ps -o user= -p "$SERVE_PID")" = nobody ]
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 "$SERVE_ADDR"
	serve_stop
}

@test "pre-authentication: handshakes are capped per address, and never take the clients' slots" {
	printf 'max_handshakes_per_address: 4\nmax_handshakes: 8\nmax_clients: 2\n' >"$CONF"
	serve_start -c "$CONF" -v
	# 10 connections from 127.0.0.2 that never say HELLO: 4 are held,
	# the others refused at once with a reason.
	python3 - "$SERVE_PORT" >"$BATS_TEST_TMPDIR/flood.out" <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
held, refused = [], 0
for i in range(10):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", port))
    held.append(s)
time.sleep(0.5)
for s in held:
    s.setblocking(False)
    try:
        d = s.recv(4096)
        if b"too many handshakes" in d:
            refused += 1
    except BlockingIOError:
        pass
print("refused", refused, flush=True)
time.sleep(3)
PY
	BG_PID=$!
	wait_for refused "$BATS_TEST_TMPDIR/flood.out"
	grep -q "refused 6" "$BATS_TEST_TMPDIR/flood.out"
	grep -q "handshakes under way (4 from its address)" "$SERVE_LOG"
	# Meanwhile a client from another address is served at once.
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 "$SERVE_ADDR"
	kill "$BG_PID" 2>/dev/null || true
	wait "$BG_PID" 2>/dev/null || true
	BG_PID=
	serve_stop
}

@test "idle_timeout ends a remoting client that sends nothing" {
	printf 'idle_timeout: 300ms\nbackend: host\n' >"$CONF"
	serve_start -c "$CONF" -v
	python3 - "$SERVE_PORT" "$BATS_TEST_DIRNAME" <<'PY'
import socket, struct, sys, time
sys.path.insert(0, sys.argv[2])
import gleamwire as gw
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
c = gw.Conn(s)
c.handshake()
# Opening a remoting session hands it to its worker; then silence.
c.send(256, struct.pack("<I", 0), fid=1)
t, f, i, p = c.frame()
assert t == 256 and i == 1, (t, f, i, p)
time.sleep(1.0)
try:
    c.frame()
    sys.exit("still open after 1 s")
except EOFError:
    pass
PY
	wait_for "idle for 0.3 s, closing" "$SERVE_LOG" 30
	serve_stop
}

@test "resume: a dropped session is taken up again, the lost reply sent again byte for byte; a wrong token resumes nothing" {
	local iso
	for iso in process thread; do
		printf 'backend: host\nisolation: %s\n' "$iso" >"$CONF"
		serve_start -c "$CONF" -v
		run -0 python3 "$BATS_TEST_DIRNAME/resume-wire.py" "$SERVE_PORT" "$BATS_TEST_DIRNAME"
		[ "$output" = "resume ok" ]
		grep -q "its session waits 30.0 s for it to resume" "$SERVE_LOG"
		grep -q "no session 1 to resume" "$SERVE_LOG"
		grep -q "resumes session 1 of" "$SERVE_LOG"
		grep -q "resumed, [0-9]* bytes sent again" "$SERVE_LOG"
		# Draining ends a session that waits, at once.
		local t0=$SECONDS
		serve_stop
		[ $((SECONDS - t0)) -lt 5 ]
	done
}

@test "resume: the window passes and the session's resources are freed; resume: 0 offers none" {
	printf 'backend: host\nresume: 300ms\n' >"$CONF"
	serve_start -c "$CONF" -v
	python3 - "$SERVE_PORT" "$BATS_TEST_DIRNAME" <<'PY'
import socket, struct, sys, os
sys.path.insert(0, sys.argv[2])
import gleamwire as gw
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
b = (struct.pack("<IHHI", gw.MAGIC, 2, 2, 1) + os.urandom(32) +
     struct.pack("<H", 1) + b"t")
s.sendall(gw.frame(gw.HELLO, b))
c = gw.Conn(s)
c.frame(); t, f, i, p = c.frame()
assert t == gw.WELCOME and struct.unpack("<I", p[42:46])[0] == 1
c.on = True
c.send(256, struct.pack("<I", 0), fid=1)
c.frame()
s.close()
PY
	wait_for "not resumed within 0.3 s, closing" "$SERVE_LOG" 40
	serve_stop
	printf 'backend: host\nresume: 0\n' >"$CONF"
	serve_start -c "$CONF" -v
	run -0 python3 - "$SERVE_PORT" "$BATS_TEST_DIRNAME" <<'PY'
import socket, struct, sys, os
sys.path.insert(0, sys.argv[2])
import gleamwire as gw
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
b = (struct.pack("<IHHI", gw.MAGIC, 2, 2, 1) + os.urandom(32) +
     struct.pack("<H", 1) + b"t")
s.sendall(gw.frame(gw.HELLO, b))
c = gw.Conn(s)
c.frame(); t, f, i, p = c.frame()
assert t == gw.WELCOME and len(p) == 42, len(p)
print("none offered")
PY
	[ "$output" = "none offered" ]
	serve_stop
}
