/* --user: a root supervisor that holds the transports and restarts an unprivileged worker.
 *
 * The supervisor binds every socket as root before the first worker exists, then only waits:
 * it reaps what is reparented to it (it is a subreaper), restarts the worker when the worker
 * dies (the sandbox user can kill it: it has the user's uid), and on SIGTERM stops it and exits.
 * It allocates nothing after start-up, so it costs little more than the binary's own pages. */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RESTART_WINDOW_MS 10000
#define RESTARTS_PER_WINDOW 10
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
#define HEALTHY_MS 1000 /* a worker that lived this long resets the backoff */
#define STOP_GRACE_MS 5000 /* after SIGTERM, then SIGKILL */
#define LOG_WINDOW_MS 60000
#define LOGS_PER_WINDOW 5
#define EXIT_NO_DROP 71 /* the worker could not drop its privileges: not worth a restart */

static void worker_fail(const char *what)
{
	fprintf(stderr, "vivarium-agent: worker: %s: %s\n", what, strerror(errno));
	_exit(EXIT_NO_DROP);
}

/* Becomes uid:gid for good, with no capabilities and no way to regain any; returns what failed,
 * or NULL. Shared by the worker and --run-as. */
const char *become(uid_t uid, gid_t gid)
{
	/* The bounding set needs CAP_SETPCAP to shrink: empty it while still root. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return "clear ambient capabilities";
	for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			return "drop the capability bounding set";
	if (setgroups(1, &gid) < 0)
		return "setgroups";
	if (setresgid(gid, gid, gid) < 0)
		return "setresgid";
	/* From uid 0 to non-zero without SECBIT_KEEP_CAPS: the kernel clears the permitted and
	 * effective sets. */
	if (setresuid(uid, uid, uid) < 0)
		return "setresuid";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return "PR_SET_NO_NEW_PRIVS";
	/* Changing the uid reset dumpable to fs.suid_dumpable: not dumpable again (see main). */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (setresuid(0, 0, 0) == 0 || setresgid(0, 0, 0) == 0) {
		errno = EPERM;
		return "could regain root after dropping it";
	}
	return NULL;
}

/* In the worker: become uid:gid for good (see become). */
static void drop_privileges(uid_t uid, gid_t gid, pid_t supervisor)
{
	const char *failed = become(uid, gid);
	if (failed)
		worker_fail(failed);
	/* Changing credentials cleared the parent-death signal: set it now. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != supervisor)
		_exit(0);
}

/* A sandbox user who kills the worker in a loop must not grow the host's log without bound: at
 * most LOGS_PER_WINDOW restarts are logged in a window, the others counted and reported with the
 * next line logged. */
static void log_exit(pid_t pid, int status, int64_t delay, int64_t now)
{
	static int64_t window_end;
	static int logged, unlogged;
	if (!window_end || now >= window_end) {
		window_end = now + LOG_WINDOW_MS;
		logged = 0;
	}
	if (logged == LOGS_PER_WINDOW) {
		if (!unlogged++)
			fprintf(stderr, "vivarium-agent: worker restarts are logged at most %d times a minute; counting the others\n",
				LOGS_PER_WINDOW);
		return;
	}
	logged++;
	if (unlogged)
		fprintf(stderr, "vivarium-agent: %d worker restarts were not logged\n", unlogged);
	unlogged = 0;
	if (WIFSIGNALED(status))
		fprintf(stderr, "vivarium-agent: worker %d killed by signal %d; restarting in %lld ms\n", (int)pid,
			WTERMSIG(status), (long long)delay);
	else
		fprintf(stderr, "vivarium-agent: worker %d exited with %d; restarting in %lld ms\n", (int)pid,
			WEXITSTATUS(status), (long long)delay);
}

static void finish(const char *const *paths, int npaths, int code)
{
	for (int i = 0; i < npaths; i++)
		unlink_listener(paths[i]);
	exit(code);
}

/* SIGUSR1: the listeners are closed here and in the worker (the sockets' files removed), so that
 * gVisor can checkpoint the sandbox; SIGUSR2 (after a restore): bound again and handed to the
 * worker. Both are idempotent. */
static void release(int *fds, const char *const *paths, int npaths, int to_worker)
{
	for (int i = 0; i < npaths; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
			unlink_listener(paths[i]);
		}
	(void)!send(to_worker, "R", 1, MSG_NOSIGNAL);
}

static void rebind(int *fds, const char *const *paths, int npaths, int to_worker)
{
	int bound = 0, missing = 0;
	mode_t old_umask = umask(0177);
	for (int i = 0; i < npaths; i++)
		if (fds[i] < 0 && (fds[i] = listen_unix(paths[i])) >= 0)
			bound++;
	umask(old_umask);
	for (int i = 0; i < npaths; i++)
		missing += fds[i] < 0;
	/* The fds go by position: all or none (a failure was logged; another SIGUSR2 tries again). */
	if (!bound || missing)
		return;
	char control[CMSG_SPACE(sizeof(int) * 16)];
	memset(control, 0, sizeof control);
	struct iovec iov = {"L", 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			     .msg_controllen = CMSG_SPACE(sizeof(int) * npaths)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * npaths);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * npaths);
	(void)!sendmsg(to_worker, &msg, MSG_NOSIGNAL);
}

