#!/usr/bin/env python3
# Writes the generated seeds (seed-*) of fuzz_remote, fuzz_wcache,
# fuzz_lanes and fuzz_client under tests/fuzz/corpus/, in each target's
# input format (see its comment).  fuzz_remote's calls are named as in
# lib/common/rpc.h, their numbers read from its enum, so the seeds follow
# the table when it changes.  Run from the repository's root.
import re
import struct

src = open("lib/common/rpc.h").read()
body = src[src.index("enum rpc_call {"):src.index("R_CALL_END")]
names = re.findall(r"^\s*(R_[A-Z0-9_]+)[,\s=]", body, re.M)
call = {n: i for i, n in enumerate(names)}


def Q(v):
    return struct.pack("<Q", v)


def I(v):
    return struct.pack("<I", v & 0xffffffff)


def B(b):
    return I(len(b)) + b


def S(s):
    return struct.pack("<H", len(s)) + s


def P(i, off=0):
    # fuzz_remote's stand-in for the i-th pointer a reply gave
    return b"GLPTR" + bytes([i, off]) + b"\0"


def frame(name, payload, flags=0):
    return bytes([call[name], flags]) + struct.pack("<H", len(payload)) + \
        payload


def seed(*frames):
    return b"\x01" + b"".join(frames)


# An SM resource as the host backend makes it: type 1, its own fields
# (magic, first SM, split), 132 SMs in groups of 8.
SMRES = (I(1) + I(0x53524c47) + I(0) + I(0) + bytes(80) + I(132) + I(8) +
         I(8) + bytes(36))

