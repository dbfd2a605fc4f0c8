#!/usr/bin/env bats
# Gleam's libnvidia-ml.so.1 against gleam-serve's host backend, which
# reports the GPUs of a file (GLEAM_TEST_GPUS, for tests only) in place of
# NVML's: nvml-check calls every function the library answers and prints
# what it got (compared with tests/nvml/expected), then the rules around
# them.  tests/gpu/run compares nvidia-smi's answers on the H200.

load test_helper

LIBDIR=${GLEAM_LIBDIR:-$BATS_TEST_DIRNAME/../../lib}
CHECK=${GLEAM_NVML_CHECK:-$BATS_TEST_DIRNAME/../../build/default/tests/nvml-check}
NVML_DIR=$BATS_TEST_DIRNAME/../nvml

setup() {
	[ -x "$CHECK" ] || skip "nvml-check not built (make $CHECK)"
	printf 'backend: host\n' >"$BATS_TEST_TMPDIR/host.yaml"
	cp "$NVML_DIR/gpus.yaml" "$BATS_TEST_TMPDIR/gpus.yaml"
	export GLEAM_TEST_GPUS=$BATS_TEST_TMPDIR/gpus.yaml
}

teardown() {
	[ -z "${B_PID:-}" ] || daemon_stop "$B_PID"
	serve_kill
	sanitizer_check
}

# nvml_run [ARGS]: nvml-check through gleam-run against the server.
nvml_run() {
	run --separate-stderr timeout 60 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
	    -- "$CHECK" "$@"
}

@test "the library exports every function of NVML's and nothing else" {
	local so=$LIBDIR/libnvidia-ml.so.1 nv=$BATS_TEST_DIRNAME/../../lib/nvml
	nm -D --defined-only "$so" | awk '{ print $3 }' | sort >"$BATS_TEST_TMPDIR/have"
	{ sed -n 's/^NVML_FN(\(.*\))$/\1/p' "$nv/exports.h"
	  echo nvmlErrorString; } | sort >"$BATS_TEST_TMPDIR/want"
	run -0 diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/have"
	# The list is the real library's, driver 580's.
	sort "$nv/ref-580-exports.txt" | diff - "$BATS_TEST_TMPDIR/have"
	run -0 grep -c . "$BATS_TEST_TMPDIR/want"
	[ "$output" -gt 300 ]
	run -0 objdump -p "$so"
	[[ "$output" == *"SONAME               libnvidia-ml.so.1"* ]]
}

@test "the server's status carries what NVML says of each GPU" {
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"gpu_source: test"* ]]
	[[ "$output" == *"driver_version: 580.95.05"* ]]
	[[ "$output" == *"cuda_version: 13000"* ]]
	[[ "$output" == *"uuid: GPU-8f3a1c52-5d1e-4f0b-9a47-2c1d3e4f5a6b"* ]]
	[[ "$output" == *'pci_bus_id: "00000000:19:00.0"'* ]]
	[[ "$output" == *"temperature_c: 41"* ]]
	[[ "$output" == *"max_clock_video_mhz: 1545"* ]]
	[[ "$output" == *"fan_percent: null"* ]]
}

@test "every call through gleam-run answers as the server reports" {
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	nvml_run
	[ "$status" -eq 0 ]
	diff -u "$NVML_DIR/expected" - <<<"$output"
	[ -z "$stderr" ]
}

@test "a process that is the server's client lists itself on its GPUs" {
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	nvml_run -k
	[ "$status" -eq 0 ]
	[ "$(grep -c '^  process: self memory n/a$' <<<"$output")" -eq 2 ]
	[ "$(grep -c '^  processes: 1$' <<<"$output")" -eq 2 ]
}

@test "after cuInit, the program lists itself as a GPU process" {
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	nvml_run -c
	[ "$status" -ne 2 ] || skip "cuInit fails against this server: $stderr"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^  process: self memory n/a$' <<<"$output")" -eq 2 ]
}

@test "the server's CUDA_VISIBLE_DEVICES is the client's view" {
	CUDA_VISIBLE_DEVICES=1 serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	nvml_run
	[ "$status" -eq 0 ]
	[[ "$output" == *"count: 1"* ]]
	[[ "$output" == *"name: NVIDIA Test GPU"* ]]
	[[ "$output" != *"H200"* ]]
	serve_kill
	CUDA_VISIBLE_DEVICES=GPU-8f3a serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	nvml_run
	[ "$status" -eq 0 ]
	[[ "$output" == *"count: 1"* ]]
	[[ "$output" == *"name: NVIDIA H200"* ]]
	[[ "$output" == *"index: 0"* ]]
}

@test "answers older than a second are fetched anew" {
	command -v python3 >/dev/null || skip "no python3"
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	run --separate-stderr timeout 60 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
	    -- python3 "$NVML_DIR/refresh.py" "$GLEAM_TEST_GPUS"
	[ "$status" -eq 0 ]
	[ "$output" = "41 41 77" ]
}

@test "pynvml sees the server's GPUs" {
	python3 -c 'import pynvml' 2>/dev/null || skip "no pynvml (python3-pynvml or nvidia-ml-py)"
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	run --separate-stderr timeout 60 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
	    -- python3 "$NVML_DIR/pynvml-check.py"
	[ "$status" -eq 0 ]
	[[ "$output" == *"driver 580.95.05"* ]]
	[[ "$output" == *"0 NVIDIA H200 150754820096 150102409216 41 []"* ]]
	[[ "$output" == *"1 NVIDIA Test GPU 1073741824 536870912 n/a []"* ]]
}

