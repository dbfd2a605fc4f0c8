"""A resuming front for a gleam-serve, for the client library's resume
tests (gleam-protocol(5), Resume): it plays the server's side of Resume
to clients without a key, and relays each session's frame stream over one
connection of its own to the server, which never sees a drop.  It keeps
what it sent a client until the client acknowledges it, takes a client
that comes back with the session's token, sends again from the client's
acknowledgement and goes on; a session it does not know (it restarted) is
refused with ERROR 6, as the server does.

With -k, clients must prove the key in KEYFILE (64 hex digits, as
make_key writes) and their records are sealed (AES-256-GCM), as with a
server that has a key; the server itself has none.

usage: resumefront.py [-k KEYFILE] [-w RESUME_MS] SERVER_PORT
Prints "listening on 127.0.0.1:PORT" on stderr, then "resumed SESSION at
ACK" for each resume."""
import hashlib
import hmac
import os
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gleamwire as gw  # noqa: E402

FEAT_RESUME, FEAT_RESUMING = 1, 2
PIECE = 1 << 20
lock = threading.Lock()
sessions = {}
key = None


def hm(k, *parts):
    return hmac.new(k, b"".join(parts), hashlib.sha256).digest()


class Chan:
    """A client connection's records: in the clear, or sealed under the
    keys of its handshake's nonces (gleam-protocol(5), Records)."""

    def __init__(self, cnonce=None, snonce=None):
        self.aead = None
        if key is not None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            prk = hm(key, b"gleam-v2 connection\0", cnonce, snonce)
            self.tx = AESGCM(hm(prk, b"gleam-v2 server to client\0"))
            self.rx = AESGCM(hm(prk, b"gleam-v2 client to server\0"))
            self.aead = True
        self.txn = self.rxn = 0

    @staticmethod
    def nonce(n):
        return struct.pack("<QI", n, 0)

    def seal(self, body, ack):
        if self.aead is None:
            return gw.record(body, ack=ack)
        hdr = gw.HDR.pack(len(body) + 16, 0, 0, ack)
        ct = self.tx.encrypt(self.nonce(self.txn), bytes(body), hdr)
        self.txn += 1
        return hdr + ct

    def read(self, s):
        """(ack, body) of the client's next record."""
        hdr = gw.recv_exact(s, 16)
        n, kind, zero, ack = gw.HDR.unpack(hdr)
        if kind != 0 or zero != 0:
            raise ValueError("record of kind %d" % kind)
        body = gw.recv_exact(s, n)
        if self.aead is not None:
            body = self.rx.decrypt(self.nonce(self.rxn), body, hdr)
            self.rxn += 1
        return ack, body


def log(msg):
    sys.stderr.write("resumefront: %s\n" % msg)
    sys.stderr.flush()


def read_record(s):
    """(ack, body) of the next record in the clear."""
    n, kind, zero, ack = gw.HDR.unpack(gw.recv_exact(s, 16))
    if kind != 0 or zero != 0:
        raise ValueError("record of kind %d" % kind)
    return ack, gw.recv_exact(s, n)


class Session:
    def __init__(self, sid, up, chal):
        self.sid = sid
        self.token = os.urandom(16)
        self.up = up            # the socket to the server
        self.up_rx = 0          # stream bytes from the server
        self.chal = chal        # the server's CHALLENGE payload
        self.down = None        # the client's socket, while connected
        self.dc = None          # and its records
        self.keep = bytearray()  # sent to the client, not acknowledged
        self.base = 0           # the stream offset of keep[0]
        self.tx = 0             # stream bytes sent to the client
        self.rx = 0             # stream bytes from the client
        self.acked = 0          # the ack we last sent
        self.gen = 0            # counts the client's departures

    def send_down(self, body):
        """Under lock: a record to the client, if one is connected."""
        self.acked = self.rx
        if self.down is None:
            return
        try:
            self.down.sendall(self.dc.seal(body, self.rx))
        except OSError:
            self.down = None

    def upstream(self):
        """The server's stream, to the client (kept for resending)."""
        try:
            while True:
                _, body = read_record(self.up)
                with lock:
                    self.up_rx += len(body)
                    if not body:
                        continue
                    self.keep += body
                    self.tx += len(body)
                    self.send_down(body)
        except (OSError, EOFError, ValueError):
            pass
        with lock:
            if self.down is not None:
                try:
                    self.down.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            sessions.pop(self.sid, None)

    def downstream(self, s, dc):
        """A client connection's records, to the server."""
        try:
            while True:
                ack, body = dc.read(s)
                with lock:
                    if s is not self.down:
                        return
                    if ack > self.base:
                        del self.keep[:ack - self.base]
                        self.base = ack
                    self.rx += len(body)
                    rec = gw.record(body, ack=self.up_rx) if body else None
                    if self.rx - self.acked >= (1 << 20):
                        self.send_down(b"")
                # Not under the lock: the server may be sending to us.
                if rec is not None:
                    self.up.sendall(rec)
        except Exception:  # noqa: BLE001 (a tag that fails too)
            pass
        with lock:
            if s is self.down:
                self.down = None
                self.gen += 1
                threading.Timer(resume_ms / 1000, self.expire,
                                args=(self.gen,)).start()
        s.close()

    def expire(self, gen):
        """The window passed without the client: the session ends."""
        with lock:
            if self.down is not None or gen != self.gen:
                return
            log("session %d expired" % self.sid)
            sessions.pop(self.sid, None)
            try:
                self.up.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def resume(self, s, dc):
        """Under lock: s takes over: both sides send again what the other
        lacks."""
        old, self.down, self.dc = self.down, s, dc
        self.gen += 1
        if old is not None:
            try:
                old.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        s.sendall(dc.seal(b"", self.rx))
        self.acked = self.rx
        ack, body = dc.read(s)
        if ack < self.base or ack > self.tx:
            raise ValueError("client acknowledged %d, we keep %d to %d" %
                             (ack, self.base, self.tx))
        log("resumed %d at %d, resending %d" % (self.sid, ack, self.tx - ack))
        del self.keep[:ack - self.base]
        self.base = ack
        self.rx += len(body)
        if body:
            self.up.sendall(gw.record(body, ack=self.up_rx))
        for i in range(0, len(self.keep), PIECE):
            s.sendall(dc.seal(self.keep[i:i + PIECE], self.rx))


