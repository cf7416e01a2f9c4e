/* results.c: the parallel HDF5 results file (schema: docs/results.md).
 *
 * Why the layout is what it is: every dataset that trials write into is created at its final
 * size, contiguous, with its space allocated at creation (H5D_ALLOC_TIME_EARLY). After the
 * collective create and a flush, writing a row or a bulk slab touches raw data only, never
 * metadata, so any rank can write independently at any time and a reader that opens the file
 * meanwhile sees consistent metadata. Metadata changes (segments, end time) happen only in the
 * collective open and close.
 */
#include "attnsweep/results.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "attnsweep/classify.h"
#include "attnsweep/iocheck.h"
#include "attnsweep/near.h"
#include "attnsweep/sha256.h"
#include "attnsweep/theorem.h"
#include "attnsweep/versions.h"
#include "crc32.h"

#define AS_X_BULK_NAME(name, label, doc) label,
static const char *const bulk_names[] = {AS_BULK_LIST(AS_X_BULK_NAME)};
#undef AS_X_BULK_NAME

const char *as_bulk_name(as_bulk_kind kind) {
  return ((int)kind >= 0 && kind < AS_BULK_COUNT) ? bulk_names[kind] : "?";
}

/* The enum table of each enumeration kind of AS_RECORD_FIELDS that is no sweep key (the keys'
 * enumerations are kind ENUM: their etab in params.h). */
#define AS_TAB_EXPM (&as_expm_table)
#define AS_TAB_THEOREM (&as_theorem_table)
#define AS_TAB_GEOM (&as_geom_table)
#define AS_TAB_VERDICT (&as_verdict_table)
#define AS_TAB_REASON (&as_reason_table)
#define AS_TAB_OUTCOME (&as_outcome_table)

static const as_enum_table *const enum_tables[] = {&as_expm_table,    &as_theorem_table,
                                                   &as_geom_table,    &as_verdict_table,
                                                   &as_outcome_table, &as_reason_table};
enum { N_ENUMS = (int)(sizeof enum_tables / sizeof enum_tables[0]) };

/* The LABEL fields of the record, in record order: their labels come from the spec. */
#define AS_LN_LABEL(name) #name,
#define AS_LN_U64(name)
#define AS_LN_I64(name)
#define AS_LN_I32(name)
#define AS_LN_F64(name)
#define AS_LN_HASH(name)
#define AS_LN_MSG(name)
#define AS_LN_ENUM(name)
#define AS_LN_EXPM(name)
#define AS_LN_THEOREM(name)
#define AS_LN_GEOM(name)
#define AS_LN_VERDICT(name)
#define AS_LN_REASON(name)
#define AS_LN_OUTCOME(name)
#define AS_X_LABEL_NAME(kind, name, doc) AS_LN_##kind(name)
static const char *const label_fields[] = {AS_RECORD_FIELDS(AS_X_LABEL_NAME)};
#undef AS_X_LABEL_NAME
enum { N_LABELS = (int)(sizeof label_fields / sizeof label_fields[0]) };
_Static_assert(N_LABELS <= AS_RESULTS_MAX_LABELS,
               "as_results_info holds AS_RESULTS_MAX_LABELS sets");

int as_results_label_fields(const char *const **fields) {
  *fields = label_fields;
  return N_LABELS;
}

static int label_index(const char *name) {
  for (int i = 0; i < N_LABELS; i++)
    if (strcmp(label_fields[i], name) == 0) return i;
  return -1;
}

/* An enum type holding more than this many bytes of names would not fit in an HDF5 object
 * header message (64 KiB with the rest of the compound): such a LABEL field is a plain
 * int32 and its names are only in /labels/<field>. */
#define AS_LABEL_ENUM_MAX_BYTES 30000

struct as_results {
  hid_t label_mem[N_LABELS];        /* memory types of the LABEL fields (enum or int32) */
  MPI_Comm comm;                    /* duplicate of the caller's, or MPI_COMM_NULL (serial) */
  int rank, size;                   /* in comm (0, 1 when serial) */
  int writable;                     /* opened for writing */
  int no_journal;                   /* created without journals behind it (a merge's file) */
  hid_t file;                       /* the HDF5 file */
  hid_t trials;                     /* /trials */
  hid_t rec_mem;                    /* memory compound type of as_record */
  hid_t col_mem;                    /* memory compound {outcome, verdict} for counting */
  hid_t segs;                       /* /segments */
  hid_t seg_mem;                    /* memory compound type of as_results_segment */
  hid_t bulk[AS_BULK_COUNT];        /* /bulk/<name>, H5I_INVALID_HID when absent */
  uint64_t n_trials;                /* trials of the sweep */
  uint64_t n_rows;                  /* rows of /trials (n_trials unless the file is sparse) */
  uint64_t *rows;                   /* sparse file: the trial of each row, increasing; NULL:
                                       row i holds trial i */
  uint64_t *offsets[AS_BULK_COUNT]; /* n_rows + 1 prefix sums per stored kind, else NULL */
  hsize_t *coords;                  /* scratch: row coordinates of a point selection */
  size_t coords_cap;                /* entries of coords */
  hid_t crc_trials;                 /* /checksums/trials, H5I_INVALID_HID: file without them */
  hid_t crc_bulk[AS_BULK_COUNT];    /* /checksums/<bulk name>, H5I_INVALID_HID when absent */
  uint32_t *crcs;                   /* scratch: checksums of the records being written */
  size_t crcs_cap;                  /* entries of crcs */
  unsigned char *pack;              /* scratch: the records being written as packed rows */
  uint32_t *pack_crcs;              /* ... and their checksums */
  size_t pack_cap;                  /* rows of pack */
  hid_t row_type;         /* /trials' file type, the packed rows' memory type (H5I_INVALID_HID: not
                             yet asked for; one H5Dget_type per write was 0.5% of a run) */
  int packed;             /* /trials' file type is the packed row layout: 1 yes, -1 no, 0 not
                             yet asked (rows_packed) */
  int direct;             /* rows move at their place in the file (rows_direct): 1 yes, -1 no,
                             0 not yet asked */
  MPI_File direct_fh;     /* ... through the mpio driver's MPI file, */
  int direct_fd;          /* or the sec2 driver's descriptor (-1: the MPI file) */
  uint64_t direct_base;   /* ... where row 0 begins (bytes from the start of the file) */
  int64_t segment;        /* row of /segments this open began, -1 none */
  as_results_segment seg; /* its content */
};

/* Two columns of /trials read for progress counts (matched by name by HDF5). */
typedef struct col_pair {
  int32_t outcome;
  int32_t verdict;
} col_pair;

/* ---------------------------------------------------------------- small helpers */

static void iso_now(char buf[32]) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  if (strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) snprintf(buf, 32, "?");
}

/* Same status on every rank: the worst (most negative) wins. */
static as_status agree(const as_results *rf, MPI_Comm comm, as_status st) {
  (void)rf;
  if (comm == MPI_COMM_NULL) return st;
  int mine = (int)st, all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) return AS_ERR_MPI;
  if (all != AS_OK && st == AS_OK)
    return as_error_set((as_status)all, __FILE__, __LINE__, __func__,
                        "another rank failed (status %s)", as_status_name((as_status)all));
  return st;
}

/* A fixed-length string type of size bytes (>= 1). */
static hid_t str_type(size_t size, H5T_str_t pad) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0) return t;
  if (H5Tset_size(t, size ? size : 1) < 0 || H5Tset_strpad(t, pad) < 0) {
    H5Tclose(t);
    return H5I_INVALID_HID;
  }
  return t;
}

/* The enum type of tab; with na, also the member "-" = -1 (not applicable). */
static hid_t enum_type(const as_enum_table *tab, hid_t base, int na_member) {
  if (!tab) return H5I_INVALID_HID; /* an ENUM field whose key has no etab: a table bug */
  hid_t t = H5Tenum_create(base);
  if (t < 0) return t;
  int32_t na = -1;
  if (na_member && H5Tenum_insert(t, "-", &na) < 0) {
    H5Tclose(t);
    return H5I_INVALID_HID;
  }
  for (int32_t v = 0; v < tab->count; v++) {
    if (H5Tenum_insert(t, tab->labels[v], &v) < 0) {
      H5Tclose(t);
      return H5I_INVALID_HID;
    }
  }
  return t;
}

/* The type of a LABEL field from its names: an enum "-" = -1, names[i] = i, or a plain
 * int32 when the names are too long for an enum (see AS_LABEL_ENUM_MAX_BYTES). */
static hid_t label_type(const as_label_set *set, hid_t base) {
  size_t bytes = 0;
  int count = set ? set->count : 0;
  for (int i = 0; i < count; i++) bytes += strlen(set->names[i]) + 1;
  if (bytes > AS_LABEL_ENUM_MAX_BYTES) return H5Tcopy(base);
  hid_t t = H5Tenum_create(base);
  if (t < 0) return t;
  int32_t na = -1;
  herr_t e = H5Tenum_insert(t, "-", &na);
  for (int32_t v = 0; e >= 0 && v < count; v++) e = H5Tenum_insert(t, set->names[v], &v);
  if (e < 0) {
    H5Tclose(t);
    return H5I_INVALID_HID;
  }
  return t;
}

static const as_label_set *find_label_set(const as_results_info *info, const char *field) {
  for (int i = 0; info && i < info->n_labels; i++)
    if (strcmp(info->labels[i].field, field) == 0) return &info->labels[i];
  return NULL;
}

static int enum_index(const as_enum_table *tab) {
  for (int i = 0; i < N_ENUMS; i++)
    if (enum_tables[i] == tab) return i;
  return -1;
}

/* Member type of a field kind: memory (native) or file (little-endian standard) flavour.
 * enums[] holds the enum types of that flavour, indexed like enum_tables, labels[] the types
 * of the LABEL fields, indexed like label_fields. The returned id is a copy the caller
 * closes. */
#define AS_KIND_U64(fl, nm) ((fl) ? H5Tcopy(H5T_STD_U64LE) : H5Tcopy(H5T_NATIVE_UINT64))
#define AS_KIND_HASH(fl, nm) AS_KIND_U64(fl, nm)
#define AS_KIND_I64(fl, nm) ((fl) ? H5Tcopy(H5T_STD_I64LE) : H5Tcopy(H5T_NATIVE_INT64))
#define AS_KIND_I32(fl, nm) ((fl) ? H5Tcopy(H5T_STD_I32LE) : H5Tcopy(H5T_NATIVE_INT32))
#define AS_KIND_F64(fl, nm) ((fl) ? H5Tcopy(H5T_IEEE_F64LE) : H5Tcopy(H5T_NATIVE_DOUBLE))
#define AS_KIND_MSG(fl, nm) str_type(AS_RECORD_MSG, H5T_STR_NULLTERM)
#define AS_KIND_LABEL(fl, nm) H5Tcopy(labels[label_index(nm)])
#define AS_KIND_TAB(KIND) H5Tcopy(enums[enum_index(AS_TAB_##KIND)])
/* A sweep key's enumeration (record.h kind ENUM): built from its etab, "-" = -1 included. */
#define AS_KIND_ENUM(fl, nm) \
  enum_type(as_record_enum_table(nm), (fl) ? H5T_STD_I32LE : H5T_NATIVE_INT32, 1)
#define AS_KIND_EXPM(fl, nm) AS_KIND_TAB(EXPM)
#define AS_KIND_THEOREM(fl, nm) AS_KIND_TAB(THEOREM)
#define AS_KIND_GEOM(fl, nm) AS_KIND_TAB(GEOM)
#define AS_KIND_VERDICT(fl, nm) AS_KIND_TAB(VERDICT)
#define AS_KIND_REASON(fl, nm) AS_KIND_TAB(REASON)
#define AS_KIND_OUTCOME(fl, nm) AS_KIND_TAB(OUTCOME)

/* The compound type of as_record: file = 0 memory layout (offsets of the C struct),
 * file = 1 packed little-endian layout of the file. */
