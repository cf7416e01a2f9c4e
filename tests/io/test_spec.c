/* Sweep specs: SHA-256 vectors, enumeration order, seeds-slowest append, canonical hash,
 * every kind of diagnostic with its line:col, the built-in default sweep. */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/cost.h"
#include "attnsweep/rules.h"
#include "attnsweep/sha256.h"
#include "attnsweep/spec.h"
#include "spec_impl.h"

static as_spec *parse(const char *text) {
  as_spec *s = NULL;
  as_spec_diags dg = {0, 0, NULL};
  as_status st = as_spec_parse(text, strlen(text), "t.yaml", &dg, &s);
  AS_EXPECT(st == AS_OK, "parse failed: %s (%d diags, first %d:%d %s)", as_status_name(st),
            dg.count, dg.count ? dg.items[0].line : 0, dg.count ? dg.items[0].col : 0,
            dg.count ? dg.items[0].message : "");
  as_spec_diags_free(&dg);
  return s;
}

/* Expect the spec to be rejected with a diagnostic at (line, col) whose message contains
 * `needle`. */
static void expect_diag(const char *text, int line, int col, const char *needle) {
  as_spec *s = NULL;
  as_spec_diags dg = {0, 0, NULL};
  as_status st = as_spec_parse(text, strlen(text), "t.yaml", &dg, &s);
  AS_EXPECT(st == AS_ERR_SPEC && s == NULL, "'%s' accepted (status %s)", needle,
            as_status_name(st));
  int found = 0;
  for (int i = 0; i < dg.count; i++)
    if (dg.items[i].line == line && dg.items[i].col == col && strstr(dg.items[i].message, needle))
      found = 1;
  AS_EXPECT(found, "no diagnostic '%s' at %d:%d; got %d, first %d:%d %s", needle, line, col,
            dg.count, dg.count ? dg.items[0].line : 0, dg.count ? dg.items[0].col : 0,
            dg.count ? dg.items[0].message : "-");
  as_spec_diags_free(&dg);
  as_spec_destroy(&s);
}

static void test_sha256(void) {
  char hex[AS_SHA256_HEX];
  as_sha256_hex("abc", 3, hex);
  AS_EXPECT(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
            "abc: %s", hex);
  as_sha256_hex("", 0, hex);
  AS_EXPECT(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0,
            "empty: %s", hex);
  const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  as_sha256_hex(m448, strlen(m448), hex);
  AS_EXPECT(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0,
            "448 bits: %s", hex);
  /* Streaming in odd pieces gives the same digest as one call (block boundaries). */
  as_sha256 c;
  uint8_t d[AS_SHA256_BYTES];
  char one[AS_SHA256_HEX];
  static char big[1000];
  for (int i = 0; i < 1000; i++) big[i] = (char)('a' + i % 26);
  as_sha256_hex(big, sizeof big, one);
  as_sha256_init(&c);
  for (size_t off = 0, k = 1; off < sizeof big; off += k, k = k * 3 % 97 + 1)
    as_sha256_update(&c, big + off, off + k <= sizeof big ? k : sizeof big - off);
  as_sha256_final(&c, d);
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
  AS_EXPECT(strcmp(hex, one) == 0, "streamed %s vs %s", hex, one);
}

