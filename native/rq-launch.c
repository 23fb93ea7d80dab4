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
 *   rq-launch --serve [--parent PID] [--user] [--tenant STAGE [--ro PATH]...]
 *
 * A launch server: one per rollout child, started with a Node IPC channel (NODE_CHANNEL_FD).
 * Each attempt it is asked for (a frame on stdin, see parse_launch) it starts as --pid does,
 * but cloned from this small process straight into a new PID namespace: the rollout child
 * (a ~60 MB Node process) no longer forks for every attempt, and no launcher program starts.
 * The attempt's init leads a new session (so a signal to its process group reaches the whole
 * attempt), joins the cgroups, and starts PROGRAM with vfork on three fresh socket pairs, whose
 * other ends go to the rollout child over the IPC channel as Node handles (the `NODE_HANDLE`
 * message child_process.send() uses for a net.Socket); then {"t":"started"} with the init's
 * pid, and {"t":"exit"} once the init was reaped. --user makes one user namespace for the
 * server, mapping the caller to root, in which every attempt's PID namespace is made.
 *
 * --tenant STAGE  The tenant view (src/sandbox/tenant-view.ts): the server moves into a mount
 *               namespace of its own (a slave of the host's: host mounts still reach it, its own
 *               never reach the host), mounts a small tmpfs on the empty directory STAGE and
 *               binds each --ro PATH at STAGE/<index> there, so an unprivileged uid that cannot
 *               walk to PATH (a pyenv under /root) still reaches it for bubblewrap to bind
 *               read-only. In that namespace it then answers `mount` frames (a size-capped tmpfs
 *               per attempt holding work/, tmp/ and shm/, owned by the attempt's uid) and
 *               `umount` frames; every such mount goes with the server's namespace, so nothing
 *               an attempt wrote outlives a SIGKILLed worker. A launch frame with `tenant` set
 *               drops to the frame's uid and gid (setgroups, setresgid, setresuid, then
 *               PR_SET_NO_NEW_PRIVS) after the cgroup join and execs PROGRAM (bubblewrap) in
 *               place as the namespace's init: PID 1 ignores a SIGTERM sent to the attempt's
 *               process group, so it reaches the artifact and not bubblewrap's monitor.
 *               bubblewrap's --json-status-fd is fd 3, read by the server when the init is
 *               reaped: {"t":"exit"} says "setup":"failed" when bubblewrap exited without
 *               starting the program (its own error, never the artifact's).
 *
 *   rq-launch --probe [--user] [--tenant STAGE [--ro PATH]...] [--identity UID:GID] -- PROGRAM [ARG]...
 *
 * Does what --serve sets up, then runs PROGRAM once as a tenant attempt would run (its own PID
 * namespace, the identity drop, exec'd in place) with this process' stdio, and exits with its
 * status (125 when the set-up failed): the worker's one-time check that the tenant view works.
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
#include <grp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CGROUPS 8

static void fail(const char *what, const char *detail) {
  dprintf(2, "rollout-queue sandbox: %s%s%s: %s\n", what, detail ? " " : "", detail ? detail : "", strerror(errno));
  _exit(125);
}

static void usage(const char *why) {
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

static void join_cgroups(char **files, int count) {
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

static void map_root(uid_t uid, gid_t gid) {
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
static int shell_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Writes `parts` (NULL-terminated) to stderr with write(2) alone: safe in a vfork child. */
static void say(const char *const *parts) {
  for (; *parts; parts++) {
    if (write(2, *parts, strlen(*parts)) < 0) return;
  }
}

/*
 * Execs PROGRAM, first restoring the signal mask `mask` when given. Runs in a vfork child: only
 * system calls and the exec until it is replaced (it shares the init's memory until then).
 */
static void exec_program(char **argv, const sigset_t *mask) {
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
static void start_and_reap(char **argv, const sigset_t *mask) {
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

/* ---------- the tenant view: mount namespace, read-only stage, identity ---------- */

#define MAX_RO 64

/*
 * Moves this process into a mount namespace of its own, a slave of the one it was in (host
 * mounts still propagate in; nothing mounted here propagates out), then mounts a small tmpfs
 * on STAGE and binds each of `ro` at STAGE/<index>. Done once per server, as root or as root
 * of the server's user namespace.
 */
static void setup_tenant(const char *stage, char **ro, int ro_count) {
  if (unshare(CLONE_NEWNS) < 0) fail("cannot make a mount namespace", NULL);
  if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0) fail("cannot make the mount namespace a slave of the host's", NULL);
  if (mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,nr_inodes=1024,mode=0755") < 0) fail("cannot mount the read-only stage on", stage);
  for (int i = 0; i < ro_count; i++) {
    char target[4096];
    struct stat st;
    snprintf(target, sizeof target, "%s/%d", stage, i);
    if (stat(ro[i], &st) < 0) fail("cannot expose", ro[i]);
    if (S_ISDIR(st.st_mode)) {
      if (mkdir(target, 0755) < 0) fail("cannot make", target);
    } else {
      int fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) fail("cannot make", target);
      close(fd);
    }
    if (mount(ro[i], target, NULL, MS_BIND | MS_REC, NULL) < 0) fail("cannot bind", ro[i]);
  }
}

/*
 * Becomes `uid`:`gid` with no supplementary groups and PR_SET_NO_NEW_PRIVS (no set-user-ID
 * program can give anything back), then re-arms the death signal, which the kernel clears on a
 * change of credentials (prctl(2) PR_SET_PDEATHSIG). Returns 0, or -1 with errno set.
 */
static int drop_identity(uid_t uid, gid_t gid) {
  if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) return -1;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -1;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) return -1;
  return 0;
}

/* ---------- launch server (--serve) ---------- */

#define MAX_ATTEMPTS 64
#define MAX_FRAME (16 * 1024 * 1024)
#define INIT_STACK_BYTES (256 * 1024)
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

static struct {
  pid_t pid;
  int status; /* read end of the attempt's status pipe, or -1 */
  char id[32];
} attempts[MAX_ATTEMPTS];

static int channel = -1;
/* Set once the server is in a mount namespace of its own (--tenant): only then are mount frames served. */
static int own_mounts = 0;

/* Writes all of `text` to the IPC channel; the rollout child reads it as one message. */
static void send_line(const char *text) {
  size_t left = strlen(text);
  while (left > 0) {
    ssize_t n = write(channel, text, left);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      _exit(0); /* the rollout child is gone: so are we */
    }
    text += n;
    left -= (size_t)n;
  }
}

/* Sends `fd` to the rollout child as a net.Socket, with `json` (a NODE_HANDLE message line). */
static int send_handle(int fd, const char *json) {
  struct iovec iov = {(void *)json, strlen(json)};
  union {
    char buffer[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  memset(&control, 0, sizeof control);
  struct msghdr message = {0};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control.buffer;
  message.msg_controllen = sizeof control.buffer;
  struct cmsghdr *header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(header), &fd, sizeof(int));
  ssize_t n;
  do n = sendmsg(channel, &message, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == (ssize_t)iov.iov_len ? 0 : -1;
}

/* Ids are the rollout child's own numbers; anything else would not be a JSON string as it is. */
static const char *safe_id(const char *id) {
  for (const char *c = id; *c; c++) {
    if ((*c < '0' || *c > '9') || c - id > 20) return "";
  }
  return id;
}

static void send_error(const char *id, const char *what, int error) {
  char line[512];
  snprintf(line, sizeof line, "{\"t\":\"error\",\"id\":\"%s\",\"code\":\"%s\",\"message\":\"%s: %s\"}\n", safe_id(id),
           error == EAGAIN ? "EAGAIN" : error == ENOMEM ? "ENOMEM" : error == EMFILE ? "EMFILE" : error == ENFILE ? "ENFILE" : error == ENOSPC ? "ENOSPC" : "ELAUNCH",
           what, strerror(error));
  send_line(line);
}

/* PID 1 of one attempt's namespace, cloned from the server (or, in --probe, from main). */
static int attempt_init(void *arg) {
  const struct init_start *start = arg;
  const struct command *command = start->command;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) _exit(125);
  /* The server may have died before the death signal was armed: its end of the lifeline is then closed. */
  struct pollfd alive = {start->lifeline, POLLIN, 0};
  if (start->lifeline >= 0 && poll(&alive, 1, 0) != 0) _exit(125);
  setsid();
  for (int i = 0; i < 3; i++) {
    if (start->stdio[i] != i && dup2(start->stdio[i], i) < 0) _exit(125);
  }
  if (start->status >= 0 && dup2(start->status, STATUS_FD) < 0) _exit(125);
  int first = start->status >= 0 ? STATUS_FD + 1 : 3;
  /* The lifeline is kept (at `first`) until the identity drop is done; the check is made again after it. */
  alive.fd = -1;
  if (start->lifeline >= 0) {
    if (dup3(start->lifeline, first, O_CLOEXEC) < 0) _exit(125);
    alive.fd = first++;
  }
  /* Nothing of the server's (its channel, other attempts' sockets) reaches the program. */
  if (close_range(first, ~0U, 0) < 0) {
    for (int fd = first; fd < 1024; fd++) close(fd);
  }
  join_cgroups((char **)command->cgroups, command->cgroup_count);
  if (chdir(command->cwd) < 0) {
    const char *const parts[] = {"rollout-queue sandbox: cannot enter ", command->cwd, ": ", strerror(errno), "\n", NULL};
    say(parts);
    _exit(125);
  }
  if (command->data_bytes >= 0) {
    struct rlimit limit = {(rlim_t)command->data_bytes, (rlim_t)command->data_bytes};
    if (setrlimit(RLIMIT_DATA, &limit) < 0) _exit(125);
  }
  if (command->uid >= 0 && drop_identity((uid_t)command->uid, (gid_t)command->gid) < 0) fail("cannot drop to the attempt's uid", NULL);
  /* Dropping the identity cleared the death signal and re-armed it: the server may have gone in between. */
  if (alive.fd >= 0) {
    if (poll(&alive, 1, 0) != 0) _exit(125);
    close(alive.fd);
  }
  environ = command->env; /* execvp looks PROGRAM up on the attempt's PATH */
  sigset_t none;
  sigemptyset(&none);
  if (command->tenant) {
    sigprocmask(SIG_SETMASK, &none, NULL);
    exec_program(command->argv, NULL);
  }
  start_and_reap(command->argv, &none);
  return 125; /* not reached */
}

/* The next NUL-terminated field of a frame, or NULL past its end. */
static char *next_field(char **at, char *end) {
  if (*at >= end) return NULL;
  char *field = *at;
  char *nul = memchr(field, '\0', (size_t)(end - field));
  if (!nul) return NULL;
  *at = nul + 1;
  return field;
}

/* A decimal number field ("" = -1); -2 for one that does not parse. */
static long long number_field(const char *field) {
  if (!field) return -2;
  if (!*field) return -1;
  char *rest;
  long long value = strtoll(field, &rest, 10);
  return *rest || value < 0 ? -2 : value;
}

/*
 * Parses a launch frame after its op and id: NUL-terminated fields cwd, data bytes ("" for
 * none), uid and gid ("" to keep ours), tenant ("1" or ""), then three lists each as a count
 * field and that many fields: cgroup.procs files, argv, env. Returns 0, or -1 when it does not parse.
 */
static int parse_launch(char *at, char *end, struct command *command, char **list_store, size_t list_capacity) {
  size_t used = 0;
#define NEXT() ({ char *field_ = next_field(&at, end); if (!field_) return -1; field_; })
  command->cwd = NEXT();
  command->data_bytes = number_field(NEXT());
  command->uid = number_field(NEXT());
  command->gid = number_field(NEXT());
  command->tenant = strcmp(NEXT(), "1") == 0;
  if (command->data_bytes < -1 || command->uid < -1 || command->gid < -1 || (command->uid < 0) != (command->gid < 0)) return -1;
  long count = atol(NEXT());
  if (count < 0 || count > MAX_CGROUPS) return -1;
  command->cgroup_count = (int)count;
  for (long i = 0; i < count; i++) command->cgroups[i] = NEXT();
  for (int list = 0; list < 2; list++) {
    count = atol(NEXT());
    if (count < 0 || (size_t)count + 1 > list_capacity - used || (list == 0 && count == 0)) return -1;
    char **items = list_store + used;
    for (long i = 0; i < count; i++) items[i] = NEXT();
    items[count] = NULL;
    used += (size_t)count + 1;
    if (list == 0) command->argv = items;
    else command->env = items;
  }
#undef NEXT
  return at == end ? 0 : -1;
}

static char init_stack[INIT_STACK_BYTES] __attribute__((aligned(16)));

static void start_attempt(struct command *command, int lifeline) {
  int slot = -1;
  for (int i = 0; i < MAX_ATTEMPTS; i++) {
    if (attempts[i].pid == 0) {
      slot = i;
      break;
    }
  }
  if (slot < 0 || strlen(command->id) >= sizeof attempts[0].id) {
    send_error(command->id, "too many attempts at once", EAGAIN);
    return;
  }
  /* [0] ours (sent to the rollout child), [1] the program's. */
  int pairs[3][2];
  for (int i = 0; i < 3; i++) {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[i]) < 0) {
      int error = errno;
      for (int j = 0; j < i; j++) close(pairs[j][0]), close(pairs[j][1]);
      send_error(command->id, "cannot make the attempt's stdio", error);
      return;
    }
    /* Ours non-blocking, as libuv needs a stream it did not open itself (uv_accept of a received
     * handle does not set it): on a blocking end, a read that filled libuv's 64 KiB buffer is
     * followed by one more, which blocked the rollout child's event loop while the program,
     * blocked writing its other stream, waited for it. The program's end stays blocking, as
     * stdio is. */
    int flags = fcntl(pairs[i][0], F_GETFL);
    if (flags < 0 || fcntl(pairs[i][0], F_SETFL, flags | O_NONBLOCK) < 0) {
      int error = errno;
      for (int j = 0; j <= i; j++) close(pairs[j][0]), close(pairs[j][1]);
      send_error(command->id, "cannot make the attempt's stdio non-blocking", error);
      return;
    }
  }
  /* bubblewrap's --json-status-fd: read here once the init is reaped (it is a few hundred bytes). */
  int status[2] = {-1, -1};
  if (command->tenant && pipe2(status, O_CLOEXEC | O_NONBLOCK) < 0) {
    int error = errno;
    for (int i = 0; i < 3; i++) close(pairs[i][0]), close(pairs[i][1]);
    send_error(command->id, "cannot make the attempt's status pipe", error);
    return;
  }
  struct init_start start = {command, {pairs[0][1], pairs[1][1], pairs[2][1]}, status[1], lifeline};
  /* Not CLONE_VM: the init gets its own copy of this small process (and of the stack above). */
  pid_t init = clone(attempt_init, init_stack + sizeof init_stack, CLONE_NEWPID | SIGCHLD, &start);
  int error = errno;
  for (int i = 0; i < 3; i++) close(pairs[i][1]);
  if (status[1] >= 0) close(status[1]);
  if (init < 0) {
    for (int i = 0; i < 3; i++) close(pairs[i][0]);
    if (status[0] >= 0) close(status[0]);
    send_error(command->id, "cannot make the attempt's PID namespace", error);
    return;
  }
  attempts[slot].pid = init;
  attempts[slot].status = status[0];
  strcpy(attempts[slot].id, command->id);
  static const char *const names[3] = {"stdin", "stdout", "stderr"};
  char line[160];
  for (int i = 0; i < 3; i++) {
    snprintf(line, sizeof line, "{\"cmd\":\"NODE_HANDLE\",\"type\":\"net.Socket\",\"msg\":{\"t\":\"stdio\",\"id\":\"%s\",\"stream\":\"%s\"}}\n", command->id, names[i]);
    if (send_handle(pairs[i][0], line) < 0) _exit(0);
    close(pairs[i][0]);
  }
  snprintf(line, sizeof line, "{\"t\":\"started\",\"id\":\"%s\",\"pid\":%d}\n", command->id, (int)init);
  send_line(line);
}

/*
 * Whether bubblewrap started the program: its --json-status-fd stream (read end `fd`, closed
 * here) holds an "exit-code" only when its set-up finished (bubblewrap's report_child_exit_status).
 */
static int tenant_started(int fd) {
  char text[2048];
  size_t filled = 0;
  for (;;) {
    ssize_t n = read(fd, text + filled, sizeof text - 1 - filled);
    if (n > 0 && (filled += (size_t)n) < sizeof text - 1) continue;
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  close(fd);
  text[filled] = '\0';
  return strstr(text, "\"exit-code\"") != NULL;
}

static void reap_attempts(void) {
  for (;;) {
    int status;
    pid_t done = waitpid(-1, &status, WNOHANG);
    if (done <= 0) return;
    for (int i = 0; i < MAX_ATTEMPTS; i++) {
      if (attempts[i].pid != done) continue;
      char line[160];
      const char *setup = "";
      if (attempts[i].status >= 0) setup = tenant_started(attempts[i].status) || WIFSIGNALED(status) ? ",\"setup\":\"ok\"" : ",\"setup\":\"failed\"";
      if (WIFSIGNALED(status)) snprintf(line, sizeof line, "{\"t\":\"exit\",\"id\":\"%s\",\"signal\":%d%s}\n", attempts[i].id, WTERMSIG(status), setup);
      else snprintf(line, sizeof line, "{\"t\":\"exit\",\"id\":\"%s\",\"code\":%d%s}\n", attempts[i].id, WEXITSTATUS(status), setup);
      attempts[i].pid = 0;
      attempts[i].status = -1;
      send_line(line);
    }
  }
}

/*
 * A mount frame after its op and id: dir, size bytes, inodes, uid, gid. Mounts a tmpfs of that
 * size on dir (an empty directory), owned by root, holding work/ (0700), tmp/ and shm/ (1777),
 * each owned by uid:gid, and answers {"t":"mounted"}.
 */
static void mount_attempt(const char *id, char *at, char *end) {
  const char *dir = next_field(&at, end);
  long long bytes = number_field(next_field(&at, end)), inodes = number_field(next_field(&at, end));
  long long uid = number_field(next_field(&at, end)), gid = number_field(next_field(&at, end));
  if (!dir || bytes <= 0 || inodes <= 0 || uid < 0 || gid < 0 || at != end) {
    errno = EINVAL;
    send_error(id, "bad mount frame", EINVAL);
    return;
  }
  char options[128], path[4200];
  snprintf(options, sizeof options, "size=%lld,nr_inodes=%lld,mode=0711", bytes, inodes);
  if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, options) < 0) {
    send_error(id, "cannot mount the attempt's tmpfs", errno);
    return;
  }
  static const char *const parts[3] = {"work", "tmp", "shm"};
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, parts[i]);
    if (mkdir(path, 0700) < 0 || chown(path, (uid_t)uid, (gid_t)gid) < 0 || chmod(path, i == 0 ? 0700 : 01777) < 0) {
      int error = errno;
      umount2(dir, MNT_DETACH);
      send_error(id, "cannot make the attempt's directories", error);
      return;
    }
  }
  char line[96];
  snprintf(line, sizeof line, "{\"t\":\"mounted\",\"id\":\"%s\"}\n", id);
  send_line(line);
}

