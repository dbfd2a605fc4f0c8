#!/usr/bin/env bats
# tests/gpu/tabletrace: the tracing libcuda.so.1, against a fake real
# driver (tests/gpu/tabletrace/fake.c) through test.c; no GPU.  make bats
# builds them (make tabletrace and the two test files).

load test_helper

TT=$BATS_TEST_DIRNAME/../../build/tabletrace

setup() {
	LOG=$BATS_TEST_TMPDIR/trace.log
}

tt_test() {
	TABLETRACE_REAL=$TT/fake/libcuda-fake.so TABLETRACE_LOG=$LOG \
	    "$TT/tt-test" "$TT/libcuda.so.1" "$TT/fake/libcuda-fake.so"
}

@test "tabletrace exports exactly what the real driver exports" {
	nm -D --defined-only "$TT/libcuda.so.1" | awk '$2 ~ /^[TDB]$/ { print $3 }' |
	    grep -v '^_' | LC_ALL=C sort >"$BATS_TEST_TMPDIR/ours"
	LC_ALL=C sort -u "$BATS_TEST_DIRNAME/../../lib/client/ref/libcuda-exports.txt" \
	    >"$BATS_TEST_TMPDIR/real"
	run diff "$BATS_TEST_TMPDIR/real" "$BATS_TEST_TMPDIR/ours"
	[ "$status" -eq 0 ]
	run readelf -d "$TT/libcuda.so.1"
	[[ "$output" == *"Library soname: [libcuda.so.1]"* ]]
}

@test "tabletrace forwards calls and traces table slots against a fake driver" {
	run tt_test
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"not ok"* ]]
	[[ "$output" == *"1..24"* ]]
}

@test "tabletrace reads memory through a pipe where process_vm_readv is refused" {
	TABLETRACE_PEEK=pipe run tt_test
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"not ok"* ]]
	grep -q "ret 6e163fbe-b958444d-835ce182-aff1991e\[2\] .* m0=8b77665544332211.* \*m1=b0b0b0b0b0b0b0b0" "$LOG"
	! grep "call 6e163fbe-b958444d-835ce182-aff1991e\[5\] #5 " "$LOG" | grep -q " m[01]="
}

@test "tabletrace logs tables, layouts, arguments, results and memory" {
	tt_test
	cat "$LOG"
	u=6e163fbe-b958444d-835ce182-aff1991e
	grep -q "note real .*libcuda-fake.so versions no forwarded 6 missing 698" "$LOG"
	grep -q "export $u rc=0 table=0x[0-9a-f]* size=56 words=7 caller=tt-test+0x[0-9a-f]* served=copy" "$LOG"
	[ "$(grep -c "export $u " "$LOG")" -eq 2 ]
	grep -q "layout $u words=7 sized 0=0x38 1=libcuda-fake.so+0x[0-9a-f]* .* 6=0x0$" "$LOG"
	grep -q "call $u\[1\] #1 a=1,2,3,4,5,6 x0=[0-9a-f]* caller=tt-test+" "$LOG"
	grep -q "ret $u\[1\] #1 rc=91 " "$LOG"
	# The float slot: 1.5 in xmm0 going in, 6.25 coming out.
	grep -q "call $u\[3\] .* x0=3ff8000000000000 " "$LOG"
	grep -q "ret $u\[3\] .* x0=4019000000000000$" "$LOG"
	grep -q "ret $u\[4\] #4 rc=8071 " "$LOG"
	# Out-pointers: the value written, and what a written pointer points to.
	grep -q "call $u\[2\] .* m0=w:0000000000000000" "$LOG"
	grep -q "ret $u\[2\] .* m0=8b77665544332211.* \*m1=b0b0b0b0b0b0b0b0" "$LOG"
	# Bad pointers: no bytes shown, no fault.
	grep -q "call $u\[5\] #5 a=dead0000," "$LOG"
	! grep "call $u\[5\] #5 " "$LOG" | grep -q " m[01]="
	grep -q "ret $u\[5\] #6 rc=8 " "$LOG"
	grep -q "layout c693336e-1121df11-a8c368f3-55d89593 words=4 sizeless .* 3=0x0$" "$LOG"
	grep -q "export 01020300-00000000-00000000-00000000 rc=1 .* served=none" "$LOG"
	grep -q "ret d4082055-bde6704b-8d34ba12-3c66e1f2\[1\] .* integrity-real=same integrity-copy=" "$LOG"
	grep -q "proc v2 cuGetExportTable@13000 flags=0 rc=0 status=0 fn=libcuda.so.1+" "$LOG"
}

