/* spec.c: the sweep specification: schema, sweep algebra, validation, trial enumeration.
 *
 * Parsing goes text -> YAML tree (spec_yaml.c) -> cases, each a term of the sweep algebra:
 *   axis     one key with its values (a scalar is an axis of one value)
 *   product  mixed radix over its factors, the first factor slowest
 *   zip      factors of equal length walked together
 * concat is flattened into the list of cases (a product distributes over it). A trial index
 * decodes as replicate * P + p, p -> (case, point), point -> one value per axis.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <unistd.h>

#include "attnsweep/attention.h"
#include "attnsweep/blocks.h"
#include "attnsweep/classify.h"
#include "attnsweep/params.h"
#include "attnsweep/record.h"
#include "attnsweep/rules.h"
#include "attnsweep/spectral.h"
#include "attnsweep/tableau.h"
#include "spec_impl.h"

/* ---------------------------------------------------------------- schema
 *
 * The sweep keys are the table of params.h (as_params): their kinds, ranges, defaults and
 * slots in as_trial come from there. This file holds only the spec's own structure (top
 * level, the sweep algebra, output); the rules between keys are the list of rules.h, which
 * validation evaluates on every point and as_spec_trial on every trial it hands out. */

typedef as_param keydef;

/* Index of a key in the table: also its enumeration rank within one mapping. */
static int key_id(const keydef *k) {
  return (int)(k - as_params);
}

/* A numeric range check for settings that are not sweep keys (replicates, ...). */
static const keydef *setting(keydef *buf, const char *name, as_param_kind kind, double lo,
                             double hi, int flags) {
  memset(buf, 0, sizeof *buf);
  buf->key = name;
  buf->kind = kind;
  buf->lo = lo;
  buf->hi = hi;
  buf->flags = flags;
  return buf;
}

#define BIG AS_BIG
enum { R_LO_OPEN = AS_PF_LO_OPEN, R_NAN_OK = AS_PF_NAN_OK, R_INF_OK = AS_PF_INF_OK };
#define F_COUNT AS_PARAM_COUNT

static const char *const top_keys[] = {
    "name",         "description",    "seed",  "replicates", "spectral_threshold",
    "output",       "flush_interval", "sweep", "defaults",   "spectral_grid",
    "memory_limit", "common",         NULL};
static const char *const struct_keys[] = {"case", "product", "zip", "concat", NULL};
static const char *const output_keys[] = {"initial",  "final",     "attention",
                                          "matrices", "snapshots", NULL};

/* ---------------------------------------------------------------- parsed structures */

struct sinit;

typedef struct sval {
  const as_sn *node;  /* where the value is written */
  double num;         /* NUM, INT, I64 (integral), BOOL (0/1), ENUM (value) */
  const char *str;    /* TEXT */
  int32_t id;         /* TEXT: label id among the distinct values of the key */
  double *mat;        /* MAT: rows x cols row-major */
  int rows, cols;     /* MAT */
  uint64_t hash;      /* MAT: as_matref_hash */
  struct sinit *init; /* GROUP */
} sval;

/* A GROUP value (`init: {kind: .., scale: ..}`): the member keys it sets. */
#define MAX_MEMBERS 8
typedef struct sinit {
  int n;
  const keydef *key[MAX_MEMBERS];
  sval val[MAX_MEMBERS];
} sinit;

typedef struct axis {
  const keydef *key;
  const as_sn *knode; /* the key */
  uint64_t n;         /* values */
  sval *vals;
  int zipped;
} axis;

typedef enum tkind { T_AXIS, T_PROD, T_ZIP } tkind;
typedef struct term {
  tkind kind;
  uint64_t len; /* points */
  axis *ax;     /* T_AXIS */
  int n;        /* T_PROD, T_ZIP: children */
  struct term **kids;
} term;

typedef struct scase {
  char *name;
  term *t;
  uint64_t offset; /* first point in 0..P-1 */
} scase;

typedef struct caselist {
  int n;
  scase *c;
} caselist;

typedef struct axref {
  int case_id;
  const axis *ax;
} axref;

struct as_spec {
  as_arena arena;
  const char *name; /* `name`, else the file name */
  char *source;     /* file name used in messages */
  char *text;       /* the text as given, NUL terminated */
  size_t text_len;
  char sha[AS_SHA256_HEX];
  uint64_t seed;
  uint32_t replicates;
  int spectral_threshold;
  double memory_limit;  /* bytes per rank, 0: MemAvailable / ranks on the node */
  int spectral_grid[2]; /* BLACS grid of the large-d analysis: rows, columns */
  double flush_interval;
  as_output_spec output;
  int ncases;
  scase *cases;
  uint64_t points; /* P */
  uint64_t trials; /* R * P */
  int naxes;
  axref *axes;
  int ndefaults; /* `defaults`: fixed values applied before each case's own */
  const axis *defaults[F_COUNT];
  /* Labels of the TEXT keys: the distinct values in order of first appearance (a value's
   * sval.id indexes them); case names are the cases'. */
  const char **labels[F_COUNT];
  int nlabels[F_COUNT], caplabels[F_COUNT];
  const char **case_names; /* ncases */
  /* Input files (the TEXT keys whose record field is `file` or `init_file`): paths[i][id] is
   * label id of key i resolved against base (as written when absolute or base is NULL). */
  const char *base; /* absolute directory of the spec file, NULL: the working directory */
  const char **paths[F_COUNT];
  /* `common:` (docs/spec.md, "Enumeration and seeds"): keys left out of the random-stream
   * keys, so trials that differ only in them share their triple and initial tokens. */
  int common[F_COUNT];
  char common_text[F_COUNT * 24]; /* their names in table order, comma separated ("": none) */
};

#define MAX_CASES 10000
/* The rules of rules.h visit at most this many points in all (shared evenly by the cases). */
#define CHECK_POINTS 1048576u

/* ---------------------------------------------------------------- small helpers */

static const char *kind_name(const as_sn *v) {
  return v->kind == AS_SN_SCALAR ? "a scalar" : v->kind == AS_SN_SEQ ? "a list" : "a mapping";
}

/* " (did you mean 'x'?)" when a candidate (from the NULL-terminated list cands, or the
 * labels of tab) is close to word, else "". */
static void suggest(const char *word, const char *const *cands, const as_enum_table *tab, char *buf,
                    size_t len) {
  int best = 99;
  const char *bw = NULL;
  size_t wl = strlen(word);
  int limit = wl <= 4 ? 1 : wl <= 8 ? 2 : 3;
  int count = 0;
  if (tab)
    count = tab->count;
  else
    while (cands[count]) count++;
  for (int i = 0; i < count; i++) {
    const char *c = tab ? tab->labels[i] : cands[i];
    int dist = as_spec_edit_distance(word, c);
    if (dist < best) {
      best = dist;
      bw = c;
    }
  }
  if (bw && best <= limit)
    snprintf(buf, len, " (did you mean '%s'?)", bw);
  else
    buf[0] = '\0';
}

/* A sweep key (not a member of a group such as init.data), or NULL. */
static const keydef *find_key(const char *name) {
  const keydef *k = as_param_find(name);
  return k && !(k->flags & AS_PF_INIT_PART) ? k : NULL;
}

static int in_list(const char *name, const char *const *list) {
  for (int i = 0; list[i]; i++)
    if (strcmp(list[i], name) == 0) return 1;
  return 0;
}

/* Unknown key message with the closest known key of this context. */
static void unknown_key(as_spec_cx *cx, const as_sn *k, const char *where, const char *const *list,
                        int with_axes) {
  const char *cands[F_COUNT + 16];
  int n = 0;
  for (int i = 0; list[i] && n < F_COUNT + 15; i++) cands[n++] = list[i];
  if (with_axes)
    for (int i = 0; i < F_COUNT; i++)
      if (!(as_params[i].flags & AS_PF_INIT_PART)) cands[n++] = as_params[i].key;
  cands[n] = NULL;
  char hint[96];
  suggest(k->text, cands, NULL, hint, sizeof hint);
  as_spec_note(cx, k->line, k->col, "unknown key '%s' in %s%s", k->text, where, hint);
}

/* A plain scalar as a number (YAML .inf/.nan spellings included). 1 on success. */
static int scalar_number(const as_sn *v, double *out) {
  if (v->kind != AS_SN_SCALAR || v->quoted) return 0;
  char buf[96];
  char k = as_spec_scalar_canon(v, buf, sizeof buf);
  if (k == 'n') {
    *out = strcmp(buf, "nan") == 0 ? NAN : strtod(buf, NULL);
    return 1;
  }
  if (k == 'i') {
    *out = strtod(buf, NULL);
    return 1;
  }
  return 0;
}

static int parse_num(as_spec_cx *cx, const as_sn *v, const keydef *k, double *out) {
  double x;
  if (!scalar_number(v, &x)) {
    if (v->kind == AS_SN_SCALAR)
      as_spec_note(cx, v->line, v->col, "%s: expected a number, got %s'%s'", k->key,
                   v->quoted ? "the string " : "", v->text);
    else
      as_spec_note(cx, v->line, v->col, "%s: expected a number, got %s", k->key, kind_name(v));
    return 0;
  }
  if (isnan(x)) {
    if (k->flags & R_NAN_OK) {
      *out = x;
      return 1;
    }
    as_spec_note(cx, v->line, v->col, "%s: NaN is not allowed", k->key);
    return 0;
  }
  if (isinf(x) && !(k->flags & R_INF_OK)) {
    as_spec_note(cx, v->line, v->col, "%s: must be finite, got %s", k->key, v->text);
    return 0;
  }
  int lo_bad = (k->flags & R_LO_OPEN) ? !(x > k->lo) : !(x >= k->lo);
  if (lo_bad || (x > k->hi && !(x == INFINITY && (k->flags & R_INF_OK)))) {
    char lo[32], hi[32];
    if (k->kind == AS_PK_INT || k->kind == AS_PK_I64) {
      snprintf(lo, sizeof lo, "%.0f", k->lo);
      snprintf(hi, sizeof hi, "%.0f", k->hi);
    } else {
      snprintf(lo, sizeof lo, "%g", k->lo);
      snprintf(hi, sizeof hi, "%g", k->hi);
    }
    if (k->hi >= BIG && lo_bad) /* an upper bound this large is only named when exceeded */
      as_spec_note(cx, v->line, v->col, "%s = %s is out of range: must be %s %s", k->key, v->text,
                   (k->flags & R_LO_OPEN) ? ">" : ">=", lo);
    else
      as_spec_note(cx, v->line, v->col, "%s = %s is out of range: must be in %s%s, %s]", k->key,
                   v->text, (k->flags & R_LO_OPEN) ? "(" : "[", lo, hi);
    return 0;
  }
  *out = x;
  return 1;
}

