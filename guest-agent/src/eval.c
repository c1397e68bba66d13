/* vivarium-eval: one warm Python interpreter per agent, started on the first eval and supervised
 * from the event loop. The interpreter runs evaldriver.py (embedded, see the Makefile) in a session
 * of its own; requests go to it on a pipe (its fd 3) and answers come back on another (its fd 4),
 * each a frame of a 4-byte big-endian length and a payload. Nothing here blocks: both pipes are
 * non-blocking and watched by epoll, the answer to the host is deferred, and a timeout kills the
 * interpreter's whole process group. */
#define _GNU_SOURCE
#include "agent.h"
#include "evaldriver.h" /* eval_driver[]: src/evaldriver.py as bytes, NUL-terminated (build/gen) */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CODE ((size_t)1 << 20)
#define MAX_ANSWER ((size_t)8 << 20)
#define MAX_TIMEOUT_MS 86400000
#define DEFAULT_TIMEOUT_MS 30000
#define EXIT_TIMEOUT 124 /* as timeout(1) */
#define PYTHON "python3"

/* The pipe ends the agent holds; each is described by a watch so main.c can dispatch to us. */
struct end {
	struct watch w;
	uint32_t events;
};

static struct {
	pid_t pid; /* 0: no interpreter */
	struct end req, ans; /* req: we write requests; ans: we read answers */
	struct buf out, in; /* request bytes not yet written; answer bytes not yet parsed */
	size_t outpos;
	int hello; /* the first frame (the version) was read */
	int used; /* an eval was sent to this interpreter: it is no longer fresh */
	int dying; /* its answer pipe closed: killed, its pipes closed, waiting to be reaped to say how it ended */
	/* the eval being answered, if any */
	int busy;
	struct conn *c; /* NULL when its connection went away: the answer is dropped */
	char *id;
	size_t idlen;
	int64_t deadline, start, timeout_ms;
	int fresh; /* the eval being answered is the first its interpreter runs: no state from earlier evals */
} ip = {.req = {{W_EVAL, -1}, 0}, .ans = {{W_EVAL, -1}, 0}};

static char version[32]; /* "3.11.2" once the interpreter said so; kept across restarts */
static struct jdoc adoc;
extern char **environ;

const char *eval_version(void)
{
	return version[0] ? version : NULL;
}

static void end_close(struct end *e)
{
	if (e->w.fd < 0)
		return;
	watch_set(&e->w, 0, &e->events);
	close(e->w.fd);
	e->w.fd = -1;
}

/* Ends the interpreter: its whole group is killed (it is reaped by the SIGCHLD loop like any orphan). */
static void interp_stop(void)
{
	if (ip.pid > 0)
		kill(-ip.pid, SIGKILL);
	ip.pid = 0;
	end_close(&ip.req);
	end_close(&ip.ans);
	buf_free(&ip.out);
	buf_free(&ip.in);
	ip.outpos = 0;
	ip.hello = 0;
	ip.used = 0;
	ip.dying = 0;
}

static void interp_watch(void)
{
	if (ip.req.w.fd >= 0)
		watch_set(&ip.req.w, ip.outpos < ip.out.len ? EPOLLOUT : 0, &ip.req.events);
	if (ip.ans.w.fd >= 0)
		watch_set(&ip.ans.w, EPOLLIN, &ip.ans.events);
}

