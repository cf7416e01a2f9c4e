/* override.c: `--set KEY=VALUE` applied to a spec's YAML text and checked against the parsed
 * sweep (override.h).
 *
 * Text edits at the places libyaml reports for the nodes: a value node replaced by the
 * override's text, a pair inserted in a mapping (a block mapping: a line at its keys' column;
 * a flow mapping: ", K: V" after its last pair). libyaml's marks count characters, not bytes:
 * positions here are character indices of the text after its byte order mark, turned into
 * byte offsets only when the text is rebuilt. One override at a time: the text is read again
 * for the next. Every piece of the result is a segment that remembers where it came from (a
 * character of the original text, or an override: its value or the glue around it), so that
 * the check after parsing can tell which --set a point's value comes from, and name the place
 * in the original text that wins over one. */
#include "attnsweep/override.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "attnsweep/params.h"

/* Points one check visits at most (every case at least its first and last point). */
#define CHECK_BUDGET 65536u

/* ---------------------------------------------------------------- characters and bytes */

/* A byte that begins a UTF-8 character. */
static int char_start(char c) {
  return ((unsigned char)c & 0xC0) != 0x80;
}

static size_t utf8_chars(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += (size_t)char_start(s[i]);
  return k;
}

/* Character index -> byte offset of one text, from checkpoints every CMAP_STEP characters. */
#define CMAP_STEP 512
typedef struct cmap {
  const char *s;
  size_t len;
  size_t *cp; /* cp[k]: the byte offset of character k * CMAP_STEP */
  size_t ncp;
} cmap;

static int cmap_build(cmap *m, const char *s, size_t len) {
  m->s = s;
  m->len = len;
  m->ncp = 1;
  m->cp = malloc((utf8_chars(s, len) / CMAP_STEP + 2) * sizeof *m->cp);
  if (!m->cp) return 0;
  m->cp[0] = 0;
  size_t c = 0;
  for (size_t i = 0; i < len; i++) {
    if (!char_start(s[i])) continue;
    if (c > 0 && c % CMAP_STEP == 0) m->cp[m->ncp++] = i;
    c++;
  }
  return 1;
}

static void cmap_free(cmap *m) {
  free(m->cp);
  m->cp = NULL;
}

static size_t cmap_byte(const cmap *m, size_t ci) {
  size_t k = ci / CMAP_STEP;
  if (k >= m->ncp) k = m->ncp - 1;
  size_t b = m->cp[k], c = k * CMAP_STEP;
  while (c < ci && b < m->len) {
    b++;
    while (b < m->len && !char_start(m->s[b])) b++;
    c++;
  }
  return b;
}

/* ---------------------------------------------------------------- events */

typedef struct evlist {
  yaml_event_t *ev;
  size_t n, cap;
  size_t *close; /* a collection's start event: the index of its end event; else itself */
  size_t *last;  /* a node's first event: the character where its text ends (a block
                  * collection's end event is marked at the next token: its last content) */
} evlist;

static void evlist_free(evlist *l) {
  for (size_t i = 0; i < l->n; i++) yaml_event_delete(&l->ev[i]);
  free(l->ev);
  free(l->close);
  free(l->last);
  memset(l, 0, sizeof *l);
}

static int is_block(const yaml_event_t *e) {
  return (e->type == YAML_MAPPING_START_EVENT &&
          e->data.mapping_start.style != YAML_FLOW_MAPPING_STYLE) ||
         (e->type == YAML_SEQUENCE_START_EVENT &&
          e->data.sequence_start.style != YAML_FLOW_SEQUENCE_STYLE);
}

/* Where a scalar's text ends: a literal or folded block scalar is marked after its line
 * breaks (and the blanks of the lines after it), which stay in the text. */
static size_t scalar_end(const yaml_event_t *e, const cmap *m) {
  size_t end = e->end_mark.index;
  if (e->type != YAML_SCALAR_EVENT || (e->data.scalar.style != YAML_LITERAL_SCALAR_STYLE &&
                                       e->data.scalar.style != YAML_FOLDED_SCALAR_STYLE))
    return end;
  size_t b = cmap_byte(m, end);
  while (
      end > e->start_mark.index && b > 0 &&
      (m->s[b - 1] == '\n' || m->s[b - 1] == '\r' || m->s[b - 1] == ' ' || m->s[b - 1] == '\t')) {
    b--;
    end--;
  }
  return end;
}

/* Every event of the text (m maps its characters): 1, or 0 when libyaml cannot read it, -1
 * out of memory. */
static int events_of(const cmap *m, evlist *l) {
  memset(l, 0, sizeof *l);
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p)) return -1;
  yaml_parser_set_input_string(&p, (const unsigned char *)m->s, m->len);
  int ok = 1;
  for (;;) {
    if (l->n == l->cap) {
      size_t cap = l->cap ? 2 * l->cap : 256;
      yaml_event_t *e = realloc(l->ev, cap * sizeof *e);
      if (!e) {
        ok = -1;
        break;
      }
      l->ev = e;
      l->cap = cap;
    }
    if (!yaml_parser_parse(&p, &l->ev[l->n])) {
      ok = p.error == YAML_MEMORY_ERROR ? -1 : 0;
      break;
    }
    if (l->ev[l->n++].type == YAML_STREAM_END_EVENT) break;
  }
  yaml_parser_delete(&p);
  if (ok != 1) return ok;
  l->close = malloc(l->n * sizeof *l->close);
  l->last = malloc(l->n * sizeof *l->last);
  size_t *stack = malloc(l->n * sizeof *stack), *maxend = malloc(l->n * sizeof *maxend);
  if (!l->close || !l->last || !stack || !maxend) ok = -1;
  size_t depth = 0;
  for (size_t i = 0; ok == 1 && i < l->n; i++) {
    const yaml_event_t *e = &l->ev[i];
    l->close[i] = i;
    l->last[i] = e->end_mark.index;
    switch (e->type) {
    case YAML_SCALAR_EVENT:
    case YAML_ALIAS_EVENT:
      l->last[i] = scalar_end(e, m);
      if (depth && l->last[i] > maxend[depth - 1]) maxend[depth - 1] = l->last[i];
      break;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
      stack[depth] = i;
      maxend[depth++] = e->start_mark.index;
      break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: {
      if (depth == 0) break;
      const size_t j = stack[--depth];
      l->close[j] = i;
      l->last[j] = is_block(&l->ev[j]) ? maxend[depth] : e->end_mark.index;
      if (depth && l->last[j] > maxend[depth - 1]) maxend[depth - 1] = l->last[j];
      break;
    }
    default:
      break;
    }
  }
  free(stack);
  free(maxend);
  return ok;
}

