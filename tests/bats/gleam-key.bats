#!/usr/bin/env bats
# gleam-key's interface: keys made, files written with care, files checked.

load test_helper

USAGE="usage: gleam-key [-n name] [-o file]"

@test "-h prints usage on stdout and exits 0" {
	run -0 "$GLEAM_BIN/gleam-key" -h
	[ "${lines[0]}" = "$USAGE" ]
	[ "${lines[1]}" = "       gleam-key -c file" ]
}

@test "bad flags and names are usage errors" {
	run -2 "$GLEAM_BIN/gleam-key" -x
	[[ "$output" == *"-x: unknown option"* ]]
	run -2 "$GLEAM_BIN/gleam-key" -n "bad name"
	[[ "$output" == *"-n bad name: not a name"* ]]
	run -2 "$GLEAM_BIN/gleam-key" extra
	[[ "$output" == *"unexpected argument: extra"* ]]
	run -2 "$GLEAM_BIN/gleam-key" -c f -n x
	[[ "$output" == *"-c takes no other flag"* ]]
}

@test "a key is 32 random bytes in base64, different each time" {
	run -0 "$GLEAM_BIN/gleam-key"
	local a=$output
	[ "${#a}" -eq 44 ]
	[ "$(printf '%s' "$a" | base64 -d | wc -c)" -eq 32 ]
	run -0 "$GLEAM_BIN/gleam-key"
	[ "$output" != "$a" ]
	run -0 "$GLEAM_BIN/gleam-key" -n alice@lab
	[[ "$output" == "alice@lab "* ]]
	[ "${#output}" -eq $((10 + 44)) ]
}

@test "-o writes mode 600 and never overwrites" {
	run -0 "$GLEAM_BIN/gleam-key" -o "$BATS_TEST_TMPDIR/k"
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/k")" = 600 ]
	cp "$BATS_TEST_TMPDIR/k" "$BATS_TEST_TMPDIR/before"
	run -6 "$GLEAM_BIN/gleam-key" -o "$BATS_TEST_TMPDIR/k"
	[[ "$output" == *"k: File exists"* ]]
	cmp "$BATS_TEST_TMPDIR/k" "$BATS_TEST_TMPDIR/before"
	run -6 "$GLEAM_BIN/gleam-key" -o "$BATS_TEST_TMPDIR/no/such/dir"
}

@test "-c reads a file as every program does" {
	"$GLEAM_BIN/gleam-key" -o "$BATS_TEST_TMPDIR/k"
	run -0 "$GLEAM_BIN/gleam-key" -c "$BATS_TEST_TMPDIR/k"
	[ "$output" = "$BATS_TEST_TMPDIR/k: a key" ]
	"$GLEAM_BIN/gleam-key" -n bob -o "$BATS_TEST_TMPDIR/bob"
	run -0 "$GLEAM_BIN/gleam-key" -c "$BATS_TEST_TMPDIR/bob"
	[ "$output" = "$BATS_TEST_TMPDIR/bob: a key, for bob" ]
	printf 'passphrase several unrelated words\n' >"$BATS_TEST_TMPDIR/p"
	chmod 600 "$BATS_TEST_TMPDIR/p"
	run -0 "$GLEAM_BIN/gleam-key" -c "$BATS_TEST_TMPDIR/p"
	printf 'hunter2\n' >"$BATS_TEST_TMPDIR/weak"
	chmod 600 "$BATS_TEST_TMPDIR/weak"
	run -3 "$GLEAM_BIN/gleam-key" -c "$BATS_TEST_TMPDIR/weak"
	[[ "$output" == *"weak:1: not a key"* ]]
	chmod 644 "$BATS_TEST_TMPDIR/k"
	run -3 "$GLEAM_BIN/gleam-key" -c "$BATS_TEST_TMPDIR/k"
	[[ "$output" == *"readable by others (chmod 600 it)"* ]]
}

@test "-c - checks a key on standard input, whose mode is not checked" {
	"$GLEAM_BIN/gleam-key" -n bob -o "$BATS_TEST_TMPDIR/bob"
	chmod 644 "$BATS_TEST_TMPDIR/bob"
	run -0 "$GLEAM_BIN/gleam-key" -c - <"$BATS_TEST_TMPDIR/bob"
	[ "$output" = "stdin: a key, for bob" ]
	run -0 --separate-stderr bash -c '"$0/gleam-key" | "$0/gleam-key" -c -' "$GLEAM_BIN"
	[ "$output" = "stdin: a key" ]
	run -3 --separate-stderr "$GLEAM_BIN/gleam-key" -c - </dev/null
	[ "$stderr" = "gleam-key: key file stdin: no key in it (make one with gleam-key)" ]
	head -c 5000 /dev/zero | tr '\0' a >"$BATS_TEST_TMPDIR/long"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-key" -c - <"$BATS_TEST_TMPDIR/long"
	[ "$stderr" = "gleam-key: key file stdin: longer than 4096 bytes" ]
}

@test "a key it makes is accepted by a server and its clients" {
	"$GLEAM_BIN/gleam-key" -o "$BATS_TEST_TMPDIR/k"
	serve_start -k "$BATS_TEST_TMPDIR/k"
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -c 1 -k "$BATS_TEST_TMPDIR/k" "$SERVE_ADDR"
	"$GLEAM_BIN/gleam-key" -o "$BATS_TEST_TMPDIR/other"
	run -5 "$GLEAM_BIN/gleam-probe" -t 0 -c 1 -k "$BATS_TEST_TMPDIR/other" "$SERVE_ADDR"
	serve_stop
}
