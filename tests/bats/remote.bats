#!/usr/bin/env bats
# Remoting end to end on machines without a GPU: real nvcc-built programs,
# with the real cudart (static and shared), run through gleam-run and the
# client library against gleam-serve's host backend.  The same programs run
# on the GPU in tests/gpu/run, where their output is compared with a local
# run's.

load test_helper

CUDA_BIN=${GLEAM_CUDA_BIN:-$BATS_TEST_DIRNAME/../../build/cuda}
HOST_KERNELS=${GLEAM_HOST_KERNELS:-$BATS_TEST_DIRNAME/../../build/tests/host-kernels.so}

setup_file() {
	[ -x "$CUDA_BIN/static/vecadd" ] || skip "CUDA test programs not built (make cuda-tests)"
	export SERVE_CONF=$BATS_FILE_TMPDIR/host.yaml
	printf 'backend: host\nhost_kernels: %s\n' "$HOST_KERNELS" >"$SERVE_CONF"
}

setup() {
	[ -x "$CUDA_BIN/static/vecadd" ] || skip "CUDA test programs not built (make cuda-tests)"
	serve_start -c "$SERVE_CONF"
}

teardown() {
	if [ -n "${BG_PID:-}" ]; then { kill -KILL "$BG_PID" && wait "$BG_PID"; } 2>/dev/null || true; fi
	serve_kill
	sanitizer_check
}

# run_prog KIND NAME [ARGS]: runs a test program through gleam-run.
run_prog() {
	local kind=$1 name=$2
	shift 2
	run --separate-stderr timeout 120 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
	    "$CUDA_BIN/$kind/$name" "$@"
}

@test "the server says it serves with the host backend" {
	grep -q "backend: host" "$SERVE_LOG"
	run -0 "$GLEAM_BIN/gleam-probe" -t 0 -N 1 -o yaml "$SERVE_ADDR"
	[[ "$output" == *"backend: host"* ]]
}

@test "vecadd, static and shared cudart" {
	for k in static shared; do
		run_prog $k vecadd
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "vecadd: ok" ]
	done
}

@test "memset, static and shared cudart" {
	for k in static shared; do
		run_prog $k memset
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "memset: ok" ]
		[[ "$output" == *"cudaMemsetAsync pinned           32: ok"* ]]
		[[ "$output" == *"pinned as device memory         256: ok"* ]]
	done
}

@test "kernels with many and struct parameters" {
	for k in static shared; do
		run_prog $k params
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "params: ok" ]
	done
}

@test "streams and events" {
	for k in static shared; do
		run_prog $k streams
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "streams: ok" ]
	done
}

@test "graphs: stream capture, instantiate, launch, update, capture rules" {
	for k in static shared; do
		run_prog $k graphs
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "graphs: ok" ]
		# ten launches with changed inputs: ten different results
		[ "$(printf '%s\n' "${lines[@]}" | grep '^launch ' | sort -u | wc -l)" -eq 10 ]
		[[ "$output" == *"update same shape: result 0"* ]]
		[[ "$output" == *"cudaMalloc                   cudaErrorStreamCaptureUnsupported, end cudaErrorStreamCaptureInvalidated"* ]]
		[[ "$output" == *"thread-local                 other thread's cudaMalloc cudaSuccess"* ]]
		# cuGraphNodeGetLocalId and ...ToolsId, from the server
		[[ "$output" == *"node ids: 4 nodes, code 0, 0 local and 0 tools ids repeated, NULL answers 1"* ]]
	done
}

@test "graphs_nodes: node handles, kernel node parameters, explicit graphs" {
	for k in static shared; do
		run_prog $k graphs_nodes
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "graphs_nodes: ok" ]
		[[ "$output" == *"captured: 4 nodes, 1 roots, 3 edges"* ]]
		[[ "$output" == *"kernel vecAdd grid 4,1,1 block 256,1,1 shmem 0 args da db dc 1024"* ]]
		[[ "$output" == *"explicit: 6 nodes, 1 roots, 5 edges"* ]]
		[[ "$output" == *"host-pointer memcpy node: ok or refused"* ]]
		# the client said why it refused the host-pointer memcpy node
		[[ "$stderr" == *"only device-to-device copy nodes"* ]]
	done
	# Kernel nodes' parameters come with the listing and stay with the
	# nodes until set: asked for alone are only those read after they
	# were set and a memset node's (refused).
	GLEAM_STATS=$BATS_TEST_TMPDIR/st.yaml run_prog static graphs_nodes
	[ "$status" -eq 0 ]
	grep -qx '  cuGraphKernelNodeGetParams: 2' "$BATS_TEST_TMPDIR/st.yaml"
	# A listing holds while nothing was sent since: the counts, nodes,
	# roots, edges and each node's neighbours that the program asks
	# after one change of the graph come from one listing (66 before);
	# and once the program has listed a graph, a capture's end brings
	# the new graph's listing along (the recaptured graph: none asked).
	grep -qx '  graphNodes: 4' "$BATS_TEST_TMPDIR/st.yaml"
	# New arguments for an executable graph's kernel node that keeps its
	# function go one-way (XLA's command buffers, each step); the
	# graph's own node's set stays a round trip: 2 calls, 1 round trip.
	[ "$(grep -cx '  cuGraphKernelNodeSetParams: 2' "$BATS_TEST_TMPDIR/st.yaml")" -eq 1 ]
	[ "$(sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/st.yaml" | grep -cx '  cuGraphKernelNodeSetParams: 1')" -eq 1 ]
}

@test "graphupd: an executable graph updated every step, as ggml decodes; same-shape updates one-way" {
	for k in static shared; do
		run_prog $k graphupd
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "graphupd: ok" ]
		# another topology: refused, and once more from the exec made
		# for it
		[[ "${lines[6]}" == "step  6: "*"update cudaErrorGraphExecUpdateFailure"* ]]
		[[ "${lines[7]}" == "step  7: "*"update cudaErrorGraphExecUpdateFailure"* ]]
		[ "$(printf '%s\n' "${lines[@]}" | grep -c '^step .* ok$')" -eq 20 ]
	done
	# an empty node added after the capture: refused
	[[ "${lines[16]}" == "step 16: "*"update cudaErrorGraphExecUpdateFailure"* ]]
	# 19 updates.  Step 6's (one kernel more) is refused in the client,
	# both topologies known and different: 18 sent.  A round trip where
	# the exec's shape is not known (steps 1, and 7, 8, 17, 18 after a
	# new instantiation: its graph's listing was not the last thing
	# sent) or the graph's (16: an empty node); the other 12 go one-way,
	# another function at a node (12, and back at 13) among them, each
	# step's words still what the CPU computes.
	GLEAM_STATS=$BATS_TEST_TMPDIR/st.yaml run_prog static graphupd
	[ "$status" -eq 0 ]
	grep -qx '  cuGraphExecUpdate: 18' "$BATS_TEST_TMPDIR/st.yaml"
	[ "$(sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/st.yaml" | grep -cx '  cuGraphExecUpdate: 6')" -eq 1 ]
	# Every call waits under GLEAM_SYNC: the same output.
	GLEAM_SYNC=1 GLEAM_STATS=$BATS_TEST_TMPDIR/sync.yaml run_prog static graphupd
	[ "$status" -eq 0 ]
	[ "$(sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/sync.yaml" | grep -cx '  cuGraphExecUpdate: 19')" -eq 1 ]
	local ref=("${lines[@]}")
	# On one stream, the nodes never listed (llama.cpp's way now): the
	# captures end one-way, and their launches' trace tells the shape
	# of a graph seen before (its listing asked for once, at steps 1, 6
	# and 12): 3 updates of 19 wait (1, and 16, 17: a graph changed
	# after its capture has no trace), two are refused in the client
	# (6 and 7: the topology changed), and each other step is a
	# capture, launches and an update sent, and one wait, the copy
	# back.  The execs made after a refusal are instantiated one-way
	# where the graph's shape is known (all but steps 0 and 16's).
	GLEAM_STATS=$BATS_TEST_TMPDIR/ns.yaml run_prog static graphupd -ns
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | grep -c '^step .* ok$')" -eq 20 ]
	sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/ns.yaml" >"$BATS_TEST_TMPDIR/rt"
	! grep -q 'cuStreamEndCapture' "$BATS_TEST_TMPDIR/rt"
	grep -qx '  cuGraphExecUpdate: 3' "$BATS_TEST_TMPDIR/rt"
	grep -qx '  cuGraphInstantiate: 2' "$BATS_TEST_TMPDIR/rt"
	grep -qx '  graphNodes: 3' "$BATS_TEST_TMPDIR/rt"
	grep -qx '  cuGraphExecUpdate: 17' "$BATS_TEST_TMPDIR/ns.yaml"
	# The same words as the fork and join gave, step by step.
	diff <(printf '%s\n' "${ref[@]}" | cut -d, -f3) <(printf '%s\n' "${lines[@]}" | cut -d, -f3)
	# Listed each step, one stream, launches alone (one with an
	# attribute of the node alone, as cuBLAS's): the listing is made in
	# the client from the launches, so the capture's end goes one-way
	# (a round trip each step before), and the update is predicted from
	# it.  The server's listing is asked for at the first listing (no
	# capture had been listed before) and at step 16, whose empty node
	# added changes the graph: its nodes get the server's handles
	# first.  The same words.
	GLEAM_STATS=$BATS_TEST_TMPDIR/s.yaml run_prog static graphupd -s
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | grep -c '^step .* ok$')" -eq 20 ]
	diff <(printf '%s\n' "${ref[@]}" | cut -d, -f3) <(printf '%s\n' "${lines[@]}" | cut -d, -f3)
	sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/s.yaml" >"$BATS_TEST_TMPDIR/rt"
	! grep -q 'cuStreamEndCapture' "$BATS_TEST_TMPDIR/rt"
	grep -qx '  cuGraphExecUpdate: 3' "$BATS_TEST_TMPDIR/rt"
	grep -qx '  graphNodes: 3' "$BATS_TEST_TMPDIR/rt"
	# Without the listing made here (GLEAM_SYNC: every call waits), the
	# same words.
	GLEAM_SYNC=1 run_prog static graphupd -s
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "${ref[@]}" | cut -d, -f3) <(printf '%s\n' "${lines[@]}" | cut -d, -f3)
	# graphupd_ns is graphupd -ns (for the GPU run, which passes no
	# arguments).
	GLEAM_STATS=$BATS_TEST_TMPDIR/ns2.yaml run_prog shared graphupd_ns
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | grep -c '^step .* ok$')" -eq 20 ]
	! sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/ns2.yaml" | grep -q cuStreamEndCapture
	run "$CUDA_BIN/static/graphupd" -x
	[ "$status" -eq 2 ]
	[[ "$output" == *"usage: graphupd [-ns]" ]]
}

@test "graphmade: a capture's listing made in the client, its nodes the server's once named to it" {
	GLEAM_STATS=$BATS_TEST_TMPDIR/st.yaml run_prog static graphmade
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "graphmade: ok" ]
	[ "$(printf '%s\n' "${lines[@]}" | grep -c ' run: .* ok$')" -eq 8 ]
	[[ "$output" == *"capture 1 node 2 set: mix grid 8 block 256 shmem 0 args d 8 1 2048"* ]]
	[[ "$output" == *"capture 1's node 1 in a clone: affine grid 8 block 256 shmem 0 args d+h 3 1 2048"* ]]
	[[ "$output" == *"capture 2 and an empty node: 5 nodes, 1 roots, 4 edges"* ]]
	[[ "$output" == *"capture 3 and an edge: 4 nodes, 1 roots, 4 edges; roots 0; edges 0>1 1>2 2>3 0>3"* ]]
	local out=$output
	sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/st.yaml" >"$BATS_TEST_TMPDIR/rt"
	# Only the captures with a memset or a fork end with a round trip
	# (their listings are the server's), and the first with a launch
	# with programmatic serialization (its listing shows the client the
	# edge the server's driver makes into such a launch; the host
	# backend's is the default one); the first capture's listing is
	# asked for (none had been listed), and the made ones' where the
	# program names their nodes to the server or changes the graph:
	# a parameter set, a clone listed, a node destroyed (the listing
	# after it), an empty node and an edge added (each, and the listing
	# after it): eight listings.  Parameters asked for alone: the set
	# node's, read again, and the clone's node.
	grep -qx '  cuStreamEndCapture: 3' "$BATS_TEST_TMPDIR/rt"
	grep -qx '  graphNodes: 8' "$BATS_TEST_TMPDIR/rt"
	grep -qx '  cuGraphKernelNodeGetParams: 2' "$BATS_TEST_TMPDIR/rt"
	# Every call waiting (no listing made here): the same output.
	GLEAM_SYNC=1 run_prog static graphmade
	[ "$status" -eq 0 ]
	[ "$output" = "$out" ]
	run_prog shared graphmade
	[ "$status" -eq 0 ]
	[ "$output" = "$out" ]
}