/* Starts the interpreter; 0, or an errno (ENOENT: no python3 in PATH). */
static int interp_start(void)
{
	int req[2], ans[2], rep[2];
	if (pipe2(req, O_CLOEXEC) < 0)
		return errno;
	if (pipe2(ans, O_CLOEXEC) < 0) {
		int e = errno;
		close(req[0]), close(req[1]);
		return e;
	}
	if (pipe2(rep, O_CLOEXEC) < 0) {
		int e = errno;
		close(req[0]), close(req[1]), close(ans[0]), close(ans[1]);
		return e;
	}
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd))
		strcpy(cwd, "/");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(req[0]), close(req[1]), close(ans[0]), close(ans[1]), close(rep[0]), close(rep[1]);
		return e;
	}
	if (pid == 0) {
		child_signals();
		setsid();
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (child_nofile.rlim_cur != RLIM_INFINITY)
			setrlimit(RLIMIT_NOFILE, &child_nofile);
		/* fds 3 and 4 first (dup2 clears close-on-exec), moved out of the way of each other */
		int in = fcntl(req[0], F_DUPFD_CLOEXEC, 10), out = fcntl(ans[1], F_DUPFD_CLOEXEC, 10);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (in < 0 || out < 0 || dup2(in, 3) < 0 || dup2(out, 4) < 0)
			goto failed;
		if (null >= 0 && (dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0))
			goto failed;
		char home[4096 + 8], *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
					       "PYTHONDONTWRITEBYTECODE=1", home, NULL};
		snprintf(home, sizeof home, "HOME=%s", cwd);
		char *argv[] = {PYTHON, "-I", "-c", (char *)eval_driver, NULL};
		environ = envp;
		execvp(PYTHON, argv);
	failed:;
		int e = errno;
		(void)!write(rep[1], &e, sizeof e);
		_exit(127);
	}
	close(req[0]), close(ans[1]), close(rep[1]);
	int e = 0;
	ssize_t n;
	do
		n = read(rep[0], &e, sizeof e);
	while (n < 0 && errno == EINTR);
	close(rep[0]);
	if (n == sizeof e) {
		close(req[1]), close(ans[0]);
		return e ? e : EIO;
	}
	fcntl(req[1], F_SETFL, O_NONBLOCK);
	fcntl(ans[0], F_SETFL, O_NONBLOCK);
	ip.pid = pid;
	ip.req.w.fd = req[1];
	ip.ans.w.fd = ans[0];
	interp_watch();
	return 0;
}

static void answer_free(void)
{
	free(ip.id);
	ip.id = NULL;
	ip.c = NULL;
	ip.busy = 0;
	ip.deadline = 0;
}

/* Answers the eval being run with `value` (a return) and frees it. */
static void answer_return(struct buf *value)
{
	if (ip.c)
		send_return(ip.c, ip.id, ip.idlen, value);
	answer_free();
}

/* An eval that did not run to its end: a return, not a protocol error (the host shows it as the eval's error). */
static void answer_failure(const char *error, int exit_code, int timed_out)
{
	struct buf v = {0};
	int f = 1;
	buf_putc(&v, '{');
	jw_key(&v, &f, "result");
	buf_puts(&v, "null");
	jw_key(&v, &f, "error");
	jw_str(&v, error, strlen(error));
	jw_key(&v, &f, "exit-code");
	jw_int(&v, exit_code);
	jw_key(&v, &f, "stdout");
	buf_puts(&v, "\"\"");
	jw_key(&v, &f, "stdout-truncated");
	jw_bool(&v, 0);
	jw_key(&v, &f, "timed-out");
	jw_bool(&v, timed_out);
	jw_key(&v, &f, "fresh");
	jw_bool(&v, ip.fresh);
	jw_key(&v, &f, "duration-ms");
	jw_int(&v, now_ms() - ip.start);
	buf_putc(&v, '}');
	answer_return(&v);
	buf_free(&v);
}

/* The interpreter died or broke the protocol: it is stopped; a waiting eval gets `why`. The next
 * eval starts a fresh interpreter. */
static void interp_lost(const char *why, int exit_code)
{
	interp_stop();
	if (!ip.busy)
		return;
	char msg[512];
	snprintf(msg, sizeof msg, "%s; its state (variables, imports) is gone: the next eval starts a fresh interpreter", why);
	answer_failure(msg, exit_code, 0);
}

/* A pipe to the interpreter closed: most likely it is exiting (its fds close before it can be
 * reaped), so the answer waits for the reap, which says how it ended; the kill makes sure it comes. */
static void interp_dying(void)
{
	kill(-ip.pid, SIGKILL);
	end_close(&ip.req);
	end_close(&ip.ans);
	ip.dying = 1;
}