int supervise(uid_t uid, gid_t gid, const sigset_t *mask, const char *const *paths, int *fds, int npaths)
{
	pid_t self = getpid(), worker = -1;
	int64_t starts[RESTARTS_PER_WINDOW] = {0}, started = 0, backoff = 0, restart_at = 0, kill_at = -1;
	int nstarts = 0, terminating = 0, stop[2];
	/* Procbox starts the supervisor without CAP_KILL, so it may not signal a worker of another uid:
	 * it asks it to stop by closing this socket, and if that is not heeded, exits, and the kernel
	 * kills the worker (PR_SET_PDEATHSIG). Messages on it release and hand over the listeners. */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, stop) < 0) {
		perror("vivarium-agent: socketpair");
		finish(paths, npaths, 1);
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	for (;;) {
		if (worker < 0 && !terminating && now_ms() >= restart_at) {
			worker = fork();
			if (worker == 0) {
				close(stop[1]);
				drop_privileges(uid, gid, self);
				return stop[0];
			}
			if (worker < 0) {
				perror("vivarium-agent: fork a worker");
				restart_at = now_ms() + BACKOFF_MAX_MS;
			} else {
				started = now_ms();
				starts[nstarts++ % RESTARTS_PER_WINDOW] = started;
			}
		}
		siginfo_t si;
		int sig = -1;
		int64_t until = worker < 0 ? restart_at : terminating ? kill_at : -1, wait = until - now_ms();
		if (until < 0) {
			sig = sigwaitinfo(mask, &si);
		} else if (wait > 0) {
			struct timespec ts = {wait / 1000, (wait % 1000) * 1000000};
			sig = sigtimedwait(mask, &si, &ts);
		} else if (worker > 0) {
			/* It did not stop within the grace period (the sandbox user may have stopped it). */
			if (kill(worker, SIGKILL) < 0)
				finish(paths, npaths, 0);
			kill_at = -1;
		}
		if (sig == SIGUSR1 && !terminating)
			release(fds, paths, npaths, stop[1]);
		if (sig == SIGUSR2 && !terminating)
			rebind(fds, paths, npaths, stop[1]);
		if ((sig == SIGTERM || sig == SIGINT) && !terminating) {
			if (worker < 0)
				finish(paths, npaths, 0);
			terminating = 1;
			close(stop[1]);
			kill(worker, SIGCONT); /* in case it was stopped, if we may */
			kill_at = now_ms() + STOP_GRACE_MS;
		}
		int status;
		pid_t pid;
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			if (pid != worker)
				continue; /* an orphan of the worker's execs */
			worker = -1;
			if (terminating)
				finish(paths, npaths, 0);
			if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_NO_DROP) {
				fprintf(stderr, "vivarium-agent: the worker could not run as %u:%u; stopping\n", (unsigned)uid, (unsigned)gid);
				finish(paths, npaths, 1);
			}
			int64_t now = now_ms();
			backoff = now - started >= HEALTHY_MS ? 0 : backoff ? backoff * 2 : BACKOFF_FIRST_MS;
			if (backoff > BACKOFF_MAX_MS)
				backoff = BACKOFF_MAX_MS;
			restart_at = now + backoff;
			/* Never more than RESTARTS_PER_WINDOW starts in any window. */
			if (nstarts >= RESTARTS_PER_WINDOW) {
				int64_t oldest = starts[nstarts % RESTARTS_PER_WINDOW];
				if (oldest + RESTART_WINDOW_MS > restart_at)
					restart_at = oldest + RESTART_WINDOW_MS;
			}
			log_exit(pid, status, restart_at - now, now);
		}
	}
}