static void test_enumeration(void) {
  const char *text = "seed: 7\n"
                     "replicates: 3\n"
                     "sweep:\n"
                     "  concat:\n"
                     "    - {case: a, n: [10, 20], d: [2, 3, 4]}\n"
                     "    - case: b\n"
                     "      vfamily: perron\n"
                     "      zip:\n"
                     "        - {T: [5, 10]}\n"
                     "        - {dt: [0.1, 0.05]}\n";
  as_spec *s = parse(text);
  if (!s) return;
  AS_EXPECT(as_spec_case_count(s) == 2, "cases %d", as_spec_case_count(s));
  AS_EXPECT(as_spec_point_count(s) == 8, "points %llu", (unsigned long long)as_spec_point_count(s));
  AS_EXPECT(as_spec_trial_count(s) == 24, "trials");
  AS_EXPECT(as_spec_seed(s) == 7, "seed");
  AS_EXPECT(strcmp(as_spec_case_name(s, 1), "b") == 0, "case name");
  /* Case a: within a mapping d (schema order before n) is slower than n, whatever the
   * written order: points (d, n) = (2,10) (2,20) (3,10) ... */
  for (uint64_t i = 0; i < 24; i++) {
    as_trial t;
    AS_EXPECT(as_spec_trial(s, i, &t) == AS_OK, "trial %llu", (unsigned long long)i);
    uint64_t p = i % 8, r = i / 8;
    AS_EXPECT(t.index == i && t.replicate == r && t.token_key == i && t.triple_key == i,
              "keys of %llu", (unsigned long long)i);
    AS_EXPECT(t.master_seed == 7, "seed");
    if (p < 6) {
      AS_EXPECT(t.case_id == 0 && t.d == 2 + (int)(p / 2) && t.n == (p % 2 ? 20 : 10),
                "point %llu: case %u d %d n %d", (unsigned long long)p, t.case_id, t.d, t.n);
    } else {
      double T = p == 6 ? 5 : 10, dt = p == 6 ? 0.1 : 0.05;
      AS_EXPECT(t.case_id == 1 && t.triple.vfamily == AS_V_PERRON && t.integ.T == T &&
                    t.integ.dt == dt && t.n == 20,
                "zip point %llu", (unsigned long long)p);
    }
  }
  as_trial t;
  AS_EXPECT(as_spec_trial(s, 24, &t) == AS_ERR_ARG, "out of range");
  AS_EXPECT(as_spec_axis_count(s) == 4, "axes %d", as_spec_axis_count(s));
  as_spec_axis ax;
  AS_EXPECT(as_spec_axis_get(s, 0, &ax) == AS_OK && strcmp(ax.key, "d") == 0 && ax.values == 3 &&
                ax.line == 5 && ax.col == 30,
            "axis 0: %s %d:%d", ax.key, ax.line, ax.col);

  /* More replicates only append trials: the first 24 are unchanged. */
  const char *more = "seed: 7\nreplicates: 5\nsweep:\n  concat:\n"
                     "    - {case: a, n: [10, 20], d: [2, 3, 4]}\n"
                     "    - case: b\n      vfamily: perron\n      zip:\n"
                     "        - {T: [5, 10]}\n        - {dt: [0.1, 0.05]}\n";
  as_spec *s5 = parse(more);
  if (s5) {
    AS_EXPECT(as_spec_trial_count(s5) == 40, "40 trials");
    for (uint64_t i = 0; i < 24; i++) {
      as_trial a, b;
      as_spec_trial(s, i, &a);
      as_spec_trial(s5, i, &b);
      AS_EXPECT(a.d == b.d && a.n == b.n && a.integ.T == b.integ.T && a.case_id == b.case_id &&
                    a.triple_key == b.triple_key && a.token_key == b.token_key &&
                    a.replicate == b.replicate && a.triple.vfamily == b.triple.vfamily,
                "trial %llu changed", (unsigned long long)i);
    }
  }
  as_spec_destroy(&s5);
  as_spec_destroy(&s);

  /* per_parameters: replicates share the triple key, not the token key. */
  s = parse("replicates: 4\nsweep: {d: [2, 3], triple_seed: per_parameters}\n");
  if (s) {
    as_trial a, b;
    as_spec_trial(s, 1, &a);
    as_spec_trial(s, 7, &b);
    AS_EXPECT(a.triple_key == 1 && b.triple_key == 1 && a.token_key != b.token_key && b.d == 3,
              "shared triple key");
  }
  as_spec_destroy(&s);

  /* Inline matrices, inference of families and d, defaults overridden by a case. */
  s = parse("defaults: {n: 7, T: 3}\nsweep:\n  V: [[1, 0, 0], [0, 1, 0], [0, 0, -0.5]]\n"
            "  M: [[2, 0, 0], [0, 1, 0], [0, 0, 1]]\n  T: 9\n"
            "  init: {data: [[1,2,3],[4,5,6],[7,8,9],[0,0,1],[1,1,1],[2,2,2],[3,3,3]]}\n");
  if (s) {
    as_trial t0;
    as_spec_trial(s, 0, &t0);
    AS_EXPECT(t0.d == 3 && t0.n == 7 && t0.integ.T == 9 && t0.triple.vfamily == AS_V_EXPLICIT &&
                  t0.triple.mfamily == AS_M_EXPLICIT && t0.triple.V.data &&
                  t0.triple.V.data[8] == -0.5 && t0.triple.M.data[0] == 2 &&
                  t0.init.kind == AS_INIT_EXPLICIT && t0.init.data.data[3] == 4,
              "explicit data");
  }
  as_spec_destroy(&s);
}

