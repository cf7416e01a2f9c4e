/* The Butcher tableaus satisfy, in exact rational arithmetic, the order conditions of their
 * declared order (and of the embedded solution's), and fail one of the next order, so the
 * declared order is neither too high nor too low; their shape (explicit, c = row sums of a,
 * first same as last) holds; the stage count of the cost model is the tableau's.
 *
 * Order conditions (Butcher): for every rooted tree t with |t| <= p,
 *   sum_i b_i Phi_i(t) = 1 / gamma(t),
 * Phi_i(leaf) = 1, Phi_i([t_1 ... t_m]) = prod_k sum_j a_ij Phi_j(t_k),
 * gamma(leaf) = 1, gamma([t_1 ... t_m]) = |t| prod_k gamma(t_k).
 * (1 tree of order 1, 1 of order 2, 2 of order 3, 4 of order 4, 9 of order 5, 20 of order 6.) */
#include <stdint.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/enums.h"
#include "attnsweep/tableau.h"

/* ---------------------------------------------------------------- exact rationals */

typedef __int128 big;
typedef struct {
  big p, q; /* q > 0, gcd(p, q) = 1 */
} rat;

static int overflow = 0; /* set when an operation would overflow: the test then fails */

static big gcd(big a, big b) {
  if (a < 0) a = -a;
  while (b != 0) {
    big t = a % b;
    a = b;
    b = t < 0 ? -t : t;
  }
  return a;
}

static rat mk(big p, big q) {
  if (q < 0) p = -p, q = -q;
  big g = gcd(p, q);
  if (g > 1) p /= g, q /= g;
  rat r = {p, q};
  return r;
}

static rat from(as_rational x) {
  return x.num == 0 ? mk(0, 1) : mk(x.num, x.den);
}

static big mul_big(big a, big b) {
  big r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow = 1;
  return r;
}

static rat mul(rat a, rat b) {
  big g1 = gcd(a.p, b.q), g2 = gcd(b.p, a.q);
  if (g1 == 0) g1 = 1;
  if (g2 == 0) g2 = 1;
  return mk(mul_big(a.p / g1, b.p / g2), mul_big(a.q / g2, b.q / g1));
}

static rat add(rat a, rat b) {
  big g = gcd(a.q, b.q);
  big p = 0;
  if (__builtin_add_overflow(mul_big(a.p, b.q / g), mul_big(b.p, a.q / g), &p)) overflow = 1;
  return mk(p, mul_big(a.q / g, b.q));
}

static int eq(rat a, rat b) {
  return a.p == b.p && a.q == b.q;
}

static double val(rat a) {
  return (double)a.p / (double)a.q;
}

/* ---------------------------------------------------------------- rooted trees */

#define MAX_ORDER 6
#define MAX_TREES 64
#define MAX_KIDS MAX_ORDER

typedef struct {
  int order, nk;
  int kid[MAX_KIDS]; /* indices of the subtrees at the root, non-decreasing */
} tree;

static tree trees[MAX_TREES];
static int n_trees = 0;

/* Every multiset of trees (indices >= from, non-decreasing) of total order `left` hung
 * under a new root of order `order`. */
static void hang(int order, int left, int from, int *kids, int nk) {
  if (left == 0) {
    tree *t = &trees[n_trees++];
    t->order = order;
    t->nk = nk;
    memcpy(t->kid, kids, sizeof(int) * (size_t)nk);
    return;
  }
  for (int i = from; i < n_trees && trees[i].order < order; i++) {
    if (trees[i].order > left) continue;
    kids[nk] = i;
    hang(order, left - trees[i].order, i, kids, nk + 1);
  }
}

static void make_trees(void) {
  int kids[MAX_KIDS];
  for (int k = 1; k <= MAX_ORDER; k++) hang(k, k - 1, 0, kids, 0);
}

/* Phi(t) (s entries) and gamma(t) for tableau tb. */
static void phi(const as_tableau *tb, int t, rat *out, rat *gamma) {
  const int s = tb->stages;
  const tree *tr = &trees[t];
  *gamma = mk(tr->order, 1);
  for (int i = 0; i < s; i++) out[i] = mk(1, 1);
  for (int k = 0; k < tr->nk; k++) {
    rat sub[AS_RK_MAX_STAGES], g;
    phi(tb, tr->kid[k], sub, &g);
    *gamma = mul(*gamma, g);
    for (int i = 0; i < s; i++) {
      rat acc = mk(0, 1);
      for (int j = 0; j < s; j++) acc = add(acc, mul(from(tb->a[i][j]), sub[j]));
      out[i] = mul(out[i], acc);
    }
  }
}

/* The highest p such that weights w satisfy every condition of order <= p (MAX_ORDER when all
 * hold); prints the first violated condition. */
static int order_of(const as_tableau *tb, const as_rational *w, const char *what) {
  for (int t = 0; t < n_trees; t++) {
    rat ph[AS_RK_MAX_STAGES], g, sum = mk(0, 1);
    phi(tb, t, ph, &g);
    for (int i = 0; i < tb->stages; i++) sum = add(sum, mul(from(w[i]), ph[i]));
    if (!eq(sum, mk(1, g.p))) { /* gamma is an integer: g.q == 1 */
      printf(
          "%s %s: first violated condition: tree %d of order %d: sum = %.17g, 1/gamma = 1/%lld\n",
          as_enum_label(&as_method_table, (int)tb->method), what, t, trees[t].order, val(sum),
          (long long)g.p);
      return trees[t].order - 1;
    }
  }
  return MAX_ORDER;
}

