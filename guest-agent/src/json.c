#include "json.h"

#include <stdlib.h>
#include <string.h>

struct parser {
	struct jdoc *doc;
	char *p, *end;
	int depth;
};

static int fail(struct parser *ps, const char *msg)
{
	if (!ps->doc->err)
		ps->doc->err = msg;
	return -1;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int64_t new_node(struct parser *ps, int type)
{
	struct jdoc *d = ps->doc;
	if (d->len >= JSON_MAX_NODES)
		return fail(ps, "too many values (at most 65536)");
	if (d->len == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 64;
		d->n = xrealloc(d->n, d->cap * sizeof *d->n);
	}
	struct jnode *n = &d->n[d->len];
	memset(n, 0, sizeof *n);
	n->type = (uint8_t)type;
	return d->len++;
}

static int hex4(const char *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		unsigned x;
		if (c >= '0' && c <= '9')
			x = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			x = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			x = (unsigned)(c - 'A' + 10);
		else
			return -1;
		*v = *v << 4 | x;
	}
	return 0;
}

/* Length of the valid UTF-8 sequence at p (non-ASCII lead byte), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0], cp;
	size_t n;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, cp = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, cp = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3F);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
		return 0;
	return n;
}

/* Parses a string at ps->p (after the quote); decodes it in place. */
static int parse_string(struct parser *ps, const char **out, size_t *outlen)
{
	char *w = ps->p, *start = ps->p;
	while (ps->p < ps->end) {
		unsigned char c = (unsigned char)*ps->p;
		if (c == '"') {
			ps->p++;
			*w = 0;
			*out = start;
			*outlen = (size_t)(w - start);
			return 0;
		}
		if (c < 0x20)
			return fail(ps, "control character in string");
		if (c == '\\') {
			if (ps->end - ps->p < 2)
				break;
			char e = ps->p[1];
			ps->p += 2;
			switch (e) {
			case '"': *w++ = '"'; break;
			case '\\': *w++ = '\\'; break;
			case '/': *w++ = '/'; break;
			case 'b': *w++ = '\b'; break;
			case 'f': *w++ = '\f'; break;
			case 'n': *w++ = '\n'; break;
			case 'r': *w++ = '\r'; break;
			case 't': *w++ = '\t'; break;
			case 'u': {
				unsigned cp, lo;
				if (ps->end - ps->p < 4 || hex4(ps->p, &cp))
					return fail(ps, "bad \\u escape");
				ps->p += 4;
				if (cp >= 0xDC00 && cp <= 0xDFFF)
					return fail(ps, "lone low surrogate");
				if (cp >= 0xD800 && cp <= 0xDBFF) {
					if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' || hex4(ps->p + 2, &lo) ||
					    lo < 0xDC00 || lo > 0xDFFF)
						return fail(ps, "lone high surrogate");
					ps->p += 6;
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				}
				if (cp == 0)
					return fail(ps, "NUL in string");
				if (cp < 0x80) {
					*w++ = (char)cp;
				} else if (cp < 0x800) {
					*w++ = (char)(0xC0 | cp >> 6);
					*w++ = (char)(0x80 | (cp & 0x3F));
				} else if (cp < 0x10000) {
					*w++ = (char)(0xE0 | cp >> 12);
					*w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
					*w++ = (char)(0x80 | (cp & 0x3F));
				} else {
					*w++ = (char)(0xF0 | cp >> 18);
					*w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
					*w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
					*w++ = (char)(0x80 | (cp & 0x3F));
				}
				break;
			}
			default:
				return fail(ps, "bad escape in string");
			}
			continue;
		}
		if (c < 0x80) {
			*w++ = (char)c;
			ps->p++;
			continue;
		}
		size_t n = utf8_len((const unsigned char *)ps->p, (const unsigned char *)ps->end);
		if (!n)
			return fail(ps, "invalid UTF-8");
		memmove(w, ps->p, n);
		w += n;
		ps->p += n;
	}
	return fail(ps, "unterminated string");
}

