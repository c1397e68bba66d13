/*
 * bin/vivarium-cli HOME WORD...: runs a command line of the distribution at HOME (sandbox, snapshot,
 * vm, volume, template, node, plugins, features) on its command-line server, a JVM kept warm for this
 * user, this build of the distribution and this JVM setting (io.vivarium.launcher.CliServer; the
 * protocol is described in CliProtocol.java), prints what it prints and exits with its exit code.
 * bin/vivarium calls it; it is linked statically, so that it runs wherever the distribution is copied.
 *
 * It starts the server when none answers at the socket, and runs HOME/bin/vivarium with
 * VIVARIUM_CLI_SERVER=off (a JVM for this command alone) for `sandbox shell` (it needs this process's
 * terminal), or when the server cannot be reached, started, or trusted, saying why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *home;
static char **words;
static int nwords;

/* This command in a JVM of its own; why (or NULL when that is simply the way for it) goes to stderr. */
static void direct(const char *why) {
    char path[PATH_MAX + 32];
    if (why != NULL) {
        fprintf(stderr, "vivarium: %s; running the command in a JVM of its own\n", why);
    }
    snprintf(path, sizeof path, "%s/bin/vivarium", home);
    setenv("VIVARIUM_CLI_SERVER", "off", 1);
    signal(SIGPIPE, SIG_DFL);
    char **argv = calloc((size_t) nwords + 2, sizeof *argv);
    if (argv == NULL) {
        exit(1);
    }
    argv[0] = path;
    memcpy(argv + 1, words, (size_t) nwords * sizeof *argv);
    execv(path, argv);
    fprintf(stderr, "vivarium: cannot run %s: %s\n", path, strerror(errno));
    exit(1);
}

/* Whether dir is this user's: a directory (not a link) owned by the effective user that no one else may
 * write to, nor, when private, enter. Nobody else can then rename or replace what is in it. */
static int owned(const char *dir, int private) {
    struct stat st;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & (private ? 077 : 022)) == 0;
}

/* dir, made (mode 0700) if missing, if it is this user's. */
static int own_dir(const char *dir, int private) {
    return (mkdir(dir, 0700) == 0 || errno == EEXIST) && owned(dir, private);
}

/* A directory only this user may enter, on a path only this user may change: $XDG_RUNTIME_DIR/vivarium,
 * else ~/.cache/vivarium/cli. */
static int socket_dir(char *dir, size_t size) {
    const char *run = getenv("XDG_RUNTIME_DIR");
    const char *user_home = getenv("HOME");
    if (run != NULL && run[0] == '/' && owned(run, 0)) {
        int n = snprintf(dir, size, "%s/vivarium", run);
        if (n > 0 && (size_t) n < size && own_dir(dir, 1)) {
            return 0;
        }
    }
    if (user_home == NULL || user_home[0] != '/' || !owned(user_home, 0)) {
        return -1;
    }
    const char *parts[] = {"/.cache", "/.cache/vivarium", "/.cache/vivarium/cli"};
    for (int i = 0; i < 3; i++) {
        int n = snprintf(dir, size, "%s%s", user_home, parts[i]);
        if (n < 0 || (size_t) n >= size || !own_dir(dir, i == 2)) {
            return -1;
        }
    }
    return 0;
}

static uint64_t fnv1a(uint64_t hash, const char *s) {
    for (const char *c = s == NULL ? "" : s; *c != '\0'; c++) {
        hash = (hash ^ (unsigned char) *c) * 1099511628211ULL;
    }
    return (hash ^ 0xff) * 1099511628211ULL;
}

/* The server's socket, one per distribution, JVM setting and build: a rebuilt launcher jar, another
 * JAVA_HOME or other VIVARIUM_JAVA_OPTS is another server. */
