/* vivarium-agent: transports, the event loop, request framing and dispatch. */
#define _GNU_SOURCE
#include "agent.h"
#include "base64.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

int epfd = -1;
static struct conn *conns;
static struct listener *listeners[16];
static int nlisteners;
static int serial_fds[16];
static int nserials;
static struct jdoc doc;
static int terminating;

#define SERIAL_RETRY_MS 250
#define ACCEPT_RETRY_MS 100

int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void watch_set(struct watch *w, uint32_t events, uint32_t *current)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};
	if (events == *current)
		return;
	if (!events)
		epoll_ctl(epfd, EPOLL_CTL_DEL, w->fd, NULL);
	else if (epoll_ctl(epfd, *current ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, w->fd, &ev) < 0) {
		fprintf(stderr, "vivarium-agent: epoll_ctl: %s\n", strerror(errno));
		exit(70);
	}
	*current = events;
}

/* ---- errors and arguments ---- */

int fail(struct call *k, const char *eclass, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(k->edesc, sizeof k->edesc, fmt, ap);
	va_end(ap);
	k->eclass = eclass;
	return R_ERR;
}

int fail_errno(struct call *k, int err, const char *what, const char *subject)
{
	const char *cls = "GenericError";
	if (err == ENOENT)
		cls = "NotFound";
	else if (err == EACCES || err == EPERM || err == EROFS)
		cls = "PermissionDenied";
	else if (err == EISDIR || err == ENOTDIR || err == ELOOP || err == EINVAL || err == ENAMETOOLONG || err == ENOEXEC)
		cls = "InvalidParameter";
	return fail(k, cls, "%s %s: %s", what, subject, strerror(err));
}

uint32_t arg_node(struct call *k, const char *name)
{
	uint32_t n = k->args ? json_get(k->doc, k->args, name) : 0;
	return n && k->doc->n[n].type != J_NULL ? n : 0;
}

int args_only(struct call *k, const char *const *names)
{
	if (!k->args)
		return 0;
	for (uint32_t m = k->doc->n[k->args].child; m; m = k->doc->n[m].next) {
		const char *const *p = names;
		while (*p && strcmp(*p, k->doc->n[m].key))
			p++;
		if (!*p)
			return fail(k, "InvalidParameter", "unexpected argument '%s'", k->doc->n[m].key), -1;
	}
	return 0;
}

static int arg_typed(struct call *k, const char *name, int required, int type, uint32_t *out)
{
	uint32_t n = arg_node(k, name);
	if (!n) {
		if (required)
			return fail(k, "InvalidParameter", "argument '%s' is missing", name), -1;
		return 0;
	}
	int t = k->doc->n[n].type;
	if (t == J_TRUE)
		t = J_FALSE;
	if (t != type)
		return fail(k, "InvalidParameter", "argument '%s' must be a %s, not a %s", name, json_type_name(type),
			    json_type_name(k->doc->n[n].type)), -1;
	*out = n;
	return 1;
}

int arg_str(struct call *k, const char *name, int required, const char **s, size_t *len)
{
	uint32_t n;
	int r = arg_typed(k, name, required, J_STR, &n);
	if (r == 1) {
		*s = k->doc->n[n].s;
		if (len)
			*len = k->doc->n[n].len;
	}
	return r;
}

int arg_int(struct call *k, const char *name, int required, int64_t *v)
{
	uint32_t n;
	int r = arg_typed(k, name, required, J_INT, &n);
	if (r == 1)
		*v = k->doc->n[n].i;
	return r;
}

int arg_bool(struct call *k, const char *name, int required, int *v)
{
	uint32_t n;
	int r = arg_typed(k, name, required, J_FALSE, &n);
	if (r == 1)
		*v = k->doc->n[n].type == J_TRUE;
	return r;
}

int arg_b64(struct call *k, const char *name, int required, unsigned char **data, size_t *len)
{
	const char *s;
	size_t n;
	int r = arg_str(k, name, required, &s, &n);
	if (r != 1)
		return r;
	ssize_t d = b64_decode(s, n, (unsigned char *)s);
	if (d < 0)
		return fail(k, "InvalidParameter", "argument '%s' is not valid base64", name), -1;
	*data = (unsigned char *)s;
	*len = (size_t)d;
	return 1;
}

/* ---- connections ---- */

