/* cmd_reproduce.c: attnsweep reproduce OUT.h5 TRIAL [--save TRIAL.h5 [--snapshots K]]
 *
 * Reruns one trial from the spec stored in OUT.h5 (/spec), exactly as a worker of the sweep
 * runs it (as_sweep_trial), and compares the new record with the stored row bit for bit,
 * field by field, timing fields (wall_time, rank) aside; the bulk data the spec stores for
 * the trial are compared too. Exit 0 identical, 1 different (every differing field named with
 * both values), 2 bad input (no such file or trial, trial not run yet), 3 I/O failure.
 * Collective on MPI_COMM_WORLD (a large-d trial uses every rank for its ScaLAPACK analysis);
 * rank 0 reads and reports.
 *
 * --save TRIAL.h5 regenerates the trial's bulk data whatever the spec stored: the rerun
 * stores every bulk kind (initial and final tokens, final attention, V, M, and the spec's
 * snapshots; --snapshots K: K snapshots at T (k + 1) / K instead, which can change the steps
 * of an adaptive run, so the comparison says whether the record is still the stored one) and
 * writes a results file of one row: the rerun record (its trial field 0, the row; the root
 * attributes source_file and source_trial name where it came from) with its bulk data and the
 * stored spec, so `attnsweep summarize TRIAL.h5 --plot 0` draws it. An existing TRIAL.h5 is not
 * replaced (exit 2); the file is written whatever the comparison says.
 */
#include <errno.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnsweep/outset.h"
#include "attnsweep/results.h"
#include "attnsweep/spec.h"
#include "attnsweep/sweep.h"
#include "cli.h"

#define DIFF_INT(name, a, b) \
  printf("  %-22s stored %lld, rerun %lld\n", name, (long long)(a), (long long)(b))

static void diff_U64(const char *name, const uint64_t *a, const uint64_t *b) {
  DIFF_INT(name, *a, *b);
}
static void diff_I64(const char *name, const int64_t *a, const int64_t *b) {
  DIFF_INT(name, *a, *b);
}
static void diff_I32(const char *name, const int32_t *a, const int32_t *b) {
  DIFF_INT(name, *a, *b);
}
static void diff_F64(const char *name, const double *a, const double *b) {
  uint64_t x, y;
  memcpy(&x, a, 8);
  memcpy(&y, b, 8);
  printf("  %-22s stored %.17g (0x%016" PRIx64 "), rerun %.17g (0x%016" PRIx64 ")\n", name, *a, x,
         *b, y);
}
static void diff_MSG(const char *name, const char *a, const char *b) {
  printf("  %-22s stored \"%.*s\", rerun \"%.*s\"\n", name, AS_RECORD_MSG, a, AS_RECORD_MSG, b);
}
#define diff_HASH diff_U64
#define diff_LABEL diff_I32
#define diff_ENUM diff_I32
#define diff_EXPM diff_I32
#define diff_THEOREM diff_I32
#define diff_GEOM diff_I32
#define diff_VERDICT diff_I32
#define diff_REASON diff_I32
#define diff_OUTCOME diff_I32

/* Number of fields that differ bitwise (timing stripped), each printed. */
static int compare_records(const as_record *stored, const as_record *rerun) {
  as_record a = *stored, b = *rerun;
  as_record_strip_timing(&a);
  as_record_strip_timing(&b);
  int n = 0;
#define AS_X_CMP(kind, name, doc)                                     \
  if (memcmp(&a.name, &b.name, sizeof a.name) != 0) {                 \
    if (n++ == 0) printf("differing fields:\n");                      \
    diff_##kind(#name, (const void *)&a.name, (const void *)&b.name); \
  }
  AS_RECORD_FIELDS(AS_X_CMP)
#undef AS_X_CMP
  return n;
}

/* Rank 0: the stored record, bulk data and spec text of the trial. */
typedef struct stored_trial {
  as_record rec;
  double *bulk[AS_BULK_COUNT];
  uint64_t count[AS_BULK_COUNT];
  char *spec;
  /* The name the stored spec text is parsed under: its relative input files resolve against
   * this name's directory (spec.h): the spec_name attribute when it names an existing file,
   * else the results file. */
  char name[4096];
} stored_trial;