ctx = frame("R_CTX_CREATE", Q(1) + I(0) + I(0))
alloc = frame("R_MEM_ALLOC", Q(1) + Q(4096))
seeds = {
    "memory": seed(
        ctx, alloc,
        frame("R_MEM_HTOD", Q(1) + Q(0) + I(0) + P(0) + B(b"x" * 64)),
        frame("R_MEM_DTOH", Q(1) + Q(0) + I(0) + P(0, 8) + Q(64)),
        frame("R_MEMSET", Q(1) + Q(0) + I(0) + P(0) + Q(0) + I(7) + I(1) +
              Q(128) + Q(1)),
        frame("R_MEM_DTOD", Q(1) + Q(0) + I(0) + P(0, 128) + P(0) + Q(64)),
        frame("R_MEM_FREE", Q(1) + P(0)),
        frame("R_MEM_FREE", Q(1) + P(0)),
        frame("R_MEM_DTOH", Q(1) + Q(0) + I(0) + P(0) + Q(64)),
        frame("R_MEM_FREE", Q(1) + Q(0x1234)),
        frame("R_CTX_DESTROY", Q(1)),
        frame("R_MEM_ALLOC", Q(1) + Q(4096))),
    "sizes": seed(
        ctx, alloc,
        frame("R_MEM_ALLOC", Q(1) + Q(1 << 62)),
        frame("R_MEM_ALLOC", Q(1) + Q(0)),
        frame("R_MEM_HTOD", Q(1) + Q(0) + I(0) + P(0, 255) + B(b"y" * 4000)),
        frame("R_MEM_DTOH", Q(1) + Q(0) + I(0) + P(0) + Q(1 << 40)),
        frame("R_MEMSET", Q(1) + Q(0) + I(0) + P(0) + Q(4096) + I(0) + I(4) +
              Q(4096) + Q(4096)),
        frame("R_MEM_ALLOC_PITCH", Q(1) + Q(100) + Q(100) + I(3)),
        frame("R_MEM_ALLOC_HOST", Q(1) + Q(0)),
        frame("R_MEM_ALLOC_HOST", Q(1) + Q(1 << 62)),
        frame("R_MEM_GET_INFO", Q(1))),
    "oneway": seed(
        ctx, alloc,
        frame("R_MEM_HTOD", Q(1) + Q(0) + I(1) + P(0) + B(b"z" * 32), 0x04),
        frame("R_MEM_HTOD", Q(1) + Q(9) + I(1) + P(0) + B(b"z" * 32), 0x04),
        frame("R_MEM_FREE", Q(1) + Q(77), 0x04),
        frame("R_CTX_SYNC", Q(1))),
    "streams": seed(
        ctx,
        frame("R_STREAM_CREATE", Q(1) + Q(10) + I(0) + I(0)),
        frame("R_EVENT_CREATE", Q(1) + Q(20) + I(0)),
        frame("R_EVENT_RECORD", Q(1) + Q(20) + Q(10)),
        frame("R_STREAM_WAIT_EVENT", Q(1) + Q(10) + Q(20) + I(0)),
        frame("R_EVENT_SYNC", Q(20)),
        frame("R_EVENT_ELAPSED", Q(20) + Q(20)),
        frame("R_STREAM_SYNC", Q(1) + Q(10)),
        frame("R_STREAM_DESTROY", Q(10)),
        frame("R_STREAM_SYNC", Q(1) + Q(10)),
        frame("R_EVENT_DESTROY", Q(20)),
        frame("R_EVENT_DESTROY", Q(20))),
    "primary": seed(
        frame("R_PRIMARY_RETAIN", Q(5) + I(0)),
        frame("R_PRIMARY_RETAIN", Q(5) + I(0)),
        frame("R_MEM_ALLOC", Q(5) + Q(256)),
        frame("R_PRIMARY_RELEASE", Q(5)),
        frame("R_PRIMARY_RESET", Q(5)),
        frame("R_PRIMARY_RELEASE", Q(5)),
        frame("R_MEM_FREE", Q(5) + P(0))),
    "modules": seed(
        ctx,
        frame("R_STAGE_PUT", Q(30) + Q(0) + B(b"\x7fELF" + b"\0" * 60)),
        frame("R_STAGE_PUT", Q(30) + Q(64) + B(b"\0" * 64)),
        frame("R_MODULE_LOAD", Q(1) + Q(30) + B(b"")),
        frame("R_MODULE_LOAD", Q(1) + Q(31) + B(b"// ptx\n.version 8.0\n")),
        frame("R_MODULE_GET_FUNC", Q(31) + Q(32) + S(b"_Z3addPfS_i")),
        frame("R_MODULE_GET_GLOBAL", Q(31) + S(b"g")),
        frame("R_LAUNCH", Q(1) + Q(32) + I(1) + I(1) + I(1) + I(1) + I(1) +
              I(1) + I(0) + Q(0) + I(0) + B(b"")),
        frame("R_MODULE_UNLOAD", Q(31)),
        frame("R_MODULE_UNLOAD", Q(31))),
    "cache": seed(
        ctx, alloc,
        frame("R_MODEL", S(b"fuzz-model")),
        frame("R_CACHE_HAVE", B(b"\0" * 32)),
        frame("R_CACHE_PUT", B(b"\1" * 32) + Q(0) + Q(4) + B(b"abcd")),
        frame("R_CACHE_HTOD", Q(1) + Q(0) + I(0) + P(0) + B(b"\1" * 32) +
              Q(4)),
        frame("R_CACHE_IMAGE", Q(40) + B(b"\1" * 32) + Q(4)),
        frame("R_MODULE_LOAD", Q(1) + Q(40) + B(b""))),
    "graph": seed(
        ctx,
        frame("R_STREAM_CREATE", Q(1) + Q(10) + I(0) + I(0)),
        frame("R_CAPTURE_BEGIN", Q(1) + Q(10) + I(0) + Q(50)),
        frame("R_CAPTURE_END", Q(1) + Q(10) + I(0)),
        frame("R_GRAPH_CREATE", Q(51) + I(0)),
        frame("R_GRAPH_INSTANTIATE", Q(1) + Q(51) + Q(52) + Q(0) + Q(0)),
        frame("R_GRAPH_LAUNCH", Q(1) + Q(52) + Q(10)),
        frame("R_GEXEC_DESTROY", Q(52)),
        frame("R_GRAPH_DESTROY", Q(51)),
        frame("R_GRAPH_DESTROY", Q(50))),
    "graphnodes": seed(
        ctx, alloc,
        frame("R_GRAPH_CREATE", Q(51) + I(0)),
        # a memory allocation node (RPC_SIG_MEMALLOC), one with a broken
        # access blob, one with an address given
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(10) + B(b"") +
              B(Q(0) + Q(4096) + I(1) + I(0) + I(1) + I(0) +
                B(I(1) + I(0) + I(3)))),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(10) + B(b"") +
              B(Q(0) + Q(4096) + I(1) + I(0) + I(1) + I(0) + B(b"12345"))),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(10) + B(b"") +
              B(Q(0x1000) + Q(64) + I(1) + I(0) + I(1) + I(0) + B(b""))),
        frame("R_NODE_GET", Q(51) + Q(1)),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(2) + B(Q(1)) +
              B(Q(1) + Q(0) + I(1) + P(0) + Q(0) + I(7) + I(1) + Q(128) +
                Q(1))),
        frame("R_NODE_SET", Q(51) + Q(0) + Q(2) + I(2) +
              B(Q(1) + Q(0) + I(1) + P(0) + Q(0) + I(9) + I(1) + Q(64) +
                Q(1))),
        frame("R_NODE_SET", Q(51) + Q(0) + Q(2) + I(0) + B(b"")),
        frame("R_NODE_GET", Q(51) + Q(2)),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(11) + B(Q(2)) + B(Q(0x1234))),
        frame("R_GRAPH_INSTANTIATE", Q(1) + Q(52) + Q(51) + Q(0) + Q(0)),
        frame("R_NODE_ENABLED", Q(52) + Q(51) + Q(2) + I(1) + I(0)),
        frame("R_NODE_ENABLED", Q(52) + Q(51) + Q(2) + I(0) + I(0)),
        frame("R_NODE_ENABLED", Q(52) + Q(51) + Q(2) + I(2) + I(9)),
        frame("R_GRAPH_LAUNCH", Q(1) + Q(52) + Q(0)),
        frame("R_GRAPH_MEM", I(0) + I(0) + I(0) + Q(0)),
        frame("R_GRAPH_MEM", I(0) + I(1) + I(0) + Q(0)),
        frame("R_GRAPH_MEM", I(7) + I(3) + I(0) + Q(0)),
        frame("R_GRAPH_CLONE", Q(53) + Q(51)),
        frame("R_NODE_FIND", Q(53) + Q(51) + Q(2)),
        frame("R_NODE_FIND", Q(51) + Q(51) + Q(2)),
        frame("R_NODE_FIND", Q(53) + Q(51) + Q(99)),
        frame("R_GRAPH_DESTROY", Q(53)),
        frame("R_GEXEC_DESTROY", Q(52)),
        frame("R_GRAPH_DESTROY", Q(51))),
    "hostfuncs": seed(
        ctx,
        frame("R_STREAM_CREATE", Q(1) + Q(10) + I(0) + I(0)),
        frame("R_GRAPH_CREATE", Q(51) + I(0)),
        # host nodes: a callback id, none (0), a request too short
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(4) + B(b"") +
              B(Q(1) + Q(0) + Q(7))),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(4) + B(Q(1)) +
              B(Q(1) + Q(0) + Q(0))),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(4) + B(b"") + B(Q(1))),
        frame("R_NODE_GET", Q(51) + Q(1)),
        frame("R_NODE_SET", Q(51) + Q(0) + Q(1) + I(4) +
              B(Q(1) + Q(0) + Q(8))),
        frame("R_GRAPH_INSTANTIATE", Q(1) + Q(52) + Q(51) + Q(0) + Q(0)),
        frame("R_NODE_SET", Q(51) + Q(52) + Q(1) + I(4) +
              B(Q(1) + Q(0) + Q(9))),
        frame("R_GRAPH_LAUNCH", Q(1) + Q(52) + Q(10)),
        # on a stream, captured, on no stream of the client's
        frame("R_HOST_FUNC", Q(1) + Q(10) + Q(5)),
        frame("R_CAPTURE_BEGIN", Q(1) + Q(10) + I(0) + Q(54)),
        frame("R_HOST_FUNC", Q(1) + Q(10) + Q(6)),
        frame("R_CAPTURE_END", Q(1) + Q(10) + I(1)),
        frame("R_HOST_FUNC", Q(1) + Q(99) + Q(6)),
        frame("R_HOST_FUNC", Q(1) + Q(10) + Q(0)),
        frame("R_GEXEC_DESTROY", Q(52)),
        frame("R_GRAPH_DESTROY", Q(54)),
        frame("R_GRAPH_DESTROY", Q(51))),
    "capdeps": seed(
        ctx,
        frame("R_STREAM_CREATE", Q(1) + Q(10) + I(0) + I(0)),
        frame("R_STREAM_CREATE", Q(1) + Q(11) + I(0) + I(0)),
        # attributes: a set, its get, a copy, a length that is wrong,
        # an attribute that is not a stream's, a special stream
        frame("R_STREAM_ATTR", Q(1) + Q(10) + I(1) + I(3) + Q(0) +
              B(I(2))),
        frame("R_STREAM_ATTR", Q(1) + Q(10) + I(0) + I(3) + Q(0) + B(b"")),
        frame("R_STREAM_ATTR", Q(1) + Q(11) + I(2) + I(0) + Q(10) + B(b"")),
        frame("R_STREAM_ATTR", Q(1) + Q(10) + I(1) + I(1) + Q(0) +
              B(Q(0))),
        frame("R_STREAM_ATTR", Q(1) + Q(10) + I(0) + I(2) + Q(0) + B(b"")),
        frame("R_STREAM_ATTR", Q(1) + Q(0) + I(0) + I(8) + Q(0) + B(b"")),
        # a capture into a graph after its node, its ends read, set,
        # added to, with a node of no graph, with edge data
        frame("R_GRAPH_CREATE", Q(51) + I(0)),
        frame("R_GRAPH_ADD", Q(0) + Q(51) + I(5) + B(b"") + B(b"")),
        frame("R_CAPTURE_TO_GRAPH", Q(1) + Q(10) + I(0) + Q(51) +
              B(Q(1)) + B(b"")),
        frame("R_CAPTURE_DEPS", Q(1) + Q(10) + I(0) + B(b"") + B(b"")),
        frame("R_CAPTURE_DEPS", Q(1) + Q(10) + I(2) + B(Q(1)) + B(b"")),
        frame("R_CAPTURE_DEPS", Q(1) + Q(10) + I(1) + B(Q(1)) + B(b"")),
        frame("R_CAPTURE_DEPS", Q(1) + Q(10) + I(1) + B(Q(77)) + B(b"")),
        frame("R_CAPTURE_DEPS", Q(1) + Q(10) + I(2) + B(Q(1)) +
              B(b"\x01" + b"\x00" * 7)),
        frame("R_CAPTURE_DEPS", Q(1) + Q(10) + I(3) + B(b"") + B(b"")),
        frame("R_CAPTURE_END", Q(1) + Q(10) + I(1)),
        frame("R_CAPTURE_DEPS", Q(1) + Q(10) + I(2) + B(Q(1)) + B(b"")),
        frame("R_CAPTURE_TO_GRAPH", Q(1) + Q(10) + I(0) + Q(51) +
              B(Q(99)) + B(b"")),
        frame("R_GRAPH_DESTROY", Q(51))),
    "condnodes": seed(
        ctx, alloc,
        frame("R_GRAPH_CREATE", Q(51) + I(0)),
        # a condition, an if node of two bodies (ids 61, 62), a node in
        # a body, a size the driver refuses, an id in use, no handle
        frame("R_COND_HANDLE", Q(1) + Q(51) + I(1) + I(1)),
        frame("R_COND_HANDLE", Q(1) + Q(51) + I(0) + I(4)),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(13) + B(b"") +
              B(Q(0x6c00000000000001) + I(0) + I(2) + B(Q(61) + Q(62)))),
        frame("R_GRAPH_ADD", Q(0) + Q(61) + I(5) + B(b"") + B(b"")),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(13) + B(b"") +
              B(Q(0x6c00000000000001) + I(1) + I(2) + B(Q(63) + Q(64)))),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(13) + B(b"") +
              B(Q(0x6c00000000000001) + I(2) + I(1) + B(Q(61)))),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(13) + B(b"") +
              B(Q(0) + I(0) + I(1) + B(Q(65)))),
        # a child node, its graph named, named again, set
        frame("R_GRAPH_CREATE", Q(52) + I(0)),
        frame("R_GRAPH_ADD", Q(0) + Q(51) + I(4) + B(b"") + B(Q(52))),
        frame("R_CHILD_GRAPH", Q(51) + Q(2) + Q(70)),
        frame("R_CHILD_GRAPH", Q(51) + Q(2) + Q(71)),
        frame("R_NODE_SET", Q(51) + Q(0) + Q(2) + I(4) + B(Q(52))),
        frame("R_NODE_SET", Q(51) + Q(0) + Q(2) + I(4) + B(I(52))),
        # a batch node: a write, then none
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(12) + B(b"") +
              B(Q(1) + Q(0) + I(0) + B(I(2) + I(0) + P(0) + Q(7)))),
        frame("R_GRAPH_ADD", Q(1) + Q(51) + I(12) + B(b"") +
              B(Q(1) + Q(0) + I(0) + B(b""))),
        # kernel node attributes of a node that is none
        frame("R_KNODE_ATTR", Q(51) + Q(1) + I(1) + I(2) + Q(0) + Q(0) +
              B(I(1))),
        frame("R_KNODE_ATTR", Q(51) + Q(1) + I(0) + I(12) + Q(0) + Q(0) +
              B(b"")),
        # user objects: made, held by the graph, released, its graph gone
        frame("R_UOBJ_CREATE", Q(1)),
        frame("R_UOBJ_CREATE", Q(1)),
        frame("R_GRAPH_UOBJ", Q(51) + Q(1) + I(2) + I(1)),
        frame("R_GRAPH_UOBJ", Q(51) + Q(1) + I(3) + I(0)),
        frame("R_UOBJ_RELEASE", Q(1)),
        frame("R_UOBJ_RELEASE", Q(1)),
        frame("R_GRAPH_INSTANTIATE", Q(1) + Q(53) + Q(51) + Q(0) + Q(0)),
        frame("R_GRAPH_LAUNCH", Q(1) + Q(53) + Q(0)),
        frame("R_GRAPH_DESTROY", Q(61)),
        frame("R_GRAPH_DESTROY", Q(51)),
        frame("R_GEXEC_DESTROY", Q(53)),
        frame("R_GRAPH_ADD", Q(0) + Q(61) + I(5) + B(b"") + B(b""))),
    "vmm": seed(
        ctx,
        frame("R_VMM_RESERVE", Q(1) + Q(2 << 20) + Q(0) + Q(0) + Q(0)),
        frame("R_VMM_CREATE", Q(1) + Q(60) + Q(2 << 20) + Q(0) + I(0) +
              I(0) + I(0) + I(0) + I(0) + I(0) + I(0)),
        frame("R_VMM_MAP", Q(1) + P(0) + Q(2 << 20) + Q(0) + Q(60) + Q(0)),
        frame("R_VMM_UNMAP", Q(1) + P(0) + Q(2 << 20)),
        frame("R_VMM_RELEASE", Q(1) + Q(60)),
        frame("R_VMM_FREE", Q(1) + P(0) + Q(2 << 20))),
    "devquery": seed(
        ctx,
        frame("R_EVENT_CREATE", Q(1) + Q(70) + I(0)),
        frame("R_CTX_OP", Q(1) + I(0) + Q(70) + I(0) + I(0)),
        frame("R_CTX_OP", Q(1) + I(1) + Q(71) + I(0) + I(0)),
        frame("R_CTX_OP", Q(1) + I(3) + Q(0) + I(0) + I(100)),
        frame("R_DEV_QUERY", I(0) + I(0) + B(I(0x20) + I(4))),
        frame("R_DEV_QUERY", I(2) + I(0) + B(I(9) + I(10) + I(99))),
        frame("R_DEV_QUERY", I(1) + I(0) + B(I(0) + I(1))),
        frame("R_DEV_QUERY", I(2) + I(0) + B(b"\1\2\3"))),
    "greenctx": seed(
        ctx,
        # the device's SMs, a split by count (a query, two groups and the
        # remainder), a structured one, descriptors, a green context with
        # a stream and events, its resources, its end
        frame("R_DEV_RESOURCE", I(0) + I(0) + Q(0) + Q(0) + I(1)),
        frame("R_DEV_RESOURCE", I(1) + I(0) + Q(1) + Q(0) + I(0)),
        frame("R_SM_SPLIT", I(0) + I(0) + I(0) + I(16) + B(SMRES) +
              B(b"") + I(0)),
        frame("R_SM_SPLIT", I(0) + I(2) + I(0) + I(16) + B(SMRES) +
              B(b"") + I(3)),
        frame("R_SM_SPLIT", I(1) + I(2) + I(0) + I(0) + B(SMRES) +
              B(I(16) + I(8) + bytes(56) + I(0) + I(8) + bytes(56)) +
              I(3)),
        frame("R_RES_DESC", Q(80) + B(SMRES)),
        frame("R_RES_DESC", Q(81) + B(b"")),
        frame("R_GREEN_CREATE", Q(82) + Q(80) + I(0) + I(1)),
        frame("R_GREEN_CREATE", Q(83) + Q(80) + I(0) + I(0)),
        frame("R_GREEN_STREAM", Q(82) + Q(84) + I(1) + I(0)),
        frame("R_DEV_RESOURCE", I(2) + I(0) + Q(82) + Q(0) + I(1)),
        frame("R_DEV_RESOURCE", I(3) + I(0) + Q(82) + Q(84) + I(1)),
        frame("R_EVENT_CREATE", Q(82) + Q(85) + I(0)),
        frame("R_CTX_OP", Q(82) + I(4) + Q(85) + I(0) + I(0)),
        frame("R_CTX_OP", Q(1) + I(5) + Q(85) + I(0) + I(0)),
        frame("R_CTX_DESTROY", Q(82)),
        frame("R_GREEN_DESTROY", Q(82)),
        frame("R_GREEN_DESTROY", Q(82))),
    "texref": seed(
        ctx,
        # a created reference: setters, a pitched binding, getters, an
        # op and a border of the wrong sizes, destroyed twice
        frame("R_TEXREF_NEW", Q(1) + Q(80) + Q(0) + I(0) + S(b"")),
        frame("R_TEXREF_NEW", Q(1) + Q(81) + Q(0) + I(1) + S(b"x")),
        frame("R_TEXREF_SET", Q(80) + I(4) + I(0) + Q(0x20) + Q(1) +
              B(b"")),
        frame("R_TEXREF_SET", Q(80) + I(5) + I(2) + Q(3) + Q(0) + B(b"")),
        frame("R_TEXREF_SET", Q(80) + I(5) + I(3) + Q(1) + Q(0) + B(b"")),
        frame("R_TEXREF_SET", Q(80) + I(11) + I(0) + Q(0) + Q(0) +
              B(I(0x3f800000) * 4)),
        frame("R_TEXREF_SET", Q(80) + I(11) + I(0) + Q(0) + Q(0) +
              B(I(0) * 3)),
        frame("R_MEM_ALLOC_PITCH", Q(1) + Q(128) + Q(16) + I(4)),
        frame("R_TEXREF_SET", Q(80) + I(3) + I(0) + P(0) + Q(512) +
              B(Q(32) + Q(16) + I(0x20) + I(1))),
        frame("R_TEXREF_SET", Q(80) + I(2) + I(0) + P(0) + Q(1 << 40) +
              B(b"")),
        frame("R_TEXREF_GET", Q(80) + I(11) + I(0)),
        frame("R_TEXREF_GET", Q(80) + I(2) + I(0)),
        frame("R_TEXREF_GET", Q(80) + I(3) + I(0)),
        frame("R_TEXREF_GET", Q(80) + I(13) + I(0)),
        frame("R_TEXREF_DESTROY", Q(80)),
        frame("R_TEXREF_DESTROY", Q(80)),
        # an array: its sparse properties, a tile mapped, no entries
        frame("R_ARRAY_CREATE", Q(1) + Q(82) + Q(64) + Q(64) + Q(0) +
              I(0x20) + I(1) + I(0) + I(0)),
        frame("R_ARRAY_SPARSE", Q(82) + I(0)),
        frame("R_ARRAY_SPARSE", Q(82) + I(2)),
        frame("R_MAP_ARRAY", Q(1) + Q(0) + B(I(0) + Q(82) + I(0) +
              I(0) * 5 + I(64) + I(64) + I(1) + I(0) + Q(0) + Q(0) +
              I(1) + I(2) + Q(60) + Q(0) + I(1) + I(0))),
        frame("R_MAP_ARRAY", Q(1) + Q(0) + B(b""))),
    "echo-bye": seed(
        bytes([255, 0, 3, 0]) + b"abc",
        bytes([254, 0, 0, 0]),
        ctx),
}

