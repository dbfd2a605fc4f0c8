/*
 * gleam-sched migrate: asks a server to move one running client's session
 * to another server (gleam-protocol(5), Migration; MIGRATE_ONE).
 */
#ifndef SCHED_MIGRATE_H
#define SCHED_MIGRATE_H

/*
 * server and target are host[:port]; which is a session number or a
 * client's address as the server's status shows it; key_file may be NULL.
 * Returns an exit code (exitcode.h), having said why on failure.
 */
int	migrate_main(const char *server, const char *which, const char *target,
	    const char *key_file);

struct auth_key;
struct msg_migrate_one;

/*
 * One MIGRATE_ONE to the server at host:port, proving key (NULL: none)
 * under the connection's name (the server's log and status show it).
 * Blocks for at most 10 s.  Returns an exit code, with the reason in err
 * on failure; the daemon's re-planning calls it from its own thread.
 */
int	migrate_send(const char *host, int port,
	    const struct msg_migrate_one *, const struct auth_key *key,
	    const char *name, char *err, size_t errlen);

#endif
