/* cmd_run.c: attnsweep run [SPEC] -o OUT.h5: the sweep, on every rank of MPI_COMM_WORLD.
 *
 * Rank 0 reads the spec file and broadcasts its text; every rank parses the same text, so all
 * ranks agree on the plan. Spec problems are printed by rank 0 (SPEC:LINE:COL) and every rank
 * exits 2. Signals (SIGTERM, SIGUSR1, SIGINT) drain the sweep: exit 99, resumable.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/iocheck.h"
#include "attnsweep/outset.h"
#include "attnsweep/par.h"
#include "attnsweep/results.h"
#include "attnsweep/shard.h"
#include "attnsweep/signals.h"
#include "attnsweep/spec.h"
#include "attnsweep/sweep.h"
#include "cli.h"

/* The arguments of `attnsweep run`; the values of its options land here (run_opts). */
typedef struct run_args {
  const char *out; /* -o OUT.h5 */
  int quiet;       /* -q */
  as_sweep_opts sweep;
  as_cli_sets sets; /* --set KEY=VALUE (spec_set.c) */
} run_args;

#define SECONDS_MAX 1e9

/* --shard I/N (cli.h as_opt_fn): into sweep.shard_index, sweep.shard_count. */
static int opt_shard(const as_opt *o, const char *arg, void *dst, char *msg, size_t cap) {
  (void)o;
  as_sweep_opts *so = &((run_args *)dst)->sweep;
  if (as_shard_parse(arg, &so->shard_index, &so->shard_count) == AS_OK) return 0;
  as_error_clear();
  snprintf(msg, cap, "needs I/N with 1 <= I <= N <= %u", AS_SHARD_MAX);
  return -1;
}

/* Every option of `attnsweep run`, once. */
static const as_opt run_opts[] = {
    AS_OPT_TEXT("output", 'o', "OUT.h5", run_args, out, "the results file (required)"),
    AS_OPT_FLAG("resume", 0, run_args, sweep.resume,
                "continue OUT.h5: run only the trials it and its journals lack"),
    AS_OPT_FLAG("retry-failed", 0, run_args, sweep.retry_failed,
                "with --resume: run the failed and non-finite trials again"),
    AS_OPT_FLAG("force", 0, run_args, sweep.force, "replace an existing OUT.h5"),
    AS_OPT_FLAG("allow-spec-change", 0, run_args, sweep.allow_spec_change,
                "resume although the spec's SHA-256 differs (experts)"),
    AS_OPT_FLAG("allow-input-change", 0, run_args, sweep.allow_input_change,
                "resume although a matrix or token file's SHA-256 changed (experts)"),
    AS_OPT_FN("set", 0, AS_ARG_REQUIRED, "KEY=VALUE", run_args, sets, as_cli_opt_set,
              "override a spec key (repeatable; recorded in the stored spec)"),
    AS_OPT_FN("shard", 0, AS_ARG_REQUIRED, "I/N", run_args, sweep, opt_shard,
              "run only shard I of N into OUT.h5.shard-I-of-N (merge joins them)"),
    AS_OPT_NUM("time-limit", 0, "SECONDS", run_args, sweep.time_limit, 0, SECONDS_MAX,
               "stop handing out work after SECONDS (exit 99, resumable); 0: none"),
    AS_OPT_NUM("flush", 0, "SECONDS", run_args, sweep.flush_interval, 0, SECONDS_MAX,
               "a record waits at most SECONDS for the file (default: the spec's)"),
    AS_OPT_NUM("progress", 0, "SECONDS", run_args, sweep.progress_interval, 0, SECONDS_MAX,
               "rank 0's progress every SECONDS on stderr (default 10; 0: none)"),
    AS_OPT_VALUE("progress-bar", 0, run_args, sweep.progress_tty, 1,
                 "the progress as a live bar (\\r updates), terminal or not"),
    AS_OPT_VALUE("no-progress-bar", 0, run_args, sweep.progress_tty, 0,
                 "the progress as plain lines, even on a terminal"),
    AS_OPT_FLAG("quiet", 'q', run_args, quiet,
                "no progress and no summary unless something failed"),
};
const as_optset as_opts_run = AS_OPTSET(run_opts, "[SPEC]");

