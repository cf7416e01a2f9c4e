/* spec_yaml.c: the YAML side of the spec module: libyaml events -> a node tree that keeps
 * line and column of every node; duplicate keys; the canonical form and its SHA-256. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "spec_impl.h"

/* ---------------------------------------------------------------- arena */

struct as_arena_blk {
  as_arena_blk *next;
  max_align_t data[];
};

void *as_arena_alloc(as_arena *a, size_t n) {
  if (n > ((size_t)1 << 40)) {
    a->nomem = 1;
    return NULL;
  }
  as_arena_blk *b = calloc(1, sizeof *b + (n ? n : 1));
  if (!b) {
    a->nomem = 1;
    return NULL;
  }
  b->next = a->head;
  a->head = b;
  return b->data;
}

char *as_arena_strndup(as_arena *a, const char *s, size_t len) {
  char *p = as_arena_alloc(a, len + 1);
  if (p && len) memcpy(p, s, len);
  return p;
}

void as_arena_free(as_arena *a) {
  if (!a) return;
  as_arena_blk *b = a->head;
  while (b) {
    as_arena_blk *next = b->next;
    free(b);
    b = next;
  }
  a->head = NULL;
}

/* ---------------------------------------------------------------- diagnostics */

void as_spec_note(as_spec_cx *cx, int line, int col, const char *fmt, ...) {
  if (cx->full || cx->nomem) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  as_spec_diags *d = &cx->diags;
  for (int i = 0; i < d->count; i++)
    if (d->items[i].line == line && d->items[i].col == col && strcmp(d->items[i].message, msg) == 0)
      return;
  if (d->count == AS_SPEC_MAX_DIAGS) {
    cx->full = 1;
    snprintf(msg, sizeof msg, "too many problems; stopped after %d", AS_SPEC_MAX_DIAGS);
    line = 0;
    col = 0;
  }
  if (d->count == d->capacity) {
    int cap = d->capacity ? 2 * d->capacity : 16;
    as_spec_diag *items = realloc(d->items, (size_t)cap * sizeof *items);
    if (!items) {
      cx->nomem = 1;
      return;
    }
    d->items = items;
    d->capacity = cap;
  }
  char *m = malloc(strlen(msg) + 1);
  if (!m) {
    cx->nomem = 1;
    return;
  }
  strcpy(m, msg);
  d->items[d->count].line = line;
  d->items[d->count].col = col;
  d->items[d->count].message = m;
  d->count++;
}

void as_spec_diags_free(as_spec_diags *d) {
  if (!d) return;
  for (int i = 0; i < d->count; i++) free(d->items[i].message);
  free(d->items);
  memset(d, 0, sizeof *d);
}

/* ---------------------------------------------------------------- tree */

#define AS_SPEC_MAX_DEPTH 64

static as_sn *new_node(as_spec_cx *cx, as_sn_kind kind, yaml_mark_t mark) {
  as_sn *s = as_arena_alloc(cx->arena, sizeof *s);
  if (!s) return NULL;
  s->kind = kind;
  s->line = (int)mark.line + 1;
  s->col = (int)mark.column + 1;
  return s;
}

/* An explicit YAML tag (!foo, !!binary, !<...>) is refused at its node: the spec's values are
 * plain YAML, and a tag would be read past silently (the value taken as if untagged). !!str
 * is the one tag read: it makes a scalar a string. */
static void refuse_tag(as_spec_cx *cx, const yaml_event_t *ev, const unsigned char *tag) {
  static const char core[] = "tag:yaml.org,2002:";
  const char *t = (const char *)tag;
  if (!t || (ev->type == YAML_SCALAR_EVENT && strcmp(t, "tag:yaml.org,2002:str") == 0)) return;
  const int short_form = strncmp(t, core, sizeof core - 1) == 0;
  as_spec_note(cx, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
               "YAML tag '%s%.64s' is not supported: write the value without it (!!str, which "
               "makes a scalar a string, is the one tag a spec may use)",
               short_form ? "!!" : "", short_form ? t + sizeof core - 1 : t);
}

typedef struct frame {
  as_sn *node;
  int used; /* slots filled (map: keys and values) */
  int cap;  /* slots allocated */
} frame;

static int frame_push_item(as_spec_cx *cx, frame *f, as_sn *child) {
  if (f->used == f->cap) {
    int cap = f->cap ? 2 * f->cap : 8;
    as_sn **items = as_arena_alloc(cx->arena, (size_t)cap * sizeof *items);
    if (!items) return 0;
    if (f->used) memcpy(items, f->node->items, (size_t)f->used * sizeof *items);
    f->node->items = items;
    f->cap = cap;
  }
  f->node->items[f->used++] = child;
  f->node->n = f->node->kind == AS_SN_MAP ? f->used / 2 : f->used;
  return 1;
}

