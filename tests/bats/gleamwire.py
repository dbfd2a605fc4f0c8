"""Protocol 2 on the wire for the tests' scripts (gleam-protocol(5)):
frames, the handshake without a key, and the records in the clear that
carry the frames after WELCOME.  Both a frame header and a record header
are 16 bytes: u32 len, u16 type (a record: kind, 0), u16 flags (a
record: 0), u64 id (a record: ack)."""
import os
import struct

MAGIC = 0x314D4C47
HDR = struct.Struct("<IHHQ")
HELLO, CHALLENGE, AUTH, WELCOME, ERROR = 1, 2, 3, 4, 5


def frame(t, payload=b"", fid=0, flags=0, length=None):
    n = len(payload) if length is None else length
    return HDR.pack(n, t, flags, fid) + payload


def hello(vmin=2, vmax=2, name=b"test", magic=MAGIC):
    return (struct.pack("<IHHI", magic, vmin, vmax, 0) + os.urandom(32) +
            struct.pack("<H", len(name)) + name)


def record(body, ack=0, kind=0, length=None):
    """A record in the clear (a connection without a key)."""
    n = len(body) if length is None else length
    return HDR.pack(n, kind, 0, ack) + body


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise EOFError("connection closed")
        b += d
    return b


class Conn:
    """A client connection without a key: frames before WELCOME, records
    in the clear after it."""

    def __init__(self, sock):
        self.s = sock
        self.on = False
        self.plain = b""

    def _read(self, n):
        if not self.on:
            return recv_exact(self.s, n)
        while len(self.plain) < n:
            n_, kind, _, _ = HDR.unpack(recv_exact(self.s, 16))
            if kind != 0:
                raise ValueError("record of kind %d" % kind)
            self.plain += recv_exact(self.s, n_)
        b, self.plain = self.plain[:n], self.plain[n:]
        return b

    def frame(self):
        """(type, flags, id, payload) of the next frame."""
        n, t, f, i = HDR.unpack(self._read(16))
        return t, f, i, self._read(n)

    def send(self, t, payload=b"", fid=0, flags=0):
        f = frame(t, payload, fid, flags)
        self.s.sendall(record(f) if self.on else f)

    def handshake(self, name=b"test"):
        self.send(HELLO, hello(name=name))
        for want in (CHALLENGE, WELCOME):
            t, _, _, p = self.frame()
            if t != want:
                raise ValueError("handshake: frame %d: %r" % (t, p))
        self.on = True