static as_status record_type(const hid_t enums[N_ENUMS], const hid_t labels[N_LABELS], int file,
                             hid_t *out) {
  as_status st = AS_OK;
  hid_t t = H5I_INVALID_HID, m = H5I_INVALID_HID;
  size_t size = 0;
  if (file) {
#define AS_X_SIZE(kind, name, doc) size += sizeof(((as_record *)0)->name);
    AS_RECORD_FIELDS(AS_X_SIZE)
#undef AS_X_SIZE
  } else {
    size = sizeof(as_record);
  }
  AS_H5_ID(t, H5Tcreate(H5T_COMPOUND, size));
  size_t off = 0;
#define AS_X_INSERT(kind, name, doc)                                           \
  AS_H5_ID(m, AS_KIND_##kind(file, #name));                                    \
  AS_H5_CHECK(H5Tinsert(t, #name, file ? off : offsetof(as_record, name), m)); \
  off += sizeof(((as_record *)0)->name);                                       \
  H5Tclose(m);                                                                 \
  m = H5I_INVALID_HID;
  AS_RECORD_FIELDS(AS_X_INSERT)
#undef AS_X_INSERT
  *out = t;
  t = H5I_INVALID_HID;
cleanup:
  if (m >= 0) H5Tclose(m);
  if (t >= 0) H5Tclose(t);
  return st;
}

/* Copies every field (and nothing else) so padding stays zero. */
static void record_copy_fields(as_record *dst, const as_record *src) {
  memset(dst, 0, sizeof *dst);
#define AS_X_COPY(kind, name, doc) memcpy(&dst->name, &src->name, sizeof dst->name);
  AS_RECORD_FIELDS(AS_X_COPY)
#undef AS_X_COPY
}

/* ---------------------------------------------------------------- checksums */

/* 1 on a little-endian host (the file's byte order: its bytes are the memory's). */
static int host_is_le(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* One field as the bytes its row's checksum covers, into o (size bytes): 4- and 8-byte fields
 * (numbers) as their little-endian bytes, anything else (the message) as its text up to the
 * first NUL and zeros to its size (bytes after a NUL are not data, and HDF5 need not keep
 * them). row_pack's way on a big-endian host (pack_runs): inlined, where every size is a
 * constant, the byte stores of a number merge into one store. */
static inline __attribute__((always_inline)) size_t put_field(unsigned char *o, const void *p,
                                                              size_t size) {
  if (size == 4 || size == 8) {
    uint64_t v = 0;
    if (size == 4) {
      uint32_t w;
      memcpy(&w, p, 4);
      v = w;
    } else {
      memcpy(&v, p, 8);
    }
    for (size_t i = 0; i < size; i++) o[i] = (unsigned char)(v >> (8 * i));
    return size;
  }
  const size_t len = strnlen((const char *)p, size);
  memcpy(o, p, len);
  memset(o + len, 0, size - len);
  return size;
}

/* A row's checksum is the CRC-32 of its fields' bytes (put_field) in record order, from one
 * buffer and one call: a field-per-call CRC was a fifth of `merge` (perf). */
#define AS_X_SIZE(kind, name, doc) +sizeof(((as_record *)0)->name)
enum { ROW_CRC_BYTES = 0 AS_RECORD_FIELDS(AS_X_SIZE) };
#undef AS_X_SIZE

/* The fields as runs: numbers (4 or 8 bytes) that lie back to back in the struct lie back to
 * back in the row too, so on a little-endian host (the row's byte order) a run moves with one
 * memcpy: the 146 fields make 13 runs, 13 copies a row instead of 146 stores (rows are
 * packed in the sink, in the check at close and in merge). The message is a run of its own
 * (put_field's rule: its text, then zeros). Built once, from offsetof and sizeof; a big-endian
 * host keeps n_pack_runs 0 and goes field by field. */
typedef struct pack_run {
  uint32_t mem, row, len; /* offset in the struct, offset in the row, bytes */
  int text;               /* 1: the message (neither 4 nor 8 bytes) */
} pack_run;
#define AS_X_ONE(kind, name, doc) +1
enum { N_ROW_FIELDS = 0 AS_RECORD_FIELDS(AS_X_ONE) };
#undef AS_X_ONE
static pack_run pack_runs[N_ROW_FIELDS];
static int n_pack_runs;
static pthread_once_t pack_once = PTHREAD_ONCE_INIT;

static void pack_runs_init(void) {
  if (!host_is_le()) return;
  int n = 0;
  uint32_t row = 0;
#define AS_X_RUN(kind, name, doc)                                                    \
  {                                                                                  \
    const uint32_t mem = (uint32_t)offsetof(as_record, name);                        \
    const uint32_t len = (uint32_t)sizeof(((as_record *)0)->name);                   \
    const int text = len != 4 && len != 8;                                           \
    pack_run *last = n ? &pack_runs[n - 1] : NULL;                                   \
    if (last && !text && !last->text && last->mem + last->len == mem)                \
      last->len += len;                                                              \
    else                                                                             \
      pack_runs[n++] = (pack_run){.mem = mem, .row = row, .len = len, .text = text}; \
    row += len;                                                                      \
  }
  AS_RECORD_FIELDS(AS_X_RUN)
#undef AS_X_RUN
  n_pack_runs = n;
}

/* The record as a packed row (ROW_CRC_BYTES bytes): the file's own row layout. */
static void row_pack(const as_record *rec, unsigned char *buf) {
  pthread_once(&pack_once, pack_runs_init);
  if (n_pack_runs) {
    const unsigned char *m = (const unsigned char *)rec;
    for (int i = 0; i < n_pack_runs; i++) {
      const pack_run *r = &pack_runs[i];
      if (!r->text) {
        memcpy(buf + r->row, m + r->mem, r->len);
      } else {
        const size_t len = strnlen((const char *)m + r->mem, r->len);
        memcpy(buf + r->row, m + r->mem, len);
        memset(buf + r->row + len, 0, r->len - len);
      }
    }
    return;
  }
  size_t k = 0;
#define AS_X_PUT(kind, name, doc) k += put_field(buf + k, &rec->name, sizeof rec->name);
  AS_RECORD_FIELDS(AS_X_PUT)
#undef AS_X_PUT
}

void as_results_row_pack(const as_record *rec, void *row) {
  row_pack(rec, row);
}

uint32_t as_results_row_crc(const as_record *rec) {
  unsigned char buf[ROW_CRC_BYTES];
  row_pack(rec, buf);
  return as_crc32(buf, ROW_CRC_BYTES);
}

/* The inverse of put_field: 4- and 8-byte fields from their little-endian bytes, anything else
 * (the message) copied. */
static size_t get_field(void *p, const unsigned char *o, size_t size) {
  if (size == 4 || size == 8) {
    uint64_t v = 0;
    for (size_t i = 0; i < size; i++) v |= (uint64_t)o[i] << (8 * i);
    if (size == 4) {
      const uint32_t w = (uint32_t)v;
      memcpy(p, &w, 4);
    } else {
      memcpy(p, &v, 8);
    }
    return size;
  }
  memcpy(p, o, size);
  return size;
}

size_t as_results_row_bytes(void) {
  return ROW_CRC_BYTES;
}

void as_results_row_decode(const void *row, as_record *rec) {
  const unsigned char *b = row;
  size_t k = 0;
  memset(rec, 0, sizeof *rec);
  pthread_once(&pack_once, pack_runs_init);
  if (n_pack_runs) { /* get_field's rule: numbers from their bytes, the message copied */
    unsigned char *m = (unsigned char *)rec;
    for (int i = 0; i < n_pack_runs; i++)
      memcpy(m + pack_runs[i].mem, b + pack_runs[i].row, pack_runs[i].len);
    return;
  }
#define AS_X_GET(kind, name, doc) k += get_field(&rec->name, b + k, sizeof rec->name);
  AS_RECORD_FIELDS(AS_X_GET)
#undef AS_X_GET
}

/* A packed row in the form its checksum covers: a field that is neither 4 nor 8 bytes (the
 * message) keeps its text up to the first NUL and zeros after it (put_field's rule). */
static void row_canonical(unsigned char *row) {
  size_t k = 0;
#define AS_X_CANON(kind, name, doc)                          \
  {                                                          \
    const size_t sz = sizeof(((as_record *)0)->name);        \
    if (sz != 4 && sz != 8) {                                \
      const size_t len = strnlen((const char *)row + k, sz); \
      memset(row + k + len, 0, sz - len);                    \
    }                                                        \
    k += sz;                                                 \
  }
  AS_RECORD_FIELDS(AS_X_CANON)
#undef AS_X_CANON
}

/* Offset of a field in a packed row ((size_t)-1: no such field). */
static size_t row_offset(const char *want) {
  size_t k = 0;
#define AS_X_OFF(kind, name, doc)         \
  if (strcmp(#name, want) == 0) return k; \
  k += sizeof(((as_record *)0)->name);
  AS_RECORD_FIELDS(AS_X_OFF)
#undef AS_X_OFF
  return (size_t)-1;
}

void as_results_row_key(const void *row, uint64_t *trial, int *outcome) {
  static size_t off_trial = (size_t)-1, off_outcome = (size_t)-1;
  if (off_trial == (size_t)-1) { /* (the same values from any thread: a benign race) */
    off_outcome = row_offset("outcome");
    off_trial = row_offset("trial");
  }
  const unsigned char *b = row;
  uint64_t t = 0;
  uint32_t o = 0;
  for (int i = 0; i < 8; i++) t |= (uint64_t)b[off_trial + (size_t)i] << (8 * i);
  for (int i = 0; i < 4; i++) o |= (uint32_t)b[off_outcome + (size_t)i] << (8 * i);
  *trial = t;
  *outcome = (int)(int32_t)o;
}

/* CRC-32 of n doubles as little-endian bytes, continuing from crc. */
static uint32_t crc_doubles(uint32_t crc, const double *x, uint64_t n) {
  if (host_is_le()) return as_crc32_update(crc, x, (size_t)n * sizeof *x);
  for (uint64_t i = 0; i < n; i++) {
    unsigned char b[sizeof x[i]];
    crc = as_crc32_update(crc, b, put_field(b, &x[i], sizeof x[i]));
  }
  return crc;
}

static as_status segment_type(int file, hid_t *out) {
  as_status st = AS_OK;
  hid_t t = H5I_INVALID_HID, s64 = H5I_INVALID_HID, s32 = H5I_INVALID_HID;
  hid_t i32 = file ? H5T_STD_I32LE : H5T_NATIVE_INT32;
  hid_t u64 = file ? H5T_STD_U64LE : H5T_NATIVE_UINT64;
  AS_H5_ID(s64, str_type(64, H5T_STR_NULLPAD));
  AS_H5_ID(s32, str_type(32, H5T_STR_NULLPAD));
  if (file) {
    AS_H5_ID(t, H5Tcreate(H5T_COMPOUND, 4 + 64 + 4 + 4 + 32 + 32 + 8));
    AS_H5_CHECK(H5Tinsert(t, "segment", 0, i32));
    AS_H5_CHECK(H5Tinsert(t, "job_id", 4, s64));
    AS_H5_CHECK(H5Tinsert(t, "restart", 68, i32));
    AS_H5_CHECK(H5Tinsert(t, "ranks", 72, i32));
    AS_H5_CHECK(H5Tinsert(t, "start", 76, s32));
    AS_H5_CHECK(H5Tinsert(t, "end", 108, s32));
    AS_H5_CHECK(H5Tinsert(t, "trials_done", 140, u64));
  } else {
    AS_H5_ID(t, H5Tcreate(H5T_COMPOUND, sizeof(as_results_segment)));
    AS_H5_CHECK(H5Tinsert(t, "segment", offsetof(as_results_segment, segment), i32));
    AS_H5_CHECK(H5Tinsert(t, "job_id", offsetof(as_results_segment, job_id), s64));
    AS_H5_CHECK(H5Tinsert(t, "restart", offsetof(as_results_segment, restart), i32));
    AS_H5_CHECK(H5Tinsert(t, "ranks", offsetof(as_results_segment, ranks), i32));
    AS_H5_CHECK(H5Tinsert(t, "start", offsetof(as_results_segment, start), s32));
    AS_H5_CHECK(H5Tinsert(t, "end", offsetof(as_results_segment, end), s32));
    AS_H5_CHECK(H5Tinsert(t, "trials_done", offsetof(as_results_segment, trials_done), u64));
  }
  *out = t;
  t = H5I_INVALID_HID;
cleanup:
  if (s64 >= 0) H5Tclose(s64);
  if (s32 >= 0) H5Tclose(s32);
  if (t >= 0) H5Tclose(t);
  return st;
}

/* Memory types shared by create and open (rf->label_mem set before). */
static as_status build_mem_types(as_results *rf) {
  as_status st = AS_OK;
  hid_t enums[N_ENUMS];
  for (int i = 0; i < N_ENUMS; i++) enums[i] = H5I_INVALID_HID;
  for (int i = 0; i < N_ENUMS; i++)
    AS_H5_ID(enums[i], enum_type(enum_tables[i], H5T_NATIVE_INT32, 0));
  AS_TRY(record_type(enums, rf->label_mem, 0, &rf->rec_mem));
  AS_H5_ID(rf->col_mem, H5Tcreate(H5T_COMPOUND, sizeof(col_pair)));
  AS_H5_CHECK(H5Tinsert(rf->col_mem, "outcome", offsetof(col_pair, outcome),
                        enums[enum_index(&as_outcome_table)]));
  AS_H5_CHECK(H5Tinsert(rf->col_mem, "verdict", offsetof(col_pair, verdict),
                        enums[enum_index(&as_verdict_table)]));
  AS_TRY(segment_type(0, &rf->seg_mem));
cleanup:
  for (int i = 0; i < N_ENUMS; i++)
    if (enums[i] >= 0) H5Tclose(enums[i]);
  return st;
}

static as_status attr_write_str(hid_t loc, const char *name, const char *value, size_t fixed) {
  as_status st = AS_OK;
  hid_t t = H5I_INVALID_HID, s = H5I_INVALID_HID, a = H5I_INVALID_HID;
  size_t len = strlen(value);
  size_t size = fixed ? fixed : len + 1;
  char *buf = calloc(size, 1);
  AS_CHECK_ALLOC(buf);
  memcpy(buf, value, len < size ? len : size - 1);
  AS_H5_ID(t, str_type(size, H5T_STR_NULLTERM));
  AS_H5_ID(s, H5Screate(H5S_SCALAR));
  if (H5Aexists(loc, name) > 0) {
    AS_H5_ID(a, H5Aopen(loc, name, H5P_DEFAULT));
    /* One another program rewrote in another type (a variable-length string, a number: issue
     * 49, end_time at close failed with HDF5's conversion error after the whole run) is
     * replaced by the attribute attnsweep writes. Every rank does the same (collective). */
    hid_t at = H5Aget_type(a);
    const int ours = at >= 0 && H5Tget_class(at) == H5T_STRING && H5Tis_variable_str(at) == 0;
    if (at >= 0) H5Tclose(at);
    if (!ours) {
      H5Aclose(a);
      a = H5I_INVALID_HID;
      AS_H5_CHECK(H5Adelete(loc, name));
    }
  }
  if (a < 0) AS_H5_ID(a, H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT));
  AS_H5_CHECK(H5Awrite(a, t, buf));
cleanup:
  free(buf);
  if (a >= 0) H5Aclose(a);
  if (s >= 0) H5Sclose(s);
  if (t >= 0) H5Tclose(t);
  return st;
}

static as_status attr_write_u64(hid_t loc, const char *name, uint64_t value) {
  as_status st = AS_OK;
  hid_t s = H5I_INVALID_HID, a = H5I_INVALID_HID;
  AS_H5_ID(s, H5Screate(H5S_SCALAR));
  AS_H5_ID(a, H5Acreate2(loc, name, H5T_STD_U64LE, s, H5P_DEFAULT, H5P_DEFAULT));
  AS_H5_CHECK(H5Awrite(a, H5T_NATIVE_UINT64, &value));
cleanup:
  if (a >= 0) H5Aclose(a);
  if (s >= 0) H5Sclose(s);
  return st;
}

/* A 1-D attribute of n doubles (collective: every rank passes the same values). */
static as_status attr_write_f64s(hid_t loc, const char *name, const double *v, int n) {
  as_status st = AS_OK;
  hid_t s = H5I_INVALID_HID, a = H5I_INVALID_HID;
  hsize_t dims[1] = {(hsize_t)n};
  AS_H5_ID(s, H5Screate_simple(1, dims, NULL));
  AS_H5_ID(a, H5Acreate2(loc, name, H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT));
  AS_H5_CHECK(H5Awrite(a, H5T_NATIVE_DOUBLE, v));
cleanup:
  if (a >= 0) H5Aclose(a);
  if (s >= 0) H5Sclose(s);
  return st;
}

/* Comma-separated unique host names of the ranks of comm (same string on every rank). */
static as_status gather_hosts(MPI_Comm comm, int size, char **out) {
  as_status st = AS_OK;
  enum { HN = 256 };
  char me[HN];
  char *all = NULL, *list = NULL;
  if (gethostname(me, sizeof me) != 0) snprintf(me, sizeof me, "?");
  me[HN - 1] = '\0';
  all = calloc((size_t)size, HN);
  AS_CHECK_ALLOC(all);
  if (comm == MPI_COMM_NULL)
    memcpy(all, me, HN);
  else
    AS_MPI_CHECK(MPI_Allgather(me, HN, MPI_CHAR, all, HN, MPI_CHAR, comm));
  size_t cap = (size_t)size * HN + 1, used = 0;
  list = calloc(cap, 1);
  AS_CHECK_ALLOC(list);
  for (int r = 0; r < size; r++) {
    const char *h = all + (size_t)r * HN;
    int seen = 0;
    for (int q = 0; q < r && !seen; q++) seen = strcmp(h, all + (size_t)q * HN) == 0;
    if (seen) continue;
    used += (size_t)snprintf(list + used, cap - used, "%s%s", used ? "," : "", h);
  }
  /* Attributes are stored in the object header (64 KiB): keep the list well under it. */
  if (used > 60000) snprintf(list + 59990, cap - 59990, ",...");
  *out = list;
  list = NULL;
cleanup:
  free(all);
  free(list);
  return st;
}

static hid_t make_fapl(MPI_Comm comm) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) return fapl;
  herr_t e =
      comm == MPI_COMM_NULL ? H5Pset_fapl_sec2(fapl) : H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
  /* A reader must be able to open a file that a running sweep holds open. */
  if (e >= 0) e = H5Pset_file_locking(fapl, 0, 1);
  if (e < 0) {
    H5Pclose(fapl);
    return H5I_INVALID_HID;
  }
  return fapl;
}

static as_status results_alloc(MPI_Comm comm, as_results **out) {
  as_status st = AS_OK;
  as_results *rf = calloc(1, sizeof *rf);
  AS_CHECK_ALLOC(rf);
  rf->comm = MPI_COMM_NULL;
  rf->size = 1;
  rf->file = rf->trials = rf->rec_mem = rf->col_mem = rf->segs = rf->seg_mem = H5I_INVALID_HID;
  rf->row_type = H5I_INVALID_HID;
  for (int k = 0; k < AS_BULK_COUNT; k++) rf->bulk[k] = rf->crc_bulk[k] = H5I_INVALID_HID;
  rf->crc_trials = H5I_INVALID_HID;
  rf->segment = -1;
  for (int i = 0; i < N_LABELS; i++) rf->label_mem[i] = H5I_INVALID_HID;
  if (comm != MPI_COMM_NULL) {
    AS_MPI_CHECK(MPI_Comm_dup(comm, &rf->comm));
    AS_MPI_CHECK(MPI_Comm_rank(rf->comm, &rf->rank));
    AS_MPI_CHECK(MPI_Comm_size(rf->comm, &rf->size));
  }
  *out = rf;
  rf = NULL;
cleanup:
  free(rf);
  return st;
}

/* Releases everything (no collective HDF5 work beyond H5Fclose). */
static void results_free(as_results *rf) {
  if (!rf) return;
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    if (rf->bulk[k] >= 0) H5Dclose(rf->bulk[k]);
    if (rf->crc_bulk[k] >= 0) H5Dclose(rf->crc_bulk[k]);
    free(rf->offsets[k]);
  }
  if (rf->crc_trials >= 0) H5Dclose(rf->crc_trials);
  free(rf->crcs);
  free(rf->pack);
  free(rf->pack_crcs);
  if (rf->row_type >= 0) H5Tclose(rf->row_type);
  if (rf->trials >= 0) H5Dclose(rf->trials);
  if (rf->segs >= 0) H5Dclose(rf->segs);
  if (rf->rec_mem >= 0) H5Tclose(rf->rec_mem);
  if (rf->col_mem >= 0) H5Tclose(rf->col_mem);
  if (rf->seg_mem >= 0) H5Tclose(rf->seg_mem);
  for (int i = 0; i < N_LABELS; i++)
    if (rf->label_mem[i] >= 0) H5Tclose(rf->label_mem[i]);
  if (rf->file >= 0) H5Fclose(rf->file);
  if (rf->comm != MPI_COMM_NULL) MPI_Comm_free(&rf->comm);
  free(rf->coords);
  free(rf->rows);
  free(rf);
}

/* The first row whose trial is >= trial (n_rows if none). */
static uint64_t row_lower(const as_results *rf, uint64_t trial) {
  if (!rf->rows) return trial < rf->n_rows ? trial : rf->n_rows;
  uint64_t lo = 0, hi = rf->n_rows;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (rf->rows[mid] < trial)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The row holding trial, or -1 when the file does not hold it (a sparse file). */
static int64_t row_of(const as_results *rf, uint64_t trial) {
  const uint64_t r = row_lower(rf, trial);
  if (r >= rf->n_rows) return -1;
  if (rf->rows && rf->rows[r] != trial) return -1;
  return (int64_t)r;
}

/* The trial of row r. */
static uint64_t trial_of(const as_results *rf, uint64_t r) {
  return rf->rows ? rf->rows[r] : r;
}

/* Transfer properties with a type conversion buffer of bytes (HDF5's default is 1 MB,
 * allocated and cleared on every read and write that converts: for the few records of a batch,
 * clearing it cost more than the trials in the paper's setting, and the four reads and writes
 * of /segments and the counts that open and close a run cost 4 ms of its start and close). */
static hid_t xfer_buffer(size_t bytes) {
  hid_t p = H5Pcreate(H5P_DATASET_XFER);
  if (p < 0) return p;
  if (bytes < (size_t)1 << 20 && H5Pset_buffer(p, bytes, NULL, NULL) < 0) {
    H5Pclose(p);
    return H5I_INVALID_HID;
  }
  return p;
}

/* For count records. */
static hid_t records_xfer(size_t count) {
  return xfer_buffer((count ? count : 1) * 2 * sizeof(as_record));
}

/* For count elements of dset read or written as mtype: the buffer holds count of the larger
 * of the two element types (HDF5 refuses a buffer smaller than one). */
static hid_t dataset_xfer(hid_t dset, hid_t mtype, size_t count) {
  hid_t ft = H5Dget_type(dset);
  if (ft < 0) return ft;
  size_t fb = H5Tget_size(ft), mb = H5Tget_size(mtype);
  H5Tclose(ft);
  if (fb == 0 || mb == 0) return H5I_INVALID_HID;
  return xfer_buffer((count ? count : 1) * (fb > mb ? fb : mb));
}

/* Writes one row of /segments; collective when parallel (only rank 0 selects the row). */
static as_status segment_write(as_results *rf, hsize_t row) {
  as_status st = AS_OK;
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID, dxpl = H5I_INVALID_HID;
  hsize_t one = 1;
  AS_H5_ID(fs, H5Dget_space(rf->segs));
  AS_H5_ID(ms, H5Screate_simple(1, &one, NULL));
  AS_H5_ID(dxpl, dataset_xfer(rf->segs, rf->seg_mem, 1));
  if (rf->comm != MPI_COMM_NULL) AS_H5_CHECK(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
  if (rf->rank == 0) {
    AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &row, NULL, &one, NULL));
  } else {
    AS_H5_CHECK(H5Sselect_none(fs));
    AS_H5_CHECK(H5Sselect_none(ms));
  }
  AS_H5_CHECK(H5Dwrite(rf->segs, rf->seg_mem, ms, fs, dxpl, &rf->seg));
cleanup:
  if (dxpl >= 0) H5Pclose(dxpl);
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  return st;
}

/* Appends a segment row (collective): job id and restart count from Slurm's environment on
 * rank 0, start time now. */
static as_status segment_begin(as_results *rf) {
  as_status st = AS_OK;
  hid_t fs = H5I_INVALID_HID;
  memset(&rf->seg, 0, sizeof rf->seg);
  if (rf->rank == 0) {
    const char *job = getenv("SLURM_JOB_ID");
    const char *rc = getenv("SLURM_RESTART_COUNT");
    if (job && *job)
      snprintf(rf->seg.job_id, sizeof rf->seg.job_id, "%s", job);
    else
      snprintf(rf->seg.job_id, sizeof rf->seg.job_id, "local-%ld", (long)getpid());
    rf->seg.restart = rc ? (int32_t)strtol(rc, NULL, 10) : 0;
    iso_now(rf->seg.start);
  }
  if (rf->comm != MPI_COMM_NULL)
    AS_MPI_CHECK(MPI_Bcast(&rf->seg, (int)sizeof rf->seg, MPI_BYTE, 0, rf->comm));
  rf->seg.ranks = rf->size;
  AS_H5_ID(fs, H5Dget_space(rf->segs));
  hssize_t n = H5Sget_simple_extent_npoints(fs);
  AS_H5_CHECK(n);
  rf->seg.segment = (int32_t)n;
  hsize_t ext = (hsize_t)n + 1;
  AS_H5_CHECK(H5Dset_extent(rf->segs, &ext));
  AS_TRY(segment_write(rf, (hsize_t)n));
  rf->segment = n;
cleanup:
  if (fs >= 0) H5Sclose(fs);
  return st;
}

static as_status packed_type(as_results *rf, hid_t *out);

/* 1 when /trials' file type is the packed row layout (every field at its packed offset, no other
 * bytes), so that its rows read without a conversion; asked of HDF5 once per open file. */
static int rows_packed(as_results *rf) {
  if (rf->packed == 0) {
    int ok = 0;
    hid_t ft = H5Dget_type(rf->trials);
    if (ft >= 0 && H5Tget_size(ft) == ROW_CRC_BYTES) {
      ok = 1;
#define AS_X_AT(kind, name, doc)                                               \
  {                                                                            \
    const int i = ok ? H5Tget_member_index(ft, #name) : -1;                    \
    ok = i >= 0 && H5Tget_member_offset(ft, (unsigned)i) == row_offset(#name); \
  }
      AS_RECORD_FIELDS(AS_X_AT)
#undef AS_X_AT
    }
    if (ft >= 0) H5Tclose(ft);
    rf->packed = ok ? 1 : -1;
  }
  return rf->packed > 0;
}

/* Rows without HDF5's dataset layer. /trials is contiguous and allocated at creation, so when
 * its file type is the packed row (rows_packed) row r is the ROW_CRC_BYTES bytes at
 * H5Dget_offset + r * ROW_CRC_BYTES (an offset from the start of the file, past any user block
 * h5jam put in front). Reading or writing there through the file's own handle
 * (H5Fget_vfd_handle: the mpio driver's MPI file, the sec2 driver's descriptor) is what
 * H5Dread and H5Dwrite do for a conversion that converts nothing, less their search for the
 * conversion path: HDF5 compares the 146-member compound with itself, sorting both member
 * lists by name each time (H5T_cmp), once for every 1,024 rows the sink writes, the count at
 * close reads and the journal check reads. Used only where HDF5 holds no raw data of its own:
 * the mpio driver keeps none; sec2's sieve buffer can hold rows written through HDF5, so a
 * sec2 file is read this way only when opened read-only and never written this way. Anything
 * else (external storage, a layout of another build, a dataset not allocated) goes through
 * HDF5 as before. Nothing here is collective: any rank may ask alone. tests/cli/
 * test_userblock.sh runs these paths on a file behind a user block. */
static int rows_direct(as_results *rf) {
  if (rf->direct != 0) return rf->direct > 0;
  rf->direct = -1;
  if (!rows_packed(rf)) return 0;
  /* The driver is the one make_fapl chose (asking HDF5 for the access list would duplicate
   * the communicator: a collective call, where one rank may be here alone). */
  const int mpi = rf->comm != MPI_COMM_NULL;
  hid_t dcpl = H5Dget_create_plist(rf->trials);
  haddr_t at = HADDR_UNDEF;
  void *handle = NULL;
  if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_external_count(dcpl) == 0 &&
      H5Dget_storage_size(rf->trials) == (hsize_t)rf->n_rows * ROW_CRC_BYTES)
    at = H5Dget_offset(rf->trials); /* from the start of the file, a user block included */
  if (at != HADDR_UNDEF && (mpi || !rf->writable) &&
      H5Fget_vfd_handle(rf->file, H5P_DEFAULT, &handle) >= 0 && handle) {
    rf->direct_fd = mpi ? -1 : *(int *)handle;
    if (mpi) rf->direct_fh = *(MPI_File *)handle;
    rf->direct_base = (uint64_t)at;
    rf->direct = 1;
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  H5Eclear2(H5E_DEFAULT); /* a refusal above is an answer, not an error */
  return rf->direct > 0;
}

static const char *mpi_text(int e, char buf[MPI_MAX_ERROR_STRING]) {
  int len = 0;
  if (MPI_Error_string(e, buf, &len) != MPI_SUCCESS)
    snprintf(buf, MPI_MAX_ERROR_STRING, "code %d", e);
  return buf;
}

/* n rows from row `row` on (rows_direct), into buf. */
static as_status rows_pread(as_results *rf, uint64_t row, size_t n, void *buf) {
  as_status st = AS_OK;
  unsigned char *b = buf;
  uint64_t off = rf->direct_base + row * ROW_CRC_BYTES;
  size_t left = n * ROW_CRC_BYTES;
  while (left > 0) {
    size_t got = 0;
    if (rf->direct_fd < 0) {
      const int want = left > (1u << 30) ? 1 << 30 : (int)left;
      MPI_Status ms;
      int count = 0;
      int e = MPI_File_read_at(rf->direct_fh, (MPI_Offset)off, b, want, MPI_BYTE, &ms);
      if (e == MPI_SUCCESS) e = MPI_Get_count(&ms, MPI_BYTE, &count);
      char why[MPI_MAX_ERROR_STRING];
      AS_CHECK(e == MPI_SUCCESS, AS_ERR_IO, "cannot read rows %llu..%llu of /trials: %s",
               (unsigned long long)row, (unsigned long long)(row + n), mpi_text(e, why));
      got = (size_t)count;
    } else {
      const ssize_t r = pread(rf->direct_fd, b, left, (off_t)off);
      if (r < 0 && errno == EINTR) continue;
      AS_CHECK(r >= 0, AS_ERR_IO, "cannot read rows %llu..%llu of /trials: %s",
               (unsigned long long)row, (unsigned long long)(row + n), strerror(errno));
      got = (size_t)r;
    }
    AS_CHECK(got > 0, AS_ERR_DATA,
             "rows %llu..%llu of /trials lie beyond the end of the file (a truncated file?)",
             (unsigned long long)row, (unsigned long long)(row + n));
    b += got;
    off += got;
    left -= got;
  }
cleanup:
  return st;
}

/* n packed rows from buf to rows `row` on (rows_direct, a file of the mpio driver); 0 or the
 * MPI error code. */
static int rows_pwrite(as_results *rf, uint64_t row, size_t n, const void *buf) {
  const unsigned char *b = buf;
  uint64_t off = rf->direct_base + row * ROW_CRC_BYTES;
  size_t left = n * ROW_CRC_BYTES;
  while (left > 0) {
    const int want = left > (1u << 30) ? 1 << 30 : (int)left;
    MPI_Status ms;
    int count = 0;
    int e = MPI_File_write_at(rf->direct_fh, (MPI_Offset)off, b, want, MPI_BYTE, &ms);
    if (e == MPI_SUCCESS) e = MPI_Get_count(&ms, MPI_BYTE, &count);
    if (e != MPI_SUCCESS) return e;
    if (count <= 0) return MPI_ERR_IO;
    b += count;
    off += (uint64_t)count;
    left -= (size_t)count;
  }
  return 0;
}

/* Counts one row's outcome and verdict into c; 1 when it is done. */
static int count_one(as_results_counts *c, int o, int v) {
  if (o >= 0 && o < AS_OUT_COUNT) c->outcome[o]++;
  if (v >= 0 && v < AS_VERDICT_COUNT) c->verdict[v]++;
  const int is_done = o != AS_OUT_PENDING;
  c->done += (uint64_t)is_done;
  return is_done;
}

/* Counts rows [first, first + count) into c (adds) and done flags (indexed from first; rows,
 * not trials: a sparse file's caller maps them). A file of the packed layout is read as packed
 * rows, without a conversion (HDF5's conversion of the large compound type to the two columns
 * cost 0.6 us a row: 2% of a 16,000-trial run, which counts at its close and again for its
 * summary); another is read as the two columns. */
static as_status count_range(as_results *rf, uint64_t first, uint64_t count, as_results_counts *c,
                             uint8_t *done) {
  as_status st = AS_OK;
  const int packed = rows_packed(rf), direct = rows_direct(rf);
  /* Read directly, 64 rows a time fit a buffer the heap reuses (a fresh 1 MB one is mapped and
   * faulted in page by page on every call). */
  const size_t block = direct ? 64 : packed ? 1024 : 65536;
  const size_t width = packed ? ROW_CRC_BYTES : sizeof(col_pair);
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID, dxpl = H5I_INVALID_HID, mt = rf->col_mem;
  unsigned char *buf = malloc(block * width);
  AS_CHECK_ALLOC(buf);
  size_t off_o = 0, off_v = 0;
  if (packed) {
    AS_TRY(packed_type(rf, &mt));
    off_o = row_offset("outcome");
    off_v = row_offset("verdict");
  }
  if (!direct) {
    AS_H5_ID(fs, H5Dget_space(rf->trials));
    AS_H5_ID(dxpl, dataset_xfer(rf->trials, mt, count < block ? (size_t)count : block));
  }
  for (uint64_t b = 0; b < count; b += block) {
    hsize_t start = first + b, cnt = count - b < block ? count - b : block;
    if (direct) {
      AS_TRY(rows_pread(rf, start, (size_t)cnt, buf));
    } else {
      AS_H5_ID(ms, H5Screate_simple(1, &cnt, NULL));
      AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &cnt, NULL));
      AS_H5_CHECK(H5Dread(rf->trials, mt, ms, fs, dxpl, buf));
      H5Sclose(ms);
      ms = H5I_INVALID_HID;
    }
    for (hsize_t i = 0; i < cnt; i++) {
      const unsigned char *r = buf + i * width;
      int is_done;
      if (packed) {
        int32_t o, v;
        get_field(&o, r + off_o, sizeof o);
        get_field(&v, r + off_v, sizeof v);
        is_done = count_one(c, o, v);
      } else {
        col_pair p;
        memcpy(&p, r, sizeof p);
        is_done = count_one(c, p.outcome, p.verdict);
      }
      if (done) done[b + i] = (uint8_t)is_done;
    }
  }
  c->total += count;
cleanup:
  if (dxpl >= 0) H5Pclose(dxpl);
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  free(buf);
  return st;
}

/* ---------------------------------------------------------------- create */

static as_status create_contiguous(hid_t loc, const char *name, hid_t ftype, hsize_t n,
                                   hid_t fill_type, const void *fill, hid_t *out) {
  as_status st = AS_OK;
  hid_t s = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
  AS_H5_ID(s, H5Screate_simple(1, &n, NULL));
  AS_H5_ID(dcpl, H5Pcreate(H5P_DATASET_CREATE));
  AS_H5_CHECK(H5Pset_layout(dcpl, H5D_CONTIGUOUS));
  AS_H5_CHECK(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
  if (fill) {
    AS_H5_CHECK(H5Pset_fill_value(dcpl, fill_type, fill));
    AS_H5_CHECK(H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC));
  } else {
    /* Bulk data can be large: no fill pass; a slab is valid once its row is done. */
    AS_H5_CHECK(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER));
  }
  AS_H5_ID(*out, H5Dcreate2(loc, name, ftype, s, H5P_DEFAULT, dcpl, H5P_DEFAULT));
cleanup:
  if (dcpl >= 0) H5Pclose(dcpl);
  if (s >= 0) H5Sclose(s);
  return st;
}

/* SHA-256 of a file's bytes as hex, or "unreadable: <reason>" (also for a FIFO or device,
 * which is never read: as_path_open). */
static void file_sha256(const char *path, char *out, size_t len) {
  int fd = -1;
  struct stat sb;
  if (as_path_open(path, O_RDONLY, 0, NULL, 0, &fd) != AS_OK) {
    const int err = errno;
    as_error_clear();
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
      snprintf(out, len, "unreadable: %s, not a regular file", as_file_kind(sb.st_mode));
    else
      snprintf(out, len, "unreadable: %s", strerror(err));
    return;
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    snprintf(out, len, "unreadable: %s", strerror(errno));
    close(fd);
    return;
  }
  as_sha256 c;
  as_sha256_init(&c);
  unsigned char buf[65536];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) as_sha256_update(&c, buf, got);
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    snprintf(out, len, "unreadable: read error");
    return;
  }
  uint8_t dig[AS_SHA256_BYTES];
  as_sha256_final(&c, dig);
  for (int i = 0; i < AS_SHA256_BYTES && 2 * (size_t)i + 2 < len; i++)
    snprintf(out + 2 * i, len - 2 * (size_t)i, "%02x", dig[i]);
}