static int parse_int(as_spec_cx *cx, const as_sn *v, const keydef *k, double *out) {
  double x;
  if (!scalar_number(v, &x) || !isfinite(x) || x != floor(x)) {
    if (v->kind == AS_SN_SCALAR)
      as_spec_note(cx, v->line, v->col, "%s: expected an integer, got %s'%s'", k->key,
                   v->quoted ? "the string " : "", v->text);
    else
      as_spec_note(cx, v->line, v->col, "%s: expected an integer, got %s", k->key, kind_name(v));
    return 0;
  }
  return parse_num(cx, v, k, out);
}

static int parse_bool(as_spec_cx *cx, const as_sn *v, const char *name, int *out) {
  char buf[96];
  if (v->kind == AS_SN_SCALAR && as_spec_scalar_canon(v, buf, sizeof buf) == 'b') {
    *out = buf[0] == 't';
    return 1;
  }
  as_spec_note(cx, v->line, v->col, "%s: expected true or false, got %s%s%s", name,
               v->kind == AS_SN_SCALAR ? "'" : kind_name(v), v->kind == AS_SN_SCALAR ? v->text : "",
               v->kind == AS_SN_SCALAR ? "'" : "");
  return 0;
}

static int parse_enum(as_spec_cx *cx, const as_sn *v, const char *name, const as_enum_table *t,
                      int *out) {
  if (v->kind != AS_SN_SCALAR) {
    as_spec_note(cx, v->line, v->col, "%s: expected one of the %s labels, got %s", name,
                 t->type_name, kind_name(v));
    return 0;
  }
  int e = strlen(v->text) == v->len ? as_enum_parse(t, v->text) : -1;
  if (e < 0) {
    char hint[96], all[512];
    size_t used = 0;
    all[0] = '\0';
    for (int i = 0; i < t->count && used + 2 < sizeof all; i++) {
      int w = snprintf(all + used, sizeof all - used, "%s%s", i ? ", " : "", t->labels[i]);
      if (w < 0) break;
      used += (size_t)w;
    }
    suggest(v->text, NULL, t, hint, sizeof hint);
    as_spec_note(cx, v->line, v->col, "%s: unknown value '%s'%s; one of: %s", name, v->text, hint,
                 all);
    return 0;
  }
  *out = e;
  return 1;
}

static int parse_str(as_spec_cx *cx, const as_sn *v, const char *name, const char **out) {
  if (v->kind != AS_SN_SCALAR) {
    as_spec_note(cx, v->line, v->col, "%s: expected a string, got %s", name, kind_name(v));
    return 0;
  }
  if (v->len == 0 || strlen(v->text) != v->len) {
    as_spec_note(cx, v->line, v->col, "%s: expected a non-empty string without NUL characters",
                 name);
    return 0;
  }
  *out = v->text;
  return 1;
}

/* A matrix written as a list of rows (each a list of finite numbers), rectangular. */
static int parse_matrix(as_spec_cx *cx, const as_sn *v, const char *name, double **data, int *rows,
                        int *cols) {
  if (v->kind != AS_SN_SEQ || v->n == 0) {
    as_spec_note(cx, v->line, v->col, "%s: expected a matrix (a non-empty list of rows), got %s",
                 name, v->kind == AS_SN_SEQ ? "an empty list" : kind_name(v));
    return 0;
  }
  int r = v->n, c = -1, ok = 1;
  for (int i = 0; i < r; i++) {
    const as_sn *row = v->items[i];
    if (row->kind != AS_SN_SEQ || row->n == 0) {
      as_spec_note(cx, row->line, row->col, "%s: row %d must be a non-empty list of numbers", name,
                   i + 1);
      return 0;
    }
    if (c < 0) c = row->n;
    if (row->n != c) {
      as_spec_note(cx, row->line, row->col, "%s: row %d has %d entries, row 1 has %d", name, i + 1,
                   row->n, c);
      return 0;
    }
  }
  if ((double)r * (double)c > 65536.0 * 65536.0) {
    as_spec_note(cx, v->line, v->col, "%s: matrix too large", name);
    return 0;
  }
  double *m = as_arena_alloc(cx->arena, (size_t)r * (size_t)c * sizeof *m);
  if (!m) return 0;
  for (int i = 0; i < r; i++)
    for (int j = 0; j < c; j++) {
      const as_sn *e = v->items[i]->items[j];
      double x;
      if (!scalar_number(e, &x) || !isfinite(x)) {
        as_spec_note(cx, e->line, e->col, "%s: entry (%d, %d) must be a finite number, got %s",
                     name, i + 1, j + 1, e->kind == AS_SN_SCALAR ? e->text : kind_name(e));
        ok = 0;
        continue;
      }
      m[(size_t)i * (size_t)c + (size_t)j] = x;
    }
  if (!ok) return 0;
  *data = m;
  *rows = r;
  *cols = c;
  return 1;
}

static int parse_value(as_spec_cx *cx, const keydef *k, const as_sn *v, sval *out);

/* The member key of a group for the member name written (`init: {scale: 2}` -> init_scale). */
static const keydef *group_member(const keydef *group, const char *member) {
  char name[64];
  snprintf(name, sizeof name, "%s_%s", group->key, member);
  return as_param_find(name);
}

static int parse_group(as_spec_cx *cx, const keydef *g, const as_sn *v, sinit **out) {
  sinit *in = as_arena_alloc(cx->arena, sizeof *in);
  if (!in) return 0;
  const keydef *kind = group_member(g, "kind");
  if (v->kind == AS_SN_SCALAR && kind) { /* shorthand: init: gauss */
    in->key[0] = kind;
    in->n = 1;
    if (!parse_value(cx, kind, v, &in->val[0])) return 0;
    *out = in;
    return 1;
  }
  if (v->kind != AS_SN_MAP) {
    as_spec_note(cx, v->line, v->col, "%s: expected a mapping {kind, scale, ...}, got %s", g->key,
                 kind_name(v));
    return 0;
  }
  int ok = 1;
  for (int i = 0; i < v->n; i++) {
    const as_sn *k = v->items[2 * i], *x = v->items[2 * i + 1];
    if (k->kind != AS_SN_SCALAR) continue;
    const keydef *m = group_member(g, k->text);
    if (!m || in->n == MAX_MEMBERS) {
      /* The members are the keys named <group>_<member> in the table. */
      const char *members[MAX_MEMBERS + 1];
      int nm = 0;
      size_t gl = strlen(g->key);
      for (int j = 0; j < F_COUNT && nm < MAX_MEMBERS; j++)
        if (strncmp(as_params[j].key, g->key, gl) == 0 && as_params[j].key[gl] == '_')
          members[nm++] = as_params[j].key + gl + 1;
      members[nm] = NULL;
      unknown_key(cx, k, g->key, members, 0);
      ok = 0;
      continue;
    }
    in->key[in->n] = m;
    ok &= parse_value(cx, m, x, &in->val[in->n]);
    in->n++;
  }
  *out = in;
  return ok;
}

static int parse_value(as_spec_cx *cx, const keydef *k, const as_sn *v, sval *out) {
  int e = 0, b = 0;
  out->node = v;
  switch (k->kind) {
  case AS_PK_NUM:
    return parse_num(cx, v, k, &out->num);
  case AS_PK_INT:
  case AS_PK_I64:
    return parse_int(cx, v, k, &out->num);
  case AS_PK_BOOL:
    if (!parse_bool(cx, v, k->key, &b)) return 0;
    out->num = b;
    return 1;
  case AS_PK_ENUM:
    if (!parse_enum(cx, v, k->key, k->etab, &e)) return 0;
    out->num = e;
    return 1;
  case AS_PK_TEXT:
    out->id = -1;
    return parse_str(cx, v, k->key, &out->str);
  case AS_PK_MAT:
    if (!parse_matrix(cx, v, k->key, &out->mat, &out->rows, &out->cols)) return 0;
    out->hash = as_matref_hash(out->mat, out->rows, out->cols);
    return 1;
  case AS_PK_GROUP:
    return parse_group(cx, k, v, &out->init);
  }
  return 0;
}

/* ---------------------------------------------------------------- sweep algebra */

static term *new_term(as_spec_cx *cx, tkind kind, int n) {
  term *t = as_arena_alloc(cx->arena, sizeof *t);
  if (!t) return NULL;
  t->kind = kind;
  t->n = n;
  if (n > 0) {
    t->kids = as_arena_alloc(cx->arena, (size_t)n * sizeof *t->kids);
    if (!t->kids) return NULL;
  }
  return t;
}

/* An axis term from `key: value`. A list is an axis of several values; a scalar (or, for
 * matrices, one matrix; for init, one mapping) is a fixed value. */
