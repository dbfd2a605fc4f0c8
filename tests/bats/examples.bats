#!/usr/bin/env bats
# examples/: the sample configurations read as they say, and the
# scheduler's set-up without a GPU runs end to end (examples/README).

load test_helper

EX=$BATS_TEST_DIRNAME/../../examples
MAN=$BATS_TEST_DIRNAME/../../man

teardown() {
	serve_kill
	sanitizer_check
}

@test "try-scheduler: two host-backend servers probed, the probe piped into gleam-sched, a program placed by the daemon, all stopped" {
	mkdir "$BATS_TEST_TMPDIR/t"
	TMPDIR=$BATS_TEST_TMPDIR/t run -0 --separate-stderr "$EX/try-scheduler"
	[[ "$output" == *"==> two servers on the host backend"* ]]
	# The plan for people: the chat where its weights are.
	[[ "$output" == *"chat   try     try-a "*"cached"* ]]
	[[ "$output" == *"2 of 2 tasks placed"* ]]
	# The plan as YAML, from the pipe.
	[[ "$output" == *"- task: chat
  client: try
  server: try-a"* ]]
	[[ "$output" == *"gleam-sched serve listens on 127.0.0.1:"* ]]
	[[ "$output" == *"daemon: placed chat of try on try-a"* ]]
	# gleam-run sent the program to the address try-a's status gave.
	a=$(sed -n 's/^try-a listens on //p' <<<"$output")
	b=$(sed -n 's/^try-b listens on //p' <<<"$output")
	[ -n "$a" ] && [ -n "$b" ]
	if command -v python3 >/dev/null; then
		[[ "$output" == *"cuda-hello: "*" on $a: 1 MiB there and back intact"* ]]
		[[ "$output" == *"cuda-hello: "*" on $b: 1 MiB there and back intact"* ]]
	fi
	[ "${lines[-1]}" = "done" ]
	# Nothing left: the scratch directory, and no server on its port.
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/t")" ]
	run -4 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -T 1s "$a"
	run -4 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -T 1s "$b"
}

@test "try-scheduler: a missing program is named, exit 127" {
	GLEAM_BIN=$BATS_TEST_TMPDIR run -127 --separate-stderr "$EX/try-scheduler"
	[ "$stderr" = "try-scheduler: $BATS_TEST_TMPDIR/gleam-serve: not found (set GLEAM_BIN)" ]
}

@test "gleam-serve.yaml: every key of gleam-serve.yaml(5), valid as it is and with every key set" {
	run -0 "$GLEAM_BIN/gleam-serve" -n -c "$EX/gleam-serve.yaml"
	[ "$output" = "configuration OK" ]
	# The keys the manual lists, each in the sample.
	keys=$(sed -n '/^\.Ss Keys/,/^\.Sh/s/^\.It Cm \([a-z_]*\) :.*/\1/p' \
	    "$MAN/gleam-serve.yaml.5")
	[ "$(echo "$keys" | wc -l)" -gt 20 ]
	for k in $keys; do
		grep -q "^#$k: " "$EX/gleam-serve.yaml" || {
			echo "$k: not in examples/gleam-serve.yaml" >&2
			return 1
		}
	done
	# And no key the manual does not list.
	for k in $(sed -n 's/^#\([a-z_]*\): .*/\1/p' "$EX/gleam-serve.yaml"); do
		echo "$keys" | grep -qx "$k"
	done
	# Every key uncommented (with a key file that exists) checks out.
	make_key "$BATS_TEST_TMPDIR/key"
	sed 's/^#\([a-z_]*:\)/\1/; s|/etc/gleam/key|'"$BATS_TEST_TMPDIR"'/key|' \
	    "$EX/gleam-serve.yaml" >"$BATS_TEST_TMPDIR/full.yaml"
	[ "$(grep -c '^[a-z_]*:' "$BATS_TEST_TMPDIR/full.yaml")" -eq "$(echo "$keys" | wc -l)" ]
	run -0 "$GLEAM_BIN/gleam-serve" -n -c "$BATS_TEST_TMPDIR/full.yaml"
	# From standard input too.
	run -0 "$GLEAM_BIN/gleam-serve" -n -c - <"$EX/gleam-serve.yaml"
}

@test "gleam-run.yaml: gleam-run reads its server and key from it" {
	make_key "$BATS_TEST_TMPDIR/key"
	serve_start -k "$BATS_TEST_TMPDIR/key"
	sed "s/^server: .*/server: $SERVE_ADDR/; s|^key_file: .*|key_file: $BATS_TEST_TMPDIR/key|" \
	    "$EX/gleam-run.yaml" >"$BATS_TEST_TMPDIR/run.yaml"
	GLEAM_RUN_CONFIG=$BATS_TEST_TMPDIR/run.yaml run -0 --separate-stderr \
	    "$GLEAM_BIN/gleam-run" -- sh -c 'echo "$GLEAM_SERVER $GLEAM_KEY_FILE"'
	[ "$output" = "$SERVE_ADDR $BATS_TEST_TMPDIR/key" ]
	# As shipped, it names /etc/gleam/key, which this machine lacks.
	if [ ! -e /etc/gleam/key ]; then
		GLEAM_RUN_CONFIG=$EX/gleam-run.yaml run -3 --separate-stderr \
		    "$GLEAM_BIN/gleam-run" -- true
		[ "$stderr" = "gleam-run: key file /etc/gleam/key: No such file or directory" ]
	fi
	serve_stop
}