def write(target, seeds):
    for name, data in seeds.items():
        open("tests/fuzz/corpus/%s/seed-%s" % (target, name), "wb").write(
            data)


write("remote", seeds)

# fuzz_wcache: struct chdr (op, pad, tenant, hash, len), struct chgpu.
GET, PUT, PIN, MODEL, GGET, GPUT, GHIT, GMOVE = range(1, 9)


def chdr(op, hash=b"", n=0, tenant=b"nokey"):
    return bytes([op]) + b"\0" * 7 + tenant.ljust(24, b"\0")[:24] + \
        hash.ljust(16, b"\0")[:16] + Q(n)


def chgpu(dev, asize):
    return struct.pack("<iIQ", dev, 0, asize)


MiB2 = 2 << 20
write("wcache", {
    "put-get": chdr(MODEL, n=5) + b"model" + chdr(PUT, n=4) + b"abcd" +
    chdr(PIN) + chdr(GET) + chdr(GET, b"\x55" * 16, 4),
    "gpu": chdr(PUT, n=8) + b"12345678" + chdr(GPUT, n=MiB2) +
    chgpu(0, MiB2) + chdr(GGET, n=MiB2) + chgpu(0, 0) + chdr(GHIT, n=9) +
    chdr(GMOVE, n=9) + chdr(GGET, b"\1" * 16, MiB2) + chgpu(3, 0),
    "tenant": chdr(PUT, n=3, tenant=b"../../x") + b"xyz" +
    chdr(GET, tenant=b"k0123456789abcdef"),
    "bad": chdr(PUT, b"\7" * 16, 3) + b"xyz" + chdr(GPUT, n=1) +
    chgpu(-1, 0) + chdr(99),
    "pins": b"".join(chdr(PIN, bytes([i]) * 16) for i in range(1, 20)),
})

