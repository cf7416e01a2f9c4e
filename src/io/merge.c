/* merge.c: joining the shard files of one sweep into one results file (merge.h). */
#include "attnsweep/merge.h"

#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnsweep/iocheck.h"
#include "attnsweep/outset.h"
#include "attnsweep/record.h"
#include "attnsweep/results.h"
#include "attnsweep/shard.h"
#include "attnsweep/spec.h"

/* Trials per block of the streaming pass: at least this many, and up to 4 times as many for
 * 64 inputs or more, so that each input's share of a block stays large (every read of a
 * block's rows costs HDF5 a comparison of the row types: a sixth of merge's time with 64
 * inputs at 512 rows a read). Each input's rows of a block are read MERGE_BLOCK at a time.
 * Memory: the block's rows and one read's, at most 5 MERGE_BLOCK rows. */
#define MERGE_BLOCK 32768

/* Damaged trials named in a refusal. */
#define MERGE_NAMED 5

typedef struct merge_input {
  const char *path;
  as_results *rf;
  uint32_t index, count; /* its shard; 1 of 1 for a whole run */
  int whole;             /* 1: not a shard file */
  const uint32_t *owner; /* the owners of the split into count shards */
  uint64_t own;          /* trials of its shard */
  uint64_t own_done;     /* ... done in it */
  uint64_t taken;        /* rows of the output taken from it */
  int checked;           /* it has bulk data, so its checksums were checked before the
                          * streaming pass (rows and slabs) */
} merge_input;

typedef struct owner_set {
  uint32_t count;
  uint32_t *owner;
} owner_set;

/* The record without its timing fields (padding is zero in records read from a file). */
static int same_result(const as_record *a, const as_record *b) {
  as_record x = *a, y = *b;
  as_record_strip_timing(&x);
  as_record_strip_timing(&y);
  return memcmp(&x, &y, sizeof x) == 0;
}

static as_status grow(double **buf, uint64_t *cap, uint64_t need) {
  as_status st = AS_OK;
  if (need <= *cap) return AS_OK;
  double *p = realloc(*buf, need * sizeof *p);
  AS_CHECK_ALLOC(p);
  *buf = p;
  *cap = need;
cleanup:
  return st;
}

/* The bulk data of trial from src into dst, or (compare) whether dst already holds the same:
 * *same = 0 when a slab differs. */
static as_status bulk_copy(as_results *src, as_results *dst, uint64_t trial, int compare, int *same,
                           double **b1, uint64_t *c1, double **b2, uint64_t *c2) {
  as_status st = AS_OK;
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    uint64_t off = 0, cnt = 0;
    AS_TRY(as_results_bulk_extent(src, (as_bulk_kind)k, trial, &off, &cnt));
    if (!cnt) continue;
    AS_TRY(grow(b1, c1, cnt));
    AS_TRY(as_results_read_bulk(src, (as_bulk_kind)k, trial, *b1, cnt));
    if (!compare) {
      AS_TRY(as_results_write_bulk(dst, (as_bulk_kind)k, trial, *b1, cnt));
      continue;
    }
    AS_TRY(grow(b2, c2, cnt));
    AS_TRY(as_results_read_bulk(dst, (as_bulk_kind)k, trial, *b2, cnt));
    if (memcmp(*b1, *b2, cnt * sizeof **b1) != 0) *same = 0;
  }
cleanup:
  return st;
}

/* Append "fmt..." to the growing string *s (length *len, capacity *cap). */
static as_status append(char **s, size_t *len, size_t *cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static as_status append(char **s, size_t *len, size_t *cap, const char *fmt, ...) {
  as_status st = AS_OK;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(*s ? *s + *len : NULL, *s ? *cap - *len : 0, fmt, ap);
    va_end(ap);
    AS_CHECK(w >= 0, AS_ERR_INTERNAL, "merge: formatting failed");
    if (*s && *len + (size_t)w < *cap) {
      *len += (size_t)w;
      break;
    }
    size_t ncap = 2 * (*cap + (size_t)w) + 256;
    char *p = realloc(*s, ncap);
    AS_CHECK_ALLOC(p);
    if (!*s) p[0] = '\0';
    *s = p;
    *cap = ncap;
  }
cleanup:
  return st;
}

