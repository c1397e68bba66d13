/* vivarium-boot: the guest's set-up before its agent starts, in one process. The image's /init
 * (busybox sh) used to do it with about twenty commands, and under TCG every fork + exec of
 * busybox costs about 10 ms of guest time: most of the boot's overhead over the bare kernel. Here
 * the same steps are system calls. See image/README.md ("What the guest does").
 *
 *   vivarium-boot setup         devtmpfs on /dev, the console on fds 0-2, proc, sysfs, devpts,
 *                               /dev/shm, /tmp, /run, /dev/fd, the modules of
 *                               /etc/vivarium/modules in order, /dev/vda (waited for up to 2 s)
 *                               at /work (ext4, noatime), hostname vivarium, lo up
 *   vivarium-boot modules FILE  only the modules of FILE (one name per line, /lib/modules/NAME.ko)
 *   vivarium-boot image-root SERIAL [UID:GID]
 *                               a template's VM (docs/templates.md), run by PID 1 in its place:
 *                               the read-only ext4 disk whose serial is SERIAL mounted, /work given
 *                               to UID:GID, busybox with its applets, the agent and /init copied
 *                               to /run/vivarium (the image's root may have no shell and no agent),
 *                               the late modules loaded, /dev /proc /sys /run /tmp /work moved into
 *                               the image's root, the initramfs freed, the root made / and
 *                               "/run/vivarium/bin/sh /run/vivarium/init image-root" executed. A
 *                               guest that cannot start on the root it was given powers off: it
 *                               must not run on another one
 *   vivarium-boot reseed        the bytes on stdin (at most 512; the host's randomness, given to a
 *                               VM restored from a snapshot) added to the kernel's input pool and
 *                               credited at 4 bits a byte (RNDADDENTROPY: the host sends hex), then
 *                               the kernel's generator reseeded from it at once (RNDRESEEDCRNG), so
 *                               that children of one snapshot never go on from the same state
 *
 * Every problem is one line "vivarium: ..." on stderr (the console), never a stop: the caller is
 * PID 1's script, which starts the agent whatever happened. Exit status 0 when every step worked,
 * 1 otherwise. With vivarium_boot_trace=1 on the kernel command line (the kernel hands it to /init
 * as an environment variable) every step's end is printed as "vivarium-boot: +MS STEP" (ms of
 * CLOCK_MONOTONIC since this program started), for measuring the boot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <dirent.h>
#include <ftw.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int failed;
static int tracing;
static struct timespec started;

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("vivarium: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	failed = 1;
}

static void trace(const char *step, const char *what)
{
	struct timespec now;
	if (!tracing)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	fprintf(stderr, "vivarium-boot: +%.1f %s%s\n",
		(double)(now.tv_sec - started.tv_sec) * 1e3 + (double)(now.tv_nsec - started.tv_nsec) / 1e6, step, what);
}

static void mount_fs(const char *type, const char *target, unsigned long flags, const char *data)
{
	if (mount(type, target, type, flags, data) < 0 && errno != EBUSY)
		say("cannot mount %s: %s", target, strerror(errno));
}

static void load_modules(const char *list)
{
	char name[256], path[300];
	FILE *f = fopen(list, "re");
	if (!f) {
		say("cannot read the module list %s: %s", list, strerror(errno));
		return;
	}
	while (fgets(name, sizeof name, f)) {
		name[strcspn(name, "\n")] = 0;
		if (!name[0])
			continue;
		snprintf(path, sizeof path, "/lib/modules/%s.ko", name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST))
			say("module %s will not load: %s", name, strerror(errno));
		if (fd >= 0)
			close(fd);
		trace("module ", name);
	}
	fclose(f);
}

/* PATH exists within about 2 s (a device node devtmpfs creates while a driver probes). */
static int appears(const char *path)
{
	struct timespec pause = {0, 2 * 1000 * 1000};
	for (int i = 0; i < 1000; i++) {
		if (access(path, F_OK) == 0)
			return 1;
		nanosleep(&pause, NULL);
	}
	return 0;
}

static void loopback_up(void)
{
	struct ifreq ifr = {0};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	strcpy(ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ||
	    (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) < 0))
		say("cannot bring lo up: %s", strerror(errno));
	if (s >= 0)
		close(s);
}

