/* The results file on one rank: rows written out of order read back bytewise equal, unwritten
 * rows read as the fill record (pending), enum types carry their labels, bulk offsets are the
 * prefix sums of the per-trial sizes, segments and attributes are recorded, reopening for
 * reading (without MPI) and for resuming works, and bad paths give clear errors.
 *
 * With AS_RESULTS_EXAMPLE=PATH it leaves the example file of docs/results.md at PATH (9 of 10
 * trials done). With AS_RESULTS_HOLD=DIR it also plays a running sweep for the status test:
 * writes half the rows, holds the run lock, creates DIR/ready, waits for DIR/go, then finishes. */
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "as_test.h"
#include "attnsweep/iocheck.h"
#include "attnsweep/outset.h"
#include "attnsweep/par.h"
#include "attnsweep/results.h"

enum { NT = 10 };

static const char spec_text[] = "# example sweep\nseed: 7\ncases:\n  - name: identity\n";

/* A synthetic record for trial i (deterministic; padding zero). */
static void make_record(uint64_t i, as_record *r) {
  as_record_init(r, NULL);
  r->trial = i;
  r->case_name = (int32_t)(i % 2);
  r->d = 2 + (int32_t)(i % 3);
  r->n = 4 + (int32_t)i;
  r->vfamily = AS_V_IDENTITY;
  r->mfamily = AS_M_SPD;
  r->method = AS_METHOD_RK4;
  r->T = 10.0;
  r->dt = 0.05;
  r->theorem = AS_THM_IDENTITY;
  r->predicted = AS_GEOM_POLYTOPE;
  r->lambda1_re = 1.0 + 0.25 * (double)i;
  r->steps = 200 + (int64_t)i;
  r->t_final = 10.0;
  r->outcome = i % 2 ? AS_OUT_SETTLED : AS_OUT_REACHED_T;
  r->observed = AS_GEOM_POLYTOPE;
  r->verdict = i == 3 ? AS_VERDICT_VIOLATED : AS_VERDICT_CONSISTENT;
  r->n_clusters = 3 + (int32_t)(i % 4);
  r->wall_time = 0.5;
  if (i == 5) {
    r->outcome = AS_OUT_FAILED;
    r->verdict = AS_VERDICT_FAILED;
    snprintf(r->message, sizeof r->message, "synthetic failure of trial %llu",
             (unsigned long long)i);
  }
}

static uint64_t tokens_count(uint64_t i) {
  return (uint64_t)(4 + i) * (uint64_t)(2 + i % 3);
}

static void make_bulk(uint64_t i, double *buf, uint64_t count) {
  for (uint64_t j = 0; j < count; j++) buf[j] = (double)i * 1000.0 + (double)j + 0.5;
}

static as_status create_file(const char *path, int overwrite, as_results **rf) {
  static uint64_t tok[NT], vmat[NT];
  for (uint64_t i = 0; i < NT; i++) {
    tok[i] = tokens_count(i);
    uint64_t d = 2 + i % 3;
    vmat[i] = d * d;
  }
  as_results_info info;
  memset(&info, 0, sizeof info);
  info.n_trials = NT;
  info.master_seed = 7;
  info.spec_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  info.spec_text = spec_text;
  info.spec_name = "example.yaml";
  info.overwrite = overwrite;
  info.bulk_counts[AS_BULK_FINAL] = tok;
  info.bulk_counts[AS_BULK_V] = vmat;
  return as_results_create(MPI_COMM_WORLD, path, &info, rf);
}

static void write_rows(as_results *rf, const uint64_t *rows, size_t k) {
  as_record recs[NT];
  memset(recs, 0, sizeof recs);
  for (size_t j = 0; j < k && j < NT; j++) make_record(rows[j], &recs[j]);
  as_status st = as_results_write_records(rf, recs, k);
  AS_EXPECT(st == AS_OK, "write_records: %s", as_error_get()->message);
  for (size_t j = 0; j < k; j++) {
    double buf[64];
    uint64_t c = tokens_count(rows[j]);
    make_bulk(rows[j], buf, c);
    st = as_results_write_bulk(rf, AS_BULK_FINAL, rows[j], buf, c);
    AS_EXPECT(st == AS_OK, "write_bulk: %s", as_error_get()->message);
  }
}

