#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void oom(void)
{
	static const char msg[] = "vivarium-agent: out of memory\n";
	(void)!write(2, msg, sizeof msg - 1);
	_exit(70);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *d = xmalloc(n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

void buf_reserve(struct buf *b, size_t extra)
{
	if (b->cap - b->len >= extra)
		return;
	size_t want = b->len + extra, cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap = cap < ((size_t)1 << 30) ? cap * 2 : want;
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
}

void buf_put(struct buf *b, const void *d, size_t n)
{
	if (!n)
		return;
	buf_reserve(b, n);
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

void buf_puts(struct buf *b, const char *s)
{
	buf_put(b, s, strlen(s));
}

void buf_putc(struct buf *b, char c)
{
	buf_reserve(b, 1);
	b->p[b->len++] = c;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

void buf_trim(struct buf *b, size_t keep)
{
	if (b->len == 0 && b->cap > keep)
		buf_free(b);
}

void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}
