/*
 * The daemon's event loop.  One event_base owns a listener and a
 * bufferevent per client; each client's bytes go through its session.
 *
 * Contract: a client is freed only from client_close() (immediately, on
 * EOF or error) or from the write callback once its output has drained
 * after session_input() asked to close.  Signals arrive as events: HUP
 * reloads the configuration, the first TERM or INT starts the drain (no new
 * clients, each current one closed once its request is answered, a
 * deadline for stragglers), the second exits at once.
 */
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>

#include <sodium.h>

#include <fcntl.h>

#include "exitcode.h"
#include "gpu.h"
#include "hshake.h"
#include "host.h"
#include "log.h"
#include "net.h"
#include "parse.h"
#include "proto.h"
#include "output.h"
#include "remote.h"
#include "server.h"
#include "session.h"
#include "status.h"
#include "svc.h"
#include "util.h"
#include "wcache.h"
#include "yamlio.h"

#define OUT_HIGH	(32u << 20)	/* stop reading a client above this */
#define OUT_LOW		(512u << 10)	/* refill or resume below this */

struct client {
	TAILQ_ENTRY(client)	 entry;
	struct server		*srv;
	struct bufferevent	*bev;
	struct session		*sess;
	struct event		*hs_timer;
	struct event		*linger;	/* bounds the graceful close */
	char			 addr[64];
	uint64_t		 since;
	uint64_t		 bytes_in, bytes_out;
	int			 remote;	/* served on a remoting thread
						   or in a worker process */
	pid_t			 pid;		/* that worker; 0: a thread */
	struct remote_stats	 rstats;	/* that thread's counters */
	struct remote_stats	*rs;		/* &rstats, or shared with
						   the worker */
	struct event		*done_ev;	/* it signals its end here */
	int			 closing;	/* free once output drains */
	int			 shut;		/* our write side is shut */
	int			 paused;	/* reading stopped: output full */
	int			 pending;	/* still in the handshake */
	char			 host[48];	/* addr less the port */
	/* A resumable remoting session: its token, and the channel on
	   which a connection that resumes it goes to its worker. */
	int			 resumable;
	uint8_t			 token[PROTO_TOKEN_LEN];
	int			 ctl;		/* -1: none */
	char			 ident[PROTO_IDENT_MAX + 1];	/* whose */
	int			 fresh;		/* nothing read yet: a lane? */
	int			 migrating;	/* ordered to migrate */
};

/*
 * A session that migrated away (remote.c's last word, REMOTE_MOVED), kept
 * for its resume window: a client that lost the REDIRECT in a drop and
 * resumes here is told again where its session went (hshake.h,
 * resume_find; gleam-protocol(5), Migration).
 */
struct tomb {
	TAILQ_ENTRY(tomb)	 entry;
	uint64_t		 id;
	uint8_t			 token[PROTO_TOKEN_LEN];
	char			 ident[PROTO_IDENT_MAX + 1];
	struct msg_redirect	 to;
	uint64_t		 until;		/* ns: then forgotten */
};
#define TOMBS_MAX	4096

struct server {
	struct event_base	*base;
	struct evconnlistener	*listener;
	char			 bound[64];
	struct config		 cfg;
	struct overrides	 ov;
	struct session_env	 env;
	const struct backend	*be;		/* NULL: no remoting */
	char			 be_why[256];	/* why not */
	struct remote_env	 renv;
	TAILQ_HEAD(, client)	 clients;
	int			 nclients;
	TAILQ_HEAD(, tomb)	 tombs;		/* oldest first */
	int			 ntombs;
	int			 npending;	/* of them, in the handshake */
	uint64_t		 busy_logged;	/* ns: the last refusal logged */
	uint64_t		 start;
	struct event		*ev_hup, *ev_term, *ev_int, *ev_drain;
	struct event		*ev_usr1;	/* migrate every client */
	struct event		*ev_chld;
	int			 iso;		/* ISO_*, fixed at start */
	int			 be_ready;	/* be initialized here (the cuda
						   backend is, only in workers) */
	int			 draining;
};

static void client_read(struct bufferevent *, void *);
static void client_say_shutdown(struct client *);
static void client_go_remote(struct client *);
static int server_migrate_one(void *, struct session *,
    const struct msg_migrate_one *, char *, size_t);
static void client_fork_worker(struct client *, int,
    struct remote_handoff *);
static void server_accept(struct evconnlistener *, evutil_socket_t,
    struct sockaddr *, int, void *);

int
server_configure(struct config *c, const struct overrides *ov)
{
	char err[1200];
	const char *why;

	config_defaults(c);
	if (config_load(c, ov->config, ov->config_missing_ok, err,
	    sizeof err) == -1) {
		log_error("%s", err);
		return EXIT_CONFIG;
	}
	if (ov->listen != NULL && parse_hostport(ov->listen, c->listen_host,
	    sizeof c->listen_host, &c->listen_port, &why) == -1) {
		log_error("-l %s: %s", ov->listen, why);
		return EXIT_USAGE;
	}
	if (ov->listen != NULL)
		c->listen_set = 1;
	if (ov->key_file != NULL)
		snprintf(c->key_file, sizeof c->key_file, "%s", ov->key_file);
	if (config_load_key(c, err, sizeof err) == -1) {
		log_error("%s", err);
		return EXIT_CONFIG;
	}
	if (c->auth == AUTH_OFF && c->keys.n > 0) {
		log_error("%s: auth: off and a key: choose one",
		    c->path[0] ? c->path : "configuration");
		return EXIT_CONFIG;
	}
	/*
	 * Without a key only this host is served, unless the configuration
	 * says in words that anyone may be (as Redis's protected mode).
	 */
	if (c->keys.n == 0 && c->auth != AUTH_OFF) {
		if (!c->listen_set)
			snprintf(c->listen_host, sizeof c->listen_host,
			    "127.0.0.1");
		else if (!net_is_loopback(c->listen_host)) {
			log_error("no key, and listening on %s: anyone who "
			    "reaches it could use the GPU and read what "
			    "clients send; set key_file (gleam-key makes "
			    "one), listen on 127.0.0.1, or write auth: off",
			    c->listen_host);
			return EXIT_CONFIG;
		}
	}
	return 0;
}

/*
 * Where clients reach us, for the status: the configuration's address,
 * else the address bound, the host's name standing for a wildcard.
 */
static void
server_address(const struct server *srv, char *out, size_t len)
{
	char host[256], name[256];
	const char *why;
	int port = 0;

	if (srv->cfg.address[0] != '\0') {
		snprintf(out, len, "%s", srv->cfg.address);
		return;
	}
	if (parse_hostport(srv->bound, host, sizeof host, &port, &why) == -1) {
		out[0] = '\0';
		return;
	}
	if (strcmp(host, "0.0.0.0") != 0 && strcmp(host, "::") != 0) {
		snprintf(out, len, "%s", srv->bound);
		return;
	}
	if (gethostname(name, sizeof name) == -1 || name[0] == '\0')
		out[0] = '\0';
	else {
		name[sizeof name - 1] = '\0';
		snprintf(out, len, "%s:%d", name, port);
	}
}