static term *parse_axis(as_spec_cx *cx, const keydef *k, const as_sn *knode, const as_sn *v) {
  int is_list = 0;
  if (k->kind == AS_PK_MAT) {
    is_list = v->kind == AS_SN_SEQ && v->n > 0 && v->items[0]->kind == AS_SN_SEQ &&
              v->items[0]->n > 0 && v->items[0]->items[0]->kind == AS_SN_SEQ;
  } else {
    is_list = v->kind == AS_SN_SEQ;
  }
  if (is_list && v->n == 0) {
    as_spec_note(cx, v->line, v->col, "%s: empty axis (a list needs at least one value)", k->key);
    return NULL;
  }
  if (!is_list && v->kind == AS_SN_MAP && k->kind != AS_PK_GROUP) {
    as_spec_note(cx, v->line, v->col, "%s: expected a value or a list of values, got a mapping",
                 k->key);
    return NULL;
  }
  int n = is_list ? v->n : 1;
  axis *ax = as_arena_alloc(cx->arena, sizeof *ax);
  sval *vals = as_arena_alloc(cx->arena, (size_t)n * sizeof *vals);
  term *t = new_term(cx, T_AXIS, 0);
  if (!ax || !vals || !t) return NULL;
  int ok = 1;
  for (int i = 0; i < n; i++) {
    const as_sn *x = is_list ? v->items[i] : v;
    if (is_list && x->kind == AS_SN_SEQ && k->kind != AS_PK_MAT) {
      as_spec_note(cx, x->line, x->col, "%s: a list inside an axis (nested lists are not values)",
                   k->key);
      ok = 0;
      continue;
    }
    ok &= parse_value(cx, k, x, &vals[i]);
  }
  if (!ok) return NULL;
  ax->key = k;
  ax->knode = knode;
  ax->n = (uint64_t)n;
  ax->vals = vals;
  t->ax = ax;
  t->len = (uint64_t)n;
  return t;
}

static char *join_names(as_spec_cx *cx, const char *a, const char *b) {
  size_t la = a ? strlen(a) : 0, lb = b ? strlen(b) : 0;
  char *s = as_arena_alloc(cx->arena, la + lb + 2);
  if (!s) return NULL;
  if (la && lb)
    snprintf(s, la + lb + 2, "%s/%s", a, b);
  else
    snprintf(s, la + lb + 2, "%s", la ? a : (lb ? b : ""));
  return s;
}

static int mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
  if (a != 0 && b > (uint64_t)INT64_MAX / a) return 0;
  *out = a * b;
  return 1;
}

/* Product of terms (first slowest); NULL with a diagnostic at `at` on overflow. */
static term *make_product(as_spec_cx *cx, term **ts, int n, const as_sn *at) {
  if (n == 1) return ts[0];
  term *t = new_term(cx, T_PROD, n);
  if (!t) return NULL;
  t->len = 1;
  for (int i = 0; i < n; i++) {
    t->kids[i] = ts[i];
    if (!mul_ok(t->len, ts[i]->len, &t->len)) {
      as_spec_note(cx, at->line, at->col, "the sweep has too many points (more than 2^63)");
      return NULL;
    }
  }
  return t;
}

static int eval_node(as_spec_cx *cx, const as_sn *node, caselist *out);

/* Cartesian product of case lists (a product distributes over concat). */
static int cross(as_spec_cx *cx, caselist *lists, int nl, const as_sn *at, caselist *out) {
  uint64_t count = 1;
  for (int i = 0; i < nl; i++)
    if (!mul_ok(count, (uint64_t)lists[i].n, &count) || count > MAX_CASES) {
      as_spec_note(cx, at->line, at->col, "more than %d cases", MAX_CASES);
      return 0;
    }
  out->n = (int)count;
  out->c = as_arena_alloc(cx->arena, (size_t)count * sizeof *out->c);
  term **ts = as_arena_alloc(cx->arena, (size_t)(nl > 0 ? nl : 1) * sizeof *ts);
  if (!out->c || !ts) return 0;
  for (uint64_t m = 0; m < count; m++) {
    uint64_t rem = m;
    char *name = NULL;
    int cnt = 0;
    /* Mixed radix over the lists, the first list slowest. */
    int idx[64];
    for (int i = nl - 1; i >= 0; i--) {
      idx[i < 64 ? i : 63] = (int)(rem % (uint64_t)lists[i].n);
      rem /= (uint64_t)lists[i].n;
    }
    for (int i = 0; i < nl && i < 64; i++) {
      scase *c = &lists[i].c[idx[i]];
      ts[cnt++] = c->t;
      name = join_names(cx, name, c->name);
      if (!name) return 0;
    }
    out->c[m].name = name;
    out->c[m].t = cnt == 0 ? NULL : make_product(cx, ts, cnt, at);
    if (!out->c[m].t) return 0;
  }
  return 1;
}

static int eval_list(as_spec_cx *cx, const char *op, const as_sn *v, caselist **lists) {
  if (v->kind != AS_SN_SEQ || v->n == 0) {
    as_spec_note(cx, v->line, v->col, "%s: expected a non-empty list of sub-sweeps, got %s", op,
                 v->kind == AS_SN_SEQ ? "an empty list" : kind_name(v));
    return 0;
  }
  if (v->n > 64) {
    as_spec_note(cx, v->line, v->col, "%s: at most 64 sub-sweeps", op);
    return 0;
  }
  caselist *ls = as_arena_alloc(cx->arena, (size_t)v->n * sizeof *ls);
  if (!ls) return 0;
  int ok = 1;
  for (int i = 0; i < v->n; i++) ok &= eval_node(cx, v->items[i], &ls[i]);
  *lists = ls;
  return ok;
}

static int eval_struct(as_spec_cx *cx, const as_sn *k, const as_sn *v, caselist *out) {
  caselist *ls = NULL;
  if (!eval_list(cx, k->text, v, &ls)) return 0;
  if (strcmp(k->text, "product") == 0) return cross(cx, ls, v->n, k, out);
  if (strcmp(k->text, "concat") == 0) {
    int total = 0;
    for (int i = 0; i < v->n; i++) total += ls[i].n;
    if (total > MAX_CASES) {
      as_spec_note(cx, k->line, k->col, "more than %d cases", MAX_CASES);
      return 0;
    }
    out->n = total;
    out->c = as_arena_alloc(cx->arena, (size_t)total * sizeof *out->c);
    if (!out->c) return 0;
    int m = 0;
    for (int i = 0; i < v->n; i++)
      for (int j = 0; j < ls[i].n; j++) out->c[m++] = ls[i].c[j];
    return 1;
  }
  /* zip: each sub-sweep one case, all of the same length. */
  term *t = new_term(cx, T_ZIP, v->n);
  if (!t) return 0;
  char *name = NULL;
  int ok = 1;
  for (int i = 0; i < v->n; i++) {
    const as_sn *item = v->items[i];
    if (ls[i].n != 1) {
      as_spec_note(cx, item->line, item->col,
                   "zip: a sub-sweep of a zip must be one case (concat is not allowed inside zip)");
      ok = 0;
      continue;
    }
    t->kids[i] = ls[i].c[0].t;
    name = join_names(cx, name, ls[i].c[0].name);
    if (!name) return 0;
    if (i > 0 && t->kids[i]->len != t->kids[0]->len) {
      as_spec_note(cx, item->line, item->col,
                   "zip: lengths differ: this sub-sweep has %llu points, the first (at %d:%d) "
                   "has %llu",
                   (unsigned long long)t->kids[i]->len, v->items[0]->line, v->items[0]->col,
                   (unsigned long long)t->kids[0]->len);
      ok = 0;
    }
  }
  if (!ok) return 0;
  t->len = t->kids[0]->len;
  out->n = 1;
  out->c = as_arena_alloc(cx->arena, sizeof *out->c);
  if (!out->c) return 0;
  out->c[0].name = name;
  out->c[0].t = t;
  return 1;
}

static void mark_zipped(term *t) {
  if (t->kind == T_AXIS) {
    if (t->ax->n > 1) t->ax->zipped = 1;
    return;
  }
  for (int i = 0; i < t->n; i++) mark_zipped(t->kids[i]);
}

/* A node of the sweep algebra -> its cases. */
static int eval_node(as_spec_cx *cx, const as_sn *node, caselist *out) {
  memset(out, 0, sizeof *out);
  if (node->kind != AS_SN_MAP) {
    as_spec_note(cx, node->line, node->col,
                 "a sub-sweep must be a mapping (axes, or product/zip/concat), got %s%s",
                 kind_name(node), node->kind == AS_SN_SEQ ? " (write concat: [...])" : "");
    return 0;
  }
  term *axes[F_COUNT];
  int na = 0, ok = 1;
  const char *name = NULL;
  const as_sn *sk = NULL, *sv = NULL;
  for (int i = 0; i < node->n; i++) {
    const as_sn *k = node->items[2 * i], *v = node->items[2 * i + 1];
    if (k->kind != AS_SN_SCALAR) {
      ok = 0;
      continue;
    }
    const keydef *kd = find_key(k->text);
    if (kd) {
      int dup = 0;
      for (int j = 0; j < na; j++) dup |= axes[j]->ax->key == kd;
      if (dup) { /* reported by the duplicate-key check */
        ok = 0;
        continue;
      }
      term *t = parse_axis(cx, kd, k, v);
      if (!t) {
        ok = 0;
        continue;
      }
      axes[na++] = t;
    } else if (strcmp(k->text, "case") == 0) {
      ok &= parse_str(cx, v, "case", &name);
    } else if (in_list(k->text, struct_keys)) {
      if (sk) {
        as_spec_note(cx, k->line, k->col,
                     "'%s' and '%s' (at %d:%d) in one mapping: nest them (a mapping takes one "
                     "of product, zip, concat)",
                     k->text, sk->text, sk->line, sk->col);
        ok = 0;
        continue;
      }
      sk = k;
      sv = v;
    } else {
      unknown_key(cx, k, "a sweep", struct_keys, 1);
      ok = 0;
    }
  }
  caselist sub = {0, NULL};
  if (sk) ok &= eval_struct(cx, sk, sv, &sub);
  if (!ok) return 0;
  /* The mapping's own axes vary in schema order (first slowest), then the structure. */
  for (int i = 1; i < na; i++)
    for (int j = i; j > 0 && key_id(axes[j]->ax->key) < key_id(axes[j - 1]->ax->key); j--) {
      term *tmp = axes[j];
      axes[j] = axes[j - 1];
      axes[j - 1] = tmp;
    }
  caselist own;
  own.n = 1;
  own.c = as_arena_alloc(cx->arena, sizeof *own.c);
  if (!own.c) return 0;
  own.c[0].name = NULL;
  if (na == 0) {
    own.c[0].t = new_term(cx, T_PROD, 0);
    if (!own.c[0].t) return 0;
    own.c[0].t->len = 1;
  } else {
    own.c[0].t = make_product(cx, axes, na, node);
    if (!own.c[0].t) return 0;
  }
  if (sk) {
    if (strcmp(sk->text, "zip") == 0) mark_zipped(sub.c[0].t);
    caselist two[2] = {own, sub};
    if (!cross(cx, two, 2, node, out)) return 0;
  } else {
    *out = own;
  }
  if (name)
    for (int i = 0; i < out->n; i++) {
      out->c[i].name = join_names(cx, name, out->c[i].name);
      if (!out->c[i].name) return 0;
    }
  return 1;
}

