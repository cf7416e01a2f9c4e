/* linalg.h (private to core and its tests): the BLAS/LAPACK routines the core calls.
 *
 * BLAS through CBLAS (row-major). LAPACK through its Fortran interface, declared here (Debian
 * ships no LAPACKE by default): column-major, arguments by pointer, and the hidden length
 * arguments of character parameters (gfortran ABI) passed explicitly. A row-major matrix
 * is the column-major transpose: pass it with that in mind.
 */
#ifndef AS_LINALG_H
#define AS_LINALG_H

#include <cblas.h>
#include <stddef.h>

typedef size_t as_flen; /* hidden Fortran character length */

void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda,
            double *wr, double *wi, double *vl, const int *ldvl, double *vr, const int *ldvr,
            double *work, const int *lwork, int *info, as_flen, as_flen);
void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
            double *work, const int *lwork, int *info, as_flen, as_flen);
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
             double *work, const int *lwork, int *iwork, const int *liwork, int *info, as_flen,
             as_flen);
void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a,
             const int *lda, double *s, double *u, const int *ldu, double *vt, const int *ldvt,
             double *work, const int *lwork, int *info, as_flen, as_flen);
void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s,
             double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork,
             int *iwork, int *info, as_flen);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda,
             const int *ipiv, double *b, const int *ldb, int *info, as_flen);
void dgetri_(const int *n, double *a, const int *lda, const int *ipiv, double *work,
             const int *lwork, int *info);
void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b,
            const int *ldb, int *info);
void dgecon_(const char *norm, const int *n, const double *a, const int *lda, const double *anorm,
             double *rcond, double *work, int *iwork, int *info, as_flen);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
             const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau,
             double *work, const int *lwork, int *info);
double dlange_(const char *norm, const int *m, const int *n, const double *a, const int *lda,
               double *work, as_flen);

#endif
