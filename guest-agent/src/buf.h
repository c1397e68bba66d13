/* Growable byte buffers. Allocation failure is fatal: every size the agent buffers is bounded. */
#ifndef VA_BUF_H
#define VA_BUF_H
#include <stddef.h>

struct buf {
	char *p;
	size_t len, cap;
};

void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrndup(const char *s, size_t n);
void buf_reserve(struct buf *b, size_t extra);
void buf_put(struct buf *b, const void *d, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_putc(struct buf *b, char c);
void buf_consume(struct buf *b, size_t n);
/* Frees the storage when it is empty and bigger than keep, so idle buffers cost nothing. */
void buf_trim(struct buf *b, size_t keep);
void buf_free(struct buf *b);

#endif