as_status as_results_input_hashes(const as_results_info *info, char **out) {
  as_status st = AS_OK;
  static const char *const fields[] = {"file", "init_file"};
  size_t cap = 1, used = 0;
  for (int k = 0; k < 2; k++) {
    const as_label_set *set = find_label_set(info, fields[k]);
    for (int i = 0; set && i < set->count; i++)
      cap += strlen(set->paths ? set->paths[i] : set->names[i]) + 100;
  }
  char *buf = calloc(cap, 1);
  AS_CHECK_ALLOC(buf);
  for (int k = 0; k < 2; k++) {
    const as_label_set *set = find_label_set(info, fields[k]);
    for (int i = 0; set && i < set->count; i++) {
      /* The resolved path (the spec's label resolved against its directory). */
      const char *p = set->paths ? set->paths[i] : set->names[i];
      char hex[96];
      file_sha256(p, hex, sizeof hex);
      used += (size_t)snprintf(buf + used, cap - used, "%s  %s\n", hex, p);
    }
  }
  *out = buf;
  buf = NULL;
cleanup:
  free(buf);
  return st;
}

/* The provenance of the input files, hashed on rank 0 and broadcast (attributes are
 * collective). */
static as_status input_hashes(as_results *rf, const as_results_info *info, char **out) {
  as_status st = AS_OK;
  char *buf = NULL;
  long n = 0;
  as_status lst = AS_OK;
  if (rf->rank == 0) {
    lst = as_results_input_hashes(info, &buf);
    n = lst == AS_OK ? (long)strlen(buf) + 1 : -1;
  }
  if (rf->comm != MPI_COMM_NULL) {
    /* Every rank learns of a failure on rank 0 (nobody is left waiting in a collective). */
    AS_MPI_CHECK(MPI_Bcast(&n, 1, MPI_LONG, 0, rf->comm));
    AS_CHECK(n > 0, rf->rank == 0 ? lst : AS_ERR_NOMEM, "rank 0 could not hash the input files");
    if (rf->rank != 0) {
      buf = calloc((size_t)n, 1);
      AS_CHECK_ALLOC(buf);
    }
    AS_MPI_CHECK(MPI_Bcast(buf, (int)n, MPI_CHAR, 0, rf->comm));
  }
  AS_TRY(lst);
  *out = buf;
  buf = NULL;
cleanup:
  free(buf);
  return st;
}

static as_status write_root_attrs(as_results *rf, const as_results_info *info, const char *hosts,
                                  const char *start) {
  as_status st = AS_OK;
  char *inputs = NULL;
  as_versions v;
  as_versions_get(&v);
  hid_t f = rf->file;
  AS_TRY(attr_write_u64(f, "schema_version", AS_RESULTS_SCHEMA_VERSION));
  AS_TRY(attr_write_str(f, "tool", "attnsweep", 0));
  AS_TRY(attr_write_str(f, "tool_version", v.tool, 0));
  AS_TRY(attr_write_str(f, "git_revision", v.git, 0));
  AS_TRY(attr_write_str(f, "mpi_version", v.mpi, 0));
  AS_TRY(attr_write_str(f, "hdf5_version", v.hdf5, 0));
  AS_TRY(attr_write_str(f, "yaml_version", v.yaml, 0));
  AS_TRY(attr_write_str(f, "blas_version", v.blas, 0));
  AS_TRY(attr_write_str(f, "rng_algorithm", v.rng, 0));
  AS_TRY(attr_write_u64(f, "master_seed", info->master_seed));
  AS_TRY(attr_write_str(f, "spec_sha256", info->spec_sha256 ? info->spec_sha256 : "", 0));
  AS_TRY(attr_write_str(f, "spec_name", info->spec_name ? info->spec_name : "", 0));
  AS_TRY(attr_write_str(f, "common_keys", info->common_keys ? info->common_keys : "", 0));
  AS_TRY(attr_write_u64(f, "n_trials", info->n_trials));
  AS_TRY(attr_write_u64(f, "ranks", (uint64_t)rf->size));
  AS_TRY(attr_write_str(f, "hosts", hosts, 0));
  AS_TRY(attr_write_str(f, "start_time", start, 0));
  AS_TRY(attr_write_str(f, "end_time", "", 32));
  AS_TRY(attr_write_u64(f, "record_bytes_c", (uint64_t)sizeof(as_record)));
  if (info->input_sha256) {
    /* Carried from where it was recorded (a merge: its shards'), never hashed again. */
    AS_TRY(attr_write_str(f, "input_sha256", info->input_sha256, 0));
  } else {
    AS_TRY(input_hashes(rf, info, &inputs));
    AS_TRY(attr_write_str(f, "input_sha256", inputs, 0));
  }
cleanup:
  free(inputs);
  return st;
}

/* /labels/<field>: the names of a LABEL field as fixed-length strings (row i = value i), so
 * the file explains its labels even where the field is a plain int32. */