/*
 * Builds the status document for a STATUS request, as asker may see it
 * (status_filter): with several identities in the key file, one does not
 * learn which models another loaded nor where its clients are.  Without
 * a key, or with one identity, every asker sees everything: whoever
 * reaches the server sees all it could learn anyway.
 */
static char *
server_status(void *arg, const struct hshake_result *asker, size_t *len)
{
	struct server *srv = arg;
	struct server_status st;
	struct wscope sc;
	struct client *c;
	struct yw *w;
	const char *text, *ident = NULL;
	char *copy = NULL;
	int i = 0;
	uint64_t now = now_ns();

	_Static_assert(STATUS_IDENT_LEN == PROTO_IDENT_MAX + 1 &&
	    STATUS_SCOPE_LEN == CSTORE_TENANT_MAX &&
	    STATUS_MODEL_LEN == RPC_MODEL_MAX + 1, "status.h's lengths");
	memset(&sc, 0, sizeof sc);
	if (srv->cfg.keys.n > 1) {
		/* The scope of its cache entries, as for its CUDA calls. */
		ident = asker->authed ? asker->ident : "";
		if (asker->authed)
			wcache_scope(config_share_group(&srv->cfg, ident),
			    ident, &asker->key, &sc);
	}

	memset(&st, 0, sizeof st);
	snprintf(st.host, sizeof st.host, "%s", srv->cfg.name);
	server_address(srv, st.address, sizeof st.address);
	snprintf(st.version, sizeof st.version, "%s", GLEAM_VERSION);
	st.protocol = PROTO_VERSION_MAX;
	snprintf(st.backend, sizeof st.backend, "%s",
	    srv->be != NULL ? srv->be->name : "none");
	st.uptime_s = (double)(now - srv->start) / 1e9;
	st.auth = srv->cfg.keys.n > 0;
	st.max_clients = srv->cfg.max_clients;
	st.port_bps = srv->cfg.port_rate > 0 ? srv->cfg.port_rate :
	    net_link_rate(srv->cfg.listen_host);
	gpu_query(&st);
	st.clients = calloc((size_t)srv->nclients + 1, sizeof *st.clients);
	if (st.clients == NULL)
		return NULL;
	TAILQ_FOREACH(c, &srv->clients, entry) {
		struct client_status *cs = &st.clients[i++];

		snprintf(cs->address, sizeof cs->address, "%s", c->addr);
		snprintf(cs->name, sizeof cs->name, "%s",
		    session_client_name(c->sess));
		snprintf(cs->ident, sizeof cs->ident, "%s", c->ident[0] != '\0' ?
		    c->ident : session_ident(c->sess));
		cs->remote = c->remote;
		cs->connected_s = (double)(now - c->since) / 1e9;
		cs->bytes_in = c->bytes_in +
		    __atomic_load_n(&c->rs->bytes_in, __ATOMIC_RELAXED);
		cs->bytes_out = c->bytes_out +
		    __atomic_load_n(&c->rs->bytes_out, __ATOMIC_RELAXED);
		if (c->remote)
			cs->session = session_id(c->sess);
	}
	st.nclients = i;
	{
		struct cstore_counters cc;

		if (wcache_counters(&cc) == 0) {
			st.has_cache = 1;
			st.cache.entries = cc.entries;
			st.cache.ram_bytes = cc.ram_bytes;
			st.cache.disk_bytes = cc.disk_bytes;
			st.cache.gpu_bytes = cc.gpu_bytes;
			st.cache.hits = cc.ram_hits + cc.disk_hits +
			    cc.gpu_hits;
			st.cache.misses = cc.misses;
			st.cache.nmodels = wcache_models(st.cache.models,
			    st.cache.scopes, STATUS_MODELS_MAX,
			    ident != NULL ? sc.tenant : NULL);
		}
	}
	status_filter(&st, ident, sc.tenant);
	if ((w = yw_new()) != NULL) {
		status_write(w, &st);
		if ((text = yw_finish(w, len)) != NULL)
			copy = strdup(text);
		yw_free(w);
	}
	free(st.clients);
	return copy;
}

/* Connections from host still in their handshake. */
static int
server_pending_from(struct server *srv, const char *host)
{
	struct client *c;
	int n = 0;

	TAILQ_FOREACH(c, &srv->clients, entry)
		if (c->pending && strcmp(c->host, host) == 0)
			n++;
	return n;
}

/* Forgets the tombs whose window passed (all of them: t UINT64_MAX). */
static void
tombs_prune(struct server *srv, uint64_t t)
{
	struct tomb *tb;

	while ((tb = TAILQ_FIRST(&srv->tombs)) != NULL && tb->until <= t) {
		TAILQ_REMOVE(&srv->tombs, tb, entry);
		srv->ntombs--;
		sodium_memzero(tb, sizeof *tb);
		free(tb);
	}
}

/*
 * A resumable client's worker is done: if its last word on the channel
 * says that the session migrated, a tomb keeps where it went.
 */
static void
client_tomb(struct client *c)
{
	struct server *srv = c->srv;
	struct remote_resume rr;
	struct pollfd pf = { .fd = c->ctl, .events = POLLIN };
	struct tomb *tb;
	int fd = -1;

	if (poll(&pf, 1, 0) != 1 || fd_recvmsg(c->ctl, &rr, sizeof rr,
	    &fd) == -1)
		return;
	if (fd != -1)
		close(fd);
	if (rr.kind != REMOTE_MOVED || (tb = calloc(1, sizeof *tb)) == NULL) {
		sodium_memzero(&rr, sizeof rr);
		return;
	}
	tombs_prune(srv, now_ns());
	if (srv->ntombs >= TOMBS_MAX) {
		struct tomb *old = TAILQ_FIRST(&srv->tombs);

		TAILQ_REMOVE(&srv->tombs, old, entry);
		srv->ntombs--;
		sodium_memzero(old, sizeof *old);
		free(old);
	}
	tb->id = session_id(c->sess);
	memcpy(tb->token, c->token, sizeof tb->token);
	snprintf(tb->ident, sizeof tb->ident, "%s", c->ident);
	rr.host[sizeof rr.host - 1] = '\0';
	snprintf(tb->to.host, sizeof tb->to.host, "%s", rr.host);
	tb->to.port = (uint16_t)rr.port;
	tb->to.session = rr.session;
	memcpy(tb->to.token, rr.token, sizeof tb->to.token);
	tb->until = now_ns() + (uint64_t)srv->env.hs.resume_ms * 1000000u;
	TAILQ_INSERT_TAIL(&srv->tombs, tb, entry);
	srv->ntombs++;
	sodium_memzero(&rr, sizeof rr);
}

