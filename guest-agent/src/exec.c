/* Child processes: spawning, non-blocking pipes, reaping (as a subreaper), timeouts, and the
 * deferred answers of long polls. */
#define _GNU_SOURCE
#include "agent.h"
#include "base64.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { S_IN, S_OUT, S_ERR };

struct exec;
struct stream {
	struct watch w; /* fd -1 once closed */
	struct exec *ex;
	uint32_t events;
	struct buf hold; /* stdin: data still to write (from pos); stdout/err: output not yet returned */
	size_t pos;
	int64_t kept; /* bytes kept so far (counted against the cap) */
	int truncated;
	int drain; /* after exit: read and discard until EOF, so a background writer never gets EPIPE */
};

struct exec {
	int64_t handle;
	pid_t pid;
	int stock; /* guest-exec: whole output at exit, looked up by pid */
	int capture;
	struct stream s[3];
	int64_t cap;
	size_t hold_max;
	int64_t start, end, deadline;
	int reaped, status, timed_out;
	int detached; /* answered and freed as a handle; only its draining pipes remain */
	int stdin_open; /* stdin stays open after its first data, for vivarium-exec-write, until eof */
	int stdin_eof; /* the host has no more to write: close stdin once what is held was written */
	int tty; /* stdin and stdout are a terminal's master (s[S_ERR] is unused) */
	struct exec *next;
};

struct waiter {
	struct conn *c;
	int64_t handle;
	int64_t deadline;
	int on_output; /* answer as soon as there is output, not only once it is full or the process exited */
	char *id;
	size_t idlen;
	struct waiter *next;
};

struct rlimit child_nofile = {RLIM_INFINITY, RLIM_INFINITY};
static struct exec *execs, *freed;
static int nexecs, ndraining;
static int64_t next_handle = 1;
static struct waiter *waiters;

static void stream_close(struct stream *st)
{
	if (st->w.fd < 0)
		return;
	watch_set(&st->w, 0, &st->events);
	close(st->w.fd);
	st->w.fd = -1;
}

static int stream_full(const struct exec *ex, const struct stream *st)
{
	return !st->drain && st->hold.len >= ex->hold_max && st->kept < ex->cap;
}

/* The leader is reaped and the pipe has nothing more right now: whatever a background process
 * writes later is not part of the result. */
static void stream_drain(struct stream *st)
{
	if (st->w.fd >= 0)
		st->drain = 1;
}

/* Watch a pipe unless its buffer is full (backpressure: the writer blocks on a full pipe). */
static void stream_watch(struct stream *st)
{
	if (st->w.fd < 0)
		return;
	uint32_t ev = 0;
	if (st == &st->ex->s[S_IN])
		ev = st->pos < st->hold.len ? EPOLLOUT : 0;
	else if (!stream_full(st->ex, st))
		ev = EPOLLIN;
	watch_set(&st->w, ev, &st->events);
}

/*
 * Reads once from an output pipe. Returns 1 if something was read, 0 at EAGAIN or when full, -1 at
 * EOF. It reads into one buffer of the agent's and keeps what came: reserving the room in the
 * stream's own buffer first would allocate (and map) 64 KiB for every command, however little it
 * writes.
 */
static int stream_read(struct exec *ex, struct stream *st)
{
	static char chunk[65536];
	if (st->w.fd < 0)
		return -1;
	if (stream_full(ex, st))
		return 0;
	size_t room = sizeof chunk;
	int keep = !st->drain && st->kept < ex->cap;
	if (keep) {
		size_t left = ex->hold_max - st->hold.len;
		if ((int64_t)left > ex->cap - st->kept)
			left = (size_t)(ex->cap - st->kept);
		if (left < room)
			room = left;
	}
	ssize_t n = read(st->w.fd, chunk, room);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		stream_close(st);
		return -1;
	}
	if (keep) {
		buf_put(&st->hold, chunk, (size_t)n);
		st->kept += n;
	} else if (ex->capture && !st->drain) {
		st->truncated = 1;
	}
	return 1;
}