static as_status read_stored(const char *path, uint64_t trial, stored_trial *s) {
  as_status st = AS_OK;
  as_results *rf = NULL;
  AS_TRY(as_results_open(MPI_COMM_NULL, path, AS_RESULTS_READ, &rf));
  uint64_t n = as_results_n_trials(rf);
  AS_CHECK(trial < n, AS_ERR_ARG, "%s has trials 0 to %llu; there is no trial %llu", path,
           (unsigned long long)(n - 1), (unsigned long long)trial);
  AS_TRY(as_outset_refuse_damage(rf, path, trial, 1)); /* a damaged row is no reference */
  AS_TRY(as_results_read_records(rf, trial, 1, &s->rec));
  AS_CHECK(s->rec.outcome != AS_OUT_PENDING, AS_ERR_DATA,
           "%s: trial %llu has not been run yet (pending): nothing to compare", path,
           (unsigned long long)trial);
  AS_TRY(as_results_spec_text(rf, &s->spec));
  if (as_results_attr_string(rf, "spec_name", s->name, sizeof s->name) != AS_OK || !s->name[0] ||
      access(s->name, R_OK) != 0)
    snprintf(s->name, sizeof s->name, "%s", path);
  /* Bulk data exist only for trials that ran to an end state (see sweep.c). */
  if (s->rec.outcome != AS_OUT_FAILED && s->rec.outcome != AS_OUT_INTERRUPTED) {
    for (int k = 0; k < AS_BULK_COUNT; k++) {
      uint64_t off = 0, cnt = 0;
      AS_TRY(as_results_bulk_extent(rf, (as_bulk_kind)k, trial, &off, &cnt));
      if (!cnt) continue;
      s->bulk[k] = malloc(cnt * sizeof(double));
      AS_CHECK_ALLOC(s->bulk[k]);
      s->count[k] = cnt;
      AS_TRY(as_results_read_bulk(rf, (as_bulk_kind)k, trial, s->bulk[k], cnt));
    }
  }
cleanup:
  if (rf) {
    as_status cst = as_results_close(&rf);
    if (st == AS_OK) st = cst;
  }
  return st;
}

/* Number of bulk kinds that differ, each described. */
static int compare_bulk(const stored_trial *s, double *const rerun[AS_BULK_COUNT],
                        const uint64_t counts[AS_BULK_COUNT]) {
  int n = 0;
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    if (!s->count[k]) continue;
    const char *name = as_bulk_name((as_bulk_kind)k);
    if (counts[k] != s->count[k] || !rerun[k]) {
      printf("  bulk %-17s stored %llu values, rerun %llu\n", name, (unsigned long long)s->count[k],
             (unsigned long long)counts[k]);
      n++;
      continue;
    }
    uint64_t ndiff = 0, first = 0;
    for (uint64_t i = 0; i < counts[k]; i++)
      if (memcmp(&s->bulk[k][i], &rerun[k][i], sizeof(double)) != 0 && ndiff++ == 0) first = i;
    if (ndiff) {
      printf("  bulk %-17s %llu of %llu values differ (first at %llu: stored %.17g, rerun "
             "%.17g)\n",
             name, (unsigned long long)ndiff, (unsigned long long)counts[k],
             (unsigned long long)first, s->bulk[k][first], rerun[k][first]);
      n++;
    }
  }
  return n;
}

/* The arguments of `attnsweep reproduce`; its options land here (reproduce_opts_table). */
typedef struct reproduce_args {
  const char *save; /* --save FILE */
  long snapshots;   /* --snapshots K (0: the spec's) */
} reproduce_args;

