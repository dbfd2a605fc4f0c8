#!/usr/bin/env python3
"""A man in the middle for the tests of the sealed channel: it listens on
a free loopback port (printed as "mitm: listening on 127.0.0.1:PORT" on
stderr), relays each connection to 127.0.0.1:TARGET, and attacks the
records after the handshake.  The handshake's frames pass untouched; the
bytes after them are cut into records (16-byte header, u32 len first),
each relayed whole once it has come in.

  -c PREFIX	append the bytes after the handshake to PREFIX.c2s (toward
		the server) and PREFIX.s2c (toward the client)
  -f DIR:N	flip one bit of byte N of DIR's bytes after the handshake
		(DIR: c2s or s2c), once a connection
  -d		send the client's first record twice (a replay within the
		connection)
  -r FILE	send the first record of FILE (a capture's .c2s of an
		earlier connection) in place of the client's first record
  -x TYPE	cut the connection (each end sees the end of the data) in
		place of the first record toward the client whose first
		frame is of TYPE (records in the clear: no key), once over
		all connections

Usage: mitm.py [-d] [-c PREFIX] [-f DIR:N] [-r FILE] [-x TYPE] TARGET
"""
import getopt
import os
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gleamwire import HDR, HELLO, AUTH, WELCOME, ERROR  # noqa: E402

opts, args = getopt.getopt(sys.argv[1:], "c:df:r:x:")
if len(args) != 1:
    sys.exit(__doc__)
TARGET = int(args[0])
CAPTURE = FLIP = REPLAY = CUT = None
DUP = False
for o, v in opts:
    if o == "-c":
        CAPTURE = v
    elif o == "-d":
        DUP = True
    elif o == "-f":
        d, n = v.split(":")
        FLIP = (d, int(n))
    elif o == "-x":
        CUT = int(v)
    elif o == "-r":
        with open(v, "rb") as f:
            b = f.read()
        REPLAY = b[:16 + struct.unpack_from("<I", b)[0]]
lock = threading.Lock()


def handshake_over(d, buf):
    """How many bytes of buf are handshake frames still to relay as they
    are; None while a frame is incomplete.  Sets d["post"] when the
    handshake is over in this direction: toward the server after HELLO
    and AUTH, toward the client after WELCOME (or ERROR)."""
    n = 0
    while len(buf) - n >= 16:
        ln, t, _, _ = HDR.unpack_from(buf, n)
        if d["dir"] == "c2s" and t not in (HELLO, AUTH):
            d["post"] = True
            return n
        if len(buf) - n < 16 + ln:
            return n
        n += 16 + ln
        if d["dir"] == "s2c" and t in (WELCOME, ERROR):
            d["post"] = True
            return n
    return n


def attack(d, rec):
    """One whole record after the handshake: what goes on in its place;
    None to cut the connection instead."""
    global CUT
    if (CUT is not None and d["dir"] == "s2c" and len(rec) >= 32 and
            HDR.unpack_from(rec, 16)[1] == CUT):
        with lock:
            cut, CUT = CUT, None
        if cut is not None:
            print("mitm: cut at a frame of type %d" % cut, file=sys.stderr,
                  flush=True)
            return None
    if FLIP is not None and FLIP[0] == d["dir"]:
        i = FLIP[1] - d["off"]
        if 0 <= i < len(rec):
            rec = rec[:i] + bytes([rec[i] ^ 0x01]) + rec[i + 1:]
    d["off"] += len(rec)
    if CAPTURE is not None:
        with lock, open(CAPTURE + "." + d["dir"], "ab") as f:
            f.write(rec)
    first = d["dir"] == "c2s" and d["nrec"] == 0
    d["nrec"] += 1
    if first and REPLAY is not None:
        return REPLAY
    if first and DUP:
        return rec + rec
    return rec


def pump(src, dst, d):
    buf = b""
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            buf += b
            out = b""
            if not d["post"]:
                n = handshake_over(d, buf)
                out, buf = buf[:n], buf[n:]
            cut = False
            while d["post"] and len(buf) >= 16:
                n = 16 + struct.unpack_from("<I", buf)[0]
                if len(buf) < n:
                    break
                r = attack(d, buf[:n])
                if r is None:
                    cut = True
                    break
                out += r
                buf = buf[n:]
            if out:
                dst.sendall(out)
            if cut:
                for x in (dst, src):
                    x.shutdown(socket.SHUT_WR)
                return
    except OSError:
        pass
    # Whatever is left (a record cut short) goes on as it is.
    try:
        if buf:
            dst.sendall(buf)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def relay(c):
    try:
        s = socket.create_connection(("127.0.0.1", TARGET))
    except OSError:
        c.close()
        return
    t = [threading.Thread(target=pump, args=(a, b, {
        "dir": dr, "post": False, "off": 0, "nrec": 0}), daemon=True)
        for a, b, dr in ((c, s, "c2s"), (s, c, "s2c"))]
    for x in t:
        x.start()
    for x in t:
        x.join()
    c.close()
    s.close()


def main():
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    print("mitm: listening on 127.0.0.1:%d" % ls.getsockname()[1],
          file=sys.stderr, flush=True)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=relay, args=(c,), daemon=True).start()


main()
