#!/usr/bin/env bats
# gleam-sched's interface: flags, the plan for fixed inputs (kept beside
# these tests in sched/), and every kind of bad input.

load test_helper

USAGE1="usage: gleam-sched [-x] [-o format] -l links.yaml -s servers.yaml -t tasks.yaml"
USAGE2="       gleam-sched -d [-Av] [-i seconds] [-k keyfile] [-L host:port] [-P pidfile] -l links.yaml -s servers.yaml [-t tasks.yaml]"
USAGE="$USAGE1
$USAGE2"
SCHED=$BATS_TEST_DIRNAME/sched

# sched [ARGS...]: gleam-sched on the fixed inputs.
sched() {
	"$GLEAM_BIN/gleam-sched" "$@" -l "$SCHED/links.yaml" \
	    -s "$SCHED/servers.yaml" -t "$SCHED/tasks.yaml"
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

@test "-h prints usage on stdout and exits 0" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -h
	[ "$output" = "$USAGE" ]
	[ -z "$stderr" ]
}

@test "each input file is required" {
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched"
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "gleam-sched: no links file given (-l)" ]
	[ "${stderr_lines[1]}" = "$USAGE1" ]
	[ "${stderr_lines[2]}" = "$USAGE2" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -l l.yaml
	[ "${stderr_lines[0]}" = "gleam-sched: no servers file given (-s)" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -l l.yaml -s s.yaml
	[ "${stderr_lines[0]}" = "gleam-sched: no tasks file given (-t)" ]
}

@test "bad flags and arguments are usage errors" {
	run -2 --separate-stderr sched -o json
	[ "${stderr_lines[0]}" = "gleam-sched: -o: json: expected table or yaml" ]
	[ "${stderr_lines[1]}" = "$USAGE1" ]
	[ "${stderr_lines[2]}" = "$USAGE2" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -l a -s b -t c extra
	[ "${stderr_lines[0]}" = "gleam-sched: unexpected argument 'extra'" ]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -q
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
	with servers.yaml "$(sed 's/^  models: \[llama3-8b-q4\]$/  cache: {entries: 9, ram_bytes: 1, disk_bytes: 0, gpu_bytes: 0, hits: 0, misses: 0, models: [llama3-8b-q4]}/' "$SCHED/servers.yaml")"
	! grep -q '^  models:' "$BATS_TEST_TMPDIR/servers.yaml"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -l "$SCHED/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$SCHED/tasks.yaml"
	[[ "$output" == *"- task: chat"*"  server: gpu1"*"  cached: true"*"- task: vision"* ]]
	with servers.yaml "$(sed 's/^  models: \[llama3-8b-q4\]$/  cache: {entries: 9, ram_bytes: 1, disk_bytes: 0, gpu_bytes: 0, hits: 0, misses: 0, models: 7}/' "$SCHED/servers.yaml")"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -l "$SCHED/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$SCHED/tasks.yaml"
	[[ "$stderr" == *"models: expected a sequence of at most 32 names"* ]]
}

@test "a task no GPU can hold is unplaced with the reason, exit 1" {
	t=$(tasks "$(printf '%s\n' "$A_TASK" | sed 's/model_size: 1g/model_size: 240g/')")
	run -1 --separate-stderr "$GLEAM_BIN/gleam-sched" -l "$SCHED/links.yaml" \
	    -s "$SCHED/servers.yaml" -t "$t"
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
	with links.yaml "$(cat "$SCHED/links.yaml")
laptop3:
  probes:
  - {server: gpu1, ok: false, error: Connection timed out}"
	t=$(tasks "$(printf '%s\n' "$A_TASK" | sed 's/client: desk1/client: laptop3/')")
	run -1 --separate-stderr "$GLEAM_BIN/gleam-sched" -x \
	    -l "$BATS_TEST_TMPDIR/links.yaml" -s "$SCHED/servers.yaml" -t "$t"
	[[ "$output" == *"  reason: no link from laptop3 to any server"* ]]
	run -1 --separate-stderr "$GLEAM_BIN/gleam-sched" -o table \
	    -l "$BATS_TEST_TMPDIR/links.yaml" -s "$SCHED/servers.yaml" -t "$t"
	[[ "${lines[1]}" == "t     laptop3  -       unplaced: no link from laptop3 to any server" ]]
}

@test "tasks beyond a server's memory are unplaced for want of room" {
	t=$(tasks "$(printf '%s\n' "$A_TASK" | sed 's/client: desk1/client: laptop2/; s/model_size: 1g/model_size: 20g/')
$(printf '%s\n' "$A_TASK" | sed '1d; s/name: t/name: u/; s/client: desk1/client: laptop2/; s/model: m/model: n/; s/model_size: 1g/model_size: 70g/')
$(printf '%s\n' "$A_TASK" | sed '1d; s/name: t/name: v/; s/client: desk1/client: laptop2/; s/model: m/model: o/; s/model_size: 1g/model_size: 20g/')")
	run -1 --separate-stderr "$GLEAM_BIN/gleam-sched" -l "$SCHED/links.yaml" \
	    -s "$SCHED/servers.yaml" -t "$t"
	[[ "$output" == *"unplaced:
- task: u
  client: laptop2
  reason: 'no room: the 1 server that could hold it (70.0 GiB) is full with the rest of the plan'"* ]]
}

@test "an empty task list is an empty plan" {
	t=$(tasks 'tasks: []')
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -l "$SCHED/links.yaml" \
	    -s "$SCHED/servers.yaml" -t "$t"
	[ "${lines[0]}" = "plan: []" ]
	[ "${lines[1]}" = "unplaced: []" ]
}

@test "a medium shared by a client and a server slows its transfers" {
	before=$(sched | sed -n '/task: speech/,/rtt_ms/p')
	with servers.yaml "$(sed 's/^  speed: 2$/  speed: 2\n  medium: office/' "$SCHED/servers.yaml")"
	with links.yaml "$(sed 's/^laptop2:$/laptop2:\n  medium: office/; s/^laptop1:$/laptop1:\n  medium: office/' "$SCHED/links.yaml")"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -l "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml" \
	    -t "$SCHED/tasks.yaml"
	[ -z "$stderr" ]
	after=$(printf '%s\n' "$output" | sed -n '/task: speech/,/rtt_ms/p')
	[ "$before" != "$after" ]
}

@test "queued work on a server counts against it" {
	[[ "$(sched)" == *"- server: gpu1
  tasks: 3"* ]]
	with servers.yaml "$(sed 's/^  models: \[llama3-8b-q4\]$/  models: [llama3-8b-q4]\n  queued: 20s/' "$SCHED/servers.yaml")"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -l "$SCHED/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$SCHED/tasks.yaml"
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
	tf=$(tasks "$(sed 's/^- name: vision$/- name: vision\n  server: gpu3/' "$SCHED/tasks.yaml")")
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -x -l "$SCHED/links.yaml" \
	    -s "$SCHED/servers.yaml" -t "$tf"
	v=$(printf '%s\n' "$output" | sed -n '/^- task: vision$/,/^- task/p')
	[[ "$v" == *"  server: gpu3
  from: gpu3
  cached: true"* ]]
	[[ "$v" == *"reason: 'running there: not moved'"* ]]
	# Movable, it stays where its weights are while that is best ...
	tf=$(tasks "$(sed 's/^- name: vision$/- name: vision\n  server: gpu3\n  movable: true/' "$SCHED/tasks.yaml")")
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -o table \
	    -l "$SCHED/links.yaml" -s "$SCHED/servers.yaml" -t "$tf"
	[[ "$output" == *"vision  desk1    gpu3 "* ]]
	[[ "$output" != *"moved from"* ]]
	# ... and moves, saying whence, once a backlog there makes it worse.
	with servers.yaml "$(sed 's/^- host: gpu3$/- host: gpu3\n  queued: 300s/' "$SCHED/servers.yaml")"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -o table \
	    -l "$SCHED/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$tf"
	[[ "$output" == *"vision  desk1    gpu1 "*"
  moved from gpu3"* ]]
}

@test "a running task's server must be known and reachable" {
	BAD=$BATS_TEST_TMPDIR/t.yaml
	printf '%s\n  server: gpu9\n' "$A_TASK" >"$BAD"
	bad tasks "$BAD:11: server: gpu9: unknown server"
	sed 's/^- name: speech$/- name: speech\n  server: gpu3/' "$SCHED/tasks.yaml" >"$BAD"
	bad tasks "$BAD:28: server: gpu3: laptop2 has no link to it"
	printf '%s\n  movable: true\n' "$A_TASK" >"$BAD"
	bad tasks "$BAD:11: movable: only with server"
}

# ---- bad input: exit 3, one line naming file, line and key -------------

# bad FILE-ROLE EXPECTED: runs with the file given in $BAD as links,
# servers or tasks, the others fixed, and checks the message.
bad() {
	local l=$SCHED/links.yaml s=$SCHED/servers.yaml t=$SCHED/tasks.yaml
	case $1 in
	links) l=$BAD ;;
	servers) s=$BAD ;;
	tasks) t=$BAD ;;
	esac
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -l "$l" -s "$s" -t "$t"
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
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -l "$SCHED/links.yaml" \
	    -s "$SCHED/servers.yaml" -t "$BAD"
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
	bad tasks "$BAD:3: client: laptop9: unknown client (not in $SCHED/links.yaml)"
	{ printf '%s\n' "$A_TASK"; printf '%s\n' "$A_TASK" | sed 1d; } >"$BAD"
	bad tasks "$BAD:11: name: t: given twice (also line 2)"
}

@test "a link to an unknown server is an error" {
	BAD=$BATS_TEST_TMPDIR/l.yaml
	printf 'desk1:\n  probes:\n  - {server: gpu9, ok: true, name: gpu9, rtt_ms: {median: 0.2}, up_mbit_s: 900, down_mbit_s: 900}\n' >"$BAD"
	bad links "$BAD:3: name: gpu9: unknown server (not in $SCHED/servers.yaml)"
	printf 'desk1:\n  probes:\n  - {server: 10.0.0.9, ok: true, rtt_ms: {median: 0.2}, up_mbit_s: 900, down_mbit_s: 900}\n' >"$BAD"
	bad links "$BAD:3: server: 10.0.0.9: unknown server (not in $SCHED/servers.yaml)"
}

@test "a failed probe of an unknown server is no error" {
	with links.yaml "$(cat "$SCHED/links.yaml")
  - {server: gpu9, ok: false, error: No route to host}"
	run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" \
	    -l "$BATS_TEST_TMPDIR/links.yaml" -s "$SCHED/servers.yaml" \
	    -t "$SCHED/tasks.yaml"
	diff -u "$SCHED/plan.yaml" <(printf '%s\n' "$output")
}

@test "a bare gleam-probe document must go under its client's name" {
	BAD=$BATS_TEST_TMPDIR/l.yaml
	printf 'probes:\n- {server: gpu1, ok: false, error: refused}\n' >"$BAD"
	bad links "$BAD:1: probes: a gleam-probe document goes under the name of the client that ran it"
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
		run -0 --separate-stderr "$GLEAM_BIN/gleam-sched" -l "$BATS_TEST_TMPDIR/l.yaml" \
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
	serve_start -f "$BATS_TEST_TMPDIR/host.yaml" "$@"
	FAST_PID=$SERVE_PID FAST=$SERVE_ADDR
	serve_start -f "$BATS_TEST_TMPDIR/host.yaml" "$@"
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

# daemon_start [ARGS...]: gleam-sched -d on a private port over the fleet's
# files; sets SCHED_PID, SCHED_ADDR, SCHED_LOG.
daemon_start() {
	SCHED_LOG=$BATS_TEST_TMPDIR/sched.log
	"$GLEAM_BIN/gleam-sched" -d -i 0.2 -L 127.0.0.1:0 \
	    -l "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml" \
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

@test "daemon flags: -d excludes -x and -o, -L -k -i -v need -d" {
	run -2 --separate-stderr sched -d -x
	[ "${stderr_lines[0]}" = "gleam-sched: -x: not with -d" ]
	run -2 --separate-stderr sched -L 127.0.0.1:0
	[ "${stderr_lines[0]}" = "gleam-sched: -L: only with -d" ]
	run -2 --separate-stderr sched -d -i 0
	[[ "${stderr_lines[0]}" == "gleam-sched: -i 0: "* ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -d -L nohost: \
	    -l "$SCHED/links.yaml" -s "$SCHED/servers.yaml"
	[[ "${stderr_lines[0]}" == "gleam-sched: -L nohost:: "* ]]
}

@test "the daemon's bad files are named, exit 3, nothing listens" {
	fleet
	cp "$BATS_TEST_TMPDIR/links.yaml" "$BATS_TEST_TMPDIR/good-links.yaml"
	printf 'c1:\n  probes:\n  - {server: gpu9, ok: true, rtt_ms: {median: 1}, up_mbit_s: 1, down_mbit_s: 1}\n' \
	    >"$BATS_TEST_TMPDIR/links.yaml"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -d -L 127.0.0.1:0 \
	    -l "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml"
	[[ "$stderr" == *"links.yaml:3: server: gpu9: unknown server"* ]]
	[[ "$stderr" != *"listening"* ]]
	# Its tasks are a catalog: where they run is the daemon's to say.
	cp "$BATS_TEST_TMPDIR/good-links.yaml" "$BATS_TEST_TMPDIR/links.yaml"
	printf 'tasks:\n- name: a\n  client: c1\n  requests: 10\n  rate: 1\n  gpu_time: 1ms\n  input: 1k\n  output: 1k\n  server: fast\n' \
	    >"$BATS_TEST_TMPDIR/tasks.yaml"
	run -3 --separate-stderr "$GLEAM_BIN/gleam-sched" -d -L 127.0.0.1:0 \
	    -l "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml" \
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
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -d -L '*:0' \
	    -l "$BATS_TEST_TMPDIR/links.yaml" -s "$BATS_TEST_TMPDIR/servers.yaml"
	[[ "${stderr_lines[0]}" == "gleam-sched: -L *:0 without a key: anyone who reaches it could read and steer the placements; give -k, listen on 127.0.0.1, or say -A" ]]
	run -2 --separate-stderr "$GLEAM_BIN/gleam-sched" -A -l "$BATS_TEST_TMPDIR/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" -t "$BATS_TEST_TMPDIR/tasks.yaml"
	[[ "${stderr_lines[0]}" == "gleam-sched: -A: only with -d" ]]
	"$GLEAM_BIN/gleam-sched" -d -A -L '*:0' -l "$BATS_TEST_TMPDIR/links.yaml" \
	    -s "$BATS_TEST_TMPDIR/servers.yaml" 2>"$BATS_TEST_TMPDIR/a.log" 3>&- &
	local pid=$!
	wait_listen "$BATS_TEST_TMPDIR/a.log" "$pid" >/dev/null
	kill "$pid"; wait "$pid" || true
}