static int is_scalar(const evlist *l, size_t i, const char *text) {
  const yaml_event_t *e = &l->ev[i];
  return e->type == YAML_SCALAR_EVENT && strlen(text) == e->data.scalar.length &&
         memcmp(e->data.scalar.value, text, e->data.scalar.length) == 0;
}

/* The key event of `key` in the mapping starting at event m, or 0. */
static size_t map_find(const evlist *l, size_t m, const char *key) {
  if (m == 0 || l->ev[m].type != YAML_MAPPING_START_EVENT) return 0;
  for (size_t k = m + 1; k < l->close[m];) {
    const size_t v = l->close[k] + 1;
    if (is_scalar(l, k, key)) return k;
    k = l->close[v] + 1;
  }
  return 0;
}

static size_t value_of(const evlist *l, size_t k) {
  return l->close[k] + 1;
}

/* ---------------------------------------------------------------- edits and segments */

typedef struct edit {
  size_t b, e;   /* characters [b, e) of the current text are replaced */
  char *ins;     /* by these bytes */
  size_t vb, ve; /* the override's value within ins (bytes) */
} edit;

typedef struct edits {
  edit *v;
  size_t n, cap;
} edits;

static void edits_free(edits *ed) {
  for (size_t i = 0; i < ed->n; i++) free(ed->v[i].ins);
  free(ed->v);
  memset(ed, 0, sizeof *ed);
}

/* [b, e) replaced by pre, val, post (val: the override's value). 0 out of memory. */
static int add_edit(edits *ed, size_t b, size_t e, const char *pre, const char *val,
                    const char *post) {
  if (ed->n == ed->cap) {
    size_t cap = ed->cap ? 2 * ed->cap : 16;
    edit *v = realloc(ed->v, cap * sizeof *v);
    if (!v) return 0;
    ed->v = v;
    ed->cap = cap;
  }
  const size_t lp = strlen(pre), lv = strlen(val), lq = strlen(post);
  char *p = malloc(lp + lv + lq + 1);
  if (!p) return 0;
  memcpy(p, pre, lp);
  memcpy(p + lp, val, lv);
  memcpy(p + lp + lv, post, lq + 1);
  ed->v[ed->n++] = (edit){b, e, p, lp, lp + lv};
  return 1;
}

/* A piece of the edited text. */
typedef struct seg {
  size_t b, e;  /* characters [b, e) of the current text */
  int64_t orig; /* the original text's character at b; -1: written by an override */
  int set;      /* the override that wrote it, -1: none (the original, or the header) */
  int value;    /* 1: part of that override's value */
} seg;

/* The text being edited: the body of the spec (after a byte order mark) and its pieces. */
typedef struct doc {
  char *s; /* NUL terminated */
  size_t len;
  seg *seg;
  size_t nseg, cap;
} doc;

static void doc_free(doc *d) {
  free(d->s);
  free(d->seg);
  memset(d, 0, sizeof *d);
}

static int doc_copy(const doc *a, doc *b) {
  memset(b, 0, sizeof *b);
  b->s = malloc(a->len + 1);
  b->seg = malloc((a->nseg ? a->nseg : 1) * sizeof *b->seg);
  if (!b->s || !b->seg) {
    doc_free(b);
    return 0;
  }
  memcpy(b->s, a->s, a->len + 1);
  if (a->nseg) memcpy(b->seg, a->seg, a->nseg * sizeof *b->seg);
  b->len = a->len;
  b->nseg = b->cap = a->nseg;
  return 1;
}

static int push_seg(doc *d, seg x) {
  if (x.b >= x.e) return 1;
  if (d->nseg == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 16;
    seg *v = realloc(d->seg, cap * sizeof *v);
    if (!v) return 0;
    d->seg = v;
    d->cap = cap;
  }
  d->seg[d->nseg++] = x;
  return 1;
}

static int by_pos(const void *pa, const void *pb) {
  const edit *a = pa, *b = pb;
  if (a->b != b->b) return a->b < b->b ? -1 : 1;
  return (a->e > b->e) - (a->e < b->e);
}

/* The edits of override `set` applied to d (text and pieces). AS_ERR_ARG when two overlap. */
static as_status apply_edits(doc *d, edits *ed, int set, const char *what) {
  as_status st = AS_OK;
  cmap m = {NULL, 0, NULL, 0};
  doc nd;
  memset(&nd, 0, sizeof nd);
  if (ed->n) qsort(ed->v, ed->n, sizeof *ed->v, by_pos);
  size_t grow = 0;
  for (size_t i = 0; i < ed->n; i++) {
    AS_CHECK(i == 0 || ed->v[i - 1].e <= ed->v[i].b, AS_ERR_ARG,
             "--set %s: the key appears nested inside itself in the spec", what);
    grow += strlen(ed->v[i].ins);
  }
  AS_CHECK(cmap_build(&m, d->s, d->len), AS_ERR_NOMEM, "--set: character map");
  nd.s = malloc(d->len + grow + 1);
  AS_CHECK_ALLOC(nd.s);
  const size_t chars = d->nseg ? d->seg[d->nseg - 1].e : 0;
  size_t x = 0, xb = 0, si = 0;
  int64_t delta = 0;
  for (size_t k = 0; k <= ed->n; k++) {
    const size_t y = k < ed->n ? ed->v[k].b : chars;
    /* The kept text [x, y): its bytes, and the pieces it holds, moved by delta. */
    const size_t yb = k < ed->n ? cmap_byte(&m, y) : d->len;
    memcpy(nd.s + nd.len, d->s + xb, yb - xb);
    nd.len += yb - xb;
    while (si < d->nseg && d->seg[si].e <= x) si++;
    for (size_t t = si; t < d->nseg && d->seg[t].b < y; t++) {
      const seg *o = &d->seg[t];
      const size_t cb = o->b > x ? o->b : x, ce = o->e < y ? o->e : y;
      if (cb >= ce) continue;
      seg piece = {(size_t)((int64_t)cb + delta), (size_t)((int64_t)ce + delta),
                   o->orig >= 0 ? o->orig + (int64_t)(cb - o->b) : -1, o->set, o->value};
      AS_CHECK(push_seg(&nd, piece), AS_ERR_NOMEM, "--set: text pieces");
    }
    if (k == ed->n) break;
    /* The inserted text: glue, value, glue. */
    const edit *e = &ed->v[k];
    const size_t il = strlen(e->ins);
    memcpy(nd.s + nd.len, e->ins, il);
    nd.len += il;
    const size_t c0 = utf8_chars(e->ins, e->vb), c1 = utf8_chars(e->ins + e->vb, e->ve - e->vb),
                 c2 = utf8_chars(e->ins + e->ve, il - e->ve);
    const size_t p = (size_t)((int64_t)e->b + delta);
    AS_CHECK(push_seg(&nd, (seg){p, p + c0, -1, set, 0}) &&
                 push_seg(&nd, (seg){p + c0, p + c0 + c1, -1, set, 1}) &&
                 push_seg(&nd, (seg){p + c0 + c1, p + c0 + c1 + c2, -1, set, 0}),
             AS_ERR_NOMEM, "--set: text pieces");
    delta += (int64_t)(c0 + c1 + c2) - (int64_t)(e->e - e->b);
    x = e->e;
    xb = cmap_byte(&m, x);
  }
  nd.s[nd.len] = '\0';
  doc_free(d);
  *d = nd;
  memset(&nd, 0, sizeof nd);
cleanup:
  cmap_free(&m);
  doc_free(&nd);
  return st;
}