static void stream_write(struct stream *st)
{
	while (st->w.fd >= 0 && st->pos < st->hold.len) {
		ssize_t n = write(st->w.fd, st->hold.p + st->pos, st->hold.len - st->pos);
		if (n > 0) {
			st->pos += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		stream_close(st); /* EPIPE: the child does not want more input */
		buf_free(&st->hold);
		return;
	}
	st->hold.len = st->pos = 0;
	if (!st->ex->stdin_open || st->ex->stdin_eof) {
		stream_close(st);
		buf_free(&st->hold);
	} else {
		stream_watch(st); /* nothing to write until the host sends more */
	}
}

static struct exec *find_handle(int64_t h)
{
	for (struct exec *ex = execs; ex; ex = ex->next)
		if (!ex->stock && ex->handle == h)
			return ex;
	return NULL;
}

static void exec_free(struct exec *ex)
{
	for (struct exec **pp = &execs; *pp; pp = &(*pp)->next)
		if (*pp == ex) {
			*pp = ex->next;
			break;
		}
	for (int i = 0; i < 3; i++) {
		stream_close(&ex->s[i]);
		buf_free(&ex->s[i].hold);
	}
	if (ex->detached)
		ndraining--;
	else
		nexecs--;
	/* Events of this loop iteration may still point at it: free it once they are handled. */
	ex->next = freed;
	freed = ex;
}

void exec_collect(void)
{
	while (freed) {
		struct exec *ex = freed;
		freed = ex->next;
		free(ex);
	}
}

static int stream_done(const struct stream *st)
{
	return st->w.fd < 0 || st->drain;
}

/* Exited as far as the caller is concerned: the leader is reaped and the pipes are read. */
static int exec_done(const struct exec *ex)
{
	return ex->reaped && stream_done(&ex->s[S_OUT]) && stream_done(&ex->s[S_ERR]);
}

int exec_reclaim(void)
{
	struct exec *oldest = NULL;
	for (struct exec *ex = execs; ex; ex = ex->next) /* newest first */
		if (ex->detached)
			oldest = ex;
	if (oldest)
		exec_free(oldest);
	return oldest != NULL;
}

/* Frees a handle whose result was returned; pipes still held by background processes drain on,
 * those of at most MAX_DRAINING execs (else a sandbox user could make the agent hold fds until
 * it has none left). */
static void exec_release(struct exec *ex)
{
	if (ex->s[S_OUT].w.fd < 0 && ex->s[S_ERR].w.fd < 0) {
		exec_free(ex);
		return;
	}
	stream_close(&ex->s[S_IN]);
	for (int i = 0; i < 3; i++)
		buf_free(&ex->s[i].hold);
	ex->detached = 1;
	ex->handle = 0; /* handles start at 1: no poll finds it any more */
	nexecs--;
	if (++ndraining > MAX_DRAINING)
		exec_reclaim();
}

/* Writes the vivarium-exec-poll object, hands over the held output, and frees the handle once
 * everything has been returned. */
static void poll_result(struct exec *ex, struct buf *out)
{
	int f = 1;
	int done = exec_done(ex);
	buf_putc(out, '{');
	jw_key(out, &f, "handle");
	jw_int(out, ex->handle);
	jw_key(out, &f, "exited");
	jw_bool(out, ex->reaped);
	if (ex->reaped && WIFEXITED(ex->status)) {
		jw_key(out, &f, "exit-code");
		jw_int(out, WEXITSTATUS(ex->status));
	}
	if (ex->reaped && WIFSIGNALED(ex->status)) {
		jw_key(out, &f, "signal");
		jw_int(out, WTERMSIG(ex->status));
	}
	jw_key(out, &f, "timed-out");
	jw_bool(out, ex->timed_out);
	static const char *const names[] = {NULL, "out-b64", "err-b64"};
	static const char *const tnames[] = {NULL, "out-truncated", "err-truncated"};
	for (int i = S_OUT; i <= S_ERR; i++) {
		struct stream *st = &ex->s[i];
		jw_key(out, &f, names[i]);
		buf_putc(out, '"');
		b64_encode(out, st->hold.p, st->hold.len);
		buf_putc(out, '"');
		st->hold.len = 0;
		buf_trim(&st->hold, 4096);
		jw_key(out, &f, tnames[i]);
		jw_bool(out, st->truncated);
		stream_watch(st);
	}
	jw_key(out, &f, "duration-ms");
	jw_int(out, (ex->reaped ? ex->end : now_ms()) - ex->start);
	buf_putc(out, '}');
	if (done)
		exec_release(ex);
}

static int exec_ready(const struct exec *ex)
{
	return ex->reaped || stream_full(ex, &ex->s[S_OUT]) || stream_full(ex, &ex->s[S_ERR]);
}

static int has_output(const struct exec *ex)
{
	return ex->s[S_OUT].hold.len > 0 || ex->s[S_ERR].hold.len > 0;
}

static int waiter_ready(const struct waiter *w, const struct exec *ex)
{
	return exec_ready(ex) || (w->on_output && has_output(ex));
}

static void waiter_answer(struct waiter *w)
{
	struct exec *ex = find_handle(w->handle);
	if (ex) {
		struct buf out = {0};
		poll_result(ex, &out);
		send_return(w->c, w->id, w->idlen, &out);
		buf_free(&out);
	} else {
		send_error(w->c, w->id, w->idlen, "NotFound", "the exec handle was freed by another poll");
	}
	free(w->id);
	free(w);
}

/* Answers every waiter whose process is ready (or, with force, whose deadline passed). */
static void waiters_check(int64_t now)
{
	for (struct waiter **pp = &waiters; *pp;) {
		struct waiter *w = *pp;
		struct exec *ex = find_handle(w->handle);
		if (!ex || waiter_ready(w, ex) || w->deadline <= now) {
			*pp = w->next;
			waiter_answer(w);
			pp = &waiters; /* answering may free handles others wait on: rescan */
			continue;
		}
		pp = &w->next;
	}
}

void exec_conn_gone(struct conn *c)
{
	for (struct waiter **pp = &waiters; *pp;) {
		struct waiter *w = *pp;
		if (w->c == c) {
			*pp = w->next;
			free(w->id);
			free(w);
		} else {
			pp = &w->next;
		}
	}
}

int exec_waiting_on(const struct conn *c)
{
	for (struct waiter *w = waiters; w; w = w->next)
		if (w->c == c)
			return 1;
	return 0;
}

void exec_on_pipe(struct watch *w, uint32_t events)
{
	struct stream *st = (struct stream *)w;
	struct exec *ex = st->ex;
	if (st->w.fd < 0)
		return; /* closed earlier in this iteration */
	if (st == &ex->s[S_IN]) {
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			stream_write(st);
		return;
	}
	int r = stream_read(ex, st);
	/* After the leader is reaped, read what is there; then drain the pipe without keeping it (a
	 * background process may hold it open forever). */
	if (ex->reaped)
		while (r > 0)
			r = stream_read(ex, st);
	if (ex->detached) {
		if (ex->s[S_OUT].w.fd < 0 && ex->s[S_ERR].w.fd < 0)
			exec_free(ex);
		else
			stream_watch(st);
		return;
	}
	if (ex->reaped && r == 0 && !stream_full(ex, st))
		stream_drain(st);
	stream_watch(st);
	if (exec_ready(ex) || (waiters && has_output(ex)))
		waiters_check(now_ms());
}

void exec_on_signal(void)
{
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		eval_reaped(pid, status);
		for (struct exec *ex = execs; ex; ex = ex->next) {
			if (ex->pid != pid || ex->reaped)
				continue;
			ex->reaped = 1;
			ex->status = status;
			ex->end = now_ms();
			for (int i = S_OUT; i <= S_ERR; i++) {
				struct stream *st = &ex->s[i];
				int r, rounds = 0;
				while ((r = stream_read(ex, st)) > 0 && ++rounds < 256)
					;
				if (!stream_full(ex, st))
					stream_drain(st);
				stream_watch(st);
			}
			break;
		}
	}
	waiters_check(now_ms());
}