static as_status create_labels(as_results *rf, const as_results_info *info) {
  as_status st = AS_OK;
  hid_t g = H5I_INVALID_HID, t = H5I_INVALID_HID, sp = H5I_INVALID_HID, d = H5I_INVALID_HID;
  hid_t dcpl = H5I_INVALID_HID;
  char *buf = NULL;
  AS_H5_ID(g, H5Gcreate2(rf->file, "labels", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  AS_H5_ID(dcpl, H5Pcreate(H5P_DATASET_CREATE));
  AS_H5_CHECK(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
  for (int k = 0; k < N_LABELS; k++) {
    const as_label_set *set = find_label_set(info, label_fields[k]);
    hsize_t count = set ? (hsize_t)set->count : 0;
    size_t width = 1;
    for (hsize_t i = 0; i < count; i++) {
      size_t l = strlen(set->names[i]);
      if (l + 1 > width) width = l + 1;
    }
    AS_H5_ID(t, str_type(width, H5T_STR_NULLTERM));
    AS_H5_ID(sp, H5Screate_simple(1, &count, NULL));
    AS_H5_ID(d, H5Dcreate2(g, label_fields[k], t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    if (rf->rank == 0 && count > 0) {
      buf = calloc((size_t)count, width);
      AS_CHECK_ALLOC(buf);
      for (hsize_t i = 0; i < count; i++)
        memcpy(buf + i * width, set->names[i], strlen(set->names[i]));
      AS_H5_CHECK(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
      free(buf);
      buf = NULL;
    }
    H5Dclose(d);
    d = H5I_INVALID_HID;
    H5Sclose(sp);
    sp = H5I_INVALID_HID;
    H5Tclose(t);
    t = H5I_INVALID_HID;
  }
cleanup:
  free(buf);
  if (d >= 0) H5Dclose(d);
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (g >= 0) H5Gclose(g);
  return st;
}

/* A self-describing /trials: one attribute "description:<field>" per field (its meaning and
 * units, from AS_RECORD_FIELDS) and one "flag:<name>" per bit of `flags` (AS_FLAG_LIST),
 * its bit number. */
static as_status describe_trials(as_results *rf) {
  as_status st = AS_OK;
  /* Attribute creation is collective in parallel HDF5: every rank writes the same. */
#define AS_X_DESCRIBE(kind, name, doc) \
  AS_TRY(attr_write_str(rf->trials, "description:" #name, doc, 0));
  AS_RECORD_FIELDS(AS_X_DESCRIBE)
#undef AS_X_DESCRIBE
  char lower[64];
#define AS_X_FLAG_ATTR(name, bit, doc)                                                      \
  snprintf(lower, sizeof lower, "flag:%s", #name);                                          \
  for (char *c = lower; *c; c++) *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c); \
  AS_TRY(attr_write_u64(rf->trials, lower, (uint64_t)(bit)));
  AS_FLAG_LIST(AS_X_FLAG_ATTR)
#undef AS_X_FLAG_ATTR
  /* "near_hypotheses": each theorem the nearest-theorem analysis reads, in its precedence
   * order, with its dist_ fields, from the theorem table (theorem.h): "d1: dist_gap
   * dist_m_posdef; ...". "theorem_table": Table 1 (as_theorem_table_text). */
  int nrows = 0;
  const as_theorem_row *rows = as_theorem_rows(&nrows);
  char hyps[1024];
  size_t len = 0;
  for (int k = 0; k < nrows; k++) {
    if (!rows[k].near) continue;
    len += (size_t)snprintf(hyps + len, sizeof hyps - len, "%s%s:", len ? "; " : "",
                            as_enum_label(&as_theorem_table, (int)rows[k].id));
    for (int i = 0; i < AS_NEAR_NHYP; i++)
      if (rows[k].near >> i & 1u)
        len +=
            (size_t)snprintf(hyps + len, sizeof hyps - len, " dist_%s", as_near_hypothesis_name(i));
  }
  AS_CHECK(len < sizeof hyps, AS_ERR_INTERNAL, "near_hypotheses: %zu bytes", len);
  AS_TRY(attr_write_str(rf->trials, "near_hypotheses", hyps, 0));
  char table[4096];
  AS_CHECK(as_theorem_table_text(table, sizeof table) < sizeof table, AS_ERR_INTERNAL,
           "theorem_table longer than %zu bytes", sizeof table);
  AS_TRY(attr_write_str(rf->trials, "theorem_table", table, 0));
cleanup:
  return st;
}

static as_status create_types_and_trials(as_results *rf, const as_results_info *info) {
  as_status st = AS_OK;
  hid_t g = H5I_INVALID_HID, rec_file = H5I_INVALID_HID, seg_file = H5I_INVALID_HID;
  hid_t s = H5I_INVALID_HID, dcpl = H5I_INVALID_HID, key_enum = H5I_INVALID_HID;
  hid_t enums[N_ENUMS], labels[N_LABELS];
  for (int i = 0; i < N_ENUMS; i++) enums[i] = H5I_INVALID_HID;
  for (int i = 0; i < N_LABELS; i++) labels[i] = H5I_INVALID_HID;
  AS_H5_ID(g, H5Gcreate2(rf->file, "types", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  /* Named enum types: h5dump shows /types/outcome etc.; the compound holds copies. */
  for (int i = 0; i < N_ENUMS; i++) {
    AS_H5_ID(enums[i], enum_type(enum_tables[i], H5T_STD_I32LE, 0));
    AS_H5_CHECK(
        H5Tcommit2(g, enum_tables[i]->type_name, enums[i], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  }
  /* The enumerations of the ENUM fields (sweep keys, record.h): /types/<type name>. */
  for (int i = 0; i < AS_PARAM_COUNT; i++) {
    const as_enum_table *tab = as_record_enum_table(as_params[i].rname);
    if (!tab || strcmp(as_params[i].rkind, "ENUM") != 0) continue;
    AS_H5_ID(key_enum, enum_type(tab, H5T_STD_I32LE, 1));
    AS_H5_CHECK(H5Tcommit2(g, tab->type_name, key_enum, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Tclose(key_enum);
    key_enum = H5I_INVALID_HID;
  }
  for (int i = 0; i < N_LABELS; i++) {
    AS_H5_ID(labels[i], label_type(find_label_set(info, label_fields[i]), H5T_STD_I32LE));
    if (H5Tget_class(labels[i]) == H5T_ENUM)
      AS_H5_CHECK(H5Tcommit2(g, label_fields[i], labels[i], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  }
  AS_TRY(record_type(enums, labels, 1, &rec_file));
  AS_H5_CHECK(H5Tcommit2(g, "record", rec_file, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  AS_TRY(segment_type(1, &seg_file));
  AS_H5_CHECK(H5Tcommit2(g, "segment", seg_file, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));

  /* The fill record packed (the file's own row type): HDF5 converts no fill value then, where
   * from the struct it set up a conversion of the whole compound, member by member. */
  as_record fill;
  unsigned char fill_row[ROW_CRC_BYTES];
  as_record_init(&fill, NULL);
  row_pack(&fill, fill_row);
  AS_TRY(
      create_contiguous(rf->file, "trials", rec_file, rf->n_rows, rec_file, fill_row, &rf->trials));
  if (rf->rows) {
    /* A sparse file: the trial of each row (as_results_info.rows). */
    hid_t ti = H5I_INVALID_HID;
    st = create_contiguous(rf->file, "trial_index", H5T_STD_U64LE, rf->n_rows, H5T_NATIVE_UINT64,
                           NULL, &ti);
    if (st == AS_OK && rf->rank == 0 && rf->n_rows &&
        H5Dwrite(ti, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, rf->rows) < 0)
      st = as_error_from_h5(__FILE__, __LINE__, __func__, "H5Dwrite /trial_index");
    if (ti >= 0) H5Dclose(ti);
    AS_TRY(st);
  }
  AS_TRY(describe_trials(rf));
  AS_TRY(create_labels(rf, info));

  hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = 16;
  AS_H5_ID(s, H5Screate_simple(1, &zero, &unlimited));
  AS_H5_ID(dcpl, H5Pcreate(H5P_DATASET_CREATE));
  AS_H5_CHECK(H5Pset_chunk(dcpl, 1, &chunk));
  AS_H5_CHECK(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
  AS_H5_ID(rf->segs, H5Dcreate2(rf->file, "segments", seg_file, s, H5P_DEFAULT, dcpl, H5P_DEFAULT));
cleanup:
  for (int i = 0; i < N_ENUMS; i++)
    if (enums[i] >= 0) H5Tclose(enums[i]);
  for (int i = 0; i < N_LABELS; i++)
    if (labels[i] >= 0) H5Tclose(labels[i]);
  if (rec_file >= 0) H5Tclose(rec_file);
  if (seg_file >= 0) H5Tclose(seg_file);
  if (key_enum >= 0) H5Tclose(key_enum);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (s >= 0) H5Sclose(s);
  if (g >= 0) H5Gclose(g);
  return st;
}

/* The /spec dataset of file holding text; writer: this process writes it (rank 0). */
static as_status write_spec(hid_t file, int writer, const char *text) {
  as_status st = AS_OK;
  hid_t t = H5I_INVALID_HID, s = H5I_INVALID_HID, d = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
  size_t len = strlen(text);
  /* Fixed-length string: parallel HDF5 1.10 cannot write variable-length data. */
  AS_H5_ID(t, str_type(len ? len : 1, H5T_STR_NULLPAD));
  AS_H5_ID(s, H5Screate(H5S_SCALAR));
  AS_H5_ID(dcpl, H5Pcreate(H5P_DATASET_CREATE));
  AS_H5_CHECK(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
  AS_H5_ID(d, H5Dcreate2(file, "spec", t, s, H5P_DEFAULT, dcpl, H5P_DEFAULT));
  if (writer && len) AS_H5_CHECK(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text));
cleanup:
  if (d >= 0) H5Dclose(d);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (s >= 0) H5Sclose(s);
  if (t >= 0) H5Tclose(t);
  return st;
}

static as_status create_spec(as_results *rf, const char *text) {
  return write_spec(rf->file, rf->rank == 0, text);
}

static as_status create_bulk(as_results *rf, const as_results_info *info) {
  as_status st = AS_OK;
  hid_t g = H5I_INVALID_HID, od = H5I_INVALID_HID;
  int any = 0;
  for (int k = 0; k < AS_BULK_COUNT; k++) any |= info->bulk_counts[k] != NULL;
  if (!any) return AS_OK;
  AS_H5_ID(g, H5Gcreate2(rf->file, "bulk", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    const uint64_t *cnt = info->bulk_counts[k];
    if (!cnt) continue;
    uint64_t *off = malloc((rf->n_rows + 1) * sizeof *off);
    AS_CHECK_ALLOC(off);
    rf->offsets[k] = off;
    off[0] = 0;
    for (uint64_t i = 0; i < rf->n_rows; i++) {
      const uint64_t c = cnt[trial_of(rf, i)];
      AS_CHECK(off[i] + c >= off[i], AS_ERR_ARG, "bulk %s: sizes overflow at trial %llu",
               bulk_names[k], (unsigned long long)trial_of(rf, i));
      off[i + 1] = off[i] + c;
    }
    AS_TRY(create_contiguous(g, bulk_names[k], H5T_IEEE_F64LE, off[rf->n_rows], H5T_NATIVE_DOUBLE,
                             NULL, &rf->bulk[k]));
    if (k == AS_BULK_SNAPSHOTS && info->n_snapshot_times > 0 && info->snapshot_times)
      AS_TRY(attr_write_f64s(rf->bulk[k], "times", info->snapshot_times, info->n_snapshot_times));
    char name[64];
    snprintf(name, sizeof name, "%s_offset", bulk_names[k]);
    AS_TRY(create_contiguous(g, name, H5T_STD_U64LE, rf->n_rows + 1, H5T_NATIVE_UINT64, NULL, &od));
    if (rf->rank == 0)
      AS_H5_CHECK(H5Dwrite(od, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, off));
    H5Dclose(od);
    od = H5I_INVALID_HID;
  }
cleanup:
  if (od >= 0) H5Dclose(od);
  if (g >= 0) H5Gclose(g);
  return st;
}

/* /checksums: the CRC-32 of each row of /trials (fill: the fill row's, so a pending row is
 * checked too) and of each trial's slab of every stored bulk kind (fill 0: not written; only
 * done rows' slabs are checked). */
static as_status create_checksums(as_results *rf) {
  as_status st = AS_OK;
  hid_t g = H5I_INVALID_HID;
  AS_H5_ID(g, H5Gcreate2(rf->file, "checksums", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  as_record fill;
  as_record_init(&fill, NULL);
  const uint32_t row_fill = as_results_row_crc(&fill), zero = 0;
  AS_TRY(create_contiguous(g, "trials", H5T_STD_U32LE, rf->n_rows, H5T_NATIVE_UINT32, &row_fill,
                           &rf->crc_trials));
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    if (rf->bulk[k] < 0) continue;
    AS_TRY(create_contiguous(g, bulk_names[k], H5T_STD_U32LE, rf->n_rows, H5T_NATIVE_UINT32, &zero,
                             &rf->crc_bulk[k]));
  }
cleanup:
  if (g >= 0) H5Gclose(g);
  return st;
}

/* Bytes a new file will take on disk (an upper estimate: rows as in memory, every bulk
 * double, the offsets, the spec text and 1 MiB for metadata). */
static double estimate_bytes(const as_results_info *info) {
  const uint64_t rows = info->rows ? info->n_rows : info->n_trials;
  double b = (double)rows * (double)(sizeof(as_record) + 4 + (info->rows ? 8 : 0)) + 1048576.0;
  if (info->spec_text) b += 2.0 * (double)strlen(info->spec_text);
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    if (!info->bulk_counts[k]) continue;
    b += 12.0 * (double)(rows + 1); /* offsets and checksums */
    for (uint64_t i = 0; i < rows; i++)
      b += 8.0 * (double)info->bulk_counts[k][info->rows ? info->rows[i] : i];
  }
  return b;
}

/* One collective step of the creation: its status is agreed on every rank before the next
 * step, so a rank that failed never leaves the others inside a collective HDF5 call. */
#define CREATE_STEP(call)         \
  do {                            \
    as_status s_ = (call);        \
    s_ = agree(rf, rf->comm, s_); \
    if (s_ != AS_OK) {            \
      st = s_;                    \
      goto cleanup;               \
    }                             \
  } while (0)

/* An HDF5 call as a status (for CREATE_STEP). */
static as_status h5_status(long long rc, const char *call) {
  return rc < 0 ? as_error_from_h5(__FILE__, __LINE__, __func__, call) : AS_OK;
}

as_status as_results_create(MPI_Comm comm, const char *path, const as_results_info *info,
                            as_results **out) {
  as_status st = AS_OK;
  as_results *rf = NULL;
  hid_t fapl = H5I_INVALID_HID;
  char *hosts = NULL;
  AS_CHECK(comm != MPI_COMM_NULL && path && info && out && info->n_trials >= 1, AS_ERR_ARG,
           "as_results_create: bad arguments");
  AS_TRY(results_alloc(comm, &rf));
  rf->writable = 1;
  rf->no_journal = info->no_journal;
  rf->n_trials = info->n_trials;
  rf->n_rows = info->n_trials;
  if (info->rows) {
    /* A sparse file: the trials it holds, strictly increasing and in the sweep. */
    AS_CHECK(info->n_rows <= info->n_trials, AS_ERR_ARG, "as_results_create: %llu rows of %llu",
             (unsigned long long)info->n_rows, (unsigned long long)info->n_trials);
    for (uint64_t i = 0; i < info->n_rows; i++)
      AS_CHECK(info->rows[i] < info->n_trials && (i == 0 || info->rows[i] > info->rows[i - 1]),
               AS_ERR_ARG, "as_results_create: rows not increasing or beyond the sweep at %llu",
               (unsigned long long)i);
    rf->n_rows = info->n_rows;
    rf->rows = malloc((info->n_rows ? info->n_rows : 1) * sizeof *rf->rows);
    AS_CHECK_ALLOC(rf->rows);
    if (info->n_rows) memcpy(rf->rows, info->rows, info->n_rows * sizeof *rf->rows);
  }

  /* Clear messages for the common failures before HDF5 tries (rank 0 checks, all agree). */
  as_status pre = AS_OK;
  if (rf->rank == 0) {
    if (!info->overwrite && access(path, F_OK) == 0)
      pre = as_error_set(AS_ERR_IO, __FILE__, __LINE__, __func__,
                         "%s already exists (resume it with --resume, or remove it)", path);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
      dir[1] = '\0';
    else if (slash)
      *slash = '\0';
    else
      snprintf(dir, sizeof dir, ".");
    if (pre == AS_OK && access(dir, W_OK) != 0)
      pre = as_error_set(AS_ERR_IO, __FILE__, __LINE__, __func__,
                         "cannot create %s: directory %s is not writable (%s)", path, dir,
                         strerror(errno));
    /* The whole file is allocated at creation (rows filled, bulk extents reserved): a file
     * system without room for it is refused here, where every rank learns of it at once,
     * instead of failing inside HDF5's collective fill (where the other ranks would wait). */
    struct statvfs vfs;
    if (pre == AS_OK && statvfs(dir, &vfs) == 0) {
      const double need = estimate_bytes(info);
      const double avail = (double)vfs.f_bavail * (double)vfs.f_frsize;
      if (need > avail)
        pre = as_error_set(AS_ERR_IO, __FILE__, __LINE__, __func__,
                           "cannot create %s: it needs about %.1f MiB and %s has %.1f MiB free "
                           "(%s)",
                           path, need / 1048576.0, dir, avail / 1048576.0, strerror(ENOSPC));
    }
  }
  AS_MPI_CHECK(MPI_Bcast(&pre, 1, MPI_INT, 0, rf->comm));
  if (pre != AS_OK)
    AS_CHECK(0, pre, "cannot create %s (rank 0 found a problem: %s)", path, as_status_message(pre));

  for (int i = 0; i < N_LABELS; i++)
    AS_H5_ID(rf->label_mem[i], label_type(find_label_set(info, label_fields[i]), H5T_NATIVE_INT32));
  AS_TRY(build_mem_types(rf));
  AS_TRY(gather_hosts(rf->comm, rf->size, &hosts));
  char start[32] = "";
  if (rf->rank == 0) iso_now(start);
  AS_MPI_CHECK(MPI_Bcast(start, (int)sizeof start, MPI_CHAR, 0, rf->comm));

  AS_H5_ID(fapl, make_fapl(rf->comm));
  /* Without overwrite, never through a name that appeared since (O_EXCL: not a symlink). */
  rf->file = H5Fcreate(path, info->overwrite ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  CREATE_STEP(h5_status(rf->file, "H5Fcreate"));
  CREATE_STEP(write_root_attrs(rf, info, hosts, start));
  CREATE_STEP(create_types_and_trials(rf, info));
  CREATE_STEP(create_spec(rf, info->spec_text ? info->spec_text : ""));
  CREATE_STEP(create_bulk(rf, info));
  CREATE_STEP(create_checksums(rf));
  CREATE_STEP(segment_begin(rf));
  /* The structure is complete: make it visible before any row is written. */
  CREATE_STEP(h5_status(H5Fflush(rf->file, H5F_SCOPE_GLOBAL), "H5Fflush"));
cleanup:
  if (fapl >= 0) H5Pclose(fapl);
  free(hosts);
  if (rf && rf->comm != MPI_COMM_NULL) st = agree(rf, rf->comm, st);
  if (st == AS_OK) {
    *out = rf;
  } else if (rf) {
    rf->writable = 0;
    results_free(rf);
  }
  return st;
}

/* ---------------------------------------------------------------- open */

/* Entries of the 1-D dataset d (-1 when it is not 1-D). */
static long long vf_length(hid_t d) {
  hid_t s = H5Dget_space(d);
  long long n = -1;
  if (s >= 0 && H5Sget_simple_extent_ndims(s) == 1) n = (long long)H5Sget_simple_extent_npoints(s);
  if (s >= 0) H5Sclose(s);
  return n;
}

static as_status open_bulk(as_results *rf, const char *path) {
  as_status st = AS_OK;
  hid_t od = H5I_INVALID_HID;
  if (H5Lexists(rf->file, "bulk", H5P_DEFAULT) <= 0) return AS_OK;
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    char name[80], oname[80];
    snprintf(name, sizeof name, "bulk/%s", bulk_names[k]);
    snprintf(oname, sizeof oname, "bulk/%s_offset", bulk_names[k]);
    if (H5Lexists(rf->file, name, H5P_DEFAULT) <= 0) continue;
    AS_H5_ID(rf->bulk[k], H5Dopen2(rf->file, name, H5P_DEFAULT));
    rf->offsets[k] = malloc((rf->n_rows + 1) * sizeof(uint64_t));
    AS_CHECK_ALLOC(rf->offsets[k]);
    /* One reader, then a broadcast: thousands of ranks reading the same array is slow. */
    as_status rst = AS_OK;
    if (rf->rank == 0) {
      st = AS_OK;
      od = H5Dopen2(rf->file, oname, H5P_DEFAULT);
      /* Its length first: a longer dataset would be read past the end of the array. */
      const long long len = od >= 0 ? vf_length(od) : -1;
      if (od >= 0 && len != (long long)(rf->n_rows + 1))
        rst = as_error_set(AS_ERR_DATA, __FILE__, __LINE__, __func__,
                           "%s: /%s has %lld entries for %llu rows: the file is damaged (run "
                           "attnsweep repair %s)",
                           path, oname, len, (unsigned long long)rf->n_rows, path);
      else if (od < 0 ||
               H5Dread(od, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, rf->offsets[k]) < 0)
        rst = as_error_from_h5(__FILE__, __LINE__, __func__, oname);
      if (od >= 0) H5Dclose(od);
      od = H5I_INVALID_HID;
    }
    if (rf->comm != MPI_COMM_NULL) {
      AS_MPI_CHECK(MPI_Bcast(&rst, 1, MPI_INT, 0, rf->comm));
      AS_CHECK(rst == AS_OK, rst, "reading %s failed on rank 0", oname);
      AS_MPI_CHECK(MPI_Bcast(rf->offsets[k], (int)(rf->n_rows + 1), MPI_UINT64_T, 0, rf->comm));
    } else {
      AS_CHECK(rst == AS_OK, rst, "reading %s failed", oname);
    }
    const uint64_t *off = rf->offsets[k];
    for (uint64_t i = 0; i < rf->n_rows; i++)
      AS_CHECK(off[i + 1] >= off[i], AS_ERR_DATA,
               "/%s is damaged (offsets decrease at row %llu): run attnsweep repair", oname,
               (unsigned long long)i);
  }
cleanup:
  if (od >= 0) H5Dclose(od);
  return st;
}

/* A sparse file (/trial_index, a shard): the trial of each row, and the sweep's trial count
 * from the root attribute n_trials. Checked: increasing, inside the sweep. */
static as_status open_rows(as_results *rf, const char *path) {
  as_status st = AS_OK;
  hid_t d = H5I_INVALID_HID, s = H5I_INVALID_HID;
  if (H5Lexists(rf->file, "trial_index", H5P_DEFAULT) <= 0) return AS_OK;
  AS_H5_ID(d, H5Dopen2(rf->file, "trial_index", H5P_DEFAULT));
  AS_H5_ID(s, H5Dget_space(d));
  hssize_t n = H5Sget_simple_extent_npoints(s);
  AS_H5_CHECK(n);
  AS_CHECK((uint64_t)n == rf->n_rows, AS_ERR_DATA,
           "%s: /trial_index has %lld entries for %llu rows of /trials: damaged (attnsweep "
           "repair)",
           path, (long long)n, (unsigned long long)rf->n_rows);
  AS_TRY(as_results_attr_u64(rf, "n_trials", &rf->n_trials));
  rf->rows = malloc((rf->n_rows ? rf->n_rows : 1) * sizeof *rf->rows);
  AS_CHECK_ALLOC(rf->rows);
  if (rf->n_rows)
    AS_H5_CHECK(H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, rf->rows));
  for (uint64_t i = 0; i < rf->n_rows; i++)
    AS_CHECK(rf->rows[i] < rf->n_trials && (i == 0 || rf->rows[i] > rf->rows[i - 1]), AS_ERR_DATA,
             "%s: /trial_index is damaged at row %llu (trial %llu of a %llu-trial sweep, not "
             "increasing or beyond it): attnsweep repair %s",
             path, (unsigned long long)i, (unsigned long long)rf->rows[i],
             (unsigned long long)rf->n_trials, path);
cleanup:
  if (s >= 0) H5Sclose(s);
  if (d >= 0) H5Dclose(d);
  return st;
}

/* /checksums of a file that has them (older files have none: rf->crc_trials stays invalid and
 * nothing is checked or written). */
static as_status open_checksums(as_results *rf) {
  as_status st = AS_OK;
  if (H5Lexists(rf->file, "checksums", H5P_DEFAULT) <= 0) return AS_OK;
  if (H5Lexists(rf->file, "checksums/trials", H5P_DEFAULT) > 0)
    AS_H5_ID(rf->crc_trials, H5Dopen2(rf->file, "checksums/trials", H5P_DEFAULT));
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    char name[80];
    snprintf(name, sizeof name, "checksums/%s", bulk_names[k]);
    if (rf->bulk[k] >= 0 && H5Lexists(rf->file, name, H5P_DEFAULT) > 0)
      AS_H5_ID(rf->crc_bulk[k], H5Dopen2(rf->file, name, H5P_DEFAULT));
  }
cleanup:
  return st;
}

/* The name of rf's file (for messages; "the results file" when HDF5 cannot say). */
static const char *file_name(const as_results *rf, char *buf, size_t len) {
  if (H5Fget_name(rf->file, buf, len) <= 0) snprintf(buf, len, "the results file");
  return buf;
}

/* What an HDF5 type is, for a message: "a variable-length string", "a string", "a float"... */
static const char *type_kind(hid_t t) {
  switch (H5Tget_class(t)) {
  case H5T_STRING:
    return H5Tis_variable_str(t) > 0 ? "a variable-length string" : "a string";
  case H5T_INTEGER:
    return "an integer";
  case H5T_FLOAT:
    return "a float";
  case H5T_ENUM:
    return "an enum";
  case H5T_COMPOUND:
    return "a compound";
  case H5T_ARRAY:
    return "an array";
  case H5T_VLEN:
    return "a variable-length sequence";
  default:
    return "another type";
  }
}

/* The scalar unsigned-integer attribute name of loc (in the file called path) into value. A
 * value of another type (a string, a float: a file another program rewrote) is bad input
 * naming the file and the attribute (AS_ERR_DATA), not an HDF5 conversion failure. */
static as_status attr_read_u64(hid_t loc, const char *path, const char *name, uint64_t *value) {
  as_status st = AS_OK;
  hid_t a = H5I_INVALID_HID, t = H5I_INVALID_HID, s = H5I_INVALID_HID;
  AS_CHECK(H5Aexists(loc, name) > 0, AS_ERR_DATA, "%s has no attribute %s", path, name);
  AS_H5_ID(a, H5Aopen(loc, name, H5P_DEFAULT));
  AS_H5_ID(t, H5Aget_type(a));
  AS_H5_ID(s, H5Aget_space(a));
  AS_CHECK(H5Tget_class(t) == H5T_INTEGER && H5Sget_simple_extent_npoints(s) == 1, AS_ERR_DATA,
           "%s: attribute %s is %s%s, not one unsigned integer (the file was changed by another "
           "program?)",
           path, name, type_kind(t), H5Sget_simple_extent_npoints(s) == 1 ? "" : " array");
  AS_H5_CHECK(H5Aread(a, H5T_NATIVE_UINT64, value));
cleanup:
  if (s >= 0) H5Sclose(s);
  if (t >= 0) H5Tclose(t);
  if (a >= 0) H5Aclose(a);
  return st;
}

/* The HDF5 signature at offset 0 or a power of two >= 512 (a user block of any size: h5jam
 * pads it to a power of two, and HDF5 itself looks at every one of them up to the end of the
 * file; issue 49: a 2 MiB block was missed when the search stopped at 1 MiB). Checked by hand:
 * H5Fis_hdf5 would take a file lock and H5Fis_accessible is HDF5 1.12. The file is opened by
 * as_path_open, so a FIFO or device put at the name cannot block the probe. */
static int has_hdf5_signature(const char *path) {
  static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  int fd = -1, found = 0;
  if (as_path_open(path, O_RDONLY, 0, NULL, 0, &fd) != AS_OK) {
    as_error_clear(); /* the caller says what the file is not */
    return 0;
  }
  struct stat sb;
  const uint64_t size = fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
  for (uint64_t off = 0; !found && off + 8 <= size; off = off ? 2 * off : 512) {
    unsigned char b[8];
    if (pread(fd, b, 8, (off_t)off) != 8) break;
    found = memcmp(b, sig, 8) == 0;
  }
  close(fd);
  return found;
}

static as_status check_layout(as_results *rf, const char *path) {
  as_status st = AS_OK;
  hid_t ft = H5I_INVALID_HID;
  AS_H5_ID(ft, H5Dget_type(rf->trials));
  AS_CHECK(H5Tget_class(ft) == H5T_COMPOUND, AS_ERR_DATA,
           "%s: /trials is not a compound dataset; not an attnsweep results file", path);
#define AS_X_HAS(kind, name, doc)                                                              \
  AS_CHECK(H5Tget_member_index(ft, #name) >= 0, AS_ERR_MISMATCH,                               \
           "%s: /trials has no field '%s' (written by an older attnsweep; this one needs it)", \
           path, #name);
  AS_RECORD_FIELDS(AS_X_HAS)
#undef AS_X_HAS
cleanup:
  if (ft >= 0) H5Tclose(ft);
  return st;
}

/* The memory types of the LABEL fields of an existing file: the native flavour of the file's
 * own member types (the labels were the spec's when the file was made). */
static as_status open_label_types(as_results *rf, const char *path) {
  as_status st = AS_OK;
  hid_t ft = H5I_INVALID_HID, mt = H5I_INVALID_HID;
  AS_H5_ID(ft, H5Dget_type(rf->trials));
  for (int i = 0; i < N_LABELS; i++) {
    int idx = H5Tget_member_index(ft, label_fields[i]);
    AS_CHECK(idx >= 0, AS_ERR_MISMATCH, "%s: /trials has no field '%s'", path, label_fields[i]);
    AS_H5_ID(mt, H5Tget_member_type(ft, (unsigned)idx));
    H5T_class_t c = H5Tget_class(mt);
    AS_CHECK(c == H5T_ENUM || c == H5T_INTEGER, AS_ERR_MISMATCH,
             "%s: /trials field '%s' is neither an enum nor an integer", path, label_fields[i]);
    AS_H5_ID(rf->label_mem[i],
             c == H5T_ENUM ? H5Tget_native_type(mt, H5T_DIR_DEFAULT) : H5Tcopy(H5T_NATIVE_INT32));
    H5Tclose(mt);
    mt = H5I_INVALID_HID;
  }
cleanup:
  if (mt >= 0) H5Tclose(mt);
  if (ft >= 0) H5Tclose(ft);
  return st;
}

/* A file opened for writing: every dataset a writer changes (/trials, /segments, every
 * /checksums and /bulk dataset) must be stored without a filter. Parallel HDF5 1.10 cannot write a
 * filtered dataset independently, as every rank writes its rows, so a file someone compressed
 * (h5repack -f GZIP) failed at the first row, blaming a full disk, after its first rows had been
 * written without their checksums (issue 49). Refused here, before anything is written:
 * AS_ERR_UNSUPPORTED naming the file, the dataset, the filter and the remedy. */
static as_status check_unfiltered(const as_results *rf, const char *path) {
  as_status st = AS_OK;
  hid_t dcpl = H5I_INVALID_HID;
  hid_t sets[3 + 2 * AS_BULK_COUNT];
  int n = 0;
  sets[n++] = rf->trials;
  sets[n++] = rf->segs;
  sets[n++] = rf->crc_trials;
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    sets[n++] = rf->bulk[k];
    sets[n++] = rf->crc_bulk[k];
  }
  for (int i = 0; i < n; i++) {
    if (sets[i] < 0) continue;
    AS_H5_ID(dcpl, H5Dget_create_plist(sets[i]));
    const int nf = H5Pget_nfilters(dcpl);
    AS_H5_CHECK(nf);
    if (nf > 0) {
      char dset[256] = "?", filter[64] = "?";
      unsigned flags = 0, cd[8];
      size_t ncd = 8;
      if (H5Iget_name(sets[i], dset, sizeof dset) <= 0) snprintf(dset, sizeof dset, "?");
      if (H5Pget_filter2(dcpl, 0, &flags, &ncd, cd, sizeof filter, filter, NULL) < 0)
        snprintf(filter, sizeof filter, "?");
      H5Eclear2(H5E_DEFAULT);
      AS_CHECK(0, AS_ERR_UNSUPPORTED,
               "%s: %s is stored with a filter (%s, e.g. compressed by h5repack): parallel HDF5 "
               "cannot write a filtered dataset from each rank independently, so nothing can be "
               "added to this file (nothing was written). Store it plainly again: `h5repack -f "
               "NONE %s PLAIN.h5` and move PLAIN.h5 to %s",
               path, dset, filter, path, path);
    }
    H5Pclose(dcpl);
    dcpl = H5I_INVALID_HID;
  }
cleanup:
  if (dcpl >= 0) H5Pclose(dcpl);
  return st;
}

as_status as_results_open(MPI_Comm comm, const char *path, as_results_mode mode, as_results **out) {
  as_status st = AS_OK;
  as_results *rf = NULL;
  hid_t fapl = H5I_INVALID_HID, s = H5I_INVALID_HID;
  AS_CHECK(path && out && (mode == AS_RESULTS_READ || mode == AS_RESULTS_WRITE), AS_ERR_ARG,
           "as_results_open: bad arguments");
  as_h5_quiet(); /* failures are reported through AS_H5_CHECK, with the stack, not by HDF5 */
  AS_TRY(results_alloc(comm, &rf));
  rf->writable = mode == AS_RESULTS_WRITE;
  AS_CHECK(access(path, F_OK) == 0, AS_ERR_DATA, "%s: no such file", path);
  AS_TRY(as_path_check(path, NULL, 0)); /* a FIFO would block HDF5's open (issue 49) */
  AS_CHECK(access(path, R_OK) == 0, AS_ERR_IO, "%s: not readable: %s", path, strerror(errno));
  AS_CHECK(has_hdf5_signature(path), AS_ERR_DATA,
           "%s is not an attnsweep results file (not an HDF5 file)", path);
  AS_H5_ID(fapl, make_fapl(rf->comm));
  rf->file = H5Fopen(path, rf->writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl);
  if (rf->file < 0) { /* the signature is there: a damaged file, named, with the way out */
    st = as_error_from_h5_open(__FILE__, __LINE__, __func__, path);
    goto cleanup;
  }
  AS_CHECK(H5Aexists(rf->file, "schema_version") > 0 &&
               H5Lexists(rf->file, "trials", H5P_DEFAULT) > 0,
           AS_ERR_DATA, "%s is not an attnsweep results file (no schema_version or /trials)", path);
  uint64_t version = 0;
  AS_TRY(attr_read_u64(rf->file, path, "schema_version", &version));
  AS_CHECK(version == AS_RESULTS_SCHEMA_VERSION, AS_ERR_MISMATCH,
           "%s: results schema version %llu; this attnsweep reads version %d", path,
           (unsigned long long)version, AS_RESULTS_SCHEMA_VERSION);
  AS_H5_ID(rf->trials, H5Dopen2(rf->file, "trials", H5P_DEFAULT));
  AS_TRY(check_layout(rf, path));
  AS_TRY(open_label_types(rf, path));
  AS_TRY(build_mem_types(rf));
  AS_H5_ID(s, H5Dget_space(rf->trials));
  hssize_t n = H5Sget_simple_extent_npoints(s);
  AS_H5_CHECK(n);
  rf->n_trials = rf->n_rows = (uint64_t)n;
  AS_TRY(open_rows(rf, path));
  AS_CHECK(H5Lexists(rf->file, "segments", H5P_DEFAULT) > 0, AS_ERR_DATA,
           "%s has no /segments: not a results file attnsweep can use (the file was changed by "
           "another program?)",
           path);
  AS_H5_ID(rf->segs, H5Dopen2(rf->file, "segments", H5P_DEFAULT));
  AS_TRY(open_bulk(rf, path));
  AS_TRY(open_checksums(rf));
  if (rf->writable) {
    AS_TRY(check_unfiltered(rf, path));
    AS_TRY(segment_begin(rf));
    AS_H5_CHECK(H5Fflush(rf->file, H5F_SCOPE_GLOBAL));
  }
cleanup:
  if (s >= 0) H5Sclose(s);
  if (fapl >= 0) H5Pclose(fapl);
  if (rf && rf->comm != MPI_COMM_NULL) st = agree(rf, rf->comm, st);
  if (st == AS_OK) {
    *out = rf;
  } else if (rf) {
    rf->writable = 0;
    results_free(rf);
  }
  return st;
}

/* ---------------------------------------------------------------- close */

as_status as_results_close(as_results **rfp) {
  return as_results_close_counted(rfp, NULL);
}

as_status as_results_close_counted(as_results **rfp, as_results_counts *counts) {
  if (counts) memset(counts, 0, sizeof *counts);
  if (!rfp || !*rfp) return AS_OK;
  as_results *rf = *rfp;
  as_status st = AS_OK;
  if (rf->writable && rf->segment >= 0) {
    /* Every rank's independent writes must be in the file before rows are counted. */
    AS_H5_CHECK(H5Fflush(rf->file, H5F_SCOPE_GLOBAL));
    as_results_counts c, all;
    memset(&c, 0, sizeof c);
    uint64_t lo = rf->n_rows * (uint64_t)rf->rank / (uint64_t)rf->size;
    uint64_t hi = rf->n_rows * (uint64_t)(rf->rank + 1) / (uint64_t)rf->size;
    if (rf->comm != MPI_COMM_NULL) AS_MPI_CHECK(MPI_Barrier(rf->comm));
    as_status cst = count_range(rf, lo, hi - lo, &c, NULL);
    AS_TRY(agree(rf, rf->comm, cst));
    /* The whole count (a struct of uint64_t) summed over the ranks. */
    enum { NC = sizeof c / sizeof(uint64_t) };
    _Static_assert(sizeof c == NC * sizeof(uint64_t), "as_results_counts holds uint64_t only");
    if (rf->comm != MPI_COMM_NULL)
      AS_MPI_CHECK(MPI_Allreduce(&c, &all, NC, MPI_UINT64_T, MPI_SUM, rf->comm));
    else
      all = c;
    char end[32] = "";
    if (rf->rank == 0) iso_now(end);
    if (rf->comm != MPI_COMM_NULL)
      AS_MPI_CHECK(MPI_Bcast(end, (int)sizeof end, MPI_CHAR, 0, rf->comm));
    memcpy(rf->seg.end, end, sizeof rf->seg.end);
    rf->seg.trials_done = all.done;
    AS_TRY(segment_write(rf, (hsize_t)rf->segment));
    AS_TRY(attr_write_str(rf->file, "end_time", end, 32));
    if (counts) *counts = all;
  }
cleanup:
  if (rf->comm != MPI_COMM_NULL) st = agree(rf, rf->comm, st);
  if (st != AS_OK && counts) memset(counts, 0, sizeof *counts);
  results_free(rf);
  *rfp = NULL;
  return st;
}

/* ---------------------------------------------------------------- rows and slabs */

uint64_t as_results_n_trials(const as_results *rf) {
  return rf ? rf->n_trials : 0;
}

/* A failed write of raw data during the run: the message names the file and the trial (the
 * HDF5 stack, or MPI-IO's reason when why is given, follows). The usual cause is a full disk
 * (MPI-IO prints the system's reason). */
static as_status write_failure(as_results *rf, const char *what, uint64_t trial, const char *why) {
  char name[1024] = "the results file";
  if (H5Fget_name(rf->file, name, sizeof name) < 0) snprintf(name, sizeof name, "the results file");
  char stack[AS_ERRMSG_MAX];
  if (why) { /* a direct write (rows_pwrite): MPI-IO's reason */
    snprintf(stack, sizeof stack, "MPI_File_write_at: %s", why);
  } else {
    as_error_from_h5(__FILE__, __LINE__, __func__, "H5Dwrite");
    snprintf(stack, sizeof stack, "%s", as_error_get()->message);
    as_error_clear(); /* replaced by the message below, which keeps the stack */
  }
  return as_error_set(AS_ERR_HDF5, __FILE__, __LINE__, __func__,
                      "cannot write %s of trial %llu to %s (a full disk or a failing file "
                      "system?); %s: %.600s",
                      what, (unsigned long long)trial, name,
                      rf->no_journal ? "the file is incomplete and is removed; its inputs are "
                                       "untouched"
                                     : "the journals keep every record written so far",
                      stack);
}

/* The file space of dataset d (one entry per row) with rows rf->coords[0..count) selected: one
 * stretch when consecutive, else the points in the order given (matching the memory buffer).
 * H5I_INVALID_HID on failure. */
static hid_t select_rows(const as_results *rf, hid_t d, int consecutive, size_t count) {
  hid_t fs = H5Dget_space(d);
  hsize_t start = rf->coords[0], n = count;
  if (fs >= 0 && (consecutive ? H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &n, NULL)
                              : H5Sselect_elements(fs, H5S_SELECT_SET, count, rf->coords)) < 0) {
    H5Sclose(fs);
    fs = H5I_INVALID_HID;
  }
  return fs;
}

/* Rows at the given trials (trials[i], or recs[i].trial when trials is NULL) from buf in
 * memory type mtype, and their checksums (crcs[i], or computed from recs[i] when crcs is
 * NULL). */
static as_status rows_write(as_results *rf, hid_t mtype, const void *buf, const as_record *recs,
                            const uint64_t *trials, const uint32_t *crcs, size_t count) {
  as_status st = AS_OK;
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID, dxpl = H5I_INVALID_HID;
  AS_CHECK(rf->writable, AS_ERR_ARG, "as_results_write_records: file opened read-only");
  if (count == 0) return AS_OK;
  if (rf->coords_cap < count) {
    hsize_t *c = realloc(rf->coords, count * sizeof *c);
    AS_CHECK_ALLOC(c);
    rf->coords = c;
    rf->coords_cap = count;
  }
  int consecutive = 1;
  for (size_t i = 0; i < count; i++) {
    const uint64_t trial = trials ? trials[i] : recs[i].trial;
    AS_CHECK(trial < rf->n_trials, AS_ERR_ARG,
             "record %zu has trial index %llu, beyond the %llu trials of the sweep", i,
             (unsigned long long)trial, (unsigned long long)rf->n_trials);
    const int64_t row = row_of(rf, trial);
    AS_CHECK(row >= 0, AS_ERR_ARG,
             "trial %llu is not one of the rows of this file (a shard file holds only its own "
             "trials)",
             (unsigned long long)trial);
    rf->coords[i] = (hsize_t)row;
    if (i && rf->coords[i] != rf->coords[i - 1] + 1) consecutive = 0;
  }
  const uint64_t first = trials ? trials[0] : recs[0].trial;
  hsize_t n = count;
  AS_H5_ID(ms, H5Screate_simple(1, &n, NULL));
  if (mtype == rf->row_type && rows_direct(rf) && rf->direct_fd < 0) {
    /* Packed rows into a file of the mpio driver: each stretch of consecutive rows at its
     * place (rows_direct). */
    for (size_t i = 0, j; i < count; i = j) {
      for (j = i + 1; j < count && rf->coords[j] == rf->coords[j - 1] + 1;) j++;
      const int e =
          rows_pwrite(rf, rf->coords[i], j - i, (const unsigned char *)buf + i * ROW_CRC_BYTES);
      if (e) {
        char why[MPI_MAX_ERROR_STRING];
        st = write_failure(rf, "rows of /trials", trials ? trials[i] : recs[i].trial,
                           mpi_text(e, why));
        goto cleanup;
      }
    }
  } else {
    AS_H5_ID(fs, select_rows(rf, rf->trials, consecutive, count));
    AS_H5_ID(dxpl, records_xfer(count));
    if (H5Dwrite(rf->trials, mtype, ms, fs, dxpl, buf) < 0) {
      st = write_failure(rf, "rows of /trials", first, NULL);
      goto cleanup;
    }
  }
  if (rf->crc_trials >= 0) {
    /* The rows' checksums, at the same selection (same shape of file space). */
    if (rf->crcs_cap < count) {
      uint32_t *c = realloc(rf->crcs, count * sizeof *c);
      AS_CHECK_ALLOC(c);
      rf->crcs = c;
      rf->crcs_cap = count;
    }
    for (size_t i = 0; i < count; i++) rf->crcs[i] = crcs ? crcs[i] : as_results_row_crc(&recs[i]);
    if (fs >= 0) H5Sclose(fs);
    fs = H5I_INVALID_HID;
    AS_H5_ID(fs, select_rows(rf, rf->crc_trials, consecutive, count));
    if (H5Dwrite(rf->crc_trials, H5T_NATIVE_UINT32, ms, fs, H5P_DEFAULT, rf->crcs) < 0) {
      st = write_failure(rf, "checksums of /trials", first, NULL);
      goto cleanup;
    }
  }
cleanup:
  if (dxpl >= 0) H5Pclose(dxpl);
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  return st;
}

/* /trials' file type, asked of HDF5 once per open file: the memory type of packed rows. */
static as_status packed_type(as_results *rf, hid_t *out) {
  as_status st = AS_OK;
  if (rf->row_type < 0) AS_H5_ID(rf->row_type, H5Dget_type(rf->trials));
  AS_CHECK(H5Tget_size(rf->row_type) == ROW_CRC_BYTES, AS_ERR_INTERNAL,
           "packed rows of %zu bytes, the file's of %zu", (size_t)ROW_CRC_BYTES,
           (size_t)H5Tget_size(rf->row_type));
  *out = rf->row_type;
cleanup:
  return st;
}

/* The records are packed here (the bytes their checksums cover, in the file's row type) and
 * written without an HDF5 conversion: finding the conversion path of the large compound type on
 * every write was 4.5% of a paper-setting run (strcmp and H5T_cmp under H5Dwrite). */
as_status as_results_write_records(as_results *rf, const as_record *recs, size_t count) {
  as_status st = AS_OK;
  hid_t ft = H5I_INVALID_HID;
  AS_CHECK(rf && (recs || count == 0), AS_ERR_ARG, "as_results_write_records: NULL argument");
  if (count == 0) return AS_OK;
  if (rf->pack_cap < count) {
    unsigned char *p = realloc(rf->pack, count * ROW_CRC_BYTES);
    AS_CHECK_ALLOC(p);
    rf->pack = p;
    uint32_t *c = realloc(rf->pack_crcs, count * sizeof *c);
    AS_CHECK_ALLOC(c);
    rf->pack_crcs = c;
    rf->pack_cap = count;
  }
  for (size_t i = 0; i < count; i++) {
    unsigned char *row = rf->pack + i * ROW_CRC_BYTES;
    row_pack(&recs[i], row);
    rf->pack_crcs[i] = as_crc32(row, ROW_CRC_BYTES);
  }
  AS_TRY(packed_type(rf, &ft));
  AS_TRY(rows_write(rf, ft, rf->pack, recs, NULL, rf->pack_crcs, count));
cleanup:
  return st;
}

as_status as_results_write_rows_raw(as_results *rf, const void *rows, const uint64_t *trials,
                                    const uint32_t *crcs, size_t count) {
  as_status st = AS_OK;
  hid_t ft = H5I_INVALID_HID;
  AS_CHECK(rf && ((rows && trials && crcs) || count == 0), AS_ERR_ARG,
           "as_results_write_rows_raw: NULL argument");
  if (count == 0) return AS_OK;
  AS_TRY(packed_type(rf, &ft));
  AS_TRY(rows_write(rf, ft, rows, NULL, trials, crcs, count));
cleanup:
  return st;
}

/* Rows [first, first + count) of /trials (rows, not trials) into out, padding zeroed. */
static as_status read_rows(as_results *rf, uint64_t first, size_t count, as_record *out) {
  as_status st = AS_OK;
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID, dxpl = H5I_INVALID_HID;
  if (count == 0) return AS_OK;
  memset(out, 0, count * sizeof *out);
  AS_H5_ID(fs, H5Dget_space(rf->trials));
  hsize_t start = first, n = count;
  AS_H5_ID(ms, H5Screate_simple(1, &n, NULL));
  AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &n, NULL));
  AS_H5_ID(dxpl, records_xfer(count));
  AS_H5_CHECK(H5Dread(rf->trials, rf->rec_mem, ms, fs, dxpl, out));
  /* HDF5 may leave bytes in the struct's padding: rebuild each record field by field. */
  for (size_t i = 0; i < count; i++) {
    as_record tmp;
    record_copy_fields(&tmp, &out[i]);
    memcpy(&out[i], &tmp, sizeof tmp);
  }
cleanup:
  if (dxpl >= 0) H5Pclose(dxpl);
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  return st;
}

as_status as_results_read_records(as_results *rf, uint64_t first, size_t count, as_record *out) {
  as_status st = AS_OK;
  AS_CHECK(rf && (out || count == 0), AS_ERR_ARG, "as_results_read_records: NULL argument");
  AS_CHECK(first <= rf->n_trials && count <= rf->n_trials - first, AS_ERR_ARG,
           "rows %llu..%llu are beyond the %llu rows of /trials", (unsigned long long)first,
           (unsigned long long)(first + count), (unsigned long long)rf->n_trials);
  if (count == 0) return AS_OK;
  if (!rf->rows) return read_rows(rf, first, count, out);
  /* A sparse file: the rows held for these trials are consecutive rows; read them, spread
   * them to their trials (from the back: a row only moves up), fill the others. */
  const uint64_t lo = row_lower(rf, first), hi = row_lower(rf, first + count);
  const size_t m = (size_t)(hi - lo);
  AS_TRY(read_rows(rf, lo, m, out));
  for (size_t j = m; j-- > 0;) {
    const size_t p = (size_t)(rf->rows[lo + j] - first);
    if (p != j) memcpy(&out[p], &out[j], sizeof *out);
  }
  as_record fill, z;
  as_record_init(&fill, NULL);
  memset(&z, 0, sizeof z);
  record_copy_fields(&z, &fill);
  size_t j = 0;
  for (size_t p = 0; p < count; p++) {
    if (j < m && rf->rows[lo + j] - first == p)
      j++;
    else
      memcpy(&out[p], &z, sizeof z);
  }
cleanup:
  return st;
}

as_status as_results_read_held(as_results *rf, uint64_t first, size_t count, as_record *out,
                               uint64_t *trials, size_t *n) {
  as_status st = AS_OK;
  AS_CHECK(rf && n && (count == 0 || (out && trials)), AS_ERR_ARG,
           "as_results_read_held: NULL argument");
  AS_CHECK(first <= rf->n_trials && count <= rf->n_trials - first, AS_ERR_ARG,
           "trials %llu..%llu are beyond the %llu trials of the sweep", (unsigned long long)first,
           (unsigned long long)(first + count), (unsigned long long)rf->n_trials);
  const uint64_t lo = row_lower(rf, first), hi = row_lower(rf, first + count);
  *n = (size_t)(hi - lo);
  AS_TRY(read_rows(rf, lo, *n, out));
  for (size_t j = 0; j < *n; j++) trials[j] = trial_of(rf, lo + j);
cleanup:
  return st;
}

static as_status read_crcs(hid_t d, uint64_t first, size_t n, uint32_t *out);

as_status as_results_read_rows_raw(as_results *src, as_results *layout, uint64_t first,
                                   size_t count, void *rows, uint64_t *trials, uint32_t *crcs,
                                   uint8_t *bad, size_t *n, int *verified) {
  as_status st = AS_OK;
  hid_t ft = H5I_INVALID_HID, fs = H5I_INVALID_HID, ms = H5I_INVALID_HID, dxpl = H5I_INVALID_HID;
  AS_CHECK(src && layout && n && verified && (count == 0 || (rows && trials && crcs && bad)),
           AS_ERR_ARG, "as_results_read_rows_raw: NULL argument");
  AS_CHECK(first <= src->n_trials && count <= src->n_trials - first, AS_ERR_ARG,
           "trials %llu..%llu are beyond the %llu trials of the sweep", (unsigned long long)first,
           (unsigned long long)(first + count), (unsigned long long)src->n_trials);
  const uint64_t lo = row_lower(src, first), hi = row_lower(src, first + count);
  *n = (size_t)(hi - lo);
  *verified = src->crc_trials >= 0;
  if (*n == 0) goto cleanup;
  /* layout's file type as the memory type: no conversion where src's type is the same. */
  AS_TRY(packed_type(layout, &ft));
  if (rows_packed(layout) && rows_direct(src)) { /* src's bytes are layout's rows */
    AS_TRY(rows_pread(src, lo, *n, rows));
  } else {
    AS_H5_ID(fs, H5Dget_space(src->trials));
    hsize_t start = lo, cnt = *n;
    AS_H5_ID(ms, H5Screate_simple(1, &cnt, NULL));
    AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &cnt, NULL));
    AS_H5_ID(dxpl, records_xfer(*n));
    AS_H5_CHECK(H5Dread(src->trials, ft, ms, fs, dxpl, rows));
  }
  if (*verified) AS_TRY(read_crcs(src->crc_trials, lo, *n, crcs));
  for (size_t j = 0; j < *n; j++) {
    unsigned char *row = (unsigned char *)rows + j * ROW_CRC_BYTES;
    row_canonical(row);
    const uint32_t c = as_crc32(row, ROW_CRC_BYTES);
    uint64_t t = 0;
    int o = 0;
    as_results_row_key(row, &t, &o);
    trials[j] = trial_of(src, lo + j);
    bad[j] = (uint8_t)((*verified && c != crcs[j]) || (o != AS_OUT_PENDING && t != trials[j]));
    if (!*verified) crcs[j] = c;
  }
cleanup:
  if (dxpl >= 0) H5Pclose(dxpl);
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  return st;
}

uint64_t as_results_span(const as_results *rf, uint64_t first, uint64_t max_rows) {
  if (!rf || first >= rf->n_trials) return rf ? rf->n_trials : 0;
  if (!rf->rows) return max_rows < rf->n_trials - first ? first + max_rows : rf->n_trials;
  const uint64_t lo = row_lower(rf, first);
  return max_rows < rf->n_rows - lo ? rf->rows[lo + max_rows] : rf->n_trials;
}

int as_results_stores_bulk(const as_results *rf) {
  for (int k = 0; rf && k < AS_BULK_COUNT; k++)
    if (rf->bulk[k] >= 0) return 1;
  return 0;
}

uint64_t as_results_n_rows(const as_results *rf) {
  return rf ? rf->n_rows : 0;
}

int as_results_is_sparse(const as_results *rf) {
  return rf && rf->rows != NULL;
}

as_status as_results_bulk_extent(const as_results *rf, as_bulk_kind kind, uint64_t trial,
                                 uint64_t *offset, uint64_t *count) {
  as_status st = AS_OK;
  AS_CHECK(rf && offset && count && (int)kind >= 0 && kind < AS_BULK_COUNT, AS_ERR_ARG,
           "as_results_bulk_extent: bad arguments");
  AS_CHECK(trial < rf->n_trials, AS_ERR_ARG, "trial %llu beyond the %llu rows",
           (unsigned long long)trial, (unsigned long long)rf->n_trials);
  *offset = 0;
  *count = 0;
  const int64_t row = row_of(rf, trial);
  if (rf->offsets[kind] && row >= 0) {
    *offset = rf->offsets[kind][row];
    *count = rf->offsets[kind][row + 1] - rf->offsets[kind][row];
  }
cleanup:
  return st;
}

/* Read (write = 0) or write one trial's slab of a bulk dataset. */
static as_status bulk_io(as_results *rf, as_bulk_kind kind, uint64_t trial, double *data,
                         uint64_t count, int write) {
  as_status st = AS_OK;
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
  uint64_t off = 0, want = 0;
  AS_TRY(as_results_bulk_extent(rf, kind, trial, &off, &want));
  AS_CHECK(rf->bulk[kind] >= 0, AS_ERR_ARG, "bulk data %s is not stored in this file",
           bulk_names[kind]);
  const int64_t row = row_of(rf, trial);
  AS_CHECK(row >= 0 || count == 0, AS_ERR_ARG,
           "trial %llu is not one of the rows of this file (a shard file holds only its own "
           "trials)",
           (unsigned long long)trial);
  AS_CHECK(count == want, AS_ERR_ARG, "bulk %s of trial %llu has %llu values, not %llu",
           bulk_names[kind], (unsigned long long)trial, (unsigned long long)want,
           (unsigned long long)count);
  AS_CHECK(!write || rf->writable, AS_ERR_ARG, "as_results_write_bulk: file opened read-only");
  if (count == 0) return AS_OK;
  AS_CHECK(data, AS_ERR_ARG, "bulk %s: NULL data", bulk_names[kind]);
  hsize_t start = off, n = count;
  AS_H5_ID(fs, H5Dget_space(rf->bulk[kind]));
  AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &n, NULL));
  AS_H5_ID(ms, H5Screate_simple(1, &n, NULL));
  if (write) {
    if (H5Dwrite(rf->bulk[kind], H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, data) < 0) {
      st = write_failure(rf, bulk_names[kind], trial, NULL);
      goto cleanup;
    }
    if (rf->crc_bulk[kind] >= 0) {
      /* Its checksum after the slab: a checksum in the file always describes written data. */
      const uint32_t crc = crc_doubles(0, data, count);
      hsize_t crow = (hsize_t)row, one = 1;
      H5Sclose(fs);
      fs = H5I_INVALID_HID;
      H5Sclose(ms);
      ms = H5I_INVALID_HID;
      AS_H5_ID(fs, H5Dget_space(rf->crc_bulk[kind]));
      AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &crow, NULL, &one, NULL));
      AS_H5_ID(ms, H5Screate_simple(1, &one, NULL));
      if (H5Dwrite(rf->crc_bulk[kind], H5T_NATIVE_UINT32, ms, fs, H5P_DEFAULT, &crc) < 0) {
        st = write_failure(rf, "a bulk checksum", trial, NULL);
        goto cleanup;
      }
    }
  } else {
    AS_H5_CHECK(H5Dread(rf->bulk[kind], H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, data));
  }
cleanup:
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  return st;
}

as_status as_results_write_bulk(as_results *rf, as_bulk_kind kind, uint64_t trial,
                                const double *data, uint64_t count) {
  /* bulk_io only reads from data when writing. */
  double *d;
  memcpy(&d, &data, sizeof d);
  return bulk_io(rf, kind, trial, d, count, 1);
}

as_status as_results_read_bulk(as_results *rf, as_bulk_kind kind, uint64_t trial, double *out,
                               uint64_t count) {
  return bulk_io(rf, kind, trial, out, count, 0);
}

/* ---------------------------------------------------------------- verification */

/* Rows read per block of a verification, and doubles of bulk data read at once. */
#define VERIFY_BLOCK 4096
#define VERIFY_CHUNK ((uint64_t)1 << 20)

/* A done row whose trial stores bulk data (run_cb writes none for failed and interrupted
 * trials). */
static int row_has_bulk(const as_record *r) {
  return r->outcome != AS_OUT_PENDING && r->outcome != AS_OUT_INTERRUPTED &&
         r->outcome != AS_OUT_FAILED;
}

/* The slabs of kind k of rows [b, e) with want[i - b] set, streamed in pieces of at most
 * VERIFY_CHUNK doubles (the slabs of consecutive rows are contiguous), against sums[i - b];
 * a mismatch sets bad[i - b]. A checksum 0 is the fill: the slab was never written by
 * as_results_write_bulk (a row written without bulk data), so it is not checked. *buf
 * (capacity *cap doubles) is the reader's scratch. */
static as_status verify_bulk_kind(as_results *rf, int k, uint64_t b, uint64_t e,
                                  const uint8_t *want, const uint32_t *sums, uint8_t *bad,
                                  uint64_t *slabs, double **buf, uint64_t *cap) {
  as_status st = AS_OK;
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
  const uint64_t *off = rf->offsets[k];
  while (b < e && !want[0]) { /* only the span from the first to the last row wanted */
    b++;
    want++;
    sums++;
    bad++;
  }
  while (e > b && !want[e - 1 - b]) e--;
  if (b >= e || off[e] == off[b]) return AS_OK;
  const uint64_t piece = off[e] - off[b] < VERIFY_CHUNK ? off[e] - off[b] : VERIFY_CHUNK;
  if (*cap < piece) {
    double *p = realloc(*buf, piece * sizeof *p);
    AS_CHECK_ALLOC(p);
    *buf = p;
    *cap = piece;
  }
  AS_H5_ID(fs, H5Dget_space(rf->bulk[k]));
  uint64_t t = b;
  uint32_t crc = 0;
  for (uint64_t pos = off[b]; pos < off[e];) {
    hsize_t start = pos, n = off[e] - pos < piece ? off[e] - pos : piece;
    const uint64_t end = pos + n;
    AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &n, NULL));
    AS_H5_ID(ms, H5Screate_simple(1, &n, NULL));
    AS_H5_CHECK(H5Dread(rf->bulk[k], H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, *buf));
    H5Sclose(ms);
    ms = H5I_INVALID_HID;
    while (t < e) {
      const uint64_t s0 = off[t] > pos ? off[t] : pos, s1 = off[t + 1] < end ? off[t + 1] : end;
      if (want[t - b] && s1 > s0) crc = crc_doubles(crc, *buf + (s0 - pos), s1 - s0);
      if (off[t + 1] > end) break; /* continues in the next piece */
      if (want[t - b] && off[t + 1] > off[t] && sums[t - b] != 0) {
        (*slabs)++;
        if (crc != sums[t - b]) bad[t - b] = 1;
      }
      crc = 0;
      t++;
    }
    pos = end;
  }
cleanup:
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  return st;
}

/* n checksums of dataset d from row first into out. */
static as_status read_crcs(hid_t d, uint64_t first, size_t n, uint32_t *out) {
  as_status st = AS_OK;
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
  hsize_t start = first, cnt = n;
  AS_H5_ID(fs, H5Dget_space(d));
  AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &cnt, NULL));
  AS_H5_ID(ms, H5Screate_simple(1, &cnt, NULL));
  AS_H5_CHECK(H5Dread(d, H5T_NATIVE_UINT32, ms, fs, H5P_DEFAULT, out));
cleanup:
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  return st;
}

as_status as_results_verify(as_results *rf, uint64_t first, uint64_t count, uint8_t *flags,
                            as_results_verify_counts *vc) {
  as_status st = AS_OK;
  as_record *recs = NULL;
  uint32_t *sums = NULL;
  uint8_t *want = NULL, *bad = NULL;
  double *buf = NULL;
  uint64_t cap = 0;
  AS_CHECK(rf && vc, AS_ERR_ARG, "as_results_verify: NULL argument");
  AS_CHECK(first <= rf->n_trials && count <= rf->n_trials - first, AS_ERR_ARG,
           "rows %llu..%llu are beyond the %llu rows of /trials", (unsigned long long)first,
           (unsigned long long)(first + count), (unsigned long long)rf->n_trials);
  memset(vc, 0, sizeof *vc);
  if (flags) memset(flags, 0, (size_t)count);
  if (rf->crc_trials < 0 || count == 0) goto cleanup;
  vc->verified = 1;
  /* The rows held for these trials (all of them, unless the file is sparse). */
  const uint64_t lo = row_lower(rf, first), hi = row_lower(rf, first + count);
  if (hi == lo) goto cleanup;
  const size_t block = hi - lo < VERIFY_BLOCK ? (size_t)(hi - lo) : VERIFY_BLOCK;
  recs = malloc(block * sizeof *recs);
  sums = malloc(block * sizeof *sums);
  want = malloc(block);
  bad = malloc(block);
  AS_CHECK_ALLOC(recs && sums && want && bad ? recs : NULL);
  for (uint64_t b = lo; b < hi; b += block) {
    const size_t n = hi - b < block ? (size_t)(hi - b) : block;
    AS_TRY(read_rows(rf, b, n, recs));
    AS_TRY(read_crcs(rf->crc_trials, b, n, sums));
    int any = 0;
    for (size_t i = 0; i < n; i++) {
      const as_record *r = &recs[i];
      const uint64_t trial = trial_of(rf, b + i);
      const int row_bad =
          as_results_row_crc(r) != sums[i] || (r->outcome != AS_OUT_PENDING && r->trial != trial);
      if (flags) flags[trial - first] = row_bad ? AS_VERIFY_ROW : 0;
      vc->rows_bad += (uint64_t)row_bad;
      want[i] = (uint8_t)(!row_bad && row_has_bulk(r));
      any |= want[i];
    }
    vc->rows += n;
    if (!any) continue;
    memset(bad, 0, n);
    for (int k = 0; k < AS_BULK_COUNT; k++) {
      if (rf->bulk[k] < 0 || rf->crc_bulk[k] < 0) continue;
      AS_TRY(read_crcs(rf->crc_bulk[k], b, n, sums));
      AS_TRY(verify_bulk_kind(rf, k, b, b + n, want, sums, bad, &vc->slabs, &buf, &cap));
    }
    for (size_t i = 0; i < n; i++) {
      if (!bad[i]) continue;
      vc->bulk_bad++;
      if (flags) flags[trial_of(rf, b + i) - first] = AS_VERIFY_BULK;
    }
  }
cleanup:
  free(recs);
  free(sums);
  free(want);
  free(bad);
  free(buf);
  return st;
}

/* ---------------------------------------------------------------- verification by path
 *
 * The checksum gate of the commands that hand a file to a script (issue 49). A checksum covers
 * a row's bytes as stored, so it is checked here without this build's layout: the rows are read
 * in the file's own type (no conversion), the two fields the rules need (trial, outcome) are
 * found by name. A file this build's reader refuses for another reason (an older schema, a
 * missing /segments, an attribute rewritten as a string, a user block) is still verified. */

/* A file being verified by path. */
typedef struct vf_file {
  const char *path;
  hid_t file, trials, crcs, ftype;        /* the file, /trials, /checksums/trials, its row type */
  size_t row_bytes;                       /* H5Tget_size(ftype) */
  long trial_at, outcome_at;              /* byte offsets of the fields in a row, -1: absent */
  size_t trial_size, outcome_size;        /* their sizes (bytes) */
  long long pending, interrupted, failed; /* outcome values (LLONG_MIN: not in the enum) */
  uint64_t n_rows;                        /* rows of /trials */
  uint64_t *row_trial;                    /* sparse file: /trial_index, else NULL (row = trial) */
  hid_t bulk[AS_BULK_COUNT], bulk_crc[AS_BULK_COUNT]; /* stored kinds with checksums */
  uint64_t *off[AS_BULK_COUNT];                       /* their n_rows + 1 offsets */
} vf_file;

/* Little-endian integer of size bytes at p (sign-extended when sign). */
static long long le_int(const unsigned char *p, size_t size, int sign) {
  uint64_t v = 0;
  for (size_t i = 0; i < size && i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  if (sign && size < 8 && size > 0 && (v >> (8 * size - 1)) & 1) v |= ~(uint64_t)0 << (8 * size);
  return (long long)v;
}

/* Field name of ftype: its offset and size when it is an integer or enum, else -1. */
static long vf_field(hid_t ftype, const char *name, size_t *size) {
  const int i = H5Tget_member_index(ftype, name);
  if (i < 0) return -1;
  hid_t mt = H5Tget_member_type(ftype, (unsigned)i);
  const H5T_class_t c = mt >= 0 ? H5Tget_class(mt) : H5T_NO_CLASS;
  const H5T_order_t o = mt >= 0 ? H5Tget_order(mt) : H5T_ORDER_ERROR;
  *size = mt >= 0 ? H5Tget_size(mt) : 0;
  if (mt >= 0) H5Tclose(mt);
  if ((c != H5T_INTEGER && c != H5T_ENUM) || o != H5T_ORDER_LE || *size == 0 || *size > 8)
    return -1;
  return (long)H5Tget_member_offset(ftype, (unsigned)i);
}

/* The value of label in the enum member `outcome` of ftype, LLONG_MIN when there is none. */
static long long vf_enum_value(hid_t ftype, const char *label) {
  long long v = LLONG_MIN;
  const int i = H5Tget_member_index(ftype, "outcome");
  hid_t mt = i >= 0 ? H5Tget_member_type(ftype, (unsigned)i) : H5I_INVALID_HID;
  if (mt >= 0 && H5Tget_class(mt) == H5T_ENUM) {
    long long x = 0;
    hid_t nt = H5Tget_native_type(mt, H5T_DIR_DEFAULT);
    unsigned char buf[8] = {0};
    if (nt >= 0 && H5Tget_size(nt) <= sizeof buf && H5Tenum_valueof(nt, label, buf) >= 0) {
      if (H5Tget_size(nt) == 1) x = *(int8_t *)buf;
      if (H5Tget_size(nt) == 2) x = *(int16_t *)buf;
      if (H5Tget_size(nt) == 4) x = *(int32_t *)buf;
      if (H5Tget_size(nt) == 8) x = *(int64_t *)buf;
      v = x;
    }
    if (nt >= 0) H5Tclose(nt);
  }
  if (mt >= 0) H5Tclose(mt);
  H5Eclear2(H5E_DEFAULT); /* a label that is not there is an answer */
  return v;
}

static void vf_close(vf_file *f) {
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    if (f->bulk[k] >= 0) H5Dclose(f->bulk[k]);
    if (f->bulk_crc[k] >= 0) H5Dclose(f->bulk_crc[k]);
    free(f->off[k]);
  }
  free(f->row_trial);
  if (f->ftype >= 0) H5Tclose(f->ftype);
  if (f->crcs >= 0) H5Dclose(f->crcs);
  if (f->trials >= 0) H5Dclose(f->trials);
  if (f->file >= 0) H5Fclose(f->file);
}

/* The n uint64 values of the 1-D dataset name into *out (allocated); AS_ERR_DATA when it has
 * another length or is not integer. */
static as_status vf_read_u64s(vf_file *f, const char *name, uint64_t n, uint64_t **out) {
  as_status st = AS_OK;
  hid_t d = H5I_INVALID_HID, t = H5I_INVALID_HID;
  AS_H5_ID(d, H5Dopen2(f->file, name, H5P_DEFAULT));
  AS_H5_ID(t, H5Dget_type(d));
  AS_CHECK(H5Tget_class(t) == H5T_INTEGER && vf_length(d) == (long long)n, AS_ERR_DATA,
           "%s: /%s is damaged (not %llu integers): run attnsweep repair %s", f->path, name,
           (unsigned long long)n, f->path);
  *out = malloc((n ? n : 1) * sizeof **out);
  AS_CHECK_ALLOC(*out);
  if (n) AS_H5_CHECK(H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out));
cleanup:
  if (t >= 0) H5Tclose(t);
  if (d >= 0) H5Dclose(d);
  return st;
}

/* Opens what verification reads; f->crcs stays invalid for a file without checksums. */
static as_status vf_open(vf_file *f, const char *path) {
  as_status st = AS_OK;
  hid_t fapl = H5I_INVALID_HID;
  memset(f, 0, sizeof *f);
  f->path = path;
  f->file = f->trials = f->crcs = f->ftype = H5I_INVALID_HID;
  for (int k = 0; k < AS_BULK_COUNT; k++) f->bulk[k] = f->bulk_crc[k] = H5I_INVALID_HID;
  AS_CHECK(access(path, F_OK) == 0, AS_ERR_DATA, "%s: no such file", path);
  AS_TRY(as_path_check(path, NULL, 0)); /* a FIFO would block the open (issue 49) */
  AS_CHECK(access(path, R_OK) == 0, AS_ERR_IO, "%s: not readable: %s", path, strerror(errno));
  AS_CHECK(has_hdf5_signature(path), AS_ERR_DATA,
           "%s is not an attnsweep results file (not an HDF5 file)", path);
  AS_H5_ID(fapl, make_fapl(MPI_COMM_NULL));
  f->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
  if (f->file < 0) {
    st = as_error_from_h5_open(__FILE__, __LINE__, __func__, path);
    goto cleanup;
  }
  H5O_info_t oi;
  AS_CHECK(H5Lexists(f->file, "trials", H5P_DEFAULT) > 0 &&
               H5Oget_info_by_name(f->file, "trials", &oi, H5P_DEFAULT) >= 0 &&
               oi.type == H5O_TYPE_DATASET,
           AS_ERR_DATA, "%s: no /trials dataset: not an attnsweep results file", path);
  AS_H5_ID(f->trials, H5Dopen2(f->file, "trials", H5P_DEFAULT));
  AS_H5_ID(f->ftype, H5Dget_type(f->trials));
  const long long n = vf_length(f->trials);
  AS_CHECK(H5Tget_class(f->ftype) == H5T_COMPOUND && n >= 0, AS_ERR_DATA,
           "%s: /trials is not a 1-D compound dataset: not an attnsweep results file", path);
  f->n_rows = (uint64_t)n;
  f->row_bytes = H5Tget_size(f->ftype);
  if (H5Lexists(f->file, "checksums", H5P_DEFAULT) <= 0 ||
      H5Lexists(f->file, "checksums/trials", H5P_DEFAULT) <= 0)
    goto cleanup; /* an older file: nothing to verify */
  AS_H5_ID(f->crcs, H5Dopen2(f->file, "checksums/trials", H5P_DEFAULT));
  AS_CHECK(vf_length(f->crcs) == n, AS_ERR_DATA,
           "%s: /checksums/trials has %lld entries for %lld rows of /trials: the file is damaged "
           "(run attnsweep repair %s)",
           path, vf_length(f->crcs), n, path);
  f->trial_at = vf_field(f->ftype, "trial", &f->trial_size);
  f->outcome_at = vf_field(f->ftype, "outcome", &f->outcome_size);
  f->pending = vf_enum_value(f->ftype, "pending");
  f->interrupted = vf_enum_value(f->ftype, "interrupted");
  f->failed = vf_enum_value(f->ftype, "failed");
  if (H5Lexists(f->file, "trial_index", H5P_DEFAULT) > 0)
    AS_TRY(vf_read_u64s(f, "trial_index", f->n_rows, &f->row_trial));
  if (H5Lexists(f->file, "bulk", H5P_DEFAULT) <= 0) goto cleanup;
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    char name[80], oname[80], cname[80];
    snprintf(name, sizeof name, "bulk/%s", bulk_names[k]);
    snprintf(oname, sizeof oname, "bulk/%s_offset", bulk_names[k]);
    snprintf(cname, sizeof cname, "checksums/%s", bulk_names[k]);
    if (H5Lexists(f->file, name, H5P_DEFAULT) <= 0 || H5Lexists(f->file, cname, H5P_DEFAULT) <= 0)
      continue;
    AS_H5_ID(f->bulk[k], H5Dopen2(f->file, name, H5P_DEFAULT));
    AS_H5_ID(f->bulk_crc[k], H5Dopen2(f->file, cname, H5P_DEFAULT));
    AS_CHECK(vf_length(f->bulk_crc[k]) == n, AS_ERR_DATA,
             "%s: /%s has %lld entries for %lld rows: the file is damaged (run attnsweep repair "
             "%s)",
             path, cname, vf_length(f->bulk_crc[k]), n, path);
    AS_TRY(vf_read_u64s(f, oname, f->n_rows + 1, &f->off[k]));
    const long long len = vf_length(f->bulk[k]);
    for (uint64_t i = 0; i < f->n_rows; i++)
      AS_CHECK(f->off[k][i + 1] >= f->off[k][i] && len >= 0 &&
                   f->off[k][f->n_rows] <= (uint64_t)len,
               AS_ERR_DATA,
               "%s: /%s is damaged (offsets decrease or lie beyond /%s): run "
               "attnsweep repair %s",
               path, oname, name, path);
  }
cleanup:
  if (fapl >= 0) H5Pclose(fapl);
  return st;
}

/* Whether the row at buf (row r) is damaged by the rules of as_results_verify, and whether it
 * is done and stores bulk data (*bulk). */
static int vf_row_bad(const vf_file *f, const unsigned char *buf, uint32_t sum, uint64_t r,
                      int *bulk) {
  *bulk = 0;
  if (as_crc32(buf, f->row_bytes) != sum) return 1;
  if (f->outcome_at < 0) return 0;
  const long long o = le_int(buf + f->outcome_at, f->outcome_size, 1);
  if (o == f->pending) return 0;
  *bulk = o != f->interrupted && o != f->failed;
  const uint64_t trial = f->row_trial ? f->row_trial[r] : r;
  return f->trial_at >= 0 && (uint64_t)le_int(buf + f->trial_at, f->trial_size, 0) != trial;
}

/* Rows [b, e) of f: flags[r - b] = AS_VERIFY_ROW or AS_VERIFY_BULK, counts added to vc. */
static as_status vf_rows(vf_file *f, uint64_t b, uint64_t e, uint8_t *flags,
                         as_results_verify_counts *vc) {
  as_status st = AS_OK;
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
  unsigned char *rows = NULL;
  uint32_t *sums = NULL;
  uint8_t *want = NULL;
  double *buf = NULL;
  const size_t block = e - b < VERIFY_BLOCK ? (size_t)(e - b) : VERIFY_BLOCK;
  if (block == 0) return AS_OK;
  rows = malloc(block * f->row_bytes);
  sums = malloc(block * sizeof *sums);
  want = malloc(block);
  buf = malloc(VERIFY_CHUNK * sizeof *buf);
  AS_CHECK_ALLOC(rows && sums && want && buf ? rows : NULL);
  for (uint64_t r0 = b; r0 < e; r0 += block) {
    hsize_t start = r0, cnt = e - r0 < block ? e - r0 : block;
    AS_H5_ID(fs, H5Dget_space(f->trials));
    AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &cnt, NULL));
    AS_H5_ID(ms, H5Screate_simple(1, &cnt, NULL));
    AS_H5_CHECK(H5Dread(f->trials, f->ftype, ms, fs, H5P_DEFAULT, rows));
    AS_TRY(read_crcs(f->crcs, r0, (size_t)cnt, sums));
    H5Sclose(fs);
    fs = H5I_INVALID_HID;
    for (size_t i = 0; i < cnt; i++) {
      int bulk = 0;
      const int bad = vf_row_bad(f, rows + i * f->row_bytes, sums[i], r0 + i, &bulk);
      flags[r0 + i - b] = bad ? AS_VERIFY_ROW : 0;
      vc->rows_bad += (uint64_t)bad;
      want[i] = (uint8_t)(!bad && bulk);
    }
    vc->rows += cnt;
    for (int k = 0; k < AS_BULK_COUNT; k++) {
      if (f->bulk[k] < 0) continue;
      AS_TRY(read_crcs(f->bulk_crc[k], r0, (size_t)cnt, sums));
      const uint64_t *off = f->off[k];
      /* The slabs of consecutive rows are contiguous: the span from the first slab to check to
       * the last is streamed in pieces of at most VERIFY_CHUNK doubles. */
      size_t lo = 0, hi = (size_t)cnt;
      while (lo < hi && !(want[lo] && sums[lo])) lo++;
      while (hi > lo && !(want[hi - 1] && sums[hi - 1])) hi--;
      if (lo == hi || off[r0 + hi] == off[r0 + lo]) continue;
      AS_H5_ID(fs, H5Dget_space(f->bulk[k]));
      uint64_t t = r0 + lo;
      uint32_t crc = 0;
      for (uint64_t pos = off[r0 + lo]; pos < off[r0 + hi];) {
        hsize_t p0 = pos, m = off[r0 + hi] - pos < VERIFY_CHUNK ? off[r0 + hi] - pos : VERIFY_CHUNK;
        AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &p0, NULL, &m, NULL));
        H5Sclose(ms);
        AS_H5_ID(ms, H5Screate_simple(1, &m, NULL));
        AS_H5_CHECK(H5Dread(f->bulk[k], H5T_IEEE_F64LE, ms, fs, H5P_DEFAULT, buf));
        const uint64_t end = pos + m;
        for (; t < r0 + hi; t++) {
          const size_t i = (size_t)(t - r0);
          const int check = want[i] && sums[i] != 0;
          const uint64_t s0 = off[t] > pos ? off[t] : pos, s1 = off[t + 1] < end ? off[t + 1] : end;
          if (check && s1 > s0) crc = as_crc32_update(crc, buf + (s0 - pos), (s1 - s0) * 8);
          if (off[t + 1] > end) break; /* continues in the next piece */
          if (check && off[t + 1] > off[t]) {
            vc->slabs++;
            if (crc != sums[i] && flags[t - b] != AS_VERIFY_BULK) {
              flags[t - b] = AS_VERIFY_BULK;
              vc->bulk_bad++;
            }
          }
          crc = 0;
        }
        pos = end;
      }
      H5Sclose(fs);
      fs = H5I_INVALID_HID;
    }
    H5Sclose(ms);
    ms = H5I_INVALID_HID;
  }
cleanup:
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  free(rows);
  free(sums);
  free(want);
  free(buf);
  return st;
}