/* ---------------------------------------------------------------- one override */

typedef enum kclass {
  K_TOP,   /* a top-level key */
  K_SWEEP, /* a sweep key */
  K_GROUP, /* a group (init) as a whole */
  K_MEMBER /* a member of a group (init.file; init_kind and init_scale also as keys) */
} kclass;

typedef struct ov {
  const char *set; /* the option's argument, KEY=VALUE */
  char *key;       /* KEY */
  char *val;       /* VALUE without surrounding blanks */
  kclass cls;
  const char *name; /* the key in the YAML: KEY, or the member's name inside the group */
  int id;           /* K_SWEEP, K_GROUP, K_MEMBER: its entry in the key table */
  int group;        /* K_MEMBER: the group's entry */
  int direct;       /* K_MEMBER: also a sweep key of its own (init_kind, init_scale) */
  int is_list;      /* the value is an axis */
  int nmem;         /* K_GROUP: the members the value sets */
  int mem[AS_PARAM_COUNT];
} ov;

static int param_id(const as_param *p) {
  return (int)(p - as_params);
}

/* The group whose member p is (its key is <group>_<member>), or NULL. */
static const as_param *group_of(const as_param *p) {
  for (int i = 0; i < AS_PARAM_COUNT; i++) {
    const as_param *g = &as_params[i];
    const size_t gl = strlen(g->key);
    if (g->kind == AS_PK_GROUP && g != p && strncmp(p->key, g->key, gl) == 0 && p->key[gl] == '_')
      return g;
  }
  return NULL;
}

static as_status ov_key(ov *o) {
  as_status st = AS_OK;
  const char *k = o->key;
  const char *dot = strchr(k, '.');
  static const char unknown[] =
      "--set %s: unknown key '%s' (a top-level key such as seed or replicates, a sweep key, or "
      "a member of init by its dotted name such as init.file: attnsweep help keys)";
  if (dot) {
    char gname[64], mname[128];
    snprintf(gname, sizeof gname, "%.*s", (int)(dot - k), k);
    const as_param *g = as_param_find(gname);
    AS_CHECK(g && g->kind == AS_PK_GROUP && strlen(dot + 1) < 64, AS_ERR_ARG, unknown, o->set, k);
    snprintf(mname, sizeof mname, "%s_%s", gname, dot + 1);
    const as_param *p = as_param_find(mname);
    AS_CHECK(p && group_of(p) == g, AS_ERR_ARG, unknown, o->set, k);
    o->cls = K_MEMBER;
    o->id = param_id(p);
    o->group = param_id(g);
    o->name = p->key + strlen(g->key) + 1;
    o->direct = !(p->flags & AS_PF_INIT_PART);
    return AS_OK;
  }
  if (as_spec_top_key(k)) {
    AS_CHECK(strcmp(k, "sweep") != 0 && strcmp(k, "defaults") != 0, AS_ERR_ARG,
             "--set %s: '%s' is the sweep's structure, not a value: set its keys one by one "
             "(--set T=200, --set 'n=[20, 40]')",
             o->set, k);
    o->cls = K_TOP;
    o->name = k;
    return AS_OK;
  }
  const as_param *p = as_param_find(k);
  AS_CHECK(p, AS_ERR_ARG, unknown, o->set, k);
  o->id = param_id(p);
  o->name = p->key;
  const as_param *g = group_of(p);
  if (p->kind == AS_PK_GROUP) {
    o->cls = K_GROUP;
  } else if (g) {
    o->cls = K_MEMBER;
    o->group = param_id(g);
    o->name = p->key + strlen(g->key) + 1;
    o->direct = !(p->flags & AS_PF_INIT_PART);
  } else {
    o->cls = K_SWEEP;
  }
cleanup:
  return st;
}

/* A value's line breaks (the ones libyaml knows: CR, LF, NEL, LS, PS). */
static int has_break(const char *s) {
  for (; *s; s++) {
    const unsigned char c = (unsigned char)s[0];
    if (c == '\n' || c == '\r') return 1;
    if (c == 0xC2 && (unsigned char)s[1] == 0x85) return 1;
    if (c == 0xE2 && (unsigned char)s[1] == 0x80 &&
        ((unsigned char)s[2] == 0xA8 || (unsigned char)s[2] == 0xA9))
      return 1;
  }
  return 0;
}

/* The member of group g named by the scalar event e, or -1. */
static int member_id(const as_param *g, const yaml_event_t *e) {
  char name[128];
  if (e->type != YAML_SCALAR_EVENT || e->data.scalar.length > 64) return -1;
  snprintf(name, sizeof name, "%s_%.*s", g->key, (int)e->data.scalar.length,
           (const char *)e->data.scalar.value);
  const as_param *p = as_param_find(name);
  return p && group_of(p) == g ? param_id(p) : -1;
}

static void add_member(ov *o, int id) {
  for (int i = 0; i < o->nmem; i++)
    if (o->mem[i] == id) return;
  if (id >= 0 && o->nmem < AS_PARAM_COUNT) o->mem[o->nmem++] = id;
}

