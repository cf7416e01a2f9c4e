/* attnsweep/matfile.h: triples and initial tokens read from HDF5 files.
 *
 * File layout (docs/matrices.md has the full description and an h5py example):
 *   /triples/V   float [k][d][d]   value matrices, one per triple (a [d][d] dataset = 1 triple)
 *   /triples/Q   float [k][m][d]   optional, with /triples/K: query and key matrices
 *   /triples/K   float [k][m][d]   (M = Q^T K; the 1/sqrt(d_k) of a trained model is NOT
 *                                  applied unless the attribute mscale says so)
 *   /triples/M   float [k][d][d]   optional, used when Q and K are absent: M directly
 *   /triples attribute mscale      optional double (default 1): M is multiplied by it (K is
 *                                  scaled); the trial's file_mscale multiplies on top
 *   /tokens/<name> float [n][d]    initial tokens (a name starting with '/' is a full path)
 * Row-major, C order (what h5py/numpy write). Any floating type is converted to double.
 *
 * Loading is per trial and serial (any rank, default file access): the object owns the
 * buffers and the trial's V.data / Q.data / K.data / M.data / init.data.data point into them.
 */
#ifndef ATTNSWEEP_MATFILE_H
#define ATTNSWEEP_MATFILE_H

#include "attnsweep/status.h"
#include "attnsweep/trial.h"

typedef struct as_matfile as_matfile;

/* Read what trial t needs (vfamily file: V; mfamily file: Q and K, or M, times mscale; init
 * file: the tokens) from t->triple.file.text (triple t->triple.file_index) and t->init.file.text
 * (dataset t->init.dataset.text), and point t's data fields at the loaded buffers. Nothing is read
 * when no family is a file family (*out is still set). Bad data is AS_ERR_DATA with file, dataset
 * and what is wrong: missing file or dataset, index out of range, shapes that are not square or do
 * not match the trial's d, m, n, non-float data, NaN or infinite entries (first one named). An HDF5
 * failure on a valid file is AS_ERR_HDF5. t's pointers stay valid until destroy. Not collective. */
as_status as_matfile_load(as_trial *t, as_matfile **out);
/* If mf (may be NULL) holds exactly what trial t needs (same files, triple index, dataset and
 * shapes), point t's data fields at its buffers and return 1; else return 0 and leave t as
 * it is. Lets a worker read a file once for a run of trials of the same triple. */
int as_matfile_reuse(const as_matfile *mf, as_trial *t);
/* V's factors when the file stores V = VL VR (import-weights' compact layout): for head `head`
 * of the loaded item (0 without a head axis) *VL (d x r) and *VR (r x d), row-major, valid until
 * destroy; returns r, or 0 (pointers untouched) when V was stored dense or not loaded. */
int as_matfile_v_factors(const as_matfile *mf, int head, const double **VL, const double **VR);
/* Free the buffers; accepts NULL and *p == NULL; sets *p to NULL. */
void as_matfile_destroy(as_matfile **p);

/* Shape of a triples file: number of triples k, dimension d, rows m of Q and K (m = d when
 * the file holds M). For planning and validation. Not collective. */
as_status as_matfile_info(const char *path, int *count, int *d, int *m);

/* Shape of a triples file that may hold a head axis (import-weights --stack-heads): k items,
 * heads H per item (0: no head axis, one triple per item), d, and m rows of Q and K (m = d when
 * the file holds M). Q's shape must agree with V's. Not collective. */
as_status as_matfile_shape(const char *path, int *count, int *heads, int *d, int *m);

/* Labels of the triples of a file written by `attnsweep import-weights` (docs/weights.md):
 * layer[i] and head[i] (count entries each) from the integer datasets /triples/layer and
 * /triples/head, -1 where the file has none; model (cap bytes) and position (pcap bytes; either
 * may be NULL) get the string attributes /triples model and position ("" when absent). Only
 * fixed-length strings are read: a variable-length one lives in HDF5's global heap, whose
 * damage can make the library loop or crash, and reads as "". Control characters read as '?'.
 * A dataset of another length or type is AS_ERR_DATA naming it. Not collective. */
as_status as_matfile_labels(const char *path, int count, int *layer, int *head, char *model,
                            size_t cap, char *position, size_t pcap);

/* The optional /triples/rotary_spread of a file of import-weights for a rotary model
 * (docs/weights.md "Positions"): count numbers (one per triple, any shape) into spread, *have
 * set to 1; *have 0 when absent. Another count, a non-float type, a negative or non-finite
 * value is AS_ERR_DATA naming the dataset. Not collective. */
as_status as_matfile_rotary(const char *path, int count, double *spread, int *have);

#endif
