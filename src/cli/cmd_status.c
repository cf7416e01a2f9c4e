/* cmd_status.c: attnsweep status OUT.h5 — progress of a running or stopped sweep.
 *
 * Reads the results file without MPI (sec2 driver, HDF5 file locking off), so it works on a
 * login node while the sweep runs. "running" means another process holds OUT.h5.lock. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attnsweep/iocheck.h"
#include "attnsweep/outset.h"
#include "attnsweep/results.h"
#include "attnsweep/shard.h"
#include "attnsweep/spec.h"
#include "cli.h"

enum { MAX_FAILURES_SHOWN = 5, MAX_SEGMENTS_SHOWN = 20 };

/* Open read-only; a writer that is in its open or close may have metadata in flight for a
 * moment, so an HDF5 failure is retried a few times. Bad-input errors are not retried. */
static as_status open_with_retry(const char *path, as_results **rf) {
  as_status st = AS_OK;
  for (int attempt = 0; attempt < 5; attempt++) {
    as_error_clear();
    st = as_results_open(MPI_COMM_NULL, path, AS_RESULTS_READ, rf);
    if (st != AS_ERR_HDF5) break;
    struct timespec pause = {0, 200000000};
    nanosleep(&pause, NULL);
  }
  return st;
}

static void print_counts(const char *what, const as_enum_table *tab, const uint64_t *n) {
  printf("%s:", what);
  int first = 1;
  for (int v = 0; v < tab->count; v++) {
    if (!n[v]) continue;
    printf("%s %s %llu", first ? "" : ",", tab->labels[v], (unsigned long long)n[v]);
    first = 0;
  }
  printf("%s\n", first ? " none" : "");
}

/* Lists the first failed trials with their messages (reads /trials in blocks). */
static as_status print_failures(as_results *rf, uint64_t n_failed) {
  as_status st = AS_OK;
  enum { BLOCK = 4096 };
  as_record *buf = NULL;
  printf("failures: %llu\n", (unsigned long long)n_failed);
  if (!n_failed) return AS_OK;
  buf = malloc(BLOCK * sizeof *buf);
  AS_CHECK_ALLOC(buf);
  uint64_t n = as_results_n_trials(rf), shown = 0;
  for (uint64_t b = 0; b < n && shown < MAX_FAILURES_SHOWN; b += BLOCK) {
    size_t k = n - b < BLOCK ? (size_t)(n - b) : BLOCK;
    AS_TRY(as_results_read_records(rf, b, k, buf));
    for (size_t i = 0; i < k && shown < MAX_FAILURES_SHOWN; i++) {
      if (buf[i].outcome != AS_OUT_FAILED && buf[i].verdict != AS_VERDICT_FAILED) continue;
      printf("  trial %llu (d %d, n %d): %.*s\n", (unsigned long long)(b + i), buf[i].d, buf[i].n,
             AS_RECORD_MSG, buf[i].message[0] ? buf[i].message : "(no message)");
      shown++;
    }
  }
  if (n_failed > shown) printf("  ... and %llu more\n", (unsigned long long)(n_failed - shown));
cleanup:
  free(buf);
  return st;
}

/* The checksums of every row and bulk slab (results.h). A row that a running sweep is writing
 * at this moment may read as damaged: with held (a run holds the file) each damaged row is
 * checked once more after a pause and counts only if it is still damaged. */
static as_status check_sums(as_results *rf, int held, as_results_verify_counts *vc,
                            uint8_t **flags_out) {
  as_status st = AS_OK;
  const uint64_t n = as_results_n_trials(rf);
  uint8_t *flags = calloc(n ? n : 1, 1);
  AS_CHECK_ALLOC(flags);
  AS_TRY(as_results_verify(rf, 0, n, flags, vc));
  if (held && (vc->rows_bad || vc->bulk_bad)) {
    struct timespec pause = {0, 300000000};
    nanosleep(&pause, NULL);
    vc->rows_bad = vc->bulk_bad = 0;
    for (uint64_t i = 0; i < n; i++) {
      if (!flags[i]) continue;
      as_results_verify_counts one;
      AS_TRY(as_results_verify(rf, i, 1, &flags[i], &one));
      vc->rows_bad += one.rows_bad;
      vc->bulk_bad += one.bulk_bad;
    }
  }
  *flags_out = flags;
  flags = NULL;
cleanup:
  free(flags);
  return st;
}

