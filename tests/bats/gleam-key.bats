#!/usr/bin/env bats
# gleam-key's interface: keys made, files written with care, files checked.

load test_helper

USAGE="usage: gleam-key [new] [-i name] [file]"

@test "-h prints usage on stdout and exits 0" {
	run -0 "$GLEAM_BIN/gleam-key" -h
	[ "${lines[0]}" = "$USAGE" ]
	[ "${lines[1]}" = "       gleam-key check file" ]
	[[ "$output" == *"  -i, --identity=name "* ]]
}

@test "bad flags and names are usage errors" {
	run -2 "$GLEAM_BIN/gleam-key" -x
	[[ "$output" == *"unknown option -x"* ]]
	run -2 "$GLEAM_BIN/gleam-key" -i "bad name"
	[[ "$output" == *"-i bad name: not a name"* ]]
	run -2 "$GLEAM_BIN/gleam-key" a b
	[[ "$output" == *"unexpected argument 'b'"* ]]
	run -2 "$GLEAM_BIN/gleam-key" check f -i x
	[[ "$output" == *"check takes no other flag"* ]]
	run -2 "$GLEAM_BIN/gleam-key" check
	[[ "$output" == *"check: which file?"* ]]
	run -2 "$GLEAM_BIN/gleam-key" check a b
	[[ "$output" == *"check: unexpected argument 'b'"* ]]
}

@test "the spellings of earlier releases work, with a warning" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-key" -n bob -o "$BATS_TEST_TMPDIR/k"
	[[ "$(cat "$BATS_TEST_TMPDIR/k")" == "bob "* ]]
	[ "${stderr_lines[0]}" = "gleam-key: -n is deprecated and will go; use -i or --identity" ]
	[ "${stderr_lines[1]}" = "gleam-key: -o is deprecated and will go; give the file as an operand: gleam-key $BATS_TEST_TMPDIR/k" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-key" -c "$BATS_TEST_TMPDIR/k"
	[ "$output" = "$BATS_TEST_TMPDIR/k: a key, for bob" ]
	[ "$stderr" = "gleam-key: -c is deprecated and will go; use gleam-key check $BATS_TEST_TMPDIR/k" ]
	run -0 "$GLEAM_BIN/gleam-key" new --identity=carol "$BATS_TEST_TMPDIR/c"
	[[ "$(cat "$BATS_TEST_TMPDIR/c")" == "carol "* ]]
}

@test "a key is 32 random bytes in base64, different each time" {
	run -0 "$GLEAM_BIN/gleam-key"
	local a=$output
	[ "${#a}" -eq 44 ]
	[ "$(printf '%s' "$a" | base64 -d | wc -c)" -eq 32 ]
	run -0 "$GLEAM_BIN/gleam-key"
	[ "$output" != "$a" ]
	run -0 "$GLEAM_BIN/gleam-key" -i alice@lab
	[[ "$output" == "alice@lab "* ]]
	[ "${#output}" -eq $((10 + 44)) ]
}

@test "a file is written with mode 600 and never overwritten" {
	run -0 "$GLEAM_BIN/gleam-key" "$BATS_TEST_TMPDIR/k"
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/k")" = 600 ]
	cp "$BATS_TEST_TMPDIR/k" "$BATS_TEST_TMPDIR/before"
	run -6 "$GLEAM_BIN/gleam-key" "$BATS_TEST_TMPDIR/k"
	[[ "$output" == *"k: File exists"* ]]
	cmp "$BATS_TEST_TMPDIR/k" "$BATS_TEST_TMPDIR/before"
	run -6 "$GLEAM_BIN/gleam-key" "$BATS_TEST_TMPDIR/no/such/dir"
}

@test "check reads a file as every program does" {
	"$GLEAM_BIN/gleam-key" "$BATS_TEST_TMPDIR/k"
	run -0 "$GLEAM_BIN/gleam-key" check "$BATS_TEST_TMPDIR/k"
	[ "$output" = "$BATS_TEST_TMPDIR/k: a key" ]
	"$GLEAM_BIN/gleam-key" -i bob "$BATS_TEST_TMPDIR/bob"
	run -0 "$GLEAM_BIN/gleam-key" check "$BATS_TEST_TMPDIR/bob"
	[ "$output" = "$BATS_TEST_TMPDIR/bob: a key, for bob" ]
	printf 'passphrase several unrelated words\n' >"$BATS_TEST_TMPDIR/p"
	chmod 600 "$BATS_TEST_TMPDIR/p"
	run -0 "$GLEAM_BIN/gleam-key" check "$BATS_TEST_TMPDIR/p"
	printf 'hunter2\n' >"$BATS_TEST_TMPDIR/weak"
	chmod 600 "$BATS_TEST_TMPDIR/weak"
	run -3 "$GLEAM_BIN/gleam-key" check "$BATS_TEST_TMPDIR/weak"
	[[ "$output" == *"weak:1: not a key"* ]]
	chmod 644 "$BATS_TEST_TMPDIR/k"
	run -3 "$GLEAM_BIN/gleam-key" check "$BATS_TEST_TMPDIR/k"
	[[ "$output" == *"readable by others (chmod 600 it)"* ]]
}

