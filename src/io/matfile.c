/* matfile.c: triples and tokens from HDF5 files (layout in matfile.h and docs/matrices.md). */
#include "attnsweep/matfile.h"

#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/iocheck.h"

struct as_matfile {
  double *V, *Q, *K, *M, *X; /* owned buffers (NULL when not loaded) */
  double *VL, *VR;           /* V's factors when the file stores them (else NULL) */
  int vrank;                 /* their inner size r (0: V stored dense) */
  /* What was loaded, for as_matfile_reuse: the trial fields that decide it. */
  int vfile, mfile, tfile;       /* V, M (Q, K) and tokens came from files */
  char *file, *tokens, *dataset; /* owned copies of the names (NULL when not used) */
  int index, d, m, n, heads;
};

/* NULL-safe string equality. */
static int same_name(const char *a, const char *b) {
  return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* An owned copy of s (NULL stays NULL); *ok cleared on allocation failure. */
static char *copy_name(const char *s, int *ok) {
  if (!s) return NULL;
  size_t len = strlen(s) + 1;
  char *c = malloc(len);
  if (!c) {
    *ok = 0;
    return NULL;
  }
  memcpy(c, s, len);
  return c;
}

int as_matfile_reuse(const as_matfile *mf, as_trial *t) {
  if (!mf || !t) return 0;
  as_triple_spec *ts = &t->triple;
  int vfile = ts->vfamily == AS_V_FILE, mfile = ts->mfamily == AS_M_FILE;
  int tfile = t->init.kind == AS_INIT_FILE, m = ts->m_rows > 0 ? ts->m_rows : t->d;
  if (vfile != mf->vfile || mfile != mf->mfile || tfile != mf->tfile || t->d != mf->d ||
      t->blocks.heads != mf->heads)
    return 0;
  if ((vfile || mfile) &&
      (!same_name(ts->file.text, mf->file) || ts->file_index != mf->index || m != mf->m))
    return 0;
  if (tfile && (!same_name(t->init.file.text, mf->tokens) ||
                !same_name(t->init.dataset.text, mf->dataset) || t->n != mf->n))
    return 0;
  const int H = mf->heads > 1 ? mf->heads : 1, d = t->d;
  if (vfile) {
    ts->V.data = mf->V;
    ts->V.rows = H * d;
    ts->V.cols = d;
  }
  if (mfile) {
    ts->Q.data = mf->Q;
    ts->K.data = mf->K;
    ts->M.data = mf->M;
    ts->Q.rows = ts->K.rows = H * m;
    ts->M.rows = H * d;
    ts->Q.cols = ts->K.cols = ts->M.cols = d;
  }
  if (tfile) t->init.data.data = mf->X;
  return 1;
}

void as_matfile_destroy(as_matfile **p) {
  if (p == NULL || *p == NULL) return;
  free((*p)->V);
  free((*p)->VL);
  free((*p)->VR);
  free((*p)->Q);
  free((*p)->K);
  free((*p)->M);
  free((*p)->X);
  free((*p)->file);
  free((*p)->tokens);
  free((*p)->dataset);
  free(*p);
  *p = NULL;
}

int as_matfile_v_factors(const as_matfile *mf, int head, const double **VL, const double **VR) {
  if (mf == NULL || mf->vrank < 1 || mf->VL == NULL || mf->VR == NULL) return 0;
  const int H = mf->heads > 1 ? mf->heads : 1;
  if (head < 0 || head >= H) return 0;
  const size_t dr = (size_t)mf->d * mf->vrank;
  *VL = mf->VL + dr * head;
  *VR = mf->VR + dr * head;
  return mf->vrank;
}

/* An HDF5 failure while reading an existing HDF5 file means its metadata is damaged or cut
 * short (a checksum, a header that does not load): bad input, and the message names the file
 * (the HDF5 stack alone does not). Other statuses pass unchanged. */
static as_status name_damage(as_status st, const char *path) {
  if (st != AS_ERR_HDF5) return st;
  char old[AS_ERRMSG_MAX];
  snprintf(old, sizeof old, "%s", as_error_get()->message);
  as_error_clear();
  return as_error_set(AS_ERR_DATA, __FILE__, __LINE__, __func__,
                      "%s: HDF5 cannot read the file: it is damaged or truncated (%s)",
                      path ? path : "(no file)", old);
}

/* Open a file for reading; a missing or non-HDF5 file is bad input. */
static as_status open_file(const char *path, hid_t *fid) {
  as_status st = AS_OK;
  as_h5_quiet();
  AS_CHECK(path != NULL && path[0] != '\0', AS_ERR_DATA, "no HDF5 file name was given");
  /* A FIFO blocked validate, run and census in HDF5's open (issue 49): refused by type. */
  AS_TRY(as_path_check(path, NULL, 0));
  htri_t is = H5Fis_hdf5(path);
  AS_CHECK(is > 0, AS_ERR_DATA, "%s: %s", path,
           is == 0 ? "not an HDF5 file" : "cannot open the file (missing or unreadable)");
  *fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  AS_CHECK(*fid >= 0, AS_ERR_DATA, "%s: cannot open the HDF5 file", path);
cleanup:
  return st;
}

/* Does the object at an absolute path exist (every link on the way)? */
static int exists(hid_t fid, const char *name) {
  char buf[512];
  size_t n = strlen(name);
  if (n >= sizeof buf || name[0] != '/') return 0;
  memcpy(buf, name, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char c = buf[i];
      buf[i] = '\0';
      if (H5Lexists(fid, buf, H5P_DEFAULT) <= 0) return 0;
      buf[i] = c;
    }
  }
  return 1;
}

