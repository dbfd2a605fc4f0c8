#!/usr/bin/env bats
# The weight cache end to end: tests/cuda/cacheload (nvcc-built, real
# cudart) loads a seeded buffer in sub-range copies through gleam-run and
# the client library against gleam-serve's host backend, and reads it all
# back to check it.  gleam-run -O reports the bytes each way.

load test_helper

CUDA_BIN=${GLEAM_CUDA_BIN:-$BATS_TEST_DIRNAME/../../build/cuda}
HOST_KERNELS=${GLEAM_HOST_KERNELS:-$BATS_TEST_DIRNAME/../../build/tests/host-kernels.so}

setup() {
	[ -x "$CUDA_BIN/static/cacheload" ] || skip "CUDA test programs not built (make cuda-tests)"
	# Every copy cacheload makes (64 KiB and up) goes by name.
	export GLEAM_CACHE_MIN=64k
	# The names a program used, for its next run: kept per test.
	export XDG_CACHE_HOME=$BATS_TEST_TMPDIR/xdg
	DIR=$BATS_TEST_TMPDIR/cache
	CONF=$BATS_TEST_TMPDIR/s.yaml
	conf
}

teardown() {
	if [ -n "${BG_PID:-}" ]; then { kill -KILL "$BG_PID" && wait "$BG_PID"; } 2>/dev/null || true; fi
	serve_kill
	sanitizer_check
}

# conf [EXTRA-LINES]: the server's configuration, with a cache in DIR.
conf() {
	printf 'backend: host\nhost_kernels: %s\ncache_dir: %s\ncache_ram: 64m\ncache_disk: 1g\n%s' \
	    "$HOST_KERNELS" "$DIR" "${1:-}" >"$CONF"
}

# load [ARGS]: runs cacheload through gleam-run; sets SENT to the bytes
# the client sent.  Fails unless the program read back what it loaded.
load_once() {
	local st=$BATS_TEST_TMPDIR/stats.$RANDOM.yaml
	run --separate-stderr timeout 120 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
	    -O "$st" -- "$CUDA_BIN/${KIND:-static}/cacheload" -m 8 "$@"
	[ "$status" -eq 0 ] || { echo "$output $stderr" >&2; return 1; }
	[ "${lines[-1]}" = "cacheload: ok" ] || return 1
	SENT=$(sed -n 's/^bytes_sent: //p' "$st")
	STATS=$st
	[ -n "$SENT" ]
}

# A second load sends less than 1% of the first's bytes.
small() {
	echo "first $1 bytes, then $2" >&2
	[ "$2" -lt $(($1 / 100)) ]
}

@test "a second load sends less than 1% of the first's bytes" {
	serve_start -c "$CONF"
	load_once
	first=$SENT
	[ "$first" -gt $((8 << 20)) ]
	grep -q 'cachePut: [1-9]' "$STATS"
	load_once
	small "$first" "$SENT"
	grep -Eq 'cache(HtoD|Held): [1-9]' "$STATS"
	! grep -q 'cachePut:' "$STATS"
	for k in shared; do
		[ -x "$CUDA_BIN/$k/cacheload" ] || continue
		KIND=$k load_once
		small "$first" "$SENT"
	done
	# Pinned and pageable copies of the same bytes: the same entries.
	load_once -p
	small "$first" "$SENT"
	# Other bytes miss: another seed goes whole.
	load_once -s 7
	[ "$SENT" -gt $((first * 9 / 10)) ]
	# The server's status says what it holds.
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"cache: {entries: "*", ram_bytes: "*", hits: "* ]]
	! [[ "$output" == *"hits: 0,"* ]]
}

@test "one copy of 150 MiB: named in pieces of 64 MiB, each a tree of hashes, all hit the second time" {
	# In RAM: a worker maps each entry's memory file.
	printf 'backend: host\nhost_kernels: %s\ncache_ram: 512m\n' "$HOST_KERNELS" >"$CONF"
	serve_start -c "$CONF"
	load_once -w -m 150
	first=$SENT
	grep -qx 'cache_misses: 3' "$STATS"
	load_once -w -m 150
	small "$first" "$SENT"
	grep -qx 'cache_hits: 3' "$STATS"
	grep -qx 'cache_misses: 0' "$STATS"
	grep -qx 'hash_bytes: 157286400' "$STATS"
}