int64_t exec_next_deadline(void)
{
	int64_t next = -1;
	for (struct exec *ex = execs; ex; ex = ex->next)
		if (ex->deadline && !ex->reaped && (next < 0 || ex->deadline < next))
			next = ex->deadline;
	for (struct waiter *w = waiters; w; w = w->next)
		if (next < 0 || w->deadline < next)
			next = w->deadline;
	return next;
}

void exec_on_time(int64_t now)
{
	for (struct exec *ex = execs; ex; ex = ex->next)
		if (ex->deadline && !ex->reaped && ex->deadline <= now) {
			kill(-ex->pid, SIGKILL);
			ex->timed_out = 1;
			ex->deadline = 0;
		}
	waiters_check(now);
}

void exec_kill_all(void)
{
	for (struct exec *ex = execs; ex; ex = ex->next)
		if (!ex->reaped)
			kill(-ex->pid, SIGKILL);
}

/* ---- spawning ---- */

struct spawn {
	char **argv, **envp;
	int (*builtin)(char **argv); /* run in the forked child instead of executing argv */
	const char *cwd;
	int set_ids;
	uid_t uid;
	gid_t gid;
	const unsigned char *input;
	size_t inlen;
	int has_input;
	int stdin_open;
	struct winsize *tty; /* run on a new terminal of this size: stdin, stdout and stderr are its slave */
};

/* A pipe whose parent_end (if >= 0) is non-blocking; out of fds, the oldest drained pipes go first. */
static int make_pipe(int p[2], int parent_end)
{
	while (pipe2(p, O_CLOEXEC) < 0)
		if (errno != EMFILE || !exec_reclaim())
			return -1;
	if (parent_end >= 0)
		fcntl(p[parent_end], F_SETFL, O_NONBLOCK);
	return 0;
}

/*
 * In a child about to exec: every signal back to its default and none blocked. An ignored signal
 * stays ignored across exec, and the agent may have been started with SIGHUP ignored (under
 * nohup, or by a daemon that was): a command must still end when its terminal hangs up.
 */
void child_signals(void)
{
	/* the kernel's sigaction: musl's signal() refuses the real-time signals it keeps for itself,
	 * which a command may have inherited ignored all the same */
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		unsigned long mask;
	} dfl = {SIG_DFL, 0, NULL, 0};
	for (int s = 1; s <= 64; s++)
		if (s != SIGKILL && s != SIGSTOP)
			syscall(SYS_rt_sigaction, s, &dfl, NULL, sizeof dfl.mask);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static void close_pipes(int (*p)[2], int n)
{
	for (int i = 0; i < n; i++) {
		if (p[i][0] >= 0)
			close(p[i][0]);
		close(p[i][1]);
	}
}

/* A terminal in place of the stdio pipes: the child's end (slave) as in[0], out[1] and err[1], the
 * agent's end (master, non-blocking) as in[1] and out[0]; err[0] is -1, the terminal has one output. */
static int make_tty(int (*p)[2], struct winsize *size)
{
	int master, slave;
	while (openpty(&master, &slave, NULL, NULL, size) < 0)
		if (errno != EMFILE || !exec_reclaim())
			return -1;
	int dup_master = fcntl(master, F_DUPFD_CLOEXEC, 3);
	if (dup_master < 0) {
		close(master), close(slave);
		return -1;
	}
	fcntl(master, F_SETFD, FD_CLOEXEC);
	fcntl(slave, F_SETFD, FD_CLOEXEC);
	fcntl(master, F_SETFL, O_NONBLOCK); /* one open file: the duplicate is non-blocking too */
	p[0][0] = slave, p[0][1] = dup_master;
	p[1][0] = master, p[1][1] = dup(slave);
	p[2][0] = -1, p[2][1] = dup(slave);
	if (p[1][1] < 0 || p[2][1] < 0) {
		int e = errno;
		close(master), close(slave), close(dup_master), close(p[1][1]), close(p[2][1]);
		errno = e;
		return -1;
	}
	fcntl(p[1][1], F_SETFD, FD_CLOEXEC);
	fcntl(p[2][1], F_SETFD, FD_CLOEXEC);
	return 0;
}