/* Shape of a dataset as (count, heads, rows, cols): rank 4 [k][H][r][c] (per-head triples),
 * rank 3 [k][r][c], rank 2 [r][c] (k = 1); heads 0 when there is no head axis. */
static as_status shape_h(hid_t fid, const char *path, const char *name, int *k, int *h, int *r,
                         int *c);

/* name (which exists) must be a dataset, not a group or a named type. */
static as_status want_dataset(hid_t fid, const char *path, const char *name) {
  as_status st = AS_OK;
  hid_t obj = -1;
  AS_H5_ID(obj, H5Oopen(fid, name, H5P_DEFAULT));
  const H5I_type_t t = H5Iget_type(obj);
  AS_CHECK(t == H5I_DATASET, AS_ERR_DATA, "%s: %s is a %s where a dataset is expected", path, name,
           t == H5I_GROUP ? "group" : "named datatype");
cleanup:
  if (obj >= 0) H5Oclose(obj);
  return st;
}

/* Shape of a dataset as (count, rows, cols): rank 3 [k][r][c], rank 2 [r][c] (k = 1). */
static as_status shape(hid_t fid, const char *path, const char *name, int *k, int *r, int *c) {
  as_status st = AS_OK;
  int h = 0;
  AS_TRY(shape_h(fid, path, name, k, &h, r, c));
  AS_CHECK(h == 0, AS_ERR_DATA,
           "%s: dataset %s has a head axis ([k][H][rows][cols], H = %d): sweep it with heads: %d",
           path, name, h, h);
cleanup:
  return st;
}