# fuzz_lanes: flags, the copy's length less one (u16), each lane's bytes.


def lanes(fl, length, *per):
    return bytes([fl]) + struct.pack("<H", length - 1) + \
        b"".join(struct.pack("<H", len(b)) + b for b in per)


hello = b"GLLN" + I(0) + b"\0" * 16
write("lanes", {
    "one-clear": lanes(0x60, 100, b"a" * 100),
    "four-sealed": lanes(0x73, 20000, *[bytes([65 + i]) * 5000
                                        for i in range(4)]),
    "sixteen": lanes(0x6f, 65536, *[b"z" * 4096] * 16),
    "hello-only": lanes(0x21, 10, b"", b""),
    "raw-hello": lanes(0x00, 10, hello + b"\0" * 16 + b"junk"),
    "raw-dup": lanes(0x01, 10, hello, hello),
    "one-more": lanes(0xe1, 8192, b"x" * 4096, b"y" * 4096),
})

# fuzz_client: flags, the handshake, the waiters, then frames.


def hdr(length, typ, flags, id):
    return struct.pack("<IHHQ", length, typ, flags, id)


def fr(typ, flags, id, payload):
    return hdr(len(payload), typ, flags, id) + payload


def challenge(version=2, max_frame=1 << 20):
    return fr(2, 1, 0, struct.pack("<HH", version, 0) + b"\1" * 32 +
              S(b"fuzz") + I(max_frame))


