#!/usr/bin/env python3
"""ptyrun.py FILE CMD [ARG...]: runs CMD with a terminal (a pseudo-terminal)
as its standard error, standard input and output untouched, and writes
what CMD wrote on that terminal to FILE.  Exits with CMD's status (128 +
the signal's number if a signal killed it), 127 if CMD cannot be run."""
import os
import pty
import subprocess
import sys

if len(sys.argv) < 3:
    sys.exit("usage: ptyrun.py FILE CMD [ARG...]")
master, slave = pty.openpty()
try:
    p = subprocess.Popen(sys.argv[2:], stderr=slave)
except OSError as e:
    print("ptyrun.py: %s: %s" % (sys.argv[2], e.strerror), file=sys.stderr)
    sys.exit(127)
os.close(slave)
got = bytearray()
while True:
    try:
        b = os.read(master, 65536)
    except OSError:         # EIO: every writer closed the terminal
        break
    if not b:
        break
    got += b
rc = p.wait()
with open(sys.argv[1], "wb") as f:
    f.write(got)
sys.exit(128 - rc if rc < 0 else rc)