static void conn_watch(struct conn *c)
{
	uint32_t ev = 0;
	if (!c->dead && c->retry_at == 0) {
		if (!c->closing)
			ev |= EPOLLIN;
		if (c->out.len)
			ev |= EPOLLOUT;
		if (c->serial && !ev)
			ev = EPOLLIN; /* a serial port is always watched, else hangups go unseen */
	}
	watch_set(&c->w, ev, &c->events);
}

static void conn_flush(struct conn *c)
{
	while (c->out.len && !c->dead) {
		ssize_t n = c->serial ? write(c->w.fd, c->out.p, c->out.len)
				      : send(c->w.fd, c->out.p, c->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			buf_consume(&c->out, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (c->serial) /* the host went away: what was queued is for nobody */
			c->out.len = 0;
		else
			c->dead = 1;
	}
	buf_trim(&c->out, 65536);
	if (c->closing && !c->out.len && !c->serial && !exec_waiting_on(c) && !eval_waiting_on(c))
		c->dead = 1;
	conn_watch(c);
}

/* Drops a connection whose reader let too much pile up (a serial port just loses the queue). */
static int conn_over_limit(struct conn *c, size_t more)
{
	if (c->out.len + more <= MAX_QUEUED)
		return 0;
	if (c->serial) {
		c->out.len = 0;
		return 0;
	}
	c->dead = 1;
	conn_watch(c);
	return 1;
}

void conn_send(struct conn *c, const char *data, size_t n)
{
	if (c->dead || conn_over_limit(c, n))
		return;
	buf_put(&c->out, data, n);
	conn_flush(c);
}

/* Frames a response straight into the connection's queue: no intermediate copy. */
static void send_framed(struct conn *c, const char *id, size_t idlen, const char *head, const char *body, size_t bodylen)
{
	if (c->dead || conn_over_limit(c, strlen(head) + bodylen + idlen + 8))
		return;
	buf_puts(&c->out, head);
	buf_put(&c->out, body, bodylen);
	if (id) {
		buf_puts(&c->out, ",\"id\":");
		buf_put(&c->out, id, idlen);
	}
	buf_puts(&c->out, "}\n");
	conn_flush(c);
}

void send_return(struct conn *c, const char *id, size_t idlen, const struct buf *value)
{
	send_framed(c, id, idlen, "{\"return\":", value->p, value->len);
}

void send_error(struct conn *c, const char *id, size_t idlen, const char *eclass, const char *desc)
{
	struct buf e = {0};
	buf_puts(&e, "{\"class\":\"");
	buf_puts(&e, eclass);
	buf_puts(&e, "\",\"desc\":");
	jw_str(&e, desc, strlen(desc));
	buf_putc(&e, '}');
	send_framed(c, id, idlen, "{\"error\":", e.p, e.len);
	buf_free(&e);
}

static struct conn *conn_new(int fd, struct listener *l, int serial)
{
	struct conn *c = xmalloc(sizeof *c);
	memset(c, 0, sizeof *c);
	c->w.kind = W_CONN;
	c->w.fd = fd;
	c->l = l;
	c->serial = serial;
	c->next = conns;
	conns = c;
	if (l)
		l->nconns++;
	conn_watch(c);
	return c;
}

static void conn_reap_dead(void)
{
	for (struct conn **pp = &conns; *pp;) {
		struct conn *c = *pp;
		if (!c->dead) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		exec_conn_gone(c);
		eval_conn_gone(c);
		files_conn_gone(c);
		watch_set(&c->w, 0, &c->events);
		close(c->w.fd);
		if (c->l)
			c->l->nconns--;
		buf_free(&c->in);
		buf_free(&c->out);
		free(c);
	}
}

/* ---- commands ---- */

static int cmd_sync(struct call *k)
{
	static const char *const allowed[] = {"id", NULL};
	int64_t id = 0;
	if (args_only(k, allowed) || arg_int(k, "id", 1, &id) < 0)
		return R_ERR;
	jw_int(k->out, id);
	return R_OK;
}

static int cmd_sync_delimited(struct call *k)
{
	k->delimit = 1;
	return cmd_sync(k);
}

static int cmd_ping(struct call *k)
{
	static const char *const allowed[] = {NULL};
	if (args_only(k, allowed))
		return R_ERR;
	/* the interpreter's version, null before one started: a host learns it in the ping's one round trip */
	buf_puts(k->out, "{\"python-version\":");
	if (eval_version())
		jw_str(k->out, eval_version(), strlen(eval_version()));
	else
		buf_puts(k->out, "null");
	buf_putc(k->out, '}');
	return R_OK;
}

static int cmd_info(struct call *k);

struct command {
	const char *name;
	int (*fn)(struct call *);
	int no_success_response;
	int while_frozen; /* safe while filesystems are frozen: touches no filesystem */
	int listed;
};

static const struct command commands[] = {
	{"guest-sync-delimited", cmd_sync_delimited, 0, 1, 1},
	{"guest-sync", cmd_sync, 0, 1, 1},
	{"guest-ping", cmd_ping, 0, 1, 1},
	{"guest-info", cmd_info, 0, 1, 1},
	{"guest-exec", cmd_guest_exec, 0, 0, 1},
	{"guest-exec-status", cmd_guest_exec_status, 0, 1, 1},
	{"guest-file-open", cmd_file_open, 0, 0, 1},
	{"guest-file-read", cmd_file_read, 0, 0, 1},
	{"guest-file-write", cmd_file_write, 0, 0, 1},
	{"guest-file-close", cmd_file_close, 0, 0, 1},
	{"guest-fsfreeze-status", cmd_fsfreeze_status, 0, 1, 1},
	{"guest-fsfreeze-freeze", cmd_fsfreeze_freeze, 0, 1, 1},
	{"guest-fsfreeze-freeze-list", cmd_fsfreeze_freeze_list, 0, 1, 1},
	{"guest-fsfreeze-thaw", cmd_fsfreeze_thaw, 0, 1, 1},
	{"guest-get-time", cmd_get_time, 0, 1, 1},
	{"guest-set-time", cmd_set_time, 0, 1, 1},
	{"guest-shutdown", cmd_shutdown, 1, 0, 1},
	{"vivarium-exec", cmd_vivarium_exec, 0, 0, 1},
	{"vivarium-exec-poll", cmd_vivarium_exec_poll, 0, 1, 1},
	{"vivarium-exec-kill", cmd_vivarium_exec_kill, 0, 1, 1},
	{"vivarium-exec-write", cmd_vivarium_exec_write, 0, 0, 1},
	{"vivarium-exec-resize", cmd_vivarium_exec_resize, 0, 1, 1},
	{"vivarium-list", cmd_vivarium_list, 0, 0, 1},
	{"vivarium-file-write", cmd_vivarium_file_write, 0, 0, 1},
	{"vivarium-file-read", cmd_vivarium_file_read, 0, 0, 1},
	{"vivarium-eval", cmd_vivarium_eval, 0, 0, 1},
};

static int cmd_info(struct call *k)
{
	static const char *const allowed[] = {NULL};
	if (args_only(k, allowed))
		return R_ERR;
	buf_puts(k->out, "{\"version\":\"" AGENT_VERSION "\",\"supported_commands\":[");
	int first = 1;
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
		if (!commands[i].listed)
			continue;
		if (!first)
			buf_putc(k->out, ',');
		first = 0;
		buf_puts(k->out, "{\"name\":\"");
		buf_puts(k->out, commands[i].name);
		buf_puts(k->out, "\",\"enabled\":true,\"success-response\":");
		jw_bool(k->out, !commands[i].no_success_response);
		buf_putc(k->out, '}');
	}
	buf_putc(k->out, ']');
	if (eval_version()) {
		buf_puts(k->out, ",\"python-version\":");
		jw_str(k->out, eval_version(), strlen(eval_version()));
	}
	buf_putc(k->out, '}');
	return R_OK;
}

static void handle_line(struct conn *c, char *line, size_t n)
{
	size_t i = 0;
	while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	if (i == n)
		return;
	if (json_parse(&doc, line, n)) {
		char desc[128];
		snprintf(desc, sizeof desc, "invalid JSON: %s", doc.err);
		send_error(c, NULL, 0, "GenericError", desc);
		return;
	}
	struct buf idbuf = {0}, out = {0};
	struct call k = {.c = c, .doc = &doc, .out = &out};
	uint32_t exe = 0, id = 0, args = 0;
	const char *problem = NULL;
	if (doc.n[0].type != J_OBJ) {
		problem = "a request must be a JSON object";
	} else {
		for (uint32_t m = doc.n[0].child; m; m = doc.n[m].next) {
			if (!strcmp(doc.n[m].key, "execute"))
				exe = m;
			else if (!strcmp(doc.n[m].key, "id"))
				id = m;
			else if (!strcmp(doc.n[m].key, "arguments"))
				args = m;
			else if (!problem)
				problem = "a request has only 'execute', 'arguments' and 'id'";
		}
	}
	if (id) {
		jw_node(&idbuf, &doc, id);
		k.id = idbuf.p;
		k.idlen = idbuf.len;
	}
	if (!problem && (!exe || doc.n[exe].type != J_STR))
		problem = "'execute' must be a string naming the command";
	if (!problem && args && doc.n[args].type != J_OBJ && doc.n[args].type != J_NULL)
		problem = "'arguments' must be an object";
	if (problem) {
		send_error(c, k.id, k.idlen, "GenericError", problem);
		goto out;
	}
	k.args = args && doc.n[args].type == J_OBJ ? args : 0;
	const struct command *cmd = NULL;
	for (size_t j = 0; j < sizeof commands / sizeof *commands; j++)
		if (!strcmp(commands[j].name, doc.n[exe].s))
			cmd = &commands[j];
	int r;
	if (!cmd)
		r = fail(&k, "CommandNotFound", "The command %.200s has not been found", doc.n[exe].s);
	else if (fs_frozen() && !cmd->while_frozen)
		r = fail(&k, "GenericError", "%s is refused while filesystems are frozen (guest-fsfreeze-thaw first)", cmd->name);
	else
		r = cmd->fn(&k);
	if (r == R_OK) {
		if (k.delimit)
			conn_send(c, "\xff", 1);
		send_return(c, k.id, k.idlen, &out);
	} else if (r == R_ERR) {
		send_error(c, k.id, k.idlen, k.eclass, k.edesc);
	}
out:
	buf_free(&idbuf);
	buf_free(&out);
}

static void conn_lines(struct conn *c)
{
	size_t start = 0;
	while (!c->dead && !c->closing) {
		char *nl = memchr(c->in.p + start, '\n', c->in.len - start);
		if (!nl)
			break;
		size_t n = (size_t)(nl - (c->in.p + start));
		if (n > MAX_LINE)
			break;
		handle_line(c, c->in.p + start, n);
		start += n + 1;
	}
	buf_consume(&c->in, start);
	if (c->in.len > MAX_LINE && !c->closing && !c->dead) {
		send_error(c, NULL, 0, "LimitExceeded", "request line longer than 16 MiB");
		c->in.len = 0;
		if (c->serial)
			return; /* the port stays: the host resynchronises */
		c->closing = 1;
		conn_flush(c);
	}
	buf_trim(&c->in, 65536);
}

static void conn_hangup(struct conn *c)
{
	if (!c->serial) {
		c->dead = 1;
		return;
	}
	/* A virtio port reports a hangup while no host is connected: stop watching it for a
	 * moment and look again, so the host can reconnect without a busy loop. */
	c->in.len = 0;
	c->out.len = 0;
	exec_conn_gone(c);
	eval_conn_gone(c);
	files_conn_gone(c);
	c->retry_at = now_ms() + SERIAL_RETRY_MS;
	conn_watch(c);
}

static void on_conn(struct conn *c, uint32_t events)
{
	static char chunk[65536];
	if (events & EPOLLOUT)
		conn_flush(c);
	if (c->dead)
		return;
	if (events & EPOLLIN && !c->closing) {
		ssize_t n = read(c->w.fd, chunk, sizeof chunk);
		if (n > 0) {
			/* 0xFF from the host resets the parser: drop the partial request before it. */
			char *p = chunk, *end = chunk + n, *ff;
			while ((ff = memchr(p, 0xFF, (size_t)(end - p)))) {
				buf_put(&c->in, p, (size_t)(ff - p));
				conn_lines(c);
				c->in.len = 0;
				p = ff + 1;
			}
			buf_put(&c->in, p, (size_t)(end - p));
			conn_lines(c);
			return;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n == 0 && !c->serial) {
			/* Half-closed: answer what was asked (deferred answers too), then close. */
			c->closing = 1;
			conn_flush(c);
			return;
		}
		conn_hangup(c);
		return;
	}
	if (events & (EPOLLHUP | EPOLLERR))
		conn_hangup(c);
}

static void on_listen(struct listener *l)
{
	int fd;
	while ((fd = accept4(l->w.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0 && (errno == EMFILE || errno == ENFILE))
		if (!exec_reclaim()) {
			/* The connection stays pending, so the listener stays readable: stop watching it for
			 * a moment instead of spinning, and accept once an fd was freed. */
			l->retry_at = now_ms() + ACCEPT_RETRY_MS;
			watch_set(&l->w, 0, &l->events);
			return;
		}
	if (fd < 0)
		return;
	if (l->nconns >= MAX_CONNS) {
		static const char msg[] = "{\"error\":{\"class\":\"LimitExceeded\",\"desc\":\"at most 64 connections at once\"}}\n";
		(void)!send(fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		return;
	}
	conn_new(fd, l, 0);
}

/* ---- transports ---- */

/* <linux/vm_sockets.h>'s address, which musl's headers lack (a stable part of the kernel's ABI). */
struct sockaddr_vm {
	sa_family_t svm_family;
	unsigned short svm_reserved1;
	unsigned int svm_port;
	unsigned int svm_cid;
	unsigned char svm_flags;
	unsigned char svm_zero[3];
};
#define VMADDR_CID_ANY 0xFFFFFFFFu
#define VMADDR_PORT_ANY 0xFFFFFFFFu

/* A vsock listener's "path" is its spec, "vsock:PORT": no file to replace or remove. */
static int is_vsock(const char *path)
{
	return !strncmp(path, "vsock:", 6);
}

/* Listens on any CID at the port of "vsock:PORT": a Firecracker or Cloud Hypervisor guest's
 * channel to the host, whose VMM turns a host connection to its Unix socket into one here. */
static int listen_vsock(const char *spec)
{
	char *end;
	unsigned long port = strtoul(spec + 6, &end, 10);
	struct sockaddr_vm sa = {.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = (unsigned)port};
	int fd = -1;
	if (*end || end == spec + 6 || port == 0 || port >= VMADDR_PORT_ANY) {
		errno = EINVAL;
	} else {
		fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd >= 0 && (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 64) < 0)) {
			int e = errno;
			close(fd);
			fd = -1;
			errno = e;
		}
	}
	if (fd < 0)
		fprintf(stderr, "vivarium-agent: cannot listen on %s: %s\n", spec, strerror(errno));
	return fd;
}

void unlink_listener(const char *path)
{
	if (!is_vsock(path))
		unlink(path);
}

int listen_unix(const char *path)
{
	if (is_vsock(path))
		return listen_vsock(path);

	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strcpy(sa.sun_path, path);
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 64) < 0) {
		fprintf(stderr, "vivarium-agent: cannot listen on %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Closes every listener and every connection accepted from one (serial ports stay): gVisor cannot
 * checkpoint a sandbox holding a socket bound on or connected to the host (PROTOCOL.md). */
static void release_listeners(int remove_files)
{
	for (int i = 0; i < nlisteners; i++) {
		struct listener *l = listeners[i];
		if (l->w.fd < 0)
			continue;
		watch_set(&l->w, 0, &l->events);
		close(l->w.fd);
		l->w.fd = -1;
		l->retry_at = 0;
		if (remove_files)
			unlink_listener(l->path);
	}
	for (struct conn *c = conns; c; c = c->next)
		if (c->l)
			c->dead = 1;
}

/* Listener i listens on fd again. */
static void take_listener(int i, int fd)
{
	if (listeners[i]->w.fd >= 0) {
		close(fd);
		return;
	}
	listeners[i]->w.fd = fd;
	watch_set(&listeners[i]->w, EPOLLIN, &listeners[i]->events);
}

/* Without a supervisor: SIGUSR2 binds the released listeners again. */
static void rebind_listeners(void)
{
	for (int i = 0; i < nlisteners; i++)
		if (listeners[i]->w.fd < 0) {
			int fd = listen_unix(listeners[i]->path);
			if (fd >= 0)
				take_listener(i, fd);
		}
}

/* A message from the supervisor on the stop socket; returns 0 when it closed it (stop). */
static int on_supervisor(int fd)
{
	char byte;
	char control[CMSG_SPACE(sizeof(int) * 16)];
	struct iovec iov = {&byte, 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
	ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 1;
	if (n <= 0)
		return 0;
	if (byte == 'R') {
		release_listeners(0); /* the supervisor removes the files */
	} else if (byte == 'L') {
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				int count = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
				int *fds = (int *)CMSG_DATA(cm);
				for (int i = 0; i < count; i++) {
					if (i < nlisteners)
						take_listener(i, fds[i]);
					else
						close(fds[i]);
				}
			}
	}
	return 1;
}

static void add_listener(const char *spec)
{
	int vsock = !strncmp(spec, "vsock:", 6);
	if ((strncmp(spec, "unix:", 5) && !vsock) || !spec[vsock ? 6 : 5]) {
		fprintf(stderr, "vivarium-agent: --listen takes unix:PATH or vsock:PORT, not %s\n", spec);
		exit(2);
	}
	const char *path = vsock ? spec : spec + 5;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path || nlisteners == (int)(sizeof listeners / sizeof *listeners)) {
		fprintf(stderr, "vivarium-agent: socket path too long or too many listeners: %s\n", path);
		exit(2);
	}
	int fd = listen_unix(path);
	if (fd < 0)
		exit(1);
	struct listener *l = xmalloc(sizeof *l);
	memset(l, 0, sizeof *l);
	l->w.kind = W_LISTEN;
	l->w.fd = fd;
	l->path = xstrndup(path, strlen(path));
	listeners[nlisteners++] = l;
}

static void add_serial(const char *path)
{
	if (nserials == (int)(sizeof serial_fds / sizeof *serial_fds)) {
		fprintf(stderr, "vivarium-agent: too many serial ports: %s\n", path);
		exit(2);
	}
	int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "vivarium-agent: cannot open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	struct termios t;
	if (tcgetattr(fd, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(fd, TCSANOW, &t);
	}
	serial_fds[nserials++] = fd;
}

static void add_serial_name(const char *name)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *e;
	char path[512], got[256];
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, got, sizeof got - 1);
		close(fd);
		if (n <= 0)
			continue;
		while (n > 0 && (got[n - 1] == '\n' || got[n - 1] == 0))
			n--;
		got[n] = 0;
		if (strcmp(got, name))
			continue;
		snprintf(path, sizeof path, "/dev/%s", e->d_name);
		closedir(d);
		serves_virtio_port = 1;
		add_serial(path);
		return;
	}
	if (d)
		closedir(d);
	fprintf(stderr, "vivarium-agent: no virtio port named %s in /sys/class/virtio-ports\n", name);
	exit(1);
}