void eval_reaped(pid_t pid, int status)
{
	if (pid != ip.pid || pid <= 0)
		return;
	char why[128];
	int code = 1;
	if (ip.dying && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
		code = 128 + SIGKILL;
		snprintf(why, sizeof why, "the interpreter closed its pipes to the agent (and was killed)");
	} else if (WIFSIGNALED(status)) {
		code = 128 + WTERMSIG(status);
		snprintf(why, sizeof why, "the interpreter was killed by signal %d", WTERMSIG(status));
	} else {
		code = WEXITSTATUS(status) ? WEXITSTATUS(status) : 1;
		snprintf(why, sizeof why, "the interpreter exited with status %d", WEXITSTATUS(status));
	}
	interp_lost(why, code);
}

/* Checks a string member of the driver's answer (present; a string, or null where allowed). */
static int answer_str(uint32_t obj, const char *key, int nullable, uint32_t *out)
{
	uint32_t n = json_get(&adoc, obj, key);
	if (!n || !(adoc.n[n].type == J_STR || (nullable && adoc.n[n].type == J_NULL)))
		return -1;
	*out = n;
	return 0;
}

/* One frame from the driver: the hello, or the answer to the eval being run. -1 if it is malformed. */
static int on_frame(char *p, size_t n)
{
	if (json_parse(&adoc, p, n) || adoc.n[0].type != J_OBJ)
		return -1;
	if (!ip.hello) {
		uint32_t v;
		if (adoc.n[0].count != 1 || answer_str(0, "python", 0, &v) || adoc.n[v].len >= sizeof version)
			return -1;
		memcpy(version, adoc.n[v].s, adoc.n[v].len + 1);
		ip.hello = 1;
		return 0;
	}
	uint32_t result, error, out, code, cut;
	if (!ip.busy || adoc.n[0].count != 5 || answer_str(0, "result", 1, &result) || answer_str(0, "error", 1, &error) ||
	    answer_str(0, "stdout", 0, &out) || !(code = json_get(&adoc, 0, "exit_code")) || adoc.n[code].type != J_INT ||
	    adoc.n[code].i < 0 || adoc.n[code].i > 255 || !(cut = json_get(&adoc, 0, "stdout_truncated")) ||
	    (adoc.n[cut].type != J_TRUE && adoc.n[cut].type != J_FALSE))
		return -1;
	struct buf v = {0};
	int f = 1;
	buf_putc(&v, '{');
	jw_key(&v, &f, "result");
	jw_node(&v, &adoc, result);
	jw_key(&v, &f, "error");
	jw_node(&v, &adoc, error);
	jw_key(&v, &f, "exit-code");
	jw_int(&v, adoc.n[code].i);
	jw_key(&v, &f, "stdout");
	jw_node(&v, &adoc, out);
	jw_key(&v, &f, "stdout-truncated");
	jw_node(&v, &adoc, cut);
	jw_key(&v, &f, "timed-out");
	jw_bool(&v, 0);
	jw_key(&v, &f, "fresh");
	jw_bool(&v, ip.fresh);
	jw_key(&v, &f, "duration-ms");
	jw_int(&v, now_ms() - ip.start);
	buf_putc(&v, '}');
	answer_return(&v);
	buf_free(&v);
	return 0;
}

static void on_answer_readable(void)
{
	for (;;) {
		buf_reserve(&ip.in, 65536);
		size_t room = ip.in.cap - ip.in.len;
		ssize_t n = read(ip.ans.w.fd, ip.in.p + ip.in.len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			interp_dying();
			return;
		}
		ip.in.len += (size_t)n;
		while (ip.in.len >= 4) {
			const unsigned char *h = (const unsigned char *)ip.in.p;
			size_t len = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
			if (len > MAX_ANSWER) {
				interp_lost("the interpreter sent an answer larger than 8 MiB", 1);
				return;
			}
			if (ip.in.len < 4 + len)
				break;
			if (on_frame(ip.in.p + 4, len) < 0) {
				interp_lost("the interpreter broke the eval protocol (a malformed or unexpected answer)", 1);
				return;
			}
			buf_consume(&ip.in, 4 + len);
		}
		if ((size_t)n < room)
			break;
	}
	buf_trim(&ip.in, 65536);
}