/* What a child could not do before its command ran: the step (STAGE_NONE: none failed) and errno. */
enum { STAGE_NONE = -1, STAGE_STDIO, STAGE_IDS, STAGE_CWD, STAGE_EXEC };
struct child_failure {
	int stage, err;
};

/*
 * In a child before its command: default signals, a session of its own (on the terminal, if it
 * runs on one), stdio, the open-file limit, uid and gid, and cwd. Returns STAGE_NONE, or the step
 * that failed with errno set. System calls only: in spawn's vfork child the memory is the agent's,
 * and musl's setuid, setgroups and setrlimit would coordinate with the agent's threads.
 */
static int child_prepare(const struct spawn *sp, int in, int out, int err)
{
	child_signals();
	setsid();
	if (sp->tty && ioctl(in, TIOCSCTTY, 0) < 0)
		return STAGE_STDIO;
	if (sp->tty && sp->set_ids)
		(void)!fchown(in, sp->uid, sp->gid); /* the terminal is the user's, as login would make it */
	if (child_nofile.rlim_cur != RLIM_INFINITY)
		syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &child_nofile, NULL);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		return STAGE_STDIO;
	if (sp->set_ids && (syscall(SYS_setgroups, 1, &sp->gid) < 0 || syscall(SYS_setgid, sp->gid) < 0 ||
			    syscall(SYS_setuid, sp->uid) < 0))
		return STAGE_IDS;
	if (chdir(sp->cwd) < 0)
		return STAGE_CWD;
	return STAGE_NONE;
}

/*
 * Executes argv as execvp would, but looks argv[0] up in the PATH of envp (the command's own
 * environment, not the agent's; musl's default without one) and changes no memory of the agent's.
 * Returns only on failure, errno set: EACCES if a candidate was refused and none ran.
 */
static void exec_search(char *const argv[], char *const envp[])
{
	const char *file = argv[0], *path = "/usr/local/bin:/bin:/usr/bin";
	if (!*file) {
		errno = ENOENT;
		return;
	}
	if (strchr(file, '/')) {
		execve(file, argv, envp);
		return;
	}
	size_t flen = strlen(file);
	if (flen > NAME_MAX) {
		errno = ENAMETOOLONG;
		return;
	}
	for (char *const *e = envp; *e; e++)
		if (!strncmp(*e, "PATH=", 5)) {
			path = *e + 5; /* the first, as getenv would */
			break;
		}
	int refused = 0;
	char candidate[PATH_MAX];
	for (const char *dir = path;;) {
		const char *end = strchrnul(dir, ':');
		size_t dlen = (size_t)(end - dir);
		if (dlen + 1 + flen < sizeof candidate) {
			memcpy(candidate, dir, dlen);
			candidate[dlen] = '/';
			memcpy(candidate + dlen + !!dlen, file, flen + 1); /* an empty entry is the cwd */
			execve(candidate, argv, envp);
			if (errno == EACCES)
				refused = 1;
			else if (errno != ENOENT && errno != ENOTDIR)
				return;
		}
		if (!*end)
			break;
		dir = end + 1;
	}
	errno = refused ? EACCES : ENOENT;
}

/*
 * A builtin runs in a forked child, without an exec: the child tells its failure through a pipe
 * and, when it is ready, closes the agent's fds (connections, other execs' stdin pipes), the
 * pipe's end among them.
 */
static pid_t fork_builtin(const struct spawn *sp, int in, int out, int err, struct child_failure *failed)
{
	int rep[2];
	if (make_pipe(rep, -1) < 0) {
		failed->err = errno;
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		int stage = child_prepare(sp, in, out, err);
		struct child_failure f = {stage, errno};
		if (f.stage != STAGE_NONE) {
			(void)!write(rep[1], &f, sizeof f);
			_exit(127);
		}
		if (syscall(SYS_close_range, 3, ~0U, 0) < 0)
			for (long fd = 3, max = sysconf(_SC_OPEN_MAX); fd < max; fd++)
				close((int)fd);
		_exit(sp->builtin(sp->argv));
	}
	failed->err = errno;
	close(rep[1]);
	if (pid > 0) {
		ssize_t n;
		do
			n = read(rep[0], failed, sizeof *failed);
		while (n < 0 && errno == EINTR);
		if (n != sizeof *failed)
			failed->stage = STAGE_NONE;
	}
	close(rep[0]);
	return pid;
}

/*
 * The vfork child: prepares, executes the command, and on failure leaves the step and errno in
 * *shared. A function of its own, never inlined: its locals then live in a frame below the
 * parent's, never in a spill slot of the parent's frame that the parent still needs.
 */
__attribute__((noinline, noreturn)) static void vfork_child(const struct spawn *sp, int in, int out, int err,
							    volatile struct child_failure *shared)
{
	int stage = child_prepare(sp, in, out, err);
	if (stage == STAGE_NONE) {
		exec_search(sp->argv, sp->envp);
		stage = STAGE_EXEC;
	}
	shared->err = errno;
	shared->stage = stage;
	_exit(127);
}