/* Row by row: written rows equal their record, the others the fill record. */
static void check_rows(as_results *rf, const int *written) {
  as_record got[NT], want, fill;
  as_record_init(&fill, NULL);
  as_status st = as_results_read_records(rf, 0, NT, got);
  AS_EXPECT(st == AS_OK, "read_records: %s", as_error_get()->message);
  for (uint64_t i = 0; i < NT; i++) {
    if (written[i]) {
      make_record(i, &want);
      AS_EXPECT(memcmp(&got[i], &want, sizeof want) == 0, "row %llu differs from its record",
                (unsigned long long)i);
    } else {
      AS_EXPECT(memcmp(&got[i], &fill, sizeof fill) == 0 && got[i].outcome == AS_OUT_PENDING &&
                    got[i].verdict == AS_VERDICT_PENDING && isnan(got[i].lambda1_re),
                "row %llu is not the pending fill record", (unsigned long long)i);
    }
  }
}

/* Packed rows (merge's path): read from path, each decodes to its record, its key is the
 * record's trial and outcome, its stored checksum is the record's and none is flagged; written
 * with those checksums into a new file, the rows read back as their records and verify; a
 * row given a wrong checksum is flagged when read. */
static void check_raw_rows(const char *path, const char *dir, const int *written) {
  as_results *src = NULL, *dst = NULL;
  const size_t RB = as_results_row_bytes();
  unsigned char *rows = malloc(NT * RB);
  uint64_t trials[NT], run[NT];
  uint32_t crcs[NT];
  uint8_t bad[NT];
  as_record got[NT];
  size_t n = 0, m = 0;
  int verified = 0;
  AS_EXPECT(rows != NULL, "malloc");
  AS_EXPECT(as_results_open(MPI_COMM_NULL, path, AS_RESULTS_READ, &src) == AS_OK, "open: %s",
            as_error_get()->message);
  if (!src || !rows) goto done;
  AS_EXPECT(as_results_read_records(src, 0, NT, got) == AS_OK, "read_records");
  AS_EXPECT(as_results_read_rows_raw(src, src, 0, NT, rows, trials, crcs, bad, &n, &verified) ==
                    AS_OK &&
                n == NT && verified,
            "read_rows_raw: %s (%zu rows)", as_error_get()->message, n);
  for (size_t j = 0; j < n; j++) {
    as_record rec;
    uint64_t t = 0;
    int o = -1;
    as_results_row_decode(rows + j * RB, &rec);
    as_results_row_key(rows + j * RB, &t, &o);
    AS_EXPECT(memcmp(&rec, &got[j], sizeof rec) == 0, "packed row %zu decodes to its record", j);
    AS_EXPECT(trials[j] == j && o == (int)got[j].outcome && (!written[j] || t == j),
              "row %zu: key trial %llu outcome %d", j, (unsigned long long)t, o);
    AS_EXPECT(crcs[j] == as_results_row_crc(&got[j]) && !bad[j], "row %zu: checksum", j);
  }
  char path2[4300];
  snprintf(path2, sizeof path2, "%s/raw.h5", dir);
  AS_EXPECT(create_file(path2, 1, &dst) == AS_OK, "create raw.h5: %s", as_error_get()->message);
  if (dst) {
    for (size_t j = 0; j < NT; j++) run[j] = j;
    crcs[4] ^= 1u; /* row 4 gets a wrong checksum */
    AS_EXPECT(as_results_write_rows_raw(dst, rows, run, crcs, NT) == AS_OK, "write_rows_raw: %s",
              as_error_get()->message);
    AS_EXPECT(as_results_close(&dst) == AS_OK, "close raw.h5");
  }
  AS_EXPECT(as_results_open(MPI_COMM_NULL, path2, AS_RESULTS_READ, &dst) == AS_OK, "reopen");
  if (dst) {
    check_rows(dst, written);
    AS_EXPECT(as_results_read_rows_raw(dst, dst, 0, NT, rows, trials, crcs, bad, &m, &verified) ==
                      AS_OK &&
                  m == NT,
              "read raw.h5");
    for (size_t j = 0; j < m; j++)
      AS_EXPECT(bad[j] == (j == 4), "raw.h5 row %zu flagged %d", j, bad[j]);
    as_results_close(&dst);
  }
  unlink(path2);
done:
  if (src) as_results_close(&src);
  free(rows);
}