static void test_sha_canonical(void) {
  const char *a = "name: x\nseed: 3\nsweep: {d: [2, 3], T: 15, dt: 0.1}\n";
  const char *b = "# a comment\nseed: 3\nsweep:\n  dt: 1e-1\n  T: 15.0\n  d:\n    - 2\n    - 3\n"
                  "name: \"x\"\n";
  const char *c = "name: x\nseed: 3\nsweep: {d: [2, 3], T: 15, dt: 0.2}\n";
  const char *e = "name: x\nseed: 3\nsweep: {d: [3, 2], T: 15, dt: 0.1}\n";
  as_spec *sa = parse(a), *sb = parse(b), *sc = parse(c), *se = parse(e);
  if (sa && sb && sc && se) {
    AS_EXPECT(strlen(as_spec_sha256(sa)) == 64, "hex length");
    AS_EXPECT(strcmp(as_spec_sha256(sa), as_spec_sha256(sb)) == 0, "reordering/reformatting");
    AS_EXPECT(strcmp(as_spec_sha256(sa), as_spec_sha256(sc)) != 0, "value change");
    AS_EXPECT(strcmp(as_spec_sha256(sa), as_spec_sha256(se)) != 0, "list order is significant");
  }
  as_spec_destroy(&sa);
  as_spec_destroy(&sb);
  as_spec_destroy(&sc);
  as_spec_destroy(&se);
  /* Big seeds keep every digit. */
  sa = parse("seed: 18446744073709551615\n");
  sb = parse("seed: 18446744073709551614\n");
  if (sa && sb) {
    AS_EXPECT(as_spec_seed(sa) == UINT64_MAX, "max seed");
    AS_EXPECT(strcmp(as_spec_sha256(sa), as_spec_sha256(sb)) != 0, "seeds differ");
  }
  as_spec_destroy(&sa);
  as_spec_destroy(&sb);
}