static void print_sums(const as_results_verify_counts *vc, const uint8_t *flags, uint64_t n) {
  if (!vc->verified) {
    printf("checksums: none (a file written by an older attnsweep): rows and bulk data not "
           "verified\n");
    return;
  }
  printf("checksums: %llu rows and %llu bulk slabs checked, %llu damaged row(s), %llu row(s) with "
         "damaged bulk data\n",
         (unsigned long long)vc->rows, (unsigned long long)vc->slabs,
         (unsigned long long)vc->rows_bad, (unsigned long long)vc->bulk_bad);
  uint64_t shown = 0, bad = vc->rows_bad + vc->bulk_bad;
  for (uint64_t i = 0; i < n && shown < MAX_FAILURES_SHOWN; i++) {
    if (!flags[i]) continue;
    printf("  trial %llu: %s\n", (unsigned long long)i,
           flags[i] == AS_VERIFY_ROW ? "row damaged (its checksum does not match)"
                                     : "bulk data damaged (a slab's checksum does not match)");
    shown++;
  }
  if (bad > shown) printf("  ... and %llu more\n", (unsigned long long)(bad - shown));
}

/* The arguments of `attnsweep status`. */
typedef struct status_args {
  int json; /* --json */
} status_args;

static const as_opt status_opts[] = {
    AS_OPT_FLAG("json", 0, status_args, json,
                "one JSON object on stdout; exit 0 complete, 1 incomplete, 3 damaged, 2 bad input"),
};
const as_optset as_opts_status = AS_OPTSET(status_opts, "OUT.h5 | SHARD...");

/* Exit status of `status --json` for a readable file or shard set that is not complete (docs/
 * slurm.md, "Scripts"): stopped, running or shards missing. */
#define STATUS_EXIT_INCOMPLETE 1

/* Where `status --json` writes its object: a memory stream, printed only once the object is
 * whole (json_done); every other ending prints the error object instead (as_cmd_status), so
 * stdout holds exactly one JSON object whatever happens (issue 49). NULL without --json. */
static FILE *jout;
static int json_done;

/* The length of the valid UTF-8 sequence at s (1 to 4 bytes), 0 when the bytes there are not
 * one (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, cut short). */
static int utf8_len(const unsigned char *s) {
  const unsigned c = s[0];
  int n = 0;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  if (c >= 0xE0 && c <= 0xEF) n = 3;
  if (c >= 0xF0 && c <= 0xF4) n = 4;
  if (n == 0) return 0;
  for (int i = 1; i < n; i++) /* stops at the NUL that ends s: not a continuation byte */
    if ((s[i] & 0xC0) != 0x80) return 0;
  const unsigned c1 = s[1];
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xF0 && c1 < 0x90)) return 0; /* overlong */
  if (c == 0xED && c1 >= 0xA0) return 0;                              /* a surrogate */
  if (c == 0xF4 && c1 >= 0x90) return 0;                              /* beyond U+10FFFF */
  return n;
}

/* s as a JSON string: valid UTF-8 passes through, control characters, '"' and '\\' are
 * escaped, and each byte that is not part of valid UTF-8 (a file name or attribute in another
 * encoding) is written as the escape \udcXX, the lone surrogate of Python's "surrogateescape"
 * (os.fsencode of the decoded string gives the bytes back). So the output is valid UTF-8
 * whatever the bytes (issue 49). */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    const int n = utf8_len(p);
    if (n == 0) {
      fprintf(f, "\\udc%02x", *p++);
    } else if (*p == '"' || *p == '\\') {
      fprintf(f, "\\%c", *p++);
    } else if (*p < 0x20 || *p == 0x7f) {
      fprintf(f, "\\u%04x", *p++);
    } else {
      fwrite(p, 1, (size_t)n, f);
      p += n;
    }
  }
  fputc('"', f);
}

/* {"label": count, ...} of the nonzero counts of an enum. */
static void json_counts(FILE *f, const as_enum_table *tab, const uint64_t *n) {
  fputc('{', f);
  int first = 1;
  for (int v = 0; v < tab->count; v++) {
    if (!n[v]) continue;
    fprintf(f, "%s", first ? "" : ", ");
    json_str(f, tab->labels[v]);
    fprintf(f, ": %llu", (unsigned long long)n[v]);
    first = 0;
  }
  fputc('}', f);
}

/* ---------------------------------------------------------------- shard sets (job arrays) */

/* The trials of a shard file's own shard: its attribute, else the split computed from its
 * /spec (a file rebuilt by repair). */
static as_status shard_trials(as_results *rf, const char *path, uint32_t index, uint32_t count,
                              uint64_t *n) {
  as_status st = AS_OK;
  char *text = NULL;
  uint32_t *owner = NULL;
  as_spec *spec = NULL;
  if (as_results_attr_u64(rf, AS_SHARD_ATTR_TRIALS, n) == AS_OK) return AS_OK;
  as_error_clear();
  AS_TRY(as_results_spec_text(rf, &text));
  AS_TRY(as_spec_parse(text, strlen(text), path, NULL, &spec));
  const uint64_t t = as_spec_trial_count(spec);
  owner = malloc((t ? t : 1) * sizeof *owner);
  AS_CHECK_ALLOC(owner);
  AS_TRY(as_shard_owners(spec, count, owner, NULL));
  *n = 0;
  for (uint64_t i = 0; i < t; i++) *n += owner[i] == index;
cleanup:
  as_spec_destroy(&spec);
  free(owner);
  free(text);
  return st;
}

