/* shard.c: the split of a sweep into shards and the names of their files (shard.h). */
#include "attnsweep/shard.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/cost.h"
#include "attnsweep/iocheck.h"
#include "attnsweep/trial.h"

static int parse_u32(const char *s, const char *end, uint32_t *out) {
  if (s == end || end - s > 9) return 0;
  uint32_t v = 0;
  for (const char *c = s; c < end; c++) {
    if (*c < '0' || *c > '9') return 0;
    v = 10 * v + (uint32_t)(*c - '0');
  }
  *out = v;
  return 1;
}

as_status as_shard_parse(const char *text, uint32_t *index, uint32_t *count) {
  as_status st = AS_OK;
  uint32_t i = 0, n = 0;
  const char *slash = text ? strchr(text, '/') : NULL;
  AS_CHECK(slash && parse_u32(text, slash, &i) && parse_u32(slash + 1, slash + strlen(slash), &n) &&
               i >= 1 && i <= n && n <= AS_SHARD_MAX,
           AS_ERR_ARG, "--shard needs I/N with 1 <= I <= N <= %u, not '%s'", AS_SHARD_MAX,
           text ? text : "");
  *index = i;
  *count = n;
cleanup:
  return st;
}

as_status as_shard_path(const char *results, uint32_t index, uint32_t count, char *buf,
                        size_t len) {
  as_status st = AS_OK;
  AS_CHECK(results && buf && index >= 1 && index <= count && count <= AS_SHARD_MAX, AS_ERR_ARG,
           "as_shard_path: bad arguments");
  int w = snprintf(buf, len, "%s.shard-%u-of-%u", results, (unsigned)index, (unsigned)count);
  AS_CHECK(w > 0 && (size_t)w < len, AS_ERR_ARG, "%s: the shard file name is too long", results);
cleanup:
  return st;
}

int as_shard_path_parse(const char *path, uint32_t *index, uint32_t *count, size_t *base_len) {
  if (!path) return 0;
  const char *s = strstr(path, ".shard-"), *last = NULL;
  for (; s; s = strstr(s + 1, ".shard-")) last = s;
  if (!last) return 0;
  const char *a = last + 7, *of = strstr(a, "-of-");
  uint32_t i = 0, n = 0;
  if (!of || !parse_u32(a, of, &i) || !parse_u32(of + 4, of + 4 + strlen(of + 4), &n)) return 0;
  if (i < 1 || i > n || n > AS_SHARD_MAX) return 0;
  if (index) *index = i;
  if (count) *count = n;
  if (base_len) *base_len = (size_t)(last - path);
  return 1;
}

typedef struct work_item {
  double work;
  uint64_t trial;
} work_item;

/* Decreasing work, NaN last, ties by increasing index: the scheduler's order (sched.c). */
static int by_work(const void *pa, const void *pb) {
  const work_item *a = pa, *b = pb;
  int na = isnan(a->work), nb = isnan(b->work);
  if (na != nb) return na - nb;
  if (!na && a->work != b->work) return a->work > b->work ? -1 : 1;
  return (a->trial > b->trial) - (a->trial < b->trial);
}

/* A binary min-heap of shards by (load, shard number). */
typedef struct heap {
  double *load; /* per shard (0-based) */
  uint32_t *h;  /* shard numbers, heap order */
  uint32_t n;
} heap;

static int heap_less(const heap *q, uint32_t a, uint32_t b) {
  return q->load[a] < q->load[b] || (q->load[a] == q->load[b] && a < b);
}

static void heap_down(heap *q, uint32_t at) {
  for (;;) {
    uint32_t l = 2 * at + 1, r = l + 1, m = at;
    if (l < q->n && heap_less(q, q->h[l], q->h[m])) m = l;
    if (r < q->n && heap_less(q, q->h[r], q->h[m])) m = r;
    if (m == at) return;
    uint32_t t = q->h[m];
    q->h[m] = q->h[at];
    q->h[at] = t;
    at = m;
  }
}

as_status as_shard_owners(const as_spec *spec, uint32_t count, uint32_t *owner, double *loads) {
  as_status st = AS_OK;
  work_item *items = NULL;
  heap q = {NULL, NULL, count};
  AS_CHECK(spec && owner && count >= 1 && count <= AS_SHARD_MAX, AS_ERR_ARG,
           "as_shard_owners: bad arguments");
  const uint64_t n = as_spec_trial_count(spec);
  items = malloc((n ? n : 1) * sizeof *items);
  q.load = calloc(count, sizeof *q.load);
  q.h = malloc(count * sizeof *q.h);
  AS_CHECK(items && q.load && q.h, AS_ERR_NOMEM, "shard split of %llu trials",
           (unsigned long long)n);
  for (uint64_t i = 0; i < n; i++) {
    as_trial t;
    items[i].trial = i;
    items[i].work = as_spec_trial(spec, i, &t) == AS_OK ? as_cost_work(&t) : NAN;
  }
  as_error_clear(); /* a trial that cannot be set up costs NaN here; run reports it */
  qsort(items, n, sizeof *items, by_work);
  /* Loads start equal, so shard numbers in increasing order already form a heap. */
  for (uint32_t s = 0; s < count; s++) q.h[s] = s;
  for (uint64_t k = 0; k < n; k++) {
    uint32_t s = q.h[0];
    owner[items[k].trial] = s + 1;
    /* A NaN trial counts as one unit, so that they too spread over the shards. */
    q.load[s] += isnan(items[k].work) ? 1.0 : items[k].work;
    heap_down(&q, 0);
  }
  if (loads) memcpy(loads, q.load, count * sizeof *loads);
cleanup:
  free(items);
  free(q.load);
  free(q.h);
  return st;
}

as_status as_shard_identify(as_results *rf, const char *path, uint32_t *index, uint32_t *count) {
  as_status st = AS_OK;
  uint64_t i = 0, n = 0;
  *index = *count = 0;
  if (as_results_attr_u64(rf, AS_SHARD_ATTR_INDEX, &i) == AS_OK &&
      as_results_attr_u64(rf, AS_SHARD_ATTR_COUNT, &n) == AS_OK) {
    AS_CHECK(i >= 1 && i <= n && n <= AS_SHARD_MAX, AS_ERR_DATA,
             "%s: bad shard attributes (%s %llu, %s %llu)", path, AS_SHARD_ATTR_INDEX,
             (unsigned long long)i, AS_SHARD_ATTR_COUNT, (unsigned long long)n);
    *index = (uint32_t)i;
    *count = (uint32_t)n;
    goto cleanup;
  }
  as_error_clear();
  as_shard_path_parse(path, index, count, NULL);
cleanup:
  return st;
}

as_status as_shard_rows(const uint32_t *owner, uint64_t n_trials, uint32_t index, uint64_t **rows) {
  as_status st = AS_OK;
  uint64_t n = 0;
  AS_CHECK(owner && rows, AS_ERR_ARG, "as_shard_rows: NULL argument");
  for (uint64_t i = 0; i < n_trials; i++) n += owner[i] == index;
  *rows = malloc((n ? n : 1) * sizeof **rows);
  AS_CHECK_ALLOC(*rows);
  n = 0;
  for (uint64_t i = 0; i < n_trials; i++)
    if (owner[i] == index) (*rows)[n++] = i;
cleanup:
  return st;
}
