/* attention_stream.c: H = P Y for many tokens without forming P (linalg_dyn.h).
 *
 * Above AS_ATTENTION_STREAM_N tokens the dynamics never holds the n x n scores: rows are
 * taken AS_STREAM_TILE at a time, columns AS_STREAM_TILE at a time, and each row keeps an
 * online softmax (Milakov and Gimelshein 2018, "Online normalizer calculation for softmax"):
 * its running maximum m, the sum l = sum_j e^{c (s_j - m)} and the accumulator
 * a = sum_j e^{c (s_j - m)} y_j; when a tile raises m to m', l and a are multiplied by
 * e^{c (m - m')}. Memory: one tile of scores (AS_STREAM_TILE^2) and the row states
 * (AS_STREAM_TILE (d + 5)), besides the n x d inputs.
 *
 * The rules are those of as_attention_softmax_hot (attention.c), on the row's running top
 * two: the largest score, the largest strictly below it and the count of ties at the top
 * (merged tile by tile, so they are exactly the dense path's), the argument of the first
 * maximum; a row whose gap times c exceeds AS_EXP_CUT is exactly one-hot (H_i = y_arg, copied);
 * c = +inf is hardmax, ties sharing equally (H_i = mean of the tied y_j); other rows use the
 * same exponential (as_attention_exp_nonpositive: exactly 0 below -AS_EXP_CUT). The arithmetic
 * differs from the dense path only in rounding (the rescaling multiplies two exponentials,
 * and H = a / l instead of sum_j (e_j / l) y_j): a few ulp per stage
 * (tests/unit/test_attention_stream.c compares the two to 1e-13 at the threshold).
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "linalg_dyn.h"

/* The largest entry of s[0..m), the largest strictly below it (-DBL_MAX if none), the count
 * equal to the largest and the index of its first occurrence. Finite input. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3", "no-trapping-math", "finite-math-only", "no-signed-zeros")))
#endif
static void
tile_top2(int m, const double *s, double *best_out, double *second_out, int *ties_out,
          int *arg_out) {
  double best = s[0];
  for (int j = 1; j < m; j++) best = s[j] > best ? s[j] : best;
  double second = -DBL_MAX;
  int ties = 0;
  for (int j = 0; j < m; j++) {
    double v = s[j] < best ? s[j] : -DBL_MAX;
    second = v > second ? v : second;
    ties += s[j] >= best;
  }
  int arg = 0;
  while (s[arg] != best) arg++;
  *best_out = best;
  *second_out = second;
  *ties_out = ties;
  *arg_out = arg;
}

size_t as_attention_stream_doubles(int d) {
  return (size_t)AS_STREAM_TILE * AS_STREAM_TILE + (size_t)AS_STREAM_TILE * ((size_t)d + 3);
}

int as_attention_stream(int n, int d, const double *A, const double *G, double logc,
                        const double *Y, double *H, int *hot, double *ws, int *iws) {
  return as_attention_stream_rows(n, d, 0, n, A, G, logc, Y, H, hot, ws, iws);
}

/* Rows [lo, hi) only: the tiles start at lo, so with lo a multiple of AS_STREAM_TILE every tile
 * has the shape (and the inputs) it has in the whole-matrix call, and each row its bits. */
int as_attention_stream_rows(int n, int d, int lo, int hi, const double *A, const double *G,
                             double logc, const double *Y, double *H, int *hot, double *ws,
                             int *iws) {
  const int T = AS_STREAM_TILE;
  const double c = exp(logc); /* +inf: hardmax; 0: uniform rows */
  const int hard = c == INFINITY;
  double *St = ws, *acc = St + (size_t)T * T, *best = acc + (size_t)T * d, *second = best + T,
         *sum = second + T;
  int *ties = iws, *arg = iws + T;
  int onehot = 0;
  for (int i0 = lo; i0 < hi; i0 += T) {
    const int r = hi - i0 < T ? hi - i0 : T;
    for (int i = 0; i < r; i++) {
      best[i] = -INFINITY;
      second[i] = -DBL_MAX;
      sum[i] = 0.0;
      ties[i] = 0;
      arg[i] = 0;
    }
    memset(acc, 0, (size_t)r * d * sizeof *acc);
    for (int j0 = 0; j0 < n; j0 += T) {
      const int q = n - j0 < T ? n - j0 : T;
      /* Scores of the tile: S_ij = <A_i, G_j>. */
      as_mm(0, 1, r, q, d, 1.0, A + (size_t)i0 * d, d, G + (size_t)j0 * d, d, 0.0, St, q);
      for (int i = 0; i < r; i++) {
        double *s = St + (size_t)i * q, *a = acc + (size_t)i * d;
        double tb, ts, old = best[i];
        int tt, ta;
        tile_top2(q, s, &tb, &ts, &tt, &ta);
        if (tb > old) { /* a new maximum: the previous terms shrink by e^{c (old - new)} */
          second[i] = old > ts ? old : ts;
          best[i] = tb;
          ties[i] = tt;
          arg[i] = j0 + ta;
          double scale = 0.0;
          if (!hard && old > -INFINITY) {
            scale = c * (old - tb);
            as_attention_exp_nonpositive(1, &scale);
          }
          sum[i] *= scale;
          for (int k = 0; k < d; k++) a[k] *= scale;
        } else if (tb == old) {
          ties[i] += tt;
          second[i] = second[i] > ts ? second[i] : ts;
        } else {
          second[i] = second[i] > tb ? second[i] : tb;
        }
        const double m = best[i];
        if (hard) { /* the tied maxima, summed (shared equally at the end) */
          for (int j = 0; j < q; j++)
            if (s[j] == m)
              for (int k = 0; k < d; k++) a[k] += Y[(size_t)(j0 + j) * d + k];
        } else {
          for (int j = 0; j < q; j++) s[j] = c * (s[j] - m); /* <= 0 */
        }
      }
      if (hard) continue;
      as_attention_exp_nonpositive(r * q, St);
      for (int i = 0; i < r; i++) {
        const double *e = St + (size_t)i * q;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        int j = 0;
        for (; j + 4 <= q; j += 4) {
          s0 += e[j];
          s1 += e[j + 1];
          s2 += e[j + 2];
          s3 += e[j + 3];
        }
        for (; j < q; j++) s0 += e[j];
        sum[i] += (s0 + s1) + (s2 + s3);
      }
      /* a += E Y (the tile's weights times its tokens). */
      as_mm(0, 0, r, d, q, 1.0, St, q, Y + (size_t)j0 * d, d, 1.0, acc, d);
    }
    for (int i = 0; i < r; i++) {
      double sec = ties[i] > 1 ? best[i] : second[i];
      if (ties[i] == 1 && n == 1) sec = -INFINITY;
      const double gap = best[i] - sec;
      double *h = H + (size_t)(i0 + i) * d;
      const double *a = acc + (size_t)i * d;
      if (gap > 0.0 && (hard || c * gap > AS_EXP_CUT)) { /* saturated: exactly one-hot */
        memcpy(h, Y + (size_t)arg[i] * d, (size_t)d * sizeof *h);
        hot[i0 + i] = arg[i];
        onehot++;
      } else {
        const double inv = hard ? 1.0 / ties[i] : 1.0 / sum[i]; /* sum >= 1: e^0 at the top */
        for (int k = 0; k < d; k++) h[k] = a[k] * inv;
        hot[i0 + i] = -1;
      }
    }
  }
  return onehot;
}