static void test_diagnostics(void) {
  expect_diag("sweep: {d: [2, 3}\n", 1, 17, "YAML syntax");
  expect_diag("sed: 3\n", 1, 1, "did you mean 'seed'");
  expect_diag("sweep:\n  vfamly: identity\n", 2, 3, "did you mean 'vfamily'");
  expect_diag("sweep:\n  vfamily: identiy\n", 2, 12, "did you mean 'identity'");
  expect_diag("sweep:\n  d: two\n", 2, 6, "expected an integer");
  expect_diag("sweep:\n  T: [1, \"2\"]\n", 2, 10, "expected a number");
  expect_diag("sweep:\n  d: 0\n", 2, 6, "out of range");
  expect_diag("sweep:\n  dt: -0.1\n", 2, 7, "out of range");
  expect_diag("sweep:\n  d: 2\n  n: 3\n  d: 3\n", 4, 3, "duplicate key 'd'");
  expect_diag("sweep:\n  n: []\n", 2, 6, "empty axis");
  expect_diag("sweep:\n  zip:\n    - {d: [2, 3]}\n    - {n: [1, 2, 3]}\n", 4, 7, "lengths differ");
  expect_diag("replicates: 2147483647\nsweep:\n  product:\n    - {n: [1,2,3,4,5,6,7,8,9,10]}\n"
              "    - {T: [1,2,3,4,5,6,7,8,9,10]}\n    - {dt: [.1,.2,.3,.4,.5,.6,.7,.8,.9,1]}\n"
              "    - {eps: [1,2,3,4,5,6,7,8,9,10]}\n    - {v_scale: [1,2,3,4,5,6,7,8,9,10]}\n"
              "    - {m_scale: [1,2,3,4,5,6,7,8,9,10]}\n    - {v_gap: [1,2,3,4,5,6,7,8,9,10]}\n"
              "    - {v_imag: [1,2,3,4,5,6,7,8,9,10]}\n    - {atol: [1,2,3,4,5,6,7,8,9,10]}\n"
              "    - {rtol: [1,2,3,4,5,6,7,8,9,10]}\n    - {margin: [1,2,3,4,5,6,7,8,9,10]}\n",
              1, 13, "too many trials");
  expect_diag("sweep:\n  vfamily: symmetric\n  d: 3\n  v_kpos: [1, 4]\n", 4, 15, "exceeds d = 3");
  expect_diag("sweep:\n  V: [[1, 0], [0, 1]]\n  d: 3\n", 2, 6, "V is 2 x 2 but d = 3");
  expect_diag("sweep:\n  V: [[1, 0], [0]]\n", 2, 15, "row 2 has 1 entries");
  expect_diag("output: {final: maybe}\n", 1, 17, "expected true or false");
  expect_diag("a: *x\n", 1, 4, "aliases");
  expect_diag("sweep:\n  product: {d: 2}\n", 2, 12, "non-empty list");
  expect_diag("- 1\n- 2\n", 1, 1, "must be a mapping");
  expect_diag("", 1, 1, "empty");
  expect_diag("d: 2\n", 1, 1, "belongs inside");
  /* Every problem at once, in text order. */
  as_spec *s = NULL;
  as_spec_diags dg = {0, 0, NULL};
  as_error_clear();
  const char *many = "sed: 1\nreplicates: -1\nsweep:\n  d: x\n  vfamly: identity\n";
  AS_EXPECT(as_spec_parse(many, strlen(many), "m.yaml", &dg, &s) == AS_ERR_SPEC, "rejected");
  AS_EXPECT(dg.count == 4, "4 problems, got %d", dg.count);
  for (int i = 1; i < dg.count; i++) AS_EXPECT(dg.items[i].line >= dg.items[i - 1].line, "sorted");
  AS_EXPECT(strstr(as_error_get()->message, "m.yaml:1:1:") != NULL, "error record: %s",
            as_error_get()->message);
  as_spec_diags_free(&dg);
  as_error_clear();
}

static void test_default(void) {
  as_spec *s = NULL;
  AS_EXPECT(as_spec_default(&s) == AS_OK, "default parses");
  if (!s) return;
  uint64_t n = as_spec_trial_count(s);
  AS_EXPECT(n >= 300 && n <= 600, "default has %llu trials", (unsigned long long)n);
  AS_EXPECT(as_spec_case_count(s) >= 9, "cases %d", as_spec_case_count(s));
  const char *want[] = {"identity", "good",    "paranormal", "minus_identity", "d1",
                        "codim",    "complex", "generic_m",  "perturbed"};
  for (int i = 0; i < 9; i++) {
    int found = 0;
    for (int c = 0; c < as_spec_case_count(s); c++)
      found |= strcmp(as_spec_case_name(s, c), want[i]) == 0;
    AS_EXPECT(found, "case %s", want[i]);
  }
  double work = 0;
  for (uint64_t i = 0; i < n; i++) {
    as_trial t;
    AS_EXPECT(as_spec_trial(s, i, &t) == AS_OK, "trial %llu", (unsigned long long)i);
    AS_EXPECT(t.n == 20 && t.integ.dt == 0.1 && t.integ.T >= 10 && t.integ.T <= 15 &&
                  t.init.scale == 5 && t.d >= 1 && t.d <= 3,
              "paper settings in trial %llu", (unsigned long long)i);
    work += as_cost_work(&t);
  }
  /* RK4 150 steps x (n^2 d + n d^2) at n = 20, d <= 3: under 1e9 units in all. */
  AS_EXPECT(work > 0 && work < 1e9, "default work %g", work);
  size_t len = 0;
  AS_EXPECT(strcmp(as_spec_text(s, &len), as_spec_default_text()) == 0 && len > 0, "text kept");
  as_spec_destroy(&s);
}