typedef struct shard_file {
  char *path;
  uint32_t index, count;
} shard_file;

static int by_shard(const void *pa, const void *pb) {
  const shard_file *a = pa, *b = pb;
  if (a->count != b->count) return a->count < b->count ? -1 : 1;
  if (a->index != b->index) return a->index < b->index ? -1 : 1;
  return strcmp(a->path, b->path);
}

/* The shard files of results ("<results>.shard-I-of-N" in its directory), sorted. */
static as_status find_shards(const char *results, shard_file **out, int *n) {
  as_status st = AS_OK;
  char dir[4096];
  const char *slash = strrchr(results, '/');
  const char *base = slash ? slash + 1 : results;
  if (slash)
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - results) ? (int)(slash - results) : 1, results);
  else
    snprintf(dir, sizeof dir, ".");
  DIR *d = opendir(dir);
  shard_file *v = NULL;
  int k = 0, cap = 0;
  *out = NULL;
  *n = 0;
  if (!d) return AS_OK;
  for (struct dirent *e; (e = readdir(d));) {
    uint32_t i = 0, c = 0;
    size_t blen = 0;
    if (!as_shard_path_parse(e->d_name, &i, &c, &blen) || blen != strlen(base) ||
        strncmp(e->d_name, base, blen) != 0)
      continue;
    if (k == cap) {
      cap = cap ? 2 * cap : 16;
      shard_file *p = realloc(v, (size_t)cap * sizeof *p);
      AS_CHECK_ALLOC(p);
      v = p;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    v[k].path = malloc(len);
    AS_CHECK_ALLOC(v[k].path);
    snprintf(v[k].path, len, "%s/%s", dir, e->d_name);
    if (!slash) snprintf(v[k].path, len, "%s", e->d_name);
    v[k].index = i;
    v[k].count = c;
    k++;
  }
  if (k > 1) qsort(v, (size_t)k, sizeof *v, by_shard); /* v is NULL when k == 0 */
  *out = v;
  *n = k;
  v = NULL;
  k = 0;
cleanup:
  for (int j = 0; j < k; j++) free(v[j].path);
  free(v);
  closedir(d);
  return st;
}

/* The first damaged trials of flags (n entries) as "a, b, c" into buf. */
static void damaged_list(const uint8_t *flags, uint64_t n, uint64_t bad, char *buf, size_t len) {
  size_t used = 0;
  uint64_t named = 0;
  buf[0] = '\0';
  for (uint64_t i = 0; i < n && named < MAX_FAILURES_SHOWN; i++) {
    if (!flags[i]) continue;
    int w = snprintf(buf + used, len - used, "%s%llu", named ? ", " : "", (unsigned long long)i);
    if (w < 0 || (size_t)w >= len - used) return;
    used += (size_t)w;
    named++;
  }
  if (bad > named) snprintf(buf + used, len - used, ", ...");
}

/* One line per shard file (its own trials done, state, checksums), the shards of each split
 * that are missing, and the total; how to merge once every shard is complete. Exit 3 when a
 * shard file fails its checksums (merge would refuse it), else 0. */
