/* Whole-guest commands: filesystem freeze, clock, shutdown. */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* musl-gcc sees no kernel headers: the three ioctls we need, as in linux/fs.h and linux/rtc.h. */
struct rtc_time {
	int tm_sec, tm_min, tm_hour, tm_mday, tm_mon, tm_year, tm_wday, tm_yday, tm_isdst;
};
#define FIFREEZE _IOWR('X', 119, int)
#define FITHAW _IOWR('X', 120, int)
#define RTC_RD_TIME _IOR('p', 0x09, struct rtc_time)

int serves_virtio_port;

#define MAX_FROZEN 64
static char *frozen[MAX_FROZEN];
static int nfrozen;

int fs_frozen(void)
{
	return nfrozen > 0;
}

int cmd_fsfreeze_status(struct call *k)
{
	static const char *const allowed[] = {NULL};
	if (args_only(k, allowed))
		return R_ERR;
	buf_puts(k->out, nfrozen ? "\"frozen\"" : "\"thawed\"");
	return R_OK;
}

/* Undoes the octal escapes of /proc/self/mounts (\040 for a space, ...). */
static void unescape(char *s)
{
	char *w = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = 0;
}

static int thaw_all(void)
{
	int n = 0;
	for (int i = nfrozen - 1; i >= 0; i--) {
		int fd = open(frozen[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			if (ioctl(fd, FITHAW) == 0)
				n++;
			close(fd);
		}
		free(frozen[i]);
	}
	nfrozen = 0;
	return n;
}

/*
 * Whether PATH (already resolved: no link, no "..") is where a filesystem is mounted. FIFREEZE on
 * any directory freezes the filesystem holding it, so a listed path that is not a mountpoint
 * would freeze its parent's filesystem, the root's if nothing else: such a path is refused.
 */
static int is_mountpoint(const char *path)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	if (!f)
		return 0;
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		char *dev = strtok(line, " "), *mnt = strtok(NULL, " ");
		if (!dev || !mnt)
			continue;
		unescape(mnt);
		found = !strcmp(mnt, path);
	}
	fclose(f);
	return found;
}

/* Freezes one mountpoint; returns 1 frozen, 0 skipped (unsupported), -1 error. */
static int freeze_one(struct call *k, const char *mnt)
{
	if (nfrozen == MAX_FROZEN)
		return fail(k, "LimitExceeded", "at most %d filesystems can be frozen", MAX_FROZEN), -1;
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fail_errno(k, errno, "cannot open mountpoint", mnt), -1;
	int r = ioctl(fd, FIFREEZE);
	int e = errno;
	close(fd);
	if (r == 0) {
		frozen[nfrozen++] = xstrndup(mnt, strlen(mnt));
		return 1;
	}
	if (e == EOPNOTSUPP)
		return 0;
	if (e == EPERM)
		return fail(k, "PermissionDenied", "freezing %s needs CAP_SYS_ADMIN (run the agent as root)", mnt), -1;
	if (e == EBUSY)
		return fail(k, "GenericError", "%s is already frozen (by someone else)", mnt), -1;
	return fail_errno(k, e, "cannot freeze", mnt), -1;
}

static int freeze(struct call *k, uint32_t list)
{
	if (nfrozen)
		return fail(k, "GenericError", "filesystems are already frozen");
	int count = 0;
	if (list) {
		for (uint32_t c = k->doc->n[list].child; c; c = k->doc->n[c].next) {
			if (k->doc->n[c].type != J_STR)
				return fail(k, "InvalidParameter", "mountpoints must be an array of strings");
		}
		for (uint32_t c = k->doc->n[list].child; c; c = k->doc->n[c].next) {
			char *real = realpath(k->doc->n[c].s, NULL);
			if (!real) {
				fail_errno(k, errno, "cannot resolve mountpoint", k->doc->n[c].s);
				thaw_all();
				return R_ERR;
			}
			int r = is_mountpoint(real)
				? freeze_one(k, real)
				: (fail(k, "InvalidParameter", "%s is not a mountpoint (only mountpoints are frozen, never the "
					"filesystem a path lies on)", k->doc->n[c].s), -1);
			free(real);
			if (r < 0) {
				thaw_all();
				return R_ERR;
			}
			count += r;
		}
	} else {
		FILE *f = fopen("/proc/self/mounts", "re");
		if (!f)
			return fail_errno(k, errno, "cannot read", "/proc/self/mounts");
		char line[4096];
		while (fgets(line, sizeof line, f)) {
			char *dev = strtok(line, " "), *mnt = strtok(NULL, " "), *type = strtok(NULL, " "), *opts = strtok(NULL, " ");
			if (!dev || !mnt || !type || !opts)
				continue;
			unescape(mnt);
			/* Writable and backed by a device (virtual filesystems have major 0; btrfs too). */
			if (!strncmp(opts, "ro", 2) && (opts[2] == ',' || opts[2] == 0))
				continue;
			struct stat st;
			if (stat(mnt, &st) < 0 || (major(st.st_dev) == 0 && strcmp(type, "btrfs")))
				continue;
			int dup = 0;
			for (int i = 0; i < nfrozen; i++)
				dup |= !strcmp(frozen[i], mnt);
			if (dup)
				continue;
			int r = freeze_one(k, mnt);
			if (r < 0) {
				fclose(f);
				thaw_all();
				return R_ERR;
			}
			count += r;
		}
		fclose(f);
	}
	jw_int(k->out, count);
	return R_OK;
}