@test "graphs_more: allocation and free nodes, node parameters, nodes disabled" {
	for k in static shared; do
		run_prog $k graphs_more
		echo "$output"
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "graphs_more: ok" ]
		[[ "$output" == *"alloc node: 4096 bytes, type 1, location 1/0, address alloc"* ]]
		[[ "$output" == *"free node: address alloc"* ]]
		[[ "$output" == *"memset node: dst alloc value 5 element 4 width 1024 height 1"* ]]
		[[ "$output" == *"graph memset: value 17 width 512"* ]]
		[[ "$output" == *"memcpy node: alloc -> du, 4096 bytes x 1 x 1"* ]]
		[[ "$output" == *"event node set: ev2"* ]]
		[[ "$output" == *"kernel node enabled: 1"* ]]
		[[ "$output" == *"memset params of a kernel node: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"free node of no allocation: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"clone's node: kernel grid 4, its own"* ]]
		[[ "$output" == *"a graph as its own clone: cudaErrorInvalidValue"* ]]
		[[ "$stderr" == *"graphs_more: graph ids checked"* ]]
	done
}

@test "graphs_host: host nodes and captured host functions run in the client, in order" {
	for k in static shared; do
		run_prog $k graphs_host
		echo "$output"
		echo "$stderr"
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "graphs_host: ok" ]
		[[ "$output" == *'launches: callbacks 6 "ABABAB", on the program'"'"'s thread 0'* ]]
		[[ "$output" == *"launches: value 6,"* ]]
		[[ "$output" == *"host node params: cb_slow, data A"* ]]
		[[ "$output" == *"host node set: cb_note, data C"* ]]
		[[ "$output" == *'graph set: new exec, old exec: "CBAB"'* ]]
		[[ "$output" == *'exec set: "Ax"'* ]]
		[[ "$output" == *"captured: kernel host kernel host"* ]]
		[[ "$output" == *'captured launches: callbacks 4 "xyxy"'* ]]
		[[ "$output" == *"captured launches: value 16,"* ]]
		[[ "$output" == *"a launch nobody waits for: its callback ran"* ]]
		[[ "$output" == *"host node with no function: cudaErrorInvalidValue"* ]]
		# Refused through Gleam: cudaErrorNotPermitted.
		[[ "$stderr" == *"graphs_host: a CUDA call in a callback: 800"* ]]
	done
}

@test "graphs_deps: stream attributes, a capture's open ends read and changed, a capture into a graph, edges with data" {
	for k in static shared; do
		run_prog $k graphs_deps
		echo "$output"
		echo "$stderr"
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "graphs_deps: ok" ]
		# Programmatic edges: kept, listed with their data, lossy
		# without it, removed by their data.
		[[ "$output" == *"edge data: the ends alone: cudaErrorLossyQuery"* ]]
		[[ "$output" == *"edge data: k1->k2 port 1 to 0 type 1"* ]]
		[[ "$output" == *"edge data: k2->k3 port 2 to 0 type 1"* ]]
		# As the H200's driver: no data given removes the edge
		# whatever its data; with its data then, there is none.
		[[ "$output" == *"edge data: removed as a default edge: cudaSuccess"* ]]
		[[ "$output" == *"edge data: removed again with its data: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"edge data: 1 edge after the removal"* ]]
		[[ "$output" == *"edge data: launched twice: quarters 2 2 2 0"* ]]
		[[ "$output" == *"sync policy: 3"* ]]
		[[ "$output" == *"window: d, 4096 bytes, hit ratio 0.50, hit 2, miss 1"* ]]
		[[ "$output" == *"copied sync policy: 3"* ]]
		[[ "$output" == *"copied window: 4096 bytes"* ]]
		[[ "$output" == *"priority attribute matches: 1"* ]]
		[[ "$output" == *"cooperative on a stream: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"before any work: 0 open ends"* ]]
		[[ "$output" == *"after a kernel: 1 open end, a kernel: 1"* ]]
		[[ "$output" == *"after another: 1 open end, a new node: 1"* ]]
		[[ "$output" == *"set: 1 open end, k1: 1"* ]]
		[[ "$output" == *"added: 2 open ends, k3 and k2: 1"* ]]
		[[ "$output" == *"the capture's graph: 1"* ]]
		[[ "$output" == *"nodes: 4, the ends' handles among them: 1"* ]]
		[[ "$output" == *"edges: 4 k1->k2 k1->k3 k2->k4 k3->k4"* ]]
		[[ "$output" == *"launched: every element 4: 1"* ]]
		[[ "$output" == *"update with no capture: cudaErrorIllegalState"* ]]
		[[ "$output" == *"captured into: the same graph: 1"* ]]
		[[ "$output" == *"into: 2 nodes, 1 edge, empty first: 1, kernel after: 1"* ]]
		[[ "$output" == *"into: launched twice: every element 2: 1"* ]]
		[[ "$output" == *"into after another graph's node: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"capturing after that: 0"* ]]
	done
}

@test "graphs_cond: nodes through the generic calls, conditional nodes (if, while, switch)" {
	for k in static shared; do
		run_prog $k graphs_cond
		echo "$output"
		echo "$stderr"
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "graphs_cond: ok" ]
		[[ "$output" == *"generic nodes: 6"* ]]
		[[ "$output" == *"child's graph: 1 node, same handle 1, then 2"* ]]
		[[ "$output" == *"launch: kernel and child 2 (same 1), memset 7 (same 1), copy 7 (same 1)"* ]]
		[[ "$output" == *"graph set: old exec 7, new exec 9, exec set 11, other exec 9"* ]]
		[[ "$output" == *"exec child set: a +1, f 1"* ]]
		[[ "$output" == *"alloc node: address given 1"* ]]
		[[ "$output" == *"alloc node removed: cudaErrorNotSupported"* ]]
		[[ "$output" == *"kernel attrs: cooperative 1, window 4096 bytes, hit ratio 0.50, copied window 4096 bytes"* ]]
		[[ "$output" == *"kernel attr of a memset node: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"reserved field set: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"event params on a memset node: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"if node: type conditional 1, bodies' nodes 1 1"* ]]
		[[ "$output" == *"if: then 1, else 101"* ]]
		[[ "$output" == *"if destroyed, its handle unused: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"while: 5 turns, again 6"* ]]
		[[ "$output" == *"while captured: the body back 1, 3 turns"* ]]
		[[ "$output" == *"switch: 100, out of range 100"* ]]
		[[ "$output" == *"if of three bodies: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"while of two bodies: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"switch of none: cudaErrorInvalidValue"* ]]
		[[ "$output" == *"batch node: 0x100 0x101"* ]]
		[[ "$output" == *"batch params: 2 ops, types 2 5, values 0x100 0x101"* ]]
		[[ "$output" == *"batch set: 0x200 0x201, exec set 0x300 0x301"* ]]
		[[ "$output" == *"user object: held by a graph, ran 0, by an exec, ran 0, all gone, ran 1"* ]]
		[[ "$output" == *"user object moved: ran 0, released by the graph, ran 1"* ]]
	done
}

@test "device globals and constant memory" {
	for k in static shared; do
		run_prog $k globals
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "globals: ok" ]
		[[ "$output" == *"g_table's attributes: device memory 1, device 0, device pointer 1"* ]]
		[[ "$output" == *"cudaFree of g_table: cudaErrorInvalidValue"* ]]
	done
}

@test "many threads at once" {
	for k in static shared; do
		run_prog $k threads
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "threads: ok" ]
	done
}

@test "fork after initialisation: a clean error in the child, the parent unaffected" {
	for k in static shared; do
		run_prog $k fork
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "fork: ok" ]
	done
}

@test "error paths, and a kernel fault that is sticky" {
	for k in static shared; do
		run_prog $k errors
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "errors: ok" ]
		run_prog $k errors fault
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "errors: ok" ]
	done
}

@test "stagehtod: asynchronous copies into a busy stream land with the bytes of their moment, in the stream's order" {
	for k in static shared; do
		run_prog $k stagehtod
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "stagehtod: ok" ]
		[[ "$output" == *"copies 36 (24 transformed after), 34881856 bytes"* ]]
		[[ "$output" == *"device bytes: ok, fnv d1dbeed7255c2b38"* ]]
	done
}

@test "a bad launch and a kernel fault amid one-way work: the right error at the right call" {
	for k in static shared; do
		run_prog $k oneway
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "oneway: ok" ]
		[[ "$output" == *"block of 2048 amid one-way work              cudaErrorInvalidValue ok"* ]]
		[[ "$output" == *"first synchronising call                     cudaErrorIllegalAddress ok"* ]]
	done
}

@test "one-way calls: the same output as GLEAM_SYNC=1 with at least 10x fewer round trips" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -O "$BATS_TEST_TMPDIR/a.yaml" -- "$CUDA_BIN/static/oneway"
	local fast=$output
	GLEAM_SYNC=1 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -O "$BATS_TEST_TMPDIR/s.yaml" -- "$CUDA_BIN/static/oneway"
	[ "$output" = "$fast" ]
	local a s
	a=$(sed -n 's/^round_trips: //p' "$BATS_TEST_TMPDIR/a.yaml")
	s=$(sed -n 's/^round_trips: //p' "$BATS_TEST_TMPDIR/s.yaml")
	echo "round trips: $a one-way, $s synchronous"
	[ "$a" -gt 0 ] && [ $((a * 10)) -le "$s" ]
	grep -Eq '^one_way: [1-9][0-9]*$' "$BATS_TEST_TMPDIR/a.yaml"
	grep -q '^one_way: 0$' "$BATS_TEST_TMPDIR/s.yaml"
	# batches: each request in one, the one-way ones often several to
	# a write; a synchronous call is a write of its own.
	local ab aw sb
	ab=$(sed -n 's/^batches: //p' "$BATS_TEST_TMPDIR/a.yaml")
	aw=$(sed -n 's/^one_way: //p' "$BATS_TEST_TMPDIR/a.yaml")
	sb=$(sed -n 's/^batches: //p' "$BATS_TEST_TMPDIR/s.yaml")
	echo "batches: $ab for $a round trips and $aw one-way calls; $sb synchronous"
	[ "$ab" -gt 0 ] && [ "$ab" -le $((a + aw)) ]
	[ "$sb" -ge "$s" ]
}

@test "the step hold: a step's one-way calls leave with its wait (GLEAM_HOLD=2), the same output as without (GLEAM_HOLD=0); a bad GLEAM_HOLD warned of" {
	GLEAM_SPIN=1 GLEAM_HOLD=0 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -O "$BATS_TEST_TMPDIR/off.yaml" -- "$CUDA_BIN/static/pinread"
	local off=$output
	GLEAM_SPIN=1 GLEAM_HOLD=2 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -O "$BATS_TEST_TMPDIR/on.yaml" -- "$CUDA_BIN/static/pinread"
	[ "$output" = "$off" ]
	[ "${lines[-1]}" = "pinread: ok" ]
	local rt ow b
	rt=$(sed -n 's/^round_trips: //p' "$BATS_TEST_TMPDIR/on.yaml")
	ow=$(sed -n 's/^one_way: //p' "$BATS_TEST_TMPDIR/on.yaml")
	b=$(sed -n 's/^batches: //p' "$BATS_TEST_TMPDIR/on.yaml")
	echo "held: $b batches for $rt round trips and $ow one-way calls; not: $(sed -n 's/^batches: //p' "$BATS_TEST_TMPDIR/off.yaml")"
	# pinread's 90 rounds of one-way calls, each followed by its
	# synchronization: about a batch a round trip (129 here), a few more
	# where a round's calls were more than 100 us apart; one-way calls
	# sent as they come reach 175 more.
	[ "$rt" -gt 90 ] && [ "$ow" -gt 150 ]
	[ "$b" -gt 0 ] && [ "$b" -le $((rt + 40)) ]
	GLEAM_HOLD=7 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$CUDA_BIN/static/pinread"
	[ "$output" = "$off" ]
	[[ "$stderr" == *"GLEAM_HOLD=7: not 0, 1 or 2; 1 it is"* ]]
}