static void setup(void)
{
	mount_fs("devtmpfs", "/dev", MS_NOSUID, "mode=0755");
	int console = open("/dev/console", O_RDWR | O_NOCTTY);
	if (console >= 0) {
		for (int fd = 0; fd <= 2; fd++)
			dup2(console, fd);
		if (console > 2)
			close(console);
		/* end the firmware's last line (escape sequences, no newline) so that ours start on their own */
		fputc('\n', stderr);
	}
	mount_fs("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount_fs("sysfs", "/sys", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mkdir("/dev/pts", 0755);
	mkdir("/dev/shm", 0755);
	mount_fs("devpts", "/dev/pts", 0, "gid=5,mode=0620,ptmxmode=0666");
	mount_fs("tmpfs", "/dev/shm", MS_NOSUID | MS_NODEV, "mode=1777");
	mount_fs("tmpfs", "/tmp", MS_NOSUID | MS_NODEV, "mode=1777");
	mount_fs("tmpfs", "/run", MS_NOSUID | MS_NODEV, "mode=0755");
	if (symlink("/proc/self/fd", "/dev/fd") < 0 && errno != EEXIST)
		say("cannot link /dev/fd: %s", strerror(errno));
	trace("mounts", "");

	load_modules("/etc/vivarium/modules");

	if (!appears("/dev/vda"))
		say("no disk /dev/vda (the workspace is the first virtio-blk disk); /work is not mounted");
	else if (mount("/dev/vda", "/work", "ext4", MS_NOATIME, NULL) < 0)
		say("disk /dev/vda will not mount at /work (ext4): %s", strerror(errno));
	trace("/work", "");

	if (sethostname("vivarium", 8) < 0)
		say("cannot set the hostname: %s", strerror(errno));
	loopback_up();
	trace("hostname, lo", "");
}

#define NEW_ROOT "/image-root"
#define TOOLS "/run/vivarium/bin"

/* Says why, then powers the guest off (PID 1 here: the VM stops, and the host reports the console's lines). */
__attribute__((format(printf, 1, 2), noreturn)) static void stop_boot(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("vivarium: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("; powering off\n", stderr);
	va_end(ap);
	sync();
	reboot(RB_POWER_OFF);
	_exit(1);
}

/* The node of the virtio disk whose serial is SERIAL into dev, waited for up to about 2 s; 0 if none. */
static int disk_with_serial(const char *serial, char *dev, size_t size)
{
	struct timespec pause = {0, 2 * 1000 * 1000};
	for (int i = 0; i < 1000; i++) {
		DIR *d = opendir("/sys/block");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char path[300], value[64] = {0};
			if (strncmp(e->d_name, "vd", 2))
				continue;
			snprintf(path, sizeof path, "/sys/block/%s/serial", e->d_name);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			ssize_t n = fd < 0 ? -1 : read(fd, value, sizeof value - 1);
			if (fd >= 0)
				close(fd);
			if (n > 0 && value[n - 1] == '\n')
				value[n - 1] = 0;
			snprintf(dev, size, "/dev/%s", e->d_name);
			if (n > 0 && !strcmp(value, serial) && access(dev, F_OK) == 0) {
				closedir(d);
				return 1;
			}
		}
		if (d)
			closedir(d);
		nanosleep(&pause, NULL);
	}
	return 0;
}

static void copy_file(const char *from, const char *to)
{
	struct stat st;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (in < 0 || out < 0 || fstat(in, &st) < 0)
		stop_boot("cannot copy %s to %s: %s", from, to, strerror(errno));
	for (off_t at = 0; at < st.st_size;) {
		ssize_t n = sendfile(out, in, &at, (size_t)(st.st_size - at));
		if (n <= 0)
			stop_boot("cannot copy %s to %s: %s", from, to, n < 0 ? strerror(errno) : "short");
	}
	close(in);
	close(out);
}

/* A link in TOOLS for every busybox applet linked in DIR (build-image.sh links them to /bin/busybox). */
static void link_applets(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[512], target[64], link[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		ssize_t n = readlink(path, target, sizeof target - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		snprintf(link, sizeof link, TOOLS "/%s", e->d_name);
		if (!strcmp(target, "/bin/busybox") && symlink("busybox", link) < 0 && errno != EEXIST)
			stop_boot("cannot link %s: %s", link, strerror(errno));
	}
	if (d)
		closedir(d);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type;
	if (ftw->level > 0 && remove(path) < 0)
		say("cannot free %s of the initramfs: %s", path, strerror(errno));
	return 0;
}

/* See the header. Never returns. */
static void image_root(const char *serial, const char *owner)
{
	char dev[300];
	if (!disk_with_serial(serial, dev, sizeof dev))
		stop_boot("no disk with serial %s, which holds the image's root", serial);
	mkdir(NEW_ROOT, 0755);
	if (mount(dev, NEW_ROOT, "ext4", MS_RDONLY | MS_NODEV | MS_NOATIME, NULL) < 0)
		stop_boot("the image's root on %s will not mount: %s", dev, strerror(errno));
	trace("image root mounted", "");
	unsigned uid, gid;
	if (owner && owner[0] && (sscanf(owner, "%u:%u", &uid, &gid) != 2 || chown("/work", uid, gid) < 0))
		stop_boot("cannot give /work to %s: %s", owner, strerror(errno));
	mkdir("/run/vivarium", 0755);
	if (mkdir(TOOLS, 0755) < 0 && errno != EEXIST)
		stop_boot("cannot make %s: %s", TOOLS, strerror(errno));
	copy_file("/bin/busybox", TOOLS "/busybox");
	copy_file("/sbin/vivarium-agent", TOOLS "/vivarium-agent");
	copy_file("/sbin/vivarium-boot", TOOLS "/vivarium-boot"); /* a fork child's reseed */
	copy_file("/init", "/run/vivarium/init");
	const char *dirs[] = {"/bin", "/sbin", "/usr/bin", "/usr/sbin"};
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
		link_applets(dirs[i]);
	trace("tools copied", "");
	load_modules("/etc/vivarium/modules-late");
	const char *moved[] = {"/dev", "/proc", "/sys", "/run", "/tmp", "/work"};
	for (size_t i = 0; i < sizeof moved / sizeof *moved; i++) {
		char to[64];
		snprintf(to, sizeof to, NEW_ROOT "%s", moved[i]);
		if (mount(moved[i], to, NULL, MS_MOVE, NULL) < 0)
			stop_boot("cannot move %s into the image's root: %s", moved[i], strerror(errno));
	}
	/* as switch_root does: the initramfs's files freed (FTW_MOUNT: not the image's root mounted in it) */
	nftw("/", remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	if (chdir(NEW_ROOT) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 || chdir("/work") < 0)
		stop_boot("cannot make the image's root /: %s", strerror(errno));
	trace("switched", "");
	execl(TOOLS "/sh", "sh", "/run/vivarium/init", "image-root", (char *)NULL);
	stop_boot("cannot start %s: %s", TOOLS "/sh", strerror(errno));
}

/* From <linux/random.h>, which musl's headers lack. */
#define RNDADDENTROPY _IOW('R', 0x03, int[2])
#define RNDRESEEDCRNG _IO('R', 0x07)

/* See the header: RNDADDENTROPY of stdin, then RNDRESEEDCRNG. */
static void reseed(void)
{
	struct {
		int entropy_count;
		int buf_size;
		unsigned char buf[512];
	} pool;
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(pool.buf) && (r = read(0, pool.buf + n, sizeof(pool.buf) - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			say("cannot read the seed: %s", strerror(errno));
			return;
		}
		n += (size_t)r;
	}
	if (n < 32) {
		say("a seed of %zu bytes is too short (32 at least)", n);
		return;
	}
	pool.buf_size = (int)n;
	pool.entropy_count = (int)n * 4;
	int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		say("cannot open /dev/urandom: %s", strerror(errno));
		return;
	}
	if (ioctl(fd, RNDADDENTROPY, &pool) < 0)
		say("RNDADDENTROPY: %s", strerror(errno));
	else if (ioctl(fd, RNDRESEEDCRNG) < 0)
		say("RNDRESEEDCRNG: %s", strerror(errno));
	else
		puts("reseeded");
	close(fd);
}

int main(int argc, char **argv)
{
	clock_gettime(CLOCK_MONOTONIC, &started);
	const char *t = getenv("vivarium_boot_trace");
	tracing = t && !strcmp(t, "1");
	if (argc == 2 && !strcmp(argv[1], "setup"))
		setup();
	else if (argc == 3 && !strcmp(argv[1], "modules"))
		load_modules(argv[2]);
	else if (argc == 2 && !strcmp(argv[1], "reseed"))
		reseed();
	else if ((argc == 3 || argc == 4) && !strcmp(argv[1], "image-root"))
		image_root(argv[2], argc == 4 ? argv[3] : NULL);
	else {
		fputs("usage: vivarium-boot setup | vivarium-boot modules FILE | vivarium-boot reseed"
		      " | vivarium-boot image-root SERIAL [UID:GID]\n", stderr);
		return 2;
	}
	return failed;
}
