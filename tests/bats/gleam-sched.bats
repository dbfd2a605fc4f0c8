#!/usr/bin/env bats
# gleam-sched's interface: flags, the plan for the example inputs
# (examples/; the plans expected are kept in sched/), and every kind of
# bad input.

load test_helper

USAGE1="usage: gleam-sched [plan] [-x] [-o format] -L links.yaml -s servers.yaml -t tasks.yaml"
USAGE2="       gleam-sched serve [-ADv] [-i seconds] [-k keyfile] [-l address:port] [-P pidfile] [-R seconds] -L links.yaml -s servers.yaml [-t tasks.yaml]"
USAGE3="       gleam-sched migrate [-k keyfile] server session|address target"
USAGE="$USAGE1
$USAGE2
$USAGE3"
# The inputs are the examples (examples/README); the plans expected of
# them are kept here.
EX=$BATS_TEST_DIRNAME/../../examples
SCHED=$BATS_TEST_DIRNAME/sched

# sched [ARGS...]: gleam-sched on the fixed inputs.
sched() {
	"$GLEAM_BIN/gleam-sched" "$@" -L "$EX/links.yaml" \
	    -s "$EX/servers.yaml" -t "$EX/tasks.yaml"
}

# with FILE TEXT: writes TEXT to FILE in the test's directory.
with() {
	printf '%s\n' "$2" >"$BATS_TEST_TMPDIR/$1"
}

# The fixed links and servers with other tasks: prints their path.
tasks() {
	with tasks.yaml "$1"
	echo "$BATS_TEST_TMPDIR/tasks.yaml"
}

A_TASK='tasks:
- name: t
  client: desk1
  model: m
  model_size: 1g
  requests: 10
  rate: 1
  gpu_time: 10ms
  input: 1k
  output: 1k'

A_STATUS='- host: gpu9
  protocol: 2
  backend: cuda
  max_clients: 64
  gpus:
  - {index: 0, name: G, memory_total: 8589934592, memory_free: 8589934592, utilization: 0}
  clients: []'

@test "-h prints usage and every option with its long name on stdout, exits 0" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -h
	[ "$(sed '/^$/,$d' <<<"$output")" = "$USAGE" ]
	for o in "-A, --allow-any" "-D, --foreground" "-i, --interval=seconds" \
	    "-k, --key=keyfile" "-l, --listen=address:port" \
	    "-L, --links=links.yaml" "-o, --format=format" \
	    "-P, --pid-file=pidfile" "-s, --servers=servers.yaml" \
	    "-t, --tasks=tasks.yaml" "-v, --verbose" "-x, --explain" \
	    "-h, --help" "-V, --version" \
	    "-d   use gleam-sched serve (-l the address, -L the links)"; do
		[[ "$output" == *"  $o"* ]] || { echo "no $o"; false; }
	done
	[ -z "$stderr" ]
}

@test "-V and --version print the version of lib/common/util.h" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -V
	[ "$output" = "gleam-sched $(gleam_version)" ]
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" serve --version
	[ "$output" = "gleam-sched $(gleam_version)" ]
}

@test "the mode word: plan by default, before or after the options" {
	run -0 --separate-stderr sched -o yaml
	cmp <(echo "$output") "$SCHED/plan.yaml"
	run -0 --separate-stderr sched plan -o yaml
	cmp <(echo "$output") "$SCHED/plan.yaml"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" plan \
	    --links="$EX/links.yaml" --servers "$EX/servers.yaml" \
	    --tasks="$EX/tasks.yaml" --format yaml
	cmp <(echo "$output") "$SCHED/plan.yaml"
	[ -z "$stderr" ]
	run -2 --separate-stderr sched plan serve
	[ "${stderr_lines[0]}" = "gleam-sched: unexpected argument 'serve'" ]
	run -2 --separate-stderr sched bogus
	[ "${stderr_lines[0]}" = "gleam-sched: unexpected argument 'bogus'" ]
}

@test "plan: the deprecated -l links.yaml works, with a warning" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -l "$EX/links.yaml" \
	    -s "$EX/servers.yaml" -t "$EX/tasks.yaml"
	cmp <(echo "$output") "$SCHED/plan.yaml"
	[ "$stderr" = "gleam-sched: -l links.yaml is deprecated and will go; use -L (--links)" ]
	run -2 --separate-stderr sched -l "$EX/links.yaml"
	[ "${stderr_lines[0]}" = "gleam-sched: -l and -L: the links file is -L" ]
}