static as_status shape_h(hid_t fid, const char *path, const char *name, int *k, int *h, int *r,
                         int *c) {
  as_status st = AS_OK;
  hid_t ds = -1, sp = -1, ty = -1;
  AS_CHECK(exists(fid, name), AS_ERR_DATA, "%s: dataset %s is missing", path, name);
  AS_TRY(want_dataset(fid, path, name));
  AS_H5_ID(ds, H5Dopen2(fid, name, H5P_DEFAULT));
  AS_H5_ID(ty, H5Dget_type(ds));
  AS_CHECK(H5Tget_class(ty) == H5T_FLOAT, AS_ERR_DATA, "%s: dataset %s is not floating point data",
           path, name);
  AS_H5_ID(sp, H5Dget_space(ds));
  int rank = H5Sget_simple_extent_ndims(sp);
  AS_CHECK(rank >= 2 && rank <= 4, AS_ERR_DATA,
           "%s: dataset %s has rank %d; expected [k][rows][cols] or [rows][cols] (or "
           "[k][H][rows][cols] for several heads)",
           path, name, rank);
  hsize_t dims[4] = {1, 1, 1, 1};
  if (rank == 4) {
    AS_H5_CHECK(H5Sget_simple_extent_dims(sp, dims, NULL));
  } else {
    AS_H5_CHECK(H5Sget_simple_extent_dims(sp, rank == 3 ? dims : dims + 1, NULL));
    dims[3] = dims[2];
    dims[2] = dims[1];
    dims[1] = 0;
  }
  AS_CHECK(dims[0] <= 1u << 30 && dims[1] <= 64 && dims[2] <= 1u << 20 && dims[3] <= 1u << 20,
           AS_ERR_DATA, "%s: dataset %s is too large", path, name);
  *k = (int)dims[0];
  *h = (int)dims[1];
  *r = (int)dims[2];
  *c = (int)dims[3];
cleanup:
  if (sp >= 0) H5Sclose(sp);
  if (ty >= 0) H5Tclose(ty);
  if (ds >= 0) H5Dclose(ds);
  return st;
}

/* Read item `index` of dataset `name` (shape checked against rows x cols) into a new buffer.
 * heads > 1: the dataset is [k][H][rows][cols] with H = heads and the item is read as the
 * heads' matrices stacked (heads * rows x cols); messages name the head. */
static as_status read_item(hid_t fid, const char *path, const char *name, int index, int heads,
                           int rows, int cols, const char *what, double **out) {
  as_status st = AS_OK;
  hid_t ds = -1, fsp = -1, msp = -1;
  double *buf = NULL;
  int k, h, r, c;
  AS_TRY(shape_h(fid, path, name, &k, &h, &r, &c));
  AS_CHECK(heads > 1 || h <= 1, AS_ERR_DATA,
           "%s: dataset %s has a head axis ([k][H][rows][cols], H = %d): sweep it with heads: %d",
           path, name, h, h);
  AS_CHECK(heads <= 1 || h == heads, AS_ERR_DATA,
           "%s: dataset %s %s; heads = %d needs [k][%d][%d][%d] (one %s per head)", path, name,
           h == 0 ? "has no head axis" : "holds another number of heads", heads, heads, rows, cols,
           what);
  AS_CHECK(index >= 0 && index < k, AS_ERR_DATA,
           "%s: dataset %s holds %d item(s); index %d was asked", path, name, k, index);
  AS_CHECK(r == rows && c == cols, AS_ERR_DATA,
           "%s: dataset %s items are %d x %d%s; %s must be %d x %d", path, name, r, c,
           heads > 1 ? " per head" : "", what, rows, cols);
  const int nh = h > 0 ? h : 1;
  const size_t per = (size_t)rows * cols;
  buf = malloc((size_t)nh * per * sizeof(double));
  AS_CHECK_ALLOC(buf);
  AS_H5_ID(ds, H5Dopen2(fid, name, H5P_DEFAULT));
  AS_H5_ID(fsp, H5Dget_space(ds));
  int rank = H5Sget_simple_extent_ndims(fsp);
  hsize_t start[4] = {(hsize_t)index, 0, 0, 0};
  hsize_t count[4] = {1, (hsize_t)rows, (hsize_t)cols, 1};
  if (rank == 4) {
    count[1] = (hsize_t)nh;
    count[2] = (hsize_t)rows;
    count[3] = (hsize_t)cols;
  }
  if (rank >= 3) AS_H5_CHECK(H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, NULL, count, NULL));
  hsize_t mdim = (hsize_t)nh * per;
  AS_H5_ID(msp, H5Screate_simple(1, &mdim, NULL));
  AS_H5_CHECK(H5Dread(ds, H5T_NATIVE_DOUBLE, msp, fsp, H5P_DEFAULT, buf));
  for (size_t e = 0; e < (size_t)nh * per; e++) {
    if (isfinite(buf[e])) continue;
    AS_CHECK(h > 0, AS_ERR_DATA,
             "%s: dataset %s, item %d: entry (%zu, %zu) is %g, not a finite number", path, name,
             index, e / cols, e % cols, buf[e]);
    AS_CHECK(0, AS_ERR_DATA,
             "%s: dataset %s, item %d, head %zu: entry (%zu, %zu) is %g, not a finite number", path,
             name, index, e / per, (e % per) / cols, e % cols, buf[e]);
  }
  *out = buf;
  buf = NULL;
