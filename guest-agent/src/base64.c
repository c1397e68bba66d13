#include "base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void b64_encode(struct buf *out, const void *data, size_t n)
{
	const unsigned char *d = data;
	buf_reserve(out, (n + 2) / 3 * 4);
	char *o = out->p + out->len;
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		unsigned v = (unsigned)d[i] << 16 | (unsigned)d[i + 1] << 8 | d[i + 2];
		*o++ = alphabet[v >> 18];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = alphabet[(v >> 6) & 63];
		*o++ = alphabet[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0);
		*o++ = alphabet[v >> 18];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	out->len = (size_t)(o - out->p);
}

static int sextet(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

ssize_t b64_decode(const char *s, size_t n, unsigned char *out)
{
	if (n % 4)
		return -1;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		int last = i + 4 == n;
		int a = sextet((unsigned char)s[i]), b = sextet((unsigned char)s[i + 1]);
		int c = sextet((unsigned char)s[i + 2]), d = sextet((unsigned char)s[i + 3]);
		if (a < 0 || b < 0)
			return -1;
		if (c < 0 || d < 0) {
			/* Only the final quantum may be padded, and padding bits must be zero. */
			if (!last || s[i + 3] != '=')
				return -1;
			if (c < 0) {
				if (s[i + 2] != '=' || (b & 15))
					return -1;
				out[o++] = (unsigned char)(a << 2 | b >> 4);
				return (ssize_t)o;
			}
			if (c & 3)
				return -1;
			out[o++] = (unsigned char)(a << 2 | b >> 4);
			out[o++] = (unsigned char)((b & 15) << 4 | c >> 2);
			return (ssize_t)o;
		}
		out[o++] = (unsigned char)(a << 2 | b >> 4);
		out[o++] = (unsigned char)((b & 15) << 4 | c >> 2);
		out[o++] = (unsigned char)((c & 3) << 6 | d);
	}
	return (ssize_t)o;
}
