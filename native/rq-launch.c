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
 *   rq-launch --serve [--parent PID] [--user]
 *
 * A launch server: one per rollout child, started with a Node IPC channel (NODE_CHANNEL_FD).
 * Each attempt it is asked for (a frame on stdin, see read_command) it starts as --pid does,
 * but cloned from this small process straight into a new PID namespace: the rollout child
 * (a ~60 MB Node process) no longer forks for every attempt, and no launcher program starts.
 * The attempt's init leads a new session (so a signal to its process group reaches the whole
 * attempt), joins the cgroups, and starts PROGRAM with vfork on three fresh socket pairs, whose
 * other ends go to the rollout child over the IPC channel as Node handles (the `NODE_HANDLE`
 * message child_process.send() uses for a net.Socket); then {"t":"started"} with the init's
 * pid, and {"t":"exit"} once the init was reaped. --user makes one user namespace for the
 * server, mapping the caller to root, in which every attempt's PID namespace is made.
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

/* ---------- launch server (--serve) ---------- */

#define MAX_ATTEMPTS 64
#define MAX_FRAME (16 * 1024 * 1024)
#define INIT_STACK_BYTES (256 * 1024)

/* One attempt asked for: fields point into the command frame. */
struct command {
  const char *id;
  const char *cwd;
  long long data_bytes; /* -1: no RLIMIT_DATA */
  char *cgroups[MAX_CGROUPS];
  int cgroup_count;
  char **argv; /* NULL-terminated */
  char **env;  /* NULL-terminated */
};

/* What the cloned init needs: the command and its three socket ends. */
struct init_start {
  const struct command *command;
  int stdio[3];
  int lifeline; /* read end: EOF once the server is gone */
};

static struct {
  pid_t pid;
  char id[32];
} attempts[MAX_ATTEMPTS];

static int channel = -1;

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

static void send_error(const char *id, const char *what, int error) {
  char line[512];
  /* Ids are the rollout child's own numbers; anything else would not be a JSON string as it is. */
  for (const char *c = id; *c; c++) {
    if ((*c < '0' || *c > '9') || c - id > 20) {
      id = "";
      break;
    }
  }
  snprintf(line, sizeof line, "{\"t\":\"error\",\"id\":\"%s\",\"code\":\"%s\",\"message\":\"%s: %s\"}\n", id,
           error == EAGAIN ? "EAGAIN" : error == ENOMEM ? "ENOMEM" : error == EMFILE ? "EMFILE" : error == ENFILE ? "ENFILE" : "ELAUNCH",
           what, strerror(error));
  send_line(line);
}

/* PID 1 of one attempt's namespace, cloned from the server. */
static int attempt_init(void *arg) {
  const struct init_start *start = arg;
  const struct command *command = start->command;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) _exit(125);
  /* The server may have died before the death signal was armed: its end of the lifeline is then closed. */
  struct pollfd alive = {start->lifeline, POLLIN, 0};
  if (poll(&alive, 1, 0) != 0) _exit(125);
  setsid();
  for (int i = 0; i < 3; i++) {
    if (dup2(start->stdio[i], i) < 0) _exit(125);
  }
  /* Nothing of the server's (its channel, other attempts' sockets) reaches the program. */
  if (close_range(3, ~0U, 0) < 0) {
    for (int fd = 3; fd < 1024; fd++) close(fd);
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
  environ = command->env; /* execvp looks PROGRAM up on the attempt's PATH */
  sigset_t none;
  sigemptyset(&none);
  start_and_reap(command->argv, &none);
  return 125; /* not reached */
}

/*
 * Parses a command frame: NUL-terminated fields id, cwd, data bytes ("" for none), then three
 * lists each as a count field and that many fields: cgroup.procs files, argv, env. Returns 0,
 * or -1 for a frame that does not parse (its id, when it has one, gets an error).
 */