/* ---------------------------------------------------------------- resolving a point */

typedef struct point {
  as_trial t;
  const as_sn *src[F_COUNT]; /* node that set each key (NULL: default) */
} point;

/* Writes value v of key k into its slot of the trial (the table's `slot` column). */
static void set_slot(point *pt, const keydef *k, const sval *v) {
  char *slot = (char *)&pt->t + k->offset;
  pt->src[key_id(k)] = v->node;
  switch (k->kind) {
  case AS_PK_NUM:
    memcpy(slot, &v->num, sizeof v->num);
    break;
  case AS_PK_INT:
  case AS_PK_ENUM: {
    int x = (int)v->num;
    memcpy(slot, &x, sizeof x);
    break;
  }
  case AS_PK_I64: {
    int64_t x = (int64_t)v->num;
    memcpy(slot, &x, sizeof x);
    break;
  }
  case AS_PK_BOOL: {
    bool x = v->num != 0;
    memcpy(slot, &x, sizeof x);
    break;
  }
  case AS_PK_TEXT: {
    as_text x = {v->str, v->id};
    memcpy(slot, &x, sizeof x);
    break;
  }
  case AS_PK_MAT: {
    as_matref x = {v->mat, v->rows, v->cols, v->hash};
    memcpy(slot, &x, sizeof x);
    break;
  }
  case AS_PK_GROUP:
    for (int i = 0; i < v->init->n; i++) set_slot(pt, v->init->key[i], &v->init->val[i]);
    break;
  }
}

/* The enum and int slots are written as int: the trial's enums must be int sized. */
_Static_assert(sizeof(as_vfamily) == sizeof(int) && sizeof(as_init) == sizeof(int) &&
                   sizeof(as_tseed) == sizeof(int),
               "enum slots are written as int");

static void assign(point *pt, const axis *ax, uint64_t j) {
  set_slot(pt, ax->key, &ax->vals[j]);
}

static void walk(point *pt, const term *t, uint64_t q) {
  switch (t->kind) {
  case T_AXIS:
    assign(pt, t->ax, q % t->ax->n);
    break;
  case T_ZIP:
    for (int i = 0; i < t->n; i++) walk(pt, t->kids[i], q);
    break;
  case T_PROD:
    for (int i = t->n - 1; i >= 0; i--) {
      uint64_t len = t->kids[i]->len;
      walk(pt, t->kids[i], q % len);
      q /= len;
    }
    break;
  }
}

#define SRC(key) pt->src[AS_P_##key]

/* Point q of case c, with the inferences documented in docs/spec.md. */
static void resolve_point(const as_spec *s, int c, uint64_t q, point *pt) {
  memset(pt, 0, sizeof *pt);
  as_trial_defaults(&pt->t);
  for (int i = 0; i < s->ndefaults; i++) assign(pt, s->defaults[i], 0);
  walk(pt, s->cases[c].t, q);
  as_trial *t = &pt->t;
  as_triple_spec *tr = &t->triple;
  if (tr->V.data && !SRC(vfamily)) tr->vfamily = AS_V_EXPLICIT;
  if ((tr->M.data || tr->Q.data || tr->K.data) && !SRC(mfamily)) tr->mfamily = AS_M_EXPLICIT;
  /* With several heads an explicit matrix may stack one per head: d is its width. */
  const int by_cols = t->blocks.heads > 1;
  if (tr->V.data && !SRC(d)) t->d = by_cols ? tr->V.cols : tr->V.rows;
  if (!SRC(d) && !tr->V.data && tr->M.data) t->d = by_cols ? tr->M.cols : tr->M.rows;
  if (!SRC(d) && (tr->vfamily == AS_V_SCALAR || tr->mfamily == AS_M_SCALAR)) t->d = 1;
  if (tr->Q.data && !SRC(m_rows))
    tr->m_rows =
        by_cols && tr->Q.rows % t->blocks.heads == 0 ? tr->Q.rows / t->blocks.heads : tr->Q.rows;
  if (t->init.data.data && !SRC(init_kind)) t->init.kind = AS_INIT_EXPLICIT;
  if (t->init.file.text && !SRC(init_kind)) t->init.kind = AS_INIT_FILE;
  if (t->init.data.data && !SRC(n)) t->n = t->init.data.rows;
  if (t->attn.norm == AS_NORM_SPHERE && !SRC(vars)) t->integ.vars = AS_VARS_X;
  t->case_id = (uint32_t)c;
  t->case_name = s->cases[c].name;
  t->master_seed = s->seed;
  t->output = s->output;
}

/* ---------------------------------------------------------------- cross checks */

static const as_sn *src_or(const point *pt, as_param_id a, as_param_id b) {
  return pt->src[a] ? pt->src[a] : pt->src[b];
}

#define DIAG_AT(node, ...)                                                             \
  do {                                                                                 \
    const as_sn *at_ = (node);                                                         \
    as_spec_note(cx, at_ ? at_->line : fallback->line, at_ ? at_->col : fallback->col, \
                 __VA_ARGS__);                                                         \
  } while (0)

/* The machine, not the trial: the workspace of transformer blocks must fit this machine's
 * memory (not a rule of rules.h: it depends on where validate runs). */
static void check_machine(as_spec_cx *cx, const point *pt, const as_sn *fallback,
                          const char *cname) {
  const as_trial *t = &pt->t;
  if (as_blocks_kind_of(t) == AS_BLOCKS_OFF) return;
  long nb = as_blocks_count(t);
  if (nb > AS_MAX_BLOCKS) return; /* rule blocks_count */
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  double mem = pages > 0 && psize > 0 ? (double)pages * (double)psize : INFINITY;
  double need = as_blocks_bytes(t) + 8.0 * (3.0 * t->n * (double)t->n + 20.0 * t->n * (double)t->d);
  if (need > mem)
    DIAG_AT(
        src_or(pt, AS_P_heads, AS_P_n),
        "case '%s': the workspace of n = %d, d = %d, heads %d, %ld weight blocks needs %.3g GB, "
        "more than this machine's %.3g GB",
        cname, t->n, t->d, t->blocks.heads, nb, need / 1e9, mem / 1e9);
}

/* One point: every rule of rules.h (reported at the first of the rule's keys the spec writes),
 * the machine's limits, and which written values the point applies (keys_unused below). */
static void check_point(as_spec_cx *cx, const point *pt, const as_sn *fallback, const char *cname,
                        const as_rule_env *env) {
  const as_trial *t = &pt->t;
  for (int r = 0; r < AS_RULE_COUNT; r++) {
    as_rule_hit h;
    if (!as_rule_broken((as_rule_id)r, t, env, &h)) continue;
    const as_sn *at = NULL;
    for (int k = 0; k < h.nkeys && !at; k++) at = pt->src[h.keys[k]];
    DIAG_AT(at, "case '%s': %s", cname, h.message);
  }
  check_machine(cx, pt, fallback, cname);
  for (int i = 0; i < AS_PARAM_COUNT; i++) {
    as_sn *v = (as_sn *)(uintptr_t)pt->src[i]; /* the arena's node: validation marks */
    if (!v) continue;
    v->given_key = i + 1;
    if (!v->applied && as_params[i].applies(t)) v->applied = 1;
  }
}

/* One policy for a key given where it does not apply (docs/spec.md, "Keys that do not
 * apply"): a value written in the spec is an error when no trial that takes its value from
 * there applies the key (the table's `applies`). So `method: [rk4, dopri5]` with `rtol` is
 * valid (the dopri5 trials read it) and `rtol` with rk4 alone is not. Called only when every
 * point was checked. */
static void unused_value(as_spec_cx *cx, const sval *v) {
  const as_sn *n = v->node;
  if (n && n->given_key > 0 && !n->applied) {
    const as_param *k = &as_params[n->given_key - 1];
    as_spec_note(cx, n->line, n->col,
                 "%s has no effect with these settings (%s): no trial of the sweep reads the "
                 "value given here",
                 k->key, k->doc);
  }
  if (v->init)
    for (int m = 0; m < v->init->n; m++) unused_value(cx, &v->init->val[m]);
}

static void unused_term(as_spec_cx *cx, const term *t) {
  if (t->kind == T_AXIS) {
    /* A zipped list needs a value at every position: where the trials of a position ignore
     * the key, its value only lines the zip up (`zip: [{attention: [softmax, sinkhorn]},
     * {sinkhorn_iters: [1, 50]}]`), valid when the key applies at another position of the
     * same list; a zipped list no trial reads is refused value by value as any other. */
    int lined_up = 0;
    for (uint64_t j = 0; t->ax->zipped && j < t->ax->n && !lined_up; j++) {
      const as_sn *n = t->ax->vals[j].node;
      lined_up = n && n->given_key > 0 && n->applied;
    }
    for (uint64_t j = 0; j < t->ax->n; j++) {
      const as_sn *n = t->ax->vals[j].node;
      if (!lined_up || (n && n->applied)) unused_value(cx, &t->ax->vals[j]);
    }
    return;
  }
  for (int i = 0; i < t->n; i++) unused_term(cx, t->kids[i]);
}

/* ---------------------------------------------------------------- top level */

