/* vivarium-list's walk, run in a forked child of the agent (exec.c): the regular files below each
 * path with their fingerprints, in the record format of the host's fingerprint modes' listing
 * scripts (find -xdev -type f: no symlink followed, one filesystem), with no process per file. */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- SHA-256 (FIPS 180-4) ---- */

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char block[64];
	size_t used;
};

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(struct sha256 *s, const unsigned char *p)
{
	uint32_t w[64], a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6],
			h = s->h[7];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d, s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static void sha256_init(struct sha256 *s)
{
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, h0, sizeof h0);
	s->len = 0;
	s->used = 0;
}

static void sha256_update(struct sha256 *s, const unsigned char *p, size_t n)
{
	s->len += n;
	if (s->used) {
		size_t take = 64 - s->used < n ? 64 - s->used : n;
		memcpy(s->block + s->used, p, take);
		s->used += take, p += take, n -= take;
		if (s->used < 64)
			return;
		sha256_block(s, s->block);
		s->used = 0;
	}
	for (; n >= 64; p += 64, n -= 64)
		sha256_block(s, p);
	memcpy(s->block, p, n);
	s->used = n;
}

static void sha256_hex(struct sha256 *s, char hex[65])
{
	uint64_t bits = s->len * 8;
	unsigned char pad[72] = {0x80};
	size_t padlen = (s->used < 56 ? 56 : 120) - s->used;
	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(s, pad, padlen + 8);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned)(s->h[i / 4] >> (24 - 8 * (i % 4))) & 0xff);
}

/* ---- the walk ---- */

static int hashing; /* sha256, else stat */
static int status;

static int hash_file(const char *path, char hex[65])
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	static unsigned char chunk[1 << 16];
	struct sha256 s;
	sha256_init(&s);
	ssize_t n;
	while ((n = read(fd, chunk, sizeof chunk)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		sha256_update(&s, chunk, (size_t)n);
	}
	close(fd);
	sha256_hex(&s, hex);
	return 0;
}

static void record(const char *fingerprint, const char *path)
{
	fputs(fingerprint, stdout);
	putchar('\t');
	fputs(path, stdout);
	putchar('\0');
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_DNR || type == FTW_NS) {
		fprintf(stderr, "cannot %s %s: %s\n", type == FTW_DNR ? "read directory" : "stat", path, strerror(errno));
		status = 1;
		return 0;
	}
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	if (access(path, R_OK) < 0) {
		/* as the scripts' [ -r ]: present but not readable by this user */
		record("unreadable", path);
		return 0;
	}
	char fp[65];
	if (hashing) {
		if (hash_file(path, fp) < 0) {
			fprintf(stderr, "cannot hash %s: %s\n", path, strerror(errno));
			status = 1;
			return 0;
		}
	} else {
		snprintf(fp, sizeof fp, "%lld:%lld", (long long)st->st_size, (long long)st->st_mtim.tv_sec);
	}
	record(fp, path);
	return 0;
}

int list_main(char **argv)
{
	hashing = !strcmp(argv[0], "sha256");
	status = 0;
	for (char **p = argv + 1; *p; p++) {
		/* The fd bound is not the depth bound: musl's nftw keeps a directory open per level, so
		 * the depth is bounded by RLIMIT_NOFILE (EMFILE, reported) and paths by PATH_MAX (also
		 * reported). Kept high: musl stops descending, silently, once the bound reaches 0. */
		if (nftw(*p, visit, 1 << 20, FTW_PHYS | FTW_MOUNT) < 0) {
			fprintf(stderr, "cannot walk %s: %s\n", *p, strerror(errno));
			status = 1;
		}
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "cannot write the listing: %s\n", strerror(errno));
		status = 1;
	}
	return status;
}
