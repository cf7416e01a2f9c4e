/* attnsweep/trial.h: the fully resolved parameters of one trial.
 *
 * The spec module (io) turns (spec, trial index) into an as_trial; everything downstream
 * (triple, tokens, integration, classification) is a pure function of it. Pointers inside
 * (explicit matrices, file names, case name) are borrowed from the object that produced the
 * trial (the parsed spec) and live as long as it does.
 */
#ifndef ATTNSWEEP_TRIAL_H
#define ATTNSWEEP_TRIAL_H

#include <stdbool.h>
#include <stdint.h>

#include "attnsweep/enums.h"

/* Purposes of the random streams (part of the Philox key; never change a value). */
typedef enum as_purpose {
  AS_PURPOSE_TRIPLE = 1,    /* the random matrices of a triple */
  AS_PURPOSE_TOKENS = 2,    /* initial tokens */
  AS_PURPOSE_PERTURB = 3,   /* the eps-perturbation of a triple */
  AS_PURPOSE_CALIBRATE = 4, /* cost-model calibration sampling */
  AS_PURPOSE_TEST = 99      /* tests */
} as_purpose;

/* Which matrices a perturbation touches. */
typedef enum as_perturb_target {
  AS_PERTURB_V = 0,
  AS_PERTURB_M = 1,
  AS_PERTURB_BOTH = 2
} as_perturb_target;

/* Where a (Q, K, V) triple comes from. Fields not used by the chosen families are ignored. */
typedef struct as_triple_spec {
  as_vfamily vfamily;
  double v_scale;  /* s: multiplies V (identity, perron, gaussian); default 1 */
  int v_kpos;      /* symmetric: number of positive eigenvalues (0..d) */
  double v_lambda; /* paranormal/good/complex: leading eigenvalue (real part), > 0 */
  int v_dim_f;     /* paranormal: dim F (1..d) */
  double v_radius; /* paranormal: spectral radius of V on G (< v_lambda) */
  bool v_oblique;  /* paranormal: F and G oblique (true) or orthogonal (false) */
  double v_gap;    /* good: lambda_1 - |lambda_2| (> 0) */
  double v_imag;   /* complex: imaginary part of the leading pair */
  as_mfamily mfamily;
  double m_scale;            /* s: multiplies M (identity, uniform, gaussian, spd); default 1 */
  double m_cond;             /* spd: condition number of M (>= 1) */
  int m_rows;                /* rows m of Q and K (m x d); 0 means m = d */
  double margin;             /* good: imposed <Q phi_1, K phi_1> (NaN: not imposed) */
  double eps;                /* perturbation size: adds eps * N(0,1)/sqrt(d) noise (0: none) */
  as_perturb_target perturb; /* what eps perturbs */
  const double *v_data;      /* explicit V, d x d row-major (borrowed) */
  const double *q_data;      /* explicit Q, m x d row-major, or NULL */
  const double *k_data;      /* explicit K, m x d row-major, or NULL */
  const double *m_data;      /* explicit M = Q^T K, d x d row-major, when Q, K are not given */
  const char *file;          /* file families: HDF5 path (borrowed) */
  int file_index;            /* file families: which triple of the file (0-based) */
  double file_mscale;        /* file families: factor applied to M read (e.g. 1/sqrt(d_k)); 1 */
} as_triple_spec;

/* Initial tokens. */
typedef struct as_init_spec {
  as_init kind;
  double scale;        /* s of the distribution (box half-width, std, radius) */
  const double *data;  /* explicit: n x d row-major (borrowed) */
  const char *file;    /* file: HDF5 path (borrowed) */
  const char *dataset; /* file: dataset name, n x d */
} as_init_spec;

/* Integration settings. */
typedef struct as_integ_spec {
  as_method method;
  as_vars vars;
  double T;             /* horizon (time units; layers: T/dt layers) */
  double dt;            /* step (fixed-step methods), initial step (dopri5) */
  double rtol, atol;    /* dopri5 error control */
  int64_t max_steps;    /* step limit (accepted + rejected) */
  double settle_tol;    /* settled when max velocity < settle_tol * spread ... */
  double settle_window; /* ... throughout a time window of this length (0: never stop early) */
} as_integ_spec;

/* Bulk data to store for a trial (the spec's output section). */
#define AS_MAX_SNAPSHOTS 64
typedef struct as_output_spec {
  bool initial;    /* initial tokens, n x d */
  bool final;      /* final tokens (in the integrated variables), n x d */
  bool attention;  /* final P, n x n */
  bool matrices;   /* V and M, d x d each */
  int n_snapshots; /* trajectory snapshots at snapshot_times (0..AS_MAX_SNAPSHOTS) */
  double snapshot_times[AS_MAX_SNAPSHOTS];
} as_output_spec;

typedef struct as_trial {
  uint64_t index;        /* trial index (row of /trials) */
  uint32_t case_id;      /* which case (sub-sweep) of the spec */
  const char *case_name; /* its name (borrowed) */
  uint64_t master_seed;  /* the spec's seed */
  uint32_t replicate;    /* seed axis value (slowest axis of the enumeration) */
  uint64_t triple_key;   /* Philox key for the triple's random matrices */
  uint64_t token_key;    /* Philox key for the initial tokens */
  int d;                 /* dimension */
  int n;                 /* number of tokens */
  as_triple_spec triple;
  as_init_spec init;
  as_integ_spec integ;
  as_output_spec output;
} as_trial;

/* Defaults for every field (sensible paper settings: d = 2, n = 20, identity triple,
 * box scale 5, RK4 dt = 0.1 T = 5, z variables). */
void as_trial_defaults(as_trial *t);

#endif /* ATTNSWEEP_TRIAL_H */
