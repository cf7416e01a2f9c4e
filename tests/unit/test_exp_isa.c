/* The attention kernels' exponential and the small-shape kernels on every instruction set.
 *
 * Accuracy: e^a = (e^r 2^(j/8)) 2^m with |r| <= ln2 / 16, a polynomial of degree 7 (AS_EXP_POLY,
 * within 2.0e-17 relative: tests/py/test_exp_poly.py) by Horner's rule in FMAs and 2^(j/8) from
 * a table of doubles rounded to nearest (AS_EXP_TABLE); each FMA rounds once, the polynomial's
 * terms after the first two are below 0.03 of the running value, and the table entry and the
 * product with it add one rounding each, so the result
 * is within a small multiple of the unit roundoff u = 2^-53 of e^a. Checked: at most 4u (2 ulp)
 * against expl on random exponents over the whole range, exact 1 at 0, exact 0 below the cut, no
 * subnormal result above it. Bits: the AVX-512F, AVX2 and baseline versions (those the CPU has)
 * give the same bits for the exponential of arrays of every length, the rows kernel and the
 * trials-as-lanes kernel, and a lane of the lanes kernel has the bits of the rows kernel on that
 * trial alone. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/batch.h"
#include "attnsweep/rng.h"
#include "linalg_dyn.h"

enum { NMAX = 40, DMAX = 5, LD = 40, L = AS_BATCH_LANES };

static int same_bits(const double *a, const double *b, size_t len) {
  return memcmp(a, b, len * sizeof(double)) == 0;
}

/* One trial's kernel inputs: A = G M (AT its transpose, zero-padded), G, Y in [-1, 1]. */
typedef struct trial_in {
  double AT[DMAX * LD], G[NMAX * DMAX], Y[NMAX * DMAX], c;
} trial_in;

static void make_trial(as_rng *r, int n, int d, double c, trial_in *t) {
  double M[DMAX * DMAX];
  as_rng_fill_uniform(r, t->G, (size_t)n * d, -1.0, 1.0);
  as_rng_fill_uniform(r, t->Y, (size_t)n * d, -1.0, 1.0);
  as_rng_fill_uniform(r, M, (size_t)d * d, -2.0, 2.0);
  memset(t->AT, 0, sizeof t->AT);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < d; k++) {
      double s = 0.0;
      for (int q = 0; q < d; q++) s += t->G[i * d + q] * M[q * d + k];
      t->AT[k * LD + i] = s;
    }
  t->c = c;
}