/* The spec a results file was written with: its copy OUT.h5.spec, or the /spec dataset when
 * the copy is missing (rank 0 only, without MPI-IO). *text allocated. */
static as_status load_stored_spec(const char *out, char **text, long *n) {
  as_status st = AS_OK;
  as_results *rf = NULL;
  size_t len = 0;
  st = as_outset_spec_load(out, text, &len);
  if (st == AS_ERR_DATA) { /* no copy beside the file: the file's own /spec */
    as_error_clear();
    st = AS_OK;
    as_h5_quiet();
    AS_TRY(as_results_open(MPI_COMM_NULL, out, AS_RESULTS_READ, &rf));
    AS_TRY(as_results_spec_text(rf, text));
    len = strlen(*text);
  }
  AS_TRY(st);
  *n = (long)len;
cleanup:
  as_results_close(&rf);
  return st;
}

/* Rank 0 reads the file (path: the one spec reader, as_spec_read: a regular file or a pipe,
 * a stop signal honoured while waiting), or with path NULL the spec stored with the results
 * file stored; everyone receives (text, len) or rank 0's failure. */
static as_status read_and_share(const char *path, const char *stored, int rank, char **text,
                                long *len) {
  as_status st = AS_OK, lst = AS_OK;
  long n = -1;
  char *buf = NULL;
  if (rank == 0) {
    size_t got = 0;
    if (path) {
      lst = as_spec_read(path, as_signals_flag(), &buf, &got);
      if (lst == AS_OK) n = (long)got;
    } else {
      lst = load_stored_spec(stored, &buf, &n);
    }
    if (lst != AS_OK) n = -1;
  }
  if (MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    st = AS_ERR_MPI;
    goto cleanup;
  }
  if (n < 0) {
    int code = (int)lst;
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    st = rank == 0 ? lst
                   : as_error_set((as_status)code, __FILE__, __LINE__, __func__,
                                  "rank 0 could not read the spec");
    goto cleanup;
  }
  if (rank != 0) {
    buf = malloc((size_t)n + 1);
    AS_CHECK_ALLOC(buf);
  }
  if (MPI_Bcast(buf, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    st = AS_ERR_MPI;
    goto cleanup;
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  buf = NULL;
cleanup:
  free(buf);
  return st;
}

/* The name the stored spec of out is parsed under (stored: its copy's name): a name in the
 * directory the first run resolved its relative input files against (outset.h
 * as_outset_inputs_base), so a spec-less resume reads the first run's inputs wherever the
 * results file and the working directory are; stored itself when nothing was recorded.
 * Rank 0 decides, every rank receives name (AS_OUTSET_PATH_MAX bytes). */
static as_status stored_parse_name(const char *out, const char *stored, const char *text, long len,
                                   int rank, char *name) {
  as_status st = AS_OK;
  snprintf(name, AS_OUTSET_PATH_MAX, "%s", stored);
  if (rank == 0) {
    as_spec *first = NULL;
    char dir[AS_OUTSET_PATH_MAX] = "";
    const char *base = strrchr(stored, '/');
    base = base ? base + 1 : stored;
    if (as_spec_parse(text, (size_t)len, stored, NULL, &first) == AS_OK &&
        as_outset_inputs_base(out, first, dir, sizeof dir) == AS_OK && dir[0] &&
        strlen(dir) < AS_OUTSET_PATH_MAX / 2) {
      int w = snprintf(name, AS_OUTSET_PATH_MAX, "%.*s/%s", AS_OUTSET_PATH_MAX / 2,
                       strcmp(dir, "/") == 0 ? "" : dir, base);
      if (w < 0 || w >= AS_OUTSET_PATH_MAX) snprintf(name, AS_OUTSET_PATH_MAX, "%s", stored);
    }
    as_error_clear(); /* nothing recorded or unreadable: the parse and the run report it */
    as_spec_destroy(&first);
  }
  if (MPI_Bcast(name, AS_OUTSET_PATH_MAX, MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    st = as_error_set(AS_ERR_MPI, __FILE__, __LINE__, __func__, "MPI_Bcast of the spec's name");
  return st;
}

/* The stop watchdog of run (signals.h as_signals_set_grace): ATTNSWEEP_STOP_GRACE seconds
 * (0: none), default AS_RUN_STOP_GRACE, the default KillWait of Slurm, after which Slurm
 * kills a job step anyway. */
#define AS_RUN_STOP_GRACE 30
/* Rows of the results file at path with outcome not_converged (0 when it cannot be read:
 * the final line then says nothing about them; `attnsweep status` does), where the sweep's
 * close did not count them (as_sweep_result.counted). */
static uint64_t not_converged_in(const char *path) {
  as_results *rf = NULL;
  as_results_counts c;
  uint64_t n = 0;
  if (as_results_open(MPI_COMM_NULL, path, AS_RESULTS_READ, &rf) == AS_OK &&
      as_results_count(rf, &c, NULL) == AS_OK)
    n = c.outcome[AS_OUT_NOT_CONVERGED];
  as_results_close(&rf);
  as_error_clear();
  return n;
}

static as_status stop_grace(void) {
  as_status st = AS_OK;
  long v = AS_RUN_STOP_GRACE;
  const char *env = getenv("ATTNSWEEP_STOP_GRACE");
  if (env && *env) {
    char *end = NULL;
    errno = 0;
    v = strtol(env, &end, 10);
    AS_CHECK(errno == 0 && end != env && *end == '\0' && v >= 0 && v <= 86400, AS_ERR_ARG,
             "ATTNSWEEP_STOP_GRACE = '%s' must be whole seconds in [0, 86400] (0: no watchdog)",
             env);
  }
  as_signals_set_grace((unsigned)v, "run");
cleanup:
  return st;
}

int as_cmd_run(int argc, char **argv) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  run_args args;
  memset(&args, 0, sizeof args);
  as_sweep_opts_default(&args.sweep);
  int npos = 0, pcode = 0;
  if (as_opts_parse("run", &as_opts_run, argc, argv, &args, rank == 0, &npos, &pcode)) return pcode;
  if (npos > 1)
    return rank == 0
               ? as_cli_usage_error("run", "more than one SPEC ('%s', '%s')", argv[1], argv[2])
               : 2;
  const char *spec_path = npos == 1 ? argv[1] : NULL, *out = args.out;
  as_sweep_opts opts = args.sweep;
  const int quiet = args.quiet;
  if (!out) return rank == 0 ? as_cli_usage_error("run", "missing -o OUT.h5") : 2;
  if (!out[0]) return rank == 0 ? as_cli_usage_error("run", "-o: the file name is empty") : 2;
  /* --shard I/N: the sweep's shard I runs into its own file OUT.h5.shard-I-of-N (shard.h). */
  char shard_out[AS_OUTSET_PATH_MAX];
  if (opts.shard_count) {
    if (as_shard_path(out, opts.shard_index, opts.shard_count, shard_out, sizeof shard_out) !=
        AS_OK)
      return rank == 0 ? as_cli_report("run", AS_ERR_ARG) : 2;
    out = shard_out;
  }
  if (opts.retry_failed && !opts.resume)
    return rank == 0 ? as_cli_usage_error("run", "--retry-failed needs --resume") : 2;
  if (opts.resume && opts.force)
    return rank == 0 ? as_cli_usage_error("run", "--resume and --force exclude each other") : 2;

  as_status st = as_par_setup(MPI_COMM_WORLD);
  if (st != AS_OK) return as_cli_report("run", st);
  /* Memory: BLAS's buffer now, where a limit fails cleanly (exit 3 on every rank), not in a
   * trial; and a stop signal is honoured within the grace even inside a library call. */
  st = stop_grace();
  if (st == AS_OK) st = as_par_blas_reserve();
  {
    int mine = (int)st, all = 0;
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS)
      all = (int)AS_ERR_MPI;
    if (all != AS_OK)
      return st != AS_OK ? as_cli_report("run", st) : as_status_exit_code((as_status)all);
  }

  /* The spec: the file's text, or the built-in default sweep. */
  as_spec *spec = NULL;
  as_spec_diags diags = {0, 0, NULL};
  char *text = NULL;
  long len = 0;
  /* Resume without SPEC: the spec stored with OUT.h5 (its .spec copy, or /spec). */
  char stored_name[AS_OUTSET_PATH_MAX] = "", parse_name[AS_OUTSET_PATH_MAX] = "";
  int printed = 0; /* a --set problem already printed */
  if (args.sets.n && !spec_path && opts.resume)
    return rank == 0 ? as_cli_usage_error("run", "--set needs SPEC: a resume without SPEC runs "
                                                 "the stored spec, its overrides included")
                     : 2;
  if (!spec_path && opts.resume) {
    st = as_outset_name(out, AS_SIDE_SPEC, -1, stored_name, sizeof stored_name);
    if (st == AS_OK) st = read_and_share(NULL, out, rank, &text, &len);
    if (st == AS_OK) st = stored_parse_name(out, stored_name, text, len, rank, parse_name);
    if (st == AS_OK) st = as_spec_parse(text, (size_t)len, parse_name, &diags, &spec);
  } else if (spec_path) {
    st = read_and_share(spec_path, NULL, rank, &text, &len);
    if (st == AS_OK)
      st = as_cli_spec_parse("run", text, (size_t)len, spec_path, &args.sets, rank == 0, &diags,
                             &spec, &printed);
  } else if (args.sets.n) {
    const char *dt = as_spec_default_text();
    st = as_cli_spec_parse("run", dt, strlen(dt), "<built-in default sweep>", &args.sets, rank == 0,
                           &diags, &spec, &printed);
  } else {
    st = as_spec_default(&spec);
  }
  if (st != AS_OK) {
    int code = 2;
    if (rank == 0 && !printed) {
      if (st == AS_ERR_SPEC && diags.count > 0) {
        for (int k = 0; k < diags.count; k++)
          fprintf(stderr, "%s:%d:%d: %s\n",
                  spec_path        ? spec_path
                  : stored_name[0] ? stored_name
                                   : "(default)",
                  diags.items[k].line, diags.items[k].col, diags.items[k].message);
        fprintf(stderr, "attnsweep run: the spec has %d problem%s; nothing was run\n", diags.count,
                diags.count == 1 ? "" : "s");
      } else {
        code = as_cli_report("run", st);
      }
    } else {
      code = as_status_exit_code(st);
    }
    as_spec_diags_free(&diags);
    free(text);
    return code;
  }
  as_spec_diags_free(&diags);

  if (rank == 0 && !quiet)
    fprintf(stderr, "attnsweep run: %s: %llu trials%s on %d rank%s -> %s%s\n", as_spec_name(spec),
            (unsigned long long)as_spec_trial_count(spec), opts.shard_count ? " (one shard)" : "",
            size, size == 1 ? "" : "s", out,
            !opts.resume     ? ""
            : stored_name[0] ? " (resume, with the spec stored in the file)"
                             : " (resume)");
  if (quiet) opts.progress_interval = 0;
  if (rank != 0) opts.progress = NULL;

  opts.spec_path = spec_path;
  as_sweep_result res;
  /* Signal handlers were installed by main() before MPI_Init and stay until exit. */
  st = as_sweep_run(MPI_COMM_WORLD, spec, out, &opts, &res);

  int code = 0;
  if (rank == 0 && opts.resume && (res.damaged_rows || res.damaged_bulk))
    fprintf(stderr,
            "attnsweep run: %s: %llu damaged row(s) and %llu row(s) with damaged bulk data "
            "(checksums do not match) set to pending and run again (%llu rows in all; a damaged "
            "row with a valid journal entry was restored from it instead)\n",
            out, (unsigned long long)res.damaged_rows, (unsigned long long)res.damaged_bulk,
            (unsigned long long)(res.damaged_rows + res.damaged_bulk));
  if (rank == 0 && opts.resume && res.unverified && !quiet)
    fprintf(stderr,
            "attnsweep run: note: %s has no checksums (written by an older attnsweep): its rows "
            "and bulk data were not verified\n",
            out);
  if (rank == 0) {
    if (st == AS_OK || st == AS_ERR_INTERRUPTED) {
      const int some_failed = st == AS_OK && res.failed_total > 0;
      /* Trials of the file whose Sinkhorn attention missed sinkhorn_tol (outcome
       * not_converged: results that summaries exclude, docs/variants.md). */
      char nc[96] = "";
      const uint64_t n_nc = res.counted ? res.not_converged : not_converged_in(out);
      if (n_nc)
        snprintf(nc, sizeof nc, "; %llu not converged (Sinkhorn attention, in the file)",
                 (unsigned long long)n_nc);
      if (!quiet || st != AS_OK || some_failed || n_nc)
        fprintf(stderr,
                "attnsweep run: %llu trials run (%llu failed or non-finite%s) in %.1f s%s\n",
                (unsigned long long)res.done, (unsigned long long)res.failed, nc, res.elapsed,
                st != AS_OK       ? "; stopped early: continue with --resume (exit 99)"
                : some_failed     ? ""
                : res.shard_count ? ""
                                  : "; the sweep is complete");
      if (st == AS_OK && res.shard_count && !quiet)
        fprintf(stderr,
                "attnsweep run: shard %u of %u is complete (%llu trials); once every shard is, "
                "`attnsweep merge OUT.h5 SHARD...` joins them\n",
                res.shard_index, res.shard_count, (unsigned long long)res.shard_trials);
      if (res.retried && !quiet)
        fprintf(stderr, "attnsweep run: %llu failed or non-finite trials were run again\n",
                (unsigned long long)res.retried);
      if (res.skipped && !quiet)
        fprintf(stderr,
                "attnsweep run: %llu trials were already done, %llu recovered from "
                "journals\n",
                (unsigned long long)res.skipped, (unsigned long long)res.recovered);
      code = as_status_exit_code(st);
      if (st == AS_OK && res.journal_differing)
        fprintf(stderr,
                "attnsweep run: warning: %llu journal entries differ from their rows in %s: the "
                "journals are kept (`attnsweep repair %s --dry-run` shows them)\n",
                (unsigned long long)res.journal_differing, out, out);
      else if (st == AS_OK && res.tidy_status != AS_OK)
        fprintf(stderr, "attnsweep run: warning: the side files of %s were not removed: %s\n", out,
                as_status_message(res.tidy_status));
      if (some_failed) {
        fprintf(stderr,
                "attnsweep run: the sweep is complete, but %llu of its %llu trials failed or are "
                "non-finite (exit %d): `attnsweep status %s` lists them; `attnsweep run -o %s "
                "--resume --retry-failed` runs them again\n",
                (unsigned long long)res.failed_total, (unsigned long long)res.total,
                AS_EXIT_TRIALS_FAILED, out, out);
        code = AS_EXIT_TRIALS_FAILED;
      }
    } else {
      code = as_cli_report("run", st);
      if (st == AS_ERR_INTERNAL)
        fprintf(stderr,
                "attnsweep run: this is a bug in attnsweep, not a property of the trial: nothing "
                "was recorded for it; the records written so far are kept and `--resume` "
                "continues once it is fixed (exit %d)\n",
                code);
      if (opts.resume && (st == AS_ERR_HDF5 || st == AS_ERR_DATA))
        fprintf(stderr,
                "attnsweep run: if %s was damaged by a hard kill, `attnsweep repair %s` rebuilds "
                "it from its journals; then resume again\n",
                out, out);
    }
  } else {
    code = as_status_exit_code(st);
  }
  /* Every rank exits with rank 0's code (4 is known there only), whatever the launcher
   * reports. */
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  as_spec_destroy(&spec);
  free(text);
  return code;
}