/* The members a value of group g sets: its keys (a mapping), kind (the short form). */
static void group_members(ov *o, const as_param *g, const evlist *l, size_t i) {
  const yaml_event_t *e = &l->ev[i];
  if (e->type == YAML_SCALAR_EVENT) {
    char name[128];
    snprintf(name, sizeof name, "%s_kind", g->key);
    const as_param *k = as_param_find(name);
    if (k) add_member(o, param_id(k));
  } else if (e->type == YAML_MAPPING_START_EVENT) {
    for (size_t k = i + 1; k < l->close[i]; k = l->close[value_of(l, k)] + 1)
      add_member(o, member_id(g, &l->ev[k]));
  } else if (e->type == YAML_SEQUENCE_START_EVENT) {
    for (size_t k = i + 1; k < l->close[i]; k = l->close[k] + 1) group_members(o, g, l, k);
  }
}

/* VALUE: one YAML node of a flow context on one line, whatever its length. Written as the
 * only item of a flow sequence, it must be read back as exactly that one item, spanning all
 * of it: `6, T: 7` (two items), `a: b` (a mapping without braces), `[1` are refused. */
static as_status ov_value(ov *o, const char *raw) {
  as_status st = AS_OK;
  char *wrap = NULL;
  evlist l;
  cmap m = {NULL, 0, NULL, 0};
  memset(&l, 0, sizeof l);
  while (*raw == ' ' || *raw == '\t') raw++;
  size_t n = strlen(raw);
  while (n > 0 && (raw[n - 1] == ' ' || raw[n - 1] == '\t')) n--;
  AS_CHECK(n > 0, AS_ERR_ARG, "--set %s: needs a value after '=' (e.g. --set T=200)", o->set);
  AS_CHECK(!has_break(raw), AS_ERR_ARG, "--set %s: the value must be on one line", o->set);
  o->val = malloc(n + 1);
  wrap = malloc(n + 3);
  AS_CHECK(o->val && wrap, AS_ERR_NOMEM, "--set: value of %zu bytes", n);
  memcpy(o->val, raw, n);
  o->val[n] = '\0';
  wrap[0] = '[';
  memcpy(wrap + 1, raw, n);
  wrap[n + 1] = ']';
  wrap[n + 2] = '\0';
  AS_CHECK(cmap_build(&m, wrap, n + 2), AS_ERR_NOMEM, "--set: character map");
  const int rd = events_of(&m, &l);
  AS_CHECK(rd >= 0, AS_ERR_NOMEM, "--set: reading the value");
  /* STREAM-START DOCUMENT-START SEQUENCE-START item ... SEQUENCE-END */
  const size_t chars = utf8_chars(raw, n);
  const int one = rd == 1 && l.n > 4 && l.ev[2].type == YAML_SEQUENCE_START_EVENT &&
                  l.close[2] == l.close[3] + 1 && l.ev[3].start_mark.index == 1 &&
                  l.last[3] == chars + 1 &&
                  (l.ev[3].type != YAML_MAPPING_START_EVENT || raw[0] == '{');
  AS_CHECK(one, AS_ERR_ARG,
           "--set %s: the value must be one YAML value on one line (200, box, \"a, b\", [20, 40], "
           "{kind: box}); %s",
           o->set,
           rd != 1 ? "it does not read as YAML"
                   : "it reads as several (quote a string that holds a comma or ': ')");
  const yaml_event_t *it = &l.ev[3];
  if (o->cls != K_TOP) {
    const as_param *p = &as_params[o->id];
    if (p->kind == AS_PK_MAT) /* a matrix is a list of rows; a list of matrices an axis */
      o->is_list = it->type == YAML_SEQUENCE_START_EVENT &&
                   l.ev[4].type == YAML_SEQUENCE_START_EVENT &&
                   l.ev[5].type == YAML_SEQUENCE_START_EVENT;
    else
      o->is_list = it->type == YAML_SEQUENCE_START_EVENT;
    AS_CHECK(!(o->is_list && o->cls == K_MEMBER && !o->direct), AS_ERR_ARG,
             "--set %s: %s takes one value (a list of init values goes in --set 'init=[{...}, "
             "{...}]')",
             o->set, o->key);
    if (o->cls == K_GROUP) group_members(o, p, &l, 3);
  }
cleanup:
  evlist_free(&l);
  cmap_free(&m);
  free(wrap);
  return st;
}

/* ---------------------------------------------------------------- placing one override */

typedef struct place {
  const ov *o;
  int set;       /* its index */
  const doc *d;  /* the text */
  const cmap *m; /* its characters */
  evlist l;      /* its events */
  edits ed;
} place;

/* The value of key event k replaced by the override's. */
static int replace_value(place *pl, size_t k) {
  const evlist *l = &pl->l;
  const size_t v = value_of(l, k);
  if (is_block(&l->ev[v])) /* from the key's end: a flow value cannot start a line there */
    return add_edit(&pl->ed, l->ev[k].end_mark.index, l->last[v], ": ", pl->o->val, "");
  return add_edit(&pl->ed, l->ev[v].start_mark.index, l->last[v], "", pl->o->val, "");
}

/* "pre VALUE post" as a new pair of the mapping starting at event m. */
static int insert_pair(place *pl, size_t m, const char *pre, const char *post) {
  const evlist *l = &pl->l;
  const yaml_event_t *s = &l->ev[m];
  if (!is_block(s)) {
    if (l->close[m] == m + 1) /* {}: after the brace */
      return add_edit(&pl->ed, s->end_mark.index, s->end_mark.index, pre, pl->o->val, post);
    size_t lastv = m + 1;
    for (size_t k = m + 1; k < l->close[m]; k = l->close[value_of(l, k)] + 1)
      lastv = value_of(l, k);
    char *glue = malloc(strlen(pre) + 3);
    if (!glue) return 0;
    snprintf(glue, strlen(pre) + 3, ", %s", pre);
    const int ok = add_edit(&pl->ed, l->last[lastv], l->last[lastv], glue, pl->o->val, post);
    free(glue);
    return ok;
  }
  /* A block mapping: a line after its last content, at its first key's column. */
  const size_t col = l->ev[m + 1].start_mark.column;
  char *glue = malloc(col + strlen(pre) + 2);
  if (!glue) return 0;
  glue[0] = '\n';
  memset(glue + 1, ' ', col);
  strcpy(glue + 1 + col, pre);
  const int ok = add_edit(&pl->ed, l->last[m], l->last[m], glue, pl->o->val, post);
  free(glue);
  return ok;
}

