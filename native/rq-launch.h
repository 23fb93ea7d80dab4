/*
 * Shared by rq-launch's per-attempt launcher (rq-launch.c) and its launch server
 * (launch-server.c): the helpers both use to start an attempt.
 */
#ifndef RQ_LAUNCH_H
#define RQ_LAUNCH_H
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#define MAX_CGROUPS 8

/* Prints "rollout-queue sandbox: WHAT DETAIL: strerror(errno)" and exits 125. */
void fail(const char *what, const char *detail);
/* Prints the usage with WHY and exits 125. */
void usage(const char *why);
/* Joins the cgroups whose cgroup.procs files are FILES (the calling process), or exits 125. */
void join_cgroups(char **files, int count);
/* In a new user namespace: maps UID and GID to root. */
void map_root(uid_t uid, gid_t gid);
/* Status as a shell reports it: the exit code, or 128+n for a death by signal n. */
int shell_status(int status);
/* Writes PARTS (NULL-terminated) to stderr with write(2) alone: safe in a vfork child. */
void say(const char *const *parts);
/* Execs ARGV (restoring MASK when given); on failure prints why and exits 127/126. */
void exec_program(char **argv, const sigset_t *mask);
/* As a PID namespace's init: starts ARGV, reaps every orphan, exits with ARGV's status. */
void start_and_reap(char **argv, const sigset_t *mask);

/* attempt.c: one attempt of the launch server (or of --probe) */
#define MAX_RO 64
#define MAX_ATTEMPTS 64
#define STATUS_FD 3

/* One attempt asked for: fields point into the command frame. */
struct command {
  const char *id;
  const char *cwd;
  long long data_bytes; /* -1: no RLIMIT_DATA */
  long long uid, gid;   /* -1: keep this process' identity */
  int tenant;           /* exec PROGRAM in place, bubblewrap's status on STATUS_FD */
  char *cgroups[MAX_CGROUPS];
  int cgroup_count;
  char **argv; /* NULL-terminated */
  char **env;  /* NULL-terminated */
};

/* What the cloned init needs: the command and its socket ends. */
struct init_start {
  const struct command *command;
  int stdio[3];
  int status;   /* write end of the status pipe, or -1 */
  int lifeline; /* read end: EOF once the server is gone; -1 in --probe */
};

/* Clones the attempt's init into a new PID namespace; answers the rollout child over the channel. */
void start_attempt(struct command *command, int lifeline);
/* Reaps every attempt init that exited, answering {"t":"exit"} for each. */
void reap_attempts(void);
/* Marks every attempt slot free. */
void clear_attempts(void);

/* launch-server.c: the IPC channel to the rollout child */
void send_line(const char *text);
int send_handle(int fd, const char *json);
void send_error(const char *id, const char *what, int error);
/* Moves into a mount namespace of its own and stages each of RO at STAGE/<index> (--tenant). */
void setup_tenant(const char *stage, char **ro, int ro_count);
/* The user namespace of --user: the caller's uid and gid mapped to root. */
void enter_user_namespace(void);
/* Set by main once setup_tenant ran: mount frames are served only then. */
extern int own_mounts;
/* --serve: answers frames until the rollout child closes stdin or the IPC channel. */
int serve(void);
/* --probe: one tenant attempt of PROGRAM with this process' stdio; returns its status. */
int probe(char **program, long long uid, long long gid);

#endif
