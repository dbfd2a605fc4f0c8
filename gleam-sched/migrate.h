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

#endif