static void
client_free(struct client *c)
{
	struct server *srv = c->srv;

	log_debug("client %s: closed (%llu bytes in, %llu out, %llu calls)",
	    c->addr, (unsigned long long)(c->bytes_in + c->rs->bytes_in),
	    (unsigned long long)(c->bytes_out + c->rs->bytes_out),
	    (unsigned long long)c->rs->calls);
	TAILQ_REMOVE(&srv->clients, c, entry);
	srv->nclients--;
	if (c->remote && c->resumable && c->ctl != -1)
		client_tomb(c);
	if (c->ctl != -1)
		close(c->ctl);
	c->ctl = -1;
	if (c->pending)
		srv->npending--;
	if (c->hs_timer != NULL)
		event_free(c->hs_timer);
	if (c->linger != NULL)
		event_free(c->linger);
	if (c->done_ev != NULL)
		event_free(c->done_ev);
	if (c->rs != &c->rstats)
		munmap(c->rs, sizeof *c->rs);
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	session_free(c->sess);
	free(c);
	if (srv->draining && srv->nclients == 0)
		event_base_loopexit(srv->base, NULL);
}

static void
client_linger_done(evutil_socket_t fd, short what, void *arg)
{
	client_free(arg);
}

/*
 * Output sent: shut our side and read until the peer closes (or 2 s pass)
 * before freeing.  Closing with unread input would make the kernel send a
 * reset, which can destroy our last reply (often an ERROR saying why)
 * before the client reads it.
 */
static void
client_shutdown(struct client *c)
{
	struct timeval tv = { 2, 0 };

	c->shut = 1;
	shutdown(bufferevent_getfd(c->bev), SHUT_WR);
	c->linger = evtimer_new(c->srv->base, client_linger_done, c);
	if (c->linger == NULL) {
		client_free(c);
		return;
	}
	evtimer_add(c->linger, &tv);
	bufferevent_enable(c->bev, EV_READ);
}

/* Stops serving and frees the client once what is queued has been sent. */
static void
client_close_after_flush(struct client *c)
{
	c->closing = 1;
	if (c->hs_timer != NULL) {
		event_free(c->hs_timer);
		c->hs_timer = NULL;
	}
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		client_shutdown(c);
}

/* The remoting thread has ended (called on that thread). */
static void
client_remote_end(void *arg, void *token)
{
	struct client *c = token;

	event_active(c->done_ev, EV_TIMEOUT, 1);
}

/* Back on the loop: forget the client whose thread has ended. */
static void
client_remote_done(evutil_socket_t fd, short what, void *arg)
{
	client_free(arg);
}

static void
worker_done(void *arg, void *token)
{
}

/*
 * The worker process of one remoting client (isolation: process), just
 * forked from the server.  It keeps the client's socket (as descriptor 3)
 * and stderr, closes everything else of the server's (the listener, other
 * clients' sockets), starts the backend (the CUDA driver is never started
 * in the server itself, so that every worker can), serves the client and
 * exits.  It dies with the server (PR_SET_PDEATHSIG), and ignores the
 * signals that ask the server to drain: the server waits for it.
 */
static void __attribute__((noreturn))
worker_main(struct client *c, int fd, int cfd, struct remote_handoff *ho,
    pid_t server)
{
	struct server *srv = c->srv;
	struct remote_env env = srv->renv;
	char err[256];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != server)
		_exit(EXIT_SOFTWARE);
	/* A worker holds its client's key alone, not every identity's. */
	config_free(&srv->cfg);
	child_signals();
	/* Out of the way of what follows: the resume channel. */
	if (ho->ctl != -1 && (ho->ctl = fcntl(ho->ctl, F_DUPFD_CLOEXEC, 100)) ==
	    -1)
		_exit(EXIT_SOFTWARE);
	/* The client's socket as 3, the cache's channel as 4, resume's 5. */
	if (cfd == 3 && (cfd = dup(cfd)) == -1)
		_exit(EXIT_SOFTWARE);
	if (fd != 3) {
		if (dup2(fd, 3) == -1)
			_exit(EXIT_SOFTWARE);
		fd = 3;
	}
	if (cfd != -1) {
		if (cfd != 4 && dup2(cfd, 4) == -1)
			_exit(EXIT_SOFTWARE);
		cfd = 4;
	}
	if (cfd == -1)
		close(4);
	if (ho->ctl != -1) {
		if (dup2(ho->ctl, 5) == -1)
			_exit(EXIT_SOFTWARE);
		ho->ctl = 5;
	} else
		close(5);
	closefrom(6);
	/* What the driver prints (device printf, asserts) is the client's. */
	(void)output_capture();
	if (!srv->be_ready && srv->be->init(err, sizeof err) == -1) {
		/* The server's probe passed: this is rare (GPU gone). */
		log_error("client %s: %s backend: %s", c->addr, srv->be->name,
		    err);
		_exit(EXIT_IO);
	}
	wcache_worker(cfd);
	env.done = worker_done;
	if (remote_run(fd, c->addr, session_client_name(c->sess), ho, &env,
	    c->rs, c) == -1)
		_exit(EXIT_SOFTWARE);
	wcache_fini();
	/* _exit runs no leak check: a sanitizer build's (make asan) now. */
	san_leak_check();
	_exit(EXIT_OK);
}

/*
 * Starts the client's worker process; the server keeps no descriptor, nor
 * the records' ciphers (the worker has its copy).
 */
static void
client_fork_worker(struct client *c, int fd, struct remote_handoff *ho)
{
	struct remote_stats *rs;
	pid_t pid, self = getpid();
	int sv[2] = { -1, -1 };

	rs = mmap(NULL, sizeof *rs, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rs == MAP_FAILED) {
		log_warn("client %s: %s", c->addr, strerror(errno));
		close(fd);
		chan_fini(&ho->ch);
		client_free(c);
		return;
	}
	memset(rs, 0, sizeof *rs);
	/* The weight cache stays here; the worker reaches it over sv. */
	if (wcache_counters(NULL) == 0 &&
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("client %s: no cache channel: %s", c->addr,
		    strerror(errno));
		sv[0] = sv[1] = -1;
	}
	fflush(stderr);
	if ((pid = fork()) == -1) {
		log_warn("client %s: cannot start a worker: %s", c->addr,
		    strerror(errno));
		munmap(rs, sizeof *rs);
		close(fd);
		chan_fini(&ho->ch);
		if (sv[0] != -1) {
			close(sv[0]);
			close(sv[1]);
		}
		client_free(c);
		return;
	}
	if (pid == 0) {
		c->rs = rs;
		if (sv[0] != -1)
			close(sv[0]);
		worker_main(c, fd, sv[1], ho, self);
	}
	close(fd);
	chan_fini(&ho->ch);
	if (sv[0] != -1) {
		close(sv[1]);
		if (wcache_channel(sv[0], &ho->scope) == -1)
			close(sv[0]);
	}
	c->rs = rs;
	c->pid = pid;
	log_debug("client %s (%s): remoting in process %d", c->addr,
	    session_client_name(c->sess), (int)pid);
}