@test "compressed bulk copies: identical results, fewer bytes sent" {
	GLEAM_ZSTD=0 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -O "$BATS_TEST_TMPDIR/raw.yaml" -- "$CUDA_BIN/shared/memcpy"
	local raw=$output
	GLEAM_ZSTD=1 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -O "$BATS_TEST_TMPDIR/z.yaml" -- "$CUDA_BIN/shared/memcpy"
	[ "$output" = "$raw" ]
	local r z
	r=$(sed -n 's/^bytes_sent: //p' "$BATS_TEST_TMPDIR/raw.yaml")
	z=$(sed -n 's/^bytes_sent: //p' "$BATS_TEST_TMPDIR/z.yaml")
	echo "bytes sent: $r raw, $z compressed"
	[ "$z" -lt "$r" ]
	grep -Eq '^bytes_saved: [1-9][0-9]*$' "$BATS_TEST_TMPDIR/z.yaml"
	grep -q '^bytes_saved: 0$' "$BATS_TEST_TMPDIR/raw.yaml"
}

@test "cuBLASLt's TPC map table exists; the host backend has no map to give" {
	for k in static shared; do
		run_prog $k tpcmap
		[ "$status" -eq 0 ]
		[ "${lines[0]}" = "table size word 136" ]
		[ "${lines[1]}" = "map: error 801" ]
		[ "${lines[-1]}" = "tpcmap: ok" ]
	done
}

@test "tensor maps: the client refuses what it cannot send; the host backend has no encoder" {
	for k in static shared; do
		run_prog $k tensormap -r
		[ "$status" -eq 0 ]
		[ "${lines[0]}" = "NULL map: error 1" ]
		[ "${lines[1]}" = "rank 0: error 1" ]
		[ "${lines[2]}" = "rank 6: error 1" ]
		[ "${lines[3]}" = "NULL globalDim: error 1" ]
		[ "${lines[4]}" = "im2col rank 2: error 1" ]
		[ "${lines[5]}" = "replace in NULL map: error 1" ]
		[ "${lines[6]}" = "tiled rank 2 float32: error 801" ]
		[ "${lines[-1]}" = "tensormap: skipped, no tensor-map encoder (error 801)" ]
	done
	# The server met one well-formed request and is still serving.
	kill -0 "$SERVE_PID"
}

@test "mapped host memory: kernels' writes seen after a sync, host writes seen by the device" {
	for k in static shared; do
		run_prog $k mapped
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "mapped: ok" ]
		[[ "$output" == *"small mapped: host pointer is device pointer 1"* ]]
		[[ "$output" == *"small mapped: a kernel's writes through it   ok"* ]]
		# Small page-locked memory without the mapped flag is mapped
		# memory too (XLA passes its host pointer to kernels).
		grep -qx 'small pinned: kernels use its host pointer *ok' <<<"$output"
		grep -qx 'small pinned: the work after it *ok' <<<"$output"
		# The host backend runs a launch to its end before it reads the
		# next call, so the kernel waiting for the host times out here;
		# on a GPU it is released (tests/gpu/run compares with a local
		# run).
		grep -qx 'small pinned: a waiting kernel released *no, it timed out' <<<"$output"
	done
}

@test "syncidle: several streams idle at once; synchronizations are no work" {
	for k in static shared; do
		GLEAM_STATS=$BATS_TEST_TMPDIR/on.yaml run_prog $k syncidle
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "syncidle: ok" ]
		local on=$output
		# Of its 14 stream synchronizations and 2 queries, 13 are
		# answered here: all but the first and the two after a
		# kernel on that stream.  Each reply names every idle stream
		# (b's first sync after a's), the copy back on a is a wait
		# that leaves a idle, and work on one stream leaves the
		# other idle (b's after a's copy and after a's kernel, a's
		# after b's kernel).  Then events: of 5 stream
		# synchronizations, an event's synchronization and its query,
		# 6 more: all but b's after its wait on an event recorded
		# behind a kernel (an event recorded on an idle stream is
		# complete and leaves it idle, a wait on a complete one adds
		# nothing, and one recorded behind work is complete once a
		# reply names its stream idle); making events is no work.
		# Once a graph's node records the first event, its
		# synchronization goes to the server.
		grep -qx 'local_syncs: 19' "$BATS_TEST_TMPDIR/on.yaml"
		[ "$(sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/on.yaml" | grep -cx '  cuEventSynchronize: 1')" -eq 1 ]
		# Without the replies' idle streams, the event recorded
		# behind the kernel is not known complete: its query and the
		# two synchronizations after the second wait go to the server.
		GLEAM_IDLE_STREAMS=0 GLEAM_STATS=$BATS_TEST_TMPDIR/ni.yaml run_prog $k syncidle
		[ "$status" -eq 0 ]
		[ "$output" = "$on" ]
		grep -qx 'local_syncs: 15' "$BATS_TEST_TMPDIR/ni.yaml"
		GLEAM_SYNC=1 GLEAM_STATS=$BATS_TEST_TMPDIR/off.yaml run_prog $k syncidle
		[ "$status" -eq 0 ]
		[ "$output" = "$on" ]
		grep -qx 'local_syncs: 0' "$BATS_TEST_TMPDIR/off.yaml"
	done
}

@test "idlepoll: another thread's query while a synchronization's reply is on its way leaves the stream idle" {
	# A link of 100 ms each way: the other thread's query (at 30 ms)
	# is queued while the synchronization's reply travels.
	"$GLEAM_BIN/gleam-link" -d 100ms -l 127.0.0.1:0 "$SERVE_ADDR" 2>"$BATS_TEST_TMPDIR/link.log" 3>&- &
	BG_PID=$!
	local lport k
	lport=$(wait_listen "$BATS_TEST_TMPDIR/link.log" "$BG_PID")
	for k in static shared; do
		GLEAM_STATS=$BATS_TEST_TMPDIR/on.yaml run --separate-stderr timeout 120 \
		    "$GLEAM_BIN/gleam-run" -s "127.0.0.1:$lport" -- "$CUDA_BIN/$k/idlepoll"
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "idlepoll: ok" ]
		# The second synchronization of a and its query: here.
		grep -qx 'local_syncs: 2' "$BATS_TEST_TMPDIR/on.yaml"
		[ "$(sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/on.yaml" | grep -cx '  cuStreamSynchronize: 1')" -eq 1 ]
		[ "$(sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/on.yaml" | grep -cx '  cuEventQuery: 1')" -eq 1 ]
		local on=$output
		GLEAM_SYNC=1 run --separate-stderr timeout 120 \
		    "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$CUDA_BIN/$k/idlepoll" 0
		[ "$status" -eq 0 ]
		[ "$output" = "$on" ]
	done
}

# spin_linked: a server (host backend) with spin 200us and spin_max 50ms
# behind gleam-link, 1 ms each way (BG_PID); lport, the link's port, for
# the caller's local.
spin_linked() {
	local conf=$BATS_TEST_TMPDIR/spin.yaml
	serve_kill
	printf 'backend: host\nhost_kernels: %s\nspin: 200us\nspin_max: 50ms\n' \
	    "$HOST_KERNELS" >"$conf"
	serve_start -c "$conf"
	"$GLEAM_BIN/gleam-link" -d 1ms -l 127.0.0.1:0 "$SERVE_ADDR" 2>"$BATS_TEST_TMPDIR/link.log" 3>&- &
	BG_PID=$!
	lport=$(wait_listen "$BATS_TEST_TMPDIR/link.log" "$BG_PID")
}

# readahead_caught: readahead through the link at lport; then the server
# logs that the client's thread polled past spin and caught requests.
readahead_caught() {
	run --separate-stderr timeout 120 "$GLEAM_BIN/gleam-run" -s "127.0.0.1:$lport" -- "$CUDA_BIN/static/readahead"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "readahead: ok" ]
	wait_for 'polled past spin' "$SERVE_LOG" 100 0.05 || true
	grep -E 'client .*\(readahead\): polled past spin [0-9]+ times, [1-9][0-9]* requests came in that time' "$SERVE_LOG"
}

@test "spin_max: a client whose requests come a link's round trip after each reply finds its thread polling (learned), none past spin without it" {
	local conf=$BATS_TEST_TMPDIR/spin.yaml lport
	spin_linked
	# Each step's request comes 2 ms after its reply (the link), past
	# spin: once eight gaps are seen the thread polls through them.
	readahead_caught
	# spin_max at spin: never past it.
	serve_kill
	printf 'backend: host\nhost_kernels: %s\nspin: 200us\nspin_max: 200us\n' \
	    "$HOST_KERNELS" >"$conf"
	serve_start -c "$conf"
	{ kill -KILL "$BG_PID" && wait "$BG_PID"; } 2>/dev/null || true
	"$GLEAM_BIN/gleam-link" -d 1ms -l 127.0.0.1:0 "$SERVE_ADDR" 2>"$BATS_TEST_TMPDIR/link2.log" 3>&- &
	BG_PID=$!
	lport=$(wait_listen "$BATS_TEST_TMPDIR/link2.log" "$BG_PID")
	run --separate-stderr timeout 120 "$GLEAM_BIN/gleam-run" -s "127.0.0.1:$lport" -- "$CUDA_BIN/static/readahead"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "readahead: ok" ]
	serve_kill
	! grep -q 'polled past spin' "$SERVE_LOG"
}

@test "spin_max: a worker killed while it polls leaves its spin slot to the next client" {
	local lport i w a
	spin_linked
	# A client whose thread polls through the link's 2 ms most of the
	# time; its worker killed mid-run, three times (on a host of fewer
	# than 8 CPUs there is one slot: a count kept it for good).
	for i in 1 2 3; do
		"$GLEAM_BIN/gleam-run" -s "127.0.0.1:$lport" -- "$CUDA_BIN/static/soak" 20 1 \
		    >"$BATS_TEST_TMPDIR/soak$i.out" 2>&1 &
		a=$!
		w=
		for _ in $(seq 1 200); do
			w=$(pgrep -P "$SERVE_PID" | head -n 1)
			[ -n "$w" ] && break
			sleep 0.05
		done
		[ -n "$w" ]
		sleep 1
		kill -KILL "$w"
		wait "$a" || true
		for _ in $(seq 1 100); do
			[ "$(grep -c 'killed by signal 9' "$SERVE_LOG")" -ge "$i" ] && break
			sleep 0.05
		done
		[ "$(grep -c 'killed by signal 9' "$SERVE_LOG")" -eq "$i" ]
	done
	readahead_caught
}

# The round trips of stream synchronizations and device-to-host copies in
# a statistics file.
sync_copy_rts() {
	sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$1" |
	    awk '$1 == "cuStreamSynchronize:" || $1 == "cuMemcpyDtoH:" { n += $2 } END { print n + 0 }'
}