static int status_shards(const char *results, shard_file *f, int n, int json) {
  as_status st = AS_OK;
  uint64_t all_done = 0, all_total = 0, sweep = 0;
  int complete = 0, missing = 0, damaged = 0, unreadable = 0;
  int worst = 0; /* the highest exit code of an unreadable shard (2 bad input, 3 I/O) */
  /* The text goes to stdout, or with json to nowhere: the JSON object is printed at the end. */
  FILE *txt = json ? fopen("/dev/null", "w") : stdout;
  if (!txt) return 3;
  char *js = NULL;
  size_t js_len = 0;
  FILE *jf = json ? open_memstream(&js, &js_len) : NULL;
  if (json && !jf) {
    fclose(txt);
    return 3;
  }
  if (jf) fputs("\"shards\": [", jf);
  fprintf(txt, "shards%s%s: %d file%s\n", results ? " of " : "", results ? results : "", n,
          n == 1 ? "" : "s");
  for (int k = 0; k < n; k++) {
    as_results *rf = NULL;
    uint32_t i = 0, c = 0;
    uint64_t own = 0;
    as_results_counts cn;
    int held = 0;
    long pid = -1;
    char host[256] = "";
    st = open_with_retry(f[k].path, &rf);
    if (st == AS_OK) st = as_shard_identify(rf, f[k].path, &i, &c);
    if (st == AS_OK && c == 0) {
      i = c = 1; /* a whole run: shard 1 of 1 */
      own = as_results_n_trials(rf);
    } else if (st == AS_OK) {
      st = shard_trials(rf, f[k].path, i, c, &own);
    }
    if (st == AS_OK) st = as_results_count(rf, &cn, NULL);
    if (st == AS_OK) st = as_outset_probe(f[k].path, &held, &pid, host, sizeof host);
    as_results_verify_counts vc;
    memset(&vc, 0, sizeof vc);
    uint8_t *flags = NULL;
    if (st == AS_OK) st = check_sums(rf, held, &vc, &flags);
    if (st != AS_OK) {
      char buf[AS_ERRMSG_MAX + 64];
      as_error_format_user(buf, sizeof buf);
      fprintf(txt, "  %s: unreadable: %s\n", f[k].path, buf);
      if (jf) {
        fprintf(jf, "%s{\"file\": ", k ? ", " : "");
        json_str(jf, f[k].path);
        fputs(", \"state\": \"unreadable\", \"error\": ", jf);
        json_str(jf, buf);
        fputc('}', jf);
      }
      unreadable++;
      if (as_status_exit_code(st) > worst) worst = as_status_exit_code(st);
      as_error_clear();
      as_results_close(&rf);
      st = AS_OK;
      continue;
    }
    f[k].index = i;
    f[k].count = c;
    sweep = cn.total;
    const uint64_t bad = cn.outcome[AS_OUT_FAILED] + cn.outcome[AS_OUT_NONFINITE];
    const int done = cn.done >= own;
    complete += done;
    all_done += cn.done < own ? cn.done : own;
    all_total += own;
    fprintf(txt, "  shard %u/%u %s: %llu / %llu done (%.1f%%), ", i, c, f[k].path,
            (unsigned long long)cn.done, (unsigned long long)own,
            own ? 100.0 * (double)cn.done / (double)own : 100.0);
    if (done)
      fprintf(txt, "complete");
    else if (held)
      fprintf(txt, "running (pid %ld on %s)", pid, host[0] ? host : "?");
    else
      fprintf(txt, "stopped (resume: attnsweep run -o %s --resume)", f[k].path);
    if (bad) fprintf(txt, ", %llu failed or non-finite", (unsigned long long)bad);
    if (cn.outcome[AS_OUT_NOT_CONVERGED])
      fprintf(txt, ", %llu not converged (Sinkhorn)",
              (unsigned long long)cn.outcome[AS_OUT_NOT_CONVERGED]);
    const uint64_t n_damaged = vc.rows_bad + vc.bulk_bad;
    const int is_damaged = n_damaged && !held;
    if (is_damaged) {
      char list[160];
      damaged_list(flags, cn.total, n_damaged, list, sizeof list);
      fprintf(txt, ", DAMAGED: %llu row(s) fail their checksums (trials %s): attnsweep repair %s",
              (unsigned long long)n_damaged, list, f[k].path);
      damaged++;
    } else if (!vc.verified) {
      fprintf(txt, ", checksums: none (not verified)");
    }
    fprintf(txt, "\n");
    if (jf) {
      fprintf(jf, "%s{\"file\": ", k ? ", " : "");
      json_str(jf, f[k].path);
      fprintf(jf,
              ", \"index\": %u, \"count\": %u, \"done\": %llu, \"own\": %llu, \"state\": "
              "\"%s\", \"failed\": %llu, \"damaged\": %llu, \"verified\": %s, \"outcomes\": ",
              i, c, (unsigned long long)cn.done, (unsigned long long)own,
              is_damaged ? "damaged"
              : done     ? "complete"
              : held     ? "running"
                         : "stopped",
              (unsigned long long)bad, (unsigned long long)n_damaged,
              vc.verified ? "true" : "false");
      json_counts(jf, &as_outcome_table, cn.outcome);
      if (!done && !held) {
        char cmd[AS_OUTSET_PATH_MAX + 64];
        snprintf(cmd, sizeof cmd, "attnsweep run -o %s --resume", f[k].path);
        fputs(", \"resume\": ", jf);
        json_str(jf, cmd);
      }
      fputc('}', jf);
    }
    free(flags);
    as_results_close(&rf);
  }
  if (n > 1) qsort(f, (size_t)n, sizeof *f, by_shard);
  /* Missing shards of each split that appears. */
  for (int k = 0; k < n; k++) {
    if (k > 0 && f[k].count == f[k - 1].count) continue;
    uint32_t c = f[k].count;
    if (!c) continue;
    uint8_t *have = calloc(c + 1u, 1);
    if (!have) {
      if (json) fclose(txt);
      if (jf) fclose(jf);
      free(js);
      return 3;
    }
    for (int j = k; j < n && f[j].count == c; j++) have[f[j].index] = 1;
    for (uint32_t i = 1; i <= c; i++)
      if (!have[i]) {
        if (results)
          fprintf(txt, "  shard %u/%u %s.shard-%u-of-%u: missing\n", i, c, results, i, c);
        else
          fprintf(txt, "  shard %u/%u: missing\n", i, c);
        if (jf) fprintf(jf, "%s\"%u/%u\"", missing ? ", " : "], \"missing\": [", i, c);
        missing++;
      }
    free(have);
  }
  /* One split: its shards partition the sweep, missing ones included. */
  int one_split = n > 0 && f[0].count > 0 && f[0].count == f[n - 1].count;
  for (int k = 1; k < n && one_split; k++) one_split = f[k].index != f[k - 1].index;
  if (one_split) all_total = sweep;
  fprintf(txt, "trials: %llu / %llu done (%.1f%%) over the shards of a %llu-trial sweep\n",
          (unsigned long long)all_done, (unsigned long long)all_total,
          all_total ? 100.0 * (double)all_done / (double)all_total : 0.0,
          (unsigned long long)sweep);
  int rc = 0;
  const char *state = "complete";
  if (damaged) {
    fprintf(txt, "state: %d shard file%s damaged (merge refuses %s: repair %s first)\n", damaged,
            damaged == 1 ? "" : "s", damaged == 1 ? "it" : "them", damaged == 1 ? "it" : "them");
    rc = 3;
    state = "damaged";
  } else if (!missing && complete == n) {
    fprintf(txt, "state: every shard complete: attnsweep merge %s SHARD...\n",
            results ? results : "OUT.h5");
  } else {
    fprintf(txt, "state: %d of %d shard%s complete%s\n", complete, n + missing,
            n + missing == 1 ? "" : "s", missing ? ", some missing" : "");
    state = "incomplete";
    if (json) rc = STATUS_EXIT_INCOMPLETE;
  }
  /* A shard that cannot be read (not a results file, a FIFO or directory at its name, a
   * damaged file) is named above, and the exit code says so: merge would refuse it. */
  if (worst > rc) rc = worst;
  if (json) {
    if (!missing) fputs("], \"missing\": [", jf);
    fclose(jf);
    fprintf(jout, "{\"shards_of\": ");
    if (results)
      json_str(jout, results);
    else
      fputs("null", jout);
    fprintf(jout,
            ", \"trials\": %llu, \"done\": %llu, \"total\": %llu, \"state\": \"%s\", "
            "\"unreadable\": %d, \"exit\": %d, %s]}\n",
            (unsigned long long)sweep, (unsigned long long)all_done, (unsigned long long)all_total,
            state, unreadable, rc, js ? js : "\"shards\": [], \"missing\": [");
    json_done = 1;
    free(js);
    fclose(txt);
  }
  return rc;
}

