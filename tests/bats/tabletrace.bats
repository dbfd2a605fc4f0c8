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
