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
  AS_PURPOSE_FFN = 5,       /* feed-forward weights (blocks.h; sub-stream: the block index) */
  AS_PURPOSE_RANK = 6,      /* the classifier's rank estimate (keyed by n, not by trial) */
  AS_PURPOSE_TEST = 99      /* tests */
  /* Heads and per-layer blocks (blocks.h): head h of block b draws with purpose
   * AS_PURPOSE_TRIPLE + 256 (h + 64 b) (and AS_PURPOSE_PERTURB + ...), head 0 of block 0 with
   * the plain purposes; see as_purpose_of (triple.h). */
} as_purpose;

/* A string value of the spec (a file name, a dataset): its text and its label id, the index
 * of the value among the distinct values of its key in the spec (the record stores the id;
 * the results file's enum type maps it back to the text). id -1: not given. */
typedef struct as_text {
  const char *text; /* borrowed, NULL when not given */
  int32_t id;
} as_text;

/* A matrix written in the spec (or loaded from a file into the trial): rows x cols
 * row-major, and a content hash of the spec's value (0: not from the spec). */
typedef struct as_matref {
  const double *data; /* borrowed, NULL when not given */
  int rows, cols;
  uint64_t hash; /* as_matref_hash of the value written in the spec */
} as_matref;

/* Content hash of a rows x cols matrix: 64-bit FNV-1a over rows and cols (each as 8
 * little-endian bytes) and the entries as little-endian doubles (-0 as 0), then the splitmix64
 * finaliser; never 0. Not cryptographic: it tells matrices of one spec apart (the record
 * fields V_hash, ..., init_hash); recorded, so never change it. Pure. */
uint64_t as_matref_hash(const double *data, int rows, int cols);

/* Where a (Q, K, V) triple comes from. Fields not used by the chosen families are ignored.
 * Every field set by a sweep key is declared in the key table (params.h). */
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
  double m_scale;     /* s: multiplies M (identity, uniform, gaussian, spd); default 1 */
  double m_cond;      /* spd: condition number of M (>= 1) */
  int m_rows;         /* rows m of Q and K (m x d); 0 means m = d */
  double margin;      /* good: imposed <Q phi_1, K phi_1> (NaN: not imposed) */
  double beta;        /* inverse temperature: M -> beta M after the family (> 0) */
  double eps;         /* perturbation size: adds eps * N(0,1)/sqrt(d) noise (0: none) */
  as_perturb perturb; /* what eps perturbs */
  as_matref V;        /* explicit V, d x d (or the file family's V once loaded) */
  as_matref Q;        /* explicit Q, m x d, or no data */
  as_matref K;        /* explicit K, m x d, or no data */
  as_matref M;        /* explicit M = Q^T K, d x d, when Q, K are not given */
  as_text file;       /* file families: HDF5 path */
  int file_index;     /* file families: which triple of the file (0-based) */
  double file_mscale; /* file families: factor applied to M read (e.g. 1/sqrt(d_k)); 1 */
} as_triple_spec;

/* Initial tokens. */
typedef struct as_init_spec {
  as_init kind;
  double scale;    /* s of the distribution (box half-width, std, radius) */
  as_matref data;  /* explicit: n x d (or the tokens loaded from init.file) */
  as_text file;    /* file: HDF5 path */
  as_text dataset; /* file: dataset name, n x d */
} as_init_spec;

/* Integration settings. */
typedef struct as_integ_spec {
  as_method method;
  as_vars vars;
  double T;             /* horizon (time units; layers: T/dt layers) */
  double T_decide;      /* > 0: T raised to T_decide 3.912 / sep (theorem.h as_theorem_horizon) */
  double dt;            /* step (fixed-step methods), initial step (dopri5) */
  double rtol, atol;    /* dopri5 error control */
  int64_t max_steps;    /* step limit (accepted + rejected) */
  double settle_tol;    /* settled when max velocity < settle_tol * radius ... */
  double settle_window; /* ... throughout a time window of this length (0: never stop early) */
} as_integ_spec;

/* Attention normalisation and layer normalisation (docs/variants.md). The temperature is
 * triple.beta (+inf: hardmax). */
typedef struct as_attn_spec {
  as_attn attention;   /* softmax | sinkhorn | sinkhorn_fixed */
  int sinkhorn_iters;  /* sinkhorn: iteration cap; sinkhorn_fixed: exactly this many (1..10000;
                        * 1 = the row softmax) */
  double sinkhorn_tol; /* sinkhorn: stop when rows and columns sum to 1 within this */
  as_mask mask;        /* none | causal (P_ij = 0 for j > i) */
  as_norm norm;        /* none | sphere (tokens on the unit sphere) */
  as_nform norm_form;  /* sphere: sa (softmax weights) | usa (e^{beta <Qx_i,Kx_j>} / n) */
} as_attn_spec;

/* 1 for the base model of the paper (row softmax, no mask, no normalisation, finite beta;
 * hardmax: beta = +inf). Defined in trial.c. */
int as_attn_is_base(const as_attn_spec *am, int hardmax);
/* 1 for the attentions that scale e^{c S} towards a doubly stochastic matrix: sinkhorn
 * (converged to sinkhorn_tol) and sinkhorn_fixed (sinkhorn_iters iterations exactly); they
 * share the rules of rules.h (no causal mask, no usa, a finite beta) and the record's
 * sinkhorn_iters and sinkhorn_dev. Defined in trial.c. */
int as_attn_is_sinkhorn(as_attn a);

/* Transformer blocks (blocks.h): every field set by a sweep key of params.h. */
typedef struct as_blocks_spec {
  int heads;            /* H, 1..64 */
  bool skip;            /* layers: residual x + dt Attn(x) (true) or pure attention (false) */
  as_ffn ffn;           /* activation of the feed-forward part (none: no such part) */
  as_ffn_form ffn_form; /* inside or block */
  int ffn_width;        /* block: hidden width (0: d) */
  as_ffn_w ffn_w;       /* identity or random weights */
  bool ffn_bias;        /* block: random bias */
  as_weights weights;   /* shared or per_layer */
  int weights_every;    /* per_layer: layers per triple */
} as_blocks_spec;

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
  as_tseed triple_seed;  /* per_trial: triple_key = index; per_parameters: = point */
  int d;                 /* dimension */
  int n;                 /* number of tokens */
  as_triple_spec triple;
  as_init_spec init;
  as_integ_spec integ;
  as_attn_spec attn; /* attention normalisations and layer normalisation */
  as_output_spec output;
  as_blocks_spec blocks;
  int ranks_per_trial; /* ranks that share the trial's rows (0: auto, docs/meanfield.md) */
  int reference_n;     /* tokens of the reference run of ref_w1 (0: none; docs/meanfield.md) */
} as_trial;

/* Defaults for every field: the `dflt` column of the key table (params.h) (the paper's
 * settings: d = 2, n = 20, identity triple, box scale 5, RK4 dt = 0.1 T = 5, z variables);
 * text ids -1. */
void as_trial_defaults(as_trial *t);

#endif /* ATTNSWEEP_TRIAL_H */