/* SIGCHLD: the workers that ended; their clients are gone. */
static void
server_reap(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	struct client *c;
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		/* Before any fork can take its pid again. */
		remote_spin_reap(pid);
		TAILQ_FOREACH(c, &srv->clients, entry) {
			if (c->pid != pid)
				continue;
			if (WIFSIGNALED(st))
				log_warn("client %s (%s): its worker was "
				    "killed by signal %d (%s); the other "
				    "clients are unaffected", c->addr,
				    session_client_name(c->sess),
				    WTERMSIG(st), strsignal(WTERMSIG(st)));
			else if (WEXITSTATUS(st) != 0)
				log_warn("client %s (%s): its worker exited "
				    "with status %d", c->addr,
				    session_client_name(c->sess),
				    WEXITSTATUS(st));
			c->pid = 0;
			client_free(c);
			break;
		}
	}
}

/*
 * The client's next frame is a remoting call: the socket leaves libevent
 * for a thread of its own, with the session's records (moved: the
 * session keeps none of its ciphers), the plaintext opened and not yet
 * parsed (it starts with that call), and what was read of the next
 * record.
 */
static void
client_go_remote(struct client *c)
{
	struct server *srv = c->srv;
	struct hshake *hs = session_hshake(c->sess);
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct remote_handoff ho;
	size_t rawlen = evbuffer_get_length(in), outlen;
	size_t plainlen = evbuffer_get_length(hs->plain);
	uint8_t *raw = NULL, *plain = NULL, *outbuf = NULL;
	int fd = -1;

	if (c->hs_timer != NULL) {
		event_free(c->hs_timer);
		c->hs_timer = NULL;
	}
	c->done_ev = event_new(srv->base, -1, 0, client_remote_done, c);
	outlen = evbuffer_get_length(out);
	if (c->done_ev == NULL || (raw = malloc(rawlen + 1)) == NULL ||
	    (plain = malloc(plainlen + 1)) == NULL ||
	    (outbuf = malloc(outlen + 1)) == NULL ||
	    (fd = dup(bufferevent_getfd(c->bev))) == -1)
		goto fail;
	evbuffer_remove(in, raw, rawlen);
	evbuffer_remove(hs->plain, plain, plainlen);
	/* A bufferevent's output is frozen at its start: not any more. */
	evbuffer_unfreeze(out, 1);
	if (evbuffer_remove(out, outbuf, outlen) != (int)outlen)
		outlen = 0;
	c->bytes_out += outlen;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	/* The handshake's last reply, if libevent had not sent it yet. */
	if (net_send_all(fd, outbuf, outlen) != 0)
		goto fail;
	bufferevent_free(c->bev);	/* closes the original descriptor */
	c->bev = NULL;
	c->remote = 1;
	memset(&ho, 0, sizeof ho);
	ho.ch = hs->chan;
	memset(&hs->chan, 0, sizeof hs->chan);
	ho.plain = plain;
	ho.plainlen = plainlen;
	ho.raw = raw;
	ho.rawlen = rawlen;
	ho.ctl = -1;
	/* Whose session: its key (for the records of a resumed connection)
	   and the scope of its weight-cache entries. */
	ho.key = hs->res.key;
	snprintf(c->ident, sizeof c->ident, "%s", hs->res.ident);
	wcache_scope(hs->res.authed ? config_share_group(&srv->cfg,
	    hs->res.ident) : NULL, hs->res.authed ? hs->res.ident : NULL,
	    hs->res.authed ? &hs->res.key : NULL, &ho.scope);
	if (hs->res.authed)
		log_info("client %s (%s): identity %s, cache %s", c->addr,
		    session_client_name(c->sess), hs->res.ident,
		    ho.scope.tenant);
	if (hs->res.resumable) {
		int sv[2];

		/* Its worker waits on sv[1] for the connections that resume
		 * it; ours is sv[0]. */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) ==
		    -1)
			log_warn("client %s: cannot resume: %s", c->addr,
			    strerror(errno));
		else {
			c->resumable = 1;
			memcpy(c->token, hs->res.token, sizeof c->token);
			c->ctl = sv[0];
			ho.ctl = sv[1];
			ho.resumable = 1;
			ho.resume_ms = srv->env.hs.resume_ms;
		}
	}
	if (srv->iso == ISO_PROCESS) {
		client_fork_worker(c, fd, &ho);
		sodium_memzero(&ho.key, sizeof ho.key);
		if (ho.ctl != -1)
			close(ho.ctl);
		free(raw);
		free(plain);
		free(outbuf);
		return;
	}
	if (remote_start(fd, c->addr, session_client_name(c->sess), &ho,
	    &srv->renv, &c->rstats, c) == -1) {
		sodium_memzero(&ho.key, sizeof ho.key);
		log_warn("client %s: cannot start a thread", c->addr);
		chan_fini(&ho.ch);
		if (ho.ctl != -1)
			close(ho.ctl);
		close(fd);
		client_free(c);
	} else {
		if (ho.ctl != -1)
			close(ho.ctl);	/* not taken: no resume */
		log_debug("client %s (%s): remoting", c->addr,
		    session_client_name(c->sess));
	}
	free(raw);
	free(plain);
	free(outbuf);
	return;
fail:
	log_warn("client %s: cannot hand over: %s", c->addr, strerror(errno));
	if (fd != -1)
		close(fd);
	free(raw);
	free(plain);
	free(outbuf);
	client_free(c);
}

/* The remoting client of session id, if it waits to be resumed. */
static struct client *
server_resumable(struct server *srv, uint64_t id)
{
	struct client *c;

	TAILQ_FOREACH(c, &srv->clients, entry)
		if (c->remote && c->resumable && c->ctl != -1 &&
		    session_id(c->sess) == id)
			return c;
	return NULL;
}

/*
 * hshake's resume_find: the session is there, the token is its, and the
 * identity that resumes it is the one that started it.
 */
static int
server_resume_find(void *arg, uint64_t id, const uint8_t *token,
    const char *ident, struct msg_redirect *moved)
{
	struct server *srv = arg;
	struct client *c = server_resumable(srv, id);
	struct tomb *tb;

	if (c != NULL)
		return (auth_equal16(c->token, token) == 0) &
		    (strcmp(c->ident, ident) == 0) ? 0 : -1;
	/* Gone elsewhere, within its window: 1, and where. */
	tombs_prune(srv, now_ns());
	TAILQ_FOREACH(tb, &srv->tombs, entry)
		if (tb->id == id && (auth_equal16(tb->token, token) == 0) &
		    (strcmp(tb->ident, ident) == 0)) {
			*moved = tb->to;
			return 1;
		}
	return -1;
}

/*
 * hshake's welcome_features: a client in a cache_share group names its
 * entries strongly (wcache.c), and is told so.
 */
static uint32_t
server_welcome_features(void *arg, const char *ident, uint32_t offered)
{
	struct server *srv = arg;

	return ident[0] != '\0' && (offered & FEAT_NAMES) &&
	    config_share_group(&srv->cfg, ident) != NULL ? FEAT_NAMES : 0;
}