static const char *const build_attrs[] = {AS_MERGE_BUILD_ATTRS};
#define N_BUILD_ATTRS ((int)(sizeof build_attrs / sizeof build_attrs[0]))
#define BUILD_ATTR_CAP 1024

/* Attribute i of build_attrs of rf into buf ("" when the file has none: an older file). */
static as_status build_attr(as_results *rf, int i, char *buf) {
  as_status st = AS_OK;
  buf[0] = '\0';
  if (as_results_attr_text(rf, build_attrs[i], buf, BUILD_ATTR_CAP) != AS_OK) {
    const as_status got = as_error_get()->status;
    char why[AS_ERRMSG_MAX];
    snprintf(why, sizeof why, "%s", as_error_get()->message);
    as_error_clear();
    AS_CHECK(got == AS_ERR_DATA, got, "reading attribute %s", build_attrs[i]);
    snprintf(buf, BUILD_ATTR_CAP, "(%.200s)", why);
  }
cleanup:
  return st;
}

/* The inputs come from one build: the attributes of AS_MERGE_BUILD_ATTRS agree with the first
 * input's; otherwise refused unless allowed. *mixed: 1 when some differ. */
static as_status same_build(const merge_input *in, int n, int allow, int *mixed) {
  as_status st = AS_OK;
  char *a = malloc(BUILD_ATTR_CAP), *b = malloc(BUILD_ATTR_CAP), *diff = malloc(4096);
  AS_CHECK(a && b && diff, AS_ERR_NOMEM, "merge: build attributes");
  *mixed = 0;
  for (int k = 1; k < n; k++) {
    size_t used = 0;
    diff[0] = '\0';
    for (int i = 0; i < N_BUILD_ATTRS; i++) {
      AS_TRY(build_attr(in[0].rf, i, a));
      AS_TRY(build_attr(in[k].rf, i, b));
      if (strcmp(a, b) == 0) continue;
      const int w = snprintf(diff + used, 4096 - used, "%s%s '%.120s' and '%.120s'",
                             used ? "; " : "", build_attrs[i], a, b);
      if (w > 0 && (size_t)w < 4096 - used) used += (size_t)w;
    }
    if (!used) continue;
    *mixed = 1;
    AS_CHECK(allow, AS_ERR_MISMATCH,
             "%s and %s were written by different builds (%s): their rows need not agree with "
             "what one build computes; merge shards of one build (rerun the others with it), or "
             "pass --allow-mixed-builds to merge them anyway (every input's build is then "
             "recorded in merged_from)",
             in[0].path, in[k].path, diff);
  }
cleanup:
  free(a);
  free(b);
  free(diff);
  return st;
}

/* One line per input: path, shard, rows, its segments (job id/restart, ranks) and its build. */
static as_status provenance(merge_input *in, int n, char **out) {
  as_status st = AS_OK;
  char *s = NULL;
  size_t len = 0, cap = 0;
  as_results_segment *segs = NULL;
  for (int k = 0; k < n; k++) {
    size_t nseg = 0;
    AS_TRY(as_results_segments(in[k].rf, NULL, 0, &nseg));
    free(segs);
    segs = calloc(nseg ? nseg : 1, sizeof *segs);
    AS_CHECK_ALLOC(segs);
    AS_TRY(as_results_segments(in[k].rf, segs, nseg, &nseg));
    AS_TRY(append(&s, &len, &cap, "%s: %s %u of %u, %llu of its %llu trials done, %llu rows taken;",
                  in[k].path, in[k].whole ? "whole run, as shard" : "shard", in[k].index,
                  in[k].count, (unsigned long long)in[k].own_done, (unsigned long long)in[k].own,
                  (unsigned long long)in[k].taken));
    AS_TRY(append(&s, &len, &cap, " segments:"));
    for (size_t i = 0; i < nseg; i++)
      AS_TRY(append(&s, &len, &cap, " job %s restart %d (%d ranks)%s", segs[i].job_id,
                    segs[i].restart, segs[i].ranks, i + 1 < nseg ? "," : ""));
    AS_TRY(append(&s, &len, &cap, "; build:"));
    for (int i = 0; i < N_BUILD_ATTRS; i++) {
      char v[BUILD_ATTR_CAP];
      AS_TRY(build_attr(in[k].rf, i, v));
      for (char *c = v; *c; c++) /* one line per input */
        if (*c == '\n' || *c == '\r') *c = ' ';
      AS_TRY(
          append(&s, &len, &cap, " %s=%s%s", build_attrs[i], v, i + 1 < N_BUILD_ATTRS ? "," : ""));
    }
    AS_TRY(append(&s, &len, &cap, "\n"));
  }
  *out = s;
  s = NULL;
cleanup:
  free(s);
  free(segs);
  return st;
}