/*
 * Starts sp's process with in, out and err as its stdio. Its pid, and in *failed the step it did
 * not get past (it exited then); or -1 when there is no child (errno in failed->err). A command
 * starts in a vfork child, which shares the agent's memory until its exec and so copies no page
 * table: the agent waits for the exec anyway, to answer a command that cannot start with an error.
 */
static pid_t start_child(const struct spawn *sp, int in, int out, int err, struct child_failure *failed)
{
	if (sp->builtin)
		return fork_builtin(sp, in, out, err, failed);
	volatile struct child_failure shared = {STAGE_NONE, 0};
	pid_t pid = vfork();
	if (pid == 0)
		vfork_child(sp, in, out, err, &shared);
	failed->stage = shared.stage;
	failed->err = pid < 0 ? errno : shared.err;
	/* the child's uid change reset the dumpable flag of the memory it shared, the agent's, to
	 * fs.suid_dumpable: not dumpable again (main.c) */
	if (pid > 0 && sp->set_ids)
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return pid;
}

static int spawn(struct call *k, struct exec *ex, const struct spawn *sp)
{
	int p[3][2], *in = p[0], *out = p[1], *err = p[2], made = 0;
	if (nexecs >= MAX_EXECS)
		return fail(k, "LimitExceeded", "at most %d exec handles alive; poll finished ones to free them", MAX_EXECS);
	if (sp->tty) {
		if (make_tty(p, sp->tty) < 0)
			return fail_errno(k, errno, "openpty", "terminal");
		made = 3;
	}
	while (made < 3 && make_pipe(p[made], made == 0 ? 1 : 0) == 0)
		made++;
	if (made < 3) {
		int e = errno;
		close_pipes(p, made);
		return fail_errno(k, e, "pipe", made ? "output" : "stdin");
	}
	struct child_failure failed = {STAGE_NONE, 0};
	pid_t pid = start_child(sp, in[0], out[1], err[1], &failed);
	close(in[0]), close(out[1]), close(err[1]);
	if (pid < 0 || failed.stage != STAGE_NONE) {
		/* A child that failed is reaped by the SIGCHLD loop like any orphan. */
		close(in[1]), close(out[0]);
		if (err[0] >= 0)
			close(err[0]);
		if (pid < 0)
			return fail_errno(k, failed.err, "fork", "process");
		static const char *const stages[] = {"redirect stdio of", "set uid/gid for", "chdir to cwd of", "execute"};
		if (failed.stage == STAGE_CWD)
			return fail_errno(k, failed.err, "cannot chdir to", sp->cwd);
		return fail_errno(k, failed.err, stages[failed.stage], sp->argv[0]);
	}
	ex->pid = pid;
	ex->start = now_ms();
	int fds[3] = {in[1], out[0], err[0]};
	for (int i = 0; i < 3; i++) {
		ex->s[i].w.kind = W_PIPE;
		ex->s[i].w.fd = fds[i];
		ex->s[i].ex = ex;
	}
	if (sp->has_input && sp->inlen)
		buf_put(&ex->s[S_IN].hold, sp->input, sp->inlen);
	ex->next = execs;
	execs = ex;
	nexecs++;
	ex->stdin_open = sp->stdin_open || sp->tty;
	ex->tty = sp->tty != NULL;
	if (!ex->s[S_IN].hold.len && !ex->stdin_open)
		stream_close(&ex->s[S_IN]);
	for (int i = 0; i < 3; i++)
		stream_watch(&ex->s[i]);
	return R_OK;
}

static struct exec *exec_new(void)
{
	struct exec *ex = xmalloc(sizeof *ex);
	memset(ex, 0, sizeof *ex);
	for (int i = 0; i < 3; i++)
		ex->s[i].w.fd = -1;
	return ex;
}

/* Collects a JSON array of strings as a NULL-terminated vector (pointing into the request). */
static char **str_array(struct call *k, const char *name, int required, int nonempty)
{
	uint32_t n = arg_node(k, name);
	if (!n) {
		if (required)
			fail(k, "InvalidParameter", "argument '%s' is missing", name);
		return NULL;
	}
	if (k->doc->n[n].type != J_ARR) {
		fail(k, "InvalidParameter", "argument '%s' must be an array of strings", name);
		return NULL;
	}
	if (nonempty && !k->doc->n[n].count) {
		fail(k, "InvalidParameter", "argument '%s' must not be empty", name);
		return NULL;
	}
	char **v = xmalloc((k->doc->n[n].count + 1) * sizeof *v);
	size_t i = 0;
	for (uint32_t c = k->doc->n[n].child; c; c = k->doc->n[c].next) {
		if (k->doc->n[c].type != J_STR) {
			free(v);
			fail(k, "InvalidParameter", "argument '%s' must be an array of strings", name);
			return NULL;
		}
		v[i++] = (char *)k->doc->n[c].s;
	}
	v[i] = NULL;
	return v;
}

