/* A strict, bounded JSON parser (RFC 8259, UTF-8 only, no duplicate keys, no NUL in strings)
 * and the writing helpers for responses. Parsing decodes strings in place in the input. */
#ifndef VA_JSON_H
#define VA_JSON_H
#include <stddef.h>
#include <stdint.h>
#include "buf.h"

#define JSON_MAX_DEPTH 32
#define JSON_MAX_NODES 65536
#define JSON_MAX_MEMBERS 4096 /* per object: duplicate detection is quadratic */

enum jtype { J_NULL, J_FALSE, J_TRUE, J_INT, J_NUM, J_STR, J_ARR, J_OBJ };

/* Nodes live in one array; 0 is the root, so 0 also means "none" for child and next. */
struct jnode {
	uint8_t type;
	uint32_t child, next, count;
	const char *key; /* member name when the parent is an object, NUL-terminated */
	size_t keylen;
	int64_t i;
	const char *s; /* J_STR: NUL-terminated, len bytes */
	size_t len;
};

struct jdoc {
	struct jnode *n;
	uint32_t len, cap;
	const char *err;
};

/* Parses text[0..len) (modified in place). Returns 0, or -1 with doc->err set. */
int json_parse(struct jdoc *doc, char *text, size_t len);
void json_reset(struct jdoc *doc);
/* Member of object node obj named key, or 0. */
uint32_t json_get(const struct jdoc *doc, uint32_t obj, const char *key);
const char *json_type_name(int type);

void jw_str(struct buf *b, const char *s, size_t n);
void jw_int(struct buf *b, int64_t v);
void jw_bool(struct buf *b, int v);
void jw_node(struct buf *b, const struct jdoc *doc, uint32_t i);
/* Writes `,"key":` (without the comma for the first member). */
void jw_key(struct buf *b, int *first, const char *key);

#endif
