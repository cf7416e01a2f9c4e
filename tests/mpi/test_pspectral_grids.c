/* Grids of the large-d path on 1 to 6 ranks (tests/CMakeLists.txt runs this file with each
 * count; a hang fails it by ctest's timeout):
 *   1. the spec's `spectral_grid` rule and as_pspectral_grid_ok agree on every shape up to 8 x 8
 *      (validate refuses exactly the shapes pdhseqr cannot run on), and as_pspectral_create
 *      refuses an unsupported shape and a grid larger than the job, with the same status on
 *      every rank;
 *   2. on supported shapes that fit the job (1x1, 1x2, 2x1, 2x2, 2x3, 3x2; which at which
 *      size: below), including jobs that hold several grids or leave ranks idle, a batch of
 *      the triples that hung (perron d = 512, the issue's; Gaussian d = 520, not a multiple of
 *      the block size; Gaussian d = 300, 4.7 blocks) finishes, every rank holds the same
 *      bits, the eigenvalues agree with LAPACK within 1e-12 |lambda_1| with identical flags
 *      and theorem, and the same shape gives the same bits whatever grid analysed a triple;
 *   3. a stop flag raised on one rank ends the batch with AS_ERR_INTERRUPTED on every rank:
 *      raised by a grid during a triple (after its build), and raised on the last rank only
 *      (which may be idle or in another grid) before the batch (after the first round). */
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/pspectral.h"
#include "attnsweep/spec.h"

#define TOL 1e-10

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

static uint64_t hash_sp(const as_spectral *s) {
  size_t d = (size_t)s->d;
  uint64_t h = 1469598103934665603ull;
  h = hash_bytes(s->wr, d * sizeof(double), h);
  h = hash_bytes(s->wi, d * sizeof(double), h);
  h = hash_bytes(s->phi1, d * sizeof(double), h);
  h = hash_bytes(s->l1, d * sizeof(double), h);
  h = hash_bytes(s->proj_f, d * d * sizeof(double), h);
  if (s->dim_pos > 0) h = hash_bytes(s->proj_pos, d * d * sizeof(double), h);
  double sc[] = {s->lambda1_re, s->lambda2_abs, s->gap, s->margin, s->m_min_sym_eig};
  h = hash_bytes(sc, sizeof sc, h);
  int iv[] = {(int)s->flags, s->kpos, s->dim_f, s->dim_pos, (int)s->theorem};
  return hash_bytes(iv, sizeof iv, h);
}

/* The triples of the batch: cycling through the three that hung. */
enum { NKIND = 3 };
static const int kind_d[NKIND] = {512, 520, 300};
static const as_vfamily kind_vf[NKIND] = {AS_V_PERRON, AS_V_GAUSSIAN, AS_V_GAUSSIAN};

static void trial_of(uint64_t k, as_trial *t) {
  int kind = (int)(k % NKIND);
  as_trial_defaults(t);
  t->d = kind_d[kind];
  t->master_seed = 22;
  t->triple_key = (uint64_t)kind; /* the same triple for every k of a kind */
  t->triple.vfamily = kind_vf[kind];
  t->triple.mfamily = AS_M_IDENTITY;
}

typedef struct bctx {
  volatile sig_atomic_t *flag; /* raised by the build of triple raise_at (NULL: never) */
  uint64_t raise_at;
} bctx;

static as_status build(uint64_t k, void *vctx, as_triple **out) {
  as_status st = AS_OK;
  bctx *c = vctx;
  as_triple *tr = NULL;
  as_trial t;
  trial_of(k, &t);
  AS_TRY(as_triple_create(t.d, t.d, &tr));
  AS_TRY(as_triple_build(&t, tr));
  if (c && c->flag && k == c->raise_at) *c->flag = 1;
  *out = tr;
  tr = NULL;
cleanup:
  as_triple_destroy(&tr);
  return st;
}

