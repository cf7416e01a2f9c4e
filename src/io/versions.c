/* versions.c: versions of the tool and of the libraries loaded at run time. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "attnsweep/versions.h"

#include <dlfcn.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "as_gitrev.h"

#ifndef AS_TOOL_VERSION
#define AS_TOOL_VERSION "0.1.0"
#endif

void as_versions_get(as_versions *v) {
  memset(v, 0, sizeof *v);
  snprintf(v->tool, sizeof v->tool, "%s", AS_TOOL_VERSION);
  snprintf(v->git, sizeof v->git, "%s", AS_GIT_REV);

  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
    char *nl = strpbrk(lib, ",\n");
    if (nl) *nl = '\0';
    snprintf(v->mpi, sizeof v->mpi, "%s", lib);
  } else {
    snprintf(v->mpi, sizeof v->mpi, "unknown");
  }

  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  snprintf(v->hdf5, sizeof v->hdf5, "%u.%u.%u%s", maj, min, rel,
#ifdef H5_HAVE_PARALLEL
           " (parallel)"
#else
           " (serial)"
#endif
  );
  snprintf(v->yaml, sizeof v->yaml, "%s", yaml_get_version_string());

  /* The BLAS is chosen at run time (Debian alternatives): ask the loaded library. */
  typedef char *(*config_fn)(void);
  void *sym = dlsym(RTLD_DEFAULT, "openblas_get_config");
  config_fn cfg;
  memcpy(&cfg, &sym, sizeof cfg); /* object to function pointer without a cast warning */
  if (sym)
    snprintf(v->blas, sizeof v->blas, "%s", cfg());
  else
    snprintf(v->blas, sizeof v->blas, "reference or unknown BLAS (no OpenBLAS loaded)");
  snprintf(v->rng, sizeof v->rng, "Random123 Philox4x32-10");
}