cleanup:
  free(buf);
  if (msp >= 0) H5Sclose(msp);
  if (fsp >= 0) H5Sclose(fsp);
  if (ds >= 0) H5Dclose(ds);
  return st;
}

/* The optional scalar attribute mscale of /triples (1 when absent). */
static as_status read_mscale(hid_t fid, const char *path, double *mscale) {
  as_status st = AS_OK;
  hid_t at = -1, ty = -1, sp = -1;
  *mscale = 1.0;
  if (H5Aexists_by_name(fid, "/triples", "mscale", H5P_DEFAULT) <= 0) goto cleanup;
  AS_H5_ID(at, H5Aopen_by_name(fid, "/triples", "mscale", H5P_DEFAULT, H5P_DEFAULT));
  AS_H5_ID(ty, H5Aget_type(at));
  AS_H5_ID(sp, H5Aget_space(at));
  const H5T_class_t cl = H5Tget_class(ty);
  AS_CHECK((cl == H5T_FLOAT || cl == H5T_INTEGER) && H5Sget_simple_extent_npoints(sp) == 1,
           AS_ERR_DATA, "%s: attribute /triples mscale must be one number (a float), not %s", path,
           cl == H5T_STRING                       ? "a string"
           : cl == H5T_FLOAT || cl == H5T_INTEGER ? "an array"
                                                  : "this type");
  AS_H5_CHECK(H5Aread(at, H5T_NATIVE_DOUBLE, mscale));
  AS_CHECK(isfinite(*mscale), AS_ERR_DATA, "%s: attribute /triples mscale = %g is not finite", path,
           *mscale);
cleanup:
  if (sp >= 0) H5Sclose(sp);
  if (ty >= 0) H5Tclose(ty);
  if (at >= 0) H5Aclose(at);
  return st;
}

/* Shape of the value matrices: /triples/V [k][(H)][d][d], or its factors /triples/VL
 * [k][(H)][d][r] and /triples/VR [k][(H)][r][d] (V = VL VR, import-weights' compact layout). */
static as_status v_shape(hid_t fid, const char *path, int *k, int *h, int *d) {
  as_status st = AS_OK;
  int r, c;
  if (!exists(fid, "/triples/V") && exists(fid, "/triples/VL")) {
    int kr, hr, rr, cr;
    AS_TRY(shape_h(fid, path, "/triples/VL", k, h, &r, &c));
    AS_TRY(shape_h(fid, path, "/triples/VR", &kr, &hr, &rr, &cr));
    AS_CHECK(kr == *k && hr == *h && rr == c && cr == r && c >= 1, AS_ERR_DATA,
             "%s: /triples/VL items are %d x %d and /triples/VR items %d x %d (%d and %d of "
             "them): V = VL VR needs d x r and r x d, as many of each",
             path, r, c, rr, cr, *k, kr);
    *d = r;
    goto cleanup;
  }
  AS_TRY(shape_h(fid, path, "/triples/V", k, h, &r, &c));
  AS_CHECK(r == c, AS_ERR_DATA, "%s: /triples/V items are %d x %d, not square", path, r, c);
  *d = r;
cleanup:
  return st;
}

