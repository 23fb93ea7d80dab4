/*
 * One attempt of rq-launch's launch server (or of --probe): the tenant view's mount namespace and
 * read-only stage (setup_tenant), the attempt's init cloned into a new PID namespace
 * (attempt_init: cgroups, identity drop, then PROGRAM, exec'd in place for a tenant attempt), and
 * the reaping that answers the rollout child. See the top of launch-server.c for the protocol.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "rq-launch.h"

#define INIT_STACK_BYTES (256 * 1024)

/* ---------- the tenant view: mount namespace, read-only stage, identity ---------- */

/*
 * Moves this process into a mount namespace of its own, a slave of the one it was in (host
 * mounts still propagate in; nothing mounted here propagates out), then mounts a small tmpfs
 * on STAGE and binds each of `ro` at STAGE/<index>. Done once per server, as root or as root
 * of the server's user namespace.
 */
void setup_tenant(const char *stage, char **ro, int ro_count) {
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

static struct {
  pid_t pid;
  int status; /* read end of the attempt's status pipe, or -1 */
  char id[32];
} attempts[MAX_ATTEMPTS];


void clear_attempts(void) {
  for (int i = 0; i < MAX_ATTEMPTS; i++) attempts[i].pid = 0, attempts[i].status = -1;
}

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
static char init_stack[INIT_STACK_BYTES] __attribute__((aligned(16)));

void start_attempt(struct command *command, int lifeline) {
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

void reap_attempts(void) {
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
int probe(char **program, long long uid, long long gid) {
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