int cmd_guest_exec(struct call *k)
{
	static const char *const allowed[] = {"path", "arg", "env", "input-data", "capture-output", NULL};
	const char *path;
	unsigned char *input = NULL;
	size_t inlen = 0;
	int capture = 0, has_input;
	if (args_only(k, allowed) || arg_str(k, "path", 1, &path, NULL) < 0 || arg_bool(k, "capture-output", 0, &capture) < 0 ||
	    (has_input = arg_b64(k, "input-data", 0, &input, &inlen)) < 0)
		return R_ERR;
	char **args = str_array(k, "arg", 0, 0), **env = NULL;
	if (!args && k->eclass)
		return R_ERR;
	if (arg_node(k, "env") && !(env = str_array(k, "env", 0, 0))) {
		free(args);
		return R_ERR;
	}
	size_t nargs = 0;
	while (args && args[nargs])
		nargs++;
	char **argv = xmalloc((nargs + 2) * sizeof *argv);
	argv[0] = (char *)path;
	for (size_t i = 0; i < nargs; i++)
		argv[i + 1] = args[i];
	argv[nargs + 1] = NULL;
	struct spawn sp = {.argv = argv, .envp = env ? env : environ, .cwd = "/", .input = input, .inlen = inlen, .has_input = has_input};
	struct exec *ex = exec_new();
	ex->stock = 1;
	ex->capture = capture;
	ex->cap = capture ? STOCK_CAP : 0;
	ex->hold_max = (size_t)ex->cap;
	int r = spawn(k, ex, &sp);
	free(argv);
	free(args);
	free(env);
	if (r != R_OK) {
		free(ex);
		return r;
	}
	ex->handle = ex->pid;
	buf_puts(k->out, "{\"pid\":");
	jw_int(k->out, ex->pid);
	buf_putc(k->out, '}');
	return R_OK;
}

int cmd_guest_exec_status(struct call *k)
{
	static const char *const allowed[] = {"pid", NULL};
	int64_t pid;
	if (args_only(k, allowed) || arg_int(k, "pid", 1, &pid) < 0)
		return R_ERR;
	struct exec *ex = execs;
	while (ex && !(ex->stock && !ex->detached && ex->pid == pid))
		ex = ex->next;
	if (!ex)
		return fail(k, "NotFound", "no process with pid %lld was started by guest-exec (or its status was read)", (long long)pid);
	int f = 1;
	buf_putc(k->out, '{');
	jw_key(k->out, &f, "exited");
	if (!exec_done(ex)) {
		buf_puts(k->out, "false}");
		return R_OK;
	}
	buf_puts(k->out, "true");
	if (WIFEXITED(ex->status)) {
		jw_key(k->out, &f, "exitcode");
		jw_int(k->out, WEXITSTATUS(ex->status));
	} else if (WIFSIGNALED(ex->status)) {
		jw_key(k->out, &f, "signal");
		jw_int(k->out, WTERMSIG(ex->status));
	}
	static const char *const names[] = {NULL, "out-data", "err-data"};
	static const char *const tnames[] = {NULL, "out-truncated", "err-truncated"};
	for (int i = S_OUT; ex->capture && i <= S_ERR; i++) {
		if (ex->s[i].hold.len) {
			jw_key(k->out, &f, names[i]);
			buf_putc(k->out, '"');
			b64_encode(k->out, ex->s[i].hold.p, ex->s[i].hold.len);
			buf_putc(k->out, '"');
		}
		if (ex->s[i].truncated) {
			jw_key(k->out, &f, tnames[i]);
			buf_puts(k->out, "true");
		}
	}
	buf_putc(k->out, '}');
	exec_release(ex);
	return R_OK;
}

/* Defers the answer until the process is ready or wait-ms passed; answers now when it is ready. */
static int answer_or_wait(struct call *k, struct exec *ex, int64_t wait_ms, int on_output)
{
	if (wait_ms <= 0 || exec_ready(ex) || (on_output && has_output(ex))) {
		poll_result(ex, k->out);
		return R_OK;
	}
	struct waiter *w = xmalloc(sizeof *w);
	w->c = k->c;
	w->handle = ex->handle;
	w->deadline = now_ms() + wait_ms;
	w->on_output = on_output;
	w->id = k->id ? xstrndup(k->id, k->idlen) : NULL;
	w->idlen = k->idlen;
	w->next = waiters;
	waiters = w;
	return R_DEFER;
}

static int get_wait(struct call *k, int64_t *wait_ms)
{
	*wait_ms = 0;
	if (arg_int(k, "wait-ms", 0, wait_ms) < 0)
		return -1;
	if (*wait_ms < 0 || *wait_ms > 86400000)
		return fail(k, "InvalidParameter", "wait-ms must be between 0 and 86400000"), -1;
	return 0;
}

/* timeout-ms, max-output-bytes and wait-ms of vivarium-exec and vivarium-list. */
static int get_limits(struct call *k, int64_t *timeout, int64_t *cap, int64_t *wait_ms)
{
	if (arg_int(k, "timeout-ms", 0, timeout) < 0 || arg_int(k, "max-output-bytes", 0, cap) < 0 ||
	    get_wait(k, wait_ms) < 0)
		return -1;
	if (arg_node(k, "timeout-ms") && *timeout <= 0)
		return fail(k, "InvalidParameter", "timeout-ms must be > 0"), -1;
	if (*cap < 0)
		return fail(k, "InvalidParameter", "max-output-bytes must be >= 0"), -1;
	return 0;
}