/* Item `index` of the factored V (heads > 1: its heads stacked) expanded into a new buffer
 * V = VL VR, summed over the rank in a fixed order (the same bits on every rank). The factors
 * are kept in *fl, *fr (inner size *fr_rank) for as_matfile_v_factors. */
static as_status read_factored_v(hid_t fid, const char *path, int index, int heads, int d,
                                 double **out, double **fl, double **fr, int *f_rank) {
  as_status st = AS_OK;
  double *L = NULL, *R = NULL, *V = NULL;
  int k, h, r, c;
  AS_TRY(shape_h(fid, path, "/triples/VL", &k, &h, &r, &c));
  AS_TRY(read_item(fid, path, "/triples/VL", index, heads, d, c, "VL (d x r)", &L));
  AS_TRY(read_item(fid, path, "/triples/VR", index, heads, c, d, "VR (r x d)", &R));
  const int nh = heads > 1 ? heads : 1;
  const size_t dd = (size_t)d * d, dr = (size_t)d * c;
  V = calloc((size_t)nh * dd, sizeof *V);
  AS_CHECK_ALLOC(V);
  for (int g = 0; g < nh; g++) {
    const double *Lg = L + g * dr, *Rg = R + g * dr;
    double *Vg = V + g * dd;
    for (int i = 0; i < d; i++)
      for (int q = 0; q < c; q++) {
        const double a = Lg[(size_t)i * c + q];
        const double *row = Rg + (size_t)q * d;
        double *vi = Vg + (size_t)i * d;
        for (int j = 0; j < d; j++) vi[j] += a * row[j];
      }
  }
  for (size_t e = 0; e < (size_t)nh * dd; e++)
    AS_CHECK(isfinite(V[e]), AS_ERR_DATA,
             "%s: item %d: V = VL VR overflows at head %zu, entry (%zu, %zu)", path, index, e / dd,
             (e % dd) / d, e % d);
  *out = V;
  V = NULL;
  *fl = L;
  *fr = R;
  *f_rank = c;
  L = R = NULL;
cleanup:
  free(L);
  free(R);
  free(V);
  return st;
}

as_status as_matfile_shape(const char *path, int *count, int *heads, int *d, int *m) {
  as_status st = AS_OK;
  hid_t fid = -1;
  AS_CHECK(count && heads && d && m, AS_ERR_ARG, "matfile shape: NULL argument");
  AS_TRY(open_file(path, &fid));
  int k, h, r;
  AS_TRY(v_shape(fid, path, &k, &h, &r));
  AS_CHECK(h != 1, AS_ERR_DATA, "%s: /triples/V has a head axis of length 1", path);
  *count = k;
  *heads = h;
  *d = r;
  *m = r;
  if (exists(fid, "/triples/Q")) {
    int kq, hq, rq, cq;
    AS_TRY(shape_h(fid, path, "/triples/Q", &kq, &hq, &rq, &cq));
    AS_CHECK(kq == k && hq == h && cq == r, AS_ERR_DATA,
             "%s: /triples/Q is [%d][%d][%d][%d] (heads 0: no head axis); /triples/V needs "
             "[%d][%d][m][%d]",
             path, kq, hq, rq, cq, k, h, r);
    *m = rq;
  }
cleanup:
  if (fid >= 0) H5Fclose(fid);
  return name_damage(st, path);
}