int main(void) {
  make_trees();
  {
    int count[MAX_ORDER + 1] = {0};
    for (int t = 0; t < n_trees; t++) count[trees[t].order]++;
    const int expect[MAX_ORDER + 1] = {0, 1, 1, 2, 4, 9, 20}; /* OEIS A000081 */
    for (int k = 1; k <= MAX_ORDER; k++)
      AS_EXPECT(count[k] == expect[k], "%d rooted trees of order %d, expected %d", count[k], k,
                expect[k]);
  }

  int with_tableau = 0;
  for (int m = 0; m < AS_METHOD_COUNT; m++) {
    const char *name = as_enum_label(&as_method_table, m);
    const as_tableau *tb = as_tableau_of((as_method)m);
    if (m == AS_METHOD_LAYERS) {
      AS_EXPECT(tb == NULL, "layers is a map, not a Runge-Kutta method");
      AS_EXPECT(as_method_stages((as_method)m) == 1, "layers: one attention per layer, got %d",
                as_method_stages((as_method)m));
      continue;
    }
    AS_EXPECT(tb != NULL, "method %s has no tableau", name);
    if (!tb) continue;
    with_tableau++;
    const int s = tb->stages;
    AS_EXPECT(tb->method == (as_method)m, "%s: tableau of method %d", name, (int)tb->method);
    AS_EXPECT(s >= 1 && s <= AS_RK_MAX_STAGES, "%s: %d stages", name, s);
    if (s < 1 || s > AS_RK_MAX_STAGES) continue;
    AS_EXPECT(tb->order >= 1 && tb->order < MAX_ORDER, "%s: order %d (this test checks < %d)", name,
              tb->order, MAX_ORDER);
    AS_EXPECT(tb->order_hat >= 0 && tb->order_hat < tb->order, "%s: embedded order %d", name,
              tb->order_hat);
    /* Every entry is a reduced-or-not fraction with a positive denominator, or left out. */
    for (int i = 0; i < AS_RK_MAX_STAGES; i++) {
      const as_rational *row[] = {&tb->c[i], &tb->b[i], &tb->bhat[i]};
      for (int k = 0; k < 3; k++)
        AS_EXPECT(row[k]->num == 0 || row[k]->den > 0, "%s: entry %d: %d/%d", name, i, row[k]->num,
                  row[k]->den);
      for (int j = 0; j < AS_RK_MAX_STAGES; j++)
        AS_EXPECT(tb->a[i][j].num == 0 || (tb->a[i][j].den > 0 && j < i && i < s),
                  "%s: a[%d][%d] = %d/%d (explicit: strictly lower triangular, within s)", name, i,
                  j, tb->a[i][j].num, tb->a[i][j].den);
      if (i >= s)
        AS_EXPECT(tb->c[i].num == 0 && tb->b[i].num == 0 && tb->bhat[i].num == 0,
                  "%s: entries beyond stage %d", name, s);
    }
    /* c_i = sum_j a_ij (the stage times are those of the stage states). */
    AS_EXPECT(from(tb->c[0]).p == 0, "%s: c_0 = %g", name, as_rational_value(tb->c[0]));
    for (int i = 0; i < s; i++) {
      rat sum = mk(0, 1);
      for (int j = 0; j < i; j++) sum = add(sum, from(tb->a[i][j]));
      AS_EXPECT(eq(sum, from(tb->c[i])), "%s: row %d of a sums to %g, c = %g", name, i, val(sum),
                as_rational_value(tb->c[i]));
    }
    /* First same as last: the last stage is the solution at t + h. */
    if (tb->fsal) {
      AS_EXPECT(s >= 2 && eq(from(tb->c[s - 1]), mk(1, 1)) && tb->b[s - 1].num == 0, "%s: fsal",
                name);
      for (int j = 0; j < s; j++)
        AS_EXPECT(eq(from(tb->a[s - 1][j]), from(tb->b[j])), "%s: fsal: a[%d][%d] != b[%d]", name,
                  s - 1, j, j);
    }
    AS_EXPECT(as_method_stages((as_method)m) == s - tb->fsal, "%s: cost-model stages %d", name,
              as_method_stages((as_method)m));

    /* The order conditions, exactly: all of order <= p hold, one of order p + 1 fails. */
    overflow = 0;
    int p = order_of(tb, tb->b, "b");
    printf("%s: %d stages%s, conditions of b hold to order %d (declared %d)\n", name, s,
           tb->fsal ? " (fsal)" : "", p, tb->order);
    AS_EXPECT(p == tb->order, "%s: b has order %d, declared %d", name, p, tb->order);
    if (tb->order_hat > 0) {
      int ph = order_of(tb, tb->bhat, "bhat");
      printf("%s: conditions of bhat hold to order %d (declared %d)\n", name, ph, tb->order_hat);
      AS_EXPECT(ph == tb->order_hat, "%s: bhat has order %d, declared %d", name, ph, tb->order_hat);
      /* The doubles the stepper uses: b and bhat differ (an error estimate exists). */
      int differ = 0;
      for (int i = 0; i < s; i++)
        differ |= as_rational_value(tb->b[i]) != as_rational_value(tb->bhat[i]);
      AS_EXPECT(differ, "%s: b == bhat", name);
    }
    AS_EXPECT(!overflow, "%s: 128-bit overflow in the exact arithmetic", name);
  }
  AS_EXPECT(with_tableau == AS_METHOD_COUNT - 1, "%d methods have a tableau", with_tableau);
  AS_EXPECT(as_tableau_of(AS_METHOD_COUNT) == NULL && as_method_stages(AS_METHOD_COUNT) == 0,
            "a value outside the list has no tableau");
  return as_test_finish("test_dynamics_tableau");
}