/*
 * WELCOME resumed a session: the connection, as it is, goes to that
 * session's worker (or thread) on its channel, with what was read after
 * the handshake; this client is done.
 */
static void
client_resume(struct client *c)
{
	struct server *srv = c->srv;
	struct hshake *hs = session_hshake(c->sess);
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct client *t = server_resumable(srv, hs->res.session);
	struct remote_resume rr;
	size_t outlen = evbuffer_get_length(out);
	uint8_t *raw = NULL, *outbuf = NULL;
	int fd = -1;

	memset(&rr, 0, sizeof rr);
	rr.rawlen = (uint32_t)evbuffer_get_length(in);
	if (t == NULL || (raw = malloc(rr.rawlen + 1)) == NULL ||
	    (outbuf = malloc(outlen + 1)) == NULL ||
	    (fd = dup(bufferevent_getfd(c->bev))) == -1) {
		log_warn("client %s: cannot resume session %llu: %s", c->addr,
		    (unsigned long long)hs->res.session, t == NULL ?
		    "it just ended" : strerror(errno));
		goto done;
	}
	evbuffer_remove(in, raw, rr.rawlen);
	/* A bufferevent's output is frozen at its start: not any more. */
	evbuffer_unfreeze(out, 1);
	if (evbuffer_remove(out, outbuf, outlen) != (int)outlen)
		outlen = 0;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	/* WELCOME first, if libevent had not sent it yet. */
	if (net_send_all(fd, outbuf, outlen) != 0) {
		log_info("client %s: gone before its resume was handed over",
		    c->addr);
		goto done;
	}
	memcpy(rr.cnonce, hs->res.cnonce, sizeof rr.cnonce);
	memcpy(rr.snonce, hs->res.snonce, sizeof rr.snonce);
	rr.authed = (uint32_t)hs->res.authed;
	if (remote_resume_send(t->ctl, fd, &rr, raw) == -1) {
		log_warn("client %s: cannot resume session %llu: its worker "
		    "is gone", c->addr, (unsigned long long)hs->res.session);
		goto done;
	}
	log_info("client %s (%s): resumes session %llu of %s", c->addr,
	    session_client_name(c->sess), (unsigned long long)hs->res.session,
	    t->addr);
	/* The worker serves it from here on; the client's address is new. */
	snprintf(t->addr, sizeof t->addr, "%s", c->addr);
done:
	if (fd != -1)
		close(fd);
	free(raw);
	free(outbuf);
	/* Our descriptor closes; the worker holds its own. */
	client_free(c);
}

/*
 * A resumable session's bulk lane (proto.h, PROTO_LANE_RHELLO) came to our
 * address: it goes, with its hello, to that session's worker (or thread),
 * which checks the rest and speaks first; this client is done.
 */
static void
client_lane(struct client *c)
{
	struct server *srv = c->srv;
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct remote_resume rr;
	struct lane_rhello h;
	struct client *t;
	int fd = -1;

	memset(&rr, 0, sizeof rr);
	rr.kind = REMOTE_LANE;
	evbuffer_remove(in, rr.lane, sizeof rr.lane);
	if (evbuffer_get_length(in) > 0 ||
	    proto_lane_rhello_dec(rr.lane, sizeof rr.lane, &h) == -1) {
		log_info("client %s: a malformed lane hello, closing", c->addr);
		goto done;
	}
	if ((t = server_resumable(srv, h.session)) == NULL) {
		log_info("client %s: a lane of session %llu, which is not "
		    "here, closing", c->addr, (unsigned long long)h.session);
		goto done;
	}
	if ((fd = dup(bufferevent_getfd(c->bev))) == -1) {
		log_warn("client %s: a lane: %s", c->addr, strerror(errno));
		goto done;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (remote_resume_send(t->ctl, fd, &rr, NULL) == -1)
		log_info("client %s: a lane of session %llu, whose worker is "
		    "gone", c->addr, (unsigned long long)h.session);
	else
		log_debug("client %s: lane %u (epoch %u) of session %llu",
		    c->addr, (unsigned)h.idx, (unsigned)h.epoch,
		    (unsigned long long)h.session);
done:
	if (fd != -1)
		close(fd);
	client_free(c);
}

/* Counts bytes as the socket takes them from the output buffer. */
static void
client_out_cb(struct evbuffer *b, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct client *c = arg;

	c->bytes_out += info->n_deleted;
}

/* Counts what arrives before the session consumes it. */
static void
client_in_cb(struct evbuffer *b, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct client *c = arg;

	c->bytes_in += info->n_added;
}

static void
client_read(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(bev);
	int rc;

	if (c->closing) {
		/* Discarded: the session is over. */
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	if (c->fresh) {
		uint8_t m[4];

		/* A lane's hello, or a HELLO (whose length is never this). */
		if (evbuffer_get_length(in) < sizeof m)
			return;
		evbuffer_copyout(in, m, sizeof m);
		if (((uint32_t)m[0] | (uint32_t)m[1] << 8 |
		    (uint32_t)m[2] << 16 | (uint32_t)m[3] << 24) !=
		    PROTO_LANE_RMAGIC)
			c->fresh = 0;
		else if (evbuffer_get_length(in) < PROTO_LANE_RHELLO)
			return;
		else {
			client_lane(c);
			return;
		}
	}
	/* The clients that proved the key are limited to max_clients. */
	c->srv->env.hs.full = c->srv->nclients - c->srv->npending >=
	    c->srv->cfg.max_clients;
	rc = session_input(c->sess, in, out);
	if (session_ready(c->sess) && c->hs_timer != NULL) {
		event_free(c->hs_timer);
		c->hs_timer = NULL;
	}
	if (c->pending && session_ready(c->sess)) {
		c->pending = 0;
		c->srv->npending--;
	}
	if (rc == SESSION_CLOSE) {
		client_close_after_flush(c);
		return;
	}
	if (rc == SESSION_REMOTE) {
		client_go_remote(c);
		return;
	}
	if (rc == SESSION_RESUME) {
		client_resume(c);
		return;
	}
	if (c->srv->draining && !session_busy(c->sess)) {
		client_say_shutdown(c);
		return;
	}
	if (evbuffer_get_length(out) > OUT_HIGH) {
		/* A client that sends but does not read waits for us. */
		bufferevent_disable(bev, EV_READ);
		c->paused = 1;
	}
}

/* Output drained below OUT_LOW (or to zero). */
static void
client_write(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;
	struct evbuffer *out = bufferevent_get_output(bev);

	if (c->closing) {
		if (!c->shut && evbuffer_get_length(out) == 0)
			client_shutdown(c);
		return;
	}
	if (session_busy(c->sess)) {
		session_fill(c->sess, out);
		if (c->srv->draining && !session_busy(c->sess)) {
			client_say_shutdown(c);
			return;
		}
	}
	if (c->paused && evbuffer_get_length(out) < OUT_LOW) {
		c->paused = 0;
		bufferevent_enable(bev, EV_READ);
		client_read(bev, c);	/* what arrived meanwhile */
	}
}

static void
client_event(struct bufferevent *bev, short what, void *arg)
{
	struct client *c = arg;

	if (what & BEV_EVENT_ERROR)
		log_debug("client %s: %s", c->addr, strerror(errno));
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		client_free(c);
}

/* Queues an ERROR frame that the client will read before we close. */
static void
client_error(struct client *c, uint32_t code, const char *text)
{
	/* In a record once the handshake is done, as every frame. */
	hshake_error(session_hshake(c->sess), bufferevent_get_output(c->bev),
	    0, code, text);
}

/* Draining: the client's request is answered; tell it why we go. */
static void
client_say_shutdown(struct client *c)
{
	client_error(c, PERR_SHUTDOWN, "no new requests accepted");
	client_close_after_flush(c);
}

static void
client_hs_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;

	session_timeout(c->sess, bufferevent_get_output(c->bev));
	client_close_after_flush(c);
}

static void
server_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct server *srv = arg;
	struct client *c;
	struct timeval tv;
	char addr[64], host[48];

	net_addr_str(sa, addr, sizeof addr);
	if (srv->draining) {
		proto_refuse(fd, PERR_SHUTDOWN, "no new clients accepted");
		return;
	}
	/*
	 * Connections in the handshake have limits of their own, overall
	 * and per address, so that those who do not hold the key never
	 * take the slots of those who do (max_clients counts those).
	 */
	net_host_str(sa, host, sizeof host);
	if (srv->npending >= srv->cfg.max_handshakes ||
	    server_pending_from(srv, host) >= srv->cfg.max_handshakes_addr) {
		if (now_ns() - srv->busy_logged > 1000000000ull) {
			log_warn("client %s: refused, %d handshakes under way "
			    "(%d from its address)", addr, srv->npending,
			    server_pending_from(srv, host));
			srv->busy_logged = now_ns();
		}
		proto_refuse(fd, PERR_AGAIN, "too many handshakes under way");
		return;
	}
	net_nodelay(fd);
	/* A client host that vanishes is noticed within two minutes. */
	(void)net_keepalive(fd, 60, 10, 6);
	if ((c = calloc(1, sizeof *c)) == NULL) {
		evutil_closesocket(fd);
		return;
	}
	c->srv = srv;
	c->rs = &c->rstats;
	c->since = now_ns();
	c->ctl = -1;
	snprintf(c->addr, sizeof c->addr, "%s", addr);
	snprintf(c->host, sizeof c->host, "%s", host);
	c->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->sess = session_new(&srv->env, addr);
	c->hs_timer = evtimer_new(srv->base, client_hs_timeout, c);
	if (c->bev == NULL || c->sess == NULL || c->hs_timer == NULL) {
		log_warn("client %s: out of memory", addr);
		if (c->bev != NULL)
			bufferevent_free(c->bev);
		else
			evutil_closesocket(fd);
		if (c->sess != NULL)
			session_free(c->sess);
		if (c->hs_timer != NULL)
			event_free(c->hs_timer);
		free(c);
		return;
	}
	TAILQ_INSERT_TAIL(&srv->clients, c, entry);
	srv->nclients++;
	c->pending = 1;
	c->fresh = 1;
	srv->npending++;
	evbuffer_add_cb(bufferevent_get_output(c->bev), client_out_cb, c);
	evbuffer_add_cb(bufferevent_get_input(c->bev), client_in_cb, c);
	bufferevent_setcb(c->bev, client_read, client_write, client_event, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, OUT_LOW, 0);
	/* Bulk clients send fast: fewer, larger reads and writes. */
	bufferevent_set_max_single_read(c->bev, 1 << 20);
	bufferevent_set_max_single_write(c->bev, 1 << 20);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	tv.tv_sec = (time_t)srv->cfg.handshake_timeout;
	tv.tv_usec = (suseconds_t)((srv->cfg.handshake_timeout -
	    (double)tv.tv_sec) * 1e6);
	evtimer_add(c->hs_timer, &tv);
	log_debug("client %s: accepted", addr);
}