static int socket_path(char *path, size_t size) {
    char dir[PATH_MAX];
    char jar[PATH_MAX + 32];
    struct stat st;
    uint64_t hash = fnv1a(fnv1a(fnv1a(1469598103934665603ULL, home), getenv("JAVA_HOME")), getenv("VIVARIUM_JAVA_OPTS"));
    snprintf(jar, sizeof jar, "%s/lib/vivarium-launcher.jar", home);
    if (stat(jar, &st) != 0) {
        return -1;
    }
    if (socket_dir(dir, sizeof dir) != 0) {
        direct("no private directory for the command-line server ($XDG_RUNTIME_DIR/vivarium or ~/.cache/vivarium/cli:"
               " yours, mode 0700, on a path only you may change)");
    }
    uint64_t build = ((uint64_t) st.st_mtim.tv_sec * 1000000000ULL + (uint64_t) st.st_mtim.tv_nsec) ^ (uint64_t) st.st_ino;
    int n = snprintf(path, size, "%s/cli-%016llx-%llx.sock", dir, (unsigned long long) hash, (unsigned long long) build);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

/* A connection to the server at path: -1 if nothing answers there; exits to a JVM of its own if
 * another user's process does. */
static int connect_to(const char *path) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    if (connect(fd, (struct sockaddr *) &addr, sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    struct ucred peer;
    socklen_t len = sizeof peer;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != geteuid()) {
        close(fd);
        direct("the command-line server's socket is answered by another user");
    }
    return fd;
}

/* Starts the server, detached, its output in SOCKET.log; waits until it answers (it may find another one did). */
static int start_server(const char *sock) {
    char vivarium[PATH_MAX + 32];
    char log[PATH_MAX + 8];
    snprintf(vivarium, sizeof vivarium, "%s/bin/vivarium", home);
    snprintf(log, sizeof log, "%s.log", sock);
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (in < 0 || out < 0 || setsid() < 0 || chdir("/") != 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) {
            _exit(127);
        }
        /* nothing of the caller's stays open in a process that outlives it (a pipe a script waits on, a lock) */
#ifdef SYS_close_range
        if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
        {
            for (long fd = 3, max = sysconf(_SC_OPEN_MAX); fd < max && fd < 65536; fd++) {
                close((int) fd);
            }
        }
        signal(SIGPIPE, SIG_DFL);
        execl(vivarium, "vivarium", "cli-server", sock, (char *) NULL);
        _exit(127);
    }
    struct timespec tick = {0, 5 * 1000 * 1000};
    for (int i = 0; i < 12000; i++) { /* a minute: its first start records a class-data archive */
        nanosleep(&tick, NULL);
        int fd = connect_to(sock);
        if (fd >= 0) {
            return fd;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            return connect_to(sock);
        }
    }
    return -1;
}