/* The hash column of an input_sha256 attribute ("<sha256>  <path>" lines): the n-th hash into
 * out ("" past the end). Returns the number of lines. */
static int hash_field(const char *attr, int n, char *out, size_t len) {
  int line = 0;
  out[0] = '\0';
  for (const char *p = attr; *p; line++) {
    const char *eol = strchr(p, '\n');
    const char *end = eol ? eol : p + strlen(p);
    const char *sp = p;
    while (sp < end && *sp != ' ') sp++;
    if (line == n) snprintf(out, len, "%.*s", (int)(sp - p), p);
    p = eol ? eol + 1 : end;
  }
  return line;
}

/* The inputs read the same matrix and token files: the hashes recorded in each (never the
 * files at those paths now) agree with the first input's, entry by entry. */
static as_status same_inputs(const merge_input *in, int n, char **carried) {
  as_status st = AS_OK;
  char *first = NULL, *other = NULL;
  const size_t cap = 1 << 20;
  first = calloc(cap, 1);
  other = calloc(cap, 1);
  AS_CHECK(first && other, AS_ERR_NOMEM, "merge: input hashes");
  AS_TRY(as_results_attr_string(in[0].rf, "input_sha256", first, cap));
  for (int k = 1; k < n; k++) {
    AS_TRY(as_results_attr_string(in[k].rf, "input_sha256", other, cap));
    char ha[96], hb[96];
    const int la = hash_field(first, 0, ha, sizeof ha), lb = hash_field(other, 0, hb, sizeof hb);
    AS_CHECK(la == lb, AS_ERR_MISMATCH,
             "%s read %d input file(s), %s %d: not shards of one sweep (input_sha256 differs)",
             in[k].path, lb, in[0].path, la);
    for (int i = 0; i < la; i++) {
      hash_field(first, i, ha, sizeof ha);
      hash_field(other, i, hb, sizeof hb);
      AS_CHECK(strcmp(ha, hb) == 0, AS_ERR_MISMATCH,
               "%s and %s read different contents of input file %d (SHA-256 %.16s... and "
               "%.16s..., root attribute input_sha256): their rows come from different matrices "
               "or tokens; rerun the shards with the same files",
               in[0].path, in[k].path, i + 1, ha, hb);
    }
  }
  *carried = first;
  first = NULL;
cleanup:
  free(first);
  free(other);
  return st;
}

/* One input's rows and bulk slabs against their checksums, refusing damage with a message that
 * names the file and its first damaged trials. flags: T bytes of scratch. */
static as_status verify_input(const merge_input *in, uint64_t T, uint8_t *flags,
                              as_merge_report *r) {
  as_status st = AS_OK;
  {
    as_results_verify_counts vc;
    AS_TRY(as_results_verify(in->rf, 0, T, flags, &vc));
    if (!vc.verified) {
      r->unverified++;
      goto cleanup;
    }
    r->rows_checked += vc.rows;
    const uint64_t bad = vc.rows_bad + vc.bulk_bad;
    if (!bad) goto cleanup;
    char list[256] = "";
    size_t used = 0;
    int named = 0;
    for (uint64_t i = 0; i < T && named < MERGE_NAMED; i++) {
      if (!flags[i]) continue;
      int w = snprintf(list + used, sizeof list - used, "%s%llu%s", named ? ", " : "",
                       (unsigned long long)i, flags[i] == AS_VERIFY_ROW ? "" : " (bulk data)");
      if (w < 0 || (size_t)w >= sizeof list - used) break;
      used += (size_t)w;
      named++;
    }
    AS_CHECK(0, AS_ERR_IO,
             "%s is damaged: %llu row(s) fail their checksums (trials %s%s); nothing was merged. "
             "Run `attnsweep repair %s` (or resume it: attnsweep run -o %s --resume, which runs "
             "the damaged trials again), then merge again",
             in->path, (unsigned long long)bad, list, (uint64_t)named < bad ? ", ..." : "",
             in->path, in->path);
  }
cleanup:
  return st;
}