@test "copies that overwrite what a copy wrote go whole, not by name" {
	serve_start -c "$CONF"
	load_once
	first=$SENT
	# The load hits; the 3 rewrites of the buffer, as a program's inputs
	# overwrite the step before's, are sent as they are and not stored.
	load_once -r 3
	echo "first $first, then $SENT with 3 rewrites of 8 MiB" >&2
	[ "$SENT" -gt $((3 * (8 << 20))) ]
	[ "$SENT" -lt $((3 * (8 << 20) + first / 100)) ]
	! grep -q 'cachePut:' "$STATS"
}

@test "a third load sends its names ahead and its copies one-way" {
	serve_start -c "$CONF"
	load_once
	grep -q '^round_trips: ' "$STATS"
	first=$(sed -n 's/^round_trips: //p' "$STATS")
	! grep -q 'cacheHave' "$STATS"
	[ -n "$(ls "$XDG_CACHE_HOME/gleam/")" ]
	load_once
	# The names went at connect: their answer is waited for at the first
	# copy only if it has not come yet.
	! grep -q 'cacheHave: [^01]' "$STATS"
	grep -q 'cacheHeld: [1-9]' "$STATS"
	! grep -q 'cacheHtoD' "$STATS"
	[ "$(sed -n 's/^round_trips: //p' "$STATS")" -lt $((first / 2)) ]
	# Other bytes under the same names' file: asked as before.
	load_once -s 5
	grep -q 'cacheHtoD: [1-9]' "$STATS"
	# Off: no file read, no names sent.
	GLEAM_CACHE_AHEAD=0 load_once
	! grep -q 'cacheHave' "$STATS"
	grep -q 'cacheHtoD: [1-9]' "$STATS"
}

@test "the GPU tier with worker processes: entries outlive their worker, within the budget" {
	# The host backend emulates exported device memory with memory files.
	conf $'cache_gpu: 12m\n'
	serve_start -c "$CONF"
	load_once -w		# uploaded; its worker exports a copy
	first=$SENT
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"gpu_bytes: 8388608"* ]]
	load_once -w		# from that copy, in another worker
	small "$first" "$SENT"
	# Another 8 MiB: the tier keeps one of them within its 12 MiB.
	load_once -w -s 3
	load_once -w -s 3	# from the tier
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"gpu_bytes: 8388608"* ]]
	load_once -w		# evicted from the tier: from RAM
	small "$first" "$SENT"
	serve_stop
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" -o yaml du
	grep -q '^hits: {ram: [1-9][0-9]*, disk: 0, gpu: 2}' <<<"$output"
	grep -q '^gpu: {entries: 1, bytes: 8388608}' <<<"$output"
	# Without the tier: no GPU hits.
	rm -rf "$DIR"
	conf
	serve_start -c "$CONF"
	load_once -w
	load_once -w
	serve_stop
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" -o yaml du
	grep -q '^hits: {ram: 1, disk: 0, gpu: 0}' <<<"$output"
}

@test "after a restart the disk tier serves, and du counts its hits" {
	serve_start -c "$CONF"
	load_once
	first=$SENT
	serve_stop
	serve_start -c "$CONF"
	load_once
	small "$first" "$SENT"
	serve_stop
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" -o yaml du
	grep -q '^hits: {ram: 0, disk: [1-9]' <<<"$output"
}

@test "corrupt entries on disk are dropped and fetched again, never served" {
	serve_start -c "$CONF"
	load_once
	first=$SENT
	serve_stop
	for f in $(find "$DIR/data" -type f); do
		printf 'ZZZZZZZZ' | dd of="$f" bs=1 seek=4096 conv=notrunc 2>/dev/null
	done
	serve_start -c "$CONF"
	# cacheload compares every byte it reads back with what it loaded.
	load_once
	[ "$SENT" -gt $((first * 9 / 10)) ]
	grep -q 'bytes do not match the hash: removed' "$SERVE_LOG"
	load_once
	small "$first" "$SENT"
	serve_stop
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" verify
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" -o yaml du
	grep -q '^corrupt: [1-9]' <<<"$output"
}

@test "tenants: entries stored under one key are not served under another" {
	make_key "$BATS_TEST_TMPDIR/a.key" "the first tenant's secret key"
	make_key "$BATS_TEST_TMPDIR/b.key" "the second tenant's secret key"
	serve_start -c "$CONF" -k "$BATS_TEST_TMPDIR/a.key"
	GLEAM_KEY_FILE=$BATS_TEST_TMPDIR/a.key load_once
	first=$SENT
	serve_stop
	serve_start -c "$CONF" -k "$BATS_TEST_TMPDIR/b.key"
	GLEAM_KEY_FILE=$BATS_TEST_TMPDIR/b.key load_once
	[ "$SENT" -gt $((first * 9 / 10)) ]
	serve_stop
	serve_start -c "$CONF" -k "$BATS_TEST_TMPDIR/a.key"
	GLEAM_KEY_FILE=$BATS_TEST_TMPDIR/a.key load_once
	small "$first" "$SENT"
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" -o yaml du
	[ "$(grep -c '{tenant: i+default+' <<<"$output")" -eq 2 ]
}

