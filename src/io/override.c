/* override.c: `--set KEY=VALUE` applied to a spec's YAML text (override.h).
 *
 * Text edits at the byte positions libyaml reports for the nodes: a value node is replaced by
 * the override's flow text, a new pair is inserted in the mapping that takes it (a block
 * mapping: a line at its keys' indentation; a flow mapping: ", K: V" before its '}'). One
 * override at a time: the text is parsed again for the next. */
#include "attnsweep/override.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "attnsweep/iocheck.h"
#include "attnsweep/params.h"

/* The top-level keys of a spec (docs/spec.md); the sweep keys are the parameter table's. */
static const char *const top_level[] = {
    "name",   "description",    "seed",          "replicates",   "spectral_threshold",
    "output", "flush_interval", "spectral_grid", "memory_limit", NULL};

typedef struct evlist {
  yaml_event_t *ev;
  size_t n, cap;
  const char *text; /* the text parsed */
  size_t len;
} evlist;

static void evlist_free(evlist *l) {
  for (size_t i = 0; i < l->n; i++) yaml_event_delete(&l->ev[i]);
  free(l->ev);
  l->ev = NULL;
  l->n = l->cap = 0;
}

/* Every event of text; 0 when libyaml cannot read it. */
static int events_of(const char *text, size_t len, evlist *l) {
  l->text = text;
  l->len = len;
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p)) return 0;
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  int ok = 1;
  for (;;) {
    if (l->n == l->cap) {
      size_t cap = l->cap ? 2 * l->cap : 256;
      yaml_event_t *e = realloc(l->ev, cap * sizeof *e);
      if (!e) {
        ok = 0;
        break;
      }
      l->ev = e;
      l->cap = cap;
    }
    if (!yaml_parser_parse(&p, &l->ev[l->n])) {
      ok = 0;
      break;
    }
    const yaml_event_type_t t = l->ev[l->n++].type;
    if (t == YAML_STREAM_END_EVENT) break;
  }
  yaml_parser_delete(&p);
  return ok;
}

/* The node starting at event i: its text [*b, *e) and the event after it. A block collection
 * ends where its last content ends (its end event's mark is at the next token). */
static size_t node_span(const evlist *l, size_t i, size_t *b, size_t *e) {
  const yaml_event_t *s = &l->ev[i];
  *b = s->start_mark.index;
  if (s->type != YAML_MAPPING_START_EVENT && s->type != YAML_SEQUENCE_START_EVENT) {
    *e = s->end_mark.index;
    return i + 1;
  }
  const int block = s->type == YAML_MAPPING_START_EVENT
                        ? s->data.mapping_start.style != YAML_FLOW_MAPPING_STYLE
                        : s->data.sequence_start.style != YAML_FLOW_SEQUENCE_STYLE;
  size_t depth = 0, j = i;
  for (; j < l->n; j++) {
    const yaml_event_type_t t = l->ev[j].type;
    if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT) depth++;
    if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT) depth--;
    if (depth == 0) break;
  }
  *e = l->ev[j].end_mark.index;
  if (block) {
    /* The end of its last scalar (or flow collection): nested block ends, like this one's,
     * are marked at the next token. */
    *e = *b;
    for (size_t k = i + 1; k < j; k++) {
      const yaml_event_t *x = &l->ev[k];
      const int flow_end =
          (x->type == YAML_MAPPING_END_EVENT || x->type == YAML_SEQUENCE_END_EVENT) &&
          l->text[x->start_mark.index < l->len ? x->start_mark.index : 0] != '\0' &&
          (l->text[x->start_mark.index] == '}' || l->text[x->start_mark.index] == ']');
      if ((x->type == YAML_SCALAR_EVENT || x->type == YAML_ALIAS_EVENT || flow_end) &&
          x->end_mark.index > *e)
        *e = x->end_mark.index;
    }
  }
  return j + 1;
}

static int is_key(const yaml_event_t *e, const char *key) {
  return e->type == YAML_SCALAR_EVENT && strlen(key) == e->data.scalar.length &&
         memcmp(e->data.scalar.value, key, e->data.scalar.length) == 0;
}

/* One edit of the text: [b, e) replaced by the bytes of ins. */
typedef struct edit {
  size_t b, e;
  char *ins;
} edit;

typedef struct edits {
  edit v[256];
  int n;
} edits;