static void
server_accept_error(struct evconnlistener *l, void *arg)
{
	/* EMFILE and friends: log, keep listening; clients retry. */
	log_warn("accept: %s", strerror(errno));
}

/* Binds host:port; on failure logs why and returns NULL. */
static struct evconnlistener *
server_bind(struct server *srv, const char *host, int port, char *bound,
    size_t boundlen)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct evconnlistener *l;
	char err[256];

	if (net_resolve(host, port, 1, &ss, &sslen, err, sizeof err) == -1) {
		log_error("listen %s:%d: %s", host, port, err);
		return NULL;
	}
	l = evconnlistener_new_bind(srv->base, server_accept, srv,
	    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
	    128, (struct sockaddr *)&ss, (int)sslen);
	if (l == NULL) {
		log_error("listen %s:%d: %s", host[0] ? host : "*", port,
		    strerror(errno));
		return NULL;
	}
	evconnlistener_set_error_cb(l, server_accept_error);
	sslen = sizeof ss;
	getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&ss, &sslen);
	net_addr_str((struct sockaddr *)&ss, bound, boundlen);
	log_info("listening on %s", bound);
	return l;
}

static void
server_env_update(struct server *srv)
{
	srv->env.hs.key = NULL;
	srv->env.hs.keys = &srv->cfg.keys;
	srv->env.hs.max_frame = (uint32_t)srv->cfg.max_frame;
	srv->env.hs.name = srv->cfg.name;
	srv->env.hs.peer_kind = "client";
	srv->env.hs.self_kind = "server";
	srv->env.hs.resume_ms = (uint32_t)(srv->cfg.resume * 1000);
	srv->env.hs.resume_find = server_resume_find;
	srv->env.hs.welcome_features = server_welcome_features;
	srv->env.hs.resume_arg = srv;
	srv->env.hs.draining = srv->draining;
	srv->env.status = server_status;
	srv->env.migrate = server_migrate_one;
	srv->env.arg = srv;
	srv->env.remote_ok = srv->be != NULL;
	srv->env.remote_why = srv->be_why;
	srv->renv.be = srv->be;
	srv->renv.max_frame = (uint32_t)srv->cfg.max_frame;
	srv->renv.spin_ns = (uint64_t)(srv->cfg.spin * 1e9);
	srv->renv.spin_max_ns = (uint64_t)(srv->cfg.spin_max * 1e9);
	remote_spin_init();
	srv->renv.max_lanes = (uint32_t)srv->cfg.lanes;
	srv->renv.idle_s = srv->cfg.idle_timeout;
	srv->renv.keep_bytes = (size_t)srv->cfg.resume_buffer;
	srv->renv.keep_images = srv->cfg.peer_host[0] != '\0';
	srv->renv.done = client_remote_end;
	srv->renv.arg = srv;
}

