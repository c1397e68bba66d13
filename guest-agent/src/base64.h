/* RFC 4648 base64 with the standard alphabet and mandatory padding; decoding is strict. */
#ifndef VA_BASE64_H
#define VA_BASE64_H
#include <stddef.h>
#include <sys/types.h>
#include "buf.h"

void b64_encode(struct buf *out, const void *data, size_t n);
/* Decodes s[0..n) into out (which may be s itself: output never overtakes input).
 * Returns the decoded length, or -1 when s is not canonical base64. */
ssize_t b64_decode(const char *s, size_t n, unsigned char *out);

#endif
