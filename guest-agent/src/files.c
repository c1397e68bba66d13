/* File commands: QGA's handle-based guest-file-* and the whole-file vivarium-file-*. */
#define _GNU_SOURCE
#include "agent.h"
#include "base64.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES 64

struct gfile {
	int64_t handle;
	int fd;
};
static struct gfile gfiles[MAX_FILES];
static int64_t next_gfile = 1000;

static struct gfile *gfile_get(struct call *k)
{
	int64_t h;
	if (arg_int(k, "handle", 1, &h) < 0)
		return NULL;
	for (int i = 0; i < MAX_FILES; i++)
		if (gfiles[i].handle == h && gfiles[i].fd > 0)
			return &gfiles[i];
	fail(k, "NotFound", "no open file with handle %lld", (long long)h);
	return NULL;
}

int cmd_file_open(struct call *k)
{
	static const char *const allowed[] = {"path", "mode", NULL};
	const char *path, *mode = "r";
	if (args_only(k, allowed) || arg_str(k, "path", 1, &path, NULL) < 0 || arg_str(k, "mode", 0, &mode, NULL) < 0)
		return R_ERR;
	/* fopen modes: r w a, optional '+', optional 'b' anywhere after the letter. */
	int flags, plus = 0, bad = 0;
	switch (mode[0]) {
	case 'r': flags = 0; break;
	case 'w': flags = O_CREAT | O_TRUNC; break;
	case 'a': flags = O_CREAT | O_APPEND; break;
	default: bad = 1; flags = 0;
	}
	for (const char *m = mode[0] ? mode + 1 : mode; *m && !bad; m++) {
		if (*m == '+' && !plus)
			plus = 1;
		else if (*m != 'b')
			bad = 1;
	}
	if (bad || strlen(mode) > 3)
		return fail(k, "InvalidParameter", "mode must be one of r, w, a with optional + and b, not '%.10s'", mode);
	flags |= plus ? O_RDWR : mode[0] == 'r' ? O_RDONLY : O_WRONLY;
	struct gfile *slot = NULL;
	for (int i = 0; i < MAX_FILES && !slot; i++)
		if (gfiles[i].fd <= 0)
			slot = &gfiles[i];
	if (!slot)
		return fail(k, "LimitExceeded", "at most %d files open at once", MAX_FILES);
	int fd = open(path, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666);
	if (fd < 0)
		return fail_errno(k, errno, "cannot open", path);
	slot->fd = fd;
	slot->handle = next_gfile++;
	jw_int(k->out, slot->handle);
	return R_OK;
}

int cmd_file_read(struct call *k)
{
	static const char *const allowed[] = {"handle", "count", NULL};
	int64_t count = 4096;
	struct gfile *f;
	if (args_only(k, allowed) || !(f = gfile_get(k)) || arg_int(k, "count", 0, &count) < 0)
		return R_ERR;
	if (count < 0 || count > MAX_READ)
		return fail(k, "InvalidParameter", "count must be between 0 and 1048576");
	char *data = xmalloc((size_t)count);
	ssize_t n = read(f->fd, data, (size_t)count);
	if (n < 0 && errno != EAGAIN) {
		int e = errno;
		free(data);
		return fail_errno(k, e, "read", "file");
	}
	int eof = n == 0 || (n > 0 && n < count);
	if (n < 0)
		n = 0;
	int first = 1;
	buf_putc(k->out, '{');
	jw_key(k->out, &first, "count");
	jw_int(k->out, n);
	jw_key(k->out, &first, "buf-b64");
	buf_putc(k->out, '"');
	b64_encode(k->out, data, (size_t)n);
	buf_putc(k->out, '"');
	jw_key(k->out, &first, "eof");
	jw_bool(k->out, eof);
	buf_putc(k->out, '}');
	free(data);
	return R_OK;
}

int cmd_file_write(struct call *k)
{
	static const char *const allowed[] = {"handle", "buf-b64", "count", NULL};
	unsigned char *data;
	size_t len;
	int64_t count = -1;
	struct gfile *f;
	if (args_only(k, allowed) || !(f = gfile_get(k)) || arg_b64(k, "buf-b64", 1, &data, &len) < 0 ||
	    arg_int(k, "count", 0, &count) < 0)
		return R_ERR;
	if (count < -1 || (count >= 0 && (uint64_t)count > len))
		return fail(k, "InvalidParameter", "count must be between 0 and the decoded length of buf-b64");
	if (count < 0)
		count = (int64_t)len;
	ssize_t n = write(f->fd, data, (size_t)count);
	if (n < 0 && errno != EAGAIN)
		return fail_errno(k, errno, "write", "file");
	buf_puts(k->out, "{\"count\":");
	jw_int(k->out, n < 0 ? 0 : n);
	buf_puts(k->out, ",\"eof\":false}");
	return R_OK;
}