static void check_bulk(as_results *rf, const int *written) {
  uint64_t expect_off = 0;
  for (uint64_t i = 0; i < NT; i++) {
    uint64_t off = 0, c = 0;
    AS_EXPECT(as_results_bulk_extent(rf, AS_BULK_FINAL, i, &off, &c) == AS_OK, "extent");
    AS_EXPECT(off == expect_off && c == tokens_count(i), "trial %llu: offset %llu count %llu",
              (unsigned long long)i, (unsigned long long)off, (unsigned long long)c);
    expect_off += tokens_count(i);
    if (!written[i]) continue;
    double got[64], want[64];
    make_bulk(i, want, c);
    AS_EXPECT(as_results_read_bulk(rf, AS_BULK_FINAL, i, got, c) == AS_OK, "read_bulk");
    AS_EXPECT(memcmp(got, want, c * sizeof(double)) == 0, "bulk of trial %llu differs",
              (unsigned long long)i);
  }
  uint64_t off, c;
  AS_EXPECT(as_results_bulk_extent(rf, AS_BULK_ATTENTION, 0, &off, &c) == AS_OK && c == 0,
            "a kind not stored has count 0");
}

/* The enum types are named and carry the labels of enums.h; a sweep key's (vfamily) also "-" =
 * -1, "not applicable" (record.h, kind ENUM). */
static void check_enums(const char *path) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  AS_EXPECT(f >= 0, "H5Fopen %s", path);
  if (f < 0) return;
  const as_enum_table *tabs[] = {&as_outcome_table, &as_verdict_table, &as_geom_table,
                                 &as_vfamily_table};
  for (int k = 0; k < 4; k++) {
    char name[64];
    snprintf(name, sizeof name, "/types/%s", tabs[k]->type_name);
    hid_t t = H5Topen2(f, name, H5P_DEFAULT);
    AS_EXPECT(t >= 0 && H5Tget_class(t) == H5T_ENUM, "%s is a named enum", name);
    if (t < 0) continue;
    const int key = tabs[k] == &as_vfamily_table;
    AS_EXPECT(H5Tget_nmembers(t) == tabs[k]->count + key, "%s has %d members", name,
              tabs[k]->count + key);
    if (key) {
      char na[8] = "";
      int32_t m1 = -1;
      H5Tenum_nameof(t, &m1, na, sizeof na);
      AS_EXPECT(strcmp(na, "-") == 0, "%s: -1 is \"-\", got '%s'", name, na);
    }
    for (int32_t v = 0; v < tabs[k]->count; v++) {
      char label[64] = "";
      H5Tenum_nameof(t, &v, label, sizeof label);
      AS_EXPECT(strcmp(label, tabs[k]->labels[v]) == 0, "%s value %d is %s, not %s", name, (int)v,
                label, tabs[k]->labels[v]);
    }
    H5Tclose(t);
  }
  /* And the field of /trials is an enum with the same labels. */
  hid_t d = H5Dopen2(f, "trials", H5P_DEFAULT);
  hid_t t = H5Dget_type(d);
  int idx = H5Tget_member_index(t, "verdict");
  hid_t mt = idx >= 0 ? H5Tget_member_type(t, (unsigned)idx) : H5I_INVALID_HID;
  char label[64] = "";
  int32_t v = AS_VERDICT_VIOLATED;
  if (mt >= 0) H5Tenum_nameof(mt, &v, label, sizeof label);
  AS_EXPECT(strcmp(label, "violated") == 0, "trials.verdict labels: got '%s'", label);
  if (mt >= 0) H5Tclose(mt);
  H5Tclose(t);
  H5Dclose(d);
  H5Fclose(f);
}