@test "GLEAM_CACHE=0 sends everything and asks nothing" {
	serve_start -c "$CONF"
	load_once
	GLEAM_CACHE=0 load_once
	[ "$SENT" -gt $((8 << 20)) ]
	! grep -q 'cacheHtoD' "$STATS"
	GLEAM_CACHE=maybe GLEAM_CACHE_MIN=lots load_once
	[[ "$stderr" == *"GLEAM_CACHE=maybe: expected 0 or 1: ignored"* ]]
	[[ "$stderr" == *"GLEAM_CACHE_MIN=lots"*"ignored"* ]]
}

@test "a server without a cache: copies go whole, once each" {
	printf 'backend: host\nhost_kernels: %s\ncache_ram: 0\n' "$HOST_KERNELS" >"$CONF"
	serve_start -c "$CONF"
	load_once
	[ "$SENT" -gt $((8 << 20)) ] && [ "$SENT" -lt $((9 << 20)) ]
	grep -q 'cacheHtoD: 1$' "$STATS"
	grep -q 'cache: off' "$SERVE_LOG"
}

@test "an unusable cache directory: logged, served from RAM" {
	: >"$BATS_TEST_TMPDIR/file"
	DIR=$BATS_TEST_TMPDIR/file/sub conf
	serve_start -c "$CONF"
	# The store opens after the port is bound: its line may follow
	# "listening on".
	wait_for "going on without the disk tier" "$SERVE_LOG"
	load_once
	first=$SENT
	load_once
	small "$first" "$SENT"
}