/* An umount frame after its op and id: dir. Unmounts it lazily and answers {"t":"unmounted"}. */
static void umount_attempt(const char *id, char *at, char *end) {
  const char *dir = next_field(&at, end);
  if (!dir || at != end) {
    send_error(id, "bad umount frame", EINVAL);
    return;
  }
  if (umount2(dir, MNT_DETACH) < 0 && errno != EINVAL) {
    send_error(id, "cannot unmount the attempt's tmpfs", errno);
    return;
  }
  char line[96];
  snprintf(line, sizeof line, "{\"t\":\"unmounted\",\"id\":\"%s\"}\n", id);
  send_line(line);
}

/* One frame: op, id, then the op's fields (see parse_launch, mount_attempt, umount_attempt). */
static void handle_frame(char *frame, size_t length, int lifeline, char **lists) {
  char *at = frame, *end = frame + length;
  const char *op = next_field(&at, end);
  const char *id = next_field(&at, end);
  size_t id_length = id ? strspn(id, "0123456789") : 0;
  if (!op || !id || id_length == 0 || id_length > 20 || id[id_length] != '\0') {
    send_error(id ? id : "", "bad command frame", EINVAL);
    return;
  }
  if (strcmp(op, "launch") == 0) {
    struct command command;
    command.id = id;
    if (parse_launch(at, end, &command, lists, 65536) == 0) start_attempt(&command, lifeline);
    else send_error(id, "bad command frame", EINVAL);
  } else if ((strcmp(op, "mount") == 0 || strcmp(op, "umount") == 0) && !own_mounts) {
    /* Never in the host's mount namespace: what it mounted would outlive the server. */
    send_error(id, "mount frames need a server started with --tenant", EINVAL);
  } else if (strcmp(op, "mount") == 0) {
    mount_attempt(id, at, end);
  } else if (strcmp(op, "umount") == 0) {
    umount_attempt(id, at, end);
  } else {
    send_error(id, "bad command frame", EINVAL);
  }
}

