/* The host side of a process sandbox's start (vivarium-agent --launch): what a shell, setsid,
 * cp and util-linux mount did, in the one process the start needs anyway. Mount's own loop set-up
 * reads every loop device's backing file to find one already backing the image (milliseconds of
 * CPU per sandbox, more with every sandbox running); here the kernel hands out a free device
 * (LOOP_CTL_GET_FREE) and LOOP_CONFIGURE attaches the image in one call.
 *
 * What it mounts goes into a mount namespace of the launch's own, which the sandbox's is copied
 * from, never into the host's: every bwrap copies its caller's mount table and reads it back once
 * per mount it makes, so two host mounts per live sandbox made each start slower than the last
 * (12.9 starts/s with 1,000 live sandboxes, against 58/s with a few). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
int launch_main(int argc, char **argv); /* declared in agent.h, whose R_OK unistd.h has too */
int launcher_main(void);

#ifndef MS_NOSYMFOLLOW
#define MS_NOSYMFOLLOW 256
#endif
/* <linux/loop.h>, which musl's headers lack; a stable ABI (LOOP_CONFIGURE since Linux 5.8) */
#define LOOP_CONFIGURE 0x4C0A
#define LOOP_CTL_GET_FREE 0x4C82
#define LO_FLAGS_AUTOCLEAR 4
#define LO_NAME_SIZE 64
struct loop_info64 {
	uint64_t lo_device, lo_inode, lo_rdevice, lo_offset, lo_sizelimit;
	uint32_t lo_number, lo_encrypt_type, lo_encrypt_key_size, lo_flags;
	uint8_t lo_file_name[LO_NAME_SIZE], lo_crypt_name[LO_NAME_SIZE], lo_encrypt_key[32];
	uint64_t lo_init[2];
};
struct loop_config {
	uint32_t fd, block_size;
	struct loop_info64 info;
	uint64_t reserved[8];
};

/* Another start may configure the free device first: ask again, a bounded number of times. */
#define LOOP_TRIES 64

static void die(const char *what, const char *path)
{
	fprintf(stderr, "vivarium-launch: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void write_pid(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0 || dprintf(fd, "%d\n", (int)getpid()) < 0)
		die("cannot write", path);
	close(fd);
}

/* Copies [from, to) of in to the same offsets of out: copy_file_range (which may share the blocks)
 * where the kernel can between these two files, else read and write. */
static void copy_range(int in, int out, off_t from, off_t to, const char *name)
{
	static char buf[1 << 16];
	int direct = 1;
	while (from < to) {
		size_t len = (size_t)(to - from);
		ssize_t n;
		if (direct) {
			off_t src = from, dst = from;
			n = copy_file_range(in, &src, out, &dst, len, 0);
			if (n < 0 && (errno == EXDEV || errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)) {
				direct = 0;
				continue;
			}
		} else {
			n = pread(in, buf, len < sizeof buf ? len : sizeof buf, from);
			if (n > 0 && pwrite(out, buf, (size_t)n, from) != n)
				n = -1;
		}
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			die("cannot copy", name);
		}
		from += n;
	}
}

/* A sparse copy: only the source's data extents are copied (copy_file_range, which may share the
 * blocks), holes stay holes. */
static void copy_sparse(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		die("cannot open", from);
	struct stat st;
	if (fstat(in, &st) < 0)
		die("cannot stat", from);
	/* a launch that failed after its copy leaves it: made anew (O_EXCL still refuses a link put there meanwhile) */
	if (unlink(to) < 0 && errno != ENOENT)
		die("cannot remove the earlier", to);
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
	if (out < 0)
		die("cannot create", to);
	off_t pos = 0;
	while (pos < st.st_size) {
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break;
		off_t hole = data < 0 ? -1 : lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			die("cannot find the data of", from);
		copy_range(in, out, data, hole, from);
		pos = hole;
	}
	if (ftruncate(out, st.st_size) < 0)
		die("cannot size", to);
	close(out);
	close(in);
}

/* Attaches image to a free loop device that frees itself once unused (autoclear), then mounts its
 * ext4 at dir; the device is then held by the mount alone. */
static void mount_image(const char *image, const char *dir)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		die("cannot open", "/dev/loop-control");
	int backing = open(image, O_RDWR | O_CLOEXEC);
	if (backing < 0)
		die("cannot open", image);
	struct loop_config config;
	memset(&config, 0, sizeof config);
	config.fd = (uint32_t)backing;
	config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	strncpy((char *)config.info.lo_file_name, image, LO_NAME_SIZE - 1);
	char device[32];
	int loop = -1;
	for (int tries = 0; loop < 0; tries++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			die("no free loop device for", image);
		snprintf(device, sizeof device, "/dev/loop%d", n);
		loop = open(device, O_RDWR | O_CLOEXEC);
		if (loop < 0)
			die("cannot open", device);
		if (ioctl(loop, LOOP_CONFIGURE, &config) < 0) {
			if (errno != EBUSY || tries + 1 >= LOOP_TRIES)
				die("cannot attach a loop device to", image);
			close(loop);
			loop = -1;
		}
	}
	if (mount(device, dir, "ext4", MS_NOSUID | MS_NODEV, "nodiscard") < 0)
		die("cannot mount the image at", dir);
	close(loop);
	close(backing);
	close(ctl);
}

/* A mount namespace for this launch, a slave of the host's: the host's later mounts still reach it
 * (as they reach the sandbox's), its own do not reach the host. */
static void own_mount_namespace(void)
{
	if (unshare(CLONE_NEWNS) < 0)
		die("cannot make a mount namespace", "for the launch");
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		die("cannot make the mounts of", "/ a slave");
}