/* Starts the captured, bounded child of vivarium-exec or vivarium-list and answers or waits. */
static int start(struct call *k, const struct spawn *sp, int64_t timeout, int64_t cap, int64_t wait_ms)
{
	struct exec *ex = exec_new();
	ex->capture = 1;
	ex->cap = cap;
	ex->hold_max = STREAM_HOLD;
	int r = spawn(k, ex, sp);
	if (r != R_OK) {
		free(ex);
		return r;
	}
	ex->handle = next_handle++;
	if (timeout > 0)
		ex->deadline = ex->start + timeout;
	return answer_or_wait(k, ex, wait_ms, 0);
}

int cmd_vivarium_list(struct call *k)
{
	static const char *const allowed[] = {"mode", "paths", "timeout-ms", "max-output-bytes", "wait-ms", NULL};
	const char *mode;
	int64_t timeout = 0, cap = STOCK_CAP, wait_ms;
	if (args_only(k, allowed) || arg_str(k, "mode", 1, &mode, NULL) < 0 || get_limits(k, &timeout, &cap, &wait_ms) < 0)
		return R_ERR;
	if (strcmp(mode, "sha256") && strcmp(mode, "stat"))
		return fail(k, "InvalidParameter", "mode must be sha256 or stat, not '%.20s'", mode);
	char **paths = str_array(k, "paths", 1, 1);
	if (!paths)
		return R_ERR;
	size_t n = 0;
	for (; paths[n]; n++)
		if (paths[n][0] != '/') {
			free(paths);
			return fail(k, "InvalidParameter", "paths must be absolute");
		}
	/* list_main's argv: the mode, then the paths */
	char **argv = xmalloc((n + 2) * sizeof *argv);
	argv[0] = (char *)mode;
	memcpy(argv + 1, paths, (n + 1) * sizeof *argv);
	free(paths);
	char *envp[] = {NULL};
	struct spawn sp = {.argv = argv, .envp = envp, .builtin = list_main, .cwd = "/"};
	int r = start(k, &sp, timeout, cap, wait_ms);
	free(argv);
	return r;
}

/* rows and cols of a terminal, each 1 to 10000 when given. */
static int get_size(struct call *k, struct winsize *size)
{
	int64_t rows = size->ws_row, cols = size->ws_col;
	if (arg_int(k, "rows", 0, &rows) < 0 || arg_int(k, "cols", 0, &cols) < 0)
		return -1;
	if (rows < 1 || rows > 10000 || cols < 1 || cols > 10000)
		return fail(k, "InvalidParameter", "rows and cols must be between 1 and 10000"), -1;
	size->ws_row = (unsigned short)rows;
	size->ws_col = (unsigned short)cols;
	return 0;
}

int cmd_vivarium_exec(struct call *k)
{
	static const char *const allowed[] = {"argv", "env", "cwd", "uid", "gid", "stdin-b64", "stdin-open", "timeout-ms",
					      "max-output-bytes", "wait-ms", "tty", "rows", "cols", NULL};
	const char *cwd = "/";
	int stdin_open = 0, tty = 0;
	struct winsize size = {.ws_row = 24, .ws_col = 80};
	int64_t uid = -1, gid = -1, timeout = 0, cap = STOCK_CAP, wait_ms;
	unsigned char *input = NULL;
	size_t inlen = 0;
	int has_input, has_uid, has_gid;
	if (args_only(k, allowed) || arg_str(k, "cwd", 0, &cwd, NULL) < 0 || (has_uid = arg_int(k, "uid", 0, &uid)) < 0 ||
	    (has_gid = arg_int(k, "gid", 0, &gid)) < 0 || get_limits(k, &timeout, &cap, &wait_ms) < 0 ||
	    (has_input = arg_b64(k, "stdin-b64", 0, &input, &inlen)) < 0 || arg_bool(k, "stdin-open", 0, &stdin_open) < 0 ||
	    arg_bool(k, "tty", 0, &tty) < 0 || get_size(k, &size) < 0)
		return R_ERR;
	if ((has_uid && (uid < 0 || uid > 0xfffffffe)) || (has_gid && (gid < 0 || gid > 0xfffffffe)))
		return fail(k, "InvalidParameter", "uid and gid must be between 0 and 4294967294");
	if (cwd[0] != '/')
		return fail(k, "InvalidParameter", "cwd must be an absolute path");
	int set_ids = 0;
	if (has_uid || has_gid) {
		if (!has_gid)
			gid = uid; /* never leave a dropped uid in the agent's (root) group */
		if (!has_uid)
			uid = geteuid();
		if (geteuid() == 0)
			set_ids = 1;
		else if ((uid_t)uid != geteuid() || (gid_t)gid != getegid())
			return fail(k, "PermissionDenied", "uid/gid can only be changed when the agent runs as root");
	}
	char **argv = str_array(k, "argv", 1, 1);
	if (!argv)
		return R_ERR;
	/* env: an object of strings, the whole environment. */
	uint32_t en = arg_node(k, "env");
	size_t nenv = 0;
	if (en && k->doc->n[en].type != J_OBJ) {
		free(argv);
		return fail(k, "InvalidParameter", "argument 'env' must be an object of strings");
	}
	char **envp = xmalloc(((en ? k->doc->n[en].count : 0) + 1) * sizeof *envp);
	struct buf envbuf = {0};
	size_t *offs = xmalloc(((en ? k->doc->n[en].count : 0) + 1) * sizeof *offs);
	for (uint32_t c = en ? k->doc->n[en].child : 0; c; c = k->doc->n[c].next) {
		const struct jnode *v = &k->doc->n[c];
		if (v->type != J_STR || !v->keylen || memchr(v->key, '=', v->keylen)) {
			free(argv), free(envp), free(offs), buf_free(&envbuf);
			return fail(k, "InvalidParameter", "env must map names (non-empty, without '=') to strings");
		}
		offs[nenv++] = envbuf.len;
		buf_put(&envbuf, v->key, v->keylen);
		buf_putc(&envbuf, '=');
		buf_put(&envbuf, v->s, v->len + 1);
	}
	for (size_t i = 0; i < nenv; i++)
		envp[i] = envbuf.p + offs[i];
	envp[nenv] = NULL;
	free(offs);
	struct spawn sp = {.argv = argv, .envp = envp, .cwd = cwd, .set_ids = set_ids, .uid = (uid_t)uid, .gid = (gid_t)gid,
			   .input = input, .inlen = inlen, .has_input = has_input, .stdin_open = stdin_open,
			   .tty = tty ? &size : NULL};
	int r = start(k, &sp, timeout, cap, wait_ms);
	free(argv);
	free(envp);
	buf_free(&envbuf);
	return r;
}