/*
 * Whether be starts, tried in a child process: the CUDA driver must not
 * be started in the server itself, whose workers fork from it (a forked
 * child cannot use a driver its parent started).  0, or -1 with err.
 */
static int
probe_backend(const struct backend *be, char *err, size_t errlen)
{
	int p[2], st;
	ssize_t n;
	size_t got = 0;
	pid_t pid;

	if (pipe(p) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(stderr);
	if ((pid = fork()) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		char e[256] = "";

		close(p[0]);
		if (be->init(e, sizeof e) == 0)
			e[0] = '\0';
		else if (e[0] == '\0')
			snprintf(e, sizeof e, "failed");
		(void)!write(p[1], e, strlen(e));
		_exit(0);
	}
	close(p[1]);
	while (got + 1 < errlen && (n = read(p[0], err + got,
	    errlen - 1 - got)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			break;
		got += (size_t)n;
	}
	err[got] = '\0';
	close(p[0]);
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(err, errlen, "the driver crashed while starting");
		return -1;
	}
	return got > 0 ? -1 : 0;
}

/* Picks the backend the configuration asks for; -1 if it cannot run. */
static int
server_backend(struct server *srv)
{
	const char *want = srv->cfg.backend;
	char err[256];

	srv->be = NULL;
	if (strcmp(want, "none") == 0) {
		snprintf(srv->be_why, sizeof srv->be_why, "disabled");
		return 0;
	}
	if (strcmp(want, "host") == 0) {
		host_backend_configure(srv->cfg.host_kernels, 0);
		if (backend_host.init(err, sizeof err) == -1) {
			log_error("host backend: %s", err);
			return -1;
		}
		srv->be = &backend_host;
		srv->be_ready = 1;
		log_info("backend: host (no GPU: a test backend)");
		return 0;
	}
	if ((srv->iso == ISO_PROCESS ? probe_backend(&backend_cuda, err,
	    sizeof err) : backend_cuda.init(err, sizeof err)) == -1) {
		if (strcmp(want, "cuda") == 0) {
			log_error("cuda backend: %s", err);
			return -1;
		}
		snprintf(srv->be_why, sizeof srv->be_why, "%s", err);
		log_info("backend: none (%s)", err);
		return 0;
	}
	srv->be = &backend_cuda;
	srv->be_ready = srv->iso != ISO_PROCESS;
	log_info("backend: cuda%s", srv->iso == ISO_PROCESS ?
	    " (a worker process per client)" : "");
	return 0;
}

/* SIGHUP: a new configuration if it is valid, else the old one stays. */
static void
server_reload(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	struct config nc;
	struct evconnlistener *l;
	char bound[64];

	log_info("reloading %s", srv->ov.config);
	svc_reloading();
	if (server_configure(&nc, &srv->ov) != 0) {
		config_free(&nc);
		log_error("reload failed; keeping the running configuration");
		svc_ready(NULL);
		return;
	}
	if (!srv->draining && (strcmp(nc.listen_host, srv->cfg.listen_host)
	    != 0 || nc.listen_port != srv->cfg.listen_port)) {
		evconnlistener_free(srv->listener);
		srv->listener = NULL;
		if ((l = server_bind(srv, nc.listen_host, nc.listen_port,
		    bound, sizeof bound)) == NULL) {
			/* Back to the old address, which we just gave up. */
			l = server_bind(srv, srv->cfg.listen_host,
			    srv->cfg.listen_port, bound, sizeof bound);
			snprintf(nc.listen_host, sizeof nc.listen_host, "%s",
			    srv->cfg.listen_host);
			nc.listen_port = srv->cfg.listen_port;
		}
		srv->listener = l;
		if (l != NULL)
			snprintf(srv->bound, sizeof srv->bound, "%s", bound);
	}
	config_free(&srv->cfg);
	srv->cfg = nc;
	server_env_update(srv);
	log_info("configuration reloaded");
	svc_ready(NULL);
}

/*
 * Orders every remoting client's worker to move its session to the peer
 * (gleam-protocol(5), Migration), each at its next point at rest, and
 * marks them.  Returns how many were.
 */
static int
server_migrate_all(struct server *srv)
{
	struct remote_resume rr;
	struct client *c;
	int n = 0;

	if (srv->cfg.peer_host[0] == '\0') {
		log_warn("migrate: no peer configured");
		return 0;
	}
	memset(&rr, 0, sizeof rr);
	rr.kind = REMOTE_MIGRATE;
	snprintf(rr.host, sizeof rr.host, "%s", srv->cfg.peer_host);
	rr.port = (uint32_t)srv->cfg.peer_port;
	TAILQ_FOREACH(c, &srv->clients, entry) {
		if (!c->remote)
			continue;
		if (!c->resumable || c->ctl == -1) {
			log_info("client %s (%s): not migrated: its session "
			    "is not resumable", c->addr,
			    session_client_name(c->sess));
			continue;
		}
		if (remote_resume_send(c->ctl, -1, &rr, NULL) == -1)
			continue;
		c->migrating = 1;
		n++;
	}
	log_info("migrating %d client%s to %s:%d", n, n == 1 ? "" : "s",
	    srv->cfg.peer_host, srv->cfg.peer_port);
	return n;
}

/*
 * MIGRATE_ONE (gleam-protocol(5), Migration): from an admin, one remoting
 * client's session to host:port, as SIGUSR1 orders every one's.
 */
static int
server_migrate_one(void *arg, struct session *from,
    const struct msg_migrate_one *m, char *why, size_t whylen)
{
	struct server *srv = arg;
	struct hshake *hs = session_hshake(from);
	struct remote_resume rr;
	struct client *c, *req = NULL;

	TAILQ_FOREACH(c, &srv->clients, entry)
		if (c->sess == from)
			req = c;
	if (req == NULL) {
		snprintf(why, whylen, "the request's connection is gone");
		return PERR_INTERNAL;
	}
	if (config_admin(&srv->cfg, hs->res.authed, hs->res.ident, req->host,
	    why, whylen) == -1) {
		log_warn("client %s (%s): MIGRATE_ONE refused: %s", req->addr,
		    hs->res.ident[0] ? hs->res.ident : "no identity", why);
		return PERR_AUTH;
	}
	TAILQ_FOREACH(c, &srv->clients, entry) {
		if (!c->remote || c->sess == NULL)
			continue;
		if (m->selector == MIGSEL_SESSION ?
		    session_id(c->sess) == m->session :
		    strcmp(c->addr, m->address) == 0)
			break;
	}
	if (c == NULL) {
		if (m->selector == MIGSEL_SESSION)
			snprintf(why, whylen, "no remoting client has session "
			    "%llu here", (unsigned long long)m->session);
		else
			snprintf(why, whylen, "no remoting client at %s here",
			    m->address);
		return PERR_NOSESSION;
	}
	if (!c->resumable || c->ctl == -1) {
		snprintf(why, whylen, "session %llu is not resumable (its "
		    "client did not ask), so it cannot move",
		    (unsigned long long)session_id(c->sess));
		return PERR_STATE;
	}
	if (c->migrating) {
		snprintf(why, whylen, "session %llu is already ordered to "
		    "move", (unsigned long long)session_id(c->sess));
		return PERR_STATE;
	}
	memset(&rr, 0, sizeof rr);
	rr.kind = REMOTE_MIGRATE;
	snprintf(rr.host, sizeof rr.host, "%s", m->host);
	rr.port = m->port;
	if (remote_resume_send(c->ctl, -1, &rr, NULL) == -1) {
		snprintf(why, whylen, "session %llu is ending",
		    (unsigned long long)session_id(c->sess));
		return PERR_STATE;
	}
	c->migrating = 1;
	log_info("client %s (%s): session %llu ordered to %s:%u by %s (%s)",
	    c->addr, session_client_name(c->sess),
	    (unsigned long long)session_id(c->sess), m->host, m->port,
	    req->addr, hs->res.ident[0] ? hs->res.ident : "no identity");
	return 0;
}

/* SIGUSR1: every client to the peer. */
static void
server_migrate(evutil_socket_t sig, short what, void *arg)
{
	(void)server_migrate_all(arg);
}

static void
server_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	log_warn("drain: %d clients still connected after %.0f s, closing",
	    srv->nclients, srv->cfg.drain_timeout);
	event_base_loopexit(srv->base, NULL);
}