static void usage(FILE *f, int code)
{
	fputs("usage: vivarium-agent [--user UID:GID] [--listen unix:PATH|vsock:PORT]... [--serial PATH]... [--serial-name NAME]...\n"
	      "       vivarium-agent --run-as UID:GID -- COMMAND...   (becomes UID:GID for good, then runs COMMAND)\n"
	      "       vivarium-agent --set-hostname   (reads a hostname on stdin, sets it in its UTS namespace)\n"
	      "       vivarium-agent --version\n"
	      "Speaks the QEMU guest agent protocol plus vivarium-* extensions (see PROTOCOL.md).\n",
	      f);
	exit(code);
}

static void shutdown_agent(void)
{
	for (int i = 0; i < nlisteners; i++) {
		if (listeners[i]->w.fd >= 0)
			close(listeners[i]->w.fd);
		unlink_listener(listeners[i]->path);
	}
	exec_kill_all();
	eval_kill();
	exit(0);
}

/* Keep 0, 1 and 2 taken so that pipes and sockets never land on them (an initramfs may start
 * the agent with them closed, and maybe without /dev/null). */
static void ensure_stdio(void)
{
	for (int i = 0; i < 3; i++) {
		if (fcntl(i, F_GETFD) >= 0)
			continue;
		int fd = open("/dev/null", O_RDWR), p[2];
		if (fd < 0) {
			if (pipe(p) < 0)
				return;
			fd = p[0];
			close(p[1]);
		}
		if (fd != i) {
			dup2(fd, i);
			close(fd);
		}
	}
}