int cmd_fsfreeze_freeze(struct call *k)
{
	static const char *const allowed[] = {NULL};
	if (args_only(k, allowed))
		return R_ERR;
	return freeze(k, 0);
}

int cmd_fsfreeze_freeze_list(struct call *k)
{
	static const char *const allowed[] = {"mountpoints", NULL};
	if (args_only(k, allowed))
		return R_ERR;
	uint32_t list = arg_node(k, "mountpoints");
	if (list && k->doc->n[list].type != J_ARR)
		return fail(k, "InvalidParameter", "mountpoints must be an array of strings");
	return freeze(k, list);
}

int cmd_fsfreeze_thaw(struct call *k)
{
	static const char *const allowed[] = {NULL};
	if (args_only(k, allowed))
		return R_ERR;
	jw_int(k->out, thaw_all());
	return R_OK;
}

int cmd_get_time(struct call *k)
{
	static const char *const allowed[] = {NULL};
	struct timespec ts;
	if (args_only(k, allowed))
		return R_ERR;
	clock_gettime(CLOCK_REALTIME, &ts);
	jw_int(k->out, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
	return R_OK;
}

int cmd_set_time(struct call *k)
{
	static const char *const allowed[] = {"time", NULL};
	int64_t ns;
	int has;
	if (args_only(k, allowed) || (has = arg_int(k, "time", 0, &ns)) < 0)
		return R_ERR;
	struct timespec ts;
	if (has) {
		if (ns < 0)
			return fail(k, "InvalidParameter", "time must be >= 0 (ns since the epoch)");
		ts.tv_sec = ns / 1000000000;
		ts.tv_nsec = ns % 1000000000;
	} else {
		/* Without a time, as qemu-ga's `hwclock -s`: take it from the RTC (kept in UTC). */
		struct rtc_time rt;
		int fd = open("/dev/rtc0", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fd = open("/dev/rtc", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail_errno(k, errno, "cannot open", "/dev/rtc0");
		int r = ioctl(fd, RTC_RD_TIME, &rt);
		int e = errno;
		close(fd);
		if (r < 0)
			return fail_errno(k, e, "cannot read", "the RTC");
		struct tm tm = {.tm_sec = rt.tm_sec, .tm_min = rt.tm_min, .tm_hour = rt.tm_hour, .tm_mday = rt.tm_mday,
				.tm_mon = rt.tm_mon, .tm_year = rt.tm_year};
		ts.tv_sec = timegm(&tm);
		ts.tv_nsec = 0;
	}
	if (clock_settime(CLOCK_REALTIME, &ts) < 0)
		return fail_errno(k, errno, "cannot set", "the clock");
	buf_puts(k->out, "{}");
	return R_OK;
}

int cmd_shutdown(struct call *k)
{
	static const char *const allowed[] = {"mode", NULL};
	const char *mode = "powerdown";
	if (args_only(k, allowed) || arg_str(k, "mode", 0, &mode, NULL) < 0)
		return R_ERR;
	int how;
	if (!strcmp(mode, "powerdown"))
		how = RB_POWER_OFF;
	else if (!strcmp(mode, "halt"))
		how = RB_HALT_SYSTEM;
	else if (!strcmp(mode, "reboot"))
		how = RB_AUTOBOOT;
	else
		return fail(k, "InvalidParameter", "mode must be powerdown, halt or reboot");
	/* reboot(2) skips any init system, so only the guest's own init (PID 1) or a root agent
	 * on a virtio port (the agent of a VM, never a process on a host) may do it. */
	if (getpid() != 1 && !(geteuid() == 0 && serves_virtio_port))
		return fail(k, "GenericError", "guest-shutdown works only when the agent is PID 1 or runs as root on a virtio-serial port in a VM");
	exec_kill_all();
	sync();
	if (reboot(how) < 0)
		return fail_errno(k, errno, "reboot", mode);
	return R_NONE;
}