def error(s, code, text):
    t = text.encode()
    s.sendall(gw.frame(gw.ERROR, struct.pack("<IH", code, len(t)) + t))
    s.close()


def handshake(s, chal, cnonce):
    """CHALLENGE (ours, asking for the key if there is one), the client's
    proof; returns WELCOME's proof part and the connection's Chan."""
    ver, _ = struct.unpack_from("<HH", chal)
    snonce = os.urandom(32)
    s.sendall(gw.frame(gw.CHALLENGE, struct.pack("<HH", ver, key is not None)
                       + snonce + chal[36:]))
    if key is None:
        return struct.pack("<H", 0) + bytes(32), Chan()
    v = struct.pack("<H", ver)
    n, t, _, _ = gw.HDR.unpack(gw.recv_exact(s, 16))
    proof = gw.recv_exact(s, n)
    if t != gw.AUTH or not hmac.compare_digest(
            proof, hm(key, b"gleam-v1-client", v, cnonce, snonce)):
        raise ValueError("the client did not prove the key")
    return (struct.pack("<H", 1) + hm(key, b"gleam-v1-server", v, cnonce,
                                        snonce), Chan(cnonce, snonce))


def welcome(sess, features, proof):
    w = proof + struct.pack("<Q", sess.sid)
    if features:
        w += struct.pack("<I", features) + sess.token + struct.pack(
            "<I", resume_ms)
    return w


def client(s, server_port):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    n, t, _, _ = gw.HDR.unpack(gw.recv_exact(s, 16))
    p = gw.recv_exact(s, n)
    if t != gw.HELLO:
        return error(s, 6, "expected HELLO")
    feat, = struct.unpack_from("<I", p, 8)
    cnonce = p[12:44]
    nl, = struct.unpack_from("<H", p, 44)
    name = p[46:46 + nl]
    if feat & FEAT_RESUMING:
        sid, = struct.unpack_from("<Q", p, 46 + nl)
        token = p[54 + nl:70 + nl]
        with lock:
            sess = sessions.get(sid)
            if sess is None or sess.token != token:
                return error(s, 6, "no session %d to resume" % sid)
            try:
                proof, dc = handshake(s, sess.chal, cnonce)
                s.sendall(gw.frame(gw.WELCOME, welcome(sess, 3, proof)))
                sess.resume(s, dc)
            except Exception as e:  # noqa: BLE001
                log("resume of %d failed: %s" % (sid, e))
                sess.down = None
                s.close()
                return
    else:
        up = socket.create_connection(("127.0.0.1", server_port))
        up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c = gw.Conn(up)
        c.send(gw.HELLO, gw.hello(name=name))
        _, _, _, chal = c.frame()
        _, _, _, wel = c.frame()
        with lock:
            sid = max(sessions, default=0) + 1
            sess = Session(sid, up, chal)
            sessions[sid] = sess
            proof, dc = handshake(s, chal, cnonce)
            sess.down, sess.dc = s, dc
            s.sendall(gw.frame(gw.WELCOME, welcome(sess, feat & FEAT_RESUME,
                                                   proof)))
        threading.Thread(target=sess.upstream, daemon=True).start()
    sess.downstream(s, dc)


def main():
    global resume_ms, key
    args = sys.argv[1:]
    resume_ms = 30000
    while args[:1] in (["-w"], ["-k"]):
        if args[0] == "-w":
            resume_ms = int(args[1])
        else:
            with open(args[1]) as f:
                key = bytes.fromhex(f.read().strip())
        args = args[2:]
    server_port = int(args[0])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", int(os.environ.get("FRONT_PORT", "0"))))
    ls.listen(16)
    log("listening on 127.0.0.1:%d" % ls.getsockname()[1])
    while True:
        s, _ = ls.accept()
        threading.Thread(target=client, args=(s, server_port),
                         daemon=True).start()


if __name__ == "__main__":
    main()