static void touch(const char *dir, const char *name) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (f) fclose(f);
}

static int exists_in(const char *dir, const char *name) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, F_OK) == 0;
}

/* A running sweep for the status test (see the file comment). */
static int hold_mode(const char *path, const char *dir) {
  as_outset *lock = NULL;
  as_results *rf = NULL;
  if (as_outset_claim(path, AS_OUTSET_REPLACE, &lock) != AS_OK ||
      create_file(path, 1, &rf) != AS_OK) {
    fprintf(stderr, "hold: %s\n", as_error_get()->message);
    return 1;
  }
  uint64_t first[] = {0, 1, 2, 3, 4};
  write_rows(rf, first, 5);
  touch(dir, "ready");
  struct timespec tenth = {0, 100000000};
  for (int i = 0; i < 600 && !exists_in(dir, "go"); i++) nanosleep(&tenth, NULL);
  uint64_t rest[] = {5, 6, 7, 8, 9};
  write_rows(rf, rest, 5);
  as_status st = as_results_close(&rf);
  as_outset_release(&lock);
  touch(dir, "closed");
  return st == AS_OK ? 0 : 1;
}

/* The packed row against the rule of docs/results.md, field by field and written out here:
 * each field's bytes at the sum of the sizes before it, little-endian (this host's order), the
 * message up to its NUL and zeros after. Every byte of every field is set (pseudo-random, the
 * message's NUL in the middle), so a field packed from a wrong offset, with padding or with
 * the wrong length shows. Then the row decodes back to the same fields. */
