#!/usr/bin/env bats
# The inference workloads of bench/ and their driver: bench/workloads/infer
# (its interface, its model files, and its -K mode run end to end through
# gleam-run on gleam-serve's host backend, bit for bit equal to its CPU
# reference), bench/infer against the host backend, and the PyTorch
# scripts (compiled only: no PyTorch here).

load test_helper

ROOT=$BATS_TEST_DIRNAME/../..
INFER=${GLEAM_INFER:-$ROOT/build/workloads/infer}
HOST_KERNELS=${GLEAM_HOST_KERNELS:-$ROOT/build/tests/host-kernels.so}

setup_file() {
	[ -x "$INFER" ] || skip "infer not built (make cuda-tests)"
	export M32=$BATS_FILE_TMPDIR/m32.bin M40=$BATS_FILE_TMPDIR/m40.bin
	"$INFER" -g -d 32 -l 2 "$M32" >/dev/null
	"$INFER" -g -d 40 -l 1 -S 7 "$M40" >/dev/null
	export SERVE_CONF=$BATS_FILE_TMPDIR/host.yaml
	printf 'backend: host\nhost_kernels: %s\n' "$HOST_KERNELS" >"$SERVE_CONF"
}

setup() {
	[ -x "$INFER" ] || skip "infer not built (make cuda-tests)"
}

teardown() {
	serve_kill
	sanitizer_check
}

# key NAME: the value of "NAME: value" in $output, quotes removed.
key() {
	sed -n "s/^$1: \"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" <<<"$output"
}

@test "infer -h prints the usage; misuse exits 2 with a reason" {
	run -0 "$INFER" -h
	[ "${lines[0]}" = "usage: infer -g [-d dim] [-l layers] [-S seed] [-s size] model" ]
	[ "${lines[1]}" = "       infer [-KR] [-b batch] [-n steps] [-q seqlen] [-S seed] [-w warmup] model" ]
	run -2 --separate-stderr "$INFER" -x "$M32"
	[[ "$stderr" == *"usage: infer -g"* ]]
	run -2 --separate-stderr "$INFER" -R -b 0 "$M32"
	[[ "$stderr" == *"-b 0: not a number from 1 to 65535"* ]]
	run -2 --separate-stderr "$INFER" -R -n 5x "$M32"
	[[ "$stderr" == *"-n 5x: not a number"* ]]
	run -2 --separate-stderr "$INFER" -K -R "$M32"
	[[ "$stderr" == *"-K and -R exclude each other"* ]]
	run -2 --separate-stderr "$INFER" -R -d 32 "$M32"
	[[ "$stderr" == *"-d needs -g"* ]]
	run -2 --separate-stderr "$INFER" -g -n 3 "$M32"
	[[ "$stderr" == *"-n does not go with -g"* ]]
	run -2 --separate-stderr "$INFER" -g -s 12q "$M32"
	[[ "$stderr" == *"-s 12q: not a size"* ]]
	run -2 --separate-stderr "$INFER" -R -q 2000 "$M32"
	[[ "$stderr" == *"-q 2000: longer than the model's 1024 positions"* ]]
}

@test "infer -g: the seed decides the file, the size the layers" {
	run -0 "$INFER" -g -d 32 -l 2 "$BATS_TEST_TMPDIR/a.bin"
	[ "$(key layers)" = 2 ]
	[ "$(key model_bytes)" = "$(stat -c %s "$BATS_TEST_TMPDIR/a.bin")" ]
	cmp "$M32" "$BATS_TEST_TMPDIR/a.bin"
	"$INFER" -g -d 32 -l 2 -S 2 "$BATS_TEST_TMPDIR/b.bin" >/dev/null
	! cmp -s "$M32" "$BATS_TEST_TMPDIR/b.bin"
	# 12 d^2 + 13 d floats a layer; the embeddings are (8192 + 1024) d.
	run -0 "$INFER" -g -d 64 -s 3m "$BATS_TEST_TMPDIR/c.bin"
	[ "$(key layers)" = $(( (3 * 1048576 / 4 - 9216 * 64 - 128) / (12 * 64 * 64 + 13 * 64) )) ]
	# With -l, the size picks the vocabulary.
	run -0 "$INFER" -g -d 64 -l 1 -s 4m "$BATS_TEST_TMPDIR/d.bin"
	[ "$(key layers)" = 1 ]
	[ "$(key vocab)" -gt 8192 ]
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/d.bin")" -le $((4 * 1048576 + 48)) ]
}

