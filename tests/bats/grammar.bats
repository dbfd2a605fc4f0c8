#!/usr/bin/env bats
# The one command-line grammar across the toolkit (gleam(7), COMMAND
# LINE): every program's -h lists each option with its long name, -V
# prints the version written in lib/common/util.h, misuse is one line and
# the usage, and the letters of the common table have the same long name
# in every program.  Each program's own bats file tests its options; this
# one compares the programs with one another.

load test_helper

# Each program, and each mode that has options of its own.
HELPS=("gleam-serve" "gleam-probe" "gleam-link" "gleam-run" "gleam-sched"
    "gleam-cache" "gleam-reduce" "gleam-reduce bench" "gleam-key")

# The common letters and their long names (gleam(7), COMMAND LINE).
COMMON="h:help V:version v:verbose q:quiet c:config k:key l:listen o:format
D:foreground P:pid-file n:dry-run T:timeout A:allow-any N:count"

# converted PROG [MODE]: whether the program reads its options through
# lib/common/cli yet.  gleam-probe, gleam-run, gleam-cache and gleam-key
# are converted on another branch; until it is merged their -h has no
# "--help" and they are skipped here (never in their own bats files).
converted() {
	"$GLEAM_BIN/$1" ${2:+"$2"} -h 2>/dev/null | grep -q -- '--help'
}

# options PROG [MODE]: the option lines of -h, one per option (a help
# that -h wraps onto the next line joined to its option), up to the
# deprecated ones.
options() {
	"$GLEAM_BIN/$1" ${2:+"$2"} -h | sed '/^Deprecated/,$d' | awk '
	    /^  +-/ { if (o != "") print o; o = $0; next }
	    /^      +[^ -]/ && o != "" { sub(/^ +/, "  "); o = o $0; next }
	    { if (o != "") print o; o = "" }
	    END { if (o != "") print o }'
}

@test "-h: the usage on stdout, then every option with its long name; exit 0" {
	local h n=0
	for h in "${HELPS[@]}"; do
		# shellcheck disable=SC2086
		converted $h || { echo "# $h: not converted yet" >&3; continue; }
		# shellcheck disable=SC2086
		run -0 --separate-stderr "$GLEAM_BIN/${h%% *}" ${h#"${h%% *}"} -h
		[ -z "$stderr" ]
		[[ "${lines[0]}" == "usage: ${h%% *} "* ]]
		grep -qE '^  -h, --help +print this help and exit$' <<<"$output"
		grep -qE '^  -V, --version +print the version and exit$' <<<"$output"
		# No option without a long name, none without its help.
		# shellcheck disable=SC2086
		if options $h | grep -vE '^  (-[A-Za-z0-9], |    )--[a-z0-9-]+(=[^ ]+)?( |$)'; then
			echo "$h: an option above has no long name"
			false
		fi
		# shellcheck disable=SC2086
		if options $h | grep -E '^  [^ ]+( [^ ]+)?$'; then
			echo "$h: an option above has no help"
			false
		fi
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "-V and --version: the program's name and the version of lib/common/util.h" {
	local p v
	v=$(gleam_version)
	[ -n "$v" ]
	for p in gleam-serve gleam-probe gleam-link gleam-run gleam-sched \
	    gleam-cache gleam-reduce gleam-key; do
		converted "$p" || continue
		run -0 --separate-stderr "$GLEAM_BIN/$p" -V
		[ "$output" = "$p $v" ]
		[ -z "$stderr" ]
		run -0 --separate-stderr "$GLEAM_BIN/$p" --version
		[ "$output" = "$p $v" ]
	done
	# The pkg-config files take it from the same place.
	grep -q '^Version: @VERSION@$' "$BATS_TEST_DIRNAME/../../lib/codec/gleam-hcodec.pc.in"
	grep -q '^Version: @VERSION@$' "$BATS_TEST_DIRNAME/../../lib/codec/gleam-hreduce.pc.in"
}

@test "an unknown option: one line naming it, then the usage, on stderr; exit 2" {
	local h
	for h in "${HELPS[@]}"; do
		# shellcheck disable=SC2086
		converted $h || continue
		# shellcheck disable=SC2086
		run -2 --separate-stderr "$GLEAM_BIN/${h%% *}" ${h#"${h%% *}"} \
		    --no-such-option
		[ -z "$output" ]
		[ "${stderr_lines[0]}" = "${h%% *}: unknown option --no-such-option" ]
		[[ "${stderr_lines[1]}" == "usage: ${h%% *} "* ]]
		# The rest is the usage's other lines, nothing else.
		local usage
		# shellcheck disable=SC2086
		usage=$("$GLEAM_BIN/${h%% *}" ${h#"${h%% *}"} -h | sed '/^$/,$d')
		[ "$(printf '%s\n' "${stderr_lines[@]:1}")" = "$usage" ]
	done
}

@test "the common letters have the same long name in every program" {
	local h pair letter name line got
	for h in "${HELPS[@]}"; do
		# shellcheck disable=SC2086
		converted $h || continue
		for pair in $COMMON; do
			letter=${pair%%:*} name=${pair#*:}
			# The letter, if the program has it, has the common name.
			# shellcheck disable=SC2086
			line=$(options $h | grep -E "^  -$letter, " || true)
			if [ -n "$line" ]; then
				got=$(sed -E 's/^  -., --([a-z0-9-]+).*/\1/' <<<"$line")
				[ "$got" = "$name" ] ||
				    { echo "$h: -$letter is --$got, not --$name"; false; }
			fi
			# The name, if the program has it, has the common letter.
			# shellcheck disable=SC2086
			line=$(options $h | grep -E -- "--$name(=| |\$)" || true)
			if [ -n "$line" ]; then
				[[ "$line" == "  -$letter, --$name"* ]] ||
				    { echo "$h: --$name is not -$letter: $line"; false; }
			fi
		done
	done
}

@test "a deprecated letter is never one of the common letters with its meaning taken" {
	# A deprecated alias may sit on a common letter the program has no
	# use for (gleam-link's -q SIZE), never on one it uses for the
	# common concept.
	local h old
	for h in "${HELPS[@]}"; do
		# shellcheck disable=SC2086
		converted $h || continue
		# shellcheck disable=SC2086
		for old in $("$GLEAM_BIN/${h%% *}" ${h#"${h%% *}"} -h |
		    sed -n '/^Deprecated/,/^$/s/^  -\(.\).*/\1/p'); do
			# shellcheck disable=SC2086
			if options $h | grep -qE "^  -$old, "; then
				echo "$h: -$old is both deprecated and in use"
				false
			fi
		done
	done
}