static int parse_output(as_spec_cx *cx, const as_sn *v, as_output_spec *o) {
  if (v->kind != AS_SN_MAP) {
    as_spec_note(cx, v->line, v->col, "output: expected a mapping, got %s", kind_name(v));
    return 0;
  }
  int ok = 1;
  for (int i = 0; i < v->n; i++) {
    const as_sn *k = v->items[2 * i], *x = v->items[2 * i + 1];
    if (k->kind != AS_SN_SCALAR) continue;
    int b = 0;
    if (strcmp(k->text, "snapshots") == 0) {
      if (x->kind != AS_SN_SEQ) {
        as_spec_note(cx, x->line, x->col, "output.snapshots: expected a list of times, got %s",
                     kind_name(x));
        ok = 0;
        continue;
      }
      if (x->n > AS_MAX_SNAPSHOTS) {
        as_spec_note(cx, x->line, x->col, "output.snapshots: at most %d times, got %d",
                     AS_MAX_SNAPSHOTS, x->n);
        ok = 0;
        continue;
      }
      keydef tkb;
      /* > 0: the integration stores states after t = 0 (the initial tokens: output.initial) */
      const keydef *tk = setting(&tkb, "output.snapshots", AS_PK_NUM, 0, BIG, R_LO_OPEN);
      for (int j = 0; j < x->n; j++) {
        double tv = 0;
        if (!parse_num(cx, x->items[j], tk, &tv)) {
          ok = 0;
          continue;
        }
        if (j > 0 && !(tv > o->snapshot_times[j - 1])) {
          as_spec_note(cx, x->items[j]->line, x->items[j]->col,
                       "output.snapshots: times must increase (%g after %g)", tv,
                       o->snapshot_times[j - 1]);
          ok = 0;
        }
        o->snapshot_times[j] = tv;
      }
      o->n_snapshots = x->n;
    } else if (in_list(k->text, output_keys)) {
      if (!parse_bool(cx, x, k->text, &b)) {
        ok = 0;
        continue;
      }
      if (strcmp(k->text, "initial") == 0) o->initial = b;
      if (strcmp(k->text, "final") == 0) o->final = b;
      if (strcmp(k->text, "attention") == 0) o->attention = b;
      if (strcmp(k->text, "matrices") == 0) o->matrices = b;
    } else {
      unknown_key(cx, k, "output", output_keys, 0);
      ok = 0;
    }
  }
  return ok;
}

static void collect_axes(as_spec_cx *cx, as_spec *s, const term *t, int c, const as_sn **seen,
                         const char *cname) {
  if (t->kind == T_AXIS) {
    const axis *ax = t->ax;
    int id = key_id(ax->key);
    /* The same key twice in one case: the later one would silently win. */
    if (seen[id] && seen[id] != ax->knode)
      as_spec_note(cx, ax->knode->line, ax->knode->col,
                   "'%s' is set twice in case '%s' (also at %d:%d)", ax->key->key, cname,
                   seen[id]->line, seen[id]->col);
    seen[id] = ax->knode;
    if (ax->n > 1 && s) {
      s->axes[s->naxes].case_id = c;
      s->axes[s->naxes].ax = ax;
      s->naxes++;
    }
    return;
  }
  for (int i = 0; i < t->n; i++) collect_axes(cx, s, t->kids[i], c, seen, cname);
}

/* Gives value v of TEXT key k its label id, adding its text to the key's labels. */
static void label_value(as_spec *s, const keydef *k, sval *v) {
  int id = key_id(k);
  for (int i = 0; i < s->nlabels[id]; i++)
    if (strcmp(s->labels[id][i], v->str) == 0) {
      v->id = i;
      return;
    }
  if (s->nlabels[id] == s->caplabels[id]) {
    int cap = s->caplabels[id] ? 2 * s->caplabels[id] : 8;
    const char **nl = as_arena_alloc(&s->arena, (size_t)cap * sizeof *nl);
    if (!nl) return;
    if (s->nlabels[id]) memcpy(nl, s->labels[id], (size_t)s->nlabels[id] * sizeof *nl);
    s->labels[id] = nl;
    s->caplabels[id] = cap;
  }
  v->id = s->nlabels[id];
  s->labels[id][s->nlabels[id]++] = v->str;
}

static void label_axis(as_spec *s, const axis *ax) {
  for (uint64_t j = 0; j < ax->n; j++) {
    sval *v = &ax->vals[j];
    if (ax->key->kind == AS_PK_TEXT) label_value(s, ax->key, v);
    if (ax->key->kind == AS_PK_GROUP)
      for (int m = 0; m < v->init->n; m++)
        if (v->init->key[m]->kind == AS_PK_TEXT) label_value(s, v->init->key[m], &v->init->val[m]);
  }
}

static void label_term(as_spec *s, const term *t) {
  if (t->kind == T_AXIS) {
    label_axis(s, t->ax);
    return;
  }
  for (int i = 0; i < t->n; i++) label_term(s, t->kids[i]);
}

static int count_axes(const term *t) {
  if (t->kind == T_AXIS) return t->ax->n > 1;
  int n = 0;
  for (int i = 0; i < t->n; i++) n += count_axes(t->kids[i]);
  return n;
}

/* `defaults:` fixed values of any axis key, which the cases may override. */
static void parse_defaults(as_spec_cx *cx, as_spec *s, const as_sn *v) {
  if (v->kind != AS_SN_MAP) {
    as_spec_note(cx, v->line, v->col, "defaults: expected a mapping, got %s", kind_name(v));
    return;
  }
  for (int i = 0; i < v->n; i++) {
    const as_sn *k = v->items[2 * i], *x = v->items[2 * i + 1];
    if (k->kind != AS_SN_SCALAR) continue;
    const keydef *kd = find_key(k->text);
    if (!kd) {
      static const char *const none[] = {NULL};
      unknown_key(cx, k, "defaults", none, 1);
      continue;
    }
    int dup = 0;
    for (int j = 0; j < s->ndefaults; j++) dup |= s->defaults[j]->key == kd;
    if (dup) continue; /* reported by the duplicate-key check */
    term *t = parse_axis(cx, kd, k, x);
    if (!t) continue;
    if (t->len != 1) {
      as_spec_note(cx, x->line, x->col,
                   "defaults: '%s' takes one value here (write axes inside sweep:)", kd->key);
      continue;
    }
    int j = s->ndefaults++; /* keep them in schema order, whatever the written order */
    while (j > 0 && key_id(s->defaults[j - 1]->key) > key_id(kd)) {
      s->defaults[j] = s->defaults[j - 1];
      j--;
    }
    s->defaults[j] = t->ax;
  }
}

/* `spectral_grid: PxQ`, the BLACS grid of every large-d analysis (docs/spec.md). The shapes
 * are those of as_pspectral_grid_ok (par/pspectral.c, which io cannot call): P, Q >= 1, at
 * most 4096 processes, and no one-dimensional grid of more than 2 (pdhseqr deadlocks there).
 * tests/mpi/test_pspectral_grids.c checks that the two rules agree. */
static void parse_grid(as_spec_cx *cx, const as_sn *v, int grid[2]) {
  const char *t = v->kind == AS_SN_SCALAR ? v->text : "";
  long side[2] = {0, 0};
  const char *c = t;
  int ok = v->kind == AS_SN_SCALAR;
  for (int k = 0; k < 2 && ok; k++) {
    int digits = 0;
    for (; *c >= '0' && *c <= '9' && digits < 6; c++, digits++) side[k] = 10 * side[k] + (*c - '0');
    ok = digits > 0 && digits < 6 && (k == 1 ? *c == '\0' : (*c == 'x' || *c == 'X'));
    if (ok && k == 0) c++;
  }
  int p = (int)side[0], q = (int)side[1];
  if (!ok) {
    as_spec_note(cx, v->line, v->col,
                 "spectral_grid: expected ROWSxCOLUMNS (e.g. 1x1, 1x2, 2x2), got %s%s%s",
                 v->kind == AS_SN_SCALAR ? "'" : kind_name(v), t,
                 v->kind == AS_SN_SCALAR ? "'" : "");
  } else if (p < 1 || q < 1 || (long)p * q > 4096) {
    as_spec_note(cx, v->line, v->col,
                 "spectral_grid %dx%d: both sides must be >= 1 and the grid at most 4096 processes",
                 p, q);
  } else if ((p == 1 || q == 1) && p * q > 2) {
    as_spec_note(cx, v->line, v->col,
                 "spectral_grid %dx%d: ScaLAPACK's pdhseqr deadlocks on one-dimensional grids of "
                 "more than 2 processes; use 1x1, 1x2, 2x1 or P x Q with P, Q >= 2 (e.g. 2x%d)",
                 p, q, (p * q + 1) / 2);
  } else {
    grid[0] = p;
    grid[1] = q;
  }
}

/* `common: [T, attention]` (or one key): sweep keys whose axes do not enter the random-stream
 * keys. */
static void parse_common(as_spec_cx *cx, as_spec *s, const as_sn *v) {
  int n = v->kind == AS_SN_SEQ ? v->n : 1;
  if (v->kind == AS_SN_MAP) {
    as_spec_note(cx, v->line, v->col, "common: expected a list of sweep keys, got a mapping");
    return;
  }
  for (int i = 0; i < n; i++) {
    const as_sn *k = v->kind == AS_SN_SEQ ? v->items[i] : v;
    if (k->kind != AS_SN_SCALAR) {
      as_spec_note(cx, k->line, k->col, "common: expected a sweep key, got %s", kind_name(k));
      continue;
    }
    const keydef *kd = find_key(k->text);
    if (!kd) {
      static const char *const none[] = {NULL};
      unknown_key(cx, k, "common", none, 1);
      continue;
    }
    if (s->common[key_id(kd)]) {
      as_spec_note(cx, k->line, k->col, "common: '%s' is listed twice", kd->key);
      continue;
    }
    s->common[key_id(kd)] = 1;
  }
  size_t used = 0;
  for (int i = 0; i < F_COUNT; i++)
    if (s->common[i]) {
      int w = snprintf(s->common_text + used, sizeof s->common_text - used, "%s%s", used ? "," : "",
                       as_params[i].key);
      if (w > 0) used += (size_t)w;
    }
}