as_status as_results_verify_file(const char *path, uint64_t *n_rows, uint8_t **flags,
                                 uint64_t **trials, as_results_verify_counts *vc) {
  as_status st = AS_OK;
  vf_file f;
  uint8_t *fl = NULL;
  int opened = 0;
  AS_CHECK(path && n_rows && flags && trials && vc, AS_ERR_ARG,
           "as_results_verify_file: NULL argument");
  memset(vc, 0, sizeof *vc);
  *n_rows = 0;
  *flags = NULL;
  *trials = NULL;
  as_h5_quiet();
  opened = 1;
  AS_TRY(vf_open(&f, path));
  *n_rows = f.n_rows;
  fl = calloc(f.n_rows ? f.n_rows : 1, 1);
  AS_CHECK_ALLOC(fl);
  if (f.crcs < 0) goto done; /* an older file: not verified */
  vc->verified = 1;
  AS_TRY(vf_rows(&f, 0, f.n_rows, fl, vc));
  /* A row a running sweep is writing may read as damaged for a moment: look once more. */
  for (uint64_t r = 0; r < f.n_rows && (vc->rows_bad || vc->bulk_bad); r++) {
    if (!fl[r]) continue;
    as_results_verify_counts one;
    memset(&one, 0, sizeof one);
    uint8_t g = 0;
    AS_TRY(vf_rows(&f, r, r + 1, &g, &one));
    if (g) continue;
    if (fl[r] == AS_VERIFY_ROW) vc->rows_bad--;
    if (fl[r] == AS_VERIFY_BULK) vc->bulk_bad--;
    fl[r] = 0;
  }
done:
  *flags = fl;
  fl = NULL;
  *trials = f.row_trial;
  f.row_trial = NULL;
cleanup:
  free(fl);
  if (opened) vf_close(&f);
  return st;
}

