/*
 * bin/vivarium-cli HOME WORD...: runs a command line of the distribution at HOME (sandbox, snapshot,
 * vm, volume, template, plugins, features) on its command-line server, a JVM kept warm for this user
 * and this build of the distribution (io.vivarium.launcher.CliServer; the protocol is described in
 * CliProtocol.java), prints what it prints and exits with its exit code. bin/vivarium calls it.
 *
 * It starts the server when none answers at the socket, and runs HOME/bin/vivarium with
 * VIVARIUM_CLI_SERVER=off (a JVM for this command alone) for a terminal session (`shell`, which
 * needs this process's terminal), or when the server cannot be reached or started.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/* A directory only this user may enter: $XDG_RUNTIME_DIR/vivarium, else ~/.cache/vivarium/cli. */
static int socket_dir(char *dir, size_t size) {
    const char *run = getenv("XDG_RUNTIME_DIR");
    const char *user_home = getenv("HOME");
    int n;
    if (run != NULL && run[0] == '/') {
        n = snprintf(dir, size, "%s/vivarium", run);
    } else if (user_home != NULL && user_home[0] == '/') {
        n = snprintf(dir, size, "%s/.cache", user_home);
        if (n < 0 || (size_t) n >= size || (mkdir(dir, 0700) != 0 && errno != EEXIST)) {
            return -1;
        }
        n = snprintf(dir, size, "%s/.cache/vivarium", user_home);
        if (n < 0 || (size_t) n >= size || (mkdir(dir, 0700) != 0 && errno != EEXIST)) {
            return -1;
        }
        n = snprintf(dir, size, "%s/.cache/vivarium/cli", user_home);
    } else {
        return -1;
    }
    if (n < 0 || (size_t) n >= size || (mkdir(dir, 0700) != 0 && errno != EEXIST)) {
        return -1;
    }
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
        return -1;
    }
    return 0;
}

/* The socket of the server for this distribution as built now: a rebuilt launcher jar is a new server. */
static int socket_path(char *path, size_t size) {
    char dir[PATH_MAX];
    char jar[PATH_MAX + 32];
    struct stat st;
    uint64_t hash = 1469598103934665603ULL; /* FNV-1a of HOME */
    for (const char *c = home; *c != '\0'; c++) {
        hash = (hash ^ (unsigned char) *c) * 1099511628211ULL;
    }
    snprintf(jar, sizeof jar, "%s/lib/vivarium-launcher.jar", home);
    if (socket_dir(dir, sizeof dir) != 0 || stat(jar, &st) != 0) {
        return -1;
    }
    uint64_t build = ((uint64_t) st.st_mtim.tv_sec * 1000000000ULL + (uint64_t) st.st_mtim.tv_nsec) ^ (uint64_t) st.st_ino;
    int n = snprintf(path, size, "%s/cli-%016llx-%llx.sock", dir, (unsigned long long) hash, (unsigned long long) build);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

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
        int in = open("/dev/null", O_RDONLY);
        int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0 || setsid() < 0 || chdir("/") != 0) {
            _exit(127);
        }
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
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

static int send_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
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

static int read_all(int fd, unsigned char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = read(fd, buf, len);
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

static int write_all(int fd, const unsigned char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
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
    size_t len = 4;
    size_t cap = 4096;
    char *req = malloc(cap);
    int entries = 0;
    if (req == NULL || getcwd(cwd, sizeof cwd) == NULL) {
        return -1;
    }
    for (char **e = environ; *e != NULL; e++) {
        entries += strncmp(*e, "VIVARIUM_", 9) == 0;
    }
    snprintf(count, sizeof count, "%d", entries);
    put(&req, &len, &cap, "1");
    put(&req, &len, &cap, cwd);
    put(&req, &len, &cap, isatty(2) ? "1" : "0");
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
    int rc = send_all(fd, req, len);
    free(req);
    return rc;
}

/* Copies the server's frames to stdout and stderr; returns the exit code, or -1 if the connection ended first. */
static int relay(int fd) {
    static unsigned char chunk[65536];
    for (;;) {
        unsigned char header[5];
        if (read_all(fd, header, sizeof header) != 0) {
            return -1;
        }
        uint32_t len = (uint32_t) header[1] << 24 | (uint32_t) header[2] << 16 | (uint32_t) header[3] << 8 | header[4];
        if (header[0] == 'x') {
            unsigned char code[4];
            if (len != 4 || read_all(fd, code, 4) != 0) {
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
            if (read_all(fd, chunk, n) != 0) {
                return -1;
            }
            write_all(out, chunk, n); /* a reader that went away: the command goes on, as a JVM's would */
            len -= (uint32_t) n;
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: vivarium-cli HOME WORD... (bin/vivarium runs it)\n");
        return 2;
    }
    static char resolved[PATH_MAX];
    if (realpath(argv[1], resolved) == NULL) {
        fprintf(stderr, "vivarium: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    home = resolved;
    words = argv + 2;
    nwords = argc - 2;
    for (int i = 0; i < nwords; i++) {
        if (strcmp(words[i], "shell") == 0) {
            direct(NULL);
        }
    }
    char sock[sizeof ((struct sockaddr_un *) 0)->sun_path];
    if (socket_path(sock, sizeof sock) != 0) {
        direct(NULL);
    }
    int fd = connect_to(sock);
    if (fd < 0 && (fd = start_server(sock)) < 0) {
        char why[PATH_MAX + 64];
        snprintf(why, sizeof why, "the command-line server did not start (its log: %s.log)", sock);
        direct(why);
    }
    if (send_request(fd) != 0) {
        direct("the command-line server did not take the command");
    }
    int code = relay(fd);
    if (code < 0) {
        fprintf(stderr, "vivarium: the command-line server ended the connection before the command ended (its log: %s.log)\n", sock);
        return 1;
    }
    return code;
}