/* Axes of several values in t: how many are common keys and the first of each sort. */
static void zip_axes(const as_spec *s, const term *t, int *nc, int *nn, const axis **c,
                     const axis **o) {
  if (t->kind == T_AXIS) {
    if (t->ax->n < 2) return;
    if (s->common[key_id(t->ax->key)]) {
      if ((*nc)++ == 0) *c = t->ax;
    } else if ((*nn)++ == 0) {
      *o = t->ax;
    }
    return;
  }
  for (int i = 0; i < t->n; i++) zip_axes(s, t->kids[i], nc, nn, c, o);
}

/* A zip walks its axes together: a common key zipped with a key that is not common would
 * share the draws of trials that differ in the latter. */
static void check_common_zips(as_spec_cx *cx, const as_spec *s, const term *t) {
  if (t->kind == T_AXIS) return;
  if (t->kind == T_ZIP) {
    int nc = 0, nn = 0;
    const axis *c = NULL, *o = NULL;
    zip_axes(s, t, &nc, &nn, &c, &o);
    if (nc > 0 && nn > 0)
      as_spec_note(cx, c->knode->line, c->knode->col,
                   "common: '%s' is zipped with '%s' (at %d:%d), which is not common: list both "
                   "in common, or neither",
                   c->key->key, o->key->key, o->knode->line, o->knode->col);
    return;
  }
  for (int i = 0; i < t->n; i++) check_common_zips(cx, s, t->kids[i]);
}

/* Point q of term t with the digits of the common axes set to 0 (the key of its draws). */
static uint64_t common_point(const as_spec *s, const term *t, uint64_t q) {
  switch (t->kind) {
  case T_AXIS:
    return s->common[key_id(t->ax->key)] ? 0 : q;
  case T_ZIP: { /* all common or none (check_common_zips) */
    int nc = 0, nn = 0;
    const axis *c = NULL, *o = NULL;
    zip_axes(s, t, &nc, &nn, &c, &o);
    return nc > 0 ? 0 : q;
  }
  case T_PROD: {
    uint64_t out = 0, mul = 1;
    for (int i = t->n - 1; i >= 0; i--) {
      uint64_t len = t->kids[i]->len;
      out += common_point(s, t->kids[i], q % len) * mul;
      q /= len;
      mul *= len;
    }
    return out;
  }
  }
  return q;
}

static void check_top(as_spec_cx *cx, as_spec *s, const as_sn *root, const as_sn **sweep,
                      const as_sn **reps_node) {
  for (int i = 0; i < root->n; i++) {
    const as_sn *k = root->items[2 * i], *v = root->items[2 * i + 1];
    if (k->kind != AS_SN_SCALAR) continue;
    const char *key = k->text;
    if (strcmp(key, "name") == 0) {
      const char *nm;
      if (parse_str(cx, v, "name", &nm)) s->name = nm;
    } else if (strcmp(key, "description") == 0) {
      if (v->kind != AS_SN_SCALAR)
        as_spec_note(cx, v->line, v->col, "description: expected a string, got %s", kind_name(v));
    } else if (strcmp(key, "seed") == 0) {
      char buf[96];
      char kd = v->kind == AS_SN_SCALAR ? as_spec_scalar_canon(v, buf, sizeof buf) : 's';
      const char *t = v->kind == AS_SN_SCALAR ? v->text : "";
      char *end = NULL;
      errno = 0;
      unsigned long long x =
          (kd == 'n' || kd == 'i') && t[0] >= '0' && t[0] <= '9' ? strtoull(t, &end, 10) : 0;
      if (!end || *end != '\0' || errno == ERANGE)
        as_spec_note(cx, v->line, v->col, "seed: expected an integer in [0, 2^64), got %s%s%s",
                     v->kind == AS_SN_SCALAR ? "'" : kind_name(v), t,
                     v->kind == AS_SN_SCALAR ? "'" : "");
      else
        s->seed = (uint64_t)x;
    } else if (strcmp(key, "replicates") == 0) {
      keydef rk;
      double x;
      if (parse_int(cx, v, setting(&rk, "replicates", AS_PK_INT, 1, INT32_MAX, 0), &x))
        s->replicates = (uint32_t)x;
      *reps_node = v;
    } else if (strcmp(key, "spectral_threshold") == 0) {
      keydef sk;
      double x;
      if (parse_int(cx, v, setting(&sk, "spectral_threshold", AS_PK_INT, 1, INT_MAX, 0), &x))
        s->spectral_threshold = (int)x;
    } else if (strcmp(key, "memory_limit") == 0) {
      keydef mk;
      parse_num(cx, v, setting(&mk, "memory_limit", AS_PK_NUM, 0, 1e18, 0), &s->memory_limit);
    } else if (strcmp(key, "spectral_grid") == 0) {
      parse_grid(cx, v, s->spectral_grid);
    } else if (strcmp(key, "flush_interval") == 0) {
      keydef fk;
      parse_num(cx, v, setting(&fk, "flush_interval", AS_PK_NUM, 0, 1e9, R_LO_OPEN),
                &s->flush_interval);
    } else if (strcmp(key, "output") == 0) {
      parse_output(cx, v, &s->output);
    } else if (strcmp(key, "sweep") == 0) {
      *sweep = v;
    } else if (strcmp(key, "defaults") == 0) {
      parse_defaults(cx, s, v);
    } else if (strcmp(key, "common") == 0) {
      parse_common(cx, s, v);
    } else {
      const char *cands[F_COUNT + 16];
      int n = 0;
      for (int j = 0; top_keys[j]; j++) cands[n++] = top_keys[j];
      cands[n] = NULL;
      char hint[96];
      suggest(key, cands, NULL, hint, sizeof hint);
      if (!hint[0] && (find_key(key) || in_list(key, struct_keys)))
        snprintf(hint, sizeof hint, " ('%s' belongs inside `sweep:`)", key);
      as_spec_note(cx, k->line, k->col, "unknown key '%s' at the top level%s", key, hint);
    }
  }
}

static int cmp_diag(const void *a, const void *b) {
  const as_spec_diag *x = a, *y = b;
  if (x->line != y->line) return x->line < y->line ? -1 : 1;
  if (x->col != y->col) return x->col < y->col ? -1 : 1;
  return x < y ? -1 : (x > y);
}

/* The TEXT keys that name input files: their labels resolve against the spec's directory. */
static int is_path_key(int i) {
  return as_params[i].kind == AS_PK_TEXT &&
         (strcmp(as_params[i].rname, "file") == 0 || strcmp(as_params[i].rname, "init_file") == 0);
}

/* The directory part of name ("." without a slash), made absolute; NULL when it does not
 * exist (a name that is no path, e.g. "<built-in default sweep>"). */
static const char *base_dir(as_arena *a, const char *name) {
  const char *slash = strrchr(name, '/');
  char dir[4096], real[4096];
  if (slash)
    snprintf(dir, sizeof dir, "%.*s", slash == name ? 1 : (int)(slash - name), name);
  else
    snprintf(dir, sizeof dir, ".");
  if (name[0] == '<' || !realpath(dir, real)) return NULL;
  return as_arena_strndup(a, real, strlen(real));
}

static void resolve_paths(as_spec *s) {
  for (int i = 0; i < F_COUNT; i++) {
    if (!is_path_key(i) || s->nlabels[i] == 0) continue;
    s->paths[i] = as_arena_alloc(&s->arena, (size_t)s->nlabels[i] * sizeof *s->paths[i]);
    for (int k = 0; s->paths[i] && k < s->nlabels[i]; k++) {
      const char *l = s->labels[i][k];
      if (l[0] == '/' || !s->base) {
        s->paths[i][k] = l;
        continue;
      }
      size_t n = strlen(s->base) + strlen(l) + 2;
      char *r = as_arena_alloc(&s->arena, n);
      if (r) snprintf(r, n, "%s/%s", strcmp(s->base, "/") == 0 ? "" : s->base, l);
      s->paths[i][k] = r ? r : l;
    }
  }
}

/* as_spec_parse; rules = 0 leaves out the rules of rules.h and the keys that do not apply
 * (as_spec_parse_unchecked, for tests of the defence). */