as_status as_results_count(as_results *rf, as_results_counts *c, uint8_t *done) {
  as_status st = AS_OK;
  uint8_t *held = NULL;
  AS_CHECK(rf && c, AS_ERR_ARG, "as_results_count: NULL argument");
  memset(c, 0, sizeof *c);
  if (!rf->rows) {
    AS_TRY(count_range(rf, 0, rf->n_rows, c, done));
    goto cleanup;
  }
  /* A sparse file: the trials it does not hold are pending here. */
  if (done) {
    held = malloc(rf->n_rows ? rf->n_rows : 1);
    AS_CHECK_ALLOC(held);
    memset(done, 0, (size_t)rf->n_trials);
  }
  AS_TRY(count_range(rf, 0, rf->n_rows, c, held));
  for (uint64_t i = 0; done && i < rf->n_rows; i++) done[rf->rows[i]] = held[i];
  c->outcome[AS_OUT_PENDING] += rf->n_trials - rf->n_rows;
  c->verdict[AS_VERDICT_PENDING] += rf->n_trials - rf->n_rows;
  c->total = rf->n_trials;
cleanup:
  free(held);
  return st;
}

as_status as_results_segments(as_results *rf, as_results_segment *out, size_t max, size_t *n) {
  as_status st = AS_OK;
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
  AS_CHECK(rf && n && (out || max == 0), AS_ERR_ARG, "as_results_segments: bad arguments");
  AS_H5_ID(fs, H5Dget_space(rf->segs));
  hssize_t total = H5Sget_simple_extent_npoints(fs);
  AS_H5_CHECK(total);
  *n = (size_t)total;
  hsize_t k = (size_t)total < max ? (hsize_t)total : (hsize_t)max;
  if (k == 0) goto cleanup;
  memset(out, 0, (size_t)k * sizeof *out);
  hsize_t start = 0;
  AS_H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &k, NULL));
  AS_H5_ID(ms, H5Screate_simple(1, &k, NULL));
  AS_H5_CHECK(H5Dread(rf->segs, rf->seg_mem, ms, fs, H5P_DEFAULT, out));
  for (hsize_t i = 0; i < k; i++) { /* NULLPAD strings: make sure they end */
    out[i].job_id[sizeof out[i].job_id - 1] = '\0';
    out[i].start[sizeof out[i].start - 1] = '\0';
    out[i].end[sizeof out[i].end - 1] = '\0';
  }