@test "readahead: the copy after the same synchronization each step is read beside it, never stale" {
	for k in static shared; do
		GLEAM_STATS=$BATS_TEST_TMPDIR/on.yaml run_prog $k readahead
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "readahead: ok" ]
		local on=$output
		# Learnt in steps 0 and 1, read beside the synchronization
		# from step 2 on (24 reads): answered here in steps 2 to 7
		# (5: a part of the bytes read) and in each step after 8, 11,
		# 14 and 17, whose work between the read and the copy (or
		# the copy's stream busy at the read) leaves the read unused
		# while its copy confirms the rule.  20's first copy is of
		# other memory: the rule learnt again in 21 and 22.  23's
		# query is answered here (nothing sent).  26's other thread
		# synchronizes another stream, which the copy then follows:
		# the rule, unused, learnt again in 27 and 28.  29's copy is
		# on the legacy stream: read, not answered.  Then a ring of
		# five buffers (steps 30 to 49): the stride learnt in 31 and
		# 32, read in 33 and 34; 35 goes back to the first buffer,
		# whose successor is then known; from 36 on every step is
		# read and answered.  Then the same buffers in another order
		# (50 to 64): 50 follows 49 as before (answered), 51 to 55
		# each read what came next in the old order (unused), and
		# from 56 on the new order is known.  55 reads, 43 copies
		# answered.
		grep -qx 'reads_ahead: 55' "$BATS_TEST_TMPDIR/on.yaml"
		grep -qx 'copies_read_ahead: 43' "$BATS_TEST_TMPDIR/on.yaml"
		GLEAM_READ_AHEAD=0 GLEAM_STATS=$BATS_TEST_TMPDIR/no.yaml run_prog $k readahead
		[ "$status" -eq 0 ]
		[ "$output" = "$on" ]
		grep -qx 'reads_ahead: 0' "$BATS_TEST_TMPDIR/no.yaml"
		# A step's round trips: 1 with reads ahead, 2 without (the
		# synchronizations' and copies'; names asked for ahead count
		# only where the program waited for them, which varies).
		local a b
		a=$(sync_copy_rts "$BATS_TEST_TMPDIR/on.yaml")
		b=$(sync_copy_rts "$BATS_TEST_TMPDIR/no.yaml")
		echo "synchronizations' and copies' round trips: $a with, $b without"
		[ $((b - a)) -eq 43 ]
		GLEAM_SYNC=1 GLEAM_STATS=$BATS_TEST_TMPDIR/off.yaml run_prog $k readahead
		[ "$status" -eq 0 ]
		[ "$output" = "$on" ]
		grep -qx 'reads_ahead: 0' "$BATS_TEST_TMPDIR/off.yaml"
	done
	# A bad GLEAM_READ_AHEAD: warned of once, the default kept.
	GLEAM_READ_AHEAD=lots GLEAM_STATS=$BATS_TEST_TMPDIR/bad.yaml run_prog static readahead
	[ "$status" -eq 0 ]
	[ "$(grep -c 'GLEAM_READ_AHEAD=lots: .*ignored' <<<"$stderr")" -eq 1 ]
	grep -qx 'copies_read_ahead: 43' "$BATS_TEST_TMPDIR/bad.yaml"
}

@test "a stream sync with nothing sent since a copy to the host is answered here, mapped memory current" {
	for k in static shared; do
		GLEAM_STATS=$BATS_TEST_TMPDIR/on.yaml run_prog $k mapped
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "mapped: ok" ]
		local on=$output
		# Each round's two (after its input's copy in, after its copy
		# out) and the one after host writes: not the one after a
		# kernel that followed the copy.
		grep -qx 'local_syncs: 7' "$BATS_TEST_TMPDIR/on.yaml"
		GLEAM_SYNC=1 GLEAM_STATS=$BATS_TEST_TMPDIR/off.yaml run_prog $k mapped
		[ "$status" -eq 0 ]
		[ "$output" = "$on" ]
		grep -qx 'local_syncs: 0' "$BATS_TEST_TMPDIR/off.yaml"
		# Round trips: fewer, and the pulls that go with a sync are not
		# counted as synchronizations of their own.
		local rt_on rt_off
		rt_on=$(sed -n 's/^round_trips: //p' "$BATS_TEST_TMPDIR/on.yaml")
		rt_off=$(sed -n 's/^round_trips: //p' "$BATS_TEST_TMPDIR/off.yaml")
		[ "$rt_on" -lt "$rt_off" ]
		[ "$(grep '^synchronizations:' "$BATS_TEST_TMPDIR/on.yaml")" = \
		    "$(grep '^synchronizations:' "$BATS_TEST_TMPDIR/off.yaml")" ]
	done
}

@test "PCI bus id, host functions in stream order, the stream-ordered allocator" {
	for k in static shared; do
		run_prog $k extras
		[ "$status" -eq 0 ]
		[[ "$output" == *"host functions ran in order: 1 2 3"* ]]
		[ "${lines[-1]}" = "extras: ok" ]
	done
}

@test "the driver's odd corners: legacy launches, context events, batched copies, logs, coredump settings" {
	for k in static shared; do
		run_prog $k drvmisc
		[ "$status" -eq 0 ]
		[[ "$output" == *"by its bus id: device 0"* ]]
		[[ "$output" == *"cuLaunchGrid: ok"* ]]
		[[ "$output" == *"batched 3D copy: ok"* ]]
		# A NULL host pointer: CUDA_ERROR_INVALID_VALUE, not a fault
		# in the library (tests/gpu/run sets drvmisc's line against
		# the driver's; not yet run on a GPU).
		[[ "$output" == *"null host pointer: dtoh 1, dtoh async 1, htod 1, htod async 1; stream after 0"* ]]
		[[ "$output" == *"null host pointer: 2D 1, 2D async 1, 3D 1, unified 1; stream after 0"* ]]
		[ "${lines[-1]}" = "drvmisc: ok" ]
	done
}

@test "virtual memory management: reserve, create, map, access, remap, refused arguments" {
	for k in static shared; do
		run_prog $k vmm
		[ "$status" -eq 0 ]
		[[ "$output" == *"access: 3"* ]]
		[[ "$output" == *"retained the second: 1"* ]]
		# The bytes follow their allocation to its new address.
		local first second
		first=$(sed -n 's/^first: \([0-9a-f]*\) second: .*/\1/p' <<<"$output")
		second=$(sed -n 's/^first: [0-9a-f]* second: //p' <<<"$output")
		[ -n "$first" ] && [ "$first" != "$second" ]
		[[ "$output" == *"swapped: first $second second $first"* ]]
		# Reservations that meet: work across them is taken.
		[[ "$output" == *"memset across two reservations                   0"* ]]
		[ "${lines[-1]}" = "vmm: ok" ]
	done
}

@test "a thread with no current context: driver calls answer 201, a runtime call makes the primary context current" {
	for k in static shared; do
		run_prog $k noctx
		[ "$status" -eq 0 ]
		[[ "$output" == *"  current is NULL                            1"* ]]
		[[ "$output" == *"cuCtxGetDevice                               201"* ]]
		[[ "$output" == *"  it is the main thread's                    1"* ]]
		# Work on another thread's stream is done in its context.
		[[ "$output" == *"cuStreamSynchronize (its stream)             0"* ]]
		[[ "$output" == *"  the host function ran                      1"* ]]
		[[ "$output" == *"main: the worker's kernel ran 1"* ]]
		[[ "$output" == *"main: first byte 2"* ]]
		[ "${lines[-1]}" = "noctx: ok" ]
		# Every code as the H100's driver (580) answered it.
		printf '%s\n' "${lines[@]}" > "$BATS_TEST_TMPDIR/$k.out"
		diff -u "$BATS_TEST_DIRNAME/noctx.expected" "$BATS_TEST_TMPDIR/$k.out"
	done
}

@test "pointer attributes of every kind of memory (the GPU run compares them with the driver's)" {
	for k in static shared; do
		run_prog $k ptrattr
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "ptrattr: ok" ]
		# Mapped memory is host memory whose device pointer is itself.
		[[ "$output" == *"mapped    2: 1"* ]]
		[[ "$output" == *"mapped    3: itself"* ]]
		[[ "$output" == *"mapped   12: 4096"* ]]
		[[ "$output" == *"mapped   flags: CUDA_SUCCESS 2"* ]]
		[[ "$output" == *"mapped    4: itself"* ]]
		# So is small pinned memory, and its flags say mapped (UVA).
		[[ "$output" == *"pinned    3: itself"* ]]
		[[ "$output" == *"pinned   flags: CUDA_SUCCESS 2"* ]]
		# A module's global is device memory of the current context.
		[[ "$output" == *"global    2: 2"* ]]
		[[ "$output" == *"global    9: 0"* ]]
		[[ "$output" == *"global    1: current"* ]]
		[[ "$output" == *"device   all: CUDA_SUCCESS type 2 ordinal 0 managed 0"* ]]
		# The pool of a stream-ordered allocation, none for cuMemAlloc's.
		[[ "$output" == *"async    17: the default pool"* ]]
		[[ "$output" == *"device   17: null"* ]]
	done
}

@test "memory pools: create, attributes, allocation from a pool, trim, the device's current pool" {
	for k in static shared; do
		run_prog $k mempool
		[ "$status" -eq 0 ]
		[[ "$output" == *"in use after the free: 0 high >= 1 MiB: 1"* ]]
		[[ "$output" == *"cudaMallocAsync takes from it: 1"* ]]
		[[ "$output" == *"current is the default again: 1"* ]]
		[ "${lines[-1]}" = "mempool: ok" ]
	done
}

@test "pinread: page-locked memory read after each sync comes beside the sync (GLEAM_MAPPED_PREFETCH)" {
	for k in static shared; do
		GLEAM_STATS=$BATS_TEST_TMPDIR/on.yaml run_prog $k pinread
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "pinread: ok" ]
		[ "$(grep -c ': ok' <<<"$output")" -eq 6 ]
		local on=$output
		GLEAM_MAPPED_PREFETCH=0 GLEAM_STATS=$BATS_TEST_TMPDIR/off.yaml run_prog $k pinread
		[ "$status" -eq 0 ]
		[ "$output" = "$on" ]
		GLEAM_SYNC=1 run_prog $k pinread
		[ "$output" = "$on" ]
		# Off: each of the 101 reads after a sync fetches its block, a
		# round trip; the two streams' rounds fetch once each, since
		# the first stream's sync names the second idle (here it is:
		# its kernel ran at once), and the second's sync is answered
		# here.  On: none; the 101 blocks came beside their syncs (the
		# two streams' beside the first's, sent before its reply told
		# whether the other stream was done; the 4-byte buffer's 4
		# bytes each time, not its page), and one more: the 4 KiB
		# block the host read last, brought once at the first of the
		# small buffer's syncs and not read.
		grep -qx 'mapped_fetches: 101' "$BATS_TEST_TMPDIR/off.yaml"
		grep -qx 'mapped_bytes_prefetched: 0' "$BATS_TEST_TMPDIR/off.yaml"
		grep -qx 'mapped_fetches: 0' "$BATS_TEST_TMPDIR/on.yaml"
		grep -qx 'mapped_bytes_prefetched: 376872' "$BATS_TEST_TMPDIR/on.yaml"
		# The two small buffers' device sides: page-locked memory of
		# the server's, a call each (R_MEM_ALLOC_HOST).
		grep -qx '  cuMemHostAlloc: 2' "$BATS_TEST_TMPDIR/on.yaml"
		local fon foff
		fon=$(sed -n 's/^mapped_bytes_fetched: //p' "$BATS_TEST_TMPDIR/on.yaml")
		foff=$(sed -n 's/^mapped_bytes_fetched: //p' "$BATS_TEST_TMPDIR/off.yaml")
		[ "$fon" -eq $((foff + 4096)) ]
		# Faults: off, the 101 fetches and the host's one write.  On,
		# the blocks a copy wrote land readable (no fault: the copies'
		# 40 rounds and the small buffer's 10), those a kernel wrote
		# fault once each when read (40 + 10), and the write and the
		# read after the kernel that overwrote part of it (2).
		grep -qx 'mapped_faults: 102' "$BATS_TEST_TMPDIR/off.yaml"
		grep -qx 'mapped_faults: 52' "$BATS_TEST_TMPDIR/on.yaml"
		# With the replies' idle streams ignored, as where the other
		# stream is still busy: the two streams' prefetch beside the
		# first's sync is dropped (its blocks are fetched when read,
		# 10, and fault, 10 more), the second's sync waits.
		GLEAM_IDLE_STREAMS=0 GLEAM_STATS=$BATS_TEST_TMPDIR/busy.yaml run_prog $k pinread
		[ "$output" = "$on" ]
		grep -qx 'mapped_fetches: 10' "$BATS_TEST_TMPDIR/busy.yaml"
		grep -qx 'mapped_bytes_prefetched: 376872' "$BATS_TEST_TMPDIR/busy.yaml"
		grep -qx 'mapped_faults: 62' "$BATS_TEST_TMPDIR/busy.yaml"
	done
	GLEAM_IDLE_STREAMS=maybe run_prog static pinread
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"GLEAM_IDLE_STREAMS=maybe"*"1 it is"* ]]
	GLEAM_MAPPED_PREFETCH=lots run_prog static pinread
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"GLEAM_MAPPED_PREFETCH=lots"*"ignored"* ]]
	[ "${lines[-1]}" = "pinread: ok" ]
}

