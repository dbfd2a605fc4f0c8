#!/usr/bin/env python3
"""An attacker of gleam-sched's daemon (no key), for the tests and for
bench/RESULTS.md: it speaks the protocol through gleamwire.py from a
source address of its choice (-b, e.g. 127.0.0.2: all of 127/8 is this
host on Linux), and prints what it got, one line of key=value.

  place N CLIENT TASK   N PLACE requests on one connection, each waiting
                        for its reply: placed=, unplaced=, busy=,
                        retry_ms= (the largest asked), max_ms= (the
                        slowest reply)
  flood SECONDS CLIENT  PLACE requests as fast as they are answered for
                        SECONDS: the same counts
  unread MBYTES         MBYTES of PLACE requests without reading a
                        reply: sent= (bytes the daemon took before it
                        stopped reading), stalled=1 if it did
  nested BYTES OPEN     one PLACE of BYTES bytes of OPEN repeated ("[",
                        "{a: "): ms= (until the reply), and the reply
  client SECONDS ADDR NAME  connects to the server at ADDR as NAME and
                        stays SECONDS (a client that came where it was
                        placed)
  conns N SECONDS       N connections at once, held SECONDS: open= (how
                        many got WELCOME), then the first refusal's text
  status                the daemon's STATUS document

Usage: sched-attack.py [-b SRC] PORT COMMAND ARGS...
"""
import getopt
import os
import re
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gleamwire as gw  # noqa: E402

PLACE, STATUS = 48, 17

opts, args = getopt.getopt(sys.argv[1:], "b:")
SRC = dict(opts).get("-b")
if len(args) < 2:
    sys.exit(__doc__)
PORT, CMD, ARGS = int(args[0]), args[1], args[2:]


def connect(host="127.0.0.1", port=PORT, name=b"attack", timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if SRC:
        s.bind((SRC, 0))
    s.connect((host, port))
    c = gw.Conn(s)
    c.handshake(name)
    return c


def req(client, task):
    return ("client: %s\ntask: %s\n" % (client, task)).encode()


def classify(t, p, counts):
    """Counts one reply: placed, unplaced (an answer without a server),
    busy (with its retry_ms) or error."""
    text = p.decode(errors="replace")
    if t == gw.ERROR:
        counts["error"] += 1
        return
    m = re.search(r"^retry_ms: (\d+)$", text, re.M)
    if m:
        counts["busy"] += 1
        counts["retry_ms"] = max(counts["retry_ms"], int(m.group(1)))
    elif re.search(r"^error:", text, re.M):
        counts["unplaced"] += 1
    elif re.search(r"^server:", text, re.M):
        counts["placed"] += 1
    else:
        counts["error"] += 1


def counts_line(counts):
    return " ".join("%s=%s" % kv for kv in counts.items())


def new_counts():
    return dict(placed=0, unplaced=0, busy=0, error=0, retry_ms=0,
                max_ms=0, n=0)


def place(n, client, task, deadline=None):
    c = connect()
    counts = new_counts()
    i = 0
    while (i < n) if deadline is None else (time.time() < deadline):
        i += 1
        t0 = time.time()
        c.send(PLACE, req(client, task), fid=i)
        t, f, fid, p = c.frame()
        counts["max_ms"] = max(counts["max_ms"],
                               round((time.time() - t0) * 1e3, 1))
        counts["n"] += 1
        classify(t, p, counts)
    print(counts_line(counts))


if CMD == "place":
    place(int(ARGS[0]), ARGS[1], ARGS[2])
elif CMD == "flood":
    place(0, ARGS[1], "flood", time.time() + float(ARGS[0]))
elif CMD == "unread":
    c = connect(timeout=2)
    one = gw.record(gw.frame(PLACE, req("c1", "u"), 1))
    total, sent = int(float(ARGS[0]) * 1e6), 0
    chunk = one * 1000
    try:
        while sent < total:
            c.s.sendall(chunk)
            sent += len(chunk)
        print("sent=%d stalled=0" % sent)
    except socket.timeout:
        print("sent=%d stalled=1" % sent)
elif CMD == "nested":
    c = connect()
    n, op = int(ARGS[0]), ARGS[1].encode()
    body = (op * (n // len(op) + 1))[:n]
    t0 = time.time()
    c.send(PLACE, body, fid=1)
    t, f, fid, p = c.frame()
    ms = (time.time() - t0) * 1e3
    if t == gw.ERROR:
        code = struct.unpack("<I", p[:4])[0]
        print("ms=%.1f error=%d %s" % (ms, code, p[6:].decode()))
    else:
        print("ms=%.1f reply %s" % (ms, p.decode(errors="replace")))
elif CMD == "client":
    host, port = ARGS[1].rsplit(":", 1)
    c = connect(host, int(port), ARGS[2].encode())
    time.sleep(float(ARGS[0]))
    print("stayed")
elif CMD == "conns":
    held, why = [], ""
    for _ in range(int(ARGS[0])):
        try:
            held.append(connect())
        except (ValueError, OSError, EOFError) as e:
            why = why or str(e)
    print("open=%d %s" % (len(held), why))
    time.sleep(float(ARGS[1]))
elif CMD == "status":
    c = connect()
    c.send(STATUS, b"", fid=1)
    t, f, fid, p = c.frame()
    sys.stdout.write(p.decode())
else:
    sys.exit(__doc__)
