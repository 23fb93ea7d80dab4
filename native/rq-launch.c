/*
 * rq-launch: starts one rollout attempt's program inside its containment, in one exec.
 *
 * It does what the util-linux chain `setpriv --pdeathsig KILL -- unshare --pid --fork
 * --kill-child -- /bin/sh -c <init script>` (plus `prlimit --data` and the cgroup join) does,
 * without three program starts per attempt (each one a dynamic link and, for the tools, a
 * locale set-up: ~3 ms of CPU apiece on a small VM, more than the work itself).
 *
 *   rq-launch [--parent PID] [--pid [--user]] [--cgroup FILE]... [--data BYTES] -- PROGRAM [ARG]...
 *
 * --parent PID  After PR_SET_PDEATHSIG(SIGKILL) (always set: the launcher dies with the
 *               process that spawned it), exit 125 unless getppid() is PID, so a parent that
 *               died before the death signal was armed is not outlived.
 * --pid         A new PID namespace: the launcher forks its init (PID 1, killed when the
 *               launcher dies, as `unshare --kill-child`), which joins the cgroups, forks
 *               PROGRAM (PID 2, so it keeps ordinary signal semantics), reaps every orphan in
 *               the namespace, and exits with PROGRAM's status (128+n for signal n) as soon as
 *               PROGRAM exits; the kernel then kills whatever is left in the namespace. The
 *               launcher blocks SIGINT and SIGTERM (as `unshare --fork` does), so a SIGTERM to
 *               the process group reaches PROGRAM only (PID 1 has no handler: the kernel does
 *               not deliver it there), and exits with the init's status.
 * --user        With --pid, also a user namespace mapping the caller's uid and gid to root
 *               (as `unshare --user --map-root-user`), for a worker without CAP_SYS_ADMIN.
 * --cgroup FILE Joins the cgroup whose `cgroup.procs` is FILE before PROGRAM starts (the init
 *               at --pid, else the launcher itself before its exec), so everything PROGRAM
 *               forks is inside from its first instruction.
 * --data BYTES  RLIMIT_DATA (soft and hard) for PROGRAM, as `prlimit --data=BYTES`.
 *
 * Exit status: PROGRAM's (without --pid the launcher execs it in place). 125: the launcher
 * itself failed (a message on stderr starts "rollout-queue sandbox:"); 126/127: PROGRAM could
 * not be executed / was not found, as a shell reports them.
 *
 *   rq-launch --serve …, rq-launch --probe …: the launch server, native/launch-server.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "rq-launch.h"

void fail(const char *what, const char *detail) {
  dprintf(2, "rollout-queue sandbox: %s%s%s: %s\n", what, detail ? " " : "", detail ? detail : "", strerror(errno));
  _exit(125);
}

void usage(const char *why) {
  dprintf(2, "rollout-queue sandbox: rq-launch: %s\n"
             "usage: rq-launch [--parent PID] [--pid [--user]] [--cgroup FILE]... [--data BYTES] -- PROGRAM [ARG]...\n", why);
  _exit(125);
}

static void write_file(const char *file, const char *text) {
  int fd = open(file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open", file);
  ssize_t n = write(fd, text, strlen(text));
  if (n < 0 || (size_t)n != strlen(text)) fail("cannot write", file);
  close(fd);
}

void join_cgroups(char **files, int count) {
  /* "0" is the writing process, resolved in its own PID namespace. */
  for (int i = 0; i < count; i++) {
    int fd = open(files[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) {
      dprintf(2, "rollout-queue sandbox: cannot join cgroup %s: %s\n", files[i], strerror(errno));
      _exit(125);
    }
    close(fd);
  }
}

void map_root(uid_t uid, gid_t gid) {
  char line[64];
  /* Without "deny", an unprivileged process may not write gid_map (user_namespaces(7)). */
  int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (write(fd, "deny", 4) != 4 && errno != EPERM) fail("cannot write", "/proc/self/setgroups");
    close(fd);
  }
  snprintf(line, sizeof line, "0 %u 1", (unsigned)uid);
  write_file("/proc/self/uid_map", line);
  snprintf(line, sizeof line, "0 %u 1", (unsigned)gid);
  write_file("/proc/self/gid_map", line);
}

/* Status as a shell reports it: the exit code, or 128+n for a death by signal n. */
int shell_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Writes `parts` (NULL-terminated) to stderr with write(2) alone: safe in a vfork child. */
void say(const char *const *parts) {
  for (; *parts; parts++) {
    if (write(2, *parts, strlen(*parts)) < 0) return;
  }
}

/*
 * Execs PROGRAM, first restoring the signal mask `mask` when given. Runs in a vfork child: only
 * system calls and the exec until it is replaced (it shares the init's memory until then).
 */
void exec_program(char **argv, const sigset_t *mask) {
  if (mask) sigprocmask(SIG_SETMASK, mask, NULL);
  execvp(argv[0], argv);
  int code = errno == ENOENT ? 127 : 126;
  const char *const parts[] = {"rollout-queue sandbox: cannot run ", argv[0], ": ", strerror(errno), "\n", NULL};
  say(parts);
  _exit(code);
}

/*
 * The rest of an attempt's init (PID 1 of its namespace): starts PROGRAM as its child, reaps
 * every orphan the namespace gives it, and exits with PROGRAM's status as soon as PROGRAM
 * exits (the kernel then kills what is left in the namespace).
 * vfork: the init's memory is not copied for a child that only execs (a fork costs ~0.7 ms of
 * CPU on a small VM, most of it making and tearing down the copy). The init's own creation
 * cannot be one: the kernel refuses CLONE_VM into another PID namespace.
 */