/* 256 execs with three pipes each, 64 connections and open files need more than the usual
 * 1024 descriptors; children get the original limit back (exec.c). */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	child_nofile = rl;
	if (rl.rlim_cur < 4096 && rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* UID:GID, both decimal and neither 0 (the point of --user is to stop being root). */
static void parse_user(const char *spec, uid_t *uid, gid_t *gid)
{
	char *end;
	errno = 0;
	unsigned long u = strtoul(spec, &end, 10), g = 0;
	int ok = end != spec && *end == ':' && spec[0] != '-';
	if (ok) {
		const char *gs = end + 1;
		g = strtoul(gs, &end, 10);
		ok = end != gs && !*end && gs[0] != '-';
	}
	if (!ok || errno || u == 0 || g == 0 || u > 0xfffffffe || g > 0xfffffffe) {
		fprintf(stderr, "vivarium-agent: --user takes UID:GID, two numbers other than 0, not %s\n", spec);
		exit(2);
	}
	*uid = (uid_t)u;
	*gid = (gid_t)g;
}

/* --run-as UID:GID -- COMMAND...: becomes UID:GID for good, then runs COMMAND. A host's sandbox
 * twin runs the command this way where the sandbox's root is an image's, whose own setpriv is not
 * to be run as root; this binary is the host's, bound in. */
static int run_as_main(int argc, char **argv)
{
	if (argc < 3 || strcmp(argv[1], "--")) {
		fprintf(stderr, "usage: vivarium-agent --run-as UID:GID -- COMMAND...\n");
		return 2;
	}
	uid_t uid;
	gid_t gid;
	parse_user(argv[0], &uid, &gid);
	const char *failed = become(uid, gid);
	if (failed) {
		fprintf(stderr, "vivarium-agent: --run-as %s: %s: %s\n", argv[0], failed, strerror(errno));
		return 126;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "vivarium-agent: cannot run %s: %s\n", argv[2], strerror(errno));
	return 127;
}

/*
 * --set-hostname: reads one line, a hostname (a lowercase letter or digit, then up to 62 of those
 * or '-'), and makes it the hostname of this process's UTS namespace. The host starts it in a
 * pooled sandbox's namespace ahead of time and writes the name when the sandbox is handed over:
 * a waiting shell would exec hostname(1) then, a dynamically linked start-up, at every create.
 */
static int set_hostname_main(void)
{
	char name[80];
	size_t n = 0;
	char *end = NULL;
	while (!end && n < sizeof name) {
		ssize_t r = read(0, name + n, sizeof name - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		end = memchr(name + n, '\n', (size_t)r);
		n += (size_t)r;
	}
	if (!end) {
		fputs("vivarium-agent: --set-hostname: no line on stdin\n", stderr);
		return 2;
	}
	size_t len = (size_t)(end - name);
	int ok = len >= 1 && len <= 63 && name[0] != '-';
	for (size_t i = 0; ok && i < len; i++)
		ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '-';
	if (!ok) {
		fputs("vivarium-agent: --set-hostname: not a hostname\n", stderr);
		return 2;
	}
	if (sethostname(name, len) < 0) {
		fprintf(stderr, "vivarium-agent: --set-hostname: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--set-hostname"))
		return set_hostname_main();
	if (argc > 1 && !strcmp(argv[1], "--launch"))
		return launch_main(argc - 2, argv + 2);
	if (argc == 2 && !strcmp(argv[1], "--launcher"))
		return launcher_main();
	if (argc > 1 && !strcmp(argv[1], "--run-as"))
		return run_as_main(argc - 2, argv + 2);
	ensure_stdio();
	/* Not dumpable, whoever runs it: a process of the agent's uid that lacks CAP_SYS_PTRACE (in a
	 * VM as root, or in a user namespace, the sandbox's commands share the agent's uid) can neither
	 * ptrace it nor read its memory or take its fds (pidfd_getfd, /proc/PID/fd). Its execs are
	 * dumpable again after execve. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	int transports = 0, drop = 0, stopfd = -1;
	uid_t uid = 0;
	gid_t gid = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--version")) {
			puts(AGENT_VERSION);
			return 0;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			usage(stdout, 0);
		if (i + 1 >= argc)
			usage(stderr, 2);
		if (!strcmp(a, "--user")) {
			parse_user(argv[++i], &uid, &gid);
			drop = 1;
		} else if (!strcmp(a, "--listen") || !strcmp(a, "--serial") || !strcmp(a, "--serial-name")) {
			i++;
			transports++;
		} else {
			usage(stderr, 2);
		}
	}
	if (!transports)
		usage(stderr, 2);
	if (drop && geteuid() != 0) {
		fprintf(stderr, "vivarium-agent: --user needs the agent to start as root\n");
		return 1;
	}
	/* Under --user the socket is root's alone (0600): the sandbox user can neither connect to it
	 * nor, since its directory is root's, replace it with a link the host would follow. */
	mode_t old_umask = drop ? umask(0177) : 0;
	for (int i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "--listen"))
			add_listener(argv[i + 1]);
		else if (!strcmp(argv[i], "--serial"))
			add_serial(argv[i + 1]);
		else if (!strcmp(argv[i], "--serial-name"))
			add_serial_name(argv[i + 1]);
	}
	if (drop) {
		umask(old_umask);
		const char *paths[sizeof listeners / sizeof *listeners];
		int fds[sizeof listeners / sizeof *listeners];
		for (int i = 0; i < nlisteners; i++) {
			paths[i] = listeners[i]->path;
			fds[i] = listeners[i]->w.fd;
		}
		stopfd = supervise(uid, gid, &mask, paths, fds, nlisteners); /* returns only in a worker, unprivileged */
		for (int i = 0; i < nlisteners; i++)
			listeners[i]->w.fd = fds[i];
	}

	int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || epfd < 0) {
		perror("vivarium-agent: signalfd/epoll");
		return 1;
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	raise_fd_limit();
	struct watch sigw = {W_SIGNAL, sfd};
	uint32_t cur = 0;
	watch_set(&sigw, EPOLLIN, &cur);
	struct watch stopw = {W_STOP, stopfd};
	uint32_t stopcur = 0;
	if (stopfd >= 0)
		watch_set(&stopw, EPOLLIN, &stopcur);
	for (int i = 0; i < nlisteners; i++)
		if (listeners[i]->w.fd >= 0)
			watch_set(&listeners[i]->w, EPOLLIN, &listeners[i]->events);
	for (int i = 0; i < nserials; i++)
		conn_new(serial_fds[i], NULL, 1);

	struct epoll_event evs[32];
	for (;;) {
		int64_t now = now_ms(), next = exec_next_deadline(), enext = eval_next_deadline();
		if (enext >= 0 && (next < 0 || enext < next))
			next = enext;
		for (struct conn *c = conns; c; c = c->next)
			if (c->retry_at && (next < 0 || c->retry_at < next))
				next = c->retry_at;
		for (int i = 0; i < nlisteners; i++)
			if (listeners[i]->retry_at && (next < 0 || listeners[i]->retry_at < next))
				next = listeners[i]->retry_at;
		int timeout = next < 0 ? -1 : next <= now ? 0 : next - now > 60000 ? 60000 : (int)(next - now);
		int n = epoll_wait(epfd, evs, 32, timeout);
		for (int i = 0; i < n; i++) {
			struct watch *w = evs[i].data.ptr;
			switch (w->kind) {
			case W_LISTEN:
				on_listen((struct listener *)w);
				break;
			case W_CONN:
				if (!((struct conn *)w)->dead)
					on_conn((struct conn *)w, evs[i].events);
				break;
			case W_SIGNAL: {
				struct signalfd_siginfo si;
				while (read(sfd, &si, sizeof si) == sizeof si)
					if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
						terminating = 1;
					else if (si.ssi_signo == SIGUSR1 && stopfd < 0)
						release_listeners(1);
					else if (si.ssi_signo == SIGUSR2 && stopfd < 0)
						rebind_listeners();
				exec_on_signal();
				break;
			}
			case W_PIPE:
				exec_on_pipe(w, evs[i].events);
				break;
			case W_EVAL:
				eval_on_pipe(w, evs[i].events);
				break;
			case W_STOP: /* the supervisor closed its end (stop as on SIGTERM), or a message */
				if (!on_supervisor(stopfd))
					terminating = 1;
				break;
			}
		}
		if (terminating)
			shutdown_agent();
		now = now_ms();
		exec_on_time(now);
		eval_on_time(now);
		for (struct conn *c = conns; c; c = c->next)
			if (c->retry_at && c->retry_at <= now) {
				c->retry_at = 0;
				conn_watch(c);
			}
		for (int i = 0; i < nlisteners; i++)
			if (listeners[i]->retry_at && listeners[i]->retry_at <= now) {
				listeners[i]->retry_at = 0;
				watch_set(&listeners[i]->w, EPOLLIN, &listeners[i]->events);
			}
		conn_reap_dead();
		exec_collect();
	}
}