@test "tabletrace summary counts tables, slots and return values" {
	tt_test
	run "$BATS_TEST_DIRNAME/../gpu/tabletrace/summary" "$LOG"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"table 6e163fbe-b958444d-835ce182-aff1991e asked 2 rc 0 served copy size 56 words 7 by tt-test"* ]]
	[[ "$output" == *" functions at words 1,2,3,4,5"* ]]
	[[ "$output" == *"  [5] calls 2 by tt-test rc 7x1 8x1"* ]]
	[[ "$output" == *"table 01020300-00000000-00000000-00000000 asked 1 rc 1 served none by tt-test"* ]]
	[[ "$output" == *"integrity hash: ours equals the real one 1 times, differs 0 times"* ]]
}

@test "tabletrace TABLETRACE_UUIDS and TABLETRACE_PASS choose the tables wrapped" {
	TABLETRACE_UUIDS=c693336e tt_test || true
	grep -q "export 6e163fbe-b958444d-835ce182-aff1991e rc=0 .* served=real (not selected)" "$LOG"
	grep -q "export c693336e-1121df11-a8c368f3-55d89593 rc=0 .* served=copy" "$LOG"
	# CUDART and INTEGRITY go together: passing one passes both.
	rm -f "$LOG"
	TABLETRACE_PASS=d4082055 tt_test || true
	grep -q "export 6bd5fb6c-5bf4e74a-8987d939-12fd9df9 rc=0 .* served=real (not selected)" "$LOG"
	grep -q "export d4082055-bde6704b-8d34ba12-3c66e1f2 rc=0 .* served=real (not selected)" "$LOG"
	grep -q "export 6e163fbe-b958444d-835ce182-aff1991e rc=0 .* served=copy" "$LOG"
}

@test "tabletrace without a real driver: calls fail with 999, the log says why" {
	command -v python3 >/dev/null || skip "no python3"
	run env TABLETRACE_REAL=/nonexistent/libcuda.so.1 TABLETRACE_LOG=$LOG \
	    python3 -c "import ctypes; print(ctypes.CDLL('$TT/libcuda.so.1').cuInit(0))"
	[ "$status" -eq 0 ]
	[ "$output" = 999 ]
	grep -q "note error dlopen /nonexistent/libcuda.so.1" "$LOG"
	run env TABLETRACE_REAL=$TT/libcuda.so.1 TABLETRACE_LOG=$LOG \
	    python3 -c "import ctypes; print(ctypes.CDLL('$TT/libcuda.so.1').cuInit(0))"
	[ "$output" = 999 ]
	grep -q "note error TABLETRACE_REAL .*: that is tabletrace" "$LOG"
}

@test "tabletrace TABLETRACE_CALLS=1 logs the driver's forwarded calls too" {
	TABLETRACE_CALLS=1 run tt_test
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"not ok"* ]]
	grep -q "note real .* calls all$" "$LOG"
	grep -q "fcall cuInit #[0-9]* a=5," "$LOG"
	grep -q "fret cuInit #[0-9]* rc=0 " "$LOG"
	grep -q "fret cuDriverGetVersion #[0-9]* rc=0 .* m0=c8320000" "$LOG"
	grep -q "fret cuMemAlloc_v2 #[0-9]* rc=999 " "$LOG"
	# Without it, none.
	rm -f "$LOG"
	tt_test
	! grep -q " fcall " "$LOG"
}

# The NVML tracer: nvml-test is linked against libnvidia-ml.so.1, as
# nvidia-smi is; the tracer first in the path, the fake (with the real
# one's soname) opened by path.
NVFAKE=$TT/fake/libnvidia-ml-fake.so

nv_test() {
	TABLETRACE_NVML_REAL=$NVFAKE TABLETRACE_LOG=$LOG \
	    LD_LIBRARY_PATH=$TT/nvml "$TT/nvml-test" "$NVFAKE"
}

@test "nvmltrace exports its list of NVML's functions and nothing else" {
	nm -D --defined-only "$TT/nvml/libnvidia-ml.so.1" |
	    awk '$2 ~ /^[TDB]$/ { print $3 }' | grep -v '^_' | LC_ALL=C sort \
	    >"$BATS_TEST_TMPDIR/ours"
	{ sed -n 's/^NVML_FN(\(.*\))$/\1/p' "$BATS_TEST_DIRNAME/../../lib/nvml/exports.h"
	  echo nvmlErrorString; } | LC_ALL=C sort -u >"$BATS_TEST_TMPDIR/want"
	run diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/ours"
	echo "$output"
	[ "$status" -eq 0 ]
	run readelf -d "$TT/nvml/libnvidia-ml.so.1"
	[[ "$output" == *"Library soname: [libnvidia-ml.so.1]"* ]]
	[ "$(readlink "$TT/nvml/libnvidia-ml.so")" = libnvidia-ml.so.1 ]
}