as_status as_matfile_info(const char *path, int *count, int *d, int *m) {
  as_status st = AS_OK;
  hid_t fid = -1;
  AS_TRY(open_file(path, &fid));
  int k, h, r;
  AS_TRY(v_shape(fid, path, &k, &h, &r));
  AS_CHECK(h == 0, AS_ERR_DATA,
           "%s: /triples/V has a head axis ([k][H][rows][cols], H = %d): sweep it with heads: %d",
           path, h, h);
  *count = k;
  *d = r;
  *m = r;
  if (exists(fid, "/triples/Q")) {
    int kq, rq, cq;
    AS_TRY(shape(fid, path, "/triples/Q", &kq, &rq, &cq));
    *m = rq;
  }
cleanup:
  if (fid >= 0) H5Fclose(fid);
  return name_damage(st, path);
}

/* The optional integer dataset name ([count]) into out; -1 everywhere when absent. */
static as_status read_labels(hid_t fid, const char *path, const char *name, int count, int *out) {
  as_status st = AS_OK;
  hid_t ds = -1, sp = -1, ty = -1;
  for (int i = 0; i < count; i++) out[i] = -1;
  if (!exists(fid, name)) goto cleanup;
  AS_TRY(want_dataset(fid, path, name));
  AS_H5_ID(ds, H5Dopen2(fid, name, H5P_DEFAULT));
  AS_H5_ID(ty, H5Dget_type(ds));
  AS_H5_ID(sp, H5Dget_space(ds));
  hsize_t n = 0;
  int rank = H5Sget_simple_extent_ndims(sp);
  if (rank == 1) AS_H5_CHECK(H5Sget_simple_extent_dims(sp, &n, NULL));
  AS_CHECK(H5Tget_class(ty) == H5T_INTEGER && rank == 1 && n == (hsize_t)count, AS_ERR_DATA,
           "%s: dataset %s must hold %d integers, one per triple", path, name, count);
  if (count > 0) AS_H5_CHECK(H5Dread(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out));
cleanup:
  if (sp >= 0) H5Sclose(sp);
  if (ty >= 0) H5Tclose(ty);
  if (ds >= 0) H5Dclose(ds);
  return st;
}

as_status as_matfile_rotary(const char *path, int count, double *spread, int *have) {
  as_status st = AS_OK;
  hid_t fid = -1, ds = -1, sp = -1, ty = -1;
  const char *name = "/triples/rotary_spread";
  AS_CHECK(count >= 0 && spread && have, AS_ERR_ARG, "matfile rotary: bad arguments");
  *have = 0;
  AS_TRY(open_file(path, &fid));
  if (!exists(fid, name)) goto cleanup;
  AS_TRY(want_dataset(fid, path, name));
  AS_H5_ID(ds, H5Dopen2(fid, name, H5P_DEFAULT));
  AS_H5_ID(ty, H5Dget_type(ds));
  AS_H5_ID(sp, H5Dget_space(ds));
  const hssize_t np = H5Sget_simple_extent_npoints(sp);
  AS_CHECK(H5Tget_class(ty) == H5T_FLOAT && np == (hssize_t)count, AS_ERR_DATA,
           "%s: dataset %s must hold %d numbers, one per triple", path, name, count);
  if (count > 0) AS_H5_CHECK(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, spread));
  for (int i = 0; i < count; i++)
    AS_CHECK(isfinite(spread[i]) && spread[i] >= 0, AS_ERR_DATA,
             "%s: dataset %s, entry %d is %g, not a finite number >= 0", path, name, i, spread[i]);
  *have = 1;
cleanup:
  if (sp >= 0) H5Sclose(sp);
  if (ty >= 0) H5Tclose(ty);
  if (ds >= 0) H5Dclose(ds);
  if (fid >= 0) H5Fclose(fid);
  return name_damage(st, path);
}

