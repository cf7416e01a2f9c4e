/* attnsweep/versions.h: the tool's version and git revision, and the versions of the
 * libraries it runs with (not the ones it was compiled against). Recorded in results files
 * and printed by `attnsweep --version`. Not collective; callable before MPI_Init. */
#ifndef ATTNSWEEP_VERSIONS_H
#define ATTNSWEEP_VERSIONS_H

typedef struct as_versions {
  char tool[32];  /* e.g. "0.1.0" */
  char git[48];   /* short revision, "-dirty" appended for a modified tree */
  char mpi[256];  /* MPI_Get_library_version, first line */
  char hdf5[32];  /* H5get_libversion */
  char yaml[32];  /* yaml_get_version_string */
  char blas[256]; /* openblas_get_config when OpenBLAS is loaded, else "reference or unknown" */
  char rng[64];   /* the RNG algorithm of the random streams */
} as_versions;

void as_versions_get(as_versions *v);

#endif