/* ---------------------------------------------------------------- group trials (issue 34.3)
 *
 * Trials run on a group of ranks (ranks_per_trial): how many rows were run that way (the
 * record's ranks_per_trial >= 2), and how many pending trials of the stored spec ask for a group
 * explicitly (ranks_per_trial: R >= 2; the automatic choice, 0, depends on the job's ranks and
 * is not counted). Only specs that name the key are looked at. */
typedef struct group_counts {
  int any;                /* the stored spec names ranks_per_trial */
  uint64_t done, pending; /* rows run on groups; pending trials asking for one */
} group_counts;

#define STATUS_GROUP_BLOCK 4096
#define STATUS_GROUP_MAX_TRIALS ((uint64_t)1 << 22) /* beyond: pending ones not counted */

static as_status count_groups(as_results *rf, group_counts *g) {
  as_status st = AS_OK;
  char *text = NULL;
  as_spec *spec = NULL;
  as_record *recs = NULL;
  uint64_t *trials = NULL;
  memset(g, 0, sizeof *g);
  if (as_results_spec_text(rf, &text) != AS_OK || !text || !strstr(text, "ranks_per_trial")) {
    as_error_clear(); /* no stored spec, or no group trials: nothing to say */
    goto cleanup;
  }
  g->any = 1;
  if (as_spec_parse(text, strlen(text), "(stored spec)", NULL, &spec) != AS_OK) {
    as_error_clear();
    spec = NULL;
  }
  const uint64_t n = as_results_n_trials(rf);
  recs = malloc(STATUS_GROUP_BLOCK * sizeof *recs);
  trials = malloc(STATUS_GROUP_BLOCK * sizeof *trials);
  AS_CHECK_ALLOC(recs && trials ? recs : NULL);
  for (uint64_t first = 0; first < n; first += STATUS_GROUP_BLOCK) {
    size_t count = n - first < STATUS_GROUP_BLOCK ? (size_t)(n - first) : STATUS_GROUP_BLOCK, held;
    AS_TRY(as_results_read_held(rf, first, count, recs, trials, &held));
    for (size_t i = 0; i < held; i++) {
      const as_record *r = &recs[i];
      if (r->outcome != AS_OUT_PENDING && r->outcome != AS_OUT_INTERRUPTED) {
        if (r->ranks_per_trial >= 2) g->done++;
      } else if (spec && n <= STATUS_GROUP_MAX_TRIALS) {
        as_trial t;
        if (as_spec_trial(spec, trials[i], &t) == AS_OK && t.ranks_per_trial >= 2) g->pending++;
        as_error_clear();
      }
    }
  }
cleanup:
  free(recs);
  free(trials);
  as_spec_destroy(&spec);
  free(text);
  return st;
}