int cmd_file_close(struct call *k)
{
	static const char *const allowed[] = {"handle", NULL};
	struct gfile *f;
	if (args_only(k, allowed) || !(f = gfile_get(k)))
		return R_ERR;
	close(f->fd);
	f->fd = 0;
	f->handle = 0;
	buf_puts(k->out, "{}");
	return R_OK;
}

/* ---- vivarium-file-write: temp file, fsync, rename ---- */

#define MAX_WRITES 64

struct wsession {
	int64_t handle;
	struct conn *c; /* the connection that started it: when it closes, the write is discarded */
	int dirfd, fd;
	char tmp[40];
	char *path;
	const char *base; /* inside path */
	int64_t bytes;
};
static struct wsession *writes[MAX_WRITES];
static int64_t next_write = 1;

static void wsession_end(struct wsession **slot, int keep_file)
{
	struct wsession *s = *slot;
	if (!keep_file)
		unlinkat(s->dirfd, s->tmp, 0);
	close(s->fd);
	close(s->dirfd);
	free(s->path);
	free(s);
	*slot = NULL;
}

/* A client that gave up half way (a deadline, a dropped connection) leaves no slot, fd or temp file. */
void files_conn_gone(struct conn *c)
{
	for (int i = 0; i < MAX_WRITES; i++)
		if (writes[i] && writes[i]->c == c)
			wsession_end(&writes[i], 0);
}

static int check_path(struct call *k, const char *path)
{
	size_t n = strlen(path);
	if (path[0] != '/' || n >= PATH_MAX)
		return fail(k, "InvalidParameter", "path must be absolute (and shorter than PATH_MAX)"), -1;
	return 0;
}

/* mode < 0: the mode of the file replaced, else 0644. */
static struct wsession **wsession_start(struct call *k, const char *path, int64_t mode)
{
	if (check_path(k, path))
		return NULL;
	const char *slash = strrchr(path, '/');
	const char *base = slash + 1;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		fail(k, "InvalidParameter", "path must name a file, not a directory: %s", path);
		return NULL;
	}
	struct wsession **slot = NULL;
	for (int i = 0; i < MAX_WRITES && !slot; i++)
		if (!writes[i])
			slot = &writes[i];
	if (!slot) {
		fail(k, "LimitExceeded", "at most %d unfinished file writes (finish them with last: true)", MAX_WRITES);
		return NULL;
	}
	char *dir = xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		fail_errno(k, errno, "cannot open the directory", dir);
		free(dir);
		return NULL;
	}
	free(dir);
	struct stat old;
	if (fstatat(dirfd, base, &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(old.st_mode)) {
		fail(k, "InvalidParameter", "path must name a file, not a directory: %s", path);
		close(dirfd);
		return NULL;
	}
	if (mode < 0)
		mode = fstatat(dirfd, base, &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode) ? old.st_mode & 07777 : 0644;
	struct wsession *s = xmalloc(sizeof *s);
	memset(s, 0, sizeof *s);
	s->c = k->c;
	s->dirfd = dirfd;
	s->path = xstrndup(path, strlen(path));
	s->base = s->path + (base - path);
	unsigned char rnd[8];
	if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd) {
		uint64_t v = (uint64_t)now_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)next_write;
		memcpy(rnd, &v, sizeof rnd);
	}
	snprintf(s->tmp, sizeof s->tmp, ".vivarium-tmp-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
		 rnd[5], rnd[6], rnd[7]);
	s->fd = openat(dirfd, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
	if (s->fd < 0 || fchmod(s->fd, (mode_t)mode) < 0) {
		fail_errno(k, errno, "cannot create a temporary file beside", path);
		if (s->fd >= 0)
			unlinkat(dirfd, s->tmp, 0), close(s->fd);
		close(dirfd);
		free(s->path);
		free(s);
		return NULL;
	}
	s->handle = next_write++;
	*slot = s;
	return slot;
}