static as_status spec_parse(const char *text, size_t len, const char *name, as_spec_diags *diags,
                            int rules, as_spec **out) {
  as_status st = AS_OK;
  as_spec *s = NULL;
  as_spec_cx cx;
  memset(&cx, 0, sizeof cx);
  AS_CHECK(text != NULL && out != NULL, AS_ERR_ARG, "as_spec_parse: NULL text or out");
  if (!name) name = "<spec>";
  s = calloc(1, sizeof *s);
  AS_CHECK_ALLOC(s);
  cx.arena = &s->arena;
  s->replicates = 1;
  s->spectral_threshold = AS_SPECTRAL_THRESHOLD_DEFAULT;
  s->spectral_grid[0] = s->spectral_grid[1] = 1;
  s->flush_interval = 10.0;
  s->source = as_arena_strndup(&s->arena, name, strlen(name));
  s->text = as_arena_strndup(&s->arena, text, len);
  s->text_len = len;
  s->base = base_dir(&s->arena, name);
  AS_CHECK(!s->arena.nomem, AS_ERR_NOMEM, "out of memory reading the spec");
  s->name = s->source;

  as_sn *root = NULL;
  as_spec_tree_build(&cx, text, len, &root);
  if (root && !cx.diags.count) {
    as_spec_tree_check_keys(&cx, root);
    as_spec_tree_sha256(root, s->sha);
    if (root->kind != AS_SN_MAP) {
      as_spec_note(&cx, root->line, root->col,
                   "a spec must be a mapping (name:, sweep:, ...), "
                   "got %s",
                   kind_name(root));
    } else {
      const as_sn *sweep = NULL, *reps = NULL;
      check_top(&cx, s, root, &sweep, &reps);
      const as_sn *anchor = sweep ? sweep : root; /* place of whole-sweep problems */
      caselist cl = {0, NULL};
      int ok = 1;
      if (sweep) {
        ok = eval_node(&cx, sweep, &cl);
      } else { /* no sweep: one point with the defaults */
        cl.n = 1;
        cl.c = as_arena_alloc(&s->arena, sizeof *cl.c);
        term *t = new_term(&cx, T_PROD, 0);
        if (cl.c && t) {
          t->len = 1;
          cl.c[0].t = t;
        } else {
          ok = 0;
        }
      }
      if (ok && !s->arena.nomem) {
        s->ncases = cl.n;
        s->cases = cl.c;
        uint64_t P = 0;
        int nax = 0;
        for (int c = 0; c < cl.n; c++) {
          scase *sc = &cl.c[c];
          if (!sc->name || !sc->name[0]) {
            char buf[32];
            snprintf(buf, sizeof buf, "case%d", c);
            sc->name = as_arena_strndup(&s->arena, buf, strlen(buf));
            if (!sc->name) break;
          }
          sc->offset = P;
          if (sc->t->len > (uint64_t)INT64_MAX - P) {
            as_spec_note(&cx, anchor->line, anchor->col,
                         "the sweep has too many points (more than 2^63)");
            ok = 0;
            break;
          }
          P += sc->t->len;
          nax += count_axes(sc->t);
        }
        s->points = P;
        if (ok && !mul_ok(P, s->replicates, &s->trials)) {
          const as_sn *at = reps ? reps : anchor;
          as_spec_note(&cx, at->line, at->col,
                       "the sweep has too many trials: %u replicates x %llu points exceeds 2^63",
                       s->replicates, (unsigned long long)P);
          ok = 0;
        }
        s->axes = as_arena_alloc(&s->arena, (size_t)(nax > 0 ? nax : 1) * sizeof *s->axes);
        if (ok && s->axes) {
          for (int c = 0; c < cl.n; c++) {
            const as_sn *seen[F_COUNT] = {0};
            collect_axes(&cx, s, cl.c[c].t, c, seen, cl.c[c].name);
            check_common_zips(&cx, s, cl.c[c].t);
          }
          /* Labels: TEXT values in order of first appearance; case names must be unique
           * (they are the labels of the record's case_name). */
          for (int i = 0; i < s->ndefaults; i++) label_axis(s, s->defaults[i]);
          for (int c = 0; c < cl.n; c++) label_term(s, cl.c[c].t);
          s->case_names = as_arena_alloc(&s->arena, (size_t)cl.n * sizeof *s->case_names);
          for (int c = 0; c < cl.n && s->case_names; c++) {
            s->case_names[c] = cl.c[c].name;
            for (int e = 0; e < c; e++)
              if (strcmp(cl.c[e].name, cl.c[c].name) == 0) {
                as_spec_note(&cx, anchor->line, anchor->col,
                             "case name '%s' is used by cases %d and %d: give them different "
                             "`case:` names",
                             cl.c[c].name, e, c);
                break;
              }
          }
          /* The rules of rules.h on every point (up to CHECK_POINTS in all), then the
           * values no trial applies (only when every point was checked). */
          const as_rule_env env = {s->spectral_threshold};
          int all_points = 1;
          for (int c = 0; c < cl.n && !cx.full && rules; c++) {
            uint64_t L = cl.c[c].t->len;
            uint64_t per = CHECK_POINTS / (uint64_t)cl.n;
            if (per < 16) per = 16;
            uint64_t lim = L < per ? L : per;
            all_points &= lim == L;
            for (uint64_t q = 0; q < lim && !cx.full; q++) {
              point pt;
              resolve_point(s, c, q, &pt);
              check_point(&cx, &pt, anchor, cl.c[c].name, &env);
            }
          }
          if (all_points && !cx.full && rules) {
            for (int i = 0; i < s->ndefaults; i++)
              for (uint64_t j = 0; j < s->defaults[i]->n; j++)
                unused_value(&cx, &s->defaults[i]->vals[j]);
            for (int c = 0; c < cl.n; c++) unused_term(&cx, cl.c[c].t);
          }
        }
      }
    }
  } else if (!root && !cx.diags.count && !cx.nomem) {
    as_spec_note(&cx, 1, 1, "the spec is empty");
  }
  AS_CHECK(!cx.nomem && !s->arena.nomem, AS_ERR_NOMEM, "out of memory parsing %s", name);
  if (cx.diags.count > 0) {
    qsort(cx.diags.items, (size_t)cx.diags.count, sizeof *cx.diags.items, cmp_diag);
    const as_spec_diag *f = &cx.diags.items[0];
    st = as_error_set(AS_ERR_SPEC, __FILE__, __LINE__, __func__, "%s:%d:%d: %s%s", name, f->line,
                      f->col, f->message, cx.diags.count > 1 ? " (and more problems)" : "");
    goto cleanup;
  }
  resolve_paths(s);
  AS_CHECK(!s->arena.nomem, AS_ERR_NOMEM, "out of memory parsing %s", name);
  *out = s;
  s = NULL;
cleanup:
  if (diags) {
    as_spec_diags_free(diags);
    *diags = cx.diags;
  } else {
    as_spec_diags_free(&cx.diags);
  }
  as_spec_destroy(&s);
  return st;
}

as_status as_spec_parse(const char *text, size_t len, const char *name, as_spec_diags *diags,
                        as_spec **out) {
  return spec_parse(text, len, name, diags, 1, out);
}

as_status as_spec_parse_unchecked(const char *text, size_t len, const char *name,
                                  as_spec_diags *diags, as_spec **out) {
  return spec_parse(text, len, name, diags, 0, out);
}

as_status as_spec_read(const char *path, const volatile sig_atomic_t *stop, char **text,
                       size_t *len) {
  as_status st = AS_OK;
  int fd = -1;
  char *buf = NULL;
  size_t n = 0, cap = 0;
  AS_CHECK(path && text, AS_ERR_ARG, "as_spec_read: NULL argument");
  AS_CHECK(path[0] != '\0', AS_ERR_ARG, "the spec file name is empty");
  /* Non-blocking open: a FIFO without a writer must not block where no signal is seen. */
  fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  AS_CHECK(fd >= 0, errno == ENOMEM ? AS_ERR_NOMEM : AS_ERR_ARG,
           "%s: cannot read the spec: cannot open it: %s", path, strerror(errno));
  struct stat sb;
  AS_CHECK(fstat(fd, &sb) == 0, AS_ERR_IO, "%s: cannot read the spec: %s", path, strerror(errno));
  AS_CHECK(!S_ISDIR(sb.st_mode), AS_ERR_ARG, "%s: cannot read the spec: it is a directory", path);
  const int pipe_like = S_ISFIFO(sb.st_mode);
  if (pipe_like) {
    /* A pipe of a command (<(...), a shell's |) is read; a named FIFO, made by mkfifo and
     * found by its name, is refused by its type like every other file that is not regular
     * (issue 49: without a writer it kept the command waiting). The kernel names the opened
     * pipe: "pipe:[N]" for an anonymous one, the path for a named one. */
    char fdp[64], target[64] = "";
    snprintf(fdp, sizeof fdp, "/proc/self/fd/%d", fd);
    const ssize_t k = readlink(fdp, target, sizeof target - 1);
    if (k > 0) target[k] = '\0';
    AS_CHECK(k <= 0 || strncmp(target, "pipe:", 5) == 0, AS_ERR_ARG,
             "%s: cannot read the spec: it is a FIFO (named pipe), not a regular file: refusing "
             "to open it (a pipe from a command, <(cat FILE), is read)",
             path);
  }
  AS_CHECK(S_ISREG(sb.st_mode) || pipe_like, AS_ERR_ARG,
           "%s: cannot read the spec: not a regular file or a pipe (a %s)", path,
           S_ISCHR(sb.st_mode)    ? "character device"
           : S_ISBLK(sb.st_mode)  ? "block device"
           : S_ISSOCK(sb.st_mode) ? "socket"
                                  : "special file");
  AS_CHECK(!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size <= AS_SPEC_MAX_BYTES, AS_ERR_SPEC,
           "%s: cannot read the spec: larger than %d MiB", path, (int)(AS_SPEC_MAX_BYTES >> 20));
  for (;;) {
    if (n == cap) {
      AS_CHECK(cap < AS_SPEC_MAX_BYTES, AS_ERR_SPEC, "%s: cannot read the spec: larger than %d MiB",
               path, (int)(AS_SPEC_MAX_BYTES >> 20));
      size_t c2 = cap ? 2 * cap : 65536;
      if (c2 > AS_SPEC_MAX_BYTES) c2 = AS_SPEC_MAX_BYTES;
      char *nb = realloc(buf, c2 + 1);
      AS_CHECK_ALLOC(nb);
      buf = nb;
      cap = c2;
    }
    if (pipe_like) {
      /* Wait for data in short steps, so a stop signal is seen within 0.1 s. */
      AS_CHECK(!(stop && *stop), AS_ERR_INTERRUPTED,
               "%s: stopped by a signal while reading the spec", path);
      struct pollfd pf = {fd, POLLIN, 0};
      int pr = poll(&pf, 1, 100);
      if (pr < 0 && errno == EINTR) continue;
      AS_CHECK(pr >= 0, AS_ERR_IO, "%s: cannot read the spec: %s", path, strerror(errno));
      if (pr == 0) continue;
    }
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    AS_CHECK(got >= 0, AS_ERR_IO, "%s: cannot read the spec: %s", path, strerror(errno));
    if (got == 0) break;
    n += (size_t)got;
  }
  if (!buf) {
    buf = malloc(1);
    AS_CHECK_ALLOC(buf);
  }
  buf[n] = '\0';
  *text = buf;
  if (len) *len = n;
  buf = NULL;
cleanup:
  if (fd >= 0) close(fd);
  free(buf);
  return st;
}

as_status as_spec_load(const char *path, as_spec_diags *diags, as_spec **out) {
  as_status st = AS_OK;
  char *buf = NULL;
  size_t len = 0;
  AS_CHECK(path != NULL && out != NULL, AS_ERR_ARG, "as_spec_load: NULL path or out");
  AS_TRY(as_spec_read(path, NULL, &buf, &len));
  AS_TRY(as_spec_parse(buf, len, path, diags, out));
cleanup:
  free(buf);
  return st;
}

as_status as_spec_default(as_spec **out) {
  const char *t = as_spec_default_text();
  return as_spec_parse(t, strlen(t), "<built-in default sweep>", NULL, out);
}