/* The inputs with bulk data, before anything is written: their slabs are checked here (and
 * their rows with them). The rows of the others are checked as the streaming pass reads them
 * (a damaged one stops the merge before its file takes the output's name, so nothing is
 * merged either way). */
static as_status verify_inputs(merge_input *in, int n, uint64_t T, uint8_t *flags,
                               as_merge_report *r) {
  as_status st = AS_OK;
  for (int k = 0; k < n; k++) {
    in[k].checked = as_results_stores_bulk(in[k].rf);
    if (in[k].checked) AS_TRY(verify_input(&in[k], T, flags, r));
  }
cleanup:
  return st;
}

/* After the new file took OUT.h5's name: the journals of the file it replaced go (they
 * describe the old file, not this one). */
static void drop_old_journals(const char *out) {
  static const as_side kinds[] = {AS_SIDE_JOURNAL, AS_SIDE_DAMAGED_JOURNAL};
  for (size_t s = 0; s < sizeof kinds / sizeof kinds[0]; s++) {
    char **paths = NULL;
    size_t np = 0;
    if (as_outset_list(out, kinds[s], &paths, &np) != AS_OK) {
      as_error_clear();
      continue;
    }
    for (size_t i = 0; i < np; i++) unlink(paths[i]);
    as_outset_list_free(&paths, np);
  }
}

static int stopped(const as_merge_opts *o) {
  return o->stop && *o->stop;
}