/* The optional string attribute name of /triples into out (cap bytes; "" when absent). */
static as_status read_string_attr(hid_t fid, const char *name, char *out, size_t cap) {
  as_status st = AS_OK;
  hid_t at = -1, ty = -1, mt = -1;
  char *fs = NULL;
  out[0] = '\0';
  if (H5Aexists_by_name(fid, "/triples", name, H5P_DEFAULT) <= 0) goto cleanup;
  AS_H5_ID(at, H5Aopen_by_name(fid, "/triples", name, H5P_DEFAULT, H5P_DEFAULT));
  AS_H5_ID(ty, H5Aget_type(at));
  if (H5Tget_class(ty) != H5T_STRING) goto cleanup; /* not a label: ignored */
  /* A variable-length string lives in the global heap, whose damage makes HDF5 loop or crash
   * (issue 36 item 9): only fixed-length strings, stored in the attribute itself, are read. */
  if (H5Tis_variable_str(ty) != 0) goto cleanup;
  AS_H5_ID(mt, H5Tcopy(H5T_C_S1));
  AS_H5_CHECK(H5Tset_cset(mt, H5Tget_cset(ty))); /* h5py writes UTF-8: no conversion path */
  {
    size_t n = H5Tget_size(ty);
    AS_CHECK(n > 0 && n < 1u << 20, AS_ERR_DATA, "attribute /triples %s: bad string size", name);
    fs = calloc(n + 1, 1);
    AS_CHECK_ALLOC(fs);
    AS_H5_CHECK(H5Tset_size(mt, n + 1));
    AS_H5_CHECK(H5Aread(at, mt, fs));
    snprintf(out, cap, "%s", fs);
    for (char *p = out; *p; p++) /* a label is printed: no control characters */
      if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
  }
cleanup:
  free(fs);
  if (mt >= 0) H5Tclose(mt);
  if (ty >= 0) H5Tclose(ty);
  if (at >= 0) H5Aclose(at);
  return st;
}

as_status as_matfile_labels(const char *path, int count, int *layer, int *head, char *model,
                            size_t cap, char *position, size_t pcap) {
  as_status st = AS_OK;
  hid_t fid = -1;
  AS_CHECK(count >= 0 && layer && head, AS_ERR_ARG, "matfile labels: bad arguments");
  AS_TRY(open_file(path, &fid));
  AS_TRY(read_labels(fid, path, "/triples/layer", count, layer));
  AS_TRY(read_labels(fid, path, "/triples/head", count, head));
  if (model && cap > 0) AS_TRY(read_string_attr(fid, "model", model, cap));
  if (position && pcap > 0) AS_TRY(read_string_attr(fid, "position", position, pcap));
cleanup:
  if (fid >= 0) H5Fclose(fid);
  return name_damage(st, path);
}