/* The place of the value is the override's; a list there cannot be taken. */
static as_status member_in(place *pl, size_t x) {
  as_status st = AS_OK;
  const evlist *l = &pl->l;
  const ov *o = pl->o;
  const yaml_event_t *e = &l->ev[x];
  static const char one[] =
      "--set %s: a list is an axis, and the %s of an init: value takes one value (a list of "
      "init values goes in --set 'init=[{...}, {...}]')";
  if (e->type == YAML_SCALAR_EVENT && strcmp(o->name, "kind") == 0) { /* init: gauss */
    AS_CHECK(!o->is_list, AS_ERR_ARG, one, o->set, o->name);
    AS_CHECK(add_edit(&pl->ed, e->start_mark.index, l->last[x], "", o->val, ""), AS_ERR_NOMEM,
             "--set: edits");
  } else if (e->type == YAML_MAPPING_START_EVENT) {
    const size_t k = map_find(l, x, o->name);
    if (k) {
      AS_CHECK(!o->is_list, AS_ERR_ARG, one, o->set, o->name);
      AS_CHECK(replace_value(pl, k), AS_ERR_NOMEM, "--set: edits");
    }
  } else if (e->type == YAML_SEQUENCE_START_EVENT) {
    for (size_t k = x + 1; k < l->close[x]; k = l->close[k] + 1) AS_TRY(member_in(pl, k));
  }
cleanup:
  return st;
}

/* The override in one mapping of defaults or of the sweep: every place it sets the key. */
static as_status visit_place(place *pl, size_t m) {
  as_status st = AS_OK;
  const ov *o = pl->o;
  const evlist *l = &pl->l;
  if (o->cls != K_MEMBER || o->direct) {
    const size_t k = map_find(l, m, as_params[o->id].key);
    if (k) AS_CHECK(replace_value(pl, k), AS_ERR_NOMEM, "--set: edits");
  }
  if (o->cls == K_MEMBER) {
    const size_t g = map_find(l, m, as_params[o->group].key);
    if (g) AS_TRY(member_in(pl, value_of(l, g)));
  }
cleanup:
  return st;
}

static int is_struct(const evlist *l, size_t k) {
  return is_scalar(l, k, "product") || is_scalar(l, k, "zip") || is_scalar(l, k, "concat");
}

/* The mappings of the sweep algebra: m and, recursively, the items of its product, zip or
 * concat (never the value of a key). */
static as_status walk_sweep(place *pl, size_t m) {
  as_status st = AS_OK;
  const evlist *l = &pl->l;
  if (l->ev[m].type != YAML_MAPPING_START_EVENT) return AS_OK;
  AS_TRY(visit_place(pl, m));
  for (size_t k = m + 1; k < l->close[m]; k = l->close[value_of(l, k)] + 1) {
    const size_t v = value_of(l, k);
    if (!is_struct(l, k) || l->ev[v].type != YAML_SEQUENCE_START_EVENT) continue;
    for (size_t i = v + 1; i < l->close[v]; i = l->close[i] + 1) AS_TRY(walk_sweep(pl, i));
  }
cleanup:
  return st;
}

enum { COV_NONE, COV_PART, COV_FULL };

/* Whether every case of the sweep mapping m sets the key (a list's key: a direct key). */
static int coverage(const place *pl, size_t m) {
  const evlist *l = &pl->l;
  if (l->ev[m].type != YAML_MAPPING_START_EVENT) return COV_NONE;
  if (map_find(l, m, as_params[pl->o->id].key)) return COV_FULL;
  for (size_t k = m + 1; k < l->close[m]; k = l->close[value_of(l, k)] + 1) {
    const size_t v = value_of(l, k);
    if (!is_struct(l, k) || l->ev[v].type != YAML_SEQUENCE_START_EVENT) continue;
    const int concat = is_scalar(l, k, "concat");
    int all = 1, any = 0, part = 0;
    for (size_t i = v + 1; i < l->close[v]; i = l->close[i] + 1) {
      const int c = coverage(pl, i);
      all &= c == COV_FULL;
      any |= c == COV_FULL;
      part |= c != COV_NONE;
    }
    if (concat ? all : any) return COV_FULL;
    return part ? COV_PART : COV_NONE;
  }
  return COV_NONE;
}

/* A list where some cases take the key from elsewhere: into the mappings that lack it, at the
 * highest level that holds no case setting it already (a key set twice in a case is an
 * error). */
static as_status fix_list(place *pl, size_t m) {
  as_status st = AS_OK;
  const evlist *l = &pl->l;
  const int c = coverage(pl, m);
  if (c == COV_FULL) return AS_OK;
  if (c == COV_NONE) {
    char pre[80];
    snprintf(pre, sizeof pre, "%s: ", as_params[pl->o->id].key);
    AS_CHECK(insert_pair(pl, m, pre, ""), AS_ERR_NOMEM, "--set: edits");
    return AS_OK;
  }
  for (size_t k = m + 1; k < l->close[m]; k = l->close[value_of(l, k)] + 1) {
    const size_t v = value_of(l, k);
    if (!is_struct(l, k) || l->ev[v].type != YAML_SEQUENCE_START_EVENT) continue;
    const int concat = is_scalar(l, k, "concat");
    for (size_t i = v + 1; i < l->close[v]; i = l->close[i] + 1) {
      const int ci = coverage(pl, i);
      if (concat ? ci != COV_FULL : ci == COV_PART) AS_TRY(fix_list(pl, i));
    }
  }
cleanup:
  return st;
}

/* A single value where some point takes the key from its default: into `defaults`, where
 * those trials read it (a member of init that is not a key of its own: inside its init). */