static int all_ranks(int ok) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* 1. The spec's rule is pspectral's rule. */
  if (rank == 0) {
    for (int p = 1; p <= 8; p++)
      for (int q = 1; q <= 8; q++) {
        char text[128];
        snprintf(text, sizeof text, "spectral_grid: %dx%d\nsweep: {d: 2}\n", p, q);
        as_spec *s = NULL;
        as_spec_diags dg = {0, 0, NULL};
        as_status st = as_spec_parse(text, strlen(text), "grid.yaml", &dg, &s);
        int ok = as_pspectral_grid_ok(p, q, NULL, 0);
        AS_EXPECT((st == AS_OK) == ok, "%dx%d: spec %s, pspectral %s", p, q,
                  st == AS_OK ? "accepts" : "refuses", ok ? "accepts" : "refuses");
        if (st == AS_OK) {
          int gp = 0, gq = 0;
          as_spec_spectral_grid(s, &gp, &gq);
          AS_EXPECT(gp == p && gq == q, "%dx%d read back as %dx%d", p, q, gp, gq);
        } else {
          AS_EXPECT(dg.count == 1 && dg.items[0].line == 1 && dg.items[0].col == 16,
                    "%dx%d: one diagnostic at 1:16 (%d)", p, q, dg.count);
        }
        as_spec_diags_free(&dg);
        as_spec_destroy(&s);
        as_error_clear();
      }
    const char *bad[] = {
        "spectral_grid: 2\nsweep: {d: 2}\n",     "spectral_grid: 2x\nsweep: {d: 2}\n",
        "spectral_grid: 0x2\nsweep: {d: 2}\n",   "spectral_grid: [2, 2]\nsweep: {d: 2}\n",
        "spectral_grid: 2x2x2\nsweep: {d: 2}\n", "spectral_grid: 65x65\nsweep: {d: 2}\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      as_spec *s = NULL;
      as_spec_diags dg = {0, 0, NULL};
      AS_EXPECT(as_spec_parse(bad[i], strlen(bad[i]), "g.yaml", &dg, &s) == AS_ERR_SPEC &&
                    dg.count == 1,
                "refused: %s", bad[i]);
      as_spec_diags_free(&dg);
      as_spec_destroy(&s);
      as_error_clear();
    }
    as_spec *s = NULL;
    as_spec_diags dg = {0, 0, NULL};
    const char *def = "sweep: {d: 2}\n";
    if (as_spec_parse(def, strlen(def), "g.yaml", &dg, &s) == AS_OK) {
      int gp = 0, gq = 0;
      as_spec_spectral_grid(s, &gp, &gq);
      AS_EXPECT(gp == AS_PSPECTRAL_GRID_ROWS_DEFAULT && gq == AS_PSPECTRAL_GRID_COLS_DEFAULT,
                "default grid %dx%d", gp, gq);
    }
    as_spec_diags_free(&dg);
    as_spec_destroy(&s);
  }

  /* ... and create refuses what cannot run, on every rank alike. */
  as_pspectral *ps = NULL;
  as_status st = as_pspectral_create(MPI_COMM_WORLD, 0, 1, 3, &ps);
  AS_EXPECT(all_ranks(st == AS_ERR_ARG && ps == NULL), "1x3 refused (%d)", st);
  as_error_clear();
  st = as_pspectral_create(MPI_COMM_WORLD, 0, 2, (size + 2) / 2, &ps);
  AS_EXPECT(all_ranks(st == AS_ERR_ARG && ps == NULL), "a grid larger than the job refused (%d)",
            st);
  as_error_clear();

  /* 2. Batches on every supported shape that fits. */
  as_spectral *ref[NKIND] = {NULL};
  for (int k = 0; k < NKIND; k++) {
    AS_EXPECT(as_spectral_create(kind_d[k], &ref[k]) == AS_OK, "alloc");
    if (rank == 0) {
      as_triple *tr = NULL;
      AS_EXPECT(build((uint64_t)k, NULL, &tr) == AS_OK &&
                    as_spectral_analyze(tr, TOL, ref[k]) == AS_OK,
                "lapack %d: %s", k, as_error_get()->message);
      as_triple_destroy(&tr);
    }
  }
  /* Shapes per job size (the suite's time on 2 cores): 1x1 always (size grids at once), 1x2
   * from 2 ranks (with idle ranks at 3 and 5, three grids at 6); 2x1 at 2, 2x2 at 4 and 5, 2x3
   * and 3x2 at 6. Shape [2] is the smallest rank count that tries it, [3] the largest. */
  const int shapes[][4] = {{1, 1, 1, 6}, {1, 2, 2, 6}, {2, 1, 2, 2},
                           {2, 2, 4, 5}, {2, 3, 6, 6}, {3, 2, 6, 6}};
  for (size_t g = 0; g < sizeof shapes / sizeof shapes[0]; g++) {
    int p = shapes[g][0], q = shapes[g][1];
    if (size < shapes[g][2] || size > shapes[g][3]) continue;
    st = as_pspectral_create(MPI_COMM_WORLD, 0, p, q, &ps);
    AS_EXPECT(all_ranks(st == AS_OK), "create %dx%d: %s", p, q, as_error_get()->message);
    if (st != AS_OK) continue;
    int G = as_pspectral_grids(ps);
    AS_EXPECT(G == size / (p * q), "%dx%d: %d grids on %d ranks", p, q, G, size);
    /* Two rounds and a partial one when there are several grids; at least one of each kind. */
    uint64_t n = (uint64_t)(2 * G + 1) > NKIND ? (uint64_t)(2 * G + 1) : NKIND;
    as_spectral *sp[16] = {NULL};
    as_status ist[16];
    char msg[16][AS_RECORD_MSG];
    for (uint64_t k = 0; k < n; k++) {
      as_trial t;
      trial_of(k, &t);
      as_spectral_create(t.d, &sp[k]);
    }
    as_pspectral_batch b = {n, build, NULL, TOL, NULL, NULL, 0, NULL};
    double t0 = MPI_Wtime();
    st = as_pspectral_run(ps, &b, sp, ist, msg);
    AS_EXPECT(all_ranks(st == AS_OK), "%dx%d: run: %s", p, q, as_error_get()->message);
    if (rank == 0)
      printf("grid %dx%d, %d grid(s) on %d ranks: %llu triples in %.1f s\n", p, q, G, size,
             (unsigned long long)n, MPI_Wtime() - t0);
    for (uint64_t k = 0; k < n && st == AS_OK; k++) {
      AS_EXPECT(ist[k] == AS_OK, "%dx%d triple %llu: %s", p, q, (unsigned long long)k, msg[k]);
      uint64_t h = hash_sp(sp[k]), h0 = h;
      MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
      AS_EXPECT(all_ranks(h == h0), "%dx%d triple %llu: ranks hold different results", p, q,
                (unsigned long long)k);
      /* The same triple analysed by another grid of the same shape: the same bits. */
      if (k >= NKIND)
        AS_EXPECT(h == hash_sp(sp[k % NKIND]),
                  "%dx%d: triple %llu differs from %llu (grids %d, %d)", p, q,
                  (unsigned long long)k, (unsigned long long)(k % NKIND), (int)(k % G),
                  (int)((k % NKIND) % G));
      if (rank == 0 && k < NKIND) {
        const as_spectral *a = ref[k], *c = sp[k];
        double e = 0, s = hypot(a->wr[0], a->wi[0]);
        for (int i = 0; i < a->d; i++) e = fmax(e, hypot(a->wr[i] - c->wr[i], a->wi[i] - c->wi[i]));
        AS_EXPECT(e <= 1e-12 * s, "%dx%d d=%d: eigenvalues differ by %.3g relative", p, q, a->d,
                  e / s);
        const uint32_t mask = ~(uint32_t)(AS_FLAG_DISTRIBUTED | AS_FLAG_V_DIAGONALISABLE);
        AS_EXPECT((a->flags & mask) == (c->flags & mask) && a->theorem == c->theorem &&
                      a->dim_f == c->dim_f,
                  "%dx%d d=%d: flags 0x%x/0x%x theorem %d/%d dim F %d/%d", p, q, a->d, a->flags,
                  c->flags, a->theorem, c->theorem, a->dim_f, c->dim_f);
        if (k == 0) AS_EXPECT(c->theorem == AS_THM_GOOD, "perron d = 512 is a good triple");
      }
    }
    for (uint64_t k = 0; k < n; k++) as_spectral_destroy(&sp[k]);

    /* 3. Stops. (a) Raised on the first grid's first rank by the build of triple 0. */
    volatile sig_atomic_t flag = 0;
    bctx cx = {&flag, 0};
    uint64_t ns = (uint64_t)(2 * G + 1);
    for (uint64_t k = 0; k < ns; k++) {
      as_trial t;
      trial_of(k, &t);
      as_spectral_create(t.d, &sp[k]);
    }
    as_pspectral_batch bs = {ns, build, &cx, TOL, &flag, NULL, 0, NULL};
    st = as_pspectral_run(ps, &bs, sp, ist, msg);
    AS_EXPECT(all_ranks(st == AS_ERR_INTERRUPTED), "%dx%d: stop during triple 0: %d", p, q, st);
    AS_EXPECT(all_ranks(ist[0] == AS_ERR_INTERRUPTED),
              "%dx%d: triple 0 was stopped inside its analysis (%d)", p, q, ist[0]);
    as_error_clear();
    /* (b) Raised before the batch on the last rank only: the first round still completes. */
    flag = rank == size - 1;
    cx.flag = NULL;
    st = as_pspectral_run(ps, &bs, sp, ist, msg);
    AS_EXPECT(all_ranks(st == AS_ERR_INTERRUPTED), "%dx%d: stop on the last rank: %d", p, q, st);
    as_error_clear();
    for (uint64_t k = 0; k < ns; k++) as_spectral_destroy(&sp[k]);
    as_pspectral_destroy(&ps);
  }
  for (int k = 0; k < NKIND; k++) as_spectral_destroy(&ref[k]);

  int fails = as_test_failures_, all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rc = as_test_finish("test_pspectral_grids");
  MPI_Finalize();
  return all ? 1 : rc;
}
