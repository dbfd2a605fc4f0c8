#!/usr/bin/env bats
# gleam-cache's interface, on cache directories made here: entries are
# written by the cstore format (a header and the bytes) through a test
# cache that gleam-serve filled, or by hand for the bad cases.

load test_helper

CUDA_BIN=${GLEAM_CUDA_BIN:-$BATS_TEST_DIRNAME/../../build/cuda}
HOST_KERNELS=${GLEAM_HOST_KERNELS:-$BATS_TEST_DIRNAME/../../build/tests/host-kernels.so}

# A cache directory with entries of known hashes: the static cacheload
# test program run once through a host-backend server.
setup_file() {
	export DIR=$BATS_FILE_TMPDIR/cache
	export XDG_CACHE_HOME=$BATS_FILE_TMPDIR/xdg
	[ -x "$CUDA_BIN/static/cacheload" ] || return 0
	printf 'backend: host\nhost_kernels: %s\ncache_dir: %s\ncache_ram: 64m\ncache_disk: 1g\n' \
	    "$HOST_KERNELS" "$DIR" >"$BATS_FILE_TMPDIR/s.yaml"
	serve_start -c "$BATS_FILE_TMPDIR/s.yaml"
	"$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$CUDA_BIN/static/cacheload" -m 16 >&2 3>&- ||
	    { serve_kill; return 1; }
	serve_stop
}

teardown_file() {
	serve_kill
	sanitizer_check "$BATS_FILE_TMPDIR"
}

need_cache() {
	[ -d "$DIR/data/nokey" ] || skip "CUDA test programs not built (make cuda-tests)"
	rm -rf "$BATS_TEST_TMPDIR/c"
	cp -a "$DIR" "$BATS_TEST_TMPDIR/c"
	C=$BATS_TEST_TMPDIR/c
}

@test "-h prints the usage on stdout and exits 0" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-cache" -h
	[[ "${lines[0]}" == "usage: gleam-cache "* ]]
	[ -z "$stderr" ]
}