static void check_pack_layout(void) {
  as_record rec, back;
  memset(&rec, 0, sizeof rec);
  uint32_t x = 12345u;
#define AS_X_FILL(kind, name, doc)                                     \
  {                                                                    \
    unsigned char *p = (unsigned char *)&rec.name;                     \
    for (size_t j = 0; j < sizeof rec.name; j++) {                     \
      x = x * 1664525u + 1013904223u;                                  \
      p[j] = (unsigned char)((x >> 24) | 1u); /* no NUL but the one */ \
    }                                                                  \
  }
  AS_RECORD_FIELDS(AS_X_FILL)
#undef AS_X_FILL
  rec.message[AS_RECORD_MSG / 2] = 0;
  const size_t rb = as_results_row_bytes();
  unsigned char *row = malloc(rb), *want = calloc(rb, 1);
  AS_EXPECT(row && want, "allocate rows");
  if (!row || !want) goto done;
  memset(row, 0xAA, rb);
  as_results_row_pack(&rec, row);
  size_t k = 0, bad = 0;
  const uint16_t one = 1;
  unsigned char le;
  memcpy(&le, &one, 1);
#define AS_X_WANT(kind, name, doc)                                                              \
  {                                                                                             \
    const size_t sz = sizeof rec.name;                                                          \
    const unsigned char *p = (const unsigned char *)&rec.name;                                  \
    if (sz == 4 || sz == 8) {                                                                   \
      for (size_t j = 0; j < sz; j++) want[k + j] = le ? p[j] : p[sz - 1 - j];                  \
    } else {                                                                                    \
      const size_t len = strnlen((const char *)p, sz);                                          \
      memcpy(want + k, p, len);                                                                 \
    }                                                                                           \
    if (memcmp(row + k, want + k, sz) != 0 && bad++ < 5)                                        \
      AS_EXPECT(0, "packed field %s (%zu bytes at row offset %zu) is not its bytes", #name, sz, \
                k);                                                                             \
    k += sz;                                                                                    \
  }
  AS_RECORD_FIELDS(AS_X_WANT)
#undef AS_X_WANT
  AS_EXPECT(k == rb && bad == 0, "packed row: %zu bytes of fields, row %zu; %zu fields differ", k,
            rb, bad);
  as_results_row_decode(row, &back);
  memset(rec.message + AS_RECORD_MSG / 2, 0, AS_RECORD_MSG - AS_RECORD_MSG / 2);
#define AS_X_BACK(kind, name, doc) \
  AS_EXPECT(memcmp(&back.name, &rec.name, sizeof rec.name) == 0, "field %s decodes back", #name);
  AS_RECORD_FIELDS(AS_X_BACK)
#undef AS_X_BACK
done:
  free(row);
  free(want);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  as_par_setup(MPI_COMM_WORLD);
  char dir[] = "/tmp/as_results_XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  const char *hold = getenv("AS_RESULTS_HOLD");
  const char *example = getenv("AS_RESULTS_EXAMPLE");
  if (hold && example) {
    int rc = hold_mode(example, hold);
    rmdir(dir);
    MPI_Finalize();
    return rc;
  }
  check_pack_layout();
  char path[4200];
  if (example)
    snprintf(path, sizeof path, "%s", example);
  else
    snprintf(path, sizeof path, "%s/results.h5", dir);

  as_results *rf = NULL;
  as_status st = create_file(path, 1, &rf);
  AS_EXPECT(st == AS_OK, "create: %s", as_error_get()->message);
  if (st != AS_OK) return as_test_finish("test_results");
  AS_EXPECT(as_results_n_trials(rf) == NT, "n_trials");

  int written[NT] = {0};
  uint64_t scattered[] = {7, 2, 5}; /* out of order: a point selection */
  write_rows(rf, scattered, 3);
  uint64_t block[] = {0, 1}; /* consecutive: a hyperslab */
  write_rows(rf, block, 2);
  written[7] = written[2] = written[5] = written[0] = written[1] = 1;
  check_rows(rf, written);
  check_bulk(rf, written);

  as_results_counts c;
  AS_EXPECT(as_results_count(rf, &c, NULL) == AS_OK, "count");
  AS_EXPECT(c.total == NT && c.done == 5 && c.outcome[AS_OUT_PENDING] == 5 &&
                c.outcome[AS_OUT_FAILED] == 1 && c.verdict[AS_VERDICT_PENDING] == 5 &&
                c.verdict[AS_VERDICT_FAILED] == 1,
            "counts: done %llu", (unsigned long long)c.done);

  /* Misuse: out-of-range row, wrong bulk size, a kind not stored. */
  as_record bad;
  make_record(NT, &bad);
  AS_EXPECT(as_results_write_records(rf, &bad, 1) == AS_ERR_ARG, "row beyond the plan");
  as_error_clear();
  double tmp[64] = {0};
  AS_EXPECT(as_results_write_bulk(rf, AS_BULK_FINAL, 1, tmp, 3) == AS_ERR_ARG, "wrong count");
  as_error_clear();
  AS_EXPECT(as_results_write_bulk(rf, AS_BULK_ATTENTION, 1, tmp, 0) == AS_ERR_ARG,
            "kind not stored");
  as_error_clear();
  AS_EXPECT(as_results_close(&rf) == AS_OK && rf == NULL, "close: %s", as_error_get()->message);

  /* Read-only, without MPI (what `attnsweep status` does). */
  st = as_results_open(MPI_COMM_NULL, path, AS_RESULTS_READ, &rf);
  AS_EXPECT(st == AS_OK, "open read-only: %s", as_error_get()->message);
  if (rf) {
    check_rows(rf, written);
    check_bulk(rf, written);
    size_t ns = 0;
    as_results_segment seg[4];
    AS_EXPECT(as_results_segments(rf, seg, 4, &ns) == AS_OK && ns == 1, "one segment: %zu", ns);
    AS_EXPECT(seg[0].segment == 0 && seg[0].trials_done == 5 && seg[0].ranks == 1 &&
                  strlen(seg[0].start) == 20 && strlen(seg[0].end) == 20,
              "segment 0: done %llu start '%s' end '%s'", (unsigned long long)seg[0].trials_done,
              seg[0].start, seg[0].end);
    char buf[512];
    uint64_t u = 0;
    AS_EXPECT(as_results_attr_u64(rf, "master_seed", &u) == AS_OK && u == 7, "master_seed");
    AS_EXPECT(as_results_attr_u64(rf, "n_trials", &u) == AS_OK && u == NT, "n_trials attr");
    AS_EXPECT(as_results_attr_string(rf, "hosts", buf, sizeof buf) == AS_OK && buf[0], "hosts");
    AS_EXPECT(as_results_attr_string(rf, "rng_algorithm", buf, sizeof buf) == AS_OK &&
                  strstr(buf, "Philox"),
              "rng: %s", buf);
    AS_EXPECT(as_results_attr_string(rf, "end_time", buf, sizeof buf) == AS_OK && strlen(buf) == 20,
              "end_time '%s'", buf);
    char *text = NULL;
    AS_EXPECT(as_results_spec_text(rf, &text) == AS_OK && text && strcmp(text, spec_text) == 0,
              "spec text round trip");
    free(text);
    AS_EXPECT(as_results_write_records(rf, &bad, 1) == AS_ERR_ARG, "read-only refuses writes");
    as_error_clear();
    as_results_close(&rf);
  }
  check_enums(path);
  check_raw_rows(path, dir, written);

  /* Resume: a second segment; finish all but the last row (the example keeps one pending). */
  st = as_results_open(MPI_COMM_WORLD, path, AS_RESULTS_WRITE, &rf);
  AS_EXPECT(st == AS_OK, "open read-write: %s", as_error_get()->message);
  if (rf) {
    uint8_t done[NT];
    AS_EXPECT(as_results_count(rf, &c, done) == AS_OK && done[7] && !done[8] && c.done == 5,
              "done mask");
    uint64_t rest[] = {3, 4, 6, 8};
    write_rows(rf, rest, 4);
    written[3] = written[4] = written[6] = written[8] = 1;
    AS_EXPECT(as_results_close(&rf) == AS_OK, "close 2: %s", as_error_get()->message);
  }
  st = as_results_open(MPI_COMM_NULL, path, AS_RESULTS_READ, &rf);
  if (rf) {
    check_rows(rf, written);
    size_t ns = 0;
    as_results_segment seg[4];
    AS_EXPECT(as_results_segments(rf, seg, 4, &ns) == AS_OK && ns == 2 && seg[1].segment == 1 &&
                  seg[1].trials_done == 9 && seg[0].trials_done == 5,
              "two segments (%zu)", ns);
    as_results_close(&rf);
  }

  /* Clear errors for bad paths. */
  as_error_clear();
  st = create_file(path, 0, &rf);
  AS_EXPECT(st == AS_ERR_IO && strstr(as_error_get()->message, "already exists"),
            "existing file without overwrite: %s", as_error_get()->message);
  as_error_clear();
  st = create_file("/nonexistent-dir/x.h5", 1, &rf);
  AS_EXPECT(st == AS_ERR_IO && strstr(as_error_get()->message, "not writable"),
            "unwritable directory: %s", as_error_get()->message);
  as_error_clear();
  char missing[4300];
  snprintf(missing, sizeof missing, "%s/missing.h5", dir);
  st = as_results_open(MPI_COMM_NULL, missing, AS_RESULTS_READ, &rf);
  AS_EXPECT(st == AS_ERR_DATA && strstr(as_error_get()->message, "no such file"),
            "missing file: %s", as_error_get()->message);
  as_error_clear();
  char text[4300];
  snprintf(text, sizeof text, "%s/text.h5", dir);
  FILE *f = fopen(text, "w");
  if (f) {
    fputs("not hdf5\n", f);
    fclose(f);
  }
  st = as_results_open(MPI_COMM_NULL, text, AS_RESULTS_READ, &rf);
  AS_EXPECT(st == AS_ERR_DATA && strstr(as_error_get()->message, "not an attnsweep results"),
            "not HDF5: %s", as_error_get()->message);
  as_error_clear();
  /* An HDF5 file that is not ours. */
  hid_t h = H5Fcreate(text, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(h);
  st = as_results_open(MPI_COMM_NULL, text, AS_RESULTS_READ, &rf);
  AS_EXPECT(st == AS_ERR_DATA && strstr(as_error_get()->message, "not an attnsweep results"),
            "foreign HDF5: %s", as_error_get()->message);
  as_error_clear();
  unlink(text);

  if (!example) unlink(path);
  rmdir(dir);
  int rc = as_test_finish("test_results");
  MPI_Finalize();
  return rc;
}