static const as_opt reproduce_opts_table[] = {
    AS_OPT_TEXT("save", 0, "TRIAL.h5", reproduce_args, save,
                "also write the rerun trial with all its bulk data as a one-row results file"),
    AS_OPT_WHOLE("snapshots", 0, "K", reproduce_args, snapshots, 1, AS_MAX_SNAPSHOTS,
                 "with --save: K snapshots at T (k + 1) / K instead of the spec's"),
};
const as_optset as_opts_reproduce = AS_OPTSET(reproduce_opts_table, "OUT.h5 TRIAL");

/* Rank 0: the rerun trial as a results file of one row (see the file comment). */
static as_status save_trial(const char *out, const char *src, uint64_t trial, const as_spec *spec,
                            const as_record *rec, double *const bulk[AS_BULK_COUNT],
                            const uint64_t counts[AS_BULK_COUNT]) {
  as_status st = AS_OK;
  as_results_info info;
  uint64_t *layout[AS_BULK_COUNT] = {NULL};
  as_results *rf = NULL;
  uint64_t one[AS_BULK_COUNT];
  AS_TRY(as_outset_layout(spec, &info, layout)); /* labels, spec text, snapshot times */
  info.n_trials = 1;
  info.overwrite = 0;
  /* Bulk data exist only for trials that ran to an end state (as_sweep_trial). */
  const int ended = rec->outcome != AS_OUT_FAILED && rec->outcome != AS_OUT_INTERRUPTED;
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    one[k] = ended && bulk[k] ? counts[k] : 0;
    info.bulk_counts[k] = one[k] ? &one[k] : NULL;
  }
  AS_TRY(as_results_create(MPI_COMM_SELF, out, &info, &rf));
  as_record r = *rec;
  r.trial = 0;
  AS_TRY(as_results_write_records(rf, &r, 1));
  for (int k = 0; k < AS_BULK_COUNT; k++)
    if (one[k]) AS_TRY(as_results_write_bulk(rf, (as_bulk_kind)k, 0, bulk[k], one[k]));
  char num[32];
  snprintf(num, sizeof num, "%llu", (unsigned long long)trial);
  AS_TRY(as_results_set_attr_string(rf, "source_file", src));
  AS_TRY(as_results_set_attr_string(rf, "source_trial", num));
cleanup:
  if (rf) {
    as_status cst = as_results_close(&rf);
    if (st == AS_OK) st = cst;
  }
  as_outset_layout_free(layout);
  return st;
}