@test "nvmltrace forwards NVML calls and wraps nvmlInternalGetExportTable's tables" {
	run nv_test
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"not ok"* ]]
	[[ "$output" == *"1..19"* ]]
	cat "$LOG"
	u=f00d0102-03040506-0708090a-0b0c0d0e
	n=$(($(grep -c . "$TT/nvml/exports.txt") - 1))
	grep -q "note real $NVFAKE versions no forwarded 7 missing $((n - 7)) self .*/nvml/libnvidia-ml.so.1 calls no$" "$LOG"
	grep -q "export $u rc=0 table=0x[0-9a-f]* size=2400 words=300 caller=nvml-test+0x[0-9a-f]* served=copy$" "$LOG"
	[ "$(grep -c "export $u " "$LOG")" -eq 2 ]
	grep -q "layout $u words=300 sized 0=0x960 1=libnvidia-ml-fake.so+0x[0-9a-f]* 2=libnvidia-ml-fake.so+0x[0-9a-f]* 3=0x1234 4-298=0x0 299=libnvidia-ml-fake.so+0x[0-9a-f]*$" "$LOG"
	# Slot 1 writes a number and a string; slot 299 is past 256 words.
	grep -q "ret $u\[1\] #[0-9]* rc=0 .* m0=0c00000000000000.* m1=\"fake-nvml\\\\x2012.0\"" "$LOG"
	grep -q "call $u\[2\] #[0-9]* a=28,2," "$LOG"
	grep -q "ret $u\[299\] #[0-9]* rc=299 " "$LOG"
	grep -q "export f00dee00-00000000-00000000-00000000 rc=0 table=0x[0-9a-f]* .* served=real (no NULL ends it)$" "$LOG"
	grep -q "layout f00dee00-00000000-00000000-00000000 words=16 unwrapped 0=libnvidia-ml-fake.so+" "$LOG"
	grep -q "export c4fe0000-00000000-00000000-00000000 rc=3 caller=nvml-test+0x[0-9a-f]* served=none$" "$LOG"
	! grep -q " fcall " "$LOG"
}

@test "nvmltrace TABLETRACE_CALLS=1 logs each public call by name, with its result" {
	TABLETRACE_CALLS=1 run nv_test
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"not ok"* ]]
	cat "$LOG"
	grep -q "note real .* calls all$" "$LOG"
	grep -q "fcall nvmlInit_v2 #[0-9]* a=.* caller=nvml-test+0x" "$LOG"
	grep -q "fret nvmlDeviceGetCount_v2 #[0-9]* rc=1 " "$LOG"
	grep -q "fret nvmlDeviceGetCount_v2 #[0-9]* rc=0 .* m0=0200000000000000" "$LOG"
	grep -q "fcall nvmlDeviceGetHandleByIndex_v2 #[0-9]* a=1," "$LOG"
	grep -q "fret nvmlDeviceGetName #[0-9]* rc=0 .* m1=\"Fake\\\\x20GPU\\\\x201\"" "$LOG"
	grep -q "fret nvmlErrorString #[0-9]* .* \*rax=\"Not\\\\x20Supported\"" "$LOG"
	grep -q "fret nvmlDeviceGetPowerUsage #[0-9]* rc=13 " "$LOG"
	# Each call line is paired with its ret line by #N.
	[ "$(grep -c ' fcall ' "$LOG")" -eq 9 ]
	[ "$(grep -c ' fret ' "$LOG")" -eq 9 ]
	run "$BATS_TEST_DIRNAME/../gpu/tabletrace/summary" "$LOG"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"table f00d0102-03040506-0708090a-0b0c0d0e asked 2 rc 0 served copy size 2400 words 300 by nvml-test"* ]]
	[[ "$output" == *" functions at words 1,2,299"* ]]
	[[ "$output" == *"  [299] calls 1 by nvml-test rc 299x1"* ]]
	[[ "$output" == *"public calls 9 to 8 functions; not 0:"* ]]
	[[ "$output" == *" nvmlDeviceGetPowerUsage rc 13 x1"* ]]
	# The sequence: the calls and table requests in order.
	seq=$(printf '%s\n' "$output" | sed -n '/^in order:$/,$p' | tr '\n' '|')
	[[ "$seq" == "in order:| nvmlDeviceGetCount_v2 rc 1| nvmlInit_v2 rc 0| nvmlDeviceGetCount_v2 rc 0| nvmlDeviceGetHandleByIndex_v2 rc 0| nvmlDeviceGetName rc 0| nvmlSystemGetDriverVersion rc 0| nvmlErrorString rc string| nvmlDeviceGetPowerUsage rc 13| export f00d0102-03040506-0708090a-0b0c0d0e rc=0 served=copy x2| f00d0102-03040506-0708090a-0b0c0d0e[1] rc 0|"* ]]
	[[ "$seq" == *"| export c4fe0000-00000000-00000000-00000000 rc=3 served=none| nvmlShutdown rc 0|" ]]
}