static int add_edit(edits *ed, size_t b, size_t e, const char *fmt1, const char *s1, const char *s2,
                    const char *s3) {
  if (ed->n == (int)(sizeof ed->v / sizeof ed->v[0])) return 0;
  size_t need = strlen(fmt1) + strlen(s1) + strlen(s2) + strlen(s3) + 1;
  char *p = malloc(need);
  if (!p) return 0;
  snprintf(p, need, "%s%s%s%s", fmt1, s1, s2, s3);
  ed->v[ed->n].b = b;
  ed->v[ed->n].e = e;
  ed->v[ed->n].ins = p;
  ed->n++;
  return 1;
}

/* Insert "key: value" into the mapping starting at event m. */
static int insert_pair(const evlist *l, const char *text, size_t m, const char *key,
                       const char *value, edits *ed) {
  size_t b = 0, e = 0;
  const size_t end_ev = node_span(l, m, &b, &e) - 1;
  const yaml_event_t *s = &l->ev[m];
  if (s->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE) {
    const size_t at = l->ev[end_ev].start_mark.index; /* the '}' */
    const int empty = end_ev == m + 1;
    char pre[8];
    snprintf(pre, sizeof pre, "%s", empty ? "" : ", ");
    (void)text;
    return add_edit(ed, at, at, pre, key, ": ", value);
  }
  /* A block mapping: a line after its last content, at its first key's column. */
  const size_t col = end_ev > m + 1 ? l->ev[m + 1].start_mark.column : 0;
  char *lead = malloc(col + 2);
  if (!lead) return 0;
  lead[0] = '\n';
  memset(lead + 1, ' ', col);
  lead[col + 1] = '\0';
  int ok = add_edit(ed, e, e, lead, key, ": ", value);
  free(lead);
  return ok;
}

/* The value event of key in the mapping starting at event m, or 0. */
static size_t map_find(const evlist *l, size_t m, const char *key) {
  if (l->ev[m].type != YAML_MAPPING_START_EVENT) return 0;
  size_t i = m + 1, b, e;
  while (i < l->n && l->ev[i].type != YAML_MAPPING_END_EVENT) {
    const size_t v = node_span(l, i, &b, &e);
    if (is_key(&l->ev[i], key)) return v;
    i = node_span(l, v, &b, &e);
  }
  return 0;
}

/* Every mapping in the node at event i that has key: its value replaced by value. */
static int replace_all(const evlist *l, size_t i, const char *key, const char *value, edits *ed,
                       int *found) {
  size_t b, e;
  const size_t end = node_span(l, i, &b, &e);
  for (size_t j = i; j < end; j++) {
    if (l->ev[j].type != YAML_MAPPING_START_EVENT) continue;
    const size_t v = map_find(l, j, key);
    if (!v) continue;
    node_span(l, v, &b, &e);
    if (!add_edit(ed, b, e, "", value, "", "")) return 0;
    (*found)++;
  }
  return 1;
}

static int by_pos_desc(const void *pa, const void *pb) {
  const edit *a = pa, *b = pb;
  return (a->b < b->b) - (a->b > b->b);
}

