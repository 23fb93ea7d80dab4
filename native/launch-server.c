/*
 * The launch server and the probe of rq-launch (native/rq-launch.c has the per-attempt launcher
 * and main):
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

/* ---------- launch server (--serve) ---------- */

#define MAX_FRAME (16 * 1024 * 1024)

static int channel = -1;
/* Set once the server is in a mount namespace of its own (--tenant): only then are mount frames served. */
int own_mounts = 0;

/* Writes all of `text` to the IPC channel; the rollout child reads it as one message. */
void send_line(const char *text) {
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
int send_handle(int fd, const char *json) {
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

void send_error(const char *id, const char *what, int error) {
  char line[512];
  snprintf(line, sizeof line, "{\"t\":\"error\",\"id\":\"%s\",\"code\":\"%s\",\"message\":\"%s: %s\"}\n", safe_id(id),
           error == EAGAIN ? "EAGAIN" : error == ENOMEM ? "ENOMEM" : error == EMFILE ? "EMFILE" : error == ENFILE ? "ENFILE" : error == ENOSPC ? "ENOSPC" : "ELAUNCH",
           what, strerror(error));
  send_line(line);
}

/* PID 1 of one attempt's namespace, cloned from the server (or, in --probe, from main). */
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
void enter_user_namespace(void) {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER) < 0) fail("cannot make a user namespace", NULL);
  map_root(uid, gid);
}

int serve(void) {
  const char *channel_fd = getenv("NODE_CHANNEL_FD");
  if (!channel_fd) usage("--serve needs a Node IPC channel (NODE_CHANNEL_FD)");
  channel = atoi(channel_fd);
  clear_attempts();
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