int as_cmd_reproduce(int argc, char **argv) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int npos = 0, code = 0;
  reproduce_args args = {NULL, 0};
  if (as_opts_parse("reproduce", &as_opts_reproduce, argc, argv, &args, rank == 0, &npos, &code))
    return code;
  if (args.snapshots && !args.save)
    return rank == 0 ? as_cli_usage_error("reproduce", "--snapshots goes with --save") : 2;
  if (args.save && access(args.save, F_OK) == 0) {
    if (rank == 0)
      fprintf(stderr, "attnsweep reproduce: --save %s: the file exists; name a new file\n",
              args.save);
    return 2;
  }
  if (npos > 2) return rank == 0 ? as_cli_usage_error("reproduce", "too many arguments") : 2;
  const char *path = npos >= 1 ? argv[1] : NULL, *tstr = npos >= 2 ? argv[2] : NULL;
  if (!path || !tstr)
    return rank == 0 ? as_cli_usage_error("reproduce", "needs OUT.h5 and a TRIAL index") : 2;
  char *end = NULL;
  errno = 0;
  unsigned long long tv = strtoull(tstr, &end, 10);
  if (errno || end == tstr || *end != '\0' || tstr[0] == '-')
    return rank == 0
               ? as_cli_usage_error("reproduce", "TRIAL must be a trial index, not '%s'", tstr)
               : 2;
  const uint64_t trial = (uint64_t)tv;

  stored_trial s;
  memset(&s, 0, sizeof s);
  as_spec *spec = NULL;
  double *rerun_bulk[AS_BULK_COUNT] = {NULL};
  uint64_t rerun_counts[AS_BULK_COUNT] = {0};

  /* Rank 0 reads; the spec text travels to every rank (a failure travels as length -1). */
  as_status st = AS_OK;
  long len = -1;
  if (rank == 0) {
    st = read_stored(path, trial, &s);
    if (st == AS_OK)
      len = (long)strlen(s.spec);
    else
      code = as_cli_report("reproduce", st);
  }
  MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (len < 0) goto done;
  if (rank != 0) {
    s.spec = malloc((size_t)len + 1);
    if (!s.spec) MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Bcast(s.spec, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
  s.spec[len] = '\0';
  MPI_Bcast(s.name, (int)sizeof s.name, MPI_CHAR, 0, MPI_COMM_WORLD);

  as_record rec;
  st = as_spec_parse(s.spec, (size_t)len, s.name, NULL, &spec);
  if (st == AS_OK) {
    /* A set-up failure (an input file that cannot be read here) is one line and exit 2, not
     * a rerun whose failed record differs from the stored one field by field. */
    as_trial t;
    const char *missing = NULL, *what = NULL;
    if (as_spec_trial(spec, trial, &t) == AS_OK) {
      if (t.triple.file.text && access(t.triple.file.text, R_OK) != 0) {
        missing = t.triple.file.text;
        what = "matrix file";
      } else if (t.init.kind == AS_INIT_FILE && t.init.file.text &&
                 access(t.init.file.text, R_OK) != 0) {
        missing = t.init.file.text;
        what = "token file";
      }
    }
    if (args.save) { /* every bulk kind; --snapshots K: at T (k + 1) / K of this trial */
      double times[AS_MAX_SNAPSHOTS];
      int ns = (int)args.snapshots;
      for (int k = 0; k < ns; k++) times[k] = t.integ.T * (double)(k + 1) / (double)ns;
      as_spec_store_all_bulk(spec, ns, times);
    }
    if (missing) {
      if (rank == 0)
        fprintf(stderr,
                "attnsweep reproduce: %s trial %llu: cannot read its %s %s: %s (relative paths "
                "resolve against the directory of %s)\n",
                path, (unsigned long long)trial, what, missing, strerror(errno), s.name);
      code = 2;
      goto done;
    }
    st = as_sweep_trial(MPI_COMM_WORLD, spec, trial, &rec, rerun_bulk, rerun_counts);
  }
  if (st != AS_OK) {
    code = rank == 0 ? as_cli_report("reproduce", st) : as_status_exit_code(st);
    goto done;
  }
  if (rank == 0) {
    printf("reproduce: %s trial %llu (d %d, n %d): outcome %s, verdict %s\n", path,
           (unsigned long long)trial, s.rec.d, s.rec.n,
           as_enum_label(&as_outcome_table, s.rec.outcome),
           as_enum_label(&as_verdict_table, s.rec.verdict));
    int nd = compare_records(&s.rec, &rec);
    int nb = compare_bulk(&s, rerun_bulk, rerun_counts);
    if (nd == 0 && nb == 0) {
      printf("identical: every field bit for bit (wall_time and rank aside)%s\n",
             s.count[AS_BULK_INITIAL] + s.count[AS_BULK_FINAL] + s.count[AS_BULK_ATTENTION] +
                         s.count[AS_BULK_V] + s.count[AS_BULK_M] + s.count[AS_BULK_SNAPSHOTS] >
                     0
                 ? ", and the bulk data"
                 : "");
    } else {
      printf("DIFFERENT: %d field(s) and %d bulk dataset(s) differ\n", nd, nb);
      code = 1;
    }
    if (args.save) {
      as_status sst = save_trial(args.save, path, trial, spec, &rec, rerun_bulk, rerun_counts);
      if (sst != AS_OK)
        code = as_cli_report("reproduce", sst);
      else
        printf("wrote %s: trial %llu as row 0 with its bulk data (attnsweep summarize %s "
               "--plot 0 --png FILE)\n",
               args.save, (unsigned long long)trial, args.save);
    }
    fflush(stdout);
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
done:
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    free(s.bulk[k]);
    free(rerun_bulk[k]);
  }
  free(s.spec);
  as_spec_destroy(&spec);
  return code;
}