as_status as_merge_run(const char *out, const char *const *inputs, int n, const as_merge_opts *o,
                       as_merge_report *rep) {
  as_status st = AS_OK;
  as_merge_opts opts = {0, 0, NULL, 0};
  merge_input *in = NULL;
  owner_set *sets = NULL;
  int n_sets = 0, created = 0;
  as_spec *spec = NULL;
  as_spec_diags diags = {0, 0, NULL};
  char *text = NULL, *prov = NULL, *carried = NULL;
  uint8_t *done = NULL, *covered = NULL;
  uint32_t *taken = NULL;
  uint64_t *held_trials = NULL;
  as_outset *claim = NULL;
  as_results *rf = NULL;
  uint64_t *bulk[AS_BULK_COUNT] = {NULL};
  unsigned char *blk = NULL, *held = NULL, *bad = NULL;
  uint64_t *run_trials = NULL;
  uint32_t *held_crcs = NULL, *blk_crcs = NULL;
  double *b1 = NULL, *b2 = NULL;
  uint64_t c1 = 0, c2 = 0;
  char tmp[AS_OUTSET_PATH_MAX] = "";
  as_merge_report r;
  memset(&r, 0, sizeof r);
  if (o) opts = *o;
  AS_CHECK(out && inputs && n >= 1, AS_ERR_ARG, "merge: no shard files given");
  r.inputs = (uint32_t)n;

  /* The output is a new file, never one of the inputs. */
  struct stat so, si;
  const int out_exists = stat(out, &so) == 0;
  for (int k = 0; k < n && out_exists; k++)
    AS_CHECK(!(stat(inputs[k], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino),
             AS_ERR_ARG, "%s is also an input: the merged file must be another file", out);
  AS_CHECK(!out_exists || opts.force, AS_ERR_ARG, "%s already exists: pass --force to replace it",
           out);

  /* The inputs, their shards and their spec. */
  in = calloc((size_t)n, sizeof *in);
  sets = calloc((size_t)n, sizeof *sets);
  AS_CHECK(in && sets, AS_ERR_NOMEM, "merge: %d inputs", n);
  for (int k = 0; k < n; k++) {
    in[k].path = inputs[k];
    AS_TRY(as_results_open(MPI_COMM_NULL, inputs[k], AS_RESULTS_READ, &in[k].rf));
    AS_TRY(as_shard_identify(in[k].rf, inputs[k], &in[k].index, &in[k].count));
    if (!in[k].count) {
      in[k].whole = 1;
      in[k].index = in[k].count = 1;
    }
  }
  AS_TRY(as_results_spec_text(in[0].rf, &text));
  if (as_spec_parse(text, strlen(text), inputs[0], &diags, &spec) != AS_OK) {
    as_error_clear();
    AS_CHECK(0, AS_ERR_DATA, "%s: the spec stored in the file does not parse (%s:%d:%d: %s)",
             inputs[0], inputs[0], diags.count ? diags.items[0].line : 0,
             diags.count ? diags.items[0].col : 0,
             diags.count ? diags.items[0].message : "unknown problem");
  }
  const uint64_t T = as_spec_trial_count(spec);
  r.n_trials = T;
  for (int k = 0; k < n; k++) {
    char sha[80] = "";
    AS_TRY(as_results_attr_string(in[k].rf, "spec_sha256", sha, sizeof sha));
    AS_CHECK(strcmp(sha, as_spec_sha256(spec)) == 0, AS_ERR_MISMATCH,
             "%s is not a shard of the same sweep: its spec (SHA-256 %.12s...) is not that of %s "
             "(%.12s...)",
             inputs[k], sha, inputs[0], as_spec_sha256(spec));
    AS_CHECK(as_results_n_trials(in[k].rf) == T, AS_ERR_MISMATCH,
             "%s has %llu rows, the sweep %llu trials", inputs[k],
             (unsigned long long)as_results_n_trials(in[k].rf), (unsigned long long)T);
    int s = 0;
    while (s < n_sets && sets[s].count != in[k].count) s++;
    if (s == n_sets) {
      sets[s].count = in[k].count;
      sets[s].owner = malloc((T ? T : 1) * sizeof *sets[s].owner);
      AS_CHECK_ALLOC(sets[s].owner);
      n_sets++;
      AS_TRY(as_shard_owners(spec, sets[s].count, sets[s].owner, NULL));
    }
    in[k].owner = sets[s].owner;
  }
  AS_TRY(same_inputs(in, n, &carried));
  int mixed = 0;
  AS_TRY(same_build(in, n, opts.allow_mixed_builds, &mixed));

  /* Pass 1: the checksums of every input, which trials the inputs' shards cover, and how far
   * each shard got. */
  done = malloc(T ? T : 1);
  covered = calloc(T ? T : 1, 1);
  AS_CHECK(done && covered, AS_ERR_NOMEM, "merge: flags of %llu trials", (unsigned long long)T);
  AS_TRY(verify_inputs(in, n, T, done, &r));
  for (int k = 0; k < n; k++) {
    AS_CHECK(!stopped(&opts), AS_ERR_INTERRUPTED,
             "merge stopped by a signal while checking the inputs: nothing was written");
    as_results_counts c;
    AS_TRY(as_results_count(in[k].rf, &c, done));
    for (uint64_t i = 0; i < T; i++) {
      if (in[k].owner[i] != in[k].index) continue;
      in[k].own++;
      in[k].own_done += done[i];
      covered[i] = 1;
    }
    if (in[k].own_done < in[k].own) r.unfinished++;
  }
  /* A shard that no input is, and that some uncovered trial belongs to, is missing: named as
   * the file it would be beside the first input of its split. */
  size_t used = 0;
  for (int s = 0; s < n_sets; s++) {
    const merge_input *first = NULL;
    for (int k = 0; k < n && !first; k++)
      if (in[k].count == sets[s].count) first = &in[k];
    char base[AS_OUTSET_PATH_MAX];
    size_t blen = 0;
    if (first->whole || !as_shard_path_parse(first->path, NULL, NULL, &blen))
      snprintf(base, sizeof base, "%s", out);
    else
      snprintf(base, sizeof base, "%.*s", (int)blen, first->path);
    uint8_t *need = calloc(sets[s].count + 1u, 1);
    AS_CHECK_ALLOC(need);
    for (uint64_t i = 0; i < T; i++)
      if (!covered[i]) need[sets[s].owner[i]] = 1;
    for (int k = 0; k < n; k++)
      if (in[k].count == sets[s].count) need[in[k].index] = 0;
    for (uint32_t I = 1; I <= sets[s].count; I++) {
      if (!need[I]) continue;
      r.missing++;
      char name[AS_OUTSET_PATH_MAX + 32];
      if (as_shard_path(base, I, sets[s].count, name, sizeof name) != AS_OK) {
        as_error_clear();
        snprintf(name, sizeof name, "shard %u of %u", I, sets[s].count);
      }
      /* A file at that name that is not shard I (a link to another shard, a copy) exists:
       * say what it holds instead of calling it missing (issue 49). */
      char what_is[AS_OUTSET_PATH_MAX + 160] = "";
      struct stat sn, sk;
      for (int k = 0; k < n && stat(name, &sn) == 0 && !what_is[0]; k++)
        if (stat(in[k].path, &sk) == 0 && sk.st_dev == sn.st_dev && sk.st_ino == sn.st_ino)
          snprintf(what_is, sizeof what_is,
                   " (that file exists, but it holds shard %u of %u by its own attributes: a "
                   "link to or a copy of another shard?)",
                   in[k].index, in[k].count);
      if (!what_is[0] && stat(name, &sn) == 0)
        snprintf(what_is, sizeof what_is, " (that file exists but was not given)");
      size_t room = sizeof r.missing_names - used;
      int w = snprintf(r.missing_names + used, room, "%s%s%s", used ? ", " : "", name, what_is);
      if (w < 0 || (size_t)w >= room) {
        snprintf(r.missing_names + sizeof r.missing_names - 4, 4, "...");
        used = sizeof r.missing_names - 1;
      } else {
        used += (size_t)w;
      }
    }
    free(need);
  }
  if (!opts.partial) {
    AS_CHECK(r.missing == 0, AS_ERR_ARG,
             "missing shard%s: %s: run %s, or merge what exists with --partial (their rows stay "
             "pending)",
             r.missing == 1 ? "" : "s", r.missing_names, r.missing == 1 ? "it" : "them");
    for (int k = 0; k < n; k++)
      AS_CHECK(in[k].own_done == in[k].own, AS_ERR_ARG,
               "%s: shard %u of %u has %llu of its %llu trials pending: finish it (attnsweep run "
               "-o %s --resume) or merge with --partial",
               in[k].path, in[k].index, in[k].count,
               (unsigned long long)(in[k].own - in[k].own_done), (unsigned long long)in[k].own,
               in[k].path);
  }
  free(covered);
  covered = NULL;

  /* The output: OUT.h5 claimed like a run's (its lock; an existing OUT.h5 and its journals stay
   * untouched until the new file replaces it), built as OUT.h5.merging, laid out from the spec
   * exactly as a run creates it. */
  AS_TRY(as_outset_claim(out, out_exists ? AS_OUTSET_REPAIR : AS_OUTSET_NEW, &claim));
  AS_TRY(as_outset_name(out, AS_SIDE_MERGING, -1, tmp, sizeof tmp));
  /* A leftover of a merge that was killed (under the lock, nobody else's): the name itself
   * goes, never a file a symlink there points to. */
  AS_CHECK(unlink(tmp) == 0 || errno == ENOENT, AS_ERR_IO, "cannot remove the leftover %s: %s", tmp,
           strerror(errno));
  as_results_info info;
  AS_TRY(as_outset_layout(spec, &info, bulk));
  info.overwrite = 0; /* O_EXCL */
  info.input_sha256 = carried;
  info.no_journal = 1;
  AS_TRY(as_results_create(MPI_COMM_SELF, tmp, &info, &rf));
  created = 1;

  /* Pass 2, streaming: block by block, every input's held rows of the block in one read, as
   * packed rows in the output's row type (no conversion when the types agree, which they do
   * for shards of one build) and checked against their checksums (unless checked in pass 1);
   * the done ones taken (bulk data before the record, as a run writes them); a row already
   * taken must be the same; then the block's rows written in runs with the checksums they
   * came with, never recomputed (the rows are the bytes the checksums were verified on). */
  const size_t widen = n >= 64 ? 4 : n >= 16 ? (size_t)n / 16 : 1;
  size_t B = T < MERGE_BLOCK * widen ? (size_t)(T ? T : 1) : MERGE_BLOCK * widen;
  size_t H = B < MERGE_BLOCK ? B : MERGE_BLOCK; /* rows per read */
  {
    /* Test hook (tests/cli/test_shards.sh): "B:H" sets both, so that small sweeps take many
     * blocks and several reads of one input per block. */
    const char *hook = getenv("ATTNSWEEP_TEST_MERGE_BLOCK");
    unsigned long hb = 0, hh = 0;
    if (hook && sscanf(hook, "%lu:%lu", &hb, &hh) == 2 && hb >= 1 && hh >= 1 && hh <= hb &&
        hb <= MERGE_BLOCK)
      B = hb, H = hh;
  }
  const size_t RB = as_results_row_bytes();
  taken = malloc(B * sizeof *taken);
  blk = malloc(B * RB);
  held = malloc(H * RB);
  held_trials = malloc(H * sizeof *held_trials);
  run_trials = malloc(B * sizeof *run_trials);
  held_crcs = malloc(H * sizeof *held_crcs);
  blk_crcs = malloc(B * sizeof *blk_crcs);
  bad = malloc(H);
  AS_CHECK(taken && blk && held && held_trials && run_trials && held_crcs && blk_crcs && bad,
           AS_ERR_NOMEM, "merge: buffers");
  for (uint64_t b = 0; b < T; b += B) {
    AS_CHECK(!stopped(&opts), AS_ERR_INTERRUPTED,
             "merge stopped by a signal at trial %llu of %llu: %s is untouched and the partial "
             "%s removed; run the same merge again",
             (unsigned long long)b, (unsigned long long)T, out, tmp);
    const size_t len = T - b < B ? (size_t)(T - b) : B;
    memset(taken, 0, len * sizeof *taken);
    for (int k = 0; k < n; k++)
      for (uint64_t from = b; from < b + len;) { /* at most H rows of input k per read */
        const uint64_t span = as_results_span(in[k].rf, from, H);
        const uint64_t to = span < b + len ? span : b + len;
        size_t m = 0;
        int verified = 0;
        AS_TRY(as_results_read_rows_raw(in[k].rf, rf, from, (size_t)(to - from), held, held_trials,
                                        held_crcs, bad, &m, &verified));
        const int first_read = b == 0 && from == 0;
        from = to;
        if (!in[k].checked) {
          if (verified) r.rows_checked += m;
          for (size_t j = 0; j < m; j++)
            if (bad[j]) { /* the whole file's damage, named as pass 1 names it */
              AS_TRY(verify_input(&in[k], T, done, &r));
              AS_CHECK(0, AS_ERR_IO,
                       "%s: the row of trial %llu fails its checksum (attnsweep repair %s)",
                       in[k].path, (unsigned long long)held_trials[j], in[k].path);
            }
          if (!verified && first_read) r.unverified++;
        }
        for (size_t j = 0; j < m; j++) {
          const unsigned char *row = held + j * RB;
          const uint64_t trial = held_trials[j];
          uint64_t rec_trial = 0;
          int outcome = 0;
          as_results_row_key(row, &rec_trial, &outcome);
          if (outcome == AS_OUT_PENDING || outcome == AS_OUT_INTERRUPTED) continue;
          /* (as_outset_is_result; a verified row holds its own trial's record) */
          AS_CHECK(rec_trial == trial, AS_ERR_DATA,
                   "%s: the row of trial %llu holds the record of trial %llu (attnsweep repair %s)",
                   in[k].path, (unsigned long long)trial, (unsigned long long)rec_trial,
                   in[k].path);
          const size_t slot = (size_t)(trial - b);
          const int has_bulk = in[k].checked && outcome != AS_OUT_FAILED;
          if (taken[slot]) {
            as_record x, y;
            as_results_row_decode(row, &x);
            as_results_row_decode(blk + slot * RB, &y);
            int same = same_result(&x, &y);
            const int rec_same = same;
            if (same && has_bulk)
              AS_TRY(bulk_copy(in[k].rf, rf, trial, 1, &same, &b1, &c1, &b2, &c2));
            AS_CHECK(same, AS_ERR_MISMATCH,
                     "trial %llu differs between %s and %s (%s): overlapping shards disagree, so "
                     "they were not computed alike (another build or platform?); merge only one "
                     "of them",
                     (unsigned long long)trial, in[taken[slot] - 1].path, in[k].path,
                     rec_same ? "bulk data" : "record");
            r.overlaps++;
            continue;
          }
          if (has_bulk) AS_TRY(bulk_copy(in[k].rf, rf, trial, 0, NULL, &b1, &c1, &b2, &c2));
          taken[slot] = (uint32_t)k + 1;
          in[k].taken++;
          r.done++;
          memcpy(blk + slot * RB, row, RB);
          blk_crcs[slot] = held_crcs[j];
        }
      }
    /* The block's rows: one write per run of taken slots (a complete merge: one per block). */
    for (size_t i = 0; i < len;) {
      if (!taken[i]) {
        i++;
        continue;
      }
      size_t j = i;
      while (j < len && taken[j]) {
        run_trials[j - i] = b + j;
        j++;
      }
      AS_TRY(as_results_write_rows_raw(rf, blk + i * RB, run_trials, blk_crcs + i, j - i));
      i = j;
    }
  }
  AS_TRY(provenance(in, n, &prov));
  AS_TRY(as_results_set_attr_string(rf, "merged_from", prov));
  AS_TRY(as_results_set_attr_u64(rf, "merge_partial", r.done < T ? 1 : 0));
  AS_TRY(as_results_set_attr_u64(rf, "merge_mixed_builds", (uint64_t)mixed));
  AS_TRY(as_results_close(&rf));
  AS_CHECK(!stopped(&opts), AS_ERR_INTERRUPTED,
           "merge stopped by a signal before its file took the name %s (untouched); run the "
           "same merge again",
           out);
  /* The new file takes OUT.h5's name in one step: a crash leaves the old file or the new. */
  {
    int fd = open(tmp, O_RDONLY | O_NOFOLLOW);
    AS_CHECK(fd >= 0, AS_ERR_IO, "cannot open %s: %s", tmp, strerror(errno));
    const int synced = fsync(fd);
    close(fd);
    AS_CHECK(synced == 0, AS_ERR_IO, "cannot write %s to disk: %s", tmp, strerror(errno));
  }
  AS_CHECK(rename(tmp, out) == 0, AS_ERR_IO, "cannot rename %s to %s: %s", tmp, out,
           strerror(errno));
  created = 0;
  as_outset_sync_dir(out);
  drop_old_journals(out);
  /* Only OUT.h5 stays (a merge has no journal): the spec copy and the lock file go, under the
   * lock. */
  {
    uint64_t differing = 0;
    if (as_outset_tidy(out, &differing) != AS_OK) as_error_clear();
  }

cleanup:
  if (rf) {
    as_status ignored = as_results_close(&rf);
    (void)ignored;
  }
  if (st != AS_OK && created) unlink(tmp);
  as_outset_release(&claim);
  for (int k = 0; in && k < n; k++)
    if (in[k].rf) {
      as_status ignored = as_results_close(&in[k].rf);
      (void)ignored;
    }
  for (int s = 0; s < n_sets; s++) free(sets[s].owner);
  free(sets);
  free(in);
  as_outset_layout_free(bulk);
  as_spec_destroy(&spec);
  as_spec_diags_free(&diags);
  free(text);
  free(prov);
  free(carried);
  free(done);
  free(covered);
  free(taken);
  free(blk);
  free(held);
  free(held_trials);
  free(run_trials);
  free(held_crcs);
  free(blk_crcs);
  free(bad);
  free(b1);
  free(b2);
  if (rep) *rep = r;
  return st;
}