@test "pinwaits: a copy into page-locked memory is seen after every kind of wait, and a blocking one at once" {
	for k in static shared; do
		GLEAM_STATS=$BATS_TEST_TMPDIR/on.yaml run_prog $k pinwaits
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "pinwaits: ok" ]
		[ "$(grep -c ' ok$' <<<"$output")" -eq 7 ]
		local on=$output
		GLEAM_SYNC=1 run_prog $k pinwaits
		[ "$output" = "$on" ]
		GLEAM_MAPPED_PREFETCH=0 run_prog $k pinwaits
		[ "$output" = "$on" ]
		# The stream's and the device's synchronizations bring the
		# copy's block readable (18 of the 30 rounds, the blocking
		# copies' waits too); an event's synchronization and a query
		# leave it to be fetched when read (12).
		grep -qx 'mapped_fetches: 12' "$BATS_TEST_TMPDIR/on.yaml"
	done
}

@test "registered host memory mapped for the device: kernel writes seen after a sync, host writes seen by the next kernel" {
	for k in static shared; do
		run_prog $k hostreg
		[ "$status" -eq 0 ]
		[[ "$output" == *"host sees the kernel's writes: ok"* ]]
		# The device read what the host wrote last.
		local dev copy
		dev=$(sed -n "s/^device read the host's new bytes: //p" <<<"$output")
		copy=$(sed -n 's/^copied from registered memory: //p' <<<"$output")
		[ -n "$dev" ] && [ "$dev" = "$copy" ]
		[ "${lines[-1]}" = "hostreg: ok" ]
	done
}

@test "peer access refused on one device, peer copies as device-to-device copies, address ranges" {
	for k in static shared; do
		run_prog $k peer
		[ "$status" -eq 0 ]
		[[ "$output" == *"device 0 can access itself as a peer: 0"* ]]
		[[ "$output" == *"its base: +0 size >= pitch * 64: 1"* ]]
		[ "${lines[-1]}" = "peer: ok" ]
	done
}

@test "managed memory: one pointer for host and kernels, coherent at synchronizations and copies" {
	for k in static shared; do
		run_prog $k managed
		[ "$status" -eq 0 ]
		[[ "$output" == *"host read the kernel's writes: ok"* ]]
		[[ "$output" == *"host sees the copy: 1"* ]]
		[[ "$output" == *"pointer: type 3 device pointer is it 1 host pointer is it 1"* ]]
		[[ "$output" == *"small managed after a small allocation: 5 0"* ]]
		[ "${lines[-1]}" = "managed: ok" ]
	done
}

@test "large managed memory touched sparsely: bytes moved are the touched blocks" {
	# 60 MiB: below the size at which the client asks the server for
	# its own allocation, which the host backend places where this
	# process has its libraries (the host side must sit there too).
	for k in static shared; do
		GLEAM_STATS=$BATS_TEST_TMPDIR/$k.yaml run_prog $k managed_big 60 sparse
		[ "$status" -eq 0 ]
		[[ "$output" == *"kernel read the host's sparse writes: ok"* ]]
		[[ "$output" == *"host read the kernel's sparse writes: ok"* ]]
		[[ "$output" == *"untouched words are zero: 1"* ]]
		[ "${lines[-1]}" = "managed_big: ok" ]
		# 64 blocks of 64 KiB written, 66 read after the kernels.
		grep -qx 'mapped_bytes_pushed: 4194304' "$BATS_TEST_TMPDIR/$k.yaml"
		grep -qx 'mapped_bytes_fetched: 4325376' "$BATS_TEST_TMPDIR/$k.yaml"
	done
}

@test "managed memory with threads and the program's own SIGSEGV handlers" {
	for k in static shared; do
		run_prog $k managed_big 60
		[ "$status" -eq 0 ]
		[[ "$output" == *"own handler before: 1, its fault: 1"* ]]
		[[ "$output" == *"the old handler is the program's: 1"* ]]
		[[ "$output" == *"threads read their own writes: ok"* ]]
		[[ "$output" == *"other buffer: 4076"* ]]
		[[ "$output" == *"kernel read the threads' last writes: ok"* ]]
		[[ "$output" == *"own handler after: 1, its fault: 1, the first's: 1"* ]]
		[ "${lines[-1]}" = "managed_big: ok" ]
	done
}

@test "GLEAM_MAPPED_MAX bounds managed memory; a bad value is ignored with a warning" {
	GLEAM_MAPPED_MAX=32M run_prog static managed_big 60 sparse
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"GLEAM_MAPPED_MAX"* ]]
	[[ "$output" == *"cudaErrorMemoryAllocation"* ]]
	GLEAM_MAPPED_MAX=lots run_prog static managed_big 60 sparse
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"GLEAM_MAPPED_MAX=lots"*"ignored"* ]]
}

@test "arrays: copies in and out, descriptors, texture and surface objects, refused arguments" {
	for k in static shared; do
		run_prog $k arrays -r
		printf '%s\n' "${lines[@]}" >"$BATS_TEST_TMPDIR/$k.out"
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "arrays: ok" ]
	done
	# The same output from either cudart, and what the host backend
	# does: every copy, descriptor and code; no texel fetches (801).
	cmp "$BATS_TEST_TMPDIR/static.out" "$BATS_TEST_TMPDIR/shared.out"
	diff -u "$BATS_TEST_DIRNAME/arrays.expected" "$BATS_TEST_TMPDIR/static.out"
}

@test "greenctx: SM resources, splits, green contexts, their streams, kernels and events" {
	for k in static shared; do
		run_prog $k greenctx
		printf '%s\n' "${lines[@]}" >"$BATS_TEST_TMPDIR/$k.out"
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "greenctx: ok" ]
	done
	# The same output from either cudart, and what the host backend
	# does: 132 SMs split in groups of multiples of 8.
	cmp "$BATS_TEST_TMPDIR/static.out" "$BATS_TEST_TMPDIR/shared.out"
	diff -u "$BATS_TEST_DIRNAME/greenctx.expected" "$BATS_TEST_TMPDIR/static.out"
}

@test "texref: texture and surface references, sparse arrays, refused arguments" {
	for k in static shared; do
		run_prog $k texref -r
		printf '%s\n' "${lines[@]}" >"$BATS_TEST_TMPDIR/$k.out"
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "texref: ok" ]
	done
	# The same output from either cudart, and what the host backend
	# does: a created reference's state and codes; no PTX loaded (its
	# kernels: "launch skipped"), no sparse arrays.
	cmp "$BATS_TEST_TMPDIR/static.out" "$BATS_TEST_TMPDIR/shared.out"
	diff -u "$BATS_TEST_DIRNAME/texref.expected" "$BATS_TEST_TMPDIR/static.out"
}