int main(void) {
  as_rng r;
  as_rng_init(&r, 17, 0, 5);
  /* Accuracy against expl, on the default instruction set. */
  {
    enum { N = 1 << 16 };
    static double a[N], e[N];
    as_rng_fill_uniform(&r, a, N, -AS_EXP_CUT, 0.0);
    for (int i = 0; i < N; i += 3) a[i] *= 1e-3; /* many small exponents too */
    memcpy(e, a, sizeof a);
    as_attention_exp_nonpositive(N, e);
    double worst = 0.0, at = 0.0;
    for (int i = 0; i < N; i++) {
      const long double t = expl((long double)a[i]);
      const double rel = (double)fabsl(((long double)e[i] - t) / t);
      if (!(rel <= worst)) worst = rel, at = a[i];
    }
    AS_EXPECT(worst <= 4.0 * DBL_EPSILON / 2, "relative error %.3g (%.2f ulp) at a = %.17g", worst,
              worst / DBL_EPSILON, at);
    double s[7] = {0.0,     -0.0,      -AS_EXP_CUT, nextafter(-AS_EXP_CUT, -INFINITY),
                   -1000.0, -INFINITY, NAN};
    as_attention_exp_nonpositive(7, s);
    AS_EXPECT(s[0] == 1.0 && s[1] == 1.0, "e^0 = %.17g, e^-0 = %.17g", s[0], s[1]);
    AS_EXPECT(s[2] >= DBL_MIN && fabs(s[2] / exp(-AS_EXP_CUT) - 1.0) < 1e-15,
              "e^-cut = %.17g (normal, accurate)", s[2]);
    AS_EXPECT(s[3] == 0.0 && s[4] == 0.0 && s[5] == 0.0 && s[6] == 0.0,
              "below the cut, -inf and NaN: %g %g %g %g", s[3], s[4], s[5], s[6]);
  }
  /* The same bits on every instruction set the CPU has. */
  const int top = as_attention_force_isa(2);
  printf("instruction sets compared: 0 .. %d\n", top);
  AS_EXPECT(top >= 0 && top <= 2, "isa %d", top);
  {
    static const int lens[] = {1, 2, 3, 7, 8, 31, 33, 100, 1001};
    for (unsigned q = 0; q < sizeof lens / sizeof lens[0]; q++) {
      double a[1001], ref[1001], got[1001];
      as_rng_fill_uniform(&r, a, (size_t)lens[q], -750.0, 0.0);
      for (int i = 0; i < lens[q]; i += 4) a[i] *= 1e-2;
      for (int isa = 0; isa <= top; isa++) {
        as_attention_force_isa(isa);
        double *out = isa == 0 ? ref : got;
        memcpy(out, a, (size_t)lens[q] * sizeof(double));
        as_attention_exp_nonpositive(lens[q], out);
        if (isa > 0)
          AS_EXPECT(same_bits(ref, got, (size_t)lens[q]), "exp of %d entries: isa %d != 0", lens[q],
                    isa);
      }
    }
  }
  {
    static const int shapes[][2] = {{1, 1}, {3, 2}, {8, 2}, {20, 2}, {21, 3}, {37, 5}, {40, 1}};
    static const double cs[] = {0.5, 30.0, 2000.0};
    for (unsigned q = 0; q < sizeof shapes / sizeof shapes[0]; q++)
      for (unsigned ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
        const int n = shapes[q][0], d = shapes[q][1];
        static trial_in tr[L];
        for (int l = 0; l < L; l++) make_trial(&r, n, d, cs[ci] * (1.0 + 0.1 * l), &tr[l]);
        /* Lane-interleaved copies for the lanes kernel. */
        static double A[NMAX * DMAX * L], G[NMAX * DMAX * L], Y[NMAX * DMAX * L], c[L], e[NMAX * L],
            Hl[3][NMAX * DMAX * L];
        for (int l = 0; l < L; l++) {
          c[l] = tr[l].c;
          for (int i = 0; i < n; i++)
            for (int k = 0; k < d; k++) {
              A[(i * d + k) * L + l] = tr[l].AT[k * LD + i];
              G[(i * d + k) * L + l] = tr[l].G[i * d + k];
              Y[(i * d + k) * L + l] = tr[l].Y[i * d + k];
            }
        }
        static double PT[3][L][NMAX * LD], H[3][L][NMAX * DMAX];
        for (int isa = 0; isa <= top; isa++) {
          as_attention_force_isa(isa);
          for (int l = 0; l < L; l++) {
            memset(PT[isa][l], 0, sizeof PT[isa][l]);
            as_attention_small(n, d, LD, tr[l].AT, tr[l].G, tr[l].c, tr[l].Y, PT[isa][l],
                               H[isa][l]);
          }
          as_attention_small_lanes(n, d, A, G, c, Y, Hl[isa], e);
          int bad_rows = 0, bad_lanes = 0;
          for (int l = 0; l < L; l++) {
            double rowP[NMAX * NMAX], refP[NMAX * NMAX];
            for (int j = 0; j < n; j++)
              for (int i = 0; i < n; i++) {
                rowP[i * n + j] = PT[isa][l][j * LD + i];
                refP[i * n + j] = PT[0][l][j * LD + i];
              }
            bad_rows += !same_bits(rowP, refP, (size_t)n * n) ||
                        !same_bits(H[isa][l], H[0][l], (size_t)n * d);
            for (int q2 = 0; q2 < n * d; q2++)
              bad_lanes += memcmp(&Hl[isa][q2 * L + l], &H[0][l][q2], sizeof(double)) != 0;
          }
          AS_EXPECT(bad_rows == 0, "n %d d %d c %g: rows kernel, isa %d: %d trials differ from 0",
                    n, d, cs[ci], isa, bad_rows);
          AS_EXPECT(bad_lanes == 0,
                    "n %d d %d c %g: lanes kernel, isa %d: %d entries differ from the rows kernel",
                    n, d, cs[ci], isa, bad_lanes);
        }
      }
  }
  as_attention_force_isa(-1);
  return as_test_finish("test_exp_isa");
}