static int parse_number(struct parser *ps, int64_t idx)
{
	char *s = ps->p;
	int neg = 0, integral = 1;
	if (ps->p < ps->end && *ps->p == '-')
		neg = 1, ps->p++;
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
		return fail(ps, "bad number");
	if (*ps->p == '0')
		ps->p++;
	else
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	if (ps->p < ps->end && *ps->p == '.') {
		integral = 0;
		ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			return fail(ps, "bad number");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		integral = 0;
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			return fail(ps, "bad number");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	struct jnode *n = &ps->doc->n[idx];
	n->s = s;
	n->len = (size_t)(ps->p - s);
	if (!integral)
		return 0;
	/* Accumulate negatively so INT64_MIN fits; anything wider stays a plain number. */
	int64_t v = 0;
	for (char *q = s + neg; q < ps->p; q++) {
		int digit = *q - '0';
		if (v < (INT64_MIN + digit) / 10)
			return 0;
		v = v * 10 - digit;
	}
	if (!neg && v == INT64_MIN)
		return 0;
	n->type = J_INT;
	n->i = neg ? v : -v;
	return 0;
}

static int64_t parse_value(struct parser *ps);

static int parse_container(struct parser *ps, int64_t idx, int obj)
{
	if (++ps->depth > JSON_MAX_DEPTH)
		return fail(ps, "nested too deeply");
	char close = obj ? '}' : ']';
	uint32_t last = 0, count = 0;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		ps->depth--;
		return 0;
	}
	for (;;) {
		const char *key = NULL;
		size_t keylen = 0;
		if (obj) {
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != '"')
				return fail(ps, "expected a member name");
			ps->p++;
			if (parse_string(ps, &key, &keylen))
				return -1;
			if (count >= JSON_MAX_MEMBERS)
				return fail(ps, "too many members in an object (at most 4096)");
			for (uint32_t m = ps->doc->n[idx].child; m; m = ps->doc->n[m].next)
				if (ps->doc->n[m].keylen == keylen && !memcmp(ps->doc->n[m].key, key, keylen))
					return fail(ps, "duplicate member name");
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':')
				return fail(ps, "expected ':'");
			ps->p++;
		}
		int64_t v = parse_value(ps);
		if (v < 0)
			return -1;
		struct jnode *vn = &ps->doc->n[v];
		vn->key = key;
		vn->keylen = keylen;
		if (last)
			ps->doc->n[last].next = (uint32_t)v;
		else
			ps->doc->n[idx].child = (uint32_t)v;
		last = (uint32_t)v;
		count++;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == close) {
			ps->p++;
			break;
		}
		return fail(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
	ps->doc->n[idx].count = count;
	ps->depth--;
	return 0;
}

static int literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return fail(ps, "unexpected character");
	ps->p += n;
	return 0;
}

static int64_t parse_value(struct parser *ps)
{
	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, "unexpected end of input");
	char c = *ps->p;
	int64_t idx;
	switch (c) {
	case '{':
	case '[':
		if ((idx = new_node(ps, c == '{' ? J_OBJ : J_ARR)) < 0)
			return -1;
		ps->p++;
		return parse_container(ps, idx, c == '{') ? -1 : idx;
	case '"':
		if ((idx = new_node(ps, J_STR)) < 0)
			return -1;
		ps->p++;
		if (parse_string(ps, &ps->doc->n[idx].s, &ps->doc->n[idx].len))
			return -1;
		return idx;
	case 't':
		if ((idx = new_node(ps, J_TRUE)) < 0)
			return -1;
		return literal(ps, "true") ? -1 : idx;
	case 'f':
		if ((idx = new_node(ps, J_FALSE)) < 0)
			return -1;
		return literal(ps, "false") ? -1 : idx;
	case 'n':
		if ((idx = new_node(ps, J_NULL)) < 0)
			return -1;
		return literal(ps, "null") ? -1 : idx;
	default:
		if ((idx = new_node(ps, J_NUM)) < 0)
			return -1;
		return parse_number(ps, idx) ? -1 : idx;
	}
}