as_status as_matfile_load(as_trial *t, as_matfile **out) {
  as_status st = AS_OK;
  as_matfile *mf = NULL;
  const char *cur = NULL; /* the file being read, for name_damage */
  hid_t fid = -1;
  AS_CHECK(t != NULL && out != NULL, AS_ERR_ARG, "matfile: NULL argument");
  mf = calloc(1, sizeof *mf);
  AS_CHECK_ALLOC(mf);
  as_triple_spec *ts = &t->triple;
  int d = t->d, m = ts->m_rows > 0 ? ts->m_rows : d;
  const int H = t->blocks.heads > 1 ? t->blocks.heads : 1;
  if (ts->vfamily == AS_V_FILE || ts->mfamily == AS_M_FILE) {
    const char *path = ts->file.text;
    cur = path;
    AS_TRY(open_file(path, &fid));
    int idx = ts->file_index;
    if (ts->vfamily == AS_V_FILE) {
      if (!exists(fid, "/triples/V") && exists(fid, "/triples/VL"))
        AS_TRY(read_factored_v(fid, path, idx, H, d, &mf->V, &mf->VL, &mf->VR, &mf->vrank));
      else
        AS_TRY(read_item(fid, path, "/triples/V", idx, H, d, d, "V", &mf->V));
      ts->V.data = mf->V;
      ts->V.rows = H * d;
      ts->V.cols = d;
    }
    if (ts->mfamily == AS_M_FILE) {
      double mscale;
      AS_TRY(read_mscale(fid, path, &mscale));
      int hq = exists(fid, "/triples/Q"), hk = exists(fid, "/triples/K");
      AS_CHECK(hq == hk, AS_ERR_DATA, "%s: /triples/%s is present without /triples/%s", path,
               hq ? "Q" : "K", hq ? "K" : "Q");
      if (hq) {
        AS_TRY(read_item(fid, path, "/triples/Q", idx, H, m, d, "Q (m_rows x d)", &mf->Q));
        AS_TRY(read_item(fid, path, "/triples/K", idx, H, m, d, "K (m_rows x d)", &mf->K));
        for (size_t e = 0; e < (size_t)H * m * d; e++) mf->K[e] *= mscale;
        ts->Q.data = mf->Q;
        ts->K.data = mf->K;
        ts->Q.rows = ts->K.rows = H * m;
        ts->Q.cols = ts->K.cols = d;
        ts->M.data = NULL;
      } else {
        AS_CHECK(exists(fid, "/triples/M"), AS_ERR_DATA,
                 "%s: neither /triples/Q with /triples/K nor /triples/M is present", path);
        AS_TRY(read_item(fid, path, "/triples/M", idx, H, d, d, "M", &mf->M));
        for (size_t e = 0; e < (size_t)H * d * d; e++) mf->M[e] *= mscale;
        ts->M.data = mf->M;
        ts->M.rows = H * d;
        ts->M.cols = d;
        ts->Q.data = ts->K.data = NULL;
      }
    }
    H5Fclose(fid);
    fid = -1;
  }
  if (t->init.kind == AS_INIT_FILE) {
    const char *path = t->init.file.text, *name = t->init.dataset.text;
    cur = path;
    AS_CHECK(name != NULL && name[0] != '\0', AS_ERR_DATA, "%s: no tokens dataset was named",
             path ? path : "(no file)");
    char full[512];
    int n = snprintf(full, sizeof full, "%s%s", name[0] == '/' ? "" : "/tokens/", name);
    AS_CHECK(n > 0 && (size_t)n < sizeof full, AS_ERR_DATA, "tokens dataset name too long");
    AS_TRY(open_file(path, &fid));
    AS_TRY(read_item(fid, path, full, 0, 1, t->n, d, "the tokens (n x d)", &mf->X));
    t->init.data.data = mf->X;
  }
  int ok = 1;
  mf->vfile = ts->vfamily == AS_V_FILE;
  mf->mfile = ts->mfamily == AS_M_FILE;
  mf->tfile = t->init.kind == AS_INIT_FILE;
  mf->index = ts->file_index;
  mf->heads = t->blocks.heads;
  mf->d = d;
  mf->m = m;
  mf->n = t->n;
  mf->file = copy_name(mf->vfile || mf->mfile ? ts->file.text : NULL, &ok);
  mf->tokens = copy_name(mf->tfile ? t->init.file.text : NULL, &ok);
  mf->dataset = copy_name(mf->tfile ? t->init.dataset.text : NULL, &ok);
  AS_CHECK(ok, AS_ERR_NOMEM, "matfile: copies of the file names");
  *out = mf;
  mf = NULL;
cleanup:
  if (fid >= 0) H5Fclose(fid);
  if (mf != NULL && t != NULL) { /* failure: leave no pointer into freed buffers */
    if (mf->V && t->triple.V.data == mf->V) t->triple.V.data = NULL;
    if (mf->Q && t->triple.Q.data == mf->Q) t->triple.Q.data = NULL;
    if (mf->K && t->triple.K.data == mf->K) t->triple.K.data = NULL;
    if (mf->M && t->triple.M.data == mf->M) t->triple.M.data = NULL;
    if (mf->X && t->init.data.data == mf->X) t->init.data.data = NULL;
  }
  as_matfile_destroy(&mf);
  return name_damage(st, cur);
}
