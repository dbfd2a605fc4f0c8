# resume-wire.py PORT DIR: a session resumed by hand, as gleam-protocol(5)
# says: the reply lost in the drop comes again, byte for byte, and a
# token that is wrong resumes nothing.
import socket, struct, sys, os
sys.path.insert(0, sys.argv[2])
import gleamwire as gw

port = int(sys.argv[1])
HDR = gw.HDR

def hello(features, session=0, token=b""):
    b = (struct.pack("<IHHI", gw.MAGIC, 2, 2, features) + os.urandom(32) +
         struct.pack("<H", 4) + b"test")
    if features & 2:
        b += struct.pack("<Q", session) + token
    return gw.frame(gw.HELLO, b)

class Stream:
    def __init__(self, s):
        self.s, self.plain, self.rx, self.ack = s, b"", 0, None
    def record(self):
        n, kind, z, ack = HDR.unpack(gw.recv_exact(self.s, 16))
        assert kind == 0, kind
        body = gw.recv_exact(self.s, n)
        self.rx += n
        self.plain += body
        self.ack = ack
        return body
    def frame(self):
        while len(self.plain) < 16:
            self.record()
        n, t, f, i = HDR.unpack(self.plain[:16])
        while len(self.plain) < 16 + n:
            self.record()
        fr = self.plain[:16 + n]
        self.plain = self.plain[16 + n:]
        return t, f, i, fr

def handshake(s, features, session=0, token=b""):
    s.sendall(hello(features, session, token))
    t, f, i, p = gw.Conn(s).frame()
    if t == gw.ERROR:
        return None
    assert t == gw.CHALLENGE, t
    t, f, i, p = gw.Conn(s).frame()
    assert t == gw.WELCOME, (t, p)
    sess, = struct.unpack("<Q", p[34:42])
    feat, = struct.unpack("<I", p[42:46])
    tok = p[46:62]
    ms, = struct.unpack("<I", p[62:66])
    return sess, feat, tok, ms

s = socket.create_connection(("127.0.0.1", port), timeout=5)
sess, feat, tok, ms = handshake(s, 1)
assert feat == 1 and ms == 30000, (feat, ms)
st = Stream(s)
tx = 0
def send(sock, data, ack):
    sock.sendall(gw.record(data, ack=ack))
call = gw.frame(256, struct.pack("<I", 0), fid=1)
send(s, call, 0)
tx += len(call)
t, f, i, reply = st.frame()
assert t == 256 and i == 1, (t, i)
# The reply came, but we say it did not: it must come again.
lost_from = 0
s.close()

# A wrong token: refused, nothing resumed.
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(hello(3, sess, b"x" * 16))
t, f, i, p = gw.Conn(s).frame()
assert t == gw.CHALLENGE
t, f, i, p = gw.Conn(s).frame()
assert t == gw.ERROR and b"no session" in p, (t, p)
s.close()

s = socket.create_connection(("127.0.0.1", port), timeout=5)
r = handshake(s, 3, sess, tok)
assert r is not None and r[0] == sess and r[1] == 3, r
st2 = Stream(s)
# Our first record: we have nothing of the stream.
send(s, b"", lost_from)
first = st2.record()
assert first == b"" and st2.ack == tx, (first, st2.ack, tx)
# Then the server sends again what it had sent: the same reply.
t, f, i, again = st2.frame()
assert again == reply, "resent reply differs"
# And the session goes on: another call is served.
call2 = gw.frame(256, struct.pack("<I", 0), fid=2)
send(s, call2, len(reply))
t, f, i, r2 = st2.frame()
assert i == 2, i
print("resume ok")