@test "misuse: no command, unknown command, stray flags, bad numbers" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache"
	[[ "$stderr" == *"no command given"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" frob
	[[ "$stderr" == *"unknown command 'frob'"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" -s 1g ls
	[[ "$stderr" == *"go with prune"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" -r ls
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" prune
	[[ "$stderr" == *"give -a age, -s size"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" -s 12q prune
	[[ "$stderr" == *"-s 12q"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" -a 3x prune
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" -t ../etc ls
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" -o json ls
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" ls extra
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" -d "$BATS_TEST_TMPDIR" rm nothex
	[[ "$stderr" == *"not a hash"* ]]
}

@test "a missing directory is an error; an empty one is an empty cache" {
	run -6 --separate-stderr "$GLEAM_BIN/gleam-cache" -d "$BATS_TEST_TMPDIR/none" ls
	[[ "$stderr" == *"$BATS_TEST_TMPDIR/none"* ]]
	mkdir "$BATS_TEST_TMPDIR/empty"
	run -0 "$GLEAM_BIN/gleam-cache" -d "$BATS_TEST_TMPDIR/empty" ls
	[ -z "$output" ]
	run -0 "$GLEAM_BIN/gleam-cache" -d "$BATS_TEST_TMPDIR/empty" -o yaml du
	[[ "$output" == *"disk: {entries: 0, bytes: 0, data_bytes: 0}"* ]]
	[[ "$output" == *"hit_ratio: null"* ]]
	[[ "$output" == *"counters_updated: null"* ]]
}

@test "long options, and options after the command" {
	mkdir "$BATS_TEST_TMPDIR/empty"
	run -0 "$GLEAM_BIN/gleam-cache" du --dir "$BATS_TEST_TMPDIR/empty" --format=yaml
	[[ "$output" == *"disk: {entries: 0, bytes: 0, data_bytes: 0}"* ]]
	run -0 "$GLEAM_BIN/gleam-cache" prune -d "$BATS_TEST_TMPDIR/empty" --max-size=1g --dry-run
	run -2 --separate-stderr "$GLEAM_BIN/gleam-cache" ls --max-age 1d -d "$BATS_TEST_TMPDIR/empty"
	[[ "$stderr" == *"go with prune"* ]]
}

@test "ls lists every entry, table and YAML" {
	need_cache
	n=$(find "$C/data" -type f | wc -l)
	[ "$n" -gt 1 ]
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" ls
	[ "${#lines[@]}" -eq $((n + 1)) ]
	[[ "${lines[0]}" == "TENANT "*"HASH "*"SIZE "*"DISK "*"USED PINNED" ]]
	[[ "${lines[1]}" == "nokey "* ]]
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -o yaml ls
	[ "$(grep -c '^- tenant: nokey$' <<<"$output")" -eq "$n" ]
	for k in hash bytes disk_bytes last_used pinned damaged; do
		[ "$(grep -c "^  $k: " <<<"$output")" -eq "$n" ]
	done
	# Every listed hash names its file.
	for h in $(sed -n 's/^  hash: //p' <<<"$output"); do
		[ -f "$C/data/nokey/${h:0:2}/$h" ]
	done
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -t k0123456789abcdef ls
	[ -z "$output" ]
}

@test "du adds up the files and reports the server's counters" {
	need_cache
	bytes=$(find "$C/data" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -o yaml stat
	[[ "$output" == *"disk: {entries: $(find "$C/data" -type f | wc -l), bytes: $bytes,"* ]]
	# The one run missed everything it stored and hit nothing.
	grep -q '^misses: [1-9]' <<<"$output"
	grep -q '^hits: {ram: 0, disk: 0, gpu: 0}' <<<"$output"
	grep -q '^hit_ratio: 0.0000' <<<"$output"
	grep -q '^counters_updated: [0-9]' <<<"$output"
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" du
	[[ "${lines[0]}" == "TIER "*"ENTRIES "*"SIZE" ]]
	[[ "${lines[1]}" == "disk "* ]]
	[[ "${lines[4]}" == "hits 0 (ram 0, disk 0, gpu 0), misses "* ]]
}

@test "prune is silent with nothing to do, and keeps within the size" {
	need_cache
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -s 100g prune
	[ -z "$output" ]
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -a 1d prune
	[ -z "$output" ]
	before=$(find "$C/data" -type f | wc -l)
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -n -s 4m prune
	[ "$(find "$C/data" -type f | wc -l)" -eq "$before" ]
	[[ "${lines[-1]}" == "would remove "* ]]
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -s 4m prune
	[[ "$output" == "removed "*" entries "* ]]
	left=$(find "$C/data" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	[ "$left" -le $((4 << 20)) ]
	# The ones left are the most recently used.
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -o yaml -s 0 prune
	grep -q '^removed: [0-9]' <<<"$output"
	grep -q '^bytes_left: 0$' <<<"$output"
	[ "$(find "$C/data" -type f | wc -l)" -eq 0 ]
}

@test "prune by age takes the entries not used since" {
	need_cache
	f=$(find "$C/data" -type f | head -n 1)
	touch -d '3 days ago' "$f"
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -a 2d prune
	[[ "$output" == "removed 1 entries "* ]]
	[ ! -e "$f" ]
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -a 2d prune
	[ -z "$output" ]
}

@test "prune leaves entries pinned by a live server's client" {
	need_cache
	f=$(find "$C/data" -type f | head -n 1)
	h=${f##*/}
	# This shell stands for the server: its pid is alive.
	echo "$$ nokey $h" >"$C/pins"
	echo "999999999 nokey $(find "$C/data" -type f | sed -n 2p | sed 's|.*/||')" >>"$C/pins"
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -s 0 prune
	[[ "$output" == *"kept 1 entries"*"in use by a client"* ]]
	[ -e "$f" ]
	[ "$(find "$C/data" -type f | wc -l)" -eq 1 ]
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" ls
	[[ "${lines[1]}" == *" yes" ]]
}

@test "verify finds a corrupt entry, -r removes it" {
	need_cache
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -q verify
	[ -z "$output" ]
	f=$(find "$C/data" -type f | head -n 1)
	printf 'XXXX' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null
	run -1 "$GLEAM_BIN/gleam-cache" -d "$C" verify
	[[ "${lines[0]}" == "corrupt: nokey/${f##*/}: "* ]]
	[[ "${lines[-1]}" == "verified "*" entries ("*"): 1 corrupt, 0 removed" ]]
	run -1 "$GLEAM_BIN/gleam-cache" -d "$C" -o yaml verify
	grep -q "hash: ${f##*/}" <<<"$output"
	grep -q '^removed: 0$' <<<"$output"
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -r verify
	[[ "${lines[0]}" == *": removed" ]]
	[[ "${lines[-1]}" == "verified "*" entries ("*"): 1 corrupt, 1 removed" ]]
	[ ! -e "$f" ]
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" -q verify
	[ -z "$output" ]
}

@test "verify: a summary line when clean; -q, nothing" {
	need_cache
	n=$(find "$C/data" -type f | wc -l)
	run -0 --separate-stderr "$GLEAM_BIN/gleam-cache" -d "$C" verify
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" =~ ^verified\ $n\ entries\ \([0-9.]+\ MiB\):\ 0\ corrupt,\ 0\ removed$ ]]
	# No terminal: no progress.
	[ -z "$stderr" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-cache" -d "$C" -q verify
	[ -z "$output" ] && [ -z "$stderr" ]
	# Nothing to verify.
	mkdir "$BATS_TEST_TMPDIR/empty"
	run -0 "$GLEAM_BIN/gleam-cache" -d "$BATS_TEST_TMPDIR/empty" verify
	[ "$output" = "verified 0 entries (0 B): 0 corrupt, 0 removed" ]
}

@test "verify: progress on stderr (GLEAM_PROGRESS=1), bytes of the total, erased; -q and 0 silence it" {
	need_cache
	n=$(find "$C/data" -type f | wc -l)
	GLEAM_PROGRESS=1 run -0 --separate-stderr "$GLEAM_BIN/gleam-cache" \
	    -d "$C" verify
	[[ "$output" == "verified $n entries"* ]]
	[[ "$stderr" == $'\r'"verify 0/$n: 0 B/"*" MiB 0%"* ]]
	[[ "$stderr" =~ $'\r'\ +$'\r'$ ]]
	[[ "$stderr" != *$'\n'* ]]
	GLEAM_PROGRESS=1 run -0 --separate-stderr "$GLEAM_BIN/gleam-cache" \
	    -d "$C" -q verify
	[ -z "$output" ] && [ -z "$stderr" ]
	GLEAM_PROGRESS=0 run -0 --separate-stderr "$GLEAM_BIN/gleam-cache" \
	    -d "$C" verify
	[ -z "$stderr" ]
}

@test "verify on a terminal: nothing for work shorter than a second" {
	need_cache
	command -v python3 >/dev/null || skip "python3 is not installed"
	run -0 python3 "$BATS_TEST_DIRNAME/ptyrun.py" "$BATS_TEST_TMPDIR/tty" \
	    "$GLEAM_BIN/gleam-cache" -d "$C" verify
	[[ "$output" == "verified "* ]]
	[ ! -s "$BATS_TEST_TMPDIR/tty" ]
}

@test "rm removes named entries and says which were not there" {
	need_cache
	f=$(find "$C/data" -type f | head -n 1)
	run -0 "$GLEAM_BIN/gleam-cache" -d "$C" rm "${f##*/}"
	[ ! -e "$f" ]
	run -1 --separate-stderr "$GLEAM_BIN/gleam-cache" -d "$C" rm "${f##*/}"
	[[ "$stderr" == *"no such entry"* ]]
}

@test "a held lock makes removal wait, then fail clearly" {
	need_cache
	command -v flock >/dev/null || skip "no flock(1)"
	flock -x "$C/lock" sleep 60 3>&- &
	BG=$!
	sleep 0.3
	GLEAM_CACHE_WAIT=0.5 run -6 --separate-stderr timeout 60 "$GLEAM_BIN/gleam-cache" -d "$C" -s 0 prune
	kill "$BG"; wait "$BG" 2>/dev/null || true
	[[ "$stderr" == *"lock: held by another process"* ]]
	[ "$(find "$C/data" -type f | wc -l)" -gt 0 ]
}