/* The user namespace of --user: the caller's uid and gid mapped to root. */
static void enter_user_namespace(void) {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER) < 0) fail("cannot make a user namespace", NULL);
  map_root(uid, gid);
}

static int serve(void) {
  const char *channel_fd = getenv("NODE_CHANNEL_FD");
  if (!channel_fd) usage("--serve needs a Node IPC channel (NODE_CHANNEL_FD)");
  channel = atoi(channel_fd);
  for (int i = 0; i < MAX_ATTEMPTS; i++) attempts[i].status = -1;
  /* Attempts must not see the server's environment (the IPC variables) by accident: each gets its own. */
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  if (sigprocmask(SIG_BLOCK, &child, NULL) < 0) fail("cannot block SIGCHLD", NULL);
  int reaped = signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
  if (reaped < 0) fail("cannot make a signalfd", NULL);
  int lifeline[2];
  if (pipe2(lifeline, O_CLOEXEC) < 0) fail("cannot make a pipe", NULL);
  size_t capacity = 64 * 1024, filled = 0;
  char *buffer = malloc(capacity);
  char **lists = malloc(sizeof(char *) * 65536);
  if (!buffer || !lists) fail("cannot allocate", NULL);
  for (;;) {
    struct pollfd fds[3] = {{0, POLLIN, 0}, {channel, POLLIN, 0}, {reaped, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      fail("poll", NULL);
    }
    if (fds[2].revents) {
      struct signalfd_siginfo info;
      while (read(reaped, &info, sizeof info) > 0) {}
      reap_attempts();
    }
    if (fds[1].revents) {
      /* The rollout child's NODE_HANDLE_ACKs: nothing to do with them but read them. */
      char discard[4096];
      ssize_t n = read(channel, discard, sizeof discard);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return 0;
    }
    if (fds[0].revents) {
      if (filled == capacity) {
        if (capacity >= MAX_FRAME + 4) fail("command too large", NULL);
        capacity *= 2;
        buffer = realloc(buffer, capacity);
        if (!buffer) fail("cannot allocate", NULL);
      }
      ssize_t n = read(0, buffer + filled, capacity - filled);
      if (n == 0) return 0; /* the rollout child closed our stdin: it is done with us */
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return 0;
      }
      filled += (size_t)n;
      for (;;) {
        if (filled < 4) break;
        uint32_t length;
        memcpy(&length, buffer, 4);
        if (length > MAX_FRAME) fail("command too large", NULL);
        if (filled < 4 + (size_t)length) break;
        handle_frame(buffer + 4, length, lifeline[0], lists);
        memmove(buffer, buffer + 4 + length, filled - 4 - length);
        filled -= 4 + (size_t)length;
      }
    }
  }
}

/* --probe: one tenant attempt with this process' stdio; exits with its status. */
static int probe(char **program, long long uid, long long gid) {
  struct command command = {0};
  command.id = "0";
  command.cwd = "/";
  command.data_bytes = -1;
  command.uid = uid;
  command.gid = gid;
  command.tenant = 1;
  command.argv = program;
  command.env = environ;
  struct init_start start = {&command, {0, 1, 2}, -1, -1};
  pid_t init = clone(attempt_init, init_stack + sizeof init_stack, CLONE_NEWPID | SIGCHLD, &start);
  if (init < 0) fail("cannot make a PID namespace", NULL);
  int status;
  while (waitpid(init, &status, 0) < 0) {
    if (errno != EINTR) fail("cannot wait for the namespace's init", NULL);
  }
  return shell_status(status);
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