static void on_request_writable(void)
{
	while (ip.outpos < ip.out.len) {
		ssize_t n = write(ip.req.w.fd, ip.out.p + ip.outpos, ip.out.len - ip.outpos);
		if (n > 0) {
			ip.outpos += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		interp_dying();
		return;
	}
	if (ip.outpos == ip.out.len) {
		ip.out.len = ip.outpos = 0;
		buf_trim(&ip.out, 65536);
	}
	interp_watch();
}

void eval_on_pipe(struct watch *w, uint32_t events)
{
	if (w->fd < 0)
		return;
	if (w == &ip.ans.w && events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		on_answer_readable();
	else if (w == &ip.req.w && events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
		on_request_writable();
}

int64_t eval_next_deadline(void)
{
	return ip.busy && ip.deadline ? ip.deadline : -1;
}

void eval_on_time(int64_t now)
{
	if (!ip.busy || !ip.deadline || ip.deadline > now)
		return;
	interp_stop();
	char msg[320];
	snprintf(msg, sizeof msg,
		 "TimeoutError: the eval ran longer than %lld ms; the interpreter was killed and a fresh one started: "
		 "its state (variables, imports) is gone",
		 (long long)ip.timeout_ms);
	answer_failure(msg, EXIT_TIMEOUT, 1);
	interp_start(); /* warm for the next eval; if it cannot start, the next eval says why */
}

void eval_conn_gone(struct conn *c)
{
	if (ip.c == c)
		ip.c = NULL; /* the eval runs on (bounded by its timeout); its answer is for nobody */
}

int eval_waiting_on(const struct conn *c)
{
	return ip.busy && ip.c == c;
}

void eval_kill(void)
{
	interp_stop();
}

int cmd_vivarium_eval(struct call *k)
{
	static const char *const allowed[] = {"code", "timeout-ms", NULL};
	const char *code;
	size_t len;
	int64_t timeout = DEFAULT_TIMEOUT_MS;
	if (args_only(k, allowed) || arg_str(k, "code", 1, &code, &len) < 0 || arg_int(k, "timeout-ms", 0, &timeout) < 0)
		return R_ERR;
	if (len > MAX_CODE)
		return fail(k, "InvalidParameter", "code is %zu bytes; at most %zu", len, MAX_CODE);
	if (timeout <= 0 || timeout > MAX_TIMEOUT_MS)
		return fail(k, "InvalidParameter", "timeout-ms must be between 1 and %d", MAX_TIMEOUT_MS);
	if (ip.dying && !ip.busy)
		interp_stop(); /* it died between evals: its reap is for nobody */
	if (ip.busy)
		return fail(k, "LimitExceeded", "an eval is already running in this interpreter: evals run one at a time, retry when it has answered");
	if (!ip.pid) {
		int e = interp_start();
		if (e == ENOENT)
			return fail(k, "NotFound", "no %s in PATH /usr/local/bin:/usr/bin:/bin: eval needs a Python 3 interpreter", PYTHON);
		if (e)
			return fail_errno(k, e, "cannot start", PYTHON);
	}
	unsigned char h[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16), (unsigned char)(len >> 8), (unsigned char)len};
	buf_put(&ip.out, h, 4);
	buf_put(&ip.out, code, len);
	ip.busy = 1;
	ip.fresh = !ip.used;
	ip.used = 1;
	ip.c = k->c;
	ip.id = k->id ? xstrndup(k->id, k->idlen) : NULL;
	ip.idlen = k->idlen;
	ip.start = now_ms();
	ip.timeout_ms = timeout;
	ip.deadline = ip.start + timeout;
	on_request_writable();
	return R_DEFER;
}