@test "check - checks a key on standard input, whose mode is not checked" {
	"$GLEAM_BIN/gleam-key" -i bob "$BATS_TEST_TMPDIR/bob"
	chmod 644 "$BATS_TEST_TMPDIR/bob"
	run -0 "$GLEAM_BIN/gleam-key" check - <"$BATS_TEST_TMPDIR/bob"
	[ "$output" = "stdin: a key, for bob" ]
	run -0 --separate-stderr bash -c '"$0/gleam-key" | "$0/gleam-key" check -' "$GLEAM_BIN"
	[ "$output" = "stdin: a key" ]
	run -3 --separate-stderr "$GLEAM_BIN/gleam-key" check - </dev/null
	[ "$stderr" = "gleam-key: key file stdin: no key in it (make one with gleam-key)" ]
	# A server's list of identities may be long, but not without end.
	head -c 300000 /dev/zero | tr '\0' a >"$BATS_TEST_TMPDIR/long"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-key" check - <"$BATS_TEST_TMPDIR/long"
	[ "$stderr" = "gleam-key: key file stdin: longer than 262144 bytes" ]
}

@test "a key it makes is accepted by a server and its clients" {
	"$GLEAM_BIN/gleam-key" "$BATS_TEST_TMPDIR/k"
	serve_start -k "$BATS_TEST_TMPDIR/k"
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/k" "$SERVE_ADDR"
	"$GLEAM_BIN/gleam-key" "$BATS_TEST_TMPDIR/other"
	run -5 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/other" "$SERVE_ADDR"
	serve_stop
}

@test "a server's key file lists identities; each client proves its own, an unknown one fails as a wrong key" {
	local n
	: >"$BATS_TEST_TMPDIR/keys"
	chmod 600 "$BATS_TEST_TMPDIR/keys"
	for n in alice bob; do
		"$GLEAM_BIN/gleam-key" -i "$n" "$BATS_TEST_TMPDIR/$n"
		cat "$BATS_TEST_TMPDIR/$n" >>"$BATS_TEST_TMPDIR/keys"
	done
	run -0 "$GLEAM_BIN/gleam-key" check "$BATS_TEST_TMPDIR/keys"
	[ "$output" = "$BATS_TEST_TMPDIR/keys: 2 identities: alice, bob" ]
	serve_start -k "$BATS_TEST_TMPDIR/keys" -v
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/alice" "$SERVE_ADDR"
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/bob" "$SERVE_ADDR"
	# mallory with a key of her own; alice's name with another key.
	"$GLEAM_BIN/gleam-key" -i mallory "$BATS_TEST_TMPDIR/mallory"
	run -5 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/mallory" "$SERVE_ADDR"
	local unknown=$output
	sed "s/^mallory /alice /" "$BATS_TEST_TMPDIR/mallory" >"$BATS_TEST_TMPDIR/fake"
	chmod 600 "$BATS_TEST_TMPDIR/fake"
	run -5 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/fake" "$SERVE_ADDR"
	# The same answer: the client cannot tell a name from a key.
	[ "$output" = "$unknown" ]
	[[ "$output" == *"wrong key"* ]]
	serve_stop
	# Only the server's log says which it was.
	grep -q "unknown identity mallory" "$SERVE_LOG"
	grep -q "wrong key for identity alice" "$SERVE_LOG"
	# A client's key file holds one identity.
	run -3 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -k "$BATS_TEST_TMPDIR/keys" 127.0.0.1:1
	[[ "$output" == *"keys:2: a second key (a client's key file holds its one identity"* ]]
	# Duplicates are refused, naming the lines.
	cat "$BATS_TEST_TMPDIR/alice" >>"$BATS_TEST_TMPDIR/keys"
	run -3 "$GLEAM_BIN/gleam-key" check "$BATS_TEST_TMPDIR/keys"
	[[ "$output" == *"keys:3: identity alice again (first on line 1)"* ]]
}
