#!/usr/bin/env bats
# gleam-probe's interface: flags, numbers, output formats, failures.

load test_helper

teardown() {
	serve_kill
	sanitizer_check
}

USAGE="usage: gleam-probe [-qv] [-N count] [-k keyfile] [-o format] [-T timeout]"

@test "-h prints usage and options on stdout and exits 0" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -h
	[ "${lines[0]}" = "$USAGE" ]
	[[ "$output" == *"  -N, --count=count "* ]]
	[ -z "$stderr" ]
}

@test "long options; -c is the deprecated spelling of -N" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" --count=0 h
	[ "${stderr_lines[0]}" = "gleam-probe: -N: 0: too small" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" -c 0 h
	[ "${stderr_lines[0]}" = "gleam-probe: -c is deprecated and will go; use -N or --count" ]
	[ "${stderr_lines[1]}" = "gleam-probe: -N: 0: too small" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" --format json h
	[ "${stderr_lines[0]}" = "gleam-probe: -o: json: expected table or yaml" ]
}

@test "no server is a usage error" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe"
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "gleam-probe: no server given" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
}

@test "bad numbers name the flag and the value" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" -N 0 h
	[ "${stderr_lines[0]}" = "gleam-probe: -N: 0: too small" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" -N 10x h
	[ "${stderr_lines[0]}" = "gleam-probe: -N: 10x: not a number" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" -t -1s h
	[ "${stderr_lines[0]}" = "gleam-probe: -t: -1s: negative value" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 2fortnights h
	[ "${stderr_lines[0]}" = "gleam-probe: -t: 2fortnights: unknown unit 'fortnights'" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" -T 0 h
	[ "${stderr_lines[0]}" = "gleam-probe: -T: 0: too small" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" -o json h
	[ "${stderr_lines[0]}" = "gleam-probe: -o: json: expected table or yaml" ]
}

@test "bad server addresses are usage errors" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" host:0
	[ "${stderr_lines[0]}" = "gleam-probe: host:0: port 0" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" host:99999
	[ "${stderr_lines[0]}" = "gleam-probe: host:99999: port out of range" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-probe" :7383
	[ "${stderr_lines[0]}" = "gleam-probe: :7383: no host" ]
}

@test "a missing key file exits 3" {
	run -3 --separate-stderr "$GLEAM_BIN/gleam-probe" -k "$BATS_TEST_TMPDIR/none" h
	[[ "$stderr" == *"key file $BATS_TEST_TMPDIR/none: No such file or directory" ]]
}

@test "the table has a row per server" {
	serve_start
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -N 5 -t 0.2 "$SERVE_ADDR"
	[[ "${lines[0]}" == SERVER*"RTT MIN/MED/P99 (ms)"*"UP Mbit/s"*"DOWN Mbit/s"*CLIENTS*GPUS ]]
	[[ "${lines[1]}" == "$SERVE_ADDR "*"no GPU" ]]
	[ "${#lines[@]}" -eq 2 ]
	[ -z "$stderr" ]
	serve_stop
}

@test "YAML output has the documented keys" {
	serve_start
	GLEAM_CLIENT=laptop7 run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" \
	    -N 5 -t 0.2 -o yaml "$SERVE_ADDR"
	[ "${lines[0]}" = "client: laptop7" ]
	[ "${lines[1]}" = "probes:" ]
	[ "${lines[2]}" = "- server: $SERVE_ADDR" ]
	[ "${lines[3]}" = "  ok: true" ]
	[[ "$output" == *"  name: "* ]]
	[[ "$output" == *"  protocol: 2"* ]]
	[[ "$output" =~ "  rtt_ms: {min: "[0-9.]+", median: "[0-9.]+", p99: "[0-9.]+", count: 5}" ]]
	[[ "$output" =~ "  up_mbit_s: "[0-9.]+ ]]
	[[ "$output" =~ "  down_mbit_s: "[0-9.]+ ]]
	[[ "$output" == *"  bulk_s: 0.20"* ]]
	[[ "$output" == *"  status:"*"    host: "*"    address: $SERVE_ADDR"*"    backend: none"*"    gpus: []"* ]]
	if command -v python3 >/dev/null && python3 -c 'import yaml' 2>/dev/null; then
		printf '%s\n' "$output" | python3 -c '
import sys, yaml
d = yaml.safe_load(sys.stdin)
p = d["probes"][0]
assert p["ok"] is True and p["rtt_ms"]["count"] == 5
assert p["up_mbit_s"] > 0 and p["down_mbit_s"] > 0
assert p["status"]["gpus"] == []'
	fi
	# Without GLEAM_CLIENT the client is the host, as gleam-run -S says.
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -N 1 -t 0 -o yaml "$SERVE_ADDR"
	[ "${lines[0]}" = "client: $(hostname)" ]
	serve_stop
}

@test "-t 0 skips the throughput test" {
	serve_start
	run -0 "$GLEAM_BIN/gleam-probe" -N 2 -t 0 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"up_mbit_s: null"* ]]
	[[ "$output" == *"down_mbit_s: null"* ]]
	serve_stop
}

@test "an unreachable server is named, the others still reported, exit 4" {
	serve_start
	run -4 --separate-stderr "$GLEAM_BIN/gleam-probe" -N 2 -t 0 -T 1s 127.0.0.1:1 "$SERVE_ADDR"
	[ "$stderr" = "gleam-probe: 127.0.0.1:1: Connection refused" ]
	[[ "${lines[1]}" == "127.0.0.1:1 "*"unreachable: Connection refused" ]]
	[[ "${lines[2]}" == "$SERVE_ADDR "*"no GPU" ]]
	run -4 --separate-stderr "$GLEAM_BIN/gleam-probe" -N 2 -t 0 -o yaml 127.0.0.1:1 "$SERVE_ADDR"
	[[ "$output" == *"- server: 127.0.0.1:1"*"  ok: false"*"  error: Connection refused"*"- server: $SERVE_ADDR"*"  ok: true"* ]]
	serve_stop
}

@test "an unknown host is reported, not fatal" {
	run -4 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -T 2s no-such-host.invalid
	[[ "$stderr" == "gleam-probe: no-such-host.invalid: "* ]]
}

@test "a silent server times out within -T" {
	# A listener that never answers: gleam-link with no target would close;
	# a bash coprocess is enough to hold a port.
	command -v python3 >/dev/null || skip "python3 not installed"
	python3 -c '
import socket, time, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)
print(s.getsockname()[1], flush=True); time.sleep(10)' >"$BATS_TEST_TMPDIR/port" 3>&- &
	local pid=$!
	for i in $(seq 50); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.1; done
	local port; port=$(cat "$BATS_TEST_TMPDIR/port")
	SECONDS=0
	run -4 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -T 500ms "127.0.0.1:$port"
	[ "$stderr" = "gleam-probe: 127.0.0.1:$port: timed out" ]
	[ "$SECONDS" -le 3 ]
	kill "$pid"
}

@test "something that is not a Gleam server is recognised" {
	command -v python3 >/dev/null || skip "python3 not installed"
	python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)
print(s.getsockname()[1], flush=True)
c, _ = s.accept(); c.recv(100); c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n" + b"x" * 64); c.close()' >"$BATS_TEST_TMPDIR/port" 3>&- &
	local pid=$!
	for i in $(seq 50); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.1; done
	local port; port=$(cat "$BATS_TEST_TMPDIR/port")
	run -1 --separate-stderr "$GLEAM_BIN/gleam-probe" -t 0 -T 2s "127.0.0.1:$port"
	[ "$stderr" = "gleam-probe: 127.0.0.1:$port: not a Gleam server (bad handshake reply)" ]
	wait "$pid" || true
}

@test "no progress lines when stdout is not a terminal" {
	serve_start
	run -0 --separate-stderr "$GLEAM_BIN/gleam-probe" -N 2 -t 0 "$SERVE_ADDR"
	[ -z "$stderr" ]
	serve_stop
}