@test "with a key, the library reaches the server that demands it" {
	make_key "$BATS_TEST_TMPDIR/key"
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml" -k "$BATS_TEST_TMPDIR/key"
	run --separate-stderr timeout 60 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
	    -k "$BATS_TEST_TMPDIR/key" -- "$CHECK"
	[ "$status" -eq 0 ]
	[[ "$output" == *"count: 2"* ]]
	# Without it, nvmlInit fails as without a driver, and says why.
	run --separate-stderr env LD_PRELOAD="${GLEAM_PRELOAD:-}" LD_LIBRARY_PATH="$LIBDIR" \
	    GLEAM_SERVER="$SERVE_ADDR" "$CHECK"
	[ "$status" -eq 1 ]
	[ "$output" = "init: failed" ]
	[[ "$stderr" == *"NVML: cannot use server $SERVE_ADDR"* ]]
}

@test "without a server nvmlInit fails cleanly: no server, none there, a bad address" {
	run --separate-stderr env -u GLEAM_SERVER LD_PRELOAD="${GLEAM_PRELOAD:-}" LD_LIBRARY_PATH="$LIBDIR" "$CHECK"
	[ "$status" -eq 1 ]
	[ "$output" = "init: failed" ]
	[[ "$stderr" == *"NVML: no server: GLEAM_SERVER is not set"* ]]
	run --separate-stderr env LD_PRELOAD="${GLEAM_PRELOAD:-}" LD_LIBRARY_PATH="$LIBDIR" GLEAM_SERVER=127.0.0.1:1 "$CHECK"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"NVML: cannot use server 127.0.0.1:1"* ]]
	run --separate-stderr env LD_PRELOAD="${GLEAM_PRELOAD:-}" LD_LIBRARY_PATH="$LIBDIR" GLEAM_SERVER=:9 "$CHECK"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"GLEAM_SERVER=:9: no host"* ]]
}

@test "a GPU file that does not read reports no GPU and says why" {
	printf 'gpus:\n  - index: 0\n    name: x\n' >"$GLEAM_TEST_GPUS"
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"gpu_source: no GPU (GLEAM_TEST_GPUS unreadable)"* ]]
	[[ "$output" == *"gpus: []"* ]]
	grep -q "GLEAM_TEST_GPUS: .*memory_total: missing" "$SERVE_LOG"
	nvml_run
	[ "$status" -eq 0 ]
	[[ "$output" == *"count: 0"* ]]
}

# A gleam-serve whose NVML is Gleam's library (LD_LIBRARY_PATH), which
# asks the first server: B_PID, B_ADDR, its log B_LOG.
serve_b() {
	B_LOG=$BATS_TEST_TMPDIR/serve-b.log
	env -u GLEAM_TEST_GPUS -u GLEAM_NO_NVML GLEAM_SERVER=$SERVE_ADDR LD_LIBRARY_PATH=$LIBDIR \
	    "$GLEAM_BIN/gleam-serve" -D -c "$BATS_TEST_TMPDIR/host.yaml" \
	    -l 127.0.0.1:0 </dev/null 2>"$B_LOG" 3>&- &
	B_PID=$!
	B_ADDR=127.0.0.1:$(wait_listen "$B_LOG" "$B_PID")
}

# The pid of B's NVML helper: its one child with NVML mapped.
nvml_helper() {
	local p
	for p in $(pgrep -P "$B_PID"); do
		grep -q libnvidia-ml "/proc/$p/maps" 2>/dev/null && echo "$p"
	done
}

@test "the server asks NVML in a helper process: the server and its workers never map it" {
	# NVML started in a process that then forks: the CUDA workers forked
	# after the server's first status crashed in the driver (the H100).
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	serve_b
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$B_ADDR"
	[[ "$output" == *"gpu_source: nvml"* ]]
	[[ "$output" == *"uuid: GPU-8f3a1c52-5d1e-4f0b-9a47-2c1d3e4f5a6b"* ]]
	[[ "$output" == *"driver_version: 580.95.05"* ]]
	run ! grep libnvidia-ml "/proc/$B_PID/maps"
	h=$(nvml_helper)
	[ -n "$h" ]
	# A client's worker, forked after: its program runs, and in it no NVML.
	run -0 timeout 60 "$GLEAM_BIN/gleam-run" -s "$B_ADDR" -- "$CHECK"
	run ! grep libnvidia-ml "/proc/$B_PID/maps"
	# The helper keeps NVML: the next status is answered by the same one.
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$B_ADDR"
	[[ "$output" == *"gpu_source: nvml"* ]]
	[ "$(nvml_helper)" = "$h" ]
}

@test "a helper that died is started again at the next status" {
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml"
	serve_b
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$B_ADDR"
	h=$(nvml_helper)
	[ -n "$h" ]
	kill -KILL "$h"
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$B_ADDR"
	# The question that found it gone says so; the next one has a new one.
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$B_ADDR"
	[[ "$output" == *"gpu_source: nvml"* ]]
	h2=$(nvml_helper)
	[ -n "$h2" ] && [ "$h2" != "$h" ]
	# The server goes, and its helper with it.
	daemon_stop "$B_PID"
	B_PID=
	for i in $(seq 1 100); do [ -e "/proc/$h2" ] || break; sleep 0.05; done
	[ ! -e "/proc/$h2" ] || [ "$(cut -d' ' -f3 "/proc/$h2/stat")" = Z ]
}