static int parse_command(char *frame, size_t length, struct command *command, char **list_store, size_t list_capacity) {
  char *at = frame, *end = frame + length;
  size_t used = 0;
#define NEXT() ({ char *field_ = at; char *nul_ = memchr(at, '\0', (size_t)(end - at)); if (!nul_) return -1; at = nul_ + 1; field_; })
  command->id = NEXT();
  size_t id_length = strspn(command->id, "0123456789");
  if (id_length == 0 || id_length > 20 || command->id[id_length] != '\0') return -1; /* it goes into JSON as it is */
  command->cwd = NEXT();
  const char *data = NEXT();
  command->data_bytes = *data ? atoll(data) : -1;
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
  struct init_start start = {command, {pairs[0][1], pairs[1][1], pairs[2][1]}, lifeline};
  /* Not CLONE_VM: the init gets its own copy of this small process (and of the stack above). */
  pid_t init = clone(attempt_init, init_stack + sizeof init_stack, CLONE_NEWPID | SIGCHLD, &start);
  int error = errno;
  for (int i = 0; i < 3; i++) close(pairs[i][1]);
  if (init < 0) {
    for (int i = 0; i < 3; i++) close(pairs[i][0]);
    send_error(command->id, "cannot make the attempt's PID namespace", error);
    return;
  }
  attempts[slot].pid = init;
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

static void reap_attempts(void) {
  for (;;) {
    int status;
    pid_t done = waitpid(-1, &status, WNOHANG);
    if (done <= 0) return;
    for (int i = 0; i < MAX_ATTEMPTS; i++) {
      if (attempts[i].pid != done) continue;
      char line[128];
      if (WIFSIGNALED(status)) snprintf(line, sizeof line, "{\"t\":\"exit\",\"id\":\"%s\",\"signal\":%d}\n", attempts[i].id, WTERMSIG(status));
      else snprintf(line, sizeof line, "{\"t\":\"exit\",\"id\":\"%s\",\"code\":%d}\n", attempts[i].id, WEXITSTATUS(status));
      attempts[i].pid = 0;
      send_line(line);
    }
  }
}

static int serve(int user_namespace) {
  const char *channel_fd = getenv("NODE_CHANNEL_FD");
  if (!channel_fd) usage("--serve needs a Node IPC channel (NODE_CHANNEL_FD)");
  channel = atoi(channel_fd);
  if (user_namespace) {
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER) < 0) fail("cannot make a user namespace", NULL);
    map_root(uid, gid);
  }
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
        struct command command;
        if (parse_command(buffer + 4, length, &command, lists, 65536) == 0) start_attempt(&command, lifeline[0]);
        else send_error(length > 0 && memchr(buffer + 4, '\0', length) ? buffer + 4 : "", "bad command frame", EINVAL);
        memmove(buffer, buffer + 4 + length, filled - 4 - length);
        filled -= 4 + (size_t)length;
      }
    }
  }
}

int main(int argc, char **argv) {
  pid_t parent = 0;
  int pid_namespace = 0, user_namespace = 0, cgroup_count = 0, serving = 0;
  char *cgroups[MAX_CGROUPS];
  long long data_bytes = -1;
  int i = 1;
  for (; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--") == 0) break;
    if (strcmp(arg, "--pid") == 0) pid_namespace = 1;
    else if (strcmp(arg, "--serve") == 0) serving = 1;
    else if (strcmp(arg, "--user") == 0) user_namespace = 1;
    else if (strcmp(arg, "--parent") == 0 && i + 1 < argc) parent = (pid_t)atol(argv[++i]);
    else if (strcmp(arg, "--cgroup") == 0 && i + 1 < argc) {
      if (cgroup_count == MAX_CGROUPS) usage("too many --cgroup files");
      cgroups[cgroup_count++] = argv[++i];
    } else if (strncmp(arg, "--data=", 7) == 0) {
      char *end;
      data_bytes = strtoll(arg + 7, &end, 10);
      if (*end != '\0' || data_bytes < 0) usage("--data takes a number of bytes");
    } else usage("unknown option");
  }
  if (serving && (i < argc || pid_namespace || cgroup_count > 0 || data_bytes >= 0)) usage("--serve takes only --parent and --user");
  if (!serving && i + 1 >= argc) usage("no program after --");
  if (user_namespace && !pid_namespace && !serving) usage("--user needs --pid");

  /* Preserved across execve; the kernel sends it when the thread that spawned us exits. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) fail("cannot set the death signal", NULL);
  if (parent > 0 && getppid() != parent) _exit(125);
  if (serving) return serve(user_namespace);
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
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWPID | (user_namespace ? CLONE_NEWUSER : 0)) < 0) fail("cannot make a PID namespace", NULL);
  if (user_namespace) map_root(uid, gid);
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