/* Every rule of rules.h on both sides. Each spec below breaks the rule named (a one-point sweep,
 * defaults: d 2, n 20). validate (as_spec_parse) must refuse it with one "case 'case0': MSG"
 * diagnostic per rule the trial breaks, MSG the rule's own message, at the line of the first of
 * the rule's keys the spec writes; run's defence (as_spec_trial on the same spec parsed without
 * the rules) must stop with AS_ERR_INTERNAL naming a broken rule. Every rule is reached. */
static const struct {
  as_rule_id rule;
  const char *text;
} rule_specs[] = {
    {AS_RULE_scalar_d, "sweep:\n  vfamily: scalar\n  d: 2\n"},
    {AS_RULE_symmetric_kpos, "sweep:\n  vfamily: symmetric\n  d: 3\n  v_kpos: 4\n"},
    {AS_RULE_paranormal_dim_f, "sweep:\n  vfamily: paranormal\n  v_dim_f: 3\n"},
    {AS_RULE_paranormal_radius, "sweep:\n  vfamily: paranormal\n  v_radius: 2\n"},
    {AS_RULE_good_gap, "sweep:\n  vfamily: good\n  v_gap: 2\n  v_lambda: 1\n"},
    {AS_RULE_complex_d, "sweep:\n  vfamily: complex\n  d: 1\n"},
    {AS_RULE_complex_imag, "sweep:\n  vfamily: complex\n  v_imag: 0\n"},
    {AS_RULE_explicit_v, "sweep:\n  vfamily: explicit\n"},
    {AS_RULE_v_shape, "sweep:\n  V: [[1, 0], [0, 1]]\n  d: 3\n"},
    {AS_RULE_explicit_m, "sweep:\n  mfamily: explicit\n"},
    {AS_RULE_m_or_qk,
     "sweep:\n  M: [[1, 0], [0, 1]]\n  Q: [[1, 0], [0, 1]]\n  K: [[1, 0], [0, 1]]\n"},
    {AS_RULE_q_without_k, "sweep:\n  Q: [[1, 0], [0, 1]]\n"},
    {AS_RULE_k_without_q, "sweep:\n  K: [[1, 0], [0, 1]]\n"},
    {AS_RULE_m_shape, "sweep:\n  d: 2\n  M: [[1, 0, 0], [0, 1, 0]]\n"},
    {AS_RULE_q_shape, "sweep:\n  d: 2\n  Q: [[1, 0, 0]]\n  K: [[1, 0, 0]]\n"},
    {AS_RULE_k_shape, "sweep:\n  Q: [[1, 0]]\n  K: [[1, 0], [0, 1]]\n"},
    {AS_RULE_square_m, "sweep:\n  mfamily: identity\n  m_rows: 3\n"},
    {AS_RULE_spd_d1, "sweep:\n  mfamily: spd\n  d: 1\n  m_cond: 2\n"},
    {AS_RULE_file_family, "sweep:\n  vfamily: file\n"},
    {AS_RULE_init_explicit, "sweep:\n  init: {kind: explicit}\n"},
    {AS_RULE_init_file, "sweep:\n  init: {kind: file}\n"},
    {AS_RULE_reference_n, "sweep:\n  init: {data: [[0, 1], [1, 0]]}\n  reference_n: 3\n"},
    {AS_RULE_sphere_vars, "sweep:\n  norm: sphere\n  vars: z\n"},
    {AS_RULE_causal_sinkhorn, "sweep:\n  mask: causal\n  attention: sinkhorn\n"},
    {AS_RULE_usa_beta, "sweep:\n  norm: sphere\n  norm_form: usa\n  beta: .inf\n"},
    {AS_RULE_usa_sinkhorn, "sweep:\n  norm: sphere\n  norm_form: usa\n  attention: sinkhorn\n"},
    {AS_RULE_sinkhorn_beta, "sweep:\n  beta: .inf\n  attention: sinkhorn\n"},
    {AS_RULE_streamed_base, "sweep:\n  ranks_per_trial: 1\n  mask: causal\n"},
    {AS_RULE_dt_le_t, "sweep:\n  T: 1\n  dt: 2\n"},
    {AS_RULE_snapshots_le_t, "output: {snapshots: [10]}\nsweep:\n  T: 5\n"},
    {AS_RULE_blocks_base, "sweep:\n  heads: 2\n  mask: causal\n"},
    /* named at the key (weights, line 2), not at the sweep mapping */
    {AS_RULE_blocks_base, "sweep:\n  weights: per_layer\n  method: layers\n  mask: causal\n"},
    {AS_RULE_ffn_inside, "sweep:\n  heads: 2\n  ffn: relu\n  ffn_form: inside\n"},
    {AS_RULE_blocks_threshold, "spectral_threshold: 2\nsweep:\n  heads: 2\n  d: 2\n"},
    {AS_RULE_per_layer_file,
     "sweep:\n  vfamily: file\n  file: w.h5\n  method: layers\n  weights: per_layer\n"},
    {AS_RULE_blocks_count,
     "sweep:\n  method: layers\n  weights: per_layer\n  T: 100000\n  dt: 1\n"},
};