static as_status fill_defaults(place *pl, size_t root, size_t defs) {
  as_status st = AS_OK;
  char *pre = NULL, *post = NULL;
  const evlist *l = &pl->l;
  const ov *o = pl->o;
  const int inside = o->cls == K_MEMBER && !o->direct;
  const char *group = inside ? as_params[o->group].key : "";
  const size_t room = strlen(group) + strlen(o->name) + 64;
  pre = malloc(room);
  post = malloc(room);
  AS_CHECK(pre && post, AS_ERR_NOMEM, "--set: edits");
  if (defs && l->ev[defs].type != YAML_MAPPING_START_EVENT) goto cleanup; /* the spec's error */
  if (inside && defs && map_find(l, defs, group)) {
    const size_t g = value_of(l, map_find(l, defs, group));
    if (l->ev[g].type == YAML_MAPPING_START_EVENT) {
      snprintf(pre, room, "%s: ", o->name);
      AS_CHECK(insert_pair(pl, g, pre, ""), AS_ERR_NOMEM, "--set: edits");
    } else if (l->ev[g].type == YAML_SCALAR_EVENT) { /* init: box -> {kind: box, file: V} */
      const yaml_event_t *e = &l->ev[g];
      const size_t b = cmap_byte(pl->m, e->start_mark.index), x = cmap_byte(pl->m, l->last[g]);
      free(pre);
      pre = malloc(x - b + room);
      AS_CHECK_ALLOC(pre);
      snprintf(pre, x - b + room, "{kind: %.*s, %s: ", (int)(x - b), pl->d->s + b, o->name);
      AS_CHECK(add_edit(&pl->ed, e->start_mark.index, l->last[g], pre, o->val, "}"), AS_ERR_NOMEM,
               "--set: edits");
    }
    goto cleanup;
  }
  if (inside) {
    snprintf(pre, room, "%s: {%s: ", group, o->name);
    snprintf(post, room, "}");
  } else {
    snprintf(pre, room, "%s: ", as_params[o->id].key);
    post[0] = '\0';
  }
  if (defs) {
    AS_CHECK(insert_pair(pl, defs, pre, post), AS_ERR_NOMEM, "--set: edits");
  } else {
    char *p2 = malloc(strlen(pre) + 16), *q2 = malloc(strlen(post) + 2);
    if (p2 && q2) {
      snprintf(p2, strlen(pre) + 16, "defaults: {%s", pre);
      snprintf(q2, strlen(post) + 2, "%s}", post);
    }
    const int ok = p2 && q2 && insert_pair(pl, root, p2, q2);
    free(p2);
    free(q2);
    AS_CHECK(ok, AS_ERR_NOMEM, "--set: edits");
  }
cleanup:
  free(pre);
  free(post);
  return st;
}

/* Override `set` (o) applied to d; fill: also where points would take the key from its
 * default (or a list from defaults). */
static as_status apply_one(doc *d, const ov *o, int set, int fill) {
  as_status st = AS_OK;
  cmap m = {NULL, 0, NULL, 0};
  place pl;
  memset(&pl, 0, sizeof pl);
  pl.o = o;
  pl.set = set;
  pl.d = d;
  AS_CHECK(cmap_build(&m, d->s, d->len), AS_ERR_NOMEM, "--set: character map");
  pl.m = &m;
  const int rd = events_of(&m, &pl.l);
  AS_CHECK(rd >= 0, AS_ERR_NOMEM, "--set: reading the spec");
  AS_CHECK(rd == 1 && pl.l.n > 3 && pl.l.ev[2].type == YAML_MAPPING_START_EVENT, AS_ERR_ARG,
           "--set %s: the spec is not a readable YAML mapping", o->set);
  const size_t root = 2;
  if (o->cls == K_TOP) {
    const size_t k = map_find(&pl.l, root, o->name);
    char pre[64];
    snprintf(pre, sizeof pre, "%s: ", o->name);
    AS_CHECK(k ? replace_value(&pl, k) : insert_pair(&pl, root, pre, ""), AS_ERR_NOMEM,
             "--set: edits");
  } else {
    const size_t dk = map_find(&pl.l, root, "defaults"), sk = map_find(&pl.l, root, "sweep");
    const size_t defs = dk ? value_of(&pl.l, dk) : 0, sweep = sk ? value_of(&pl.l, sk) : 0;
    /* defaults take one value: a list there is shadowed by the sweep's (fill) */
    if (defs && !o->is_list && pl.l.ev[defs].type == YAML_MAPPING_START_EVENT)
      AS_TRY(visit_place(&pl, defs));
    if (sweep) AS_TRY(walk_sweep(&pl, sweep));
    if (fill && !o->is_list) {
      AS_TRY(fill_defaults(&pl, root, defs));
    } else if (fill && sweep) {
      AS_TRY(fix_list(&pl, sweep));
    } else if (fill) {
      char pre[80];
      snprintf(pre, sizeof pre, "sweep: {%s: ", as_params[o->id].key);
      AS_CHECK(insert_pair(&pl, root, pre, "}"), AS_ERR_NOMEM, "--set: edits");
    }
  }
  AS_TRY(apply_edits(d, &pl.ed, set, o->set));
cleanup:
  edits_free(&pl.ed);
  evlist_free(&pl.l);
  cmap_free(&m);
  return st;
}

/* ---------------------------------------------------------------- where values come from */

/* The start of every node of a text: (line, column) -> character (both 1-based). */
typedef struct postab {
  struct pos {
    int line, col;
    size_t index;
  } * v;
  size_t n;
} postab;

static int pos_cmp(const void *pa, const void *pb) {
  const struct pos *a = pa, *b = pb;
  if (a->line != b->line) return a->line < b->line ? -1 : 1;
  return (a->col > b->col) - (a->col < b->col);
}

/* 1 ok, 0 unreadable, -1 out of memory. */
static int postab_build(const char *s, size_t len, postab *t) {
  memset(t, 0, sizeof *t);
  cmap m = {NULL, 0, NULL, 0};
  evlist l;
  memset(&l, 0, sizeof l);
  if (!cmap_build(&m, s, len)) return -1;
  int ok = events_of(&m, &l);
  if (ok == 1) {
    t->v = malloc((l.n ? l.n : 1) * sizeof *t->v);
    if (!t->v) ok = -1;
    for (size_t i = 0; ok == 1 && i < l.n; i++)
      t->v[t->n++] = (struct pos){(int)l.ev[i].start_mark.line + 1,
                                  (int)l.ev[i].start_mark.column + 1, l.ev[i].start_mark.index};
    if (ok == 1) qsort(t->v, t->n, sizeof *t->v, pos_cmp);
  }
  evlist_free(&l);
  cmap_free(&m);
  return ok;
}

/* The character of (line, col), or SIZE_MAX. */
static size_t postab_index(const postab *t, int line, int col) {
  size_t lo = 0, hi = t->n;
  const struct pos key = {line, col, 0};
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const int c = pos_cmp(&t->v[mid], &key);
    if (c == 0) return t->v[mid].index;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return SIZE_MAX;
}