static void print_groups(const group_counts *g, int json) {
  if (!g->any) return;
  if (json)
    fprintf(jout, ", \"group_trials\": {\"done\": %llu, \"pending\": %llu}",
            (unsigned long long)g->done, (unsigned long long)g->pending);
  else
    printf("group trials (ranks_per_trial >= 2): %llu done, %llu pending\n",
           (unsigned long long)g->done, (unsigned long long)g->pending);
}

/* The status of path (argv[1], npos operands moved to argv[1..npos]) as text on stdout, or with
 * json as one object into jout; returns the exit code. */
static int status_run(int argc, char **argv, int json, int npos) {
  as_status st = AS_OK;
  as_results *rf = NULL;
  as_results_segment *segs = NULL;
  uint8_t *flags = NULL;
  int damaged_exit = 0;
  (void)argc;
  const char *path = argv[1];
  const int n_paths = npos; /* the operands, moved to argv[1..npos] */
  as_h5_quiet();
  /* Shard files: several given, or OUT.h5 absent but OUT.h5.shard-I-of-N beside it. */
  if (n_paths > 1 || access(path, F_OK) != 0) {
    shard_file *f = NULL;
    int n = 0, rc = 0;
    if (n_paths > 1) {
      f = calloc((size_t)n_paths, sizeof *f);
      if (!f) return 3;
      for (int i = 1; i <= n_paths; i++) f[n++].path = argv[i];
      rc = status_shards(NULL, f, n, json);
      free(f);
      return rc;
    }
    st = find_shards(path, &f, &n);
    if (st != AS_OK) return as_cli_report("status", st);
    if (n > 0) rc = status_shards(path, f, n, json);
    for (int k = 0; k < n; k++) free(f[k].path);
    free(f);
    if (n > 0) return rc;
  }
  AS_TRY(open_with_retry(path, &rf));

  char tool[64] = "?", git[64] = "?", name[512] = "", sha[80] = "", start[40] = "", end[40] = "";
  uint64_t seed = 0;
  as_results_attr_string(rf, "tool_version", tool, sizeof tool);
  as_results_attr_string(rf, "git_revision", git, sizeof git);
  as_results_attr_string(rf, "spec_name", name, sizeof name);
  as_results_attr_string(rf, "spec_sha256", sha, sizeof sha);
  as_results_attr_string(rf, "start_time", start, sizeof start);
  as_results_attr_string(rf, "end_time", end, sizeof end);
  as_results_attr_u64(rf, "master_seed", &seed);
  as_error_clear(); /* a missing descriptive attribute is not a reason to fail */

  as_results_counts c;
  AS_TRY(as_results_count(rf, &c, NULL));
  size_t nseg = 0;
  AS_TRY(as_results_segments(rf, NULL, 0, &nseg));
  if (nseg) {
    segs = calloc(nseg, sizeof *segs);
    AS_CHECK_ALLOC(segs);
    AS_TRY(as_results_segments(rf, segs, nseg, &nseg));
  }
  int held = 0;
  long pid = -1;
  char host[256] = "";
  {
    /* The lock of the file itself: a symlink names its target's set (outset.h). */
    char real[AS_OUTSET_PATH_MAX];
    AS_TRY(as_outset_resolve(path, real, sizeof real));
    AS_TRY(as_outset_probe(real, &held, &pid, host, sizeof host));
  }

  as_results_verify_counts vc;
  AS_TRY(check_sums(rf, held, &vc, &flags));
  const uint64_t n_damaged = vc.rows_bad + vc.bulk_bad;

  if (json) {
    /* One object: counts, state, how the last segment ended, the resume command. */
    uint32_t ji = 0, jn = 0;
    uint64_t jown = c.total;
    AS_TRY(as_shard_identify(rf, path, &ji, &jn));
    if (jn) AS_TRY(shard_trials(rf, path, ji, jn, &jown));
    const uint64_t jbad = c.outcome[AS_OUT_FAILED] + c.outcome[AS_OUT_NONFINITE];
    const int complete = c.done >= jown;
    const char *state = n_damaged && !held ? "damaged"
                        : complete         ? (jbad ? "complete_with_failures" : "complete")
                        : held             ? "running"
                                           : "stopped";
    const int rc = n_damaged && !held ? 3 : complete ? 0 : STATUS_EXIT_INCOMPLETE;
    fprintf(jout, "{\"file\": ");
    json_str(jout, path);
    fprintf(jout, ", \"spec_name\": ");
    json_str(jout, name);
    fprintf(jout, ", \"spec_sha256\": ");
    json_str(jout, sha);
    fprintf(jout,
            ", \"trials\": %llu, \"own\": %llu, \"done\": %llu, \"state\": \"%s\", "
            "\"exit\": %d, \"failed\": %llu, \"not_converged\": %llu, \"damaged\": %llu, "
            "\"verified\": %s",
            (unsigned long long)c.total, (unsigned long long)jown, (unsigned long long)c.done,
            state, rc, (unsigned long long)jbad,
            (unsigned long long)c.outcome[AS_OUT_NOT_CONVERGED], (unsigned long long)n_damaged,
            vc.verified ? "true" : "false");
    if (jn) fprintf(jout, ", \"shard\": {\"index\": %u, \"count\": %u}", ji, jn);
    fprintf(jout, ", \"outcomes\": ");
    json_counts(jout, &as_outcome_table, c.outcome);
    fprintf(jout, ", \"verdicts\": ");
    json_counts(jout, &as_verdict_table, c.verdict);
    group_counts gc;
    AS_TRY(count_groups(rf, &gc));
    print_groups(&gc, 1);
    if (!complete && !held) {
      char cmd[2 * AS_OUTSET_PATH_MAX + 64];
      if (name[0] && access(name, R_OK) == 0)
        snprintf(cmd, sizeof cmd, "attnsweep run %s -o %s --resume", name, path);
      else
        snprintf(cmd, sizeof cmd, "attnsweep run -o %s --resume", path);
      fprintf(jout, ", \"resume\": ");
      json_str(jout, cmd);
    }
    if (held) fprintf(jout, ", \"pid\": %ld", pid);
    /* How the last segment ended: closed (its run returned), or not (killed, or running). */
    fprintf(jout, ", \"segments\": %zu, \"last_segment\": ", nseg);
    if (nseg) {
      const as_results_segment *ls = &segs[nseg - 1];
      fprintf(jout, "{\"job_id\": ");
      json_str(jout, ls->job_id);
      fprintf(jout, ", \"restart\": %d, \"ranks\": %d, \"start\": ", ls->restart, ls->ranks);
      json_str(jout, ls->start);
      fprintf(jout, ", \"end\": ");
      json_str(jout, ls->end);
      fprintf(jout, ", \"ended\": \"%s\", \"trials_done\": %llu}",
              ls->end[0] ? "closed" : (held ? "running" : "killed"),
              (unsigned long long)ls->trials_done);
    } else {
      fprintf(jout, "null");
    }
    fprintf(jout, "}\n");
    json_done = 1;
    damaged_exit = rc;
    goto cleanup;
  }
  printf("results: %s\n", path);
  printf("written by: attnsweep %s (git %s)\n", tool, git);
  printf("spec: %s (sha256 %.16s...), seed %llu\n", name[0] ? name : "(built-in)",
         sha[0] ? sha : "?", (unsigned long long)seed);
  printf("started: %s, last closed: %s\n", start[0] ? start : "?", end[0] ? end : "never");
  double pct = c.total ? 100.0 * (double)c.done / (double)c.total : 0.0;
  printf("trials: %llu / %llu done (%.1f%%)\n", (unsigned long long)c.done,
         (unsigned long long)c.total, pct);
  /* A shard file (job arrays): complete when its own trials are; the rest stay pending. */
  uint32_t sh_i = 0, sh_n = 0;
  uint64_t own = c.total;
  AS_TRY(as_shard_identify(rf, path, &sh_i, &sh_n));
  if (sh_n) {
    AS_TRY(shard_trials(rf, path, sh_i, sh_n, &own));
    printf("shard: %u of %u, %llu / %llu of its trials done (the other rows belong to other "
           "shards)\n",
           sh_i, sh_n, (unsigned long long)c.done, (unsigned long long)own);
  }
  const uint64_t n_bad = c.outcome[AS_OUT_FAILED] + c.outcome[AS_OUT_NONFINITE];
  if (n_damaged && !held) {
    printf("state: damaged: %llu row(s) fail their checksums (attnsweep run -o %s --resume sets "
           "them to pending and runs them again; attnsweep repair %s)\n",
           (unsigned long long)n_damaged, path, path);
    damaged_exit = 3;
  } else if (c.done >= own && n_bad)
    printf("state: complete, but %llu trial(s) failed or non-finite (run exits %d; rerun them: "
           "attnsweep run -o %s --resume --retry-failed)\n",
           (unsigned long long)n_bad, AS_EXIT_TRIALS_FAILED, path);
  else if (c.done >= own)
    printf("state: complete\n");
  else if (held)
    printf("state: running (pid %ld on host %s)\n", pid, host[0] ? host : "?");
  else if (name[0] && access(name, R_OK) == 0)
    printf("state: stopped, %llu trial(s) left (resume: attnsweep run %s -o %s --resume)\n",
           (unsigned long long)(own - c.done), name, path);
  else
    printf("state: stopped, %llu trial(s) left (resume: attnsweep run -o %s --resume)\n",
           (unsigned long long)(own - c.done), path);
  if (c.outcome[AS_OUT_NOT_CONVERGED])
    printf("not converged: %llu trial(s) whose Sinkhorn attention missed sinkhorn_tol at some "
           "evaluation (outcome not_converged: integrated to the end, excluded from every "
           "summary; raise sinkhorn_iters, docs/variants.md)\n",
           (unsigned long long)c.outcome[AS_OUT_NOT_CONVERGED]);
  print_sums(&vc, flags, c.total);
  print_counts("outcomes", &as_outcome_table, c.outcome);
  print_counts("verdicts", &as_verdict_table, c.verdict);
  {
    group_counts gc;
    AS_TRY(count_groups(rf, &gc));
    print_groups(&gc, 0);
  }
  uint64_t failed = c.outcome[AS_OUT_FAILED];
  AS_TRY(print_failures(rf, failed));
  printf("segments: %zu\n", nseg);
  for (size_t i = 0; i < nseg; i++) {
    if (nseg > MAX_SEGMENTS_SHOWN && i == MAX_SEGMENTS_SHOWN / 2) {
      printf("  ...\n");
      i = nseg - MAX_SEGMENTS_SHOWN / 2;
    }
    const as_results_segment *s = &segs[i];
    if (s->end[0])
      printf("  #%d job %s restart %d, %d ranks, %s -> %s, %llu done at end\n", s->segment,
             s->job_id, s->restart, s->ranks, s->start, s->end, (unsigned long long)s->trials_done);
    else
      printf("  #%d job %s restart %d, %d ranks, %s -> (%s)\n", s->segment, s->job_id, s->restart,
             s->ranks, s->start,
             i + 1 == nseg && held ? "running" : "did not close: killed or running");
  }
cleanup:
  free(segs);
  free(flags);
  as_results_close(&rf);
  if (st != AS_OK) return as_cli_report("status", st);
  return damaged_exit; /* 3: the file fails its checksums (what merge and summarize refuse) */
}