@test "nvmltrace without a real NVML: calls answer 13, the log says why" {
	command -v python3 >/dev/null || skip "no python3"
	run env TABLETRACE_NVML_REAL=/nonexistent/libnvidia-ml.so.1 TABLETRACE_LOG=$LOG \
	    python3 -c "import ctypes; print(ctypes.CDLL('$TT/nvml/libnvidia-ml.so.1').nvmlInit_v2())"
	[ "$status" -eq 0 ]
	[ "$output" = 13 ]
	grep -q "note error dlopen /nonexistent/libnvidia-ml.so.1" "$LOG"
	run env TABLETRACE_NVML_REAL=$TT/nvml/libnvidia-ml.so.1 TABLETRACE_LOG=$LOG \
	    python3 -c "import ctypes; print(ctypes.CDLL('$TT/nvml/libnvidia-ml.so.1').nvmlInternalGetExportTable(None, None))"
	[ "$output" = 13 ]
	grep -q "note error TABLETRACE_NVML_REAL .*: that is tabletrace" "$LOG"
	run env TABLETRACE_NVML_REAL=libnvidia-ml.so.1 TABLETRACE_LOG=$LOG \
	    python3 -c "import ctypes; print(ctypes.CDLL('$TT/nvml/libnvidia-ml.so.1').nvmlInit_v2())"
	[ "$output" = 13 ]
	grep -q "note error TABLETRACE_NVML_REAL libnvidia-ml.so.1: not an absolute path" "$LOG"
}

@test "gen-forwarders takes a list of names and refuses anything else" {
	d=$BATS_TEST_TMPDIR
	g=$BATS_TEST_DIRNAME/../gpu/tabletrace/gen-forwarders
	printf 'nvmlB\nnvmlA\n\nnvmlA\nnvmlOwn\n' >"$d/list"
	run "$g" "$d/list" "$d/f.S" "$d/f.c" nvmlOwn
	[ "$status" -eq 0 ]
	grep -q "const int tt_nfwd = 2;" "$d/f.c"
	[ "$(grep -c '^	"nvml[AB]",$' "$d/f.c")" -eq 2 ]
	! grep -q nvmlOwn "$d/f.S"
	printf 'nvmlA@@V1\n' >"$d/list"
	run "$g" "$d/list" "$d/f.S" "$d/f.c"
	[ "$status" -eq 1 ]
	[[ "$output" == *"versioned names"* ]]
	printf '0000000000001100 T nvmlA\n' >"$d/list"
	run "$g" "$d/list" "$d/f.S" "$d/f.c"
	[ "$status" -eq 1 ]
	[[ "$output" == *"not one name a line: 0000000000001100 T nvmlA"* ]]
	: >"$d/list"
	run "$g" "$d/list" "$d/f.S" "$d/f.c"
	[ "$status" -eq 1 ]
	[[ "$output" == *"no names"* ]]
}