/* The (line, col) of character index, 0 when no node starts there. */
static void postab_place(const postab *t, size_t index, int *line, int *col) {
  *line = *col = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->v[i].index == index) {
      *line = t->v[i].line;
      *col = t->v[i].col;
      return;
    }
}

/* The piece of d holding character c, or NULL. */
static const seg *seg_at(const doc *d, size_t c) {
  size_t lo = 0, hi = d->nseg;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (d->seg[mid].e <= c)
      lo = mid + 1;
    else if (d->seg[mid].b > c)
      hi = mid;
    else
      return &d->seg[mid];
  }
  return NULL;
}

/* What one check of override j found. */
typedef struct verdict {
  uint64_t applying; /* points visited whose trials read the key */
  uint64_t bad;      /* ... that take it from elsewhere */
  uint64_t filler;   /* ... that take it from its default (or a list: from defaults) */
  int bad_case;      /* the first bad point's case */
  const seg *from;   /* its piece (NULL: the default) */
  int from_line, from_col;
} verdict;

/* Visits the points of spec (every case, evenly) for key id of override j of text d. defs:
 * the characters of `defaults` [defs_b, defs_e) in d (a list there is not in force). strict:
 * a point whose value comes from another override counts as bad (0: only the original text
 * and the default). */
static as_status check_key(const as_spec *spec, const doc *d, const postab *pt, int j, int id,
                           int is_list, size_t defs_b, size_t defs_e, int strict, verdict *v) {
  as_status st = AS_OK;
  memset(v, 0, sizeof *v);
  v->bad_case = -1;
  const int ncases = as_spec_case_count(spec);
  const uint64_t per_case = CHECK_BUDGET / (uint64_t)(ncases > 0 ? ncases : 1) + 2;
  for (int c = 0; c < ncases; c++) {
    const uint64_t off = as_spec_case_offset(spec, c), np = as_spec_case_points(spec, c);
    const uint64_t stride = np > per_case ? (np - 1) / (per_case - 1) : 1;
    for (uint64_t q = 0; np > 0;) {
      int line = 0, col = 0, applies = 0, cid = 0;
      AS_TRY(as_spec_point_source(spec, off + q, id, &line, &col, &applies, &cid));
      if (applies) {
        v->applying++;
        const size_t at = line ? postab_index(pt, line, col) : SIZE_MAX;
        const seg *s = at != SIZE_MAX ? seg_at(d, at) : NULL;
        const int mine = s && s->set == j && s->value;
        const int other = s && s->set >= 0;
        if (!line || (is_list && at >= defs_b && at < defs_e && !mine)) v->filler++;
        if (!mine && (strict || !other)) {
          if (!v->bad++) {
            v->bad_case = cid;
            v->from = s;
            v->from_line = line;
            v->from_col = col;
          }
        }
      }
      if (q == np - 1) break;
      q = q + stride < np - 1 ? q + stride : np - 1;
    }
  }
cleanup:
  return st;
}

/* The place of `defaults` in d (characters), [0, 0) when none. */
static as_status defaults_span(const doc *d, size_t *b, size_t *e) {
  as_status st = AS_OK;
  cmap m = {NULL, 0, NULL, 0};
  evlist l;
  memset(&l, 0, sizeof l);
  *b = *e = 0;
  AS_CHECK(cmap_build(&m, d->s, d->len), AS_ERR_NOMEM, "--set: character map");
  const int rd = events_of(&m, &l);
  AS_CHECK(rd >= 0, AS_ERR_NOMEM, "--set: reading the spec");
  const size_t k = rd == 1 && l.n > 3 ? map_find(&l, 2, "defaults") : 0;
  if (k) {
    *b = l.ev[value_of(&l, k)].start_mark.index;
    *e = l.last[value_of(&l, k)] + 1;
  }
cleanup:
  evlist_free(&l);
  cmap_free(&m);
  return st;
}

/* ---------------------------------------------------------------- the whole */

static const char *const bom8 = "\xEF\xBB\xBF";

/* d's text with the byte order mark it had, NUL terminated (allocated). */
static char *with_bom(const doc *d, size_t bom, size_t *len) {
  char *t = malloc(bom + d->len + 1);
  if (!t) return NULL;
  memcpy(t, bom8, bom);
  memcpy(t + bom, d->s, d->len + 1);
  *len = bom + d->len;
  return t;
}

static void ov_free(ov *o, int n) {
  for (int i = 0; o && i < n; i++) {
    free(o[i].key);
    free(o[i].val);
  }
  free(o);
}

/* The first override with no effect in the final text: AS_ERR_ARG naming it and what wins. */
static as_status check_all(const ov *o, int n, const doc *d, const as_spec *spec, const char *name,
                           const postab *orig, int *blame) {
  as_status st = AS_OK;
  postab pt = {NULL, 0};
  const int rd = postab_build(d->s, d->len, &pt);
  AS_CHECK(rd >= 0, AS_ERR_NOMEM, "--set: positions");
  for (int j = 0; j < n && rd == 1; j++) {
    if (o[j].cls == K_TOP) continue;
    int ids[AS_PARAM_COUNT + 1], nid = 0;
    ids[nid++] = o[j].id;
    for (int k = 0; o[j].cls == K_GROUP && k < o[j].nmem; k++) ids[nid++] = o[j].mem[k];
    for (int k = 0; k < nid; k++) {
      verdict v;
      AS_TRY(check_key(spec, d, &pt, j, ids[k], o[j].is_list, 0, 0, k == 0, &v));
      const as_param *p = &as_params[ids[k]];
      if (blame) *blame = j;
      AS_CHECK(k > 0 || v.applying > 0, AS_ERR_ARG,
               "--set %s has no effect: no trial of the sweep reads %s (%s)", o[j].set, o[j].key,
               p->doc);
      if (!v.bad) continue;
      char from[512];
      if (!v.from_line || !v.from) {
        snprintf(from, sizeof from, "its default");
      } else if (v.from->set >= 0) {
        snprintf(from, sizeof from, "--set %.400s", o[v.from->set].set);
      } else if (v.from->orig >= 0) {
        int line = 0, col = 0;
        const seg *f = v.from;
        const size_t at = postab_index(&pt, v.from_line, v.from_col);
        postab_place(orig, (size_t)f->orig + (at - f->b), &line, &col);
        snprintf(from, sizeof from, "%.300s:%d:%d", name, line, col);
      } else {
        snprintf(from, sizeof from, "elsewhere in the spec");
      }
      AS_CHECK(0, AS_ERR_ARG,
               "--set %s has no effect on %llu of the %llu points checked that read %s (the first "
               "in case '%s'): they take %s from %s",
               o[j].set, (unsigned long long)v.bad, (unsigned long long)v.applying, p->key,
               as_spec_case_name(spec, v.bad_case), p->key, from);
    }
  }
  if (blame) *blame = -1;
cleanup:
  free(pt.v);
  return st;
}