def welcome(features=b""):
    return fr(4, 1, 0, struct.pack("<H", 0) + b"\0" * 32 + Q(9) + features)


def error(code, text):
    return fr(5, 1, 0, I(code) + S(text))


def waiters(*ws):
    return bytes([len(ws)]) + b"".join(
        bytes([call[c], kind]) + struct.pack("<I", n)[:3] for c, kind, n in ws)


R = 256                 # MSG_REMOTE_FIRST
REPLY, ONEWAY = 1, 4


def client(fl, hs, ws, *frames):
    return bytes([fl]) + struct.pack("<H", len(hs)) + hs + ws + \
        b"".join(frames)


big = 70000
w3 = waiters(("R_MEM_ALLOC", 0, 0), ("R_MEM_DTOH", 1, 16),
             ("R_MEM_DTOH", 3, 8))
write("client", {
    "replies": client(0x20, b"", w3,
                      fr(R + call["R_MEM_ALLOC"], REPLY, 1, I(0) + Q(0x1000)),
                      fr(R + call["R_MEM_DTOH"], REPLY, 2, I(0) + B(b"d" * 16)),
                      fr(R + call["R_MEM_DTOH"], REPLY, 3, I(0) + B(b"e" * 8)),
                      fr(R + call["R_MEM_ALLOC"], REPLY, 99, I(0))),
    "small-records": client(0x13 | 0x20, b"", w3,
                            fr(R + call["R_MEM_DTOH"], REPLY, 2,
                               I(0) + B(b"d" * 16)),
                            fr(R + call["R_MEM_ALLOC"], REPLY, 1, I(2))),
    "direct": client(0x20, b"", waiters(("R_MEM_DTOH", 1, big)),
                     fr(R + call["R_MEM_DTOH"], REPLY, 1,
                        I(0) + B(b"D" * big))),
    "direct-short": client(0x20, b"", waiters(("R_MEM_DTOH", 1, big)),
                           fr(R + call["R_MEM_DTOH"], REPLY, 1,
                              I(0) + B(b"D" * (big - 1)))),
    "oneway-output": client(0x20, b"", waiters(("R_CTX_SYNC", 0, 0)),
                            fr(R + call["R_MEM_HTOD"], REPLY | ONEWAY, 7,
                               I(700)),
                            fr(21, 0, 0, bytes([1]) + I(3) + b"hi\n"),
                            fr(R + call["R_CTX_SYNC"], REPLY, 1, I(0))),
    "host-notices": client(0x20, b"", waiters(("R_CTX_SYNC", 0, 0)),
                           fr(27, 0, 0, I(2) + Q(1) + Q(2)),
                           fr(27, 0, 0, I(3) + Q(1)),
                           fr(27, 1, 0, I(0)),
                           fr(R + call["R_CTX_SYNC"], REPLY, 1, I(0))),
    "error": client(0x20, b"", waiters(("R_CTX_SYNC", 0, 0)),
                    error(7, b"server draining")),
    "handshake": client(0x00, challenge() + welcome(), waiters(),
                        fr(16, REPLY, 1, b"echo")),
    "handshake-resume": client(0x00, challenge() + welcome(
        I(1) + b"\2" * 16 + I(3000)), waiters()),
    "handshake-error": client(0x00, error(1, b"version"), waiters()),
    "handshake-small": client(0x00, challenge(max_frame=1024) + welcome(),
                              waiters()),
})