@test "each input file is required" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched"
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "gleam-sched: no links file given (-L)" ]
	[ "${stderr_lines[1]}" = "$USAGE1" ]
	[ "${stderr_lines[2]}" = "$USAGE2" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -L l.yaml
	[ "${stderr_lines[0]}" = "gleam-sched: no servers file given (-s)" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -L l.yaml -s s.yaml
	[ "${stderr_lines[0]}" = "gleam-sched: no tasks file given (-t)" ]
}

@test "bad flags and arguments are usage errors" {
	run -2 --separate-stderr sched -o json
	[ "${stderr_lines[0]}" = "gleam-sched: -o: json: expected table or yaml" ]
	[ "${stderr_lines[1]}" = "$USAGE1" ]
	[ "${stderr_lines[2]}" = "$USAGE2" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -L a -s b -t c extra
	[ "${stderr_lines[0]}" = "gleam-sched: unexpected argument 'extra'" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -q
	[ "${stderr_lines[0]}" = "gleam-sched: unknown option -q" ]
	[ "${stderr_lines[1]}" = "$USAGE1" ]
	[ "${stderr_lines[2]}" = "$USAGE2" ]
}

@test "the plan for the fixed inputs is the one kept beside the tests" {
	run -0 --separate-stderr sched
	[ -z "$stderr" ]
	diff -u "$SCHED/plan.yaml" <(printf '%s\n' "$output")
	run -0 --separate-stderr sched -o yaml
	diff -u "$SCHED/plan.yaml" <(printf '%s\n' "$output")
}

@test "-x explains each decision in the plan" {
	run -0 --separate-stderr sched -x
	[ -z "$stderr" ]
	diff -u "$SCHED/plan-x.yaml" <(printf '%s\n' "$output")
	# A server the client cannot reach is excluded with the probe's error.
	[[ "$output" == *"excluded:"*"- {server: gpu3, reason: 'no link from laptop2: Connection refused'}"* ]]
}

@test "-o table is for people, with the explanations" {
	run -0 --separate-stderr sched -x -o table
	[ -z "$stderr" ]
	diff -u "$SCHED/plan.txt" <(printf '%s\n' "$output")
}

@test "the plan has the documented keys" {
	python3 -c 'import yaml' 2>/dev/null || skip "no python3 yaml"
	run -0 --separate-stderr sched -x
	printf '%s\n' "$output" | python3 -c '
import sys, yaml
d = yaml.safe_load(sys.stdin)
assert sorted(d) == ["plan", "servers", "summary", "unplaced"], sorted(d)
for t in d["plan"]:
    assert sorted(t) == sorted(["task", "client", "server", "cached",
        "latency_ms", "transfer_ms", "queue_ms", "compute_ms", "rtt_ms",
        "load_wait_ms", "slowdown_ms", "load_s", "completion_s",
        "explain"]), sorted(t)
    parts = sum(t[k] for k in ("transfer_ms", "queue_ms", "compute_ms",
        "rtt_ms", "load_wait_ms", "slowdown_ms"))
    assert abs(parts - t["latency_ms"]) < 0.01, t
    assert sorted(t["explain"]) == ["excluded", "margin_ms", "reason",
        "runner_up"]
for s in d["servers"]:
    assert sorted(s) == sorted(["server", "tasks", "clients", "gpu_load",
        "up_load", "down_load", "memory", "memory_free"]), sorted(s)
assert d["summary"] == {"tasks": 4, "placed": 4, "unplaced": 0,
    "mean_latency_ms": d["summary"]["mean_latency_ms"]}
'
}

@test "cached weights draw their task: the chat goes where its model is" {
	run -0 --separate-stderr sched
	[[ "$output" == *"- task: chat"*"  server: gpu1"*"  cached: true"*"- task: vision"* ]]
}

@test "a server's status can name its resident models (cache: models)" {
	with servers.yaml "$(sed 's/^  models: \[llama3-8b-q4\]$/  cache: {entries: 9, ram_bytes: 1, disk_bytes: 0, gpu_bytes: 0, hits: 0, misses: 0, models: [llama3-8b-q4]}/' "$EX/servers.yaml")"
	! grep -q '^  models:' "$BATS_TEST_TMPDIR/servers.yaml"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$EX/tasks.yaml"
	[[ "$output" == *"- task: chat"*"  server: gpu1"*"  cached: true"*"- task: vision"* ]]
	with servers.yaml "$(sed 's/^  models: \[llama3-8b-q4\]$/  cache: {entries: 9, ram_bytes: 1, disk_bytes: 0, gpu_bytes: 0, hits: 0, misses: 0, models: 7}/' "$EX/servers.yaml")"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$EX/tasks.yaml"
	[[ "$stderr" == *"models: expected a sequence of at most 32 names"* ]]
}

@test "a task no GPU can hold is unplaced with the reason, exit 1" {
	t=$(tasks "$(printf '%s\n' "$A_TASK" | sed 's/model_size: 1g/model_size: 240g/')")
	run -1 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s "$EX/servers.yaml" -t "$t"
	[ -z "$stderr" ]
	[[ "$output" == "plan: []"* ]]
	[[ "$output" == *"unplaced:
- task: t
  client: desk1
  reason: needs 240.0 GiB on one GPU; the most free on a server desk1 reaches is 74.0 GiB (gpu1)"* ]]
	[[ "$output" == *"  placed: 0
  unplaced: 1"* ]]
}

@test "a client with no link to any server is unplaced" {
	with links.yaml "$(cat "$EX/links.yaml")
laptop3:
  probes:
  - {server: gpu1, ok: false, error: Connection timed out}"
	t=$(tasks "$(printf '%s\n' "$A_TASK" | sed 's/client: desk1/client: laptop3/')")
	run -1 --separate-stderr "$GLEAM_BIN/gleam-sched" -x \
	    -L "$BATS_TEST_TMPDIR/links.yaml" -s "$EX/servers.yaml" -t "$t"
	[[ "$output" == *"  reason: no link from laptop3 to any server"* ]]
	run -1 --separate-stderr "$GLEAM_BIN/gleam-sched" -o table \
	    -L "$BATS_TEST_TMPDIR/links.yaml" -s "$EX/servers.yaml" -t "$t"
	[[ "${lines[1]}" == "t     laptop3  -       unplaced: no link from laptop3 to any server" ]]
}

@test "tasks beyond a server's memory are unplaced for want of room" {
	t=$(tasks "$(printf '%s\n' "$A_TASK" | sed 's/client: desk1/client: laptop2/; s/model_size: 1g/model_size: 20g/')
$(printf '%s\n' "$A_TASK" | sed '1d; s/name: t/name: u/; s/client: desk1/client: laptop2/; s/model: m/model: n/; s/model_size: 1g/model_size: 70g/')
$(printf '%s\n' "$A_TASK" | sed '1d; s/name: t/name: v/; s/client: desk1/client: laptop2/; s/model: m/model: o/; s/model_size: 1g/model_size: 20g/')")
	run -1 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s "$EX/servers.yaml" -t "$t"
	[[ "$output" == *"unplaced:
- task: u
  client: laptop2
  reason: 'no room: the 1 server that could hold it (70.0 GiB) is full with the rest of the plan'"* ]]
}

@test "an empty task list is an empty plan" {
	t=$(tasks 'tasks: []')
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s "$EX/servers.yaml" -t "$t"
	[ "${lines[0]}" = "plan: []" ]
	[ "${lines[1]}" = "unplaced: []" ]
}

@test "a medium shared by a client and a server slows its transfers" {
	before=$(sched | sed -n '/task: speech/,/rtt_ms/p')
	with servers.yaml "$(sed 's/^  speed: 2$/  speed: 2\n  medium: office/' "$EX/servers.yaml")"
	with links.yaml "$(sed 's/^laptop2:$/laptop2:\n  medium: office/; s/^laptop1:$/laptop1:\n  medium: office/' "$EX/links.yaml")"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml" \
	    -t "$EX/tasks.yaml"
	[ -z "$stderr" ]
	after=$(printf '%s\n' "$output" | sed -n '/task: speech/,/rtt_ms/p')
	[ "$before" != "$after" ]
}

@test "queued work on a server counts against it" {
	[[ "$(sched)" == *"- server: gpu1
  tasks: 3"* ]]
	with servers.yaml "$(sed 's/^  models: \[llama3-8b-q4\]$/  models: [llama3-8b-q4]\n  queued: 20s/' "$EX/servers.yaml")"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$EX/tasks.yaml"
	# Tasks leave it, and the chat that stays (its weights are there)
	# waits behind the backlog.
	n=$(printf '%s\n' "$output" | sed -n '/^- server: gpu1$/{n;s/^  tasks: //p;}')
	[ "$n" -lt 3 ]
	chat=$(printf '%s\n' "$output" | sed -n '/task: chat/,/queue_ms/p' |
	    sed -n 's/.*queue_ms: //p')
	[ "${chat%%.*}" -gt 500 ]
}

@test "re-planning: a running task stays, a movable one moves if it gains" {
	# vision runs on gpu3 already: it stays, and its weights are there.
	tf=$(tasks "$(sed 's/^- name: vision$/- name: vision\n  server: gpu3/' "$EX/tasks.yaml")")
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -x -L "$EX/links.yaml" \
	    -s "$EX/servers.yaml" -t "$tf"
	v=$(printf '%s\n' "$output" | sed -n '/^- task: vision$/,/^- task/p')
	[[ "$v" == *"  server: gpu3
  from: gpu3
  cached: true"* ]]
	[[ "$v" == *"reason: 'running there: not moved'"* ]]
	# Movable, it stays where its weights are while that is best ...
	tf=$(tasks "$(sed 's/^- name: vision$/- name: vision\n  server: gpu3\n  movable: true/' "$EX/tasks.yaml")")
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -o table \
	    -L "$EX/links.yaml" -s "$EX/servers.yaml" -t "$tf"
	[[ "$output" == *"vision  desk1    gpu3 "* ]]
	[[ "$output" != *"moved from"* ]]
	# ... and moves, saying whence, once a backlog there makes it worse.
	with servers.yaml "$(sed 's/^- host: gpu3$/- host: gpu3\n  queued: 300s/' "$EX/servers.yaml")"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -o table \
	    -L "$EX/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$tf"
	[[ "$output" == *"vision  desk1    gpu1 "*"
  moved from gpu3"* ]]
}

@test "a running task's server must be known and reachable" {
	BAD=$BATS_TEST_TMPDIR/t.yaml
	printf '%s\n  server: gpu9\n' "$A_TASK" >"$BAD"
	bad tasks "$BAD:11: server: gpu9: unknown server"
	sed 's/^- name: speech$/- name: speech\n  server: gpu3/' "$EX/tasks.yaml" >"$BAD"
	bad tasks "$BAD:28: server: gpu3: laptop2 has no link to it"
	printf '%s\n  movable: true\n' "$A_TASK" >"$BAD"
	bad tasks "$BAD:11: movable: only with server"
}

# ---- bad input: exit 3, one line naming file, line and key -------------

# bad FILE-ROLE EXPECTED: runs with the file given in $BAD as links,
# servers or tasks, the others fixed, and checks the message.
bad() {
	local l=$EX/links.yaml s=$EX/servers.yaml t=$EX/tasks.yaml
	case $1 in
	links) l=$BAD ;;
	servers) s=$BAD ;;
	tasks) t=$BAD ;;
	esac
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$l" -s "$s" -t "$t"
	[ -z "$output" ]
	[ "$stderr" = "gleam-sched: $2" ]
}

@test "a missing file names it" {
	BAD=$BATS_TEST_TMPDIR/none.yaml
	bad tasks "$BAD: No such file or directory"
}

@test "invalid YAML names the file and line" {
	BAD=$BATS_TEST_TMPDIR/t.yaml
	printf 'tasks:\n- name: [unclosed\n' >"$BAD"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s "$EX/servers.yaml" -t "$BAD"
	[[ "$stderr" == "gleam-sched: $BAD:3: "* ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
}

@test "an empty document or a missing top key is named" {
	BAD=$BATS_TEST_TMPDIR/t.yaml
	: >"$BAD"
	bad tasks "$BAD: empty document"
	printf 'task: []\n' >"$BAD"
	bad tasks "$BAD:1: document: unknown key 'task'"
	printf '{}\n' >"$BAD"
	bad tasks "$BAD:1: tasks: missing"
	printf -- '- a\n' >"$BAD"
	bad servers "$BAD:1: document: expected a mapping"
}

@test "an empty fleet is an error" {
	BAD=$BATS_TEST_TMPDIR/s.yaml
	printf 'servers: []\n' >"$BAD"
	bad servers "$BAD:1: servers: empty: no server to place tasks on"
}

@test "a task's missing and unknown keys are named" {
	BAD=$BATS_TEST_TMPDIR/t.yaml
	printf '%s\n' "$A_TASK" | sed '/rate:/d' >"$BAD"
	bad tasks "$BAD:2: rate: missing"
	printf '%s\n  gpu_tme: 5ms\n' "$A_TASK" >"$BAD"
	bad tasks "$BAD:11: tasks: unknown key 'gpu_tme'"
	printf '%s\n' "$A_TASK" | sed '/model_size:/d' >"$BAD"
	bad tasks "$BAD:2: model_size: missing (model is given)"
	printf '%s\n' "$A_TASK" | sed '/  model:/d' >"$BAD"
	bad tasks "$BAD:2: model: missing (model_size is given)"
}

@test "a task's bad values are named" {
	BAD=$BATS_TEST_TMPDIR/t.yaml
	printf '%s\n' "$A_TASK" | sed 's/gpu_time: 10ms/gpu_time: 0/' >"$BAD"
	bad tasks "$BAD:8: gpu_time: '0': must be more than 0"
	printf '%s\n' "$A_TASK" | sed 's/requests: 10/requests: 0/' >"$BAD"
	bad tasks "$BAD:6: requests: '0': too small (allowed 1 to 1000000000)"
	printf '%s\n' "$A_TASK" | sed 's/rate: 1/rate: fast/' >"$BAD"
	bad tasks "$BAD:7: rate: 'fast': not a number"
	printf '%s\n' "$A_TASK" | sed 's/model_size: 1g/model_size: 4.7g/' >"$BAD"
	bad tasks "$BAD:5: model_size: '4.7g': not a whole number of bytes"
	printf '%s\n  window: 0\n' "$A_TASK" >"$BAD"
	bad tasks "$BAD:11: window: '0': too small (allowed 1 to 1000000)"
}

@test "a task of an unknown client, or named twice, is an error" {
	BAD=$BATS_TEST_TMPDIR/t.yaml
	printf '%s\n' "$A_TASK" | sed 's/client: desk1/client: laptop9/' >"$BAD"
	bad tasks "$BAD:3: client: laptop9: unknown client (not in $EX/links.yaml)"
	{ printf '%s\n' "$A_TASK"; printf '%s\n' "$A_TASK" | sed 1d; } >"$BAD"
	bad tasks "$BAD:11: name: t: given twice (also line 2)"
}

@test "a link to an unknown server is an error" {
	BAD=$BATS_TEST_TMPDIR/l.yaml
	printf 'desk1:\n  probes:\n  - {server: gpu9, ok: true, name: gpu9, rtt_ms: {median: 0.2}, up_mbit_s: 900, down_mbit_s: 900}\n' >"$BAD"
	bad links "$BAD:3: name: gpu9: unknown server (not in $EX/servers.yaml)"
	printf 'desk1:\n  probes:\n  - {server: 10.0.0.9, ok: true, rtt_ms: {median: 0.2}, up_mbit_s: 900, down_mbit_s: 900}\n' >"$BAD"
	bad links "$BAD:3: server: 10.0.0.9: unknown server (not in $EX/servers.yaml)"
}

@test "a failed probe of an unknown server is no error" {
	with links.yaml "$(cat "$EX/links.yaml")
  - {server: gpu9, ok: false, error: No route to host}"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$BATS_TEST_TMPDIR/links.yaml" -s "$EX/servers.yaml" \
	    -t "$EX/tasks.yaml"
	diff -u "$SCHED/plan.yaml" <(printf '%s\n' "$output")
}

# bare_probe [CLIENT-LINE]: desk1's links from the fixture as one
# gleam-probe document, with CLIENT-LINE on top; prints its path.
bare_probe() {
	{
		[ -z "${1:-}" ] || printf '%s\n' "$1"
		awk '/^desk1:/ { on = 1; next } /^[a-z]/ { on = 0 }
		    on { sub("^  ", ""); print }' "$EX/links.yaml"
	} >"$BATS_TEST_TMPDIR/probe.yaml"
	echo "$BATS_TEST_TMPDIR/probe.yaml"
}

@test "a bare gleam-probe document is the links of the client it names" {
	P=$(bare_probe 'client: desk1')
	grep -q '^probes:' "$P"
	T=$(tasks "$A_TASK")
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$P" \
	    -s "$EX/servers.yaml" -t "$T"
	[[ "$output" == *"- task: t
  client: desk1
  server: gpu"* ]]
	# Without client, the client is this host as gleam-run names it.
	P=$(bare_probe)
	GLEAM_CLIENT=desk1 run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$P" -s "$EX/servers.yaml" -t "$T"
	[[ "$output" == *"client: desk1"* ]]
	GLEAM_CLIENT=laptop9 run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$P" -s "$EX/servers.yaml" -t "$T"
	[ "$stderr" = "gleam-sched: $T:3: client: desk1: unknown client (not in $P)" ]
	# Under a client's name, its client key is gleam-probe's and ignored.
	{ echo 'desk1:'; sed 's/^/  /' "$(bare_probe 'client: elsewhere')"; } \
	    >"$BATS_TEST_TMPDIR/l.yaml"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$BATS_TEST_TMPDIR/l.yaml" -s "$EX/servers.yaml" -t "$T"
	[[ "$output" == *"client: desk1"* ]]
}

@test "- is standard input for any one file; two are refused" {
	for f in l s t; do
		case $f in
		l) run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -L - \
		    -s "$EX/servers.yaml" -t "$EX/tasks.yaml" \
		    <"$EX/links.yaml" ;;
		s) run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" \
		    -L "$EX/links.yaml" -s - -t "$EX/tasks.yaml" \
		    <"$EX/servers.yaml" ;;
		t) run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" \
		    -L "$EX/links.yaml" -s "$EX/servers.yaml" -t - \
		    <"$EX/tasks.yaml" ;;
		esac
		diff -u "$SCHED/plan.yaml" <(printf '%s\n' "$output")
	done
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -L - -s - \
	    -t "$EX/tasks.yaml" </dev/null
	[ "${stderr_lines[0]}" = "gleam-sched: -L and -s both read standard input: at most one file may be -" ]
	[ "${stderr_lines[1]}" = "$USAGE1" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s - -t - </dev/null
	[ "${stderr_lines[0]}" = "gleam-sched: -s and -t both read standard input: at most one file may be -" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" serve -L - -s - </dev/null
	[ "${stderr_lines[0]}" = "gleam-sched: -L and -s both read standard input: at most one file may be -" ]
}

@test "errors in standard input name it stdin, with the line" {
	printf 'tasks:\n- name: [unclosed\n' |
	    { run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$EX/links.yaml" -s "$EX/servers.yaml" -t -
	    [[ "$stderr" == "gleam-sched: stdin:3: "* ]]; }
	printf 'servers: []\n' |
	    { run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$EX/links.yaml" -s - -t "$EX/tasks.yaml"
	    [ "$stderr" = "gleam-sched: stdin:1: servers: empty: no server to place tasks on" ]; }
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L - \
	    -s "$EX/servers.yaml" -t "$EX/tasks.yaml" </dev/null
	[ "$stderr" = "gleam-sched: stdin: empty document" ]
	T=$(tasks "$A_TASK")
	sed 's/desk1:/desk2:/' "$EX/links.yaml" |
	    { run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L - \
	    -s "$EX/servers.yaml" -t "$T"
	    [ "$stderr" = "gleam-sched: $T:3: client: desk1: unknown client (not in stdin)" ]; }
}

@test "servers.yaml: an entry of host and added keys takes its status from a probe in the links" {
	S=$BATS_TEST_TMPDIR/s.yaml L=$BATS_TEST_TMPDIR/l.yaml
	cat >"$L" <<-'EOT'
	desk1:
	  probes:
	  - server: 10.0.0.1:7400
	    ok: true
	    rtt_ms: {median: 0.2}
	    up_mbit_s: 900
	    down_mbit_s: 900
	    status:
	      host: gpu1
	      protocol: 2
	      backend: cuda
	      max_clients: 64
	      gpus:
	      - {index: 0, name: G, memory_total: 8589934592, memory_free: 8589934592, utilization: 0}
	      clients: []
	  - {server: gpu2, ok: true, rtt_ms: {median: 0.2}, up_mbit_s: 900, down_mbit_s: 900}
	EOT
	printf 'servers:\n- host: gpu1\n  speed: 4\n  models: [m]\n' >"$S"
	sed -n '/^- host: gpu2/,/^# A plain/p' "$EX/servers.yaml" | sed '$d' >>"$S"
	T=$(tasks "$A_TASK")
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -x -L "$L" -s "$S" -t "$T"
	[[ "$output" == *"- task: t
  client: desk1
  server: gpu1"* ]]
	[[ "$output" == *"weights cached here"* ]]
	# A server no probe read the status of.
	printf 'servers:\n- host: gpu1\n  speed: 4\n- host: gpu2\n  speed: 2\n' >"$S"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$L" -s "$S" -t "$T"
	[ "$stderr" = "gleam-sched: $S:4: host: gpu2: no status: give it here, or probe the server (gleam-probe -o yaml) in $L" ]
	printf 'servers:\n- speed: 4\n' >"$S"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$L" -s "$S" -t "$T"
	[ "$stderr" = "gleam-sched: $S:2: host: missing" ]
	printf 'servers:\n- host: gpu1\n  backend: cuda\n' >"$S"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$L" -s "$S" -t "$T"
	[ "$stderr" = "gleam-sched: $S:3: backend: a status's key without protocol and gpus: give the whole status, or host and gleam-sched's keys alone" ]
	# The links from standard input: read for the statuses and the links.
	printf 'servers:\n- host: gpu1\n  speed: 4\n  models: [m]\n' >"$S"
	sed -n '/^- host: gpu2/,/^# A plain/p' "$EX/servers.yaml" | sed '$d' >>"$S"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -L - -s "$S" -t "$T" <"$L"
	[[ "$output" == *"server: gpu1"* ]]
}

@test "a gleam-probe document read as the servers: those that answered, with their statuses" {
	P=$BATS_TEST_TMPDIR/p.yaml
	printf 'client: desk1\nprobes:\n- {server: "gpu7:7400", ok: false, error: refused}\n- server: "gpu8:7401"\n  ok: true\n  status:\n' >"$P"
	printf '%s\n' "$A_STATUS" | sed 's/^- /  /; s/^/    /; s/gpu9/gpu8/' >>"$P"
	printf 'desk1:\n  probes:\n  - {server: gpu8, ok: true, rtt_ms: {median: 1}, up_mbit_s: 100, down_mbit_s: 100}\n' \
	    >"$BATS_TEST_TMPDIR/l.yaml"
	T=$(tasks "$A_TASK")
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$BATS_TEST_TMPDIR/l.yaml" -s "$P" -t "$T"
	[[ "$output" == *"server: gpu8"* ]]
	# Nothing answered: no servers.
	printf 'probes:\n- {server: gpu7, ok: false, error: refused}\n' >"$P"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$BATS_TEST_TMPDIR/l.yaml" -s "$P" -t "$T"
	[ "$stderr" = "gleam-sched: $P:2: probes: no server answered with its status: no server to place tasks on" ]
	printf 'probes: []\nextra: 1\n' >"$P"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$BATS_TEST_TMPDIR/l.yaml" -s "$P" -t "$T"
	[ "$stderr" = "gleam-sched: $P:2: document: unknown key 'extra'" ]
}

@test "links without throughput, twice probed or malformed are errors" {
	BAD=$BATS_TEST_TMPDIR/l.yaml
	printf 'desk1:\n  probes:\n  - {server: gpu1, ok: true, rtt_ms: {median: 0.2}, up_mbit_s: null, down_mbit_s: null}\n' >"$BAD"
	bad links "$BAD:3: up_mbit_s: null: measured with gleam-probe -t 0, which skips the throughput test"
	printf 'desk1:\n  probes:\n  - {server: gpu1, ok: true, rtt_ms: {median: 0.2}, up_mbit_s: 9, down_mbit_s: 9}\n  - {server: gpu1, ok: true, rtt_ms: {median: 0.2}, up_mbit_s: 9, down_mbit_s: 9}\n' >"$BAD"
	bad links "$BAD:4: server: gpu1: probed twice from desk1 (also line 3)"
	printf 'desk1:\n  probes:\n  - {server: gpu1, ok: true, up_mbit_s: 9, down_mbit_s: 9}\n' >"$BAD"
	bad links "$BAD:3: rtt_ms: missing"
	printf 'desk1:\n  probe: []\n' >"$BAD"
	bad links "$BAD:2: desk1: unknown key 'probe'"
	printf 'desk1:\n  probes: []\ndesk1:\n  probes: []\n' >"$BAD"
	bad links "$BAD:3: desk1: client given twice"
}

@test "a server's bad or unknown keys are named" {
	BAD=$BATS_TEST_TMPDIR/s.yaml
	printf 'servers:\n%s\n  speed: 0\n' "$A_STATUS" >"$BAD"
	bad servers "$BAD:9: speed: '0': too small"
	printf 'servers:\n%s\n  sped: 2\n' "$A_STATUS" >"$BAD"
	bad servers "$BAD:9: servers: unknown key 'sped'"
	printf 'servers:\n%s\n' "$A_STATUS" | sed '/backend:/d' >"$BAD"
	bad servers "$BAD:2: backend: missing"
	printf 'servers:\n%s\n%s\n' "$A_STATUS" "$A_STATUS" >"$BAD"
	bad servers "$BAD:9: host: gpu9: given twice (also line 2)"
	printf 'servers:\n%s\n  models: llama\n' "$A_STATUS" >"$BAD"
	bad servers "$BAD:9: models: expected a sequence of model names"
	printf 'servers:\n%s\n  port: fast\n' "$A_STATUS" >"$BAD"
	bad servers "$BAD:9: port: 'fast': not a number"
}

@test "a server's port rate: uploads to it are predicted by what it carries, not by the fastest path measured" {
	# Two tasks of new 8 GiB models from two clients on 1 Gbit/s paths:
	# without the server's port they share 1 Gbit/s at its end.
	printf 'c1:\n  probes:\n  - {server: gpu9, ok: true, rtt_ms: {median: 0.2}, up_mbit_s: 1000, down_mbit_s: 1000}\nc2:\n  probes:\n  - {server: gpu9, ok: true, rtt_ms: {median: 0.2}, up_mbit_s: 1000, down_mbit_s: 1000}\n' >"$BATS_TEST_TMPDIR/l.yaml"
	printf 'tasks:\n- {name: a, client: c1, model: m1, model_size: 2g, memory: 1g, requests: 100, rate: 1, gpu_time: 10ms, input: 1k, output: 1k, window: 1}\n- {name: b, client: c2, model: m2, model_size: 2g, memory: 1g, requests: 100, rate: 1, gpu_time: 10ms, input: 1k, output: 1k, window: 1}\n' >"$BATS_TEST_TMPDIR/t.yaml"
	for port in '' '  port: 10gbit'; do
		printf 'servers:\n%s\n%s\n' "$A_STATUS" "$port" >"$BATS_TEST_TMPDIR/s.yaml"
		run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$BATS_TEST_TMPDIR/l.yaml" \
		    -s "$BATS_TEST_TMPDIR/s.yaml" -t "$BATS_TEST_TMPDIR/t.yaml"
		printf '%s\n' "$output" | sed -n 's/^ *load_s: //p' | head -1 >>"$BATS_TEST_TMPDIR/load"
	done
	# 2 GiB at 1 Gbit/s is 17.2 s alone; twice that when they share.
	run cat "$BATS_TEST_TMPDIR/load"
	[ "${#lines[@]}" -eq 2 ]
	awk -v a="${lines[0]}" -v b="${lines[1]}" 'BEGIN { exit !(a > 30 && a < 40 && b > 15 && b < 20) }'
}

# ---- the daemon: real gleam-serve instances and a real daemon ------------

# A server entry in servers.yaml: NAME ADDRESS SPEED.
server_entry() {
	printf -- '- host: %s\n  address: %s\n  protocol: 2\n  backend: host\n' "$1" "$2"
	printf '  max_clients: 64\n  gpus:\n'
	printf '  - {index: 0, name: G, memory_total: 17179869184, memory_free: 17179869184, utilization: 0}\n'
	printf '  clients: []\n  speed: %s\n' "$3"
}

# fleet [SERVE-ARGS...]: two gleam-serve on private ports, "fast" (speed
# 4) and "slow" (1), and the files that describe them and client c1.
fleet() {
	printf 'backend: host\n' >"$BATS_TEST_TMPDIR/host.yaml"
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml" "$@"
	FAST_PID=$SERVE_PID FAST=$SERVE_ADDR
	serve_start -c "$BATS_TEST_TMPDIR/host.yaml" "$@"
	SLOW_PID=$SERVE_PID SLOW=$SERVE_ADDR
	SERVE_PID=
	{ echo servers:; server_entry fast "$FAST" 4; server_entry slow "$SLOW" 1; } \
	    >"$BATS_TEST_TMPDIR/servers.yaml"
	cat >"$BATS_TEST_TMPDIR/links.yaml" <<-EOT
	c1:
	  probes:
	  - {server: fast, ok: true, rtt_ms: {median: 0.3}, up_mbit_s: 900, down_mbit_s: 900}
	  - {server: slow, ok: true, rtt_ms: {median: 0.3}, up_mbit_s: 900, down_mbit_s: 900}
	EOT
}

# daemon_start [ARGS...]: gleam-sched serve on a private port over the fleet's
# files; sets SCHED_PID, SCHED_ADDR, SCHED_LOG.
daemon_start() {
	# Emptied here: wait_listen must not read an earlier daemon's port
	# before the new one's redirection truncates the file.
	SCHED_LOG=$BATS_TEST_TMPDIR/sched.log
	: >"$SCHED_LOG"
	"$GLEAM_BIN/gleam-sched" serve -i 0.2 -l 127.0.0.1:0 \
	    -L "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml" \
	    "$@" 2>"$SCHED_LOG" 3>&- &
	SCHED_PID=$!
	SCHED_ADDR=127.0.0.1:$(wait_listen "$SCHED_LOG" "$SCHED_PID") || return 1
}

# ask [GLEAM-RUN-ARGS...]: where gleam-run -S sends client c1's task.
ask() {
	GLEAM_CLIENT=${CLIENT:-c1} \
	    "$GLEAM_BIN/gleam-run" -S "$SCHED_ADDR" "$@" -- \
	    sh -c 'echo "$GLEAM_SERVER"'
}

# until_log TEXT: waits up to 10 s for TEXT in the daemon's log.
until_log() {
	local i
	for i in $(seq 1 100); do
		grep -q "$1" "$SCHED_LOG" && return 0
		sleep 0.1
	done
	cat "$SCHED_LOG" >&2
	return 1
}

daemon_teardown() {
	daemon_stop ${SCHED_PID:-} ${FAST_PID:-} ${SLOW_PID:-}
	SCHED_PID= FAST_PID= SLOW_PID=
}

teardown() {
	daemon_teardown
	mitm_kill
	sanitizer_check
}

# named_fleet: two gleam-serve named fast and slow, with the tests' GPUs
# in their status; servers.yaml gives only their speeds.
named_fleet() {
	local n
	export GLEAM_TEST_GPUS=$BATS_TEST_DIRNAME/../nvml/gpus.yaml
	for n in fast slow; do
		printf 'backend: host\nname: %s\n' $n >"$BATS_TEST_TMPDIR/$n.yaml"
		serve_start -c "$BATS_TEST_TMPDIR/$n.yaml"
		eval "${n^^}_PID=\$SERVE_PID ${n^^}=\$SERVE_ADDR"
	done
	SERVE_PID=
	printf 'servers:\n- host: fast\n  speed: 4\n- host: slow\n  speed: 1\n' \
	    >"$BATS_TEST_TMPDIR/servers.yaml"
}

@test "gleam-probe's YAML piped into gleam-sched as it is: the plan, and the daemon sends clients to the addresses the statuses give" {
	named_fleet
	printf 'tasks:\n- {name: a, client: c1, requests: 10, rate: 1, gpu_time: 10ms, input: 1k, output: 1k}\n' \
	    >"$BATS_TEST_TMPDIR/tasks.yaml"
	GLEAM_CLIENT=c1 "$GLEAM_BIN/gleam-probe" -o yaml -N 3 -t 0.1 "$FAST" "$SLOW" \
	    >"$BATS_TEST_TMPDIR/probe.yaml"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -L - \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$BATS_TEST_TMPDIR/tasks.yaml" \
	    <"$BATS_TEST_TMPDIR/probe.yaml"
	[[ "$output" == *"- task: a
  client: c1
  server: fast"* ]]
	# The probe alone: links and servers (speed 1 each).
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -L "$BATS_TEST_TMPDIR/probe.yaml" -s "$BATS_TEST_TMPDIR/probe.yaml" \
	    -t "$BATS_TEST_TMPDIR/tasks.yaml"
	[[ "$output" == *"server: fast"* || "$output" == *"server: slow"* ]]
	# The daemon from a pipe: the addresses are the statuses'.
	SCHED_LOG=$BATS_TEST_TMPDIR/sched.log
	GLEAM_CLIENT=c1 "$GLEAM_BIN/gleam-probe" -o yaml -N 3 -t 0.1 "$FAST" "$SLOW" |
	    "$GLEAM_BIN/gleam-sched" serve -i 0.2 -l 127.0.0.1:0 -L - \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" 2>"$SCHED_LOG" 3>&- &
	SCHED_PID=$!
	SCHED_ADDR=127.0.0.1:$(wait_listen "$SCHED_LOG" "$SCHED_PID")
	run -0 --separate-stderr ask -t a
	[ "$output" = "$FAST" ]
	# A reload reads the links from what standard input gave.
	kill -HUP "$SCHED_PID"
	until_log "reloaded: 2 servers, 1 clients"
	grep -q "reloading $BATS_TEST_TMPDIR/servers.yaml, stdin" "$SCHED_LOG"
	run -0 --separate-stderr ask -t b
	[ "$output" = "$FAST" ]
}

@test "daemon flags: serve excludes -x and -o; -l -k -i -v -P -A -D -R need serve" {
	run -2 --separate-stderr sched serve -x
	[ "${stderr_lines[0]}" = "gleam-sched: -x: only in plan mode" ]
	run -2 --separate-stderr sched -o table serve
	[ "${stderr_lines[0]}" = "gleam-sched: -o: only in plan mode" ]
	for f in "-k key" "-i 1" "-v" "-P p" "-A" "-D" "-R 5"; do
		run -2 --separate-stderr sched $f
		[ "${stderr_lines[0]}" = "gleam-sched: ${f%% *}: only with serve" ]
	done
	run -2 --separate-stderr sched serve -i 0
	[[ "${stderr_lines[0]}" == "gleam-sched: -i 0: "* ]]
	run -2 --separate-stderr sched serve -R -1
	[[ "${stderr_lines[0]}" == "gleam-sched: -R -1: "* ]]
	run -2 --separate-stderr sched serve --replan=5x
	[[ "${stderr_lines[0]}" == "gleam-sched: -R 5x: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" migrate -R 5 a 1 b
	[[ "$stderr" == *"migrate takes -k only"* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" serve -l nohost: \
	    -L "$EX/links.yaml" -s "$EX/servers.yaml"
	[[ "${stderr_lines[0]}" == "gleam-sched: -l nohost:: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" serve -l 0.0.0.0:0 \
	    -L "$EX/links.yaml" -s "$EX/servers.yaml"
	[[ "${stderr_lines[0]}" == "gleam-sched: -l 0.0.0.0:0 without a key: "* ]]
	run -2 --separate-stderr sched -d plan
	[[ "$stderr" == *"gleam-sched: -d (serve) with plan"* ]]
}

@test "serve: long options, -D accepted; the deprecated -d grammar works with one warning" {
	fleet
	SCHED_LOG=$BATS_TEST_TMPDIR/sched.log
	"$GLEAM_BIN/gleam-sched" --interval=0.2 --listen 127.0.0.1:0 -D \
	    --links="$BATS_TEST_TMPDIR/links.yaml" serve \
	    --servers "$BATS_TEST_TMPDIR/servers.yaml" 2>"$SCHED_LOG" 3>&- &
	SCHED_PID=$!
	SCHED_ADDR=127.0.0.1:$(wait_listen "$SCHED_LOG" "$SCHED_PID")
	! grep -q deprecated "$SCHED_LOG"
	run -0 --separate-stderr ask -t chat
	[ "$output" = "$FAST" ]
	kill "$SCHED_PID"
	wait "$SCHED_PID" || true
	# 0.1: -d, -L the address, -l the links.
	: >"$SCHED_LOG"
	"$GLEAM_BIN/gleam-sched" -d -i 0.2 -L 127.0.0.1:0 \
	    -l "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml" \
	    2>"$SCHED_LOG" 3>&- &
	SCHED_PID=$!
	SCHED_ADDR=127.0.0.1:$(wait_listen "$SCHED_LOG" "$SCHED_PID")
	[ "$(grep -c deprecated "$SCHED_LOG")" -eq 1 ]
	grep -q -- "-d is deprecated and will go; use gleam-sched serve (-l the address, -L the links)" "$SCHED_LOG"
	run -0 --separate-stderr ask -t chat
	[ "$output" = "$FAST" ]
}

@test "the daemon's bad files are named, exit 3, nothing listens" {
	fleet
	cp "$BATS_TEST_TMPDIR/links.yaml" "$BATS_TEST_TMPDIR/good-links.yaml"
	printf 'c1:\n  probes:\n  - {server: gpu9, ok: true, rtt_ms: {median: 1}, up_mbit_s: 1, down_mbit_s: 1}\n' \
	    >"$BATS_TEST_TMPDIR/links.yaml"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" serve -l 127.0.0.1:0 \
	    -L "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml"
	[[ "$stderr" == *"links.yaml:3: server: gpu9: unknown server"* ]]
	[[ "$stderr" != *"listening"* ]]
	# Its tasks are a catalog: where they run is the daemon's to say.
	cp "$BATS_TEST_TMPDIR/good-links.yaml" "$BATS_TEST_TMPDIR/links.yaml"
	printf 'tasks:\n- name: a\n  client: c1\n  requests: 10\n  rate: 1\n  gpu_time: 1ms\n  input: 1k\n  output: 1k\n  server: fast\n' \
	    >"$BATS_TEST_TMPDIR/tasks.yaml"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" serve -l 127.0.0.1:0 \
	    -L "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml" \
	    -t "$BATS_TEST_TMPDIR/tasks.yaml"
	[ "$stderr" = "gleam-sched: $BATS_TEST_TMPDIR/tasks.yaml:2: server: not in the daemon's tasks" ]
}

@test "gleam-run -S runs the program against the server the daemon picks" {
	fleet
	daemon_start
	run -0 --separate-stderr ask -t chat
	[ "$output" = "$FAST" ]
	grep -q "placed chat of c1 on fast" "$SCHED_LOG"
	# The task's name is the program's unless -t gives one.
	run -0 --separate-stderr ask
	grep -q "placed sh of c1 on" "$SCHED_LOG"
}

@test "the daemon keeps its view current: a server that goes is avoided" {
	fleet
	daemon_start
	run -0 --separate-stderr ask -t a
	[ "$output" = "$FAST" ]
	{ kill -KILL "$FAST_PID" && wait "$FAST_PID"; } 2>/dev/null || true
	FAST_PID=
	# Two rounds of status after the kill: one may have started before.
	sleep 0.6
	run -0 --separate-stderr ask -t b
	[ "$output" = "$SLOW" ]
}

@test "a client the daemon does not know: exit 1 with the reason" {
	fleet
	daemon_start
	CLIENT=c9 run -1 --separate-stderr ask -t a
	[ -z "$output" ]
	[ "$stderr" = "gleam-run: scheduler $SCHED_ADDR: task a of c9: client c9: unknown (not in $BATS_TEST_TMPDIR/links.yaml)" ]
}

@test "SIGHUP re-reads the files; a bad one leaves the view as it was" {
	fleet
	daemon_start
	run -0 --separate-stderr ask -t a
	[ "$output" = "$FAST" ]
	{ echo servers:; server_entry fast "$FAST" 1; server_entry slow "$SLOW" 8; } \
	    >"$BATS_TEST_TMPDIR/servers.yaml"
	kill -HUP "$SCHED_PID"
	until_log "reloaded: 2 servers"
	run -0 --separate-stderr ask -t b
	[ "$output" = "$SLOW" ]
	echo 'servers: []' >"$BATS_TEST_TMPDIR/servers.yaml"
	kill -HUP "$SCHED_PID"
	until_log "reload failed; keeping the running view"
	run -0 --separate-stderr ask -t c
	[ "$output" = "$SLOW" ]
	kill -TERM "$SCHED_PID"
	rc=0
	wait "$SCHED_PID" || rc=$?
	SCHED_PID=
	[ "$rc" -eq 0 ]
}

@test "with a key, the daemon and the servers refuse a client without it" {
	make_key "$BATS_TEST_TMPDIR/key"
	fleet -k "$BATS_TEST_TMPDIR/key"
	daemon_start -k "$BATS_TEST_TMPDIR/key"
	run -5 --separate-stderr ask -t a
	[[ "$stderr" == "gleam-run: scheduler $SCHED_ADDR: "* ]]
	run -0 --separate-stderr ask -k "$BATS_TEST_TMPDIR/key" -t a
	[ "$output" = "$FAST" ]
}

@test "a key file of identities: clients prove any one, the daemon the first to its servers" {
	local k=$BATS_TEST_TMPDIR n
	: >"$k/ids.keys"
	chmod 600 "$k/ids.keys"
	for n in sched alice bob; do
		"$GLEAM_BIN/gleam-key" -i "$n" "$k/$n.key"
		cat "$k/$n.key" >>"$k/ids.keys"
	done
	"$GLEAM_BIN/gleam-key" -i carol "$k/carol.key"
	# The servers know the same identities; the daemon polls them as
	# sched, the file's first.
	fleet -k "$k/ids.keys"
	daemon_start -k "$k/ids.keys"
	run -0 --separate-stderr ask -k "$k/alice.key" -t a
	[ "$output" = "$FAST" ]
	run -0 --separate-stderr ask -k "$k/bob.key" -t b
	[ "$output" = "$FAST" ]
	# carol is not listed: refused as a wrong key is.
	run -5 --separate-stderr ask -k "$k/carol.key" -t c
	[[ "$stderr" == "gleam-run: scheduler $SCHED_ADDR: "*"wrong key"* ]]
	# Servers that do not know sched: its polls fail, nothing is placed.
	daemon_teardown
	grep -v '^sched ' "$k/ids.keys" >"$k/users.keys"
	chmod 600 "$k/users.keys"
	fleet -k "$k/users.keys"
	daemon_start -k "$k/ids.keys"
	sleep 0.6
	run -1 --separate-stderr ask -k "$k/alice.key" -t d
	[ -z "$output" ]
	grep -q "not placed" "$SCHED_LOG"
}

# ---- the daemon's sealed channel, attacked by tests/bats/mitm.py ---------

# sealed_fleet: the fleet and the daemon with a key, the proxy in front of
# the daemon (MITM-ARGS); ask goes through it.
sealed_fleet() {
	make_key "$BATS_TEST_TMPDIR/key"
	fleet -k "$BATS_TEST_TMPDIR/key"
	daemon_start -k "$BATS_TEST_TMPDIR/key"
	DAEMON_ADDR=$SCHED_ADDR
	sealed_via "$@"
}

# sealed_via [MITM-ARGS...]: a new proxy in front of the daemon.
sealed_via() {
	mitm_kill
	mitm_start "${DAEMON_ADDR##*:}" "$@"
	SCHED_ADDR=$MITM_ADDR
}

@test "sealed: a record tampered with either way ends the daemon's connection; gleam-run runs nothing" {
	sealed_fleet -f c2s:20
	run -4 --separate-stderr ask -k "$BATS_TEST_TMPDIR/key" -t a
	[ -z "$output" ]
	[[ "$stderr" == "gleam-run: scheduler $SCHED_ADDR: "* ]]
	grep -q "client 127.0.0.1:[0-9]* (gleam-run): record 0 does not authenticate (tampered with, replayed or forged), closing" "$SCHED_LOG"
	! grep -q "placed a of c1" "$SCHED_LOG"
	# The daemon's answer, tampered with: placed there, never taken here.
	sealed_via -f s2c:40
	run -4 --separate-stderr ask -k "$BATS_TEST_TMPDIR/key" -t a
	[ -z "$output" ]
	[ "$stderr" = "gleam-run: scheduler $SCHED_ADDR: record 0 does not authenticate (tampered with, replayed or forged)" ]
}

@test "sealed: with a key the daemon's answer cannot be read on the way; without one it can" {
	sealed_fleet -c "$BATS_TEST_TMPDIR/sealed"
	run -0 --separate-stderr ask -k "$BATS_TEST_TMPDIR/key" -t chat
	[ "$output" = "$FAST" ]
	[ -s "$BATS_TEST_TMPDIR/sealed.c2s" ]
	[ -s "$BATS_TEST_TMPDIR/sealed.s2c" ]
	! grep -a -q -e "$FAST" -e chat -e c1 "$BATS_TEST_TMPDIR/sealed.c2s" "$BATS_TEST_TMPDIR/sealed.s2c"
	daemon_teardown
	mitm_kill
	fleet
	daemon_start
	DAEMON_ADDR=$SCHED_ADDR
	sealed_via -c "$BATS_TEST_TMPDIR/clear"
	run -0 --separate-stderr ask -t chat
	[ "$output" = "$FAST" ]
	grep -a -q chat "$BATS_TEST_TMPDIR/clear.c2s"
	grep -a -q "$FAST" "$BATS_TEST_TMPDIR/clear.s2c"
}

@test "sealed: a request replayed to the daemon, from another connection or twice in one, does not open" {
	sealed_fleet -c "$BATS_TEST_TMPDIR/cap"
	run -0 --separate-stderr ask -k "$BATS_TEST_TMPDIR/key" -t first
	sealed_via -r "$BATS_TEST_TMPDIR/cap.c2s"
	run -4 --separate-stderr ask -k "$BATS_TEST_TMPDIR/key" -t second
	[ -z "$output" ]
	grep -q "record 0 does not authenticate" "$SCHED_LOG"
	! grep -q "placed second of c1" "$SCHED_LOG"
	[ "$(grep -c "placed first of c1" "$SCHED_LOG")" -eq 1 ]
	sealed_via -d
	run --separate-stderr ask -k "$BATS_TEST_TMPDIR/key" -t third
	grep -q "record 1 does not authenticate" "$SCHED_LOG"
	[ "$(grep -c "placed third of c1" "$SCHED_LOG")" -le 1 ]
}

@test "a daemon that is not there: exit 4" {
	SCHED_ADDR=127.0.0.1:1
	run -4 --separate-stderr ask -t a
	[[ "$stderr" == "gleam-run: scheduler 127.0.0.1:1: "* ]]
}

@test "garbage on the daemon's socket is refused without harm" {
	fleet
	daemon_start
	port=${SCHED_ADDR##*:}
	printf 'GET / HTTP/1.0\r\n\r\n' >/dev/tcp/127.0.0.1/"$port" || true
	head -c 100000 /dev/urandom >/dev/tcp/127.0.0.1/"$port" 2>/dev/null || true
	run -0 --separate-stderr ask -t a
	[ "$output" = "$FAST" ]
	kill -0 "$SCHED_PID"
}

@test "the daemon without a key serves this host only, unless -A says so" {
	fleet
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" serve -l '*:0' \
	    -L "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml"
	[[ "${stderr_lines[0]}" == "gleam-sched: -l *:0 without a key: anyone who reaches it could read and steer the placements; give -k, listen on 127.0.0.1, or say -A" ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -A -L "$BATS_TEST_TMPDIR/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$BATS_TEST_TMPDIR/tasks.yaml"
	[[ "${stderr_lines[0]}" == "gleam-sched: -A: only with serve" ]]
	"$GLEAM_BIN/gleam-sched" serve -A -l '*:0' -L "$BATS_TEST_TMPDIR/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" 2>"$BATS_TEST_TMPDIR/a.log" 3>&- &
	local pid=$!
	wait_listen "$BATS_TEST_TMPDIR/a.log" "$pid" >/dev/null
	kill "$pid"; wait "$pid" || true
}

# ---- the daemon attacked: floods, leases, hostile YAML -------------------

# attack [-b SRC] COMMAND ARGS...: tests/bats/sched-attack.py at the daemon.
attack() {
	local src=()
	if [ "$1" = -b ]; then
		src=(-b "$2")
		shift 2
	fi
	python3 "$BATS_TEST_DIRNAME/sched-attack.py" "${src[@]}" \
	    "${SCHED_ADDR##*:}" "$@"
}

# count KEY LINE: the number after KEY= in LINE.
count() {
	sed -n "s/.*\<$1=\([0-9.]*\).*/\1/p" <<<"$2"
}

# A catalog of one task of 2 GiB: 8 fit on each server of the fleet.
big_tasks() {
	printf 'tasks:\n- name: big\n  client: c1\n  memory: 2g\n  requests: 600\n  rate: 10\n  gpu_time: 1ms\n  input: 1k\n  output: 1k\n' \
	    >"$BATS_TEST_TMPDIR/tasks.yaml"
}

@test "attack: 64 PLACE from one address hold its 8 leases and no more, for the lease; another address is placed at once" {
	command -v python3 >/dev/null || skip "python3 not installed"
	fleet
	big_tasks
	export GLEAM_SCHED_LEASE=1s
	daemon_start -t "$BATS_TEST_TMPDIR/tasks.yaml"
	grep -q "placements leased for 1 s, 8 at once per address; 10 requests a second per address, 20 at once" "$SCHED_LOG"
	run -0 attack -b 127.0.0.2 place 64 c1 big
	echo "$output"
	placed=$(count placed "$output") busy=$(count busy "$output")
	# Its share (a lease may run out while it asks: one more then).
	[ "$placed" -ge 8 ] && [ "$placed" -le 9 ]
	[ $((placed + busy)) -eq 64 ]
	grep -q "client 127.0.0.2:[0-9]*: busy: its address holds 8 leases already" "$SCHED_LOG"
	# Half the fleet is still free for this host, at once.
	run -0 --separate-stderr ask -t big
	[ "$output" = "$FAST" ] || [ "$output" = "$SLOW" ]
	# Nobody came for them: the leases run out, each logged.
	for i in $(seq 1 50); do
		[ "$(grep -c "lease of big of c1 on [a-z]* expired after [0-9.]* s: no client from 127.0.0.2 came; its capacity is free" "$SCHED_LOG")" -eq "$placed" ] && break
		sleep 0.1
	done
	[ "$(grep -c "lease of big of c1 on [a-z]* expired after [0-9.]* s: no client from 127.0.0.2 came" "$SCHED_LOG")" -eq "$placed" ]
	until_log "lease of big of c1 on [a-z]* expired after [0-9.]* s: no client from 127.0.0.1 came"
	run -0 attack status
	[[ "$output" == *"placed: []"* ]]
	# And the whole fleet is there again for anyone.
	run -0 attack -b 127.0.0.3 place 16 c1 big
	[ "$(count placed "$output")" -ge 8 ]
}

@test "attack: a flood from one address is answered busy while another address is served" {
	command -v python3 >/dev/null || skip "python3 not installed"
	fleet
	daemon_start
	attack -b 127.0.0.2 flood 3 c1 >"$BATS_TEST_TMPDIR/flood.out" 3>&- &
	local fpid=$! task
	sleep 0.5
	for task in legit1 legit2 legit3 legit4 legit5; do
		run -0 --separate-stderr ask -t "$task"
		[ "$output" = "$FAST" ] || [ "$output" = "$SLOW" ]
		grep -q "placed $task of c1 on" "$SCHED_LOG"
	done
	wait "$fpid"
	out=$(cat "$BATS_TEST_TMPDIR/flood.out")
	echo "$out"
	# At most its share of leases, and the rest answered busy.
	[ "$(count placed "$out")" -le 8 ]
	[ "$(count busy "$out")" -ge 100 ]
	[ "$(count error "$out")" -eq 0 ]
	grep -q "client 127.0.0.2:[0-9]*: busy: over the rate limit of its address (10 requests a second, 20 at once); [0-9]* requests refused in the last" "$SCHED_LOG"
	# Logged once a second at most, not once a request.
	[ "$(grep -c "busy:" "$SCHED_LOG")" -le 8 ]
	kill -0 "$SCHED_PID"
}

@test "attack: a peer that reads none of its replies is read no further; the daemon stays small" {
	command -v python3 >/dev/null || skip "python3 not installed"
	fleet
	daemon_start
	run -0 attack -b 127.0.0.2 unread 50
	echo "$output"
	[[ "$output" == *"stalled=1" ]]
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$SCHED_PID/status")
	echo "rss $rss kB"
	# (AddressSanitizer keeps what was freed a while: no bound there.)
	ldd "$GLEAM_BIN/gleam-sched" | grep -q libasan || [ "$rss" -lt 65536 ]
	run -0 --separate-stderr ask -t a
	[ "$output" = "$FAST" ]
}

@test "a lease ends when its client comes to the server it was placed on" {
	command -v python3 >/dev/null || skip "python3 not installed"
	fleet
	export GLEAM_SCHED_LEASE=30s
	daemon_start
	run -0 attack place 1 c1 chat
	[[ "$output" == "placed=1 "* ]]
	grep -q "placed chat of c1 on fast" "$SCHED_LOG"
	run -0 attack status
	[[ "$output" == *"- {task: chat, client: c1, server: fast, age_s: "* ]]
	# The program's connection from this host, as gleam-run's would be.
	run -0 attack client 1 "$FAST" myprog
	until_log "chat of c1 on fast: its client connected (127.0.0.1:[0-9]*, myprog), lease ended after [0-9.]* s"
	run -0 attack status
	[[ "$output" == *"placed: []"* ]]
	! grep -q "expired" "$SCHED_LOG"
}

@test "gleam-run asks a busy daemon again, backing off, within its time" {
	fleet
	export GLEAM_SCHED_RATE=1 GLEAM_SCHED_BURST=1
	daemon_start
	run -0 --separate-stderr ask -t a
	run -0 --separate-stderr ask -t b
	[ "$output" = "$FAST" ] || [ "$output" = "$SLOW" ]
	[[ "$stderr" == *"gleam-run: scheduler $SCHED_ADDR: busy, retry in "*" ms; asking again in "*" ms"* ]]
	grep -q "placed b of c1" "$SCHED_LOG"
	# Longer than gleam-run's 5 s: it gives up at once, exit 4.
	{ kill -KILL "$SCHED_PID" && wait "$SCHED_PID"; } 2>/dev/null || true
	export GLEAM_SCHED_RATE=0.1
	daemon_start
	run -0 --separate-stderr ask -t c
	run -4 --separate-stderr ask -t d
	[[ "$stderr" == "gleam-run: scheduler $SCHED_ADDR: busy, retry in "*" ms (gave up after "*" s)" ]]
	# A bad value is said and the default stands.
	{ kill -KILL "$SCHED_PID" && wait "$SCHED_PID"; } 2>/dev/null || true
	export GLEAM_SCHED_RATE=fast GLEAM_SCHED_LEASE=-1s GLEAM_SCHED_LEASES=0
	unset GLEAM_SCHED_BURST
	daemon_start
	grep -q "GLEAM_SCHED_RATE=fast: .*; it is 10" "$SCHED_LOG"
	grep -q "GLEAM_SCHED_LEASE=-1s: .*; the lease is 5 s" "$SCHED_LOG"
	grep -q "GLEAM_SCHED_LEASES=0: .*; it is 8" "$SCHED_LOG"
	grep -q "placements leased for 5 s, 8 at once per address; 10 requests a second per address, 20 at once" "$SCHED_LOG"
}

@test "attack: a deeply nested or oversized request is refused in well under a second; the daemon keeps serving" {
	command -v python3 >/dev/null || skip "python3 not installed"
	fleet
	daemon_start
	run -0 attack nested 64000 '['
	echo "$output"
	[[ "$output" == "ms="*" error=3 place: more than 4096 bytes" ]]
	awk -v ms="$(count ms "$output")" 'BEGIN { exit !(ms < 200) }'
	local open
	for open in '[' '{a: ' '- '; do
		run -0 attack nested 4000 "$open"
		echo "$output"
		[[ "$output" == "ms="*" error=3 place:1: nested deeper than 4 levels" ]]
		awk -v ms="$(count ms "$output")" 'BEGIN { exit !(ms < 200) }'
	done
	run -0 --separate-stderr ask -t a
	[ "$output" = "$FAST" ]
	kill -0 "$SCHED_PID"
}

@test "a deeply nested or oversized input file is refused with its name, fast" {
	head -c 65536 /dev/zero | tr '\0' '[' >"$BATS_TEST_TMPDIR/deep.yaml"
	local t0=$SECONDS
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$BATS_TEST_TMPDIR/deep.yaml" \
	    -s "$EX/servers.yaml" -t "$EX/tasks.yaml"
	[ "$stderr" = "gleam-sched: $BATS_TEST_TMPDIR/deep.yaml:1: nested deeper than 32 levels" ]
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/deep.yaml" -t "$EX/tasks.yaml"
	[ "$stderr" = "gleam-sched: $BATS_TEST_TMPDIR/deep.yaml:1: nested deeper than 32 levels" ]
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s "$EX/servers.yaml" -t "$BATS_TEST_TMPDIR/deep.yaml"
	[ "$stderr" = "gleam-sched: $BATS_TEST_TMPDIR/deep.yaml:1: nested deeper than 32 levels" ]
	[ $((SECONDS - t0)) -lt 5 ]
	head -c 9000000 /dev/zero | tr '\0' ' ' >"$BATS_TEST_TMPDIR/huge.yaml"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$EX/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/huge.yaml" -t "$EX/tasks.yaml"
	[ "$stderr" = "gleam-sched: $BATS_TEST_TMPDIR/huge.yaml: more than 8388608 bytes" ]
	# An alias of ten aliases of ten...: refused, not walked.
	{
		echo 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]'
		for i in 1 2 3 4 5 6 7 8 9; do
			j=$((i - 1))
			echo "a$i: &a$i [*a$j, *a$j, *a$j, *a$j, *a$j, *a$j, *a$j, *a$j, *a$j, *a$j]"
		done
	} >"$BATS_TEST_TMPDIR/laughs.yaml"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -L "$BATS_TEST_TMPDIR/laughs.yaml" \
	    -s "$EX/servers.yaml" -t "$EX/tasks.yaml"
	[[ "$stderr" == "gleam-sched: $BATS_TEST_TMPDIR/laughs.yaml:"*": more than 1048576 nodes (an alias counts the nodes it stands for)" ]]
}

@test "attack: one address holds 16 connections at most; the next is told busy, others still connect" {
	command -v python3 >/dev/null || skip "python3 not installed"
	fleet
	daemon_start
	attack -b 127.0.0.2 conns 20 3 >"$BATS_TEST_TMPDIR/conns.out" 3>&- &
	local cpid=$!
	for i in $(seq 1 50); do
		[ -s "$BATS_TEST_TMPDIR/conns.out" ] && break
		sleep 0.1
	done
	run -0 --separate-stderr ask -t a
	[ "$output" = "$FAST" ]
	wait "$cpid"
	out=$(cat "$BATS_TEST_TMPDIR/conns.out")
	echo "$out"
	[[ "$out" == "open=16 handshake: frame 5: "*"busy: too many connections from this address"* ]]
	grep -q "client 127.0.0.2:[0-9]*: refused, 16 connections (16 from its address)" "$SCHED_LOG"
}