cleanup:
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  return st;
}

as_status as_results_attr_string(as_results *rf, const char *name, char *buf, size_t len) {
  as_status st = AS_OK;
  hid_t a = H5I_INVALID_HID, t = H5I_INVALID_HID, mt = H5I_INVALID_HID;
  char *tmp = NULL, fname[1024];
  AS_CHECK(rf && name && buf && len > 0, AS_ERR_ARG, "as_results_attr_string: bad arguments");
  buf[0] = '\0';
  AS_CHECK(H5Aexists(rf->file, name) > 0, AS_ERR_DATA, "%s has no attribute %s",
           file_name(rf, fname, sizeof fname), name);
  AS_H5_ID(a, H5Aopen(rf->file, name, H5P_DEFAULT));
  AS_H5_ID(t, H5Aget_type(a));
  /* Parallel HDF5 1.10 writes no variable-length data, so attnsweep never makes one: another
   * program rewrote it (issue 49: the message named no file). */
  AS_CHECK(H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t), AS_ERR_DATA,
           "%s: attribute %s is %s, not the fixed-length string attnsweep writes (the file was "
           "changed by another program?)",
           file_name(rf, fname, sizeof fname), name, type_kind(t));
  size_t size = H5Tget_size(t);
  tmp = calloc(size + 1, 1);
  AS_CHECK_ALLOC(tmp);
  AS_H5_ID(mt, str_type(size, H5T_STR_NULLPAD));
  AS_H5_CHECK(H5Aread(a, mt, tmp));
  snprintf(buf, len, "%s", tmp);