void start_and_reap(char **argv, const sigset_t *mask) {
  pid_t program = vfork();
  if (program < 0) fail("cannot start", argv[0]);
  if (program == 0) exec_program(argv, mask);
  /* Hold none of the attempt's pipes: they close when PROGRAM and what it started close them. */
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    close(null);
  }
  for (;;) {
    int status;
    pid_t done = wait(&status);
    if (done < 0) {
      if (errno == EINTR) continue;
      _exit(125); /* ECHILD: PROGRAM was reaped already; cannot happen, as only we wait. */
    }
    if (done == program) _exit(shell_status(status));
  }
}

/* PID 1 of the attempt's namespace. */
static void run_init(char **argv, char **cgroups, int cgroup_count, const sigset_t *mask) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) fail("cannot set the death signal", NULL);
  join_cgroups(cgroups, cgroup_count);
  start_and_reap(argv, mask);
}

int main(int argc, char **argv) {
  pid_t parent = 0;
  int pid_namespace = 0, user_namespace = 0, cgroup_count = 0, serving = 0, probing = 0, ro_count = 0;
  char *cgroups[MAX_CGROUPS], *ro[MAX_RO];
  const char *stage = NULL;
  long long data_bytes = -1, uid = -1, gid = -1;
  int i = 1;
  for (; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--") == 0) break;
    if (strcmp(arg, "--pid") == 0) pid_namespace = 1;
    else if (strcmp(arg, "--serve") == 0) serving = 1;
    else if (strcmp(arg, "--probe") == 0) probing = 1;
    else if (strcmp(arg, "--user") == 0) user_namespace = 1;
    else if (strcmp(arg, "--parent") == 0 && i + 1 < argc) parent = (pid_t)atol(argv[++i]);
    else if (strcmp(arg, "--tenant") == 0 && i + 1 < argc) stage = argv[++i];
    else if (strcmp(arg, "--ro") == 0 && i + 1 < argc) {
      if (ro_count == MAX_RO) usage("too many --ro paths");
      ro[ro_count++] = argv[++i];
    } else if (strcmp(arg, "--identity") == 0 && i + 1 < argc) {
      if (sscanf(argv[++i], "%lld:%lld", &uid, &gid) != 2 || uid < 0 || gid < 0) usage("--identity takes UID:GID");
    } else if (strcmp(arg, "--cgroup") == 0 && i + 1 < argc) {
      if (cgroup_count == MAX_CGROUPS) usage("too many --cgroup files");
      cgroups[cgroup_count++] = argv[++i];
    } else if (strncmp(arg, "--data=", 7) == 0) {
      char *end;
      data_bytes = strtoll(arg + 7, &end, 10);
      if (*end != '\0' || data_bytes < 0) usage("--data takes a number of bytes");
    } else usage("unknown option");
  }
  if (serving && (i < argc || pid_namespace || cgroup_count > 0 || data_bytes >= 0 || uid >= 0 || probing)) usage("--serve takes only --parent, --user, --tenant and --ro");
  if (probing && (pid_namespace || cgroup_count > 0 || data_bytes >= 0 || i + 1 >= argc)) usage("--probe takes --user, --tenant, --ro, --identity and a PROGRAM after --");
  if (!serving && !probing && i + 1 >= argc) usage("no program after --");
  if (user_namespace && !pid_namespace && !serving && !probing) usage("--user needs --pid");
  if ((ro_count > 0 && !stage) || (stage && !serving && !probing)) usage("--tenant and --ro go with --serve or --probe");
  if (uid >= 0 && !probing) usage("--identity goes with --probe");

  /* Preserved across execve; the kernel sends it when the thread that spawned us exits. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) fail("cannot set the death signal", NULL);
  if (parent > 0 && getppid() != parent) _exit(125);
  if (serving || probing) {
    if (user_namespace) enter_user_namespace();
    if (stage) {
      setup_tenant(stage, ro, ro_count);
      own_mounts = 1;
    }
    return serving ? serve() : probe(argv + i + 1, uid, gid);
  }
  char **program = argv + i + 1;

  if (data_bytes >= 0) {
    struct rlimit limit = {(rlim_t)data_bytes, (rlim_t)data_bytes};
    if (setrlimit(RLIMIT_DATA, &limit) < 0) fail("cannot set RLIMIT_DATA", NULL);
  }

  if (!pid_namespace) {
    join_cgroups(cgroups, cgroup_count);
    exec_program(program, NULL);
  }

  sigset_t block, original;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &block, &original) < 0) fail("cannot block signals", NULL);
  uid_t own_uid = geteuid();
  gid_t own_gid = getegid();
  if (unshare(CLONE_NEWPID | (user_namespace ? CLONE_NEWUSER : 0)) < 0) fail("cannot make a PID namespace", NULL);
  if (user_namespace) map_root(own_uid, own_gid);
  pid_t init = fork();
  if (init < 0) fail("cannot fork the namespace's init", NULL);
  if (init == 0) run_init(program, cgroups, cgroup_count, &original);

  int status;
  while (waitpid(init, &status, 0) < 0) {
    if (errno != EINTR) fail("cannot wait for the namespace's init", NULL);
  }
  if (WIFSIGNALED(status)) {
    /* Die of the same signal, as `unshare --fork` does; 128+n where it cannot kill us. */
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t just;
    sigemptyset(&just);
    sigaddset(&just, sig);
    sigprocmask(SIG_UNBLOCK, &just, NULL);
    raise(sig);
  }
  return shell_status(status);
}