/* Line of "  key:" (or "key:" at the top) in text, 0 when the spec does not write the key. */
static int key_line(const char *text, const char *key) {
  char pat[64];
  int line = 1;
  snprintf(pat, sizeof pat, "%s:", key);
  for (const char *p = text; *p; p++) {
    const char *q = p;
    while (*q == ' ') q++;
    if ((p == text || p[-1] == '\n') && strncmp(q, pat, strlen(pat)) == 0) return line;
    if (*p == '\n') line++;
  }
  return 0;
}

static void test_rules(void) {
  int reached[AS_RULE_COUNT] = {0};
  for (size_t i = 0; i < sizeof rule_specs / sizeof rule_specs[0]; i++) {
    const char *text = rule_specs[i].text;
    const char *want = as_rules[rule_specs[i].rule].name;
    /* run's side: the trial of the unchecked spec, and the defence. */
    as_spec *u = NULL;
    as_trial t;
    AS_EXPECT(as_spec_parse_unchecked(text, strlen(text), "t.yaml", NULL, &u) == AS_OK,
              "%s: unchecked parse failed: %s", want, as_error_get()->message);
    if (!u) continue;
    as_error_clear();
    as_status st = as_spec_trial(u, 0, &t);
    AS_EXPECT(st == AS_ERR_INTERNAL && strstr(as_error_get()->message, "breaks rule "),
              "%s: as_spec_trial gave %s (%s)", want, as_status_name(st), as_error_get()->message);
    as_error_clear();
    const as_rule_env env = {as_spec_spectral_threshold(u)};
    /* validate's side on the same text. */
    as_spec *s = NULL;
    as_spec_diags dg = {0, 0, NULL};
    st = as_spec_parse(text, strlen(text), "t.yaml", &dg, &s);
    AS_EXPECT(st == AS_ERR_SPEC && s == NULL, "%s: validate accepted the spec", want);
    as_error_clear();
    int rule_diags = 0, broken = 0;
    for (int k = 0; k < dg.count; k++) rule_diags += strncmp(dg.items[k].message, "case '", 6) == 0;
    for (int r = 0; r < AS_RULE_COUNT; r++) {
      as_rule_hit h;
      if (!as_rule_broken((as_rule_id)r, &t, &env, &h)) continue;
      broken++;
      reached[r] = 1;
      char msg[400];
      snprintf(msg, sizeof msg, "case 'case0': %s", h.message);
      int line = 0, found = 0;
      for (int k = 0; k < h.nkeys && !line; k++) line = key_line(text, as_params[h.keys[k]].key);
      if (!line) line = key_line(text, "sweep");
      for (int k = 0; k < dg.count; k++)
        found |= strcmp(dg.items[k].message, msg) == 0 && dg.items[k].line == line;
      AS_EXPECT(found, "%s: the trial breaks rule %s (%s), validate does not say so at line %d",
                want, as_rules[r].name, h.message, line);
    }
    as_rule_hit h;
    AS_EXPECT(as_rule_broken(rule_specs[i].rule, &t, &env, &h), "%s: its spec keeps it", want);
    AS_EXPECT(rule_diags == broken, "%s: validate reports %d rule problems, the trial breaks %d",
              want, rule_diags, broken);
    as_spec_diags_free(&dg);
    as_spec_destroy(&u);
  }
  for (int r = 0; r < AS_RULE_COUNT; r++)
    AS_EXPECT(reached[r], "rule %s: no spec of this test breaks it", as_rules[r].name);
  /* A valid spec: no rule broken on either side, and the defence lets its trials through. */
  const char *ok = "sweep:\n  vfamily: [good, paranormal]\n  v_gap: 1\n  v_lambda: 1\n"
                   "  v_radius: 0.5\n  method: [rk4, dopri5]\n  rtol: 1.0e-8\n";
  as_spec *s = parse(ok);
  for (uint64_t k = 0; s && k < as_spec_trial_count(s); k++) {
    as_trial t;
    AS_EXPECT(as_spec_trial(s, k, &t) == AS_OK, "valid spec, trial %llu refused",
              (unsigned long long)k);
  }
  as_spec_destroy(&s);
}