cleanup:
  free(tmp);
  if (mt >= 0) H5Tclose(mt);
  if (t >= 0) H5Tclose(t);
  if (a >= 0) H5Aclose(a);
  return st;
}

as_status as_results_store_spec(const char *path, const char *text, const char *sha,
                                const char *name) {
  as_status st = AS_OK;
  hid_t f = H5I_INVALID_HID;
  AS_CHECK(path && text && sha && name, AS_ERR_ARG, "as_results_store_spec: NULL argument");
  as_h5_quiet();
  /* One process, the POSIX driver: no other process has the file open (the run closed it). */
  AS_H5_ID(f, H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT));
  if (H5Lexists(f, "spec", H5P_DEFAULT) > 0) AS_H5_CHECK(H5Ldelete(f, "spec", H5P_DEFAULT));
  AS_TRY(write_spec(f, 1, text));
  static const char *const names[] = {"spec_sha256", "spec_name"};
  const char *values[] = {sha, name};
  for (int i = 0; i < 2; i++) {
    if (H5Aexists(f, names[i]) > 0) AS_H5_CHECK(H5Adelete(f, names[i]));
    AS_TRY(attr_write_str(f, names[i], values[i], 0));
  }
  AS_H5_CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL));
cleanup:
  if (f >= 0 && H5Fclose(f) < 0 && st == AS_OK)
    st = as_error_set(AS_ERR_IO, __FILE__, __LINE__, __func__, "cannot close %s", path);
  return st;
}

as_status as_results_attr_text(as_results *rf, const char *name, char *buf, size_t len) {
  as_status st = AS_OK;
  hid_t a = H5I_INVALID_HID, t = H5I_INVALID_HID, mt = H5I_INVALID_HID, s = H5I_INVALID_HID;
  char *vl = NULL;
  AS_CHECK(rf && name && buf && len > 0, AS_ERR_ARG, "as_results_attr_text: bad arguments");
  buf[0] = '\0';
  AS_CHECK(H5Aexists(rf->file, name) > 0, AS_ERR_DATA, "the results file has no attribute %s",
           name);
  AS_H5_ID(a, H5Aopen(rf->file, name, H5P_DEFAULT));
  AS_H5_ID(t, H5Aget_type(a));
  AS_CHECK(H5Tget_class(t) == H5T_STRING, AS_ERR_DATA, "attribute %s is not a string", name);
  if (!H5Tis_variable_str(t)) {
    H5Aclose(a);
    a = H5I_INVALID_HID;
    AS_TRY(as_results_attr_string(rf, name, buf, len));
    goto cleanup;
  }
  AS_H5_ID(s, H5Aget_space(a));
  AS_CHECK(H5Sget_simple_extent_npoints(s) == 1, AS_ERR_DATA, "attribute %s is not one string",
           name);
  AS_H5_ID(mt, H5Tcopy(H5T_C_S1));
  AS_H5_CHECK(H5Tset_size(mt, H5T_VARIABLE));
  AS_H5_CHECK(H5Tset_cset(mt, H5Tget_cset(t))); /* h5py writes UTF-8: no conversion */
  AS_H5_CHECK(H5Aread(a, mt, &vl));
  snprintf(buf, len, "%s", vl ? vl : "");
  H5free_memory(vl);
  vl = NULL;
cleanup:
  if (mt >= 0) H5Tclose(mt);
  if (s >= 0) H5Sclose(s);
  if (t >= 0) H5Tclose(t);
  if (a >= 0) H5Aclose(a);
  return st;
}

as_status as_results_attr_u64(as_results *rf, const char *name, uint64_t *value) {
  as_status st = AS_OK;
  char fname[1024];
  AS_CHECK(rf && name && value, AS_ERR_ARG, "as_results_attr_u64: bad arguments");
  AS_TRY(attr_read_u64(rf->file, file_name(rf, fname, sizeof fname), name, value));
cleanup:
  return st;
}

as_status as_results_set_attr_string(as_results *rf, const char *name, const char *value) {
  as_status st = AS_OK;
  AS_CHECK(rf && name && value && rf->writable, AS_ERR_ARG,
           "as_results_set_attr_string: bad arguments or a read-only file");
  if (H5Aexists(rf->file, name) > 0) AS_H5_CHECK(H5Adelete(rf->file, name));
  AS_TRY(attr_write_str(rf->file, name, value, 0));
cleanup:
  return st;
}

as_status as_results_set_attr_u64(as_results *rf, const char *name, uint64_t value) {
  as_status st = AS_OK;
  AS_CHECK(rf && name && rf->writable, AS_ERR_ARG,
           "as_results_set_attr_u64: bad arguments or a read-only file");
  if (H5Aexists(rf->file, name) > 0) AS_H5_CHECK(H5Adelete(rf->file, name));
  AS_TRY(attr_write_u64(rf->file, name, value));
cleanup:
  return st;
}

as_status as_results_spec_text(as_results *rf, char **text) {
  as_status st = AS_OK;
  hid_t d = H5I_INVALID_HID, t = H5I_INVALID_HID, mt = H5I_INVALID_HID;
  char *buf = NULL;
  AS_CHECK(rf && text, AS_ERR_ARG, "as_results_spec_text: NULL argument");
  AS_H5_ID(d, H5Dopen2(rf->file, "spec", H5P_DEFAULT));
  AS_H5_ID(t, H5Dget_type(d));
  size_t size = H5Tget_size(t);
  buf = calloc(size + 1, 1);
  AS_CHECK_ALLOC(buf);
  AS_H5_ID(mt, str_type(size, H5T_STR_NULLPAD));
  AS_H5_CHECK(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
  *text = buf;
  buf = NULL;
cleanup:
  free(buf);
  if (mt >= 0) H5Tclose(mt);
  if (t >= 0) H5Tclose(t);
  if (d >= 0) H5Dclose(d);
  return st;
}