/* The daemon's walk view of the workspace: a bind that follows no symlink. nosuid and nodev too, so
 * that bwrap, which binds it on into the sandbox with those, finds nothing to remount (a bind
 * remount would drop nosymfollow, which it does not know); the daemon checks the result. */
static void mount_view(const char *workdir, const char *view)
{
	if (mount(workdir, view, NULL, MS_BIND, NULL) < 0
	    || mount(NULL, view, NULL, MS_REMOUNT | MS_BIND | MS_NOSYMFOLLOW | MS_NOSUID | MS_NODEV, NULL) < 0)
		die("cannot mount the walk view at", view);
}

/* argv: [--detach] PIDFILE INFOFILE TEMPLATE IMAGE WORKDIR WALKVIEW PROCS... -- COMMAND...
 * (empty TEMPLATE, IMAGE or WALKVIEW: that step is skipped). */
int launch_main(int argc, char **argv)
{
	prctl(PR_SET_NAME, "vivarium-launch", 0, 0, 0);
	int i = 0;
	if (i < argc && !strcmp(argv[i], "--detach")) {
		/* a session of its own, reparented away from the caller, who gets its answer at once */
		pid_t pid = fork();
		if (pid < 0)
			die("cannot fork", "");
		if (pid > 0)
			_exit(0);
		setsid();
		i++;
	}
	if (argc - i < 8) {
		fprintf(stderr, "usage: vivarium-agent --launch [--detach] PIDFILE INFOFILE TEMPLATE IMAGE WORKDIR "
				"WALKVIEW PROCS... -- COMMAND...\n");
		return 2;
	}
	const char *pidfile = argv[i], *infofile = argv[i + 1], *template = argv[i + 2], *image = argv[i + 3],
		   *workdir = argv[i + 4], *view = argv[i + 5];
	i += 6;
	write_pid(pidfile);
	/* fd 3: where bwrap --info-fd 3 reports its init */
	int info = open(infofile, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (info < 0 || (info != 3 && (dup2(info, 3) < 0 || close(info) < 0)))
		die("cannot open", infofile);
	if (*template)
		copy_sparse(template, image);
	if (*image || *view)
		own_mount_namespace();
	if (*image)
		mount_image(image, workdir);
	if (*view)
		mount_view(workdir, view);
	for (; i < argc && strcmp(argv[i], "--"); i++)
		write_pid(argv[i]);
	if (i + 1 >= argc) {
		fprintf(stderr, "vivarium-launch: no command after --\n");
		return 2;
	}
	execvp(argv[i + 1], argv + i + 1);
	die("cannot run", argv[i + 1]);
	return 1;
}

/* The most strings one request may hold: a launch's argv is a few hundred. */
#define LAUNCHER_MAX_STRINGS 4096

/* In the child of the launcher, what the daemon's own spawn of a launch gave it: stdin from
 * /dev/null, stdout and stderr appended to log, / as its directory, PATH alone as its environment. */
static void launch_stdio(const char *log)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int out = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (null < 0 || out < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
		_exit(126);
	close(null);
	close(out);
	if (chdir("/") < 0 || clearenv() != 0 || setenv("PATH", "/usr/bin:/bin", 1) < 0)
		_exit(126);
}

/* vivarium-agent --launcher: runs the launches of a daemon that would otherwise spawn each one
 * itself (a JVM's spawn reads its whole table of descriptors, thousands with as many sandboxes,
 * then execs a helper that execs this binary). Reads requests on stdin, each a line with a count
 * N, then N strings each ended by a NUL: the log file, then the argv of a launch (this binary,
 * --launch, its arguments); runs it in a child as that argv would run, answers the child's exit
 * status on a line (128 + the signal that ended it), and exits at the end of its input (the
 * daemon's end closes the pipe). A launch with --detach forks again at once, so each child is
 * gone by the answer. */
int launcher_main(void)
{
	char *strings[LAUNCHER_MAX_STRINGS + 1];
	char count[16];
	for (;;) {
		if (!fgets(count, sizeof count, stdin))
			return feof(stdin) ? 0 : 2;
		char *end;
		errno = 0;
		unsigned long n = strtoul(count, &end, 10);
		if (count[0] < '0' || count[0] > '9' || errno || strcmp(end, "\n") || n < 3 || n > LAUNCHER_MAX_STRINGS) {
			fputs("vivarium-launcher: malformed request\n", stderr);
			return 2;
		}
		for (unsigned long i = 0; i < n; i++) {
			size_t cap = 0;
			strings[i] = NULL;
			/* each string ends in a NUL: without one the input ended in the middle of it */
			ssize_t len = getdelim(&strings[i], &cap, '\0', stdin);
			if (len <= 0 || strings[i][len - 1] != '\0') {
				fputs("vivarium-launcher: request cut short\n", stderr);
				return 2;
			}
		}
		strings[n] = NULL;
		int status = 2;
		if (strcmp(strings[2], "--launch")) {
			fprintf(stderr, "vivarium-launcher: not a launch: %s\n", strings[2]);
		} else {
			/* the child leaves through exit() on an error, which flushes what it inherited */
			fflush(NULL);
			pid_t pid = fork();
			if (pid == 0) {
				launch_stdio(strings[0]);
				_exit(launch_main((int)n - 3, strings + 3));
			}
			int waited;
			if (pid < 0 || waitpid(pid, &waited, 0) < 0)
				status = 127;
			else
				status = WIFEXITED(waited) ? WEXITSTATUS(waited) : 128 + WTERMSIG(waited);
		}
		for (unsigned long i = 0; i < n; i++)
			free(strings[i]);
		if (printf("%d\n", status) < 0 || fflush(stdout) != 0)
			return 1;
	}
}