@test "gleam-run -o writes the call statistics" {
	run -0 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -O "$BATS_TEST_TMPDIR/s.yaml" -- "$CUDA_BIN/static/vecadd"
	grep -q '^program: vecadd$' "$BATS_TEST_TMPDIR/s.yaml"
	grep -Eq '^round_trips: [1-9][0-9]*$' "$BATS_TEST_TMPDIR/s.yaml"
	grep -Eq '^  cuLaunchKernel: 1$' "$BATS_TEST_TMPDIR/s.yaml"
	grep -Eq '^  (cuMemcpyHtoD|cacheHtoD): [1-9]' "$BATS_TEST_TMPDIR/s.yaml"
	# Round trips by call: they sum to round_trips, each with its time.
	local rt sum
	grep -qx "server: $SERVE_ADDR" "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx 'error: null' "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx 'exit: 0' "$BATS_TEST_TMPDIR/s.yaml"
	rt=$(sed -n 's/^round_trips: //p' "$BATS_TEST_TMPDIR/s.yaml")
	sum=$(awk '/^round_trip_calls:/ { on = 1; next } /^[^ ]/ { on = 0 }
	    on { n += $2 } END { print n + 0 }' "$BATS_TEST_TMPDIR/s.yaml")
	[ "$sum" -eq "$rt" ]
	# The result's copy back (over the bulk lanes on a host of 8 CPUs).
	sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/s.yaml" |
	    grep -Eqx '  (cuMemcpyDtoH|lanesDtoH): 1'
	sed -n '/^round_trip_s:/,$p' "$BATS_TEST_TMPDIR/s.yaml" |
	    grep -Eq '^  (cuMemcpyDtoH|lanesDtoH): 0\.[0-9]{6}$'
}

@test "a module's function table is kept for the next run, which loads it one-way" {
	export XDG_CACHE_HOME=$BATS_TEST_TMPDIR/xdg
	run -0 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -O "$BATS_TEST_TMPDIR/1.yaml" -- \
	    "$CUDA_BIN/static/vecadd"
	local f
	f=$(ls "$XDG_CACHE_HOME"/gleam/ftab/*)
	[ -s "$f" ]
	run -0 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -O "$BATS_TEST_TMPDIR/2.yaml" -- \
	    "$CUDA_BIN/static/vecadd"
	local a b
	a=$(sed -n 's/^round_trips: //p' "$BATS_TEST_TMPDIR/1.yaml")
	b=$(sed -n 's/^round_trips: //p' "$BATS_TEST_TMPDIR/2.yaml")
	echo "round trips: $a, then $b" >&2
	[ "$b" -lt "$a" ]
	# A damaged table is ignored (a round trip again) and written anew.
	printf 'GLFTAB1\0junk' >"$f"
	run -0 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -O "$BATS_TEST_TMPDIR/3.yaml" -- \
	    "$CUDA_BIN/static/vecadd"
	[ "$(sed -n 's/^round_trips: //p' "$BATS_TEST_TMPDIR/3.yaml")" -gt "$b" ]
	[ "$(head -c 8 "$f" | od -An -c | tr -d ' ')" = 'GLFTAB1\0' ]
	[ "$(stat -c %s "$f")" -gt 40 ]
	# GLEAM_CACHE=0: no table is read or kept.
	rm -rf "$XDG_CACHE_HOME"
	GLEAM_CACHE=0 run -0 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$CUDA_BIN/static/vecadd"
	[ ! -d "$XDG_CACHE_HOME/gleam/ftab" ]
}

@test "gleam-run -v prints a summary at exit" {
	run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -v -s "$SERVE_ADDR" -- "$CUDA_BIN/shared/vecadd"
	[[ "$stderr" == *"gleam: vecadd: "*" round trips, "*" bytes sent"* ]]
}

@test "an unreachable server: a CUDA error at once, naming the server" {
	# gleam-run checks first: the program does not run.
	run -125 --separate-stderr timeout 30 "$GLEAM_BIN/gleam-run" -s 127.0.0.1:1 -- "$CUDA_BIN/static/vecadd"
	[ "$stderr" = "gleam-run: cannot use server 127.0.0.1:1: Connection refused" ]
	# The library alone: cuInit's error, a line saying what to check, and
	# the reason in the statistics.
	SECONDS=0
	run --separate-stderr timeout 30 env LD_PRELOAD="${GLEAM_PRELOAD:+$GLEAM_PRELOAD:}$(cd "${GLEAM_LIBDIR:-$GLEAM_BIN/../lib}" && pwd)/libcuda.so.1" \
	    GLEAM_SERVER=127.0.0.1:1 GLEAM_STATS="$BATS_TEST_TMPDIR/s.yaml" "$CUDA_BIN/static/vecadd"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"gleam: cannot use server 127.0.0.1:1: Connection refused (check that gleam-serve runs there"* ]]
	[ "$SECONDS" -le 5 ]
	grep -qx 'server: 127.0.0.1:1' "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx "error: 'cannot use server 127.0.0.1:1: Connection refused'" "$BATS_TEST_TMPDIR/s.yaml"
	grep -qx 'exit: 2' "$BATS_TEST_TMPDIR/s.yaml"
}

@test "a server without a CUDA backend: a CUDA error naming the reason" {
	printf 'backend: none\n' >"$BATS_TEST_TMPDIR/none.yaml"
	serve_stop
	serve_start -c "$BATS_TEST_TMPDIR/none.yaml"
	run --separate-stderr timeout 30 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$CUDA_BIN/static/vecadd"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"this server runs no CUDA backend (disabled)"* ]]
}

@test "a client killed mid-run leaves the server serving others" {
	# Not resumable: its session ends at once (a resumable one waits for
	# the window: resume.bats).
	# (soak runs for 30 s: still running when killed; threads, which
	# this used, sometimes ended within the 0.3 s.)
	GLEAM_RESUME=0 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$CUDA_BIN/static/soak" 30 16 >/dev/null 2>&1 3>&- &
	BG_PID=$!
	sleep 0.3
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=
	run_prog static vecadd
	[ "$status" -eq 0 ]
	# vecadd's own session ends as its last bytes (BYE) reach the
	# server, a moment after the program exits: the probe may see it
	# still there at first; the killed one must be gone.
	probe_until "nclients: 1" || true
	[[ "$output" == *"nclients: 1"* ]]
}

@test "gleam-serve -v: a session's end says where its time in the backend went, by call" {
	serve_kill
	serve_start -c "$SERVE_CONF" -v
	run_prog static oneway
	[ "$status" -eq 0 ]
	local i
	for i in $(seq 1 100); do
		grep -q '(oneway): closed' "$SERVE_LOG" && break
		sleep 0.05
	done
	grep '(oneway): [0-9.]* s, [0-9.]* s in calls: .*cuLaunchKernel 300 [0-9.]* ms (max [0-9]* us)' "$SERVE_LOG" ||
	    { cat "$SERVE_LOG"; false; }
}

@test "each client is served by a worker process: one that dies takes no other client with it" {
	# What a kernel fault or a crash in the driver does to a process is
	# what kill -9 does to the worker here: only its client notices.
	serve_kill
	serve_start -c "$SERVE_CONF" -v
	"$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$CUDA_BIN/static/soak" 20 16 \
	    >"$BATS_TEST_TMPDIR/a" 2>&1 3>&- &
	BG_PID=$!
	"$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$CUDA_BIN/static/vecadd" \
	    >"$BATS_TEST_TMPDIR/b" 2>&1 3>&- &
	local b=$! w= i killed=
	# The soak's worker, alive (the newest one the log names): killed.
	for i in $(seq 1 200); do
		w=$(sed -n 's/.*(soak): remoting in process \([0-9]*\)$/\1/p' "$SERVE_LOG" | tail -n 1)
		if [ -n "$w" ] && kill -9 "$w" 2>/dev/null; then
			killed=1
			break
		fi
		sleep 0.05
	done
	[ -n "$killed" ] || { cat "$SERVE_LOG" "$BATS_TEST_TMPDIR/a"; false; }
	wait "$BG_PID" && rc=0 || rc=$?
	BG_PID=
	[ "$rc" -ne 0 ]
	wait "$b"
	grep -q "gleam: server $SERVE_ADDR lost" "$BATS_TEST_TMPDIR/a"
	run_prog static vecadd
	[ "$status" -eq 0 ]
	grep -q "its worker was killed by signal 9" "$SERVE_LOG"
	kill -0 "$SERVE_PID"
}

@test "isolation: thread serves clients on threads of the server" {
	serve_kill
	{ cat "$SERVE_CONF"; echo 'isolation: thread'; } >"$BATS_TEST_TMPDIR/t.yaml"
	serve_start -c "$BATS_TEST_TMPDIR/t.yaml"
	run_prog static vecadd
	[ "$status" -eq 0 ]
	[ -z "$(pgrep -P "$SERVE_PID")" ]
}

@test "a server that demands a key: the calls in sealed records, the same output as without, both isolations" {
	make_key "$BATS_TEST_TMPDIR/key"
	local p iso nth=0
	local -a want
	for p in vecadd memcpy printf; do
		run_prog static $p
		[ "$status" -eq 0 ]
		want[$nth]=$output
		nth=$((nth + 1))
	done
	for iso in process thread; do
		serve_kill
		{ cat "$SERVE_CONF"; echo "isolation: $iso"; } >"$BATS_TEST_TMPDIR/k.yaml"
		serve_start -c "$BATS_TEST_TMPDIR/k.yaml" -k "$BATS_TEST_TMPDIR/key"
		nth=0
		for p in vecadd memcpy printf; do
			run --separate-stderr timeout 120 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
			    -k "$BATS_TEST_TMPDIR/key" -- "$CUDA_BIN/static/$p"
			[ "$status" -eq 0 ]
			# (Threads print the device's output on the server's.)
			[ $p = printf ] && [ $iso = thread ] || [ "$output" = "${want[$nth]}" ]
			nth=$((nth + 1))
		done
		# Large device-to-host copies, received straight into place
		# once their records authenticated.
		GLEAM_DEBUG=4 GLEAM_CACHE=0 run -0 --separate-stderr timeout 120 "$GLEAM_BIN/gleam-run" \
		    -s "$SERVE_ADDR" -k "$BATS_TEST_TMPDIR/key" -- "$CUDA_BIN/static/cacheload" -m 64
		[ "${lines[-1]}" = "cacheload: ok" ]
		[[ "$stderr" == *"bytes straight to their place"* ]]
		if grep "authenticate" "$SERVE_LOG"; then false; fi
	done
}

@test "the remoting connection's records: frames cut across records either way; a bad record ends it, logged" {
	command -v python3 >/dev/null || skip "python3 not installed"
	run -0 python3 - "$SERVE_PORT" <<-'PY'
	import os, socket, struct, sys
	port = int(sys.argv[1])
	def frame(t, p, i=0, f=0): return struct.pack("<IHHQ", len(p), t, f, i) + p
	def rec(b, kind=0, ack=0, n=None):
	    return struct.pack("<IHHQ", len(b) if n is None else n, kind, 0, ack) + b
	class C:
	    def __init__(self):
	        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
	        self.plain = b""
	        self.s.sendall(frame(1, struct.pack("<IHHI", 0x314D4C47, 2, 2, 0) + os.urandom(32) + b"\0\0"))
	        for want in (2, 4):	# CHALLENGE, WELCOME: before the records
	            h = self.get(16); t = struct.unpack("<IHHQ", h)[1]; self.get(struct.unpack("<I", h[:4])[0])
	            assert t == want, t
	    def get(self, n):
	        b = b""
	        while len(b) < n:
	            k = self.s.recv(n - len(b))
	            if not k: raise EOFError
	            b += k
	        return b
	    def frame(self):
	        while True:
	            if len(self.plain) >= 16:
	                n, t, f, i = struct.unpack("<IHHQ", self.plain[:16])
	                if len(self.plain) >= 16 + n:
	                    p = self.plain[16:16 + n]; self.plain = self.plain[16 + n:]
	                    return t, f, i, p
	            h = self.get(16)
	            n, kind, z, ack = struct.unpack("<IHHQ", h)
	            assert kind == 0 and z == 0
	            self.plain += self.get(n)
	    def closed(self):
	        try:
	            while self.s.recv(65536): pass
	        except ConnectionResetError: pass
	        return True
	# The stream cut anywhere: one byte a record, then big and empty ones.
	c = C()
	blob = os.urandom(300000)
	data = frame(256, struct.pack("<I", 0), 1) + frame(16, blob, 2) + frame(16, b"x", 3)
	out = b"".join(rec(data[k:k + 1]) for k in range(40))
	out += rec(b"") + rec(data[40:200000]) + rec(b"") + rec(data[200000:])
	c.s.sendall(out)
	t, f, i, p = c.frame(); assert (t, i) == (256, 1) and struct.unpack("<I", p[:4])[0] == 0, (t, i, p[:4])
	t, f, i, p = c.frame(); assert (t, i, p) == (16, 2, blob)
	t, f, i, p = c.frame(); assert (t, i, p) == (16, 3, b"x")
	print("cut: ok")
	# A record of a kind not defined: the end.
	c.s.sendall(rec(frame(16, b"y", 4), kind=5))
	print("kind:", c.closed())
	# Too long a record, an acknowledgement of what was never sent.
	for bad in (rec(b"", n=0xffffffff), rec(frame(16, b"z", 5), ack=1 << 40)):
	    c = C()
	    c.s.sendall(rec(frame(256, struct.pack("<I", 0), 1)))
	    assert c.frame()[0] == 256
	    c.s.sendall(bad)
	    print("bad:", c.closed())
	PY
	[ "${lines[*]}" = "cut: ok kind: True bad: True bad: True" ]
	sleep 0.2
	grep -q "record of unknown kind 5, closing" "$SERVE_LOG"
	grep -q "record of 4294967295 bytes, closing" "$SERVE_LOG"
	grep -q "acknowledgement of 1099511627776 bytes out of order, closing" "$SERVE_LOG"
}

# tamper_proxy DIR: relays 127.0.0.1:$PROXY_PORT to the server, changing
# one bit in the middle of the first record of 64 KiB or more that goes in
# direction DIR (s2c or c2s) after the handshake (of a key).
tamper_proxy() {
	python3 - "$SERVE_PORT" "$1" "$BATS_TEST_TMPDIR/proxy.port" <<-'PY' 3>&- &
	import socket, struct, sys, threading
	sport, mode, pf = int(sys.argv[1]), sys.argv[2], sys.argv[3]
	ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
	open(pf, "w").write(str(ls.getsockname()[1]))
	def pump(src, dst, tamper):
	    try: relay(src, dst, tamper)
	    except OSError: pass
	    for x in (src, dst): x.close()
	def relay(src, dst, tamper):
	    buf = b""; frames = True; done = False; off = 0
	    while True:
	        d = src.recv(1 << 20)
	        if not d: return
	        if tamper and not done:
	            buf += d
	            # Walk frames until AUTH or WELCOME, then records' headers.
	            while True:
	                if len(buf) - off < 16: break
	                n, t = struct.unpack("<IH", buf[off:off + 6])
	                if frames:
	                    if len(buf) - off < 16 + n: break
	                    off += 16 + n
	                    frames = t not in (3, 4)	# AUTH, WELCOME
	                    continue
	                if n >= 1 << 16:
	                    if len(buf) < off + 16 + n // 2 + 1: break
	                    buf = bytearray(buf); buf[off + 16 + n // 2] ^= 1; buf = bytes(buf)
	                    done = True
	                    break
	                if len(buf) - off < 16 + n: break
	                off += 16 + n
	            if done or off > 0:
	                k = len(buf) if done else off
	                dst.sendall(buf[:k]); buf = buf[k:]; off = 0
	            continue
	        dst.sendall(d)
	while True:	# gleam-run's check first, then the program
	    a, _ = ls.accept(); b = socket.create_connection(("127.0.0.1", sport))
	    threading.Thread(target=pump, args=(a, b, mode == "c2s"), daemon=True).start()
	    threading.Thread(target=pump, args=(b, a, mode == "s2c"), daemon=True).start()
	PY
	PROXY_PID=$!
	local n=0
	while [ ! -s "$BATS_TEST_TMPDIR/proxy.port" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
	PROXY_PORT=$(cat "$BATS_TEST_TMPDIR/proxy.port")
}

@test "a sealed record changed on the way: the connection ends, the program gets an error, never the bytes" {
	command -v python3 >/dev/null || skip "python3 not installed"
	make_key "$BATS_TEST_TMPDIR/key"
	serve_kill
	serve_start -c "$SERVE_CONF" -k "$BATS_TEST_TMPDIR/key"
	local dir
	for dir in s2c c2s; do
		rm -f "$BATS_TEST_TMPDIR/proxy.port"
		tamper_proxy $dir
		GLEAM_CACHE=0 run --separate-stderr timeout 60 "$GLEAM_BIN/gleam-run" \
		    -s "127.0.0.1:$PROXY_PORT" -k "$BATS_TEST_TMPDIR/key" -- "$CUDA_BIN/static/cacheload" -m 16
		{ kill "$PROXY_PID" && wait "$PROXY_PID"; } 2>/dev/null || true
		echo "$dir: $status: $stderr"
		[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
		[[ "$output" != *"cacheload: ok"* ]]
		if [ $dir = s2c ]; then
			[[ "$stderr" == *"gleam: server 127.0.0.1:$PROXY_PORT lost: record "*" does not authenticate (tampered with, replayed or forged)"* ]]
		else
			grep -q "does not authenticate (tampered with, replayed or forged), closing" "$SERVE_LOG"
		fi
	done
}

@test "the server killed mid-run: the program gets a CUDA error within seconds" {
	"$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$CUDA_BIN/static/threads" \
	    >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	BG_PID=$!
	sleep 0.3
	kill -9 "$SERVE_PID"
	SERVE_PID=
	SECONDS=0
	wait "$BG_PID" && rc=0 || rc=$?
	BG_PID=
	[ "$SECONDS" -le 5 ]
	# Either it had finished (rare) or it failed cleanly naming the server.
	[ "$rc" -eq 0 ] || grep -q "gleam: server $SERVE_ADDR lost" "$BATS_TEST_TMPDIR/out"
}

@test "the server killed during large device-to-host copies: a CUDA error, no hang" {
	# cacheload reads 256 MiB back in pieces that the client receives
	# straight into the program's buffer; the server dies at some point
	# of it (or of the load before it).
	[ -x "$CUDA_BIN/static/cacheload" ] || skip "no cacheload"
	for d in 0.5 1 1.5 2; do
		serve_kill
		serve_start -c "$SERVE_CONF"
		GLEAM_CACHE=0 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
		    "$CUDA_BIN/static/cacheload" -m 256 \
		    >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
		BG_PID=$!
		sleep "$d"
		kill -9 "$SERVE_PID"
		SERVE_PID=
		SECONDS=0
		wait "$BG_PID" && rc=0 || rc=$?
		BG_PID=
		echo "# killed after $d s: rc $rc: $(tail -n 1 "$BATS_TEST_TMPDIR/out")" >&3
		[ "$SECONDS" -le 5 ]
		# Done, or a clean error naming the server (lost, or gone
		# before the program connected).
		[ "$rc" -eq 0 ] || grep -Eq "gleam: (server $SERVE_ADDR lost|cannot use server $SERVE_ADDR)" "$BATS_TEST_TMPDIR/out"
	done
}

@test "allocations are one-way, never overlap, and run out of memory where cudaMalloc would" {
	# Copies go whole: the allocations are what is looked at.  No pool
	# peak from an earlier run: the first run grows its pool as it goes.
	export GLEAM_CACHE=0 XDG_CACHE_HOME=$BATS_TEST_TMPDIR/xdg
	for k in static shared; do
		run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
		    -O "$BATS_TEST_TMPDIR/on.yaml" -- "$CUDA_BIN/$k/pool"
		[ "${lines[-1]}" = "pool: ok" ]
		on=("${lines[@]}")
		GLEAM_POOL=0 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" \
		    -s "$SERVE_ADDR" -o "$BATS_TEST_TMPDIR/off.yaml" -- "$CUDA_BIN/$k/pool"
		[ "${lines[*]}" = "${on[*]}" ]
		# 600 allocations: a few round trips to grow the stock, none
		# for cuMemAlloc; without the pool, one each.
		rt=$(sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/on.yaml")
		[[ "$rt" != *"cuMemAlloc:"* ]]
		# A sync after a new allocation and a copy into it: answered here.
		[ "$(sed -n 's/^local_syncs: //p' "$BATS_TEST_TMPDIR/on.yaml")" -ge 19 ]
		pools=$(echo "$rt" | sed -n 's/^  memPool: //p')
		echo "memPool round trips: $pools" >&2
		[ "$pools" -ge 1 ] && [ "$pools" -le 8 ]
		# The next run starts with the stock this one needed at most,
		# asked for as the context came up: it waits for fewer (it
		# still trims its stock when half is freed, and grows it again).
		[ "$(ls "$XDG_CACHE_HOME"/gleam/pool-* | wc -l)" -eq "$([ $k = static ] && echo 1 || echo 2)" ]
		run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
		    -O "$BATS_TEST_TMPDIR/again.yaml" -- "$CUDA_BIN/$k/pool"
		[ "${lines[*]}" = "${on[*]}" ]
		rt=$(sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/again.yaml")
		again=$(echo "$rt" | sed -n 's/^  memPool: //p')
		echo "memPool round trips, again: $again" >&2
		[ "${again:-0}" -lt "$pools" ]
		# A damaged peak file is ignored and written anew (the file is
		# the library's, whatever the cudart: once is enough).
		if [ $k = static ]; then
			f=$(ls -t "$XDG_CACHE_HOME"/gleam/pool-* | head -n 1)
			printf 'gleam-pool 1\n0 junk\n-3 5\n99999 1\n' >"$f"
			run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
			    -- "$CUDA_BIN/$k/pool"
			[ "${lines[*]}" = "${on[*]}" ]
			grep -Eqx '0 [0-9]+' "$f"
			head -c 3000 /dev/urandom >"$f"
			run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" \
			    -- "$CUDA_BIN/$k/pool"
			[ "${lines[*]}" = "${on[*]}" ]
			[ "$(head -n 1 "$f")" = "gleam-pool 1" ]
		fi
		rt=$(sed -n '/^round_trip_calls:/,/^round_trip_s:/p' "$BATS_TEST_TMPDIR/off.yaml")
		[ "$(echo "$rt" | sed -n 's/^  cuMemAlloc: //p')" -ge 600 ]
		[[ "$rt" != *"memPool"* ]]
		# The 16 GiB of the host backend end at the same allocation,
		# with cudaMalloc's error there, and come back when freed.
		run -0 --separate-stderr "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
		    "$CUDA_BIN/$k/pool" oom
		on=("${lines[@]}")
		[ "${lines[0]}" = "allocation after 341 of 48 MiB: cudaErrorMemoryAllocation" ]
		[ "${lines[-1]}" = "pool: ok" ]
		GLEAM_POOL=0 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" \
		    -s "$SERVE_ADDR" -- "$CUDA_BIN/$k/pool" oom
		[ "${lines[*]}" = "${on[*]}" ]
	done
}

# lanes_run NAME LANES: memcpy through the server with GLEAM_LANES (both
# ways), the weight cache off (its copies go by name); statistics in
# NAME.yaml.
lanes_run() {
	GLEAM_CACHE=0 GLEAM_LANES=$2 run --separate-stderr timeout 120 \
	    "$GLEAM_BIN/gleam-run" -s "${3:-$SERVE_ADDR}" \
	    -O "$BATS_TEST_TMPDIR/$1.yaml" -- "$CUDA_BIN/shared/memcpy"
}

# lanes_ok NAME N: the last lanes_run NAME succeeded with N lanes.
lanes_ok() {
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "memcpy: ok" ]
	grep -q "^lanes: $2\$" "$BATS_TEST_TMPDIR/$1.yaml"
}

@test "bulk lanes: the same bytes as over the main connection, the copies' bytes on the lanes both ways" {
	lanes_run main 0
	[ "$status" -eq 0 ]
	local main=$output
	grep -q '^lanes: 0$' "$BATS_TEST_TMPDIR/main.yaml"
	grep -q '^lane_bytes: 0$' "$BATS_TEST_TMPDIR/main.yaml"
	lanes_run lanes 4
	[ "$status" -eq 0 ]
	[ "$output" = "$main" ]
	[ "${lines[-1]}" = "memcpy: ok" ]
	grep -q '^lanes: 4$' "$BATS_TEST_TMPDIR/lanes.yaml"
	# Every H2D copy of 3 MiB + 5 bytes into cudaMalloc'd memory.
	grep -Eq '^lane_bytes: [1-9][0-9]{6,}$' "$BATS_TEST_TMPDIR/lanes.yaml"
	grep -Eq '^  lanesHtoD: [1-9]' "$BATS_TEST_TMPDIR/lanes.yaml"
	grep -Eq '^  lanesDtoH: [1-9]' "$BATS_TEST_TMPDIR/lanes.yaml"
}

@test "bulk lanes with isolation: thread, and two lanes" {
	serve_kill
	{ cat "$SERVE_CONF"; echo 'isolation: thread'; } >"$BATS_TEST_TMPDIR/t.yaml"
	serve_start -c "$BATS_TEST_TMPDIR/t.yaml"
	lanes_run lanes 2
	lanes_ok lanes 2
	grep -Eq '^  lanesDtoH: [1-9]' "$BATS_TEST_TMPDIR/lanes.yaml"
	# With GLEAM_LANES_DTOH=0 copies come back the main way.
	GLEAM_CACHE=0 GLEAM_LANES=2 GLEAM_LANES_DTOH=0 run -0 --separate-stderr "$GLEAM_BIN/gleam-run" \
	    -s "$SERVE_ADDR" -o "$BATS_TEST_TMPDIR/up.yaml" -- "$CUDA_BIN/static/memcpy"
	[ "${lines[-1]}" = "memcpy: ok" ]
	grep -Eq '^  lanesHtoD: [1-9]' "$BATS_TEST_TMPDIR/up.yaml"
	! grep -q 'lanesDtoH' "$BATS_TEST_TMPDIR/up.yaml"
}

@test "bulk lanes: through a proxy (gleam-link) only when resumable, none from a server with lanes: 0, a bad GLEAM_LANES warned of" {
	"$GLEAM_BIN/gleam-link" -v -l 127.0.0.1:0 "$SERVE_ADDR" 2>"$BATS_TEST_TMPDIR/link.log" 3>&- &
	BG_PID=$!
	local lport
	lport=$(wait_listen "$BATS_TEST_TMPDIR/link.log" "$BG_PID")
	# A resumable session's lanes go where its main connection went.
	lanes_run proxy 4 "127.0.0.1:$lport"
	lanes_ok proxy 4
	[ "$(grep -c ': closed' "$BATS_TEST_TMPDIR/link.log")" -ge 5 ]
	# Other lanes go straight to the server's port: not around a proxy.
	GLEAM_RESUME=0 lanes_run direct 4 "127.0.0.1:$lport"
	lanes_ok direct 0
	lanes_run bad 17
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"GLEAM_LANES=17"*"no lanes"* ]]
	grep -q '^lanes: 0$' "$BATS_TEST_TMPDIR/bad.yaml"
	serve_kill
	{ cat "$SERVE_CONF"; echo 'lanes: 0'; } >"$BATS_TEST_TMPDIR/n.yaml"
	serve_start -c "$BATS_TEST_TMPDIR/n.yaml"
	lanes_run refused 4
	lanes_ok refused 0
}

@test "bulk lanes: a client killed amid copies over its lanes leaves the server serving others" {
	# memcpy over and over, killed a moment in: somewhere among its copies.
	# A process group of its own, so that the kill reaches its memcpy
	# and no other test's (the tests run in parallel).
	GLEAM_CACHE=0 GLEAM_LANES=4 setsid bash -c 'while :; do "$1" -s "$2" -- "$3"; done' \
	    _ "$GLEAM_BIN/gleam-run" "$SERVE_ADDR" "$CUDA_BIN/static/memcpy" \
	    >/dev/null 2>&1 3>&- &
	BG_PID=$!
	sleep 1.5
	kill -KILL -- "-$BG_PID"
	wait "$BG_PID" 2>/dev/null || true
	BG_PID=
	lanes_run after 4
	lanes_ok after 4
	kill -0 "$SERVE_PID"
}

@test "SIGTERM with a client still running: it is served until drain_timeout, then the server exits cleanly" {
	serve_kill
	printf 'backend: host\nhost_kernels: %s\ndrain_timeout: 1s\n' "$HOST_KERNELS" \
	    >"$BATS_TEST_TMPDIR/drain.yaml"
	serve_start -c "$BATS_TEST_TMPDIR/drain.yaml" -v
	# 100 rounds 100 ms apart: 10 s, well past the drain's second.
	timeout 60 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- "$CUDA_BIN/static/migrate" 100 100 \
	    >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	BG_PID=$!
	wait_for "remoting in process" "$SERVE_LOG" 100
	sleep 0.3
	kill -TERM "$SERVE_PID"
	# The session is not cut at the signal (it was, as "the client
	# reconnected", when the server closed its resume channel).
	sleep 0.5
	! grep -q "reconnected" "$SERVE_LOG"
	wait_for "still connected after 1 s" "$SERVE_LOG" 100
	local rc=0
	wait "$SERVE_PID" || rc=$?
	SERVE_PID=
	[ "$rc" -eq 0 ]
	grep -q "exiting" "$SERVE_LOG"
	# The program was cut off at the drain's end: an error, no hang.
	rc=0
	wait "$BG_PID" || rc=$?
	BG_PID=
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
}

# printf_expected: what printf.cu prints in a local run.
printf_expected() {
	local k i
	printf '%s\n' "host: start" "host: launched hello" \
	    "dev: hello 7 2.500 literal" "host: after cudaDeviceSynchronize"
	for i in 0 1 2 3; do echo "dev: round 1 block $i of 4, 32 threads"; done
	printf '%s\n' "host: after round 1" "host: round 2 queued on a stream"
	for i in 0 1 2 3; do echo "dev: round 2 block $i of 4, 64 threads"; done
	printf '%s\n' "host: after cudaStreamSynchronize" "host: event recorded" \
	    "dev: hello 8 0.250 literal" "host: after cudaEventSynchronize" \
	    "host: before a blocking copy" "dev: hello 9 -1.500 literal" \
	    "host: after a blocking copy, turn 4"
	for k in 1 2 3 4; do
		for ((i = 0; i < 8000; i++)); do
			printf 'dev: spew %d line %05d value %08x\n' $k $i \
			    $(( ((k * 2654435761) ^ (i * 40503)) & 0xffffffff ))
		done
		echo "host: spew $k done"
	done
	printf '%s\n' "host: before cudaDeviceReset" "dev: hello 10 1000.000 literal" \
	    "host: after cudaDeviceReset" "printf: ok"
}

@test "device printf reaches the program's stdout where a local run has it, over 1 MiB of it too" {
	printf_expected >"$BATS_TEST_TMPDIR/expected"
	[ "$(wc -c <"$BATS_TEST_TMPDIR/expected")" -gt 1048576 ]
	for k in static shared; do
		# Into a file: fully buffered, as in tests/gpu/run.
		timeout 120 "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
		    "$CUDA_BIN/$k/printf" >"$BATS_TEST_TMPDIR/out" \
		    2>"$BATS_TEST_TMPDIR/err"
		cmp "$BATS_TEST_TMPDIR/expected" "$BATS_TEST_TMPDIR/out"
		# Nothing of the server's log reaches the program.
		[ ! -s "$BATS_TEST_TMPDIR/err" ]
	done
	# GLEAM_SYNC=1, into a pipe: the same bytes.
	GLEAM_SYNC=1 run_prog static printf
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$BATS_TEST_TMPDIR/expected")" ]
}

@test "a device assert: its message on the program's stderr, cudaErrorAssert sticky" {
	for k in static shared; do
		run_prog $k assert
		[ "$status" -eq 0 ]
		[ "${lines[0]}" = "launch                       0 cudaSuccess" ]
		[ "${lines[1]}" = "host: before sync" ]
		[ "${lines[2]}" = "dev: checking 8 values" ]
		[ "${lines[3]}" = "sync after the assert        710 cudaErrorAssert" ]
		[ "${lines[4]}" = "sync again                   710 cudaErrorAssert" ]
		[ "${lines[-1]}" = "assert: ok" ]
		[ "$stderr" = "tests/cuda/assert.cu:35: void check_vals(const unsigned int *, int): block: [0,0,0], thread: [5,0,0] Assertion \`p[i] != 3u\` failed." ]
	done
	# The server logs it, and serves the next client.
	grep -q "device assert, context lost" "$SERVE_LOG"
	run_prog static vecadd
	[ "$status" -eq 0 ]
}

@test "isolation: thread: device printf goes to the server's stdout" {
	serve_kill
	{ cat "$SERVE_CONF"; echo 'isolation: thread'; } >"$BATS_TEST_TMPDIR/t.yaml"
	SERVE_LOG=$BATS_TEST_TMPDIR/serve.log
	"$GLEAM_BIN/gleam-serve" -D -c "$BATS_TEST_TMPDIR/t.yaml" -l 127.0.0.1:0 \
	    >"$BATS_TEST_TMPDIR/serve.out" 2>"$SERVE_LOG" 3>&- &
	SERVE_PID=$!
	SERVE_PORT=$(wait_listen "$SERVE_LOG" "$SERVE_PID")
	SERVE_ADDR=127.0.0.1:$SERVE_PORT
	run_prog static assert
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "assert: ok" ]
	[[ "$output" != *"dev: checking"* ]]
	[ -z "$stderr" ]
	grep -qx "dev: checking 8 values" "$BATS_TEST_TMPDIR/serve.out"
	grep -q "Assertion \`p\[i\] != 3u\` failed" "$SERVE_LOG"
}

@test "modules from files: cuModuleLoad, cuLibraryLoadFromFile, enumeration, globals, attributes" {
	for k in static shared; do
		run_prog $k modules
		[ "$status" -eq 0 ]
		[ "${lines[0]}" = "missing file: error 301" ]
		[ "${lines[2]}" = "library from a missing file: error 301" ]
		[[ "$output" == *"fatbin: g_bias 4 bytes, 7"* ]]
		[[ "$output" == *"cubin: g_bias 4 bytes, 7"* ]]
		[[ "$output" == *"library: g_bias 4 bytes, 7"* ]]
		[[ "$output" == *"fatbin: mk_ functions enumerated 3"* ]]
		# cuFFT's private table: a module's functions through slot 7.
		[[ "$output" == *"fatbin: cuFFT's table: size word 792, [7] answers the count 1, gave each once 1"* ]]
		[[ "$output" == *"cubin: cuFFT's table: size word 792, [7] answers the count 1, gave each once 1"* ]]
		[[ "$output" == *"library: mk_ kernels enumerated 3"* ]]
		# No JIT compiler on the host backend.
		[[ "$output" == *"ptx: load 221"* ]]
		# JIT options: the fat binary loads and runs, broken PTX has
		# no compiler to fail in.
		[[ "$output" == *"ex fatbin: load 0, error log nonempty 0, error size <= buffer 1"* ]]
		[[ "$output" == *"ex fatbin mk_add: 0 wrong"* ]]
		[[ "$output" == *"ex broken ptx: skipped, no JIT compiler (error 221)"* ]]
		[[ "$output" == *"library ex fatbin mk_add: 0 wrong"* ]]
		[[ "$output" == *"library ex broken ptx: skipped, no JIT compiler (error 221)"* ]]
		# The library's module and a kernel's function.
		[[ "$output" == *"library module: 0"* ]]
		[[ "$output" == *"library module mk_add: 0 wrong"* ]]
		[[ "$output" == *"library module: g_bias 4 bytes, 7"* ]]
		[[ "$output" == *"library module: missing function: error 500"* ]]
		[[ "$output" == *"kernel's function: module 0, the library's 1"* ]]
		[[ "$output" == *"kernel's function: name mk_add"* ]]
		[ "${lines[-1]}" = "modules: ok" ]
	done
}

@test "the JIT linker: the host backend has none, and says so" {
	for k in static shared; do
		run_prog $k jitlink
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "jitlink: skipped, no JIT compiler (error 221)" ]
	done
}

@test "cuOccupancyMaxPotentialBlockSize runs the program's callback here" {
	for k in static shared; do
		run_prog $k occupancy
		[ "$status" -eq 0 ]
		[ "${lines[-3]}" = "NULL minGridSize: error 1" ]
		[ "${lines[-1]}" = "occupancy: ok" ]
	done
}

@test "profiler control with no profiler: answered locally" {
	for k in static shared; do
		run_prog $k profiler
		[ "$status" -eq 0 ]
		[ "${lines[0]}" = "cudaProfilerStart: 0" ]
		[[ "$output" == *"cuProfilerInitialize: 801"* ]]
		[ "${lines[-1]}" = "profiler: ok" ]
	done
}

@test "stream memory operations: waits and writes of 32- and 64-bit values" {
	for k in static shared; do
		run_prog $k streammem
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "streammem: ok" ]
	done
}

@test "stream queries answered here: flags, priority, device, context, ids" {
	for k in static shared; do
		run_prog $k streaminfo
		[ "$status" -eq 0 ]
		[[ "$output" == *"CU_STREAM_LEGACY       codes 0 0 0 0 0 0 0 flags 0 priority 0 device 0 ctx current yes v2 ctx current yes green NULL yes id stable yes"* ]]
		[[ "$output" == *"non-blocking           codes 0 0 0 0 0 0 0 flags 1 priority 0 device 0"* ]]
		[[ "$output" == *"driver id classes: 0 0 2 3 4 5 6 3"* ]]
		[[ "$output" == *"ptsz id classes: 0 1 0 3 4 5 6 3"* ]]
		[ "${lines[-1]}" = "streaminfo: ok" ]
	done
}

@test "nullsweep: every driver function with zero arguments, with each the address of zeros, with typed bad arguments gives a code: no crash, no hang" {
	local names=$BATS_TEST_DIRNAME/../../lib/client/ref/libcuda-exports.txt
	local protos=$BATS_TEST_DIRNAME/../../lib/client/gen/entry-points.h
	# Under ASan: a huge size is an allocation that fails (as without
	# it), and the objects a child leaves are the program's.
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:allocator_may_return_null=1
	# Thousands of short processes: at the lowest priority, two at a
	# time, so that the timed tests of the bats file run beside this one
	# (make check runs two at once) keep their CPU.
	sweep() {
		run --separate-stderr nice -n 19 timeout 120 \
		    "$GLEAM_BIN/gleam-run" -s "$SERVE_ADDR" -- \
		    "$CUDA_BIN/shared/nullsweep" -j 2 "$@"
	}
	# Under the sanitizers (make asan: GLEAM_PRELOAD) the zero sweeps are
	# left out (the page and typed ones reach their paths and more): a
	# child costs ten times as much there.
	if [ -z "${GLEAM_PRELOAD:-}" ]; then
		sweep "$names"
		[ "$status" -eq 0 ]
		[[ "${lines[-1]}" =~ ^nullsweep:\ [0-9]+\ functions,\ 0\ crashed\ or\ hung$ ]]
		[[ "$output" == *"cuInit: 0"* ]]
		[[ "$output" == *"cuDeviceGet: 3"* ]]
		sweep -c "$names"
		[ "$status" -eq 0 ]
		[[ "${lines[-1]}" =~ ^nullsweep:\ [0-9]+\ functions\ with\ a\ context,\ 0\ crashed\ or\ hung$ ]]
		[[ "$output" == *"cuCtxGetDevice: 1"* ]]
		[[ "$output" != *"no context"* ]]
		# The 580 driver's codes for these, seen by tests/gpu/run nullsweep
		# on an H100: NULL freed, handles before outputs, NULL contexts.
		local want
		for want in "cuMemFreeHost: 0" "cuMemFreeAsync: 0" \
		    "cuTexObjectDestroy: 0" "cuMemcpyPeer: 0" "cuCtxDestroy_v2: 1" \
		    "cuCtxRecordEvent: 201" "cuStreamEndCapture: 401" \
		    "cuDevicePrimaryCtxSetFlags: 708" "cuMemHostUnregister: 1" \
		    "cuEventElapsedTime: 400" "cuArrayGetDescriptor_v2: 400" \
		    "cuModuleGetFunction: 400" "cuTexRefGetFlags: 400" \
		    "cuStreamWriteValue32_v2: 1" "cuFuncGetParamInfo: 1" \
		    "cuStreamWaitValue32: 801" "cuStreamBatchMemOp: 801"; do
			[[ "$output" == *"$want"* ]] || { echo "missing: $want"; false; }
		done
	fi
	# The host pointer a copy's destination and its size: an error, not
	# the library reading past the program's buffer.
	sweep -c -p "$names"
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == *"arguments in memory, 0 crashed or hung" ]]
	[[ "$output" == *"cuMemcpyHtoD_v2: 1"* ]]
	[[ "$output" == *"cuMemcpy: 1"* ]]
	# Typed: real objects, then each pointer NULL, each handle junk (not
	# under the sanitizers, for time: a junk handle is refused by a
	# lookup, no memory touched).
	if [ -z "${GLEAM_PRELOAD:-}" ]; then
		sweep -g -t "$protos"
	else
		sweep -t "$protos"
	fi
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" =~ ^nullsweep:\ [0-9]+\ calls\ with\ a\ context,\ typed\ arguments,\ 0\ crashed\ or\ hung$ ]]
	[[ "$output" != *"no objects"* ]]
	[[ "$output" == *"cuStreamSynchronize: 0"* ]]
	[[ "$output" == *"cuMemcpyDtoH_v2 ints: 0"* ]]
	[[ "$output" == *"cuMemcpyDtoH_v2 null#0: 1"* ]]
	if [ -z "${GLEAM_PRELOAD:-}" ]; then
		[[ "$output" == *"cuStreamSynchronize junk#0: 400"* ]]
		[[ "$output" == *"cuMemcpyHtoD_v2 junk#0: 1"* ]]
	fi
}
