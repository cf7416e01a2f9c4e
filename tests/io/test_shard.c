/* test_shard.c: the split of a sweep into shards (shard.h): names, parsing, and the
 * longest-first greedy split over the cost model checked by the properties that define it
 * (every trial owned once; the N costliest trials on N distinct shards in order; the spread
 * of the loads at most the largest trial's work: the list-scheduling bound), its determinism,
 * and its independence from anything but (spec, N). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/cost.h"
#include "attnsweep/shard.h"
#include "attnsweep/spec.h"
#include "attnsweep/trial.h"

static void test_names(void) {
  uint32_t i = 0, n = 0;
  AS_EXPECT(as_shard_parse("2/3", &i, &n) == AS_OK && i == 2 && n == 3, "2/3 -> %u %u", i, n);
  AS_EXPECT(as_shard_parse("1/1", &i, &n) == AS_OK && i == 1 && n == 1, "1/1");
  static const char *const bad[] = {"0/3",  "4/3",  "3",         "/3", "1/",  "a/3",
                                    "1/3x", "-1/3", "1/1000001", "",   "1//3"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    AS_EXPECT(as_shard_parse(bad[k], &i, &n) == AS_ERR_ARG, "'%s' accepted", bad[k]);
    as_error_clear();
  }
  char buf[64];
  AS_EXPECT(as_shard_path("dir/out.h5", 7, 12, buf, sizeof buf) == AS_OK &&
                strcmp(buf, "dir/out.h5.shard-7-of-12") == 0,
            "path %s", buf);
  AS_EXPECT(as_shard_path("dir/out.h5", 1, 2, buf, 10) == AS_ERR_ARG, "too long accepted");
  as_error_clear();
  size_t base = 0;
  AS_EXPECT(as_shard_path_parse("dir/out.h5.shard-7-of-12", &i, &n, &base) && i == 7 && n == 12 &&
                base == strlen("dir/out.h5"),
            "parse back %u %u %zu", i, n, base);
  AS_EXPECT(!as_shard_path_parse("dir/out.h5", &i, &n, &base), "plain file taken for a shard");
  AS_EXPECT(!as_shard_path_parse("out.h5.shard-4-of-3", &i, &n, &base), "4 of 3");
  AS_EXPECT(!as_shard_path_parse("out.h5.shard-1-of-3.journal.0", &i, &n, &base), "journal");
}

static const char spec_text[] = "name: split\n"
                                "seed: 3\n"
                                "replicates: 5\n"
                                "sweep:\n"
                                "  concat:\n"
                                "    - {case: a, vfamily: identity, mfamily: identity,\n"
                                "       d: [2, 3, 5], n: [8, 40, 100], T: 5, dt: 0.1}\n"
                                "    - {case: b, vfamily: identity, mfamily: identity,\n"
                                "       d: 4, n: 20, T: [1, 10], dt: 0.05}\n";

static void test_split(void) {
  as_spec *spec = NULL;
  AS_EXPECT(as_spec_parse(spec_text, sizeof spec_text - 1, "split.yaml", NULL, &spec) == AS_OK,
            "spec: %s", as_error_get()->message);
  if (!spec) return;
  const uint64_t T = as_spec_trial_count(spec);
  double *work = malloc(T * sizeof *work), total = 0, maxw = 0;
  uint32_t *own = malloc(T * sizeof *own), *again = malloc(T * sizeof *again);
  for (uint64_t t = 0; t < T; t++) {
    as_trial tr;
    AS_EXPECT(as_spec_trial(spec, t, &tr) == AS_OK, "trial %llu", (unsigned long long)t);
    work[t] = as_cost_work(&tr);
    total += work[t];
    if (work[t] > maxw) maxw = work[t];
  }
  static const uint32_t counts[] = {1, 2, 3, 7, 50, 80};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    const uint32_t N = counts[c];
    double loads[80], sum[80] = {0};
    AS_EXPECT(as_shard_owners(spec, N, own, loads) == AS_OK, "owners N = %u", N);
    int in_range = 1;
    for (uint64_t t = 0; t < T; t++) {
      in_range &= own[t] >= 1 && own[t] <= N;
      if (own[t] >= 1 && own[t] <= N) sum[own[t] - 1] += work[t];
    }
    AS_EXPECT(in_range, "N = %u: an owner outside 1..N", N);
    double lo = INFINITY, hi = 0, all = 0;
    for (uint32_t s = 0; s < N; s++) {
      AS_EXPECT_CLOSE(loads[s], sum[s], 1e-12, 0);
      if (sum[s] < lo) lo = sum[s];
      if (sum[s] > hi) hi = sum[s];
      all += sum[s];
    }
    AS_EXPECT_CLOSE(all, total, 1e-12, 0);
    /* Greedy onto the least loaded shard: the spread never exceeds one trial. */
    AS_EXPECT(hi - lo <= maxw * (1 + 1e-12), "N = %u: loads %g..%g, largest trial %g", N, lo, hi,
              maxw);
    if (N <= T) {
      /* Longest first: the N costliest trials (ties by index) open shards 1..N in order. */
      uint64_t *order = malloc(T * sizeof *order);
      for (uint64_t t = 0; t < T; t++) order[t] = t;
      for (uint64_t a = 1; a < T; a++) /* insertion sort: decreasing work, then index */
        for (uint64_t b = a;
             b > 0 && (work[order[b]] > work[order[b - 1]] ||
                       (work[order[b]] == work[order[b - 1]] && order[b] < order[b - 1]));
             b--) {
          uint64_t x = order[b];
          order[b] = order[b - 1];
          order[b - 1] = x;
        }
      int first = 1;
      for (uint32_t s = 0; s < N; s++) first &= own[order[s]] == s + 1;
      AS_EXPECT(first, "N = %u: the costliest trials do not open the shards in order", N);
      free(order);
    }
    /* A pure function of (spec, N). */
    AS_EXPECT(as_shard_owners(spec, N, again, NULL) == AS_OK &&
                  memcmp(own, again, T * sizeof *own) == 0,
              "N = %u: not deterministic", N);
  }
  AS_EXPECT(as_shard_owners(spec, 0, own, NULL) == AS_ERR_ARG, "N = 0 accepted");
  as_error_clear();
  free(work);
  free(own);
  free(again);
  as_spec_destroy(&spec);
}

int main(void) {
  test_names();
  test_split();
  return as_test_finish("test_shard");
}
