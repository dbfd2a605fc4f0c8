#!/usr/bin/env python3
"""Migration on the wire, for migrate.bats (gleam-protocol(5), Migration):
a resumable session of its own, without a key.

  migwire.py moved PORT PID TARGET
	opens a remoting session at 127.0.0.1:PORT (R_OPEN), signals PID
	(SIGUSR1) until the server sends REDIRECT, then resumes the session
	there as a client that lost the REDIRECT would: once with its token,
	once with another, and once after the server's resume window (read
	from WELCOME).  One line each:
	  redirect HOST PORT SESSION TOKEN	the REDIRECT
	  again HOST PORT SESSION TOKEN		the resume's, told again
	  wrong token: error N			the resume's ERROR
	  after the window: error N
"""
import os
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gleamwire import (HDR, MAGIC, HELLO, CHALLENGE, WELCOME,  # noqa: E402
                       ERROR, Conn, frame)

REDIRECT = 25
R_OPEN = 256
FEAT_RESUME, FEAT_RESUMING, FEAT_MOVED = 1, 2, 8


def hello(features, session=0, token=b""):
    name = b"migwire"
    p = (struct.pack("<IHHI", MAGIC, 2, 2, features) + os.urandom(32) +
         struct.pack("<H", len(name)) + name)
    if features & FEAT_RESUMING:
        p += struct.pack("<Q", session) + token
    return p


def connect(port, features, session=0, token=b""):
    """A connection through WELCOME: (conn, welcome fields) or (None,
    the ERROR's code)."""
    c = Conn(socket.create_connection(("127.0.0.1", port), timeout=30))
    c.send(HELLO, hello(features, session, token))
    t, _, _, p = c.frame()
    if t == ERROR:
        return None, struct.unpack_from("<I", p)[0]
    if t != CHALLENGE:
        raise ValueError("frame %d for CHALLENGE" % t)
    t, _, _, p = c.frame()
    if t == ERROR:
        return None, struct.unpack_from("<I", p)[0]
    if t != WELCOME:
        raise ValueError("frame %d for WELCOME" % t)
    _, sess, feat = struct.unpack_from("<H32xQI", p)
    tok, ms = p[46:62], struct.unpack_from("<I", p, 62)[0]
    c.on = True
    return c, (sess, feat, tok, ms)


def redirect(p):
    n = struct.unpack_from("<H", p)[0]
    host = p[2:2 + n].decode()
    port, sess = struct.unpack_from("<HQ", p, 2 + n)
    return "%s %d %d %s" % (host, port, sess, p[12 + n:28 + n].hex())


def moved(port, pid, target):
    c, (sess, feat, tok, ms) = connect(port, FEAT_RESUME)
    if not feat & FEAT_RESUME:
        sys.exit("migwire: the session is not resumable")
    # Records in the clear: a remoting call makes it a worker's.
    c.s.sendall(HDR.pack(20, 0, 0, 0) +
                frame(R_OPEN, struct.pack("<I", 0), fid=1))
    t, _, _, _ = c.frame()
    if t != R_OPEN:
        sys.exit("migwire: frame %d for R_OPEN" % t)
    c.s.settimeout(0.2)
    for _ in range(100):
        os.kill(pid, signal.SIGUSR1)
        try:
            t, _, _, p = c.frame()
            break
        except socket.timeout:
            continue
    else:
        sys.exit("migwire: no REDIRECT")
    if t != REDIRECT:
        sys.exit("migwire: frame %d for REDIRECT" % t)
    print("redirect", redirect(p))
    c.s.close()
    # The source's worker ends: then the tomb is there.
    time.sleep(0.5)
    for what, tk in (("again", tok), ("wrong token", bytes(16))):
        c, w = connect(port, FEAT_RESUME | FEAT_RESUMING, sess, tk)
        if c is None:
            print("%s: error %d" % (what, w))
            continue
        if not w[1] & FEAT_MOVED:
            sys.exit("migwire: resumed, not told it moved")
        t, _, _, p = c.frame()
        if t != REDIRECT:
            sys.exit("migwire: frame %d after a moved WELCOME" % t)
        print(what, redirect(p))
        c.s.close()
    time.sleep(ms / 1000 + 0.2)
    c, w = connect(port, FEAT_RESUME | FEAT_RESUMING, sess, tok)
    print("after the window: %s" % ("error %d" % w if c is None else
                                     "resumed"))


if len(sys.argv) == 5 and sys.argv[1] == "moved":
    moved(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
else:
    sys.exit(__doc__)