# run's smi cases, with fake-smi as nvidia-smi and the fake NVML as the
# real one: the fake exports a name the tracer's list lacks
# (fake_nvml_inited), so run builds the tracer again from the fake's
# list, as it does on the GPU machine when the real NVML has more.
@test "run smi: nvidia-smi under the NVML tracer, built again from the real one's exports" {
	command -v python3 >/dev/null || skip "no python3"
	command -v cc >/dev/null || skip "no cc"
	top=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	ln -s "$top/tests/gpu/tabletrace/fake-smi" "$BATS_TEST_TMPDIR/bin/nvidia-smi"
	rm -rf "$TT/nvml-real"
	cd "$top"
	PATH=$BATS_TEST_TMPDIR/bin:$PATH TABLETRACE_REAL=/dev/null \
	    TABLETRACE_NVML_REAL=$NVFAKE run tests/gpu/tabletrace/run \
	    "$BATS_TEST_TMPDIR/out" smi
	echo "$output"
	[ "$status" -eq 0 ]
	o=$BATS_TEST_TMPDIR/out
	[[ "${lines[0]}" == "smi-list ok 2 calls; asked: f00d0102-03040506-0708090a-0b0c0d0e rc=0; built again here: the real NVML exports 1 names ours lacks (nvml-missing.txt)" ]]
	[[ "${lines[1]}" == "smi-q ok 2 calls; asked: f00d0102-"* ]]
	[[ "${lines[2]}" == "smi-query ok 2 calls; asked: f00d0102-"* ]]
	[ "$(cat "$o/nvml-missing.txt")" = fake_nvml_inited ]
	nm -D --defined-only "$TT/nvml-real/libnvidia-ml.so.1" | grep -q ' T fake_nvml_inited$'
	grep -q "note real $NVFAKE versions no forwarded 8 missing 0 self .*/nvml-real/libnvidia-ml.so.1 calls all$" "$o/smi-list.log"
	grep -q "^init 0 count 0 2 -q$" "$o/smi-q.out"
	grep -q "^init 0 count 0 2 --query-gpu=name,uuid --format=csv$" "$o/smi-query.out"
	grep -q "^== smi-list (rc 0): nvidia-smi$" "$o/summary.txt"
	grep -q "^ nvmlInit_v2 rc 0$" "$o/smi-list.summary"
	rm -rf "$TT/nvml-real"
	# A build that fails: the tracer built here, and the row says so.
	PATH=$BATS_TEST_TMPDIR/bin:$PATH TABLETRACE_REAL=/dev/null CC=false \
	    TABLETRACE_NVML_REAL=$NVFAKE run tests/gpu/tabletrace/run \
	    "$BATS_TEST_TMPDIR/out2" smi-list
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "smi-list ok 2 calls; "*"and building with them failed (nvml-build.log)"* ]]
	grep -q "note real .* self .*/tabletrace/nvml/libnvidia-ml.so.1 calls all$" \
	    "$BATS_TEST_TMPDIR/out2/smi-list.log"
	rm -rf "$TT/nvml-real"
}

@test "run smi-gleam: nvidia-smi under the NVML tracer in front of Gleam's NVML" {
	command -v python3 >/dev/null || skip "no python3"
	top=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	[ -f "$top/lib/libnvidia-ml.so.1" ] || skip "no lib/libnvidia-ml.so.1: make all"
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	ln -s "$top/tests/gpu/tabletrace/fake-smi" "$BATS_TEST_TMPDIR/bin/nvidia-smi"
	cd "$top"
	# smi-list first, for smi-gleam-list to compare with; no cc, so no
	# rebuild.
	PATH=$BATS_TEST_TMPDIR/bin:$PATH TABLETRACE_REAL=/dev/null CC=/nonexistent/cc \
	    TABLETRACE_NVML_REAL=$NVFAKE run tests/gpu/tabletrace/run \
	    "$BATS_TEST_TMPDIR/out" smi-list smi-gleam-list
	echo "$output"
	[ "$status" -eq 0 ]
	o=$BATS_TEST_TMPDIR/out
	[[ "${lines[0]}" == "smi-list ok 2 calls; asked: f00d0102-03040506-0708090a-0b0c0d0e rc=0; the real NVML exports 1 names ours lacks (nvml-missing.txt), and no cc here"* ]]
	[[ "${lines[1]}" == "smi-gleam-list ok rc 18, server 127.0.0.1:"*", 0 calls; asked: f00d0102-03040506-0708090a-0b0c0d0e rc=3; the same UUIDs as smi-list; Failed to initialize NVML: Mismatch in versions between nvidia-smi and NVML" ]]
	grep -q "note real $top/lib/libnvidia-ml.so.1 versions no forwarded" "$o/smi-gleam-list.log"
	grep -q "export f00d0102-03040506-0708090a-0b0c0d0e rc=3 caller=.* served=none$" "$o/smi-gleam-list.log"
	# Gleam's NVML says which UUID it refused.
	grep -q "gleam: NVML: nvmlInternalGetExportTable: f00d0102-0304-0506-0708-090a0b0c0d0e: not supported" "$o/smi-gleam-list.out"
	grep -q "^table f00d0102-03040506-0708090a-0b0c0d0e asked 1 rc 3 served none" "$o/smi-gleam-list.summary"
}