void as_spec_tree_build(as_spec_cx *cx, const char *text, size_t len, as_sn **root) {
  yaml_parser_t p;
  yaml_event_t ev;
  frame stack[AS_SPEC_MAX_DEPTH + 1];
  int depth = 0, docs = 0, done = 0;
  as_sn *top = NULL;
  *root = NULL;
  if (!yaml_parser_initialize(&p)) {
    cx->nomem = 1;
    return;
  }
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  while (!done) {
    if (!yaml_parser_parse(&p, &ev)) {
      yaml_mark_t m = p.problem_mark;
      if (p.error == YAML_MEMORY_ERROR) {
        cx->nomem = 1;
      } else if (p.context) {
        as_spec_note(cx, (int)m.line + 1, (int)m.column + 1, "YAML syntax error: %s (%s at %d:%d)",
                     p.problem ? p.problem : "invalid YAML", p.context,
                     (int)p.context_mark.line + 1, (int)p.context_mark.column + 1);
      } else {
        as_spec_note(cx, (int)m.line + 1, (int)m.column + 1, "YAML syntax error: %s",
                     p.problem ? p.problem : "invalid YAML");
      }
      top = NULL;
      break;
    }
    as_sn *node = NULL;
    int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
    switch (ev.type) {
    case YAML_DOCUMENT_START_EVENT:
      if (++docs > 1) {
        as_spec_note(cx, line, col, "only one YAML document per spec (found a second one)");
        top = NULL;
        done = 1;
      }
      break;
    case YAML_STREAM_END_EVENT:
      done = 1;
      break;
    case YAML_ALIAS_EVENT:
      as_spec_note(cx, line, col, "aliases (*%s) are not supported: write the value out",
                   (const char *)ev.data.alias.anchor);
      top = NULL;
      done = 1;
      break;
    case YAML_SCALAR_EVENT: {
      refuse_tag(cx, &ev, ev.data.scalar.tag);
      node = new_node(cx, AS_SN_SCALAR, ev.start_mark);
      if (!node) break;
      node->len = ev.data.scalar.length;
      node->text = as_arena_strndup(cx->arena, (const char *)ev.data.scalar.value, node->len);
      const char *tag = (const char *)ev.data.scalar.tag;
      node->quoted = ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
                     (tag && strcmp(tag, "tag:yaml.org,2002:str") == 0);
      break;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
      refuse_tag(cx, &ev,
                 ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.tag
                                                      : ev.data.mapping_start.tag);
      node =
          new_node(cx, ev.type == YAML_SEQUENCE_START_EVENT ? AS_SN_SEQ : AS_SN_MAP, ev.start_mark);
      break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
      if (depth > 0) depth--;
      break;
    default:
      break;
    }
    yaml_event_delete(&ev);
    if (cx->arena->nomem) {
      cx->nomem = 1;
      top = NULL;
      break;
    }
    if (!node) continue;
    if (depth == 0) {
      top = node;
    } else if (!frame_push_item(cx, &stack[depth - 1], node)) {
      cx->nomem = 1;
      top = NULL;
      break;
    }
    if (node->kind != AS_SN_SCALAR) {
      if (depth == AS_SPEC_MAX_DEPTH) {
        as_spec_note(cx, node->line, node->col, "nesting deeper than %d levels", AS_SPEC_MAX_DEPTH);
        top = NULL;
        break;
      }
      stack[depth].node = node;
      stack[depth].used = 0;
      stack[depth].cap = 0;
      depth++;
    }
  }
  yaml_parser_delete(&p);
  *root = top;
}

static int scalar_eq(const as_sn *a, const as_sn *b) {
  return a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
}

void as_spec_tree_check_keys(as_spec_cx *cx, const as_sn *s) {
  if (!s || s->kind == AS_SN_SCALAR) return;
  if (s->kind == AS_SN_SEQ) {
    for (int i = 0; i < s->n; i++) as_spec_tree_check_keys(cx, s->items[i]);
    return;
  }
  for (int i = 0; i < s->n; i++) {
    const as_sn *k = s->items[2 * i];
    if (k->kind != AS_SN_SCALAR) {
      as_spec_note(cx, k->line, k->col, "a mapping key must be a plain name, not a %s",
                   k->kind == AS_SN_SEQ ? "list" : "mapping");
    } else {
      /* Quadratic, but mappings of a spec are small (tens of keys). */
      for (int j = 0; j < i; j++) {
        const as_sn *k0 = s->items[2 * j];
        if (k0->kind == AS_SN_SCALAR && scalar_eq(k, k0)) {
          as_spec_note(cx, k->line, k->col, "duplicate key '%s' (first at %d:%d)", k->text,
                       k0->line, k0->col);
          break;
        }
      }
    }
    as_spec_tree_check_keys(cx, s->items[2 * i + 1]);
  }
}

/* ---------------------------------------------------------------- canonical form */

static int is_word(const as_sn *s, const char *const *words) {
  for (int i = 0; words[i]; i++)
    if (strcmp(s->text, words[i]) == 0) return 1;
  return 0;
}

char as_spec_scalar_canon(const as_sn *s, char *buf, size_t len) {
  static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
  static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON",  NULL};
  static const char *const falses[] = {"false", "False", "FALSE", "no",  "No",
                                       "NO",    "off",   "Off",   "OFF", NULL};
  static const char *const pinf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
  static const char *const ninf[] = {"-.inf", "-.Inf", "-.INF", NULL};
  static const char *const nans[] = {".nan", ".NaN", ".NAN", NULL};
  buf[0] = '\0';
  if (s->quoted || strlen(s->text) != s->len) return 's';
  if (is_word(s, nulls)) return 'z';
  if (is_word(s, trues)) {
    snprintf(buf, len, "true");
    return 'b';
  }
  if (is_word(s, falses)) {
    snprintf(buf, len, "false");
    return 'b';
  }
  double v;
  if (is_word(s, pinf)) {
    v = INFINITY;
  } else if (is_word(s, ninf)) {
    v = -INFINITY;
  } else if (is_word(s, nans)) {
    v = NAN;
  } else {
    const char *t = s->text;
    if (!(isdigit((unsigned char)t[0]) || t[0] == '.' || t[0] == '-' || t[0] == '+')) return 's';
    /* Integers beyond 2^53 keep their digits (seeds must not collide by rounding). */
    size_t i = (t[0] == '-' || t[0] == '+') ? 1 : 0, k = i;
    while (isdigit((unsigned char)t[k])) k++;
    if (k > i && t[k] == '\0') {
      while (t[i] == '0' && t[i + 1] != '\0') i++;
      if (k - i > 15) {
        snprintf(buf, len, "%s%.*s", t[0] == '-' ? "-" : "", (int)(k - i), t + i);
        return 'i';
      }
    }
    char *end = NULL;
    errno = 0;
    v = strtod(t, &end);
    if (end == t || *end != '\0') return 's';
  }
  if (isnan(v)) {
    snprintf(buf, len, "nan");
  } else {
    snprintf(buf, len, "%.17g", v == 0 ? 0.0 : v);
  }
  return 'n';
}

typedef struct canon_out {
  as_sha256 h;
} canon_out;

static void emit(canon_out *o, const void *p, size_t n) {
  as_sha256_update(&o->h, p, n);
}
static void emit_str(canon_out *o, char kind, const char *s, size_t n) {
  char hdr[32];
  int k = snprintf(hdr, sizeof hdr, "%c%zu:", kind, n);
  emit(o, hdr, (size_t)k);
  emit(o, s, n);
}

/* Order of two mapping keys: bytewise, then by position (keys are unique in a valid spec). */
static int key_less(const as_sn *const *items, int a, int b) {
  const as_sn *x = items[2 * a], *y = items[2 * b];
  size_t lx = x->kind == AS_SN_SCALAR ? x->len : 0, ly = y->kind == AS_SN_SCALAR ? y->len : 0;
  int c = memcmp(lx ? x->text : "", ly ? y->text : "", lx < ly ? lx : ly);
  if (c) return c < 0;
  if (lx != ly) return lx < ly;
  return a < b;
}

static void canon(canon_out *o, const as_sn *s) {
  char buf[96], hdr[32];
  if (s->kind == AS_SN_SCALAR) {
    char k = as_spec_scalar_canon(s, buf, sizeof buf);
    if (k == 's')
      emit_str(o, 's', s->text, s->len);
    else
      emit_str(o, k, buf, strlen(buf));
    return;
  }
  int n = s->n;
  int k = snprintf(hdr, sizeof hdr, "%c%d[", s->kind == AS_SN_SEQ ? 'L' : 'M', n);
  emit(o, hdr, (size_t)k);
  if (s->kind == AS_SN_SEQ) {
    for (int i = 0; i < n; i++) canon(o, s->items[i]);
  } else {
    /* Keys sorted bytewise (insertion sort: spec mappings have tens of keys). */
    int small[64];
    int *idx = n <= 64 ? small : malloc((size_t)n * sizeof *idx);
    if (!idx) {
      for (int i = 0; i < 2 * n; i++) canon(o, s->items[i]);
    } else {
      for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && key_less((const as_sn *const *)s->items, i, idx[j - 1])) {
          idx[j] = idx[j - 1];
          j--;
        }
        idx[j] = i;
      }
      for (int i = 0; i < n; i++) {
        canon(o, s->items[2 * idx[i]]);
        canon(o, s->items[2 * idx[i] + 1]);
      }
      if (idx != small) free(idx);
    }
  }
  emit(o, "]", 1);
}

void as_spec_tree_sha256(const as_sn *root, char out[AS_SHA256_HEX]) {
  static const char digits[] = "0123456789abcdef";
  canon_out o;
  uint8_t d[AS_SHA256_BYTES];
  as_sha256_init(&o.h);
  emit(&o, "attnsweep-spec-1\n", 17);
  if (root) canon(&o, root);
  as_sha256_final(&o.h, d);
  for (int i = 0; i < AS_SHA256_BYTES; i++) {
    out[2 * i] = digits[d[i] >> 4];
    out[2 * i + 1] = digits[d[i] & 15];
  }
  out[64] = '\0';
}

int as_spec_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 99;
  int row[64];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      int v = diag + cost;
      if (up + 1 < v) v = up + 1;
      if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
      row[j] = v;
      diag = up;
    }
  }
  return row[lb];
}