/* The JSON object of a status that could not be told: the file (null when none was given), its
 * exit code and the message (issue 49: before, a missing, non-HDF5 or truncated file printed
 * nothing on stdout). */
static void json_error(const char *path, int code, const char *message) {
  printf("{\"file\": ");
  if (path)
    json_str(stdout, path);
  else
    fputs("null", stdout);
  printf(", \"state\": \"error\", \"exit\": %d, \"error\": ", code);
  json_str(stdout, message);
  printf("}\n");
}

int as_cmd_status(int argc, char **argv) {
  int npos = 0, code = 0, asked_json = 0;
  status_args args = {0};
  /* --json (or a prefix of it that getopt takes) among the arguments: even a refusal of the
   * arguments is answered with one JSON object. */
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    asked_json |= strlen(argv[i]) >= 3 && strncmp("--json", argv[i], strlen(argv[i])) == 0;
  if (as_opts_parse("status", &as_opts_status, argc, argv, &args, 1, &npos, &code)) {
    if (asked_json && code != 0)
      json_error(NULL, code, "invalid arguments (attnsweep help status lists the options)");
    return code;
  }
  if (npos == 0) {
    code = as_cli_usage_error("status", "missing the results file");
    if (args.json) json_error(NULL, code, "missing the results file");
    return code;
  }
  if (!args.json) return status_run(argc, argv, 0, npos);
  char *buf = NULL;
  size_t len = 0;
  jout = open_memstream(&buf, &len);
  if (!jout) {
    json_error(argv[1], 3, "out of memory");
    return 3;
  }
  json_done = 0;
  as_error_clear();
  code = status_run(argc, argv, 1, npos);
  fclose(jout);
  jout = NULL;
  if (json_done) {
    fwrite(buf, 1, len, stdout);
  } else {
    char msg[AS_ERRMSG_MAX + 64];
    if (as_error_get()->status != AS_OK)
      as_error_format_user(msg, sizeof msg);
    else
      snprintf(msg, sizeof msg, "the status could not be told (exit %d)", code);
    json_error(argv[1], code ? code : 3, msg);
    if (!code) code = 3;
  }
  free(buf);
  fflush(stdout);
  return code;
}