void json_reset(struct jdoc *doc)
{
	doc->len = 0;
	doc->err = NULL;
	if (doc->cap > 1024) {
		free(doc->n);
		doc->n = NULL;
		doc->cap = 0;
	}
}

int json_parse(struct jdoc *doc, char *text, size_t len)
{
	struct parser ps = {doc, text, text + len, 0};
	json_reset(doc);
	if (parse_value(&ps) < 0)
		return -1;
	skip_ws(&ps);
	if (ps.p != ps.end)
		return fail(&ps, "trailing characters after the value");
	return 0;
}

uint32_t json_get(const struct jdoc *doc, uint32_t obj, const char *key)
{
	size_t n = strlen(key);
	for (uint32_t m = doc->n[obj].child; m; m = doc->n[m].next)
		if (doc->n[m].keylen == n && !memcmp(doc->n[m].key, key, n))
			return m;
	return 0;
}

const char *json_type_name(int type)
{
	static const char *const names[] = {"null", "boolean", "boolean", "integer", "number", "string", "array", "object"};
	return names[type];
}

void jw_str(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	buf_reserve(b, n + 2);
	buf_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			buf_putc(b, '\\');
			buf_putc(b, (char)c);
		} else if (c == '\n') {
			buf_puts(b, "\\n");
		} else if (c < 0x20 || c == 0x7F) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			buf_put(b, e, 6);
		} else if (c >= 0x80) {
			/* Pass valid UTF-8 through; replace anything else so the line stays valid JSON. */
			size_t l = utf8_len((const unsigned char *)s + i, (const unsigned char *)s + n);
			if (l) {
				buf_put(b, s + i, l);
				i += l - 1;
			} else {
				buf_puts(b, "\\ufffd");
			}
		} else {
			buf_putc(b, (char)c);
		}
	}
	buf_putc(b, '"');
}

void jw_int(struct buf *b, int64_t v)
{
	char tmp[24], *p = tmp + sizeof tmp;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	buf_put(b, p, (size_t)(tmp + sizeof tmp - p));
}

void jw_bool(struct buf *b, int v)
{
	buf_puts(b, v ? "true" : "false");
}

void jw_node(struct buf *b, const struct jdoc *doc, uint32_t i)
{
	const struct jnode *n = &doc->n[i];
	int first = 1;
	switch (n->type) {
	case J_NULL: buf_puts(b, "null"); break;
	case J_FALSE: buf_puts(b, "false"); break;
	case J_TRUE: buf_puts(b, "true"); break;
	case J_INT: jw_int(b, n->i); break;
	case J_NUM: buf_put(b, n->s, n->len); break;
	case J_STR: jw_str(b, n->s, n->len); break;
	case J_ARR:
		buf_putc(b, '[');
		for (uint32_t c = n->child; c; c = doc->n[c].next) {
			if (!first)
				buf_putc(b, ',');
			first = 0;
			jw_node(b, doc, c);
		}
		buf_putc(b, ']');
		break;
	case J_OBJ:
		buf_putc(b, '{');
		for (uint32_t c = n->child; c; c = doc->n[c].next) {
			if (!first)
				buf_putc(b, ',');
			first = 0;
			jw_str(b, doc->n[c].key, doc->n[c].keylen);
			buf_putc(b, ':');
			jw_node(b, doc, c);
		}
		buf_putc(b, '}');
		break;
	}
}

void jw_key(struct buf *b, int *first, const char *key)
{
	if (!*first)
		buf_putc(b, ',');
	*first = 0;
	buf_putc(b, '"');
	buf_puts(b, key);
	buf_puts(b, "\":");
}
