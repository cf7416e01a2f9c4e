/* cmd_validate.c: attnsweep validate SPEC...: every problem of each spec as SPEC:LINE:COL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/cost.h"
#include "attnsweep/matfile.h"
#include "attnsweep/spec.h"
#include "cli.h"

/* Distinct file references checked (more are rare; beyond this they are left to `run`). */
#define MAX_FILE_CHECKS 256

typedef struct file_ref {
  const char *file;    /* triple file (borrowed from the spec) or NULL */
  int index;           /* triple index */
  const char *tokens;  /* token file or NULL */
  const char *dataset; /* token dataset */
  int d, m, n;
  int heads; /* a per-head file is read with this head axis (blocks.h) */
} file_ref;

static int same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Loads every distinct matrix/token file reference of the spec as a worker would, so a
 * missing file or dataset, a wrong shape or a NaN entry is found before the sweep starts.
 * Prints each problem as SPEC: trial I (case C): message. Returns the number of problems. */
static int check_files(const char *path, const as_spec *spec) {
  static file_ref seen[MAX_FILE_CHECKS];
  int nseen = 0, problems = 0;
  /* The files, datasets and shapes of a trial come from its parameter point alone (the
   * replicate changes its seeds): the P trials of replicate 0 (indices 0..P-1) meet every
   * reference. Walking all R * P trials took minutes for 2^31 - 1 replicates (issue 36). */
  uint64_t total = as_spec_point_count(spec);
  for (uint64_t i = 0; i < total && nseen < MAX_FILE_CHECKS; i++) {
    as_trial t;
    if (as_spec_trial(spec, i, &t) != AS_OK) break;
    int tf = t.triple.vfamily == AS_V_FILE || t.triple.mfamily == AS_M_FILE;
    int kf = t.init.kind == AS_INIT_FILE;
    if (!tf && !kf) continue;
    file_ref r = {tf ? t.triple.file.text : NULL,
                  tf ? t.triple.file_index : 0,
                  kf ? t.init.file.text : NULL,
                  kf ? t.init.dataset.text : NULL,
                  t.d,
                  t.triple.m_rows,
                  t.n,
                  t.blocks.heads};
    int dup = 0;
    for (int k = 0; k < nseen && !dup; k++)
      dup = same_str(seen[k].file, r.file) && seen[k].index == r.index &&
            same_str(seen[k].tokens, r.tokens) && same_str(seen[k].dataset, r.dataset) &&
            seen[k].d == r.d && seen[k].m == r.m && seen[k].n == r.n && seen[k].heads == r.heads;
    if (dup) continue;
    seen[nseen++] = r;
    as_matfile *mf = NULL;
    as_error_clear();
    if (as_matfile_load(&t, &mf) != AS_OK) {
      fprintf(stderr, "%s: trial %llu (case '%s', d = %d, n = %d): %s\n", path,
              (unsigned long long)i, t.case_name ? t.case_name : "?", t.d, t.n,
              as_error_get()->message);
      problems++;
    }
    as_matfile_destroy(&mf);
  }
  as_error_clear();
  return problems;
}

/* The arguments of `attnsweep validate`; its options land here (validate_opts). */
typedef struct validate_args {
  int quiet;        /* -q: no summary line for a valid spec */
  int no_files;     /* --no-files */
  as_cli_sets sets; /* --set KEY=VALUE */
} validate_args;

/* Every option of `attnsweep validate`, once. */
static const as_opt validate_opts[] = {
    AS_OPT_FLAG("no-files", 0, validate_args, no_files,
                "do not load the matrix and token files the spec reads"),
    AS_OPT_FLAG("quiet", 'q', validate_args, quiet, "no summary line for a valid spec"),
    AS_OPT_FN("set", 0, AS_ARG_REQUIRED, "KEY=VALUE", validate_args, sets, as_cli_opt_set,
              "override a spec key (repeatable), as run --set does"),
};
const as_optset as_opts_validate = AS_OPTSET(validate_opts, "SPEC...");

int as_cmd_validate(int argc, char **argv) {
  validate_args args;
  memset(&args, 0, sizeof args);
  int nspecs = 0, worst = 0, pcode = 0;
  if (as_opts_parse("validate", &as_opts_validate, argc, argv, &args, 1, &nspecs, &pcode))
    return pcode;
  const int quiet = args.quiet, files = !args.no_files;
  if (nspecs == 0) return as_cli_usage_error("validate", "missing SPEC");
  for (int i = 1; i <= nspecs; i++) {
    const char *path = argv[i];
    as_spec_diags diags = {0, 0, NULL};
    as_spec *spec = NULL;
    as_error_clear();
    char *stext = NULL;
    size_t slen = 0;
    int printed = 0;
    as_status st = as_spec_read(path, NULL, &stext, &slen);
    if (st == AS_OK)
      st = as_cli_spec_parse("validate", stext, slen, path, &args.sets, 1, &diags, &spec, &printed);
    free(stext);
    int code = 0;
    int bad_files = st == AS_OK && files ? check_files(path, spec) : 0;
    /* Memory (cost.h): memory_limit, else MemAvailable of this machine for one rank. */
    as_cost_memory_info mi;
    as_status mst = st == AS_OK ? as_cost_memory_scan(spec,
                                                      as_spec_memory_limit(spec) > 0.0
                                                          ? as_spec_memory_limit(spec)
                                                          : as_cost_memory_available(1),
                                                      &mi)
                                : AS_OK;
    if (mst != AS_OK) {
      fprintf(stderr, "%s: %s\n", path, as_error_get()->message);
      as_error_clear();
      code = 2;
    } else if (bad_files) {
      fprintf(stderr, "%s: %d problem%s with matrix or token files (--no-files skips this check)\n",
              path, bad_files, bad_files == 1 ? "" : "s");
      code = 2;
    } else if (st == AS_OK) {
      if (!quiet)
        printf("%s: valid: %llu trials (%d case%s, %llu points x %u replicate%s), sha256 %.16s\n",
               path, (unsigned long long)as_spec_trial_count(spec), as_spec_case_count(spec),
               as_spec_case_count(spec) == 1 ? "" : "s",
               (unsigned long long)as_spec_point_count(spec), as_spec_replicates(spec),
               as_spec_replicates(spec) == 1 ? "" : "s", as_spec_sha256(spec));
    } else if (printed) {
      code = 2;
    } else if (st == AS_ERR_SPEC && diags.count > 0) {
      for (int k = 0; k < diags.count; k++)
        fprintf(stderr, "%s:%d:%d: %s\n", path, diags.items[k].line, diags.items[k].col,
                diags.items[k].message);
      fprintf(stderr, "%s: %d problem%s\n", path, diags.count, diags.count == 1 ? "" : "s");
      code = 2;
    } else {
      code = as_cli_report("validate", st);
    }
    if (code > worst) worst = code;
    as_spec_diags_free(&diags);
    as_spec_destroy(&spec);
  }
  return worst;
}