void as_spec_destroy(as_spec **sp) {
  if (!sp || !*sp) return;
  as_arena_free(&(*sp)->arena);
  free(*sp);
  *sp = NULL;
}

/* ---------------------------------------------------------------- accessors */

uint64_t as_spec_trial_count(const as_spec *s) {
  return s->trials;
}
uint64_t as_spec_point_count(const as_spec *s) {
  return s->points;
}
uint32_t as_spec_replicates(const as_spec *s) {
  return s->replicates;
}
int as_spec_case_count(const as_spec *s) {
  return s->ncases;
}
const char *as_spec_case_name(const as_spec *s, int c) {
  return c >= 0 && c < s->ncases ? s->cases[c].name : NULL;
}
uint64_t as_spec_case_points(const as_spec *s, int c) {
  return c >= 0 && c < s->ncases ? s->cases[c].t->len : 0;
}
uint64_t as_spec_case_offset(const as_spec *s, int c) {
  return c >= 0 && c < s->ncases ? s->cases[c].offset : 0;
}
const char *as_spec_name(const as_spec *s) {
  return s->name;
}
uint64_t as_spec_seed(const as_spec *s) {
  return s->seed;
}
const as_output_spec *as_spec_output(const as_spec *s) {
  return &s->output;
}
void as_spec_store_all_bulk(as_spec *s, int n_snap, const double *times) {
  s->output.initial = s->output.final = s->output.attention = s->output.matrices = true;
  if (n_snap <= 0 || !times) return;
  if (n_snap > AS_MAX_SNAPSHOTS) n_snap = AS_MAX_SNAPSHOTS;
  s->output.n_snapshots = n_snap;
  memcpy(s->output.snapshot_times, times, (size_t)n_snap * sizeof *times);
}
double as_spec_flush_interval(const as_spec *s) {
  return s->flush_interval;
}
double as_spec_memory_limit(const as_spec *s) {
  return s->memory_limit;
}
int as_spec_spectral_threshold(const as_spec *s) {
  return s->spectral_threshold;
}
void as_spec_spectral_grid(const as_spec *s, int *nprow, int *npcol) {
  *nprow = s->spectral_grid[0];
  *npcol = s->spectral_grid[1];
}
const char *as_spec_sha256(const as_spec *s) {
  return s->sha;
}
const char *as_spec_text(const as_spec *s, size_t *len) {
  if (len) *len = s->text_len;
  return s->text;
}

const char *as_spec_common_keys(const as_spec *s) {
  return s->common_text;
}

const char *as_spec_base_dir(const as_spec *s) {
  return s->base;
}

int as_spec_input_paths(const as_spec *s, const char *field, const char *const **paths) {
  for (int i = 0; i < F_COUNT; i++)
    if (is_path_key(i) && strcmp(as_params[i].rname, field) == 0 && s->paths[i]) {
      *paths = s->paths[i];
      return s->nlabels[i];
    }
  *paths = NULL;
  return 0;
}

int as_spec_labels(const as_spec *s, const char *field, const char *const **names) {
  if (strcmp(field, "case_name") == 0) {
    *names = s->case_names;
    return s->ncases;
  }
  for (int i = 0; i < F_COUNT; i++)
    if (as_params[i].kind == AS_PK_TEXT && strcmp(as_params[i].rname, field) == 0) {
      *names = s->labels[i];
      return s->nlabels[i];
    }
  *names = NULL;
  return 0;
}

int as_spec_axis_count(const as_spec *s) {
  return s->naxes;
}

as_status as_spec_axis_get(const as_spec *s, int i, as_spec_axis *a) {
  as_status st = AS_OK;
  AS_CHECK(i >= 0 && i < s->naxes && a, AS_ERR_ARG, "axis %d out of range (0..%d)", i,
           s->naxes - 1);
  const axis *ax = s->axes[i].ax;
  a->case_id = s->axes[i].case_id;
  a->key = ax->key->key;
  a->line = ax->knode->line;
  a->col = ax->knode->col;
  a->values = ax->n;
  a->zipped = ax->zipped;
cleanup:
  return st;
}

void as_spec_axis_value(const as_spec *s, int i, uint64_t j, char *buf, size_t len) {
  if (!buf || len == 0) return;
  buf[0] = '\0';
  if (i < 0 || i >= s->naxes || j >= s->axes[i].ax->n) return;
  const axis *ax = s->axes[i].ax;
  const sval *v = &ax->vals[j];
  if (ax->key->kind == AS_PK_MAT)
    snprintf(buf, len, "[%d x %d matrix #%012llx]", v->rows, v->cols,
             (unsigned long long)(v->hash >> 16));
  else if (ax->key->kind == AS_PK_GROUP)
    snprintf(buf, len, "{init at %d:%d}", v->node->line, v->node->col);
  else
    snprintf(buf, len, "%s", v->node->text);
}

/* The case of point p: the last case whose offset <= p. */
static int case_of(const as_spec *s, uint64_t p) {
  int lo = 0, hi = s->ncases - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (s->cases[mid].offset <= p)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

as_status as_spec_point_source(const as_spec *s, uint64_t p, int key, int *line, int *col,
                               int *applies, int *case_id) {
  as_status st = AS_OK;
  AS_CHECK(s && line && col && applies && case_id, AS_ERR_ARG,
           "as_spec_point_source: NULL argument");
  AS_CHECK(p < s->points && key >= 0 && key < F_COUNT, AS_ERR_ARG,
           "as_spec_point_source: point %llu or key %d out of range", (unsigned long long)p, key);
  const int c = case_of(s, p);
  point pt;
  resolve_point(s, c, p - s->cases[c].offset, &pt);
  const as_sn *n = pt.src[key];
  *line = n ? n->line : 0;
  *col = n ? n->col : 0;
  *applies = as_params[key].applies(&pt.t);
  *case_id = c;
cleanup:
  return st;
}

/* Trial index's random-stream keys (docs/spec.md, "Enumeration and seeds"): the point with its
 * common axes at their first value (no common keys: the point itself, so index and p as
 * always). */
static void stream_keys(const as_spec *s, uint64_t index, int c, const point *pt, uint64_t *token,
                        uint64_t *triple) {
  const uint64_t r = index / s->points, p = index % s->points;
  const uint64_t cp = s->cases[c].offset + common_point(s, s->cases[c].t, p - s->cases[c].offset);
  *token = r * s->points + cp;
  *triple = pt->t.triple_seed == AS_TSEED_PER_PARAMETERS ? cp : *token;
}

int as_spec_draws_differ(const as_spec *a, const as_spec *b, char *why, size_t len) {
  if (a->seed != b->seed) {
    snprintf(why, len, "seed %llu -> %llu", (unsigned long long)a->seed,
             (unsigned long long)b->seed);
    return 1;
  }
  if (strcmp(a->common_text, b->common_text) != 0) {
    snprintf(why, len, "common: [%s] -> [%s]", a->common_text, b->common_text);
    return 1;
  }
  if (a->replicates != b->replicates || a->points != b->points) {
    snprintf(why, len,
             "replicates x points %u x %llu -> %u x %llu: trial i = replicate x points + point "
             "would be another trial",
             a->replicates, (unsigned long long)a->points, b->replicates,
             (unsigned long long)b->points);
    return 1;
  }
  /* Each point's keys (triple_seed, the common point), of the first two replicates: the
   * others follow (token key r P + c). Evenly sampled above CHECK_POINTS points. */
  const uint64_t P = a->points,
                 stride = P > CHECK_POINTS ? (P + CHECK_POINTS - 1) / CHECK_POINTS : 1;
  for (uint64_t p = 0; p < P; p += stride)
    for (uint64_t r = 0; r < (a->replicates > 1 ? 2u : 1u); r++) {
      const uint64_t index = r * P + p;
      uint64_t key[2][2];
      const as_spec *s2[2] = {a, b};
      for (int k = 0; k < 2; k++) {
        const int c = case_of(s2[k], p);
        point pt;
        resolve_point(s2[k], c, p - s2[k]->cases[c].offset, &pt);
        stream_keys(s2[k], index, c, &pt, &key[k][0], &key[k][1]);
      }
      if (key[0][0] != key[1][0] || key[0][1] != key[1][1]) {
        snprintf(why, len,
                 "the stream keys (tokens, triple) of trial %llu (%llu, %llu) -> (%llu, %llu): "
                 "triple_seed or the points changed",
                 (unsigned long long)index, (unsigned long long)key[0][0],
                 (unsigned long long)key[0][1], (unsigned long long)key[1][0],
                 (unsigned long long)key[1][1]);
        return 1;
      }
    }
  if (why && len) why[0] = '\0';
  return 0;
}

int as_spec_top_key(const char *name) {
  return name && in_list(name, top_keys);
}

as_status as_spec_trial(const as_spec *s, uint64_t index, as_trial *out) {
  as_status st = AS_OK;
  AS_CHECK(s && out, AS_ERR_ARG, "as_spec_trial: NULL argument");
  AS_CHECK(index < s->trials, AS_ERR_ARG, "trial %llu out of range (the sweep has %llu)",
           (unsigned long long)index, (unsigned long long)s->trials);
  uint64_t r = index / s->points, p = index % s->points;
  const int lo = case_of(s, p);
  point pt;
  resolve_point(s, lo, p - s->cases[lo].offset, &pt);
  *out = pt.t;
  /* Input files: the label as written, resolved against the spec's directory. */
  for (int i = 0; i < F_COUNT; i++) {
    if (!s->paths[i]) continue;
    as_text *x = (as_text *)(void *)((char *)out + as_params[i].offset);
    if (x->text && x->id >= 0 && x->id < s->nlabels[i]) x->text = s->paths[i][x->id];
  }
  out->index = index;
  out->replicate = (uint32_t)r;
  stream_keys(s, index, lo, &pt, &out->token_key, &out->triple_key);
  /* The defence of rules.h: validate checked every point (a bug when this fails). */
  const as_rule_env env = {s->spectral_threshold};
  AS_TRY(as_rules_check(out, &env));
cleanup:
  return st;
}