@test "infer: a file that is not a whole model is refused" {
	printf 'hello, world\n' >"$BATS_TEST_TMPDIR/junk"
	run -3 --separate-stderr "$INFER" -R "$BATS_TEST_TMPDIR/junk"
	[ "$stderr" = "infer: $BATS_TEST_TMPDIR/junk: not a model file" ]
	head -c 100000 "$M32" >"$BATS_TEST_TMPDIR/short"
	run -3 --separate-stderr "$INFER" -R "$BATS_TEST_TMPDIR/short"
	[ "$stderr" = "infer: $BATS_TEST_TMPDIR/short: size does not match its header" ]
	# A header whose dimension is absurd.
	{ head -c 12 "$M32"; printf '\377\377\377\177'; tail -c +17 "$M32"; } >"$BATS_TEST_TMPDIR/big"
	run -3 --separate-stderr "$INFER" -R "$BATS_TEST_TMPDIR/big"
	[ "$stderr" = "infer: $BATS_TEST_TMPDIR/big: dimensions out of range" ]
	run -6 --separate-stderr "$INFER" -R "$BATS_TEST_TMPDIR/none"
	[[ "$stderr" == *"none: No such file or directory" ]]
}

@test "infer -R: the checksum follows the inputs' seed and the steps" {
	run -0 "$INFER" -R -b 2 -q 16 -n 2 -w 1 "$M32"
	[ "$(key mode)" = reference ]
	[ "$(key input_bytes)" = $((2 * 16 * 4)) ]
	[ "$(key output_bytes)" = $((2 * 32 * 4)) ]
	a=$(key checksum)
	[[ "$a" =~ ^[0-9a-f]{16}$ ]]
	run -0 "$INFER" -R -b 2 -q 16 -n 2 -w 1 -S 2 "$M32"
	[ "$(key checksum)" != "$a" ]
	run -0 "$INFER" -R -b 2 -q 16 -n 1 -w 1 "$M32"
	[ "$(key checksum)" != "$a" ]
	run -0 "$INFER" -R -b 2 -q 16 -n 2 -w 1 "$M32"
	[ "$(key checksum)" = "$a" ]
}

@test "infer -K through gleam-run on the host backend equals the CPU reference bit for bit" {
	serve_start -c "$SERVE_CONF"
	# Odd shapes too: tiles cut short, rows shorter than the block.
	for shape in "$M32 -b 2 -q 16 -n 3 -w 1" "$M40 -b 3 -q 5 -n 2 -w 0 -S 9"; do
		set -- $shape
		m=$1
		shift
		run -0 "$INFER" -R "$@" "$m"
		want=$(key checksum)
		run -0 --separate-stderr timeout 120 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
		    -O "$BATS_TEST_TMPDIR/s.yaml" -- "$INFER" -K "$@" "$m"
		[ "$(key mode)" = kernels ]
		[ "$(key checksum)" = "$want" ]
		steps=$(( $(key steps) + $(key warmup) ))
		layers=$(key layers)
		# One output copy a step; 2 + 13 per layer kernels a step.
		grep -qx "  cuMemcpyDtoH: $steps" "$BATS_TEST_TMPDIR/s.yaml"
		grep -qx "  cuLaunchKernel: $((steps * (2 + 13 * layers)))" "$BATS_TEST_TMPDIR/s.yaml"
	done
}

@test "infer -K: a dimension above the block's 256 threads, still bit for bit" {
	"$INFER" -g -d 260 -l 1 -S 3 "$BATS_TEST_TMPDIR/m260.bin" >/dev/null
	serve_start -c "$SERVE_CONF"
	run -0 "$INFER" -R -b 1 -q 300 -n 1 -w 0 "$BATS_TEST_TMPDIR/m260.bin"
	want=$(key checksum)
	run -0 --separate-stderr timeout 120 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
	    "$INFER" -K -b 1 -q 300 -n 1 -w 0 "$BATS_TEST_TMPDIR/m260.bin"
	[ "$(key checksum)" = "$want" ]
}

@test "bench/README.md shows the usage that infer and bench/infer print" {
	"$INFER" -h | sed 's/^usage: /    /; s/^       /    /' >"$BATS_TEST_TMPDIR/u"
	"$ROOT/bench/infer" -h | sed 's/^usage: /    /' >>"$BATS_TEST_TMPDIR/u"
	while IFS= read -r l; do
		grep -qxF -- "$l" "$ROOT/bench/README.md" || { echo "not in bench/README.md: $l"; false; }
	done <"$BATS_TEST_TMPDIR/u"
}

@test "bench/infer -h, and misuse" {
	run -0 "$ROOT/bench/infer" -h
	[[ "${lines[0]}" == "usage: bench/infer [-v] [-B bindir]"* ]]
	run -2 --separate-stderr "$ROOT/bench/infer" -p mars
	[[ "$stderr" == *"-p mars: not one of local, loopback, 1gbit, 300mbit"* ]]
	run -2 --separate-stderr "$ROOT/bench/infer" -r 0 -x
	[[ "$stderr" == *"usage: bench/infer"* ]]
	run -2 --separate-stderr "$ROOT/bench/infer" -L "$BATS_TEST_TMPDIR" -H "$HOST_KERNELS" -W gpt2
	[[ "$stderr" == *"no libcuda.so.1"* ]]
}