@test "a full disk: entries stay in RAM, serving goes on, the disk fills again when it has room" {
	FULLFS=${HOST_KERNELS%/*}/fullfs.so
	[ -f "$FULLFS" ] || skip "no $FULLFS (make cuda-tests)"
	mkdir -p "$DIR"
	: >"$DIR/full"
	# Under the sanitizers the shim may come after their runtime.
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
	    LD_PRELOAD=$FULLFS GLEAM_FULLFS_DIR=$DIR serve_start -c "$CONF"
	load_once
	first=$SENT
	grep -q "No space left on device: entry not kept on disk" "$SERVE_LOG"
	[ -z "$(find "$DIR/data" -type f 2>/dev/null)" ]
	[ -z "$(find "$DIR/tmp" -type f 2>/dev/null)" ]
	# Served from RAM, every byte the program named.
	load_once
	small "$first" "$SENT"
	# Room again: the next entries are written.
	rm "$DIR/full"
	load_once -s 9
	# (The server writes entries to disk on a thread of its own.)
	for i in $(seq 50); do
		[ -z "$(find "$DIR/data" -type f)" ] || break
		sleep 0.2
	done
	[ -n "$(find "$DIR/data" -type f)" ]
	load_once -s 9
	small "$first" "$SENT"
	kill -0 "$SERVE_PID"
}

@test "the disk tier stays within its budget" {
	conf 'cache_disk: 6m
'
	sed -i '/^cache_disk: 1g$/d' "$CONF"
	serve_start -c "$CONF"
	load_once
	load_once -s 9
	bytes=$(find "$DIR/data" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	[ "$bytes" -le $((6 << 20)) ]
}

@test "prune during a load loses nothing the load needs" {
	serve_start -c "$CONF"
	load_once
	first=$SENT
	( while :; do "$GLEAM_BIN/gleam-cache" -q -d "$DIR" -s 0 prune; sleep 0.02; done ) 3>&- &
	BG_PID=$!
	load_once
	load_once -p
	kill "$BG_PID"; wait "$BG_PID" 2>/dev/null || true
	BG_PID=
	# Served from RAM, its files pinned while the client held them.
	small "$first" "$SENT"
}

@test "status lists a model while the cache holds all its last load (GLEAM_MODEL)" {
	# Disk only, so that a prune takes entries away.
	printf 'backend: host\nhost_kernels: %s\ncache_dir: %s\ncache_ram: 0\ncache_disk: 1g\n' \
	    "$HOST_KERNELS" "$DIR" >"$CONF"
	serve_start -c "$CONF"
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"models: []}"* ]]
	GLEAM_MODEL=llama-7b:q4 load_once
	# Listed once the server has seen the client go.
	probe_until "models: ['llama-7b:q4']}" || true
	[[ "$output" == *"models: ['llama-7b:q4']}"* ]] || { echo "$output"; cat "$SERVE_LOG"; false; }
	# A bad name is not sent; the run goes on.
	GLEAM_MODEL='bad name' load_once
	# Once the cache has lost its entries, the model is no longer there.
	"$GLEAM_BIN/gleam-cache" -q -d "$DIR" -s 0 prune
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"models: []}"* ]]
}

# A worker is forked while another client's cache channel, a thread of
# the server, holds that client's model load (its pins) and sends it an
# entry.  The new worker inherits the server's heap without that thread:
# under make asan its leak check at exit fails the test (sanitizer_check)
# unless all of it is still reachable there.
@test "a worker forked while another client's cache channel is busy inherits nothing it would leak" {
	serve_start -c "$CONF"
	GLEAM_MODEL=held load_once
	GLEAM_MODEL=held "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
	    "$CUDA_BIN/${KIND:-static}/cacheload" -m 8 -z 30 >"$BATS_TEST_TMPDIR/held.out" 2>&1 &
	BG_PID=$!
	local i
	for i in $(seq 1 600); do
		grep -q 'cacheload: ok' "$BATS_TEST_TMPDIR/held.out" && break
		kill -0 "$BG_PID" 2>/dev/null || break
		sleep 0.1
	done
	grep -q 'cacheload: ok' "$BATS_TEST_TMPDIR/held.out" || { cat "$BATS_TEST_TMPDIR/held.out"; false; }
	# Workers forked now, while the first holds its pins.
	load_once
	GLEAM_MODEL=other load_once -s 3
	kill -TERM "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=
}

# idents: a server key file with alice, bob and carol, and each one's own
# key file as gleam-key -n writes it.
idents() {
	local n
	: >"$BATS_TEST_TMPDIR/server.keys"
	chmod 600 "$BATS_TEST_TMPDIR/server.keys"
	for n in alice bob carol; do
		"$GLEAM_BIN/gleam-key" -i "$n" "$BATS_TEST_TMPDIR/$n.key"
		cat "$BATS_TEST_TMPDIR/$n.key" >>"$BATS_TEST_TMPDIR/server.keys"
	done
}

@test "identities: one's entries are neither served to another nor held for its names ahead" {
	idents
	serve_start -c "$CONF" -k "$BATS_TEST_TMPDIR/server.keys"
	GLEAM_KEY_FILE=$BATS_TEST_TMPDIR/alice.key load_once
	first=$SENT
	grep -q "identity alice, cache i+alice+" "$SERVE_LOG"
	# bob asks by the same names: every one misses, the bytes go again.
	GLEAM_KEY_FILE=$BATS_TEST_TMPDIR/bob.key load_once
	[ "$SENT" -gt $((first * 9 / 10)) ]
	grep -q 'cacheHtoD: [1-9]' "$STATS"
	# bob sends alice's names ahead (her names file): none is held.
	rm -rf "$BATS_TEST_TMPDIR/xdg.bob"
	cp -r "$XDG_CACHE_HOME" "$BATS_TEST_TMPDIR/xdg.bob"
	XDG_CACHE_HOME=$BATS_TEST_TMPDIR/xdg.bob GLEAM_KEY_FILE=$BATS_TEST_TMPDIR/bob.key load_once -s 9
	! grep -q 'cacheHeld: [1-9]' "$STATS"
	# alice's own entries still serve her.
	GLEAM_KEY_FILE=$BATS_TEST_TMPDIR/alice.key load_once
	small "$first" "$SENT"
	serve_stop
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" -o yaml du
	[ "$(grep -c '{tenant: i+alice+' <<<"$output")" -eq 1 ]
	[ "$(grep -c '{tenant: i+bob+' <<<"$output")" -eq 1 ]
	# -t with an identity's name: its entries alone.
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" -t alice -o yaml ls
	grep -q 'tenant: i+alice+' <<<"$output"
	! grep -q 'tenant: i+bob+' <<<"$output"
	run -2 "$GLEAM_BIN/gleam-cache" -d "$DIR" -t 'a/b' ls
}

@test "identities: cache_share makes a group's entries one tenant, the others stay apart" {
	idents
	conf "cache_share:
  lab: [alice, carol]
"
	serve_start -c "$CONF" -k "$BATS_TEST_TMPDIR/server.keys"
	GLEAM_KEY_FILE=$BATS_TEST_TMPDIR/alice.key load_once
	first=$SENT
	grep -q "identity alice, cache g+lab" "$SERVE_LOG"
	GLEAM_KEY_FILE=$BATS_TEST_TMPDIR/carol.key load_once
	small "$first" "$SENT"
	GLEAM_KEY_FILE=$BATS_TEST_TMPDIR/bob.key load_once
	[ "$SENT" -gt $((first * 9 / 10)) ]
	serve_stop
	# A member missing from the key file, or in two groups: refused.
	conf "cache_share:
  lab: [alice, dave]
"
	run -3 "$GLEAM_BIN/gleam-serve" -n -c "$CONF" -k "$BATS_TEST_TMPDIR/server.keys"
	[[ "$output" == *"cache_share: lab: no identity dave in key file"* ]]
	conf "cache_share:
  lab: [alice, \"b b\"]
"
	run -3 "$GLEAM_BIN/gleam-serve" -n -c "$CONF" -k "$BATS_TEST_TMPDIR/server.keys"
	[[ "$output" == *": cache_share: lab: 'b b': not an identity's name" ]]
	conf "cache_share:
  lab: [alice]
  ml: [bob, alice]
"
	run -3 "$GLEAM_BIN/gleam-serve" -n -c "$CONF" -k "$BATS_TEST_TMPDIR/server.keys"
	[[ "$output" == *"ml: alice is in group lab already"* ]]
}

@test "identities: a group names its entries by BLAKE2b-256, and no member stores bytes under a name they do not hash to" {
	CP=${GLEAM_CACHEPUT:-$BATS_TEST_DIRNAME/../../build/tests/cacheput}
	[ -x "$CP" ] || skip "build/tests/cacheput not built (make cuda-tests)"
	idents
	conf "cache_share:
  lab: [alice, carol]
"
	serve_start -c "$CONF" -k "$BATS_TEST_TMPDIR/server.keys"
	local k=$BATS_TEST_TMPDIR
	# WELCOME tells a member that its scope names strongly; bob's not.
	run -0 "$CP" -k "$k/alice.key" -s 5 have "$SERVE_ADDR"
	[ "${lines[0]}" = "names: strong" ] && [ "${lines[1]}" = "have: missing" ]
	run -0 "$CP" -k "$k/bob.key" -s 5 have "$SERVE_ADDR"
	[ "${lines[0]}" = "names: weak" ]
	# carol, a member, announces the name of seed 5's bytes with seed
	# 6's: refused, and the name is still nobody's.
	run -0 "$CP" -k "$k/carol.key" -s 6 -S 5 put "$SERVE_ADDR"
	[ "${lines[1]}" = "put: error 1" ]
	grep -q "client .*(cacheput): uploaded bytes do not match the name" "$SERVE_LOG"
	run -0 "$CP" -k "$k/alice.key" -s 5 have "$SERVE_ADDR"
	[ "${lines[1]}" = "have: missing" ]
	# Her honest upload is found by alice by its strong name, not by bob.
	run -0 "$CP" -k "$k/carol.key" -s 5 put "$SERVE_ADDR"
	[ "${lines[1]}" = "put: stored" ]
	run -0 "$CP" -k "$k/alice.key" -s 5 have "$SERVE_ADDR"
	[ "${lines[1]}" = "have: held" ]
	run -0 "$CP" -k "$k/bob.key" -s 5 have "$SERVE_ADDR"
	[ "${lines[1]}" = "have: missing" ]
	# A client older than strong names (XXH3-128 names) in the group's
	# scope: nothing held, nothing stored, and the log says why.
	run -0 "$CP" -k "$k/alice.key" -w -s 5 have "$SERVE_ADDR"
	[ "${lines[1]}" = "have: missing" ]
	grep -q "names cache entries by XXH3-128 in the shared scope g+lab" "$SERVE_LOG"
	run -0 "$CP" -k "$k/alice.key" -w -s 7 put "$SERVE_ADDR"
	[ "${lines[1]}" = "put: error 801" ]
	# In a private scope XXH3 names serve, rehashed on the way in too.
	run -0 "$CP" -k "$k/bob.key" -s 8 -S 9 put "$SERVE_ADDR"
	[ "${lines[1]}" = "put: error 1" ]
	run -0 "$CP" -k "$k/bob.key" -s 8 put "$SERVE_ADDR"
	[ "${lines[1]}" = "put: stored" ]
	run -0 "$CP" -k "$k/bob.key" -s 8 have "$SERVE_ADDR"
	[ "${lines[1]}" = "have: held" ]
	# The client library names strongly in the group: carol's load hits
	# what alice's stored.
	GLEAM_KEY_FILE=$k/alice.key load_once
	first=$SENT
	GLEAM_KEY_FILE=$k/carol.key load_once
	small "$first" "$SENT"
	serve_stop
	# On disk: 64 hex digits in the group, 32 in bob's; all sound.
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" -t g+lab -o yaml ls
	grep -Eq 'hash: [0-9a-f]{64}$' <<<"$output"
	! grep -Eq 'hash: [0-9a-f]{32}$' <<<"$output"
	h=$(sed -n 's/.*hash: \([0-9a-f]\{64\}\)$/\1/p' <<<"$output" | head -n 1)
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" -t bob -o yaml ls
	grep -Eq 'hash: [0-9a-f]{32}$' <<<"$output"
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" verify
	[[ "$output" == *": 0 corrupt, 0 removed" ]]
	run -0 "$GLEAM_BIN/gleam-cache" -d "$DIR" rm "$h"
	run -1 "$GLEAM_BIN/gleam-cache" -d "$DIR" rm "$h"
}

# probe_as WHO: the status as identity WHO's key file gets it.
probe_as() {
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml \
	    -k "$BATS_TEST_TMPDIR/$1.key" "$SERVE_ADDR"
}

@test "identities: a status shows each its own models and clients, not another's" {
	idents
	conf "cache_share:
  lab: [alice, carol]
"
	serve_start -c "$CONF" -k "$BATS_TEST_TMPDIR/server.keys"
	local k=$BATS_TEST_TMPDIR i
	GLEAM_KEY_FILE=$k/alice.key GLEAM_MODEL=alices-model load_once
	GLEAM_KEY_FILE=$k/bob.key GLEAM_MODEL=bobs-model load_once
	for i in $(seq 1 40); do
		probe_as alice
		[[ "$output" == *"models: [alices-model]}"* ]] && break
		sleep 0.05
	done
	[[ "$output" == *"models: [alices-model]}"* ]] || { echo "$output"; false; }
	# carol, in alice's group, sees the group's model; bob his own.
	probe_as carol
	[[ "$output" == *"models: [alices-model]}"* ]]
	probe_as bob
	[[ "$output" == *"models: [bobs-model]}"* ]] || { echo "$output"; false; }
	[[ "$output" != *alices-model* ]]
	# alice holds a CUDA client open, and probes with bulk transfers.
	GLEAM_KEY_FILE=$k/alice.key "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
	    python3 -c 'import ctypes, sys, time
c = ctypes.CDLL("libcuda.so.1"); d = ctypes.c_int(); x = ctypes.c_void_p()
if c.cuInit(0) or c.cuDeviceGet(ctypes.byref(d), 0) or c.cuCtxCreate_v2(ctypes.byref(x), 0, d): sys.exit(1)
print("up", flush=True); time.sleep(30)' >"$k/held.out" 2>&1 3>&- &
	BG_PID=$!
	for i in $(seq 1 100); do
		probe_as alice
		[[ "$output" == *"name: python3"* ]] && break
		sleep 0.1
	done
	[[ "$output" == *"name: python3"* ]] || { echo "$output"; cat "$k/held.out"; false; }
	[[ "$output" == *"address: 127.0.0.1:"*"name: python3"* ]]
	"$GLEAM_BIN/gleam-probe" -N 4 -t 1s -o yaml -k "$k/alice.key" \
	    "$SERVE_ADDR" >/dev/null 2>&1 3>&- &
	local probe=$!
	sleep 0.3
	# bob: alice's CUDA client counted with no address, name or bytes;
	# her probe not listed; his own probe whole.
	probe_as bob
	echo "$output"
	[[ "$output" != *python3* ]]
	[ "$(grep -c 'name: gleam-probe' <<<"$output")" -eq 1 ]
	grep -q '^    nclients: 2$' <<<"$output"
	grep -A4 -- '- address: null' <<<"$output" | grep -q 'bytes_in: 0'
	grep -q 'address: 127.0.0.1:' <<<"$output"
	# carol shares alice's entries, not her clients.
	probe_as carol
	[[ "$output" != *python3* ]]
	wait "$probe" || true
	kill "$BG_PID"; wait "$BG_PID" 2>/dev/null || true
	BG_PID=
	serve_stop
}