int cmd_vivarium_file_write(struct call *k)
{
	static const char *const allowed[] = {"path", "data-b64", "handle", "last", "mode", NULL};
	const char *path = NULL;
	unsigned char *data;
	size_t len;
	int64_t handle = 0, mode = -1;
	int last = 1, has_handle, has_mode;
	if (args_only(k, allowed) || arg_str(k, "path", 0, &path, NULL) < 0 || arg_b64(k, "data-b64", 1, &data, &len) < 0 ||
	    (has_handle = arg_int(k, "handle", 0, &handle)) < 0 || arg_bool(k, "last", 0, &last) < 0 ||
	    (has_mode = arg_int(k, "mode", 0, &mode)) < 0)
		return R_ERR;
	if (has_mode && (mode < 0 || mode > 07777))
		return fail(k, "InvalidParameter", "mode must be between 0 and 4095 (07777)");
	struct wsession **slot = NULL;
	if (has_handle) {
		for (int i = 0; i < MAX_WRITES && !slot; i++)
			if (writes[i] && writes[i]->handle == handle)
				slot = &writes[i];
		if (!slot)
			return fail(k, "NotFound", "no unfinished file write with handle %lld", (long long)handle);
		if (path && strcmp(path, (*slot)->path))
			return fail(k, "InvalidParameter", "handle %lld writes %s, not %s", (long long)handle, (*slot)->path, path);
	} else {
		if (!path)
			return fail(k, "InvalidParameter", "argument 'path' is missing");
		if (!(slot = wsession_start(k, path, mode)))
			return R_ERR;
	}
	struct wsession *s = *slot;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(s->fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			fail_errno(k, e, "cannot write", s->path);
			wsession_end(slot, 0);
			return R_ERR;
		}
		off += (size_t)n;
	}
	s->bytes += (int64_t)len;
	int first = 1;
	buf_putc(k->out, '{');
	if (!last) {
		jw_key(k->out, &first, "handle");
		jw_int(k->out, s->handle);
	}
	jw_key(k->out, &first, "bytes");
	jw_int(k->out, s->bytes);
	buf_putc(k->out, '}');
	if (!last)
		return R_OK;
	if (fsync(s->fd) < 0 || renameat(s->dirfd, s->tmp, s->dirfd, s->base) < 0) {
		int e = errno;
		fail_errno(k, e, "cannot replace", s->path);
		wsession_end(slot, 0);
		return R_ERR;
	}
	fsync(s->dirfd);
	wsession_end(slot, 1);
	return R_OK;
}

int cmd_vivarium_file_read(struct call *k)
{
	static const char *const allowed[] = {"path", "offset", "count", NULL};
	const char *path;
	int64_t offset = 0, count = MAX_READ;
	if (args_only(k, allowed) || arg_str(k, "path", 1, &path, NULL) < 0 || arg_int(k, "offset", 0, &offset) < 0 ||
	    arg_int(k, "count", 0, &count) < 0 || check_path(k, path))
		return R_ERR;
	if (offset < 0)
		return fail(k, "InvalidParameter", "offset must be >= 0");
	if (count < 0 || count > MAX_READ)
		return fail(k, "InvalidParameter", "count must be between 0 and 1048576");
	/* Symlinks are followed: they resolve in the agent's own root with its user's rights, so they
	 * can only lead to what the guest may read anyway. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return fail_errno(k, errno, "cannot open", path);
	struct stat st = {0};
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(k, "InvalidParameter", "%s is %s", path, S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
	}
	char *data = xmalloc((size_t)count);
	ssize_t n;
	do
		n = pread(fd, data, (size_t)count, offset);
	while (n < 0 && errno == EINTR);
	int e = errno;
	close(fd);
	if (n < 0) {
		free(data);
		return fail_errno(k, e, "cannot read", path);
	}
	int first = 1;
	buf_putc(k->out, '{');
	jw_key(k->out, &first, "data-b64");
	buf_putc(k->out, '"');
	b64_encode(k->out, data, (size_t)n);
	buf_putc(k->out, '"');
	jw_key(k->out, &first, "eof");
	jw_bool(k->out, n < count || (st.st_size > 0 && offset + n >= st.st_size));
	jw_key(k->out, &first, "size");
	jw_int(k->out, st.st_size);
	buf_putc(k->out, '}');
	free(data);
	return R_OK;
}