@test "bench/infer on the host backend: round trips, bytes and the reference's checksum" {
	run -0 --separate-stderr timeout 300 env GLEAM_INFER="$INFER" "$ROOT/bench/infer" \
	    -B "$GLEAM_BIN" -L "${GLEAM_LIBDIR:-$ROOT/lib}" -H "$HOST_KERNELS" \
	    -d 32 -l 2 -s 1m -b 2 -q 16 -n 3 -w 1 -r 1 -p local,loopback \
	    -t "$BATS_TEST_TMPDIR/w" -o "$BATS_TEST_TMPDIR/r.yaml"
	table=("${lines[@]}")
	# The model it wrote (-t keeps it), on the CPU.
	run -0 "$INFER" -R -b 2 -q 16 -n 3 -w 1 "$BATS_TEST_TMPDIR/w/infer-32-2-1m.bin"
	want=$(key checksum)
	lines=("${table[@]}")
	[[ "${lines[0]}" == "WORKLOAD  PATH      MODE  LOAD_S"*"  OUTPUT" ]]
	[[ "${lines[1]}" == "infer-K   loopback  on "*" same" ]]
	[[ "${lines[2]}" == "infer-K   loopback  off "*" same" ]]
	# Then issue 4's targets that these figures can judge.
	[[ "${lines[3]}" =~ ^"target: infer-K: round trips a step, loopback: "[0-9.]+" (want <= 1): "(met|MISSED)$ ]]
	[[ "${lines[4]}" =~ ^"target: infer-K: cold model upload GB/s, loopback: "[0-9.]+" (want >= 2): "(met|MISSED)$ ]]
	[ "${#lines[@]}" -eq 5 ]
	y=$BATS_TEST_TMPDIR/r.yaml
	grep -qx 'backend: host' "$y"
	grep -qx 'local_gpu: false' "$y"
	[ "$(grep -c "^    checksums: \[\"$want\"\]\$" "$y")" -eq 2 ]
	[ "$(grep -c '^    checksum_same: true$' "$y")" -eq 2 ]
	for k in load_s step_ms items_per_s round_trips_per_step bytes_sent_per_step \
	    bytes_received_per_step load_round_trips bound_step_ms load_s_cold \
	    load_bytes_sent_cold; do
		[ "$(grep -Ec "^    $k: [0-9.e+-]+\$" "$y")" -eq 2 ]
	done
	grep -Eq '^    off_on_round_trips: [0-9.e+-]+$' "$y"
	# Which calls: with the client's optimizations, the output's copy.
	# (A module load's round trip may fall in the timed run instead of
	# the warm-up one, as the client's function table cache fills.)
	grep -c '^    step_round_trip_calls: ' "$y" | grep -qx 2
	on=$(sed -n 's/^    step_round_trip_calls: //p' "$y" | head -n 1)
	[[ "$on" == *"cuMemcpyDtoH 1.00"* ]]
	[[ "$(sed -n 's/^    step_round_trip_calls: //p' "$y" | tail -n 1)" == *"cuLaunchKernel "* ]]
	! [[ "$on" == *"cuLaunchKernel"* ]]
	grep -Eq '^  - \{workload: "infer-K", target: "round trips a step, loopback", value: [0-9.e+-]+, want: "<= 1", met: (true|false)\}$' "$y"
	# Each step sends at least its input, receives at least its output.
	for v in $(sed -n 's/^    bytes_sent_per_step: //p' "$y"); do
		awk -v v="$v" 'BEGIN { exit !(v >= 128) }'
	done
	for v in $(sed -n 's/^    bytes_received_per_step: //p' "$y"); do
		awk -v v="$v" 'BEGIN { exit !(v >= 256) }'
	done
}

@test "the PyTorch workloads compile" {
	PYTHONPYCACHEPREFIX=$BATS_TEST_TMPDIR run -0 python3 -m py_compile \
	    "$ROOT/bench/workloads/common.py" "$ROOT/bench/workloads/resnet18.py" \
	    "$ROOT/bench/workloads/gpt2.py" "$ROOT/bench/infer"
}

# One run (importing PyTorch takes seconds): it writes the state dict, then
# loads it back from the file as every run does.
@test "resnet18.py on the CPU, where a Python has PyTorch" {
	# Python alone: nothing for the sanitizer pass (make asan) to check.
	[ -z "${ASAN_OPTIONS:-}" ] || skip "no C code of ours under the sanitizers"
	py=
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import torch' 2>/dev/null; then py=$p; break; fi
	done
	[ -n "$py" ] || skip "no PyTorch"
	m=$BATS_TEST_TMPDIR/r18.pt
	run -0 "$py" "$ROOT/bench/workloads/resnet18.py" -d cpu -b 1 -n 1 -w 0 "$m"
	[ -s "$m" ]
	[ "$(key params)" = 11689512 ]
	[ "$(key output_bytes)" = 4000 ]
	[ "$(key model_bytes)" = "$(stat -c %s "$m")" ]
	[[ "$(key checksum)" =~ ^[0-9a-f]{16}$ ]]
	[[ "$(key model)" =~ ^(torchvision|builtin)$ ]]
}