/* One policy for keys that do not apply: an error only where no trial reads the value. */
static void test_not_applying(void) {
  expect_diag("sweep:\n  method: rk4\n  rtol: 1.0e-8\n", 3, 9, "rtol has no effect");
  expect_diag("sweep:\n  vfamily: identity\n  v_kpos: 1\n", 3, 11, "v_kpos has no effect");
  expect_diag("sweep:\n  attention: softmax\n  sinkhorn_iters: 5\n", 3, 19,
              "sinkhorn_iters has no effect");
  expect_diag("sweep:\n  eps: 0\n  perturb: m\n", 3, 12, "perturb has no effect");
  expect_diag("defaults: {rtol: 1.0e-8}\nsweep:\n  concat: [{method: rk4}, {method: euler}]\n", 1,
              18, "rtol has no effect");
  /* Read by some trial: valid, from a list or from defaults. */
  as_spec *s = parse("sweep:\n  method: [rk4, dopri5]\n  rtol: 1.0e-8\n");
  as_spec_destroy(&s);
  s = parse("defaults: {rtol: 1.0e-8}\nsweep:\n  concat: [{method: rk4}, {method: dopri5}]\n");
  as_spec_destroy(&s);
  s = parse("sweep:\n  attention: [softmax, sinkhorn]\n  sinkhorn_iters: 5\n");
  as_spec_destroy(&s);
  /* sinkhorn_tol is the converged solver's stop: nothing for sinkhorn_fixed, whose
   * sinkhorn_iters is read (its K). */
  expect_diag("sweep:\n  attention: sinkhorn_fixed\n  sinkhorn_tol: 1.0e-6\n", 3, 17,
              "sinkhorn_tol has no effect");
  s = parse("sweep:\n  attention: sinkhorn_fixed\n  sinkhorn_iters: 3\n");
  AS_EXPECT(s != NULL, "sinkhorn_iters read by sinkhorn_fixed");
  as_spec_destroy(&s);
  /* A zipped list needs a value at every position: one whose trials ignore the key lines the
   * zip up when another position's trials read the list (softmax, sinkhorn and
   * sinkhorn_fixed with their own sinkhorn_iters in one case), and a zipped list no trial
   * reads is refused at its first value. */
  s = parse("sweep:\n  zip:\n    - {attention: [softmax, sinkhorn, sinkhorn_fixed]}\n"
            "    - {sinkhorn_iters: [100, 100, 3]}\n");
  AS_EXPECT(s != NULL && as_spec_trial_count(s) == 3, "zip with a placeholder refused");
  as_spec_destroy(&s);
  expect_diag("sweep:\n  zip:\n    - {attention: [softmax, softmax]}\n"
              "    - {sinkhorn_iters: [5, 50]}\n",
              4, 25, "sinkhorn_iters has no effect");
}

int main(void) {
  test_sha256();
  test_enumeration();
  test_sha_canonical();
  test_diagnostics();
  test_default();
  test_rules();
  test_not_applying();
  return as_test_finish("test_spec");
}
