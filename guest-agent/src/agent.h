/* Shared state of the agent: one thread, one epoll set, everything non-blocking. */
#ifndef VA_AGENT_H
#define VA_AGENT_H
#include <stdint.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>
#include "buf.h"
#include "json.h"

#define AGENT_VERSION "vivarium-agent 1"
#define MAX_LINE ((size_t)16 << 20)
#define MAX_CONNS 64
#define MAX_EXECS 256
#define MAX_DRAINING 128 /* finished execs whose pipes background processes still hold */
#define MAX_QUEUED ((size_t)32 << 20)
#define STREAM_HOLD ((size_t)1 << 20)
#define STOCK_CAP ((int64_t)16 << 20)
#define MAX_READ ((int64_t)1 << 20)

/* Every fd in the epoll set is described by a struct that starts with a watch. */
enum wkind { W_LISTEN, W_CONN, W_SIGNAL, W_PIPE, W_STOP, W_EVAL };
struct watch {
	int kind;
	int fd;
};

struct listener {
	struct watch w;
	uint32_t events;
	int64_t retry_at; /* out of fds: when to accept again */
	int nconns;
	char *path;
};

struct conn {
	struct watch w;
	struct listener *l; /* NULL for a serial port */
	int serial, dead, closing;
	uint32_t events; /* what epoll watches now; 0 when not registered */
	int64_t retry_at; /* serial: when to watch again after a hangup */
	struct buf in, out;
	struct conn *next;
};

/* One request being answered. */
enum { R_OK, R_ERR, R_DEFER, R_NONE };
struct call {
	struct conn *c;
	struct jdoc *doc;
	uint32_t args; /* the arguments object, or 0 */
	struct buf *out; /* the return value is written here */
	const char *eclass;
	char edesc[512];
	const char *id; /* the request's id as JSON, or NULL */
	size_t idlen;
	int delimit; /* guest-sync-delimited: 0xFF before the response */
};

/* Error helpers: set the class and description, return R_ERR. */
int fail(struct call *k, const char *eclass, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int fail_errno(struct call *k, int err, const char *what, const char *subject);

/* Argument access: returns 1 when present, 0 when absent (or null), -1 after setting an error. */
int args_only(struct call *k, const char *const *names);
int arg_str(struct call *k, const char *name, int required, const char **s, size_t *len);
int arg_int(struct call *k, const char *name, int required, int64_t *v);
int arg_bool(struct call *k, const char *name, int required, int *v);
uint32_t arg_node(struct call *k, const char *name);
/* Decodes a base64 string argument in place. */
int arg_b64(struct call *k, const char *name, int required, unsigned char **data, size_t *len);

int64_t now_ms(void);
extern int epfd;
void watch_set(struct watch *w, uint32_t events, uint32_t *current);

/* Responses on a connection. */
void conn_send(struct conn *c, const char *data, size_t n);
void send_return(struct conn *c, const char *id, size_t idlen, const struct buf *value);
void send_error(struct conn *c, const char *id, size_t idlen, const char *eclass, const char *desc);

/* supervisor.c: stays root and restarts the worker; returns only in a worker that runs as
 * uid:gid without privileges, with a socket that becomes readable when the supervisor asks it to
 * stop (EOF), to release its listeners (a message "R") or to take new ones (a message "L" with
 * one fd per listener). fds[i] is listener i's socket, -1 while released; a worker started
 * meanwhile finds them there. */
int supervise(uid_t uid, gid_t gid, const sigset_t *mask, const char *const *paths, int *fds, int npaths);

/* main.c: a bound, listening Unix socket at path (a stale socket there is replaced), or -1. */
/* Listens on PATH, a Unix socket's path or "vsock:PORT" (what --listen names, its "unix:" taken off). */
int listen_unix(const char *path);
/* Removes a Unix listener's socket file; a vsock listener has none. */
void unlink_listener(const char *path);

/* exec.c */
extern struct rlimit child_nofile;
void exec_on_signal(void);
void exec_on_pipe(struct watch *w, uint32_t events);
int64_t exec_next_deadline(void);
void exec_on_time(int64_t now);
void exec_conn_gone(struct conn *c);
void files_conn_gone(struct conn *c);
int exec_waiting_on(const struct conn *c);
void exec_kill_all(void);
void exec_collect(void);
/* Closes the pipes of the oldest finished exec that background processes still hold (their next
 * write gets EPIPE); 0 if there is none. */
int exec_reclaim(void);
int cmd_guest_exec(struct call *k);
int cmd_guest_exec_status(struct call *k);
int cmd_vivarium_exec(struct call *k);
int cmd_vivarium_exec_poll(struct call *k);
int cmd_vivarium_exec_kill(struct call *k);
int cmd_vivarium_exec_write(struct call *k);
int cmd_vivarium_exec_resize(struct call *k);
int cmd_vivarium_list(struct call *k);

/* list.c: the walk of vivarium-list in its child; argv is the mode, then the paths. Returns the exit status. */
int list_main(char **argv);

/* eval.c: the warm interpreter */
int cmd_vivarium_eval(struct call *k);
void eval_on_pipe(struct watch *w, uint32_t events);
void eval_reaped(pid_t pid, int status);
int64_t eval_next_deadline(void);
void eval_on_time(int64_t now);
void eval_conn_gone(struct conn *c);
int eval_waiting_on(const struct conn *c);
void eval_kill(void);
/* The interpreter's version ("3.11.2") once one has started, else NULL. */
const char *eval_version(void);

/* files.c */
int cmd_file_open(struct call *k);
int cmd_file_read(struct call *k);
int cmd_file_write(struct call *k);
int cmd_file_close(struct call *k);
int cmd_vivarium_file_write(struct call *k);
int cmd_vivarium_file_read(struct call *k);

/* system.c */
extern int serves_virtio_port;
int fs_frozen(void);
/* In a forked child before its exec: default signal dispositions, an empty mask (exec.c). */
void child_signals(void);
int cmd_fsfreeze_status(struct call *k);
int cmd_fsfreeze_freeze(struct call *k);
int cmd_fsfreeze_freeze_list(struct call *k);
int cmd_fsfreeze_thaw(struct call *k);
int cmd_get_time(struct call *k);
int cmd_set_time(struct call *k);
int cmd_shutdown(struct call *k);

/* launch.c: vivarium-agent --launch, the host side of a process sandbox's start, and --launcher,
 * which runs such launches for a daemon */
int launch_main(int argc, char **argv);
int launcher_main(void);
/* Becomes uid:gid for good, no capabilities and no way back (supervisor.c); what failed, or NULL. */
const char *become(uid_t uid, gid_t gid);

#endif
