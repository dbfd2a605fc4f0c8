"""A resuming front for a gleam-serve, for the client library's resume
tests (gleam-protocol(5), Resume): it plays the server's side of Resume
to clients without a key, and relays each session's frame stream over one
connection of its own to the server, which never sees a drop.  It keeps
what it sent a client until the client acknowledges it, takes a client
that comes back with the session's token, sends again from the client's
acknowledgement and goes on; a session it does not know (it restarted) is
refused with ERROR 6, as the server does.

usage: resumefront.py [-w RESUME_MS] SERVER_PORT
Prints "listening on 127.0.0.1:PORT" on stderr, then "resumed SESSION at
ACK" for each resume."""
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
            self.down.sendall(gw.record(body, ack=self.rx))
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

    def downstream(self, s):
        """A client connection's records, to the server."""
        try:
            while True:
                ack, body = read_record(s)
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
        except (OSError, EOFError, ValueError):
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

    def resume(self, s):
        """Under lock: s takes over: both sides send again what the other
        lacks."""
        old, self.down = self.down, s
        self.gen += 1
        if old is not None:
            try:
                old.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        s.sendall(gw.record(b"", ack=self.rx))
        self.acked = self.rx
        ack, body = read_record(s)
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
            s.sendall(gw.record(bytes(self.keep[i:i + PIECE]), ack=self.rx))


def error(s, code, text):
    t = text.encode()
    s.sendall(gw.frame(gw.ERROR, struct.pack("<IH", code, len(t)) + t))
    s.close()


def welcome(sess, features):
    return (struct.pack("<H", 0) + bytes(32) + struct.pack("<Q", sess.sid) +
            struct.pack("<I", features) + sess.token +
            struct.pack("<I", resume_ms))


def client(s, server_port):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    n, t, _, _ = gw.HDR.unpack(gw.recv_exact(s, 16))
    p = gw.recv_exact(s, n)
    if t != gw.HELLO:
        return error(s, 6, "expected HELLO")
    feat, = struct.unpack_from("<I", p, 8)
    nl, = struct.unpack_from("<H", p, 44)
    name = p[46:46 + nl]
    if feat & FEAT_RESUMING:
        sid, = struct.unpack_from("<Q", p, 46 + nl)
        token = p[54 + nl:70 + nl]
        with lock:
            sess = sessions.get(sid)
            if sess is None or sess.token != token:
                return error(s, 6, "no session %d to resume" % sid)
            s.sendall(gw.frame(gw.CHALLENGE, sess.chal))
            s.sendall(gw.frame(gw.WELCOME, welcome(sess, 3)))
            try:
                sess.resume(s)
            except (OSError, EOFError, ValueError) as e:
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
            sess.down = s
            s.sendall(gw.frame(gw.CHALLENGE, chal))
            s.sendall(gw.frame(gw.WELCOME, welcome(sess, FEAT_RESUME)))
        threading.Thread(target=sess.upstream, daemon=True).start()
    sess.downstream(s)


def main():
    global resume_ms
    args = sys.argv[1:]
    resume_ms = 30000
    if args[:1] == ["-w"]:
        resume_ms = int(args[1])
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