int cmd_vivarium_exec_poll(struct call *k)
{
	static const char *const allowed[] = {"handle", "wait-ms", "on-output", NULL};
	int64_t h, wait_ms;
	int on_output = 0;
	if (args_only(k, allowed) || arg_int(k, "handle", 1, &h) < 0 || get_wait(k, &wait_ms) < 0 ||
	    arg_bool(k, "on-output", 0, &on_output) < 0)
		return R_ERR;
	struct exec *ex = find_handle(h);
	if (!ex)
		return fail(k, "NotFound", "no exec handle %lld (finished handles are freed once fully polled)", (long long)h);
	return answer_or_wait(k, ex, wait_ms, on_output);
}

/* Writes to the stdin of an exec started with stdin-open; eof closes it once what is held was written. */
int cmd_vivarium_exec_write(struct call *k)
{
	static const char *const allowed[] = {"handle", "data-b64", "eof", NULL};
	int64_t h;
	unsigned char *data = NULL;
	size_t len = 0;
	int eof = 0;
	if (args_only(k, allowed) || arg_int(k, "handle", 1, &h) < 0 || arg_b64(k, "data-b64", 0, &data, &len) < 0 ||
	    arg_bool(k, "eof", 0, &eof) < 0)
		return R_ERR;
	struct exec *ex = find_handle(h);
	if (!ex)
		return fail(k, "NotFound", "no exec handle %lld", (long long)h);
	struct stream *st = &ex->s[S_IN];
	if (st->w.fd < 0 || ex->stdin_eof)
		return fail(k, "InvalidParameter", "the stdin of exec %lld is closed (not started with stdin-open, ended by eof, "
			    "or the command stopped reading)", (long long)h);
	if (st->hold.len - st->pos + len > ex->hold_max)
		return fail(k, "LimitExceeded", "the command has not read what was written before: retry when it has");
	buf_put(&st->hold, data, len);
	ex->stdin_eof = eof;
	stream_write(st);
	buf_puts(k->out, "{}");
	return R_OK;
}

int cmd_vivarium_exec_kill(struct call *k)
{
	static const char *const allowed[] = {"handle", "signal", NULL};
	int64_t h, sig = SIGKILL;
	if (args_only(k, allowed) || arg_int(k, "handle", 1, &h) < 0 || arg_int(k, "signal", 0, &sig) < 0)
		return R_ERR;
	if (sig < 1 || sig > 64)
		return fail(k, "InvalidParameter", "signal must be between 1 and 64");
	struct exec *ex = find_handle(h);
	if (!ex)
		return fail(k, "NotFound", "no exec handle %lld", (long long)h);
	if (!ex->reaped && kill(-ex->pid, (int)sig) < 0 && errno != ESRCH)
		return fail_errno(k, errno, "kill", "process group");
	buf_puts(k->out, "{}");
	return R_OK;
}

/* Sets the size of an exec's terminal; its foreground process group gets SIGWINCH. */
int cmd_vivarium_exec_resize(struct call *k)
{
	static const char *const allowed[] = {"handle", "rows", "cols", NULL};
	int64_t h;
	struct winsize size = {0};
	if (args_only(k, allowed) || arg_int(k, "handle", 1, &h) < 0)
		return R_ERR;
	if (!arg_node(k, "rows") || !arg_node(k, "cols"))
		return fail(k, "InvalidParameter", "arguments 'rows' and 'cols' are required");
	if (get_size(k, &size) < 0)
		return R_ERR;
	struct exec *ex = find_handle(h);
	if (!ex)
		return fail(k, "NotFound", "no exec handle %lld", (long long)h);
	if (!ex->tty)
		return fail(k, "InvalidParameter", "exec %lld has no terminal (started without tty)", (long long)h);
	int fd = ex->s[S_OUT].w.fd;
	if (fd >= 0 && ioctl(fd, TIOCSWINSZ, &size) < 0)
		return fail_errno(k, errno, "resize", "terminal");
	buf_puts(k->out, "{}");
	return R_OK;
}