/* Reads (or writes) all of buf, going on after a signal; -1 at the end of the stream or on an error. */
static int transfer(int fd, unsigned char *buf, size_t len, int writing) {
    while (len > 0) {
        ssize_t n = writing ? write(fd, buf, len) : read(fd, buf, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        buf += n;
        len -= (size_t) n;
    }
    return 0;
}

/* Appends s and its NUL to the request, growing it; exits on no memory. */
static void put(char **req, size_t *len, size_t *cap, const char *s) {
    size_t n = strlen(s) + 1;
    while (*len + n > *cap) {
        *cap = *cap * 2 + n;
        *req = realloc(*req, *cap);
        if (*req == NULL) {
            exit(1);
        }
    }
    memcpy(*req + *len, s, n);
    *len += n;
}

static int send_request(int fd) {
    char cwd[PATH_MAX];
    char count[16];
    char mask[8];
    size_t len = 4;
    size_t cap = 4096;
    char *req = malloc(cap);
    int entries = 0;
    if (req == NULL || getcwd(cwd, sizeof cwd) == NULL) {
        return -1;
    }
    mode_t m = umask(0);
    umask(m);
    snprintf(mask, sizeof mask, "%03o", (unsigned) m & 0777);
    for (char **e = environ; *e != NULL; e++) {
        entries += strncmp(*e, "VIVARIUM_", 9) == 0;
    }
    snprintf(count, sizeof count, "%d", entries);
    put(&req, &len, &cap, "1");
    put(&req, &len, &cap, cwd);
    put(&req, &len, &cap, isatty(2) ? "1" : "0");
    put(&req, &len, &cap, mask);
    put(&req, &len, &cap, count);
    for (char **e = environ; *e != NULL; e++) {
        if (strncmp(*e, "VIVARIUM_", 9) == 0) {
            put(&req, &len, &cap, *e);
        }
    }
    for (int i = 0; i < nwords; i++) {
        put(&req, &len, &cap, words[i]);
    }
    uint32_t body = (uint32_t) (len - 4);
    req[0] = (char) (body >> 24);
    req[1] = (char) (body >> 16);
    req[2] = (char) (body >> 8);
    req[3] = (char) body;
    int rc = transfer(fd, (unsigned char *) req, len, 1);
    free(req);
    return rc;
}

/* Copies the server's frames to stdout and stderr; returns the exit code, -1 if the connection ended
 * first, -2 if it ended before the server took the command (which then never ran). */
static int relay(int fd) {
    static unsigned char chunk[65536];
    int taken = 0;
    for (;;) {
        unsigned char header[5];
        if (transfer(fd, header, sizeof header, 0) != 0) {
            return taken ? -1 : -2;
        }
        uint32_t len = (uint32_t) header[1] << 24 | (uint32_t) header[2] << 16 | (uint32_t) header[3] << 8 | header[4];
        if (header[0] == 'a' && len == 0) {
            taken = 1;
            continue;
        }
        if (header[0] == 'x') {
            unsigned char code[4];
            if (len != 4 || transfer(fd, code, 4, 0) != 0) {
                return -1;
            }
            return (int) ((uint32_t) code[0] << 24 | (uint32_t) code[1] << 16 | (uint32_t) code[2] << 8 | code[3]) & 0xff;
        }
        int out = header[0] == 'o' ? 1 : header[0] == 'e' ? 2 : -1;
        if (out < 0) {
            return -1;
        }
        while (len > 0) {
            size_t n = len < sizeof chunk ? len : sizeof chunk;
            if (transfer(fd, chunk, n, 0) != 0) {
                return -1;
            }
            /* a reader that went away (| head): the command goes on and its code is ours, as in a JVM of its own */
            transfer(out, chunk, n, 1);
            len -= (uint32_t) n;
        }
    }
}

/* Whether this is `sandbox shell`: the verb is the first word after the noun that is not an option
 * of where to connect (each with its value) or --json. */
static int is_shell(void) {
    static const char *with_value[] = {"--url", "--token", "--token-file", "--cacert", "--state"};
    if (nwords < 2 || strcmp(words[0], "sandbox") != 0) {
        return 0;
    }
    for (int i = 1; i < nwords; i++) {
        int skip = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) {
            skip |= strcmp(words[i], with_value[k]) == 0;
        }
        if (skip) {
            i++;
        } else if (strcmp(words[i], "--json") != 0) {
            return strcmp(words[i], "shell") == 0;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: vivarium-cli HOME WORD... (bin/vivarium runs it)\n");
        return 2;
    }
    /* a closed stdin, stdout or stderr would otherwise become the socket, and frames would be written into it */
    int fd;
    while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2) {
    }
    if (fd > 2) {
        close(fd);
    }
    signal(SIGPIPE, SIG_IGN);
    static char resolved[PATH_MAX];
    if (realpath(argv[1], resolved) == NULL) {
        fprintf(stderr, "vivarium: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    home = resolved;
    words = argv + 2;
    nwords = argc - 2;
    if (is_shell()) {
        direct(NULL);
    }
    char sock[sizeof ((struct sockaddr_un *) 0)->sun_path];
    if (socket_path(sock, sizeof sock) != 0) {
        direct("no socket path for the command-line server (the distribution is not built, or its path is too long)");
    }
    char why[PATH_MAX + 128];
    fd = connect_to(sock);
    if (fd < 0 && (fd = start_server(sock)) < 0) {
        snprintf(why, sizeof why, "the command-line server did not start (its log: %s.log)", sock);
        direct(why);
    }
    if (send_request(fd) != 0) {
        direct("the command-line server did not take the command");
    }
    int code = relay(fd);
    if (code == -2) {
        snprintf(why, sizeof why, "the command-line server closed the connection before it took the command (its log: %s.log)", sock);
        direct(why);
    }
    if (code < 0) {
        fprintf(stderr, "vivarium: the command-line server ended the connection before the command ended (its log: %s.log)\n", sock);
        return 1;
    }
    return code;
}