/* One override into *text (replaced). */
static as_status apply_one(char **text, size_t *len, const char *set) {
  as_status st = AS_OK;
  evlist l = {NULL, 0, 0, NULL, 0};
  edits ed;
  ed.n = 0;
  char *out = NULL, *key = NULL;
  const char *eq = strchr(set, '=');
  AS_CHECK(eq && eq > set, AS_ERR_ARG, "--set %s: needs KEY=VALUE", set);
  key = strndup(set, (size_t)(eq - set));
  AS_CHECK_ALLOC(key);
  const char *value = eq + 1;
  int top = 0;
  for (int k = 0; top_level[k]; k++) top |= strcmp(top_level[k], key) == 0;
  AS_CHECK(top || as_param_find(key), AS_ERR_ARG,
           "--set %s: unknown key '%s' (a top-level key such as seed or replicates, or a sweep "
           "key: attnsweep help keys)",
           set, key);
  /* The value: one YAML node on one line, no comment. */
  {
    evlist v = {NULL, 0, 0, NULL, 0};
    const int ok = value[0] && !strpbrk(value, "\n\r#") && events_of(value, strlen(value), &v);
    size_t nodes = 0, b, e;
    for (size_t i = 2; ok && i + 2 < v.n; i = node_span(&v, i, &b, &e)) nodes++;
    evlist_free(&v);
    AS_CHECK(ok && nodes == 1, AS_ERR_ARG,
             "--set %s: the value must be one YAML value on one line (200, box, [20, 40], "
             "{kind: box})",
             set);
  }
  AS_CHECK(events_of(*text, *len, &l) && l.n > 3 && l.ev[2].type == YAML_MAPPING_START_EVENT,
           AS_ERR_ARG, "--set %s: the spec is not a readable YAML mapping", set);
  const size_t root = 2;
  int found = 0;
  if (top) {
    const size_t v = map_find(&l, root, key);
    size_t b, e;
    if (v) {
      node_span(&l, v, &b, &e);
      AS_CHECK(add_edit(&ed, b, e, "", value, "", ""), AS_ERR_NOMEM, "--set: edits");
    } else {
      AS_CHECK(insert_pair(&l, *text, root, key, value, &ed), AS_ERR_NOMEM, "--set: edits");
    }
  } else {
    const size_t defs = map_find(&l, root, "defaults");
    const size_t sweep = map_find(&l, root, "sweep");
    const int list = value[0] == '[';
    /* A list is an axis: it replaces the key in the sweep (defaults take one value, and an
     * axis overrides them); a single value replaces it everywhere. */
    if (defs && !list)
      AS_CHECK(replace_all(&l, defs, key, value, &ed, &found), AS_ERR_NOMEM, "--set");
    if (sweep) AS_CHECK(replace_all(&l, sweep, key, value, &ed, &found), AS_ERR_NOMEM, "--set");
    /* defaults: and sweep: hold no mapping of their own under one another, so no edit is
     * inside another. */
    if (!found) {
      if (list && sweep && l.ev[sweep].type == YAML_MAPPING_START_EVENT) {
        AS_CHECK(insert_pair(&l, *text, sweep, key, value, &ed), AS_ERR_NOMEM, "--set");
      } else if (defs && l.ev[defs].type == YAML_MAPPING_START_EVENT) {
        AS_CHECK(insert_pair(&l, *text, defs, key, value, &ed), AS_ERR_NOMEM, "--set");
      } else {
        char pair[4096];
        snprintf(pair, sizeof pair, "{%s: %s}", key, value);
        AS_CHECK(insert_pair(&l, *text, root, "defaults", pair, &ed), AS_ERR_NOMEM, "--set");
      }
    }
  }
  /* Apply from the end (positions stay valid), checking that no two overlap. */
  qsort(ed.v, (size_t)ed.n, sizeof ed.v[0], by_pos_desc);
  size_t cap = *len + 1;
  for (int i = 0; i < ed.n; i++) cap += strlen(ed.v[i].ins);
  out = malloc(cap);
  AS_CHECK_ALLOC(out);
  memcpy(out, *text, *len);
  size_t n = *len;
  for (int i = 0; i < ed.n; i++) {
    const edit *x = &ed.v[i];
    AS_CHECK(i == 0 || x->e <= ed.v[i - 1].b, AS_ERR_ARG,
             "--set %s: '%s' appears nested inside itself in the spec", set, key);
    const size_t ins = strlen(x->ins);
    memmove(out + x->b + ins, out + x->e, n - x->e);
    memcpy(out + x->b, x->ins, ins);
    n = n - (x->e - x->b) + ins;
  }
  out[n] = '\0';
  free(*text);
  *text = out;
  *len = n;
  out = NULL;
cleanup:
  for (int i = 0; i < ed.n; i++) free(ed.v[i].ins);
  evlist_free(&l);
  free(out);
  free(key);
  return st;
}

as_status as_override_apply(const char *text, size_t len, const char *const *sets, int n,
                            char **out, size_t *out_len) {
  as_status st = AS_OK;
  char *t = NULL;
  AS_CHECK(text && out && out_len && (n == 0 || sets) && n >= 0 && n <= AS_OVERRIDE_MAX, AS_ERR_ARG,
           "as_override_apply: bad arguments (at most %d --set)", AS_OVERRIDE_MAX);
  /* The record of what was overridden heads the text (a comment: the parsed tree, and so the
   * spec's SHA-256, changes by the overrides only). */
  size_t head = 32;
  for (int i = 0; i < n; i++) head += strlen(sets[i]) + 8;
  t = malloc(head + len + 1);
  AS_CHECK_ALLOC(t);
  size_t k = 0;
  if (n > 0) {
    k += (size_t)snprintf(t, head, "# attnsweep");
    for (int i = 0; i < n; i++) {
      AS_CHECK(!strpbrk(sets[i], "\n\r"), AS_ERR_ARG, "--set: a newline in '%s'", sets[i]);
      k += (size_t)snprintf(t + k, head - k, " --set %s", sets[i]);
    }
    t[k++] = '\n';
  }
  memcpy(t + k, text, len);
  size_t tl = k + len;
  t[tl] = '\0';
  for (int i = 0; i < n; i++) AS_TRY(apply_one(&t, &tl, sets[i]));
  *out = t;
  *out_len = tl;
  t = NULL;
cleanup:
  free(t);
  return st;
}