as_status as_override_parse(const char *text, size_t len, const char *name, const char *const *sets,
                            int n, as_spec_diags *diags, int *blame, as_spec **out) {
  as_status st = AS_OK;
  ov *o = NULL;
  doc d, cur;
  memset(&d, 0, sizeof d);
  memset(&cur, 0, sizeof cur);
  as_spec *spec = NULL;
  char *t = NULL, *head = NULL;
  postab orig = {NULL, 0};
  edits hd = {NULL, 0, 0};
  if (blame) *blame = -1;
  AS_CHECK(text && out && n >= 0 && (n == 0 || sets), AS_ERR_ARG,
           "as_override_parse: bad arguments");
  /* The spec itself first: its own problems are reported as usual. */
  AS_TRY(as_spec_parse(text, len, name, diags, n == 0 ? out : &spec));
  if (n == 0) return AS_OK;
  as_spec_destroy(&spec);
  AS_CHECK(n <= AS_OVERRIDE_MAX, AS_ERR_ARG, "--set can be given at most %d times",
           AS_OVERRIDE_MAX);
  const unsigned char *u = (const unsigned char *)text;
  AS_CHECK(!(len >= 2 && ((u[0] == 0xFE && u[1] == 0xFF) || (u[0] == 0xFF && u[1] == 0xFE))),
           AS_ERR_ARG, "--set %s: %s is UTF-16 text: overrides need UTF-8 (convert it)", sets[0],
           name ? name : "the spec");
  const size_t bom = len >= 3 && memcmp(text, bom8, 3) == 0 ? 3 : 0;

  /* The options: KEY=VALUE, a known key, one value. */
  o = calloc((size_t)n, sizeof *o);
  AS_CHECK_ALLOC(o);
  size_t hlen = 16;
  for (int k = 0; k < n; k++) {
    if (blame) *blame = k;
    o[k].set = sets[k];
    const char *eq = sets[k] ? strchr(sets[k], '=') : NULL;
    AS_CHECK(eq && eq > sets[k], AS_ERR_ARG,
             "--set %s: needs KEY=VALUE (e.g. --set T=200 or --set 'n=[20,40]')",
             sets[k] ? sets[k] : "");
    o[k].key = malloc((size_t)(eq - sets[k]) + 1);
    AS_CHECK_ALLOC(o[k].key);
    memcpy(o[k].key, sets[k], (size_t)(eq - sets[k]));
    o[k].key[eq - sets[k]] = '\0';
    AS_TRY(ov_key(&o[k]));
    AS_TRY(ov_value(&o[k], eq + 1));
    hlen += strlen(sets[k]) + 8;
  }
  if (blame) *blame = -1;

  /* The text: its pieces are the original's characters, then a header comment naming the
   * overrides (after the byte order mark, which stays first). */
  d.len = len - bom;
  d.s = malloc(d.len + 1);
  AS_CHECK_ALLOC(d.s);
  memcpy(d.s, text + bom, d.len);
  d.s[d.len] = '\0';
  AS_CHECK(push_seg(&d, (seg){0, utf8_chars(d.s, d.len), 0, -1, 0}), AS_ERR_NOMEM, "--set");
  AS_CHECK(postab_build(d.s, d.len, &orig) >= 0, AS_ERR_NOMEM, "--set: positions");
  head = malloc(hlen);
  AS_CHECK_ALLOC(head);
  size_t hk = (size_t)snprintf(head, hlen, "# attnsweep");
  for (int k = 0; k < n; k++) hk += (size_t)snprintf(head + hk, hlen - hk, " --set %s", sets[k]);
  snprintf(head + hk, hlen - hk, "\n");
  AS_CHECK(add_edit(&hd, 0, 0, head, "", ""), AS_ERR_NOMEM, "--set: header");
  AS_TRY(apply_edits(&d, &hd, -1, "header"));

  /* One override at a time. Where some point whose trials read the key would still take it
   * from its default (or a list from defaults), the override is applied again with those
   * places filled; a spec problem it brings is blamed on it. */
  for (int k = 0; k < n; k++) {
    for (int fill = 0; fill <= 1; fill++) {
      doc_free(&cur);
      AS_CHECK(doc_copy(&d, &cur), AS_ERR_NOMEM, "--set: text");
      if (blame) *blame = k;
      AS_TRY(apply_one(&cur, &o[k], k, fill));
      size_t tl = 0;
      free(t);
      t = with_bom(&cur, bom, &tl);
      AS_CHECK_ALLOC(t);
      as_spec_destroy(&spec);
      as_spec_diags_free(diags);
      AS_TRY(as_spec_parse(t, tl, name, diags, &spec));
      if (fill || o[k].cls == K_TOP) break;
      size_t db = 0, de = 0;
      postab pt = {NULL, 0};
      verdict v;
      as_status cst = defaults_span(&cur, &db, &de);
      if (cst == AS_OK && postab_build(cur.s, cur.len, &pt) < 0)
        cst = as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__, "--set: positions");
      if (cst == AS_OK) cst = check_key(spec, &cur, &pt, k, o[k].id, o[k].is_list, db, de, 1, &v);
      free(pt.v);
      AS_TRY(cst);
      if (!v.filler) break;
    }
    doc_free(&d);
    d = cur;
    memset(&cur, 0, sizeof cur);
  }
  if (blame) *blame = -1;
  AS_TRY(check_all(o, n, &d, spec, name ? name : "SPEC", &orig, blame));
  *out = spec;
  spec = NULL;
cleanup:
  as_spec_destroy(&spec);
  ov_free(o, n);
  doc_free(&d);
  doc_free(&cur);
  edits_free(&hd);
  free(orig.v);
  free(head);
  free(t);
  return st;
}