/* SIGTERM, SIGINT: stop accepting, let current requests finish, exit. */
static void
server_drain(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	struct client *c, *next;
	struct timeval tv;

	if (srv->draining) {
		log_info("second signal, exiting now");
		event_base_loopbreak(srv->base);
		return;
	}
	log_info("signal %d: draining %d clients", (int)sig, srv->nclients);
	svc_stopping();
	/* drain: migrate: they go to the peer rather than being cut off. */
	if (srv->cfg.drain == DRAIN_MIGRATE)
		(void)server_migrate_all(srv);
	srv->draining = 1;
	srv->env.hs.draining = 1;
	if (srv->listener != NULL) {
		evconnlistener_free(srv->listener);
		srv->listener = NULL;
	}
	for (c = TAILQ_FIRST(&srv->clients); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (!c->remote && !c->closing && !session_busy(c->sess))
			client_say_shutdown(c);
		/* Nothing resumes now: a session that waits for it ends. */
		if (c->ctl != -1 && !c->migrating) {
			close(c->ctl);
			c->ctl = -1;
		}
	}
	if (srv->nclients == 0) {
		event_base_loopexit(srv->base, NULL);
		return;
	}
	tv.tv_sec = (time_t)srv->cfg.drain_timeout;
	tv.tv_usec = (suseconds_t)((srv->cfg.drain_timeout -
	    (double)tv.tv_sec) * 1e6);
	srv->ev_drain = evtimer_new(srv->base, server_drain_timeout, srv);
	if (srv->ev_drain != NULL)
		evtimer_add(srv->ev_drain, &tv);
}

struct server *
server_new(const struct config *cfg, const struct overrides *ov, int *exitcode)
{
	struct event_config *ec;
	struct server *srv;

	*exitcode = EXIT_IO;
	if ((srv = calloc(1, sizeof *srv)) == NULL)
		return NULL;
	srv->cfg = *cfg;
	srv->ov = *ov;
	srv->start = now_ns();
	TAILQ_INIT(&srv->clients);
	TAILQ_INIT(&srv->tombs);
	server_env_update(srv);
	if (evthread_use_pthreads() == -1)
		goto fail;
	/* No precise timers: they cost a timerfd call every loop turn. */
	if ((ec = event_config_new()) == NULL)
		goto fail;
	srv->base = event_base_new_with_config(ec);
	event_config_free(ec);
	if (srv->base == NULL)
		goto fail;
	/* Signals first: "listening on" tells scripts they may signal us. */
	srv->ev_hup = evsignal_new(srv->base, SIGHUP, server_reload, srv);
	srv->ev_term = evsignal_new(srv->base, SIGTERM, server_drain, srv);
	srv->ev_int = evsignal_new(srv->base, SIGINT, server_drain, srv);
	srv->ev_usr1 = evsignal_new(srv->base, SIGUSR1, server_migrate, srv);
	if (srv->ev_hup == NULL || srv->ev_term == NULL ||
	    srv->ev_int == NULL || srv->ev_usr1 == NULL)
		goto fail;
	evsignal_add(srv->ev_hup, NULL);
	evsignal_add(srv->ev_term, NULL);
	evsignal_add(srv->ev_int, NULL);
	evsignal_add(srv->ev_usr1, NULL);
	srv->iso = cfg->isolation;
	if (srv->iso == ISO_PROCESS) {
		srv->ev_chld = evsignal_new(srv->base, SIGCHLD, server_reap,
		    srv);
		if (srv->ev_chld == NULL)
			goto fail;
		evsignal_add(srv->ev_chld, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
	srv->listener = server_bind(srv, cfg->listen_host, cfg->listen_port,
	    srv->bound, sizeof srv->bound);
	if (srv->listener == NULL) {
		*exitcode = EXIT_NET;
		goto fail;
	}
	/* After the bind, so that "address in use" comes alone. */
	if (server_backend(srv) == -1) {
		*exitcode = EXIT_IO;
		goto fail;
	}
	server_env_update(srv);
	*exitcode = 0;
	return srv;
fail:
	server_free(srv);
	return NULL;
}

int
server_after_fork(struct server *srv)
{
	return event_reinit(srv->base);
}

int
server_run(struct server *srv)
{
	if (event_base_dispatch(srv->base) == -1) {
		log_error("event loop failed");
		return EXIT_SOFTWARE;
	}
	log_info("exiting");
	return EXIT_OK;
}

void
server_free(struct server *srv)
{
	struct client *c;

	if (srv == NULL)
		return;
	srv->draining = 0;	/* no loopexit from here */
	while ((c = TAILQ_FIRST(&srv->clients)) != NULL) {
		if (c->remote && c->pid <= 0) {
			/* Its thread still runs; the process is ending. */
			TAILQ_REMOVE(&srv->clients, c, entry);
			continue;
		}
		client_free(c);
	}
	tombs_prune(srv, UINT64_MAX);
	if (srv->ev_drain != NULL)
		event_free(srv->ev_drain);
	if (srv->ev_chld != NULL)
		event_free(srv->ev_chld);
	if (srv->ev_int != NULL)
		event_free(srv->ev_int);
	if (srv->ev_term != NULL)
		event_free(srv->ev_term);
	if (srv->ev_hup != NULL)
		event_free(srv->ev_hup);
	if (srv->ev_usr1 != NULL)
		event_free(srv->ev_usr1);
	/*
	 * libevent has put back the handlers it found (the defaults): a late
	 * signal during the rest of the teardown must not kill us mid-way.
	 */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	if (srv->listener != NULL)
		evconnlistener_free(srv->listener);
	if (srv->base != NULL)
		event_base_free(srv->base);
	gpu_shutdown();
	free(srv);
}
