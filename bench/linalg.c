/* linalg.c: the `linalg` suite of `tarn bench` (BENCH.md): cholesky, lu,
 * qr, matmul (A*A), matvec (A*x), solve (A\b via lu) and syrk (A'*A, the
 * full result) of an N x N tiled tarn matrix, and the solves with factors
 * made before (A\b with L of cholesky, with LU and pivots, with QR and its T,
 * and L\b alone; against dpotrs, dgetrs, dormqr + dtrtrs and dtrtrs), the
 * condition estimate with the LU factors (against dgecon) and the inverses
 * from the Cholesky and LU factors (against dpotri, mirrored inside its
 * clock as syrk's, and dgetri), side by side with
 * LAPACKE/OpenBLAS on the whole matrix (1 thread and all cores), the same tiled
 * Cholesky as OpenMP tasks and the same tiled Cholesky and gemm on StarPU 1.3
 * (linalg_peers.h). Inputs are made in an untimed setup; factorizations work on
 * a fresh copy made before each sample, outside the clock. One round checks
 * tarn and the tiled peers against LAPACKE (qr: |diag R| against
 * LAPACKE_dgeqrf's; syrk: a few elements of both triangles against
 * cblas_dsyrk's, whose lower half the LAPACKE row mirrors to the upper inside
 * its clock, as tarn's result is full), then the variants run their samples
 * in two rounds, the second in the reverse order, each variant after a pause
 * and a warm-up of its own (StarPU started for its rounds alone). Ends with the
 * goals, from the medians of the run and Dagger's published medians. */
#define _GNU_SOURCE
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "linalg_peers.h"
#include "linalg_rect.h"
#include "tarn.h"

#define SPD_SEED 11u /* G, the SPD input being G G^T + N I */
#define RND_SEED 12u /* A, the input of lu, qr, matmul, matvec, solve, syrk */
#define VEC_SEED 13u /* x and b, N x 1 */
#define CHECK_TOL 1e-8

static const size_t default_sizes[] = {256, 1024};

enum {
  OP_CHOL,
  OP_LU,
  OP_QR,
  OP_MATMUL,
  OP_MATVEC,
  OP_SOLVE,
  OP_SYRK,
  OP_POTRS, /* solve with the Cholesky factor, made outside the clock */
  OP_GETRS, /* solve with the LU factors and pivots, made outside the clock */
  OP_GEQRS, /* solve with the QR factors, made outside the clock */
  OP_TRTRS, /* L x = b with the Cholesky factor, made outside the clock */
  OP_GECON, /* rcond from the LU factors, made outside the clock */
  OP_POTRI, /* A^-1 from the Cholesky factor, made outside the clock */
  OP_GETRI, /* A^-1 from the LU factors and pivots, made outside the clock */
  OPS
};
enum { V_TARN, V_LAPACKE1, V_LAPACKEN, V_OMP, V_STARPU, VARIANTS };

struct op {
  const char *name; /* the row name, as Dagger's */
  const char *short_name;
  int available;   /* in tarn's API yet */
  int omp, starpu; /* run by the tiled peers */
};

static const struct op ops[OPS] = {
    [OP_CHOL] = {"cholesky", "cholesky", 1, 1, 1},
    [OP_LU] = {"lu", "lu", 1, 0, 0},
    [OP_QR] = {"qr", "qr", 1, 0, 0},
    [OP_MATMUL] = {"matmul (A*A)", "matmul", 1, 0, 1},
    [OP_MATVEC] = {"matvec (A*x)", "matvec", 1, 0, 0},
    [OP_SOLVE] = {"solve (A\\b via lu)", "solve", 1, 0, 0},
    [OP_SYRK] = {"syrk (A'*A)", "syrk", 1, 0, 0},
    [OP_POTRS] = {"solve (A\\b with cholesky's L)", "potrs", 1, 0, 0},
    [OP_GETRS] = {"solve (A\\b with lu's factors)", "getrs", 1, 0, 0},
    [OP_GEQRS] = {"solve (A\\b with qr's factors)", "geqrs", 1, 0, 0},
    [OP_TRTRS] = {"triangular solve (L\\b with cholesky's L)", "trtrs", 1, 0,
                  0},
    [OP_GECON] = {"condition estimate (rcond with lu's factors)", "gecon", 1, 0,
                  0},
    [OP_POTRI] = {"inverse (A^-1 with cholesky's L)", "potri", 1, 0, 0},
    [OP_GETRI] = {"inverse (A^-1 with lu's factors)", "getri", 1, 0, 0},
};

/* Dagger.jl's medians in milliseconds, published reference figures (not
 * measured here): seed /work/shared/seeds/000_1e26231be056f87e.txt, the
 * table "Dagger benchmarks: dirty vs master", rows
 * "linalg/dagger/N=256 (block 256)/..." and "linalg/dagger/N=1024 (block
 * 512)/...", column "dirty" (the first figure of "median ± spread", seconds
 * converted to ms). Dagger ran 8 threads. Indexed by [0: N=256, 1: N=1024]
 * and the op enum. */
static const size_t dagger_sizes[2] = {256, 1024};
static const double dagger_median_ms[2][OPS] = {
    /* N=256: cholesky, lu, qr, matmul, matvec, solve, syrk; none for the
     * solves with factors (0) */
    {3.23, 4.53, 5.62, 2.19, 1.66, 8.89, 3.84, 0, 0, 0, 0, 0, 0, 0},
    /* N=1024: cholesky, lu, qr, matmul, matvec, solve, syrk */
    {19.5, 43.2, 118, 47.0, 3.02, 53.4, 35.7, 0, 0, 0, 0, 0, 0, 0},
};

/* One size's inputs, made and waited for before any clock starts. */
struct ctx {
  tarn_rt *rt;
  size_t n, b;
  int cores;
  double *spd, *rnd, *vec; /* column-major inputs for the peers */
  double *w, *wv;          /* LAPACKE's working matrix and vector */
  double *chk;             /* a tiled peer's result, for the check */
  int *ipiv;
  size_t *piv;
  tarn_matrix *t_spd, *t_rnd, *t_vec;
  /* The factors the solves with factors use: LAPACKE's (dpotrf of spd,
   * dgetrf of rnd and its pivots, dgeqrf of rnd and its tau) and tarn's
   * (cholesky of t_spd, lu of t_rnd and its pivots, qr of t_rnd and its
   * T), made once per size outside the clock. */
  double *l_fac, *lu_fac, *qr_fac, *qr_tau;
  int *lu_ipiv;
  double rnd_norm1; /* ||rnd||_1, the condition estimates' anorm */
  double rcond[2];  /* the estimates of tarn and LAPACKE */
  tarn_matrix *t_l, *t_lu, *t_qr, *t_qr_t;
  size_t *t_lu_piv;
  linalg_tiles ta, tc;
};

/* Medians in seconds by size, op and variant; -1: not measured. */
struct figures {
  size_t n[BENCH_SIZES_MAX];
  size_t count;
  double med[BENCH_SIZES_MAX][OPS][VARIANTS];
};

static int tarn_failed(const char *what, int status) {
  return bench_tarn_failed("linalg", what, status);
}

static double flops(int op, size_t n) {
  double x = (double)n;
  switch (op) {
    case OP_CHOL:
      return x * x * x / 3;
    case OP_LU:
      return 2 * x * x * x / 3;
    case OP_MATMUL:
      return 2 * x * x * x;
    case OP_MATVEC:
      return 2 * x * x;
    case OP_SOLVE:
      return 2 * x * x * x / 3 + 2 * x * x;
    case OP_POTRS:
    case OP_GETRS:
      return 2 * x * x;
    case OP_TRTRS:
      return x * x;
    case OP_GEQRS: /* Q^T b (2 n^2) and the triangular solve (n^2) */
      return 3 * x * x;
    case OP_GECON: /* not counted: the solves it takes vary */
      return 0;
    case OP_POTRI: /* L^-1 (n^3 / 3) and L^-T L^-1 (n^3 / 3) */
      return 2 * x * x * x / 3;
    case OP_GETRI: /* U^-1 (n^3 / 3) and X L = U^-1 (n^3) */
      return 4 * x * x * x / 3;
    case OP_QR: /* 2 m n^2 - 2 n^3 / 3 with m = n */
      return 4 * x * x * x / 3;
    case OP_SYRK: /* the lower half's n^2 (n + 1), counted as n^3 */
      return x * x * x;
    default:
      return 0;
  }
}

int linalg_tiles_alloc(linalg_tiles *t, size_t n, size_t b) {
  t->n = n;
  t->b = b;
  t->nt = (n + b - 1) / b;
  t->tile = calloc(t->nt * t->nt, sizeof *t->tile);
  if (t->tile == NULL) goto oom;
  for (size_t j = 0; j < t->nt; j++)
    for (size_t i = 0; i < t->nt; i++) {
      size_t bytes = linalg_side(t, i) * linalg_side(t, j) * sizeof(double);
      if ((t->tile[i + j * t->nt] = aligned_alloc(64, (bytes + 63) & ~63ul)) ==
          NULL)
        goto oom;
    }
  return 0;
oom:
  fprintf(stderr, "tarn bench: linalg: out of memory for tiles\n");
  return 1;
}

void linalg_tiles_free(linalg_tiles *t) {
  if (t->tile != NULL)
    for (size_t k = 0; k < t->nt * t->nt; k++) free(t->tile[k]);
  free(t->tile);
  memset(t, 0, sizeof *t);
}

void linalg_tiles_from(linalg_tiles *t, const double *buf) {
  for (size_t tj = 0; tj < t->nt; tj++)
    for (size_t ti = 0; ti < t->nt; ti++) {
      size_t mi = linalg_side(t, ti), nj = linalg_side(t, tj);
      double *d = t->tile[ti + tj * t->nt];
      for (size_t j = 0; j < nj; j++)
        memcpy(d + j * mi, buf + ti * t->b + (tj * t->b + j) * t->n,
               mi * sizeof(double));
    }
}

void linalg_tiles_to(const linalg_tiles *t, double *buf) {
  for (size_t tj = 0; tj < t->nt; tj++)
    for (size_t ti = 0; ti < t->nt; ti++) {
      size_t mi = linalg_side(t, ti), nj = linalg_side(t, tj);
      const double *s = t->tile[ti + tj * t->nt];
      for (size_t j = 0; j < nj; j++)
        memcpy(buf + ti * t->b + (tj * t->b + j) * t->n, s + j * mi,
               mi * sizeof(double));
    }
}

/* *dst = a fresh copy of src, waited for. */
static int fresh_copy(tarn_rt *rt, tarn_matrix *src, tarn_matrix **dst) {
  tarn_region *region;
  int rc = tarn_region_begin(rt, &region);
  if (rc != 0) return tarn_failed("tarn_region_begin", rc);
  *dst = NULL;
  int made = tarn_matrix_copy(src, dst);
  rc = tarn_region_wait(region, NULL);
  if (made != 0 || rc != 0)
    return tarn_failed("tarn_matrix_copy", made != 0 ? made : rc);
  return 0;
}

/* One tarn sample of `op`: its result goes to *keep (or is destroyed after
 * the clock when keep is NULL). */
static int tarn_sample(struct ctx *c, int op, double *t, tarn_matrix **keep) {
  tarn_matrix *work = NULL, *out = NULL;
  int rc = 0, info = 0;
  if (op == OP_CHOL || op == OP_LU || op == OP_QR || op == OP_SOLVE) {
    if (fresh_copy(c->rt, op == OP_CHOL ? c->t_spd : c->t_rnd, &work) != 0)
      return 1;
    if (op == OP_SOLVE && fresh_copy(c->rt, c->t_vec, &out) != 0) {
      tarn_matrix_destroy(work);
      return 1;
    }
  }
  if ((op == OP_POTRS || op == OP_GETRS || op == OP_TRTRS) &&
      fresh_copy(c->rt, c->t_vec, &out))
    return 1;
  /* the inverses overwrite a copy of the factors */
  if ((op == OP_POTRI || op == OP_GETRI) &&
      fresh_copy(c->rt, op == OP_POTRI ? c->t_l : c->t_lu, &out))
    return 1;
  /* the products write an output made before the clock (beta 0: not
   * read), as LAPACKE's write its buffer: the same work on both sides */
  if ((op == OP_MATMUL || op == OP_MATVEC) &&
      fresh_copy(c->rt, op == OP_MATMUL ? c->t_rnd : c->t_vec, &out))
    return 1;
  tarn_matrix *tq = NULL; /* qr's T factors, destroyed after the clock */
  uint64_t t0 = bench_now_ns();
  if (op == OP_CHOL) {
    rc = tarn_matrix_cholesky(work, &info);
  } else if (op == OP_QR) {
    rc = tarn_matrix_qr(work, 0, &tq);
  } else if (op == OP_LU) {
    rc = tarn_matrix_lu(work, c->piv, &info);
  } else if (op == OP_SOLVE) {
    rc = tarn_matrix_solve(work, out, &info);
  } else if (op == OP_POTRS) {
    rc = tarn_matrix_cholesky_solve(c->t_l, out, &info);
  } else if (op == OP_TRTRS) {
    rc = tarn_matrix_triangular_solve(c->t_l, TARN_LOWER, TARN_NO_TRANS,
                                      TARN_NON_UNIT, out, &info);
  } else if (op == OP_GETRS) {
    rc = tarn_matrix_lu_solve(c->t_lu, c->t_lu_piv, TARN_NO_TRANS, out, &info);
  } else if (op == OP_GECON) {
    rc = tarn_matrix_lu_rcond(c->t_lu, c->t_lu_piv, TARN_NORM_ONE, c->rnd_norm1,
                              &c->rcond[0]);
  } else if (op == OP_POTRI) {
    rc = tarn_matrix_cholesky_inverse(out, &info);
  } else if (op == OP_GETRI) {
    rc = tarn_matrix_lu_inverse(out, c->t_lu_piv, &info);
  } else if (op == OP_GEQRS) {
    rc = tarn_matrix_qr_solve(c->t_qr, c->t_qr_t, TARN_NO_TRANS, c->t_vec, &out,
                              &info);
  } else {
    tarn_region *region;
    rc = tarn_region_begin(c->rt, &region);
    if (rc == 0) {
      int submitted;
      if (op == OP_SYRK) {
        submitted = tarn_matrix_syrk_ata(c->t_rnd, &out);
      } else if (op == OP_MATMUL) {
        submitted = tarn_matrix_gemm(c->t_rnd, TARN_NO_TRANS, c->t_rnd,
                                     TARN_NO_TRANS, 1.0, 0.0, &out);
      } else {
        submitted =
            tarn_matrix_gemv(c->t_rnd, TARN_NO_TRANS, c->t_vec, 1.0, 0.0, &out);
      }
      rc = tarn_region_wait(region, NULL);
      if (submitted != 0) rc = submitted;
    }
  }
  *t = (double)(bench_now_ns() - t0) * 1e-9;
  tarn_matrix_destroy(tq);
  tarn_matrix *result =
      op == OP_CHOL || op == OP_LU || op == OP_QR ? work : out;
  tarn_matrix_destroy(result == work ? out : work);
  if (rc != 0) {
    tarn_matrix_destroy(result);
    return op == OP_LU || op == OP_SOLVE ? linalg_lu_failed(c->n, c->b, rc)
                                         : tarn_failed(ops[op].name, rc);
  }
  if (keep != NULL)
    *keep = result;
  else
    tarn_matrix_destroy(result);
  return 0;
}

/* The lower triangle of the n x n w copied into its upper. */
static void mirror_lower(double *w, size_t n) {
  for (size_t j = 0; j < n; j++)
    for (size_t i = j + 1; i < n; i++) w[j + i * n] = w[i + j * n];
}

/* One LAPACKE sample with `threads` OpenBLAS threads (set to 1 again
 * afterwards, as tarn wants it); the result stays in c->w or c->wv (qr's
 * tau goes to c->wv). */
static int lapacke_sample(struct ctx *c, int op, int threads, double *t) {
  int n = (int)c->n, info = 0;
  size_t bytes = c->n * c->n * sizeof(double);
  if (op == OP_CHOL) memcpy(c->w, c->spd, bytes);
  if (op == OP_LU || op == OP_QR || op == OP_SOLVE) memcpy(c->w, c->rnd, bytes);
  if (op == OP_POTRI) memcpy(c->w, c->l_fac, bytes);
  if (op == OP_GETRI) memcpy(c->w, c->lu_fac, bytes);
  if (op == OP_SOLVE || op == OP_POTRS || op == OP_GETRS || op == OP_GEQRS ||
      op == OP_TRTRS)
    memcpy(c->wv, c->vec, c->n * sizeof(double));
  openblas_set_num_threads(threads);
  uint64_t t0 = bench_now_ns();
  switch (op) {
    case OP_CHOL:
      info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, c->w, n);
      break;
    case OP_LU:
      info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, c->w, n, c->ipiv);
      break;
    case OP_MATMUL:
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0,
                  c->rnd, n, c->rnd, n, 0.0, c->w, n);
      break;
    case OP_MATVEC:
      cblas_dgemv(CblasColMajor, CblasNoTrans, n, n, 1.0, c->rnd, n, c->vec, 1,
                  0.0, c->wv, 1);
      break;
    case OP_SOLVE:
      info = LAPACKE_dgesv(LAPACK_COL_MAJOR, n, 1, c->w, n, c->ipiv, c->wv, n);
      break;
    case OP_QR:
      info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, n, c->w, n, c->wv);
      break;
    case OP_POTRS:
      info = LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', n, 1, c->l_fac, n, c->wv, n);
      break;
    case OP_TRTRS:
      info = LAPACKE_dtrtrs(LAPACK_COL_MAJOR, 'L', 'N', 'N', n, 1, c->l_fac, n,
                            c->wv, n);
      break;
    case OP_GETRS:
      info = LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'N', n, 1, c->lu_fac, n,
                            c->lu_ipiv, c->wv, n);
      break;
    case OP_GECON:
      info = LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', n, c->lu_fac, n,
                            c->rnd_norm1, &c->rcond[1]);
      break;
    case OP_POTRI: /* then mirrored, as tarn's result is full */
      info = LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', n, c->w, n);
      mirror_lower(c->w, c->n);
      break;
    case OP_GETRI:
      info = LAPACKE_dgetri(LAPACK_COL_MAJOR, n, c->w, n, c->lu_ipiv);
      break;
    case OP_GEQRS: /* LAPACK's dgeqrs: Q^T b, then R x = Q^T b */
      info = LAPACKE_dormqr(LAPACK_COL_MAJOR, 'L', 'T', n, 1, n, c->qr_fac, n,
                            c->qr_tau, c->wv, n);
      if (info == 0)
        info = LAPACKE_dtrtrs(LAPACK_COL_MAJOR, 'U', 'N', 'N', n, 1, c->qr_fac,
                              n, c->wv, n);
      break;
    case OP_SYRK:
      /* C = A^T A, lower half; then mirrored, as tarn's result is full. */
      cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, n, n, 1.0, c->rnd, n,
                  0.0, c->w, n);
      mirror_lower(c->w, c->n);
      break;
    default:
      break;
  }
  bench_escape(c->w);
  bench_escape(c->wv);
  *t = (double)(bench_now_ns() - t0) * 1e-9;
  openblas_set_num_threads(1);
  if (info == 0) return 0;
  fprintf(stderr, "tarn bench: linalg: N=%zu LAPACKE %s: info %d\n", c->n,
          ops[op].name, info);
  return 1;
}

/* One sample of a tiled peer (OpenMP or StarPU); the result stays in the
 * tiles (ta for cholesky, tc for matmul). */
static int tiled_sample(struct ctx *c, int op, int v, double *t) {
  if (op == OP_CHOL) {
    linalg_tiles_from(&c->ta, c->spd);
    if (v == V_OMP) return linalg_omp_cholesky(&c->ta, t);
#ifdef TARN_BENCH_STARPU
    return linalg_starpu_cholesky(&c->ta, t);
#endif
  }
#ifdef TARN_BENCH_STARPU
  if (op == OP_MATMUL && v == V_STARPU) {
    linalg_tiles_from(&c->ta, c->rnd);
    return linalg_starpu_gemm(&c->ta, &c->ta, &c->tc, t);
  }
#endif
  fprintf(stderr, "tarn bench: linalg: no tiled peer for %s\n", ops[op].name);
  return 1;
}

static int sample(struct ctx *c, int op, int v, double *t) {
  switch (v) {
    case V_TARN:
      return tarn_sample(c, op, t, NULL);
    case V_LAPACKE1:
      return lapacke_sample(c, op, 1, t);
    case V_LAPACKEN:
      return lapacke_sample(c, op, c->cores, t);
    default:
      return tiled_sample(c, op, v, t);
  }
}

/* Whether `got` agrees with LAPACKE's `want` (column-major n x cols) in
 * every element of the part both compute (Cholesky: the lower triangle;
 * QR: R on and above the diagonal, in magnitude, as the signs of its rows
 * may differ), each within CHECK_TOL of the largest element of `want`
 * there (the rounding of a tiled order against LAPACKE's is relative to
 * the matrix, not to each element). Until 2026-12-05 five elements were
 * compared (QR's diagonal), and a wrong one elsewhere passed. Says which
 * differs when one does. */
static int check_buf(const struct ctx *c, int op, const char *who,
                     const double *got, const double *want, size_t cols) {
  size_t n = c->n;
  bool qr = op == OP_QR;
  double largest = 0;
  for (size_t j = 0; j < cols; j++)
    for (size_t i = op == OP_CHOL ? j : 0; i < (qr ? j + 1 : n); i++)
      largest = fmax(largest, fabs(want[i + j * n]));
  double tol = CHECK_TOL * (1 + largest);
  for (size_t j = 0; j < cols; j++)
    for (size_t i = op == OP_CHOL ? j : 0; i < (qr ? j + 1 : n); i++) {
      double g = got[i + j * n], w = want[i + j * n];
      if (fabs(qr ? fabs(g) - fabs(w) : g - w) <= tol) continue;
      fprintf(stderr,
              "tarn bench: linalg: N=%zu %s: element (%zu, %zu) is %.17g in "
              "%s, %.17g in LAPACKE\n",
              n, ops[op].name, i, j, g, who, w);
      return 1;
    }
  return 0;
}

/* Checks tarn's result `out` (and LU's pivots) against LAPACKE's
 * (check_buf). */
static int check_tarn(struct ctx *c, int op, tarn_matrix *out) {
  int vector = op == OP_MATVEC || op == OP_SOLVE || op == OP_POTRS ||
               op == OP_GETRS || op == OP_GEQRS || op == OP_TRTRS;
  if (op == OP_GECON) {
    if (bench_close(c->rcond[0], c->rcond[1], CHECK_TOL)) return 0;
    fprintf(stderr,
            "tarn bench: linalg: N=%zu %s: %.17g in tarn, %.17g in LAPACKE\n",
            c->n, ops[op].name, c->rcond[0], c->rcond[1]);
    return 1;
  }
  int rc = tarn_matrix_to_buffer(out, c->chk, c->n);
  if (rc != 0) return tarn_failed("tarn_matrix_to_buffer", rc);
  if (op == OP_LU)
    for (size_t i = 0; i < c->n; i++)
      if (c->piv[i] + 1 != (size_t)c->ipiv[i]) {
        fprintf(stderr,
                "tarn bench: linalg: N=%zu lu: pivot %zu is %zu in tarn, %d "
                "in LAPACKE (1-based)\n",
                c->n, i, c->piv[i] + 1, c->ipiv[i]);
        return 1;
      }
  return check_buf(c, op, "tarn", c->chk, vector ? c->wv : c->w,
                   vector ? 1 : c->n);
}

static int check_tiled(struct ctx *c, int op, int v) {
  linalg_tiles_to(op == OP_CHOL ? &c->ta : &c->tc, c->chk);
  return check_buf(c, op, v == V_OMP ? "openmp" : "starpu", c->chk, c->w, c->n);
}

/* The peers' threads; 0: bench_default_threads. */
static int peer_threads;

void linalg_peer_threads_set(int threads) { peer_threads = threads; }

int linalg_peer_threads(void) {
  return peer_threads > 0 ? peer_threads : (int)bench_default_threads();
}

static void row_name(char *buf, size_t size, const struct ctx *c, int op,
                     int v) {
  switch (v) {
    case V_TARN:
      snprintf(buf, size, "linalg/tarn/N=%zu (block %zu)/%s", c->n, c->b,
               ops[op].name);
      break;
    case V_LAPACKE1:
      snprintf(buf, size, "linalg/lapacke/N=%zu/%s (1 thread)", c->n,
               ops[op].name);
      break;
    case V_LAPACKEN:
      snprintf(buf, size, "linalg/lapacke/N=%zu/%s (%d thread%s)", c->n,
               ops[op].name, c->cores, c->cores == 1 ? "" : "s");
      break;
    default:
      snprintf(buf, size, "linalg/%s/N=%zu (block %zu)/%s (%d %s%s)",
               v == V_OMP ? "openmp" : "starpu", c->n, c->b, ops[op].name,
               LINALG_PEER_THREADS, v == V_OMP ? "thread" : "worker",
               LINALG_PEER_THREADS == 1 ? "" : "s");
      break;
  }
}

/* The rounds an operation's variants are measured in: each takes its
 * share of every variant's samples, the variants in turn, the second
 * round in the reverse order, so that a machine whose speed drifts from
 * minute to minute (2026-12-03: one-thread dgemm at 43 to 59 GFLOP/s,
 * tarn's N=4096 Cholesky at 274 ms in one run and 329 in the next) slows
 * them alike and their ratios hold. */
#define LINALG_ROUNDS 2

/* A sample at least this long needs no warm-up after the first round:
 * what a pause costs the first operation (cores slow to come back) is
 * microseconds. */
#define LINALG_LONG_SAMPLE_S 0.05

/* A row measured over rounds. */
struct row {
  int v;
  char name[160];
  size_t n;      /* samples so far */
  double wall_s; /* time spent sampling so far (bench_sample_more's) */
  double s[BENCH_SAMPLES_MAX];
};

/* Round `round` of `rounds` of row r: after a pause (BENCH_QUIESCE_BLAS_S:
 * OpenBLAS's threads spin after a multithreaded call; every variant gets
 * one, so that none finds the cores more rested than another), a warm-up
 * (see below), then samples up to the round's share of run->samples and
 * of run->row_min_s (bench_round_more). */
static int sample_round(const bench_run *run, struct ctx *c, int op,
                        struct row *r, int round, int rounds) {
  bench_quiesce(BENCH_QUIESCE_BLAS_S);
  /* Warm-up samples for BENCH_WARMUP_S at least (one at least), as in
   * the array and stencil suites: after the pause, the first few small
   * operations find idle cores slow to come back (N=256 matvec: 13 to
   * 30 us for the first five or ten, then 6.6). StarPU, started anew for
   * each of its rounds (measure_round), warms up in every round. */
  if (round == 0 || r->v == V_STARPU ||
      r->wall_s / (double)r->n < LINALG_LONG_SAMPLE_S) {
    double t;
    uint64_t warm_until = bench_warmup_until();
    do
      if (sample(c, op, r->v, &t) != 0) return 1;
    while (bench_now_ns() < warm_until);
  }
  while (bench_round_more(run, r->n, r->wall_s, round, rounds)) {
    uint64_t t0 = bench_now_ns();
    if (sample(c, op, r->v, &r->s[r->n]) != 0) return 1;
    r->n++;
    r->wall_s += (double)(bench_now_ns() - t0) * 1e-9;
  }
  return 0;
}

/* Starts StarPU for the work of variant v when v is StarPU (its workers
 * would otherwise compete with the other variants), and stops it after. */
static int peer_start(int v) {
#ifdef TARN_BENCH_STARPU
  if (v == V_STARPU) return linalg_starpu_open();
#endif
  (void)v;
  return 0;
}

static void peer_stop(int v) {
#ifdef TARN_BENCH_STARPU
  if (v == V_STARPU) linalg_starpu_close();
#endif
  (void)v;
}

/* sample_round, StarPU started for a StarPU row's round alone. */
static int measure_round(const bench_run *run, struct ctx *c, int op,
                         struct row *r, int round, int rounds) {
  if (peer_start(r->v) != 0) return 1;
  int rc = sample_round(run, c, op, r, round, rounds);
  peer_stop(r->v);
  return rc;
}

/* Reports row r and stores its median in *med. */
static int report_row(bench_run *run, const struct ctx *c, int op,
                      const struct row *r, double *med) {
  double m = bench_median(r->s, r->n);
  bench_extra extra[1] = {{"GFLOP_per_s", flops(op, c->n) / m * 1e-9}};
  size_t extras = flops(op, c->n) > 0 ? 1 : 0;
  if (bench_report(run, r->name, r->s, r->n, extra, extras) == NULL) return 1;
  *med = m;
  return 0;
}

/* Measures the wanted ones of `count` variants of `op` in `rounds` rounds
 * (above) and reports each row with its median in med[variant]. */
static int measure_rows(bench_run *run, struct ctx *c, int op,
                        const int *variants, size_t count, int rounds,
                        double *med) {
  static struct row rows[VARIANTS];
  size_t n = 0;
  for (size_t k = 0; k < count; k++) {
    struct row *r = &rows[n];
    r->v = variants[k];
    r->n = 0;
    r->wall_s = 0;
    row_name(r->name, sizeof r->name, c, op, r->v);
    if (bench_wanted(run, r->name)) n++;
  }
  for (int round = 0; round < rounds; round++)
    for (size_t k = 0; k < n; k++) {
      struct row *r = &rows[round % 2 == 0 ? k : n - 1 - k];
      if (measure_round(run, c, op, r, round, rounds) != 0) return 1;
    }
  for (size_t k = 0; k < n; k++)
    if (report_row(run, c, op, &rows[k], &med[rows[k].v]) != 0) return 1;
  return 0;
}

/* Whether any of the variants of `op` is wanted (--filter). */
static int op_wanted(bench_run *run, const struct ctx *c, int op,
                     const int *variants, size_t count) {
  for (size_t k = 0; k < count; k++) {
    char name[160];
    row_name(name, sizeof name, c, op, variants[k]);
    if (bench_wanted(run, name)) return 1;
  }
  return 0;
}

/* The tiled peer `v`'s checked sample (StarPU started for it alone). */
static int check_peer(struct ctx *c, int op, int v) {
  double t;
  if (peer_start(v) != 0) return 1;
  int bad = tiled_sample(c, op, v, &t) != 0 || check_tiled(c, op, v) != 0;
  peer_stop(v);
  return bad;
}

/* One operation at one size: a checked round, then the variants' samples
 * in rounds. */
static int measure_op(bench_run *run, struct ctx *c, int op, double *med) {
  int order[VARIANTS] = {V_TARN, V_LAPACKE1, V_LAPACKEN};
  size_t count = 3;
  if (ops[op].omp) order[count++] = V_OMP;
#ifdef TARN_BENCH_STARPU
  if (ops[op].starpu) order[count++] = V_STARPU;
#endif
  if (!op_wanted(run, c, op, order, count)) return 0;
  if (!ops[op].available) {
    char name[160];
    row_name(name, sizeof name, c, op, V_TARN);
    bench_note(run, name, "not available yet");
    return 0;
  }
  double t;
  tarn_matrix *out = NULL;
  if (tarn_sample(c, op, &t, &out) != 0) return 1;
  int bad = lapacke_sample(c, op, 1, &t) != 0 || check_tarn(c, op, out) != 0;
  tarn_matrix_destroy(out);
  if (bad) return 1;
  /* The tiled peers against the same LAPACKE result (c->w). */
  for (size_t k = 3; k < count; k++) {
    char name[160];
    row_name(name, sizeof name, c, op, order[k]);
    if (bench_wanted(run, name) && check_peer(c, op, order[k]) != 0) return 1;
  }
  return measure_rows(run, c, op, order, count, LINALG_ROUNDS, med);
}

static void ctx_free(struct ctx *c) {
  tarn_matrix_destroy(c->t_spd);
  tarn_matrix_destroy(c->t_rnd);
  tarn_matrix_destroy(c->t_vec);
  free(c->spd);
  free(c->rnd);
  free(c->vec);
  free(c->w);
  free(c->wv);
  free(c->chk);
  free(c->ipiv);
  free(c->piv);
  tarn_matrix_destroy(c->t_l);
  tarn_matrix_destroy(c->t_lu);
  free(c->l_fac);
  free(c->lu_fac);
  free(c->lu_ipiv);
  free(c->t_lu_piv);
  tarn_matrix_destroy(c->t_qr);
  tarn_matrix_destroy(c->t_qr_t);
  free(c->qr_fac);
  free(c->qr_tau);
  linalg_tiles_free(&c->ta);
  linalg_tiles_free(&c->tc);
}

/* A random m x n matrix into buf (column-major), through tarn, in tiles
 * of b x b (the values do not depend on them; one tile of the whole
 * matrix would not fit a --mem-limit below it). */
static int rand_buf(tarn_rt *rt, size_t m, size_t n, size_t b, uint64_t seed,
                    double *buf) {
  tarn_matrix *x = NULL;
  tarn_region *region;
  int rc = tarn_region_begin(rt, &region);
  if (rc != 0) return tarn_failed("tarn_region_begin", rc);
  int made = tarn_matrix_rand(rt, m, n, b, b, seed, &x);
  rc = tarn_region_wait(region, NULL);
  if (made == 0 && rc == 0) rc = tarn_matrix_to_buffer(x, buf, m);
  tarn_matrix_destroy(x);
  return made != 0 || rc != 0
             ? tarn_failed("tarn_matrix_rand", made != 0 ? made : rc)
             : 0;
}

static int ctx_open(struct ctx *c, tarn_rt *rt, size_t n) {
  memset(c, 0, sizeof *c);
  c->rt = rt;
  c->n = n;
  c->b = bench_tile_size(n);
  c->cores = linalg_peer_threads();
  size_t bytes = n * n * sizeof(double);
  c->spd = bench_buffer_alloc(bytes);
  c->rnd = bench_buffer_alloc(bytes);
  c->w = bench_buffer_alloc(bytes);
  c->chk = bench_buffer_alloc(bytes);
  c->vec = bench_buffer_alloc(n * sizeof(double));
  c->wv = bench_buffer_alloc(n * sizeof(double));
  c->ipiv = malloc(n * sizeof(int));
  c->piv = malloc(n * sizeof(size_t));
  if (c->spd == NULL || c->rnd == NULL || c->w == NULL || c->chk == NULL ||
      c->vec == NULL || c->wv == NULL || c->ipiv == NULL || c->piv == NULL) {
    fprintf(stderr, "tarn bench: linalg: out of memory for N=%zu\n", n);
    return 1;
  }
  if (linalg_tiles_alloc(&c->ta, n, c->b) != 0 ||
      linalg_tiles_alloc(&c->tc, n, c->b) != 0)
    return 1;
  if (rand_buf(rt, n, n, c->b, SPD_SEED, c->w) != 0 ||
      rand_buf(rt, n, n, c->b, RND_SEED, c->rnd) != 0 ||
      rand_buf(rt, n, 1, c->b, VEC_SEED, c->vec) != 0)
    return 1;
  /* spd = G G^T + N I, G in c->w. */
  int ni = (int)n;
  openblas_set_num_threads(c->cores);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, ni, ni, ni, 1.0, c->w,
              ni, c->w, ni, 0.0, c->spd, ni);
  openblas_set_num_threads(1);
  for (size_t i = 0; i < n; i++) c->spd[i + i * n] += (double)n;
  int rc = tarn_matrix_from_buffer(rt, n, n, c->b, c->b, c->spd, n, &c->t_spd);
  if (rc == 0)
    rc = tarn_matrix_from_buffer(rt, n, n, c->b, c->b, c->rnd, n, &c->t_rnd);
  if (rc == 0)
    rc = tarn_matrix_from_buffer(rt, n, 1, c->b, 1, c->vec, n, &c->t_vec);
  return rc == 0 ? 0 : tarn_failed("tarn_matrix_from_buffer", rc);
}

/* The factors of the solves with factors (struct ctx), once per size. */
static int factors_open(struct ctx *c) {
  size_t n = c->n, bytes = n * n * sizeof(double);
  int ni = (int)n;
  c->l_fac = bench_buffer_alloc(bytes);
  c->lu_fac = bench_buffer_alloc(bytes);
  c->lu_ipiv = malloc(n * sizeof(int));
  c->t_lu_piv = malloc(n * sizeof(size_t));
  c->qr_fac = bench_buffer_alloc(bytes);
  c->qr_tau = malloc(n * sizeof(double));
  if (c->l_fac == NULL || c->lu_fac == NULL || c->lu_ipiv == NULL ||
      c->t_lu_piv == NULL || c->qr_fac == NULL || c->qr_tau == NULL) {
    fprintf(stderr, "tarn bench: linalg: out of memory for N=%zu\n", n);
    return 1;
  }
  c->rnd_norm1 = LAPACKE_dlange(LAPACK_COL_MAJOR, '1', ni, ni, c->rnd, ni);
  memcpy(c->l_fac, c->spd, bytes);
  memcpy(c->lu_fac, c->rnd, bytes);
  memcpy(c->qr_fac, c->rnd, bytes);
  openblas_set_num_threads(c->cores);
  int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', ni, c->l_fac, ni);
  if (info == 0)
    info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, ni, ni, c->lu_fac, ni, c->lu_ipiv);
  if (info == 0)
    info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, ni, ni, c->qr_fac, ni, c->qr_tau);
  openblas_set_num_threads(1);
  if (info != 0) {
    fprintf(stderr, "tarn bench: linalg: N=%zu LAPACKE factors: info %d\n", n,
            info);
    return 1;
  }
  if (fresh_copy(c->rt, c->t_spd, &c->t_l) != 0 ||
      fresh_copy(c->rt, c->t_rnd, &c->t_lu) != 0 ||
      fresh_copy(c->rt, c->t_rnd, &c->t_qr) != 0)
    return 1;
  int rc = tarn_matrix_cholesky(c->t_l, NULL);
  if (rc != 0) return tarn_failed("tarn_matrix_cholesky", rc);
  rc = tarn_matrix_lu(c->t_lu, c->t_lu_piv, NULL);
  if (rc != 0) return linalg_lu_failed(c->n, c->b, rc);
  rc = tarn_matrix_qr(c->t_qr, 0, &c->t_qr_t);
  return rc == 0 ? 0 : tarn_failed("tarn_matrix_qr", rc);
}

static void goal(size_t n, int op, const char *label, double value,
                 const char *unit, int at_most, double limit) {
  bench_size_goal(n, ops[op].short_name, label, value, unit, at_most, limit);
}

/* The smaller of two medians that were measured (-1 when neither was). */
static double best(double a, double b) {
  if (a <= 0) return b;
  if (b <= 0) return a;
  return a < b ? a : b;
}

static double dagger_ms(size_t n, int op) {
  return bench_seed_ms(n, dagger_sizes, 2, &dagger_median_ms[0][0], OPS,
                       (size_t)op);
}

static void print_goals(const struct figures *f) {
  bench_goal_heading(
      "Goals (from the medians above; Dagger's from the seed table):");
  for (size_t s = 0; s < f->count; s++) {
    size_t n = f->n[s];
    for (int op = 0; op < OPS; op++) {
      const double *m = f->med[s][op];
      double lapacke = best(m[V_LAPACKE1], m[V_LAPACKEN]);
      if (n == 256 && ops[op].available)
        goal(n, op, "tarn / best lapacke", bench_ratio(m[V_TARN], lapacke), "x",
             1, 1.1);
      if (n == 1024 && ops[op].available) {
        if (ops[op].omp)
          goal(n, op, "openmp / tarn", bench_ratio(m[V_OMP], m[V_TARN]), "x", 0,
               1);
        goal(n, op, "best lapacke / tarn", bench_ratio(lapacke, m[V_TARN]), "x",
             0, 1);
      }
      if (n == 4096 && ops[op].available) {
        double peer = best(best(lapacke, m[V_OMP]), m[V_STARPU]);
        goal(n, op, "best peer / tarn", bench_ratio(peer, m[V_TARN]), "x", 0,
             1);
        if (op == OP_CHOL) {
          /* 2-core dgemm on 512 tiles: StarPU's tiled matmul of this run. */
          double gemm = f->med[s][OP_MATMUL][V_STARPU];
          double rate = bench_ratio(flops(OP_CHOL, n), m[V_TARN]);
          double ref = bench_ratio(flops(OP_MATMUL, n), gemm);
          goal(n, op, "GFLOP/s / starpu dgemm's", bench_ratio(rate, ref), "x",
               0, 0.85);
        }
      }
      double dagger = dagger_ms(n, op);
      if (dagger > 0)
        goal(n, op, "dagger (seed) / tarn",
             bench_ratio(dagger * 1e-3, m[V_TARN]), "x", 0, 2.5);
    }
  }
}

/* Whether any row at size n is wanted (--filter). */
static int size_wanted(bench_run *run, size_t n) {
  static const int all[] = {V_TARN, V_LAPACKE1, V_LAPACKEN, V_OMP, V_STARPU};
  struct ctx c = {
      .n = n, .b = bench_tile_size(n), .cores = LINALG_PEER_THREADS};
  for (int op = 0; op < OPS; op++)
    if (op_wanted(run, &c, op, all, VARIANTS)) return 1;
  return 0;
}

int bench_linalg(bench_run *run) {
  const size_t *sizes;
  size_t nsizes = bench_sizes(
      run, default_sizes, sizeof default_sizes / sizeof *default_sizes, &sizes);
  static struct figures f;
  memset(&f, 0, sizeof f);
  for (size_t s = 0; s < BENCH_SIZES_MAX; s++)
    for (int op = 0; op < OPS; op++)
      for (int v = 0; v < VARIANTS; v++) f.med[s][op][v] = -1;
  linalg_peer_threads_set((int)bench_threads(run));
  /* LAPACKE's calls scan their matrices for NaN first unless told not to
   * (LAPACKE_NANCHECK); tarn's do not, and a user timing LAPACK would not
   * time a scan: it was a third of dgetrs's time at N = 256 (34.9 us
   * against 9.2), 11 % of dpotrf's, and met goals it alone met. */
  LAPACKE_set_nancheck(0);
  tarn_rt *rt;
  if (bench_rt_open(run, "linalg", &rt) != 0) return 1;
  int failed = 0;
  for (size_t s = 0; s < nsizes && !failed; s++) {
    if (!size_wanted(run, sizes[s])) continue;
    struct ctx c;
    failed = ctx_open(&c, rt, sizes[s]);
    if (!failed) {
      static const int solves[] = {V_TARN, V_LAPACKE1, V_LAPACKEN};
      if (op_wanted(run, &c, OP_POTRS, solves, 3) ||
          op_wanted(run, &c, OP_GETRS, solves, 3) ||
          op_wanted(run, &c, OP_GEQRS, solves, 3) ||
          op_wanted(run, &c, OP_TRTRS, solves, 3) ||
          op_wanted(run, &c, OP_GECON, solves, 3) ||
          op_wanted(run, &c, OP_POTRI, solves, 3) ||
          op_wanted(run, &c, OP_GETRI, solves, 3))
        failed = factors_open(&c);
    }
    f.n[f.count] = sizes[s];
    for (int op = 0; op < OPS && !failed; op++)
      failed = measure_op(run, &c, op, f.med[f.count][op]);
    f.count++;
    ctx_free(&c);
  }
  size_t largest = 0;
  for (size_t s = 0; s < nsizes; s++)
    if (sizes[s] > largest) largest = sizes[s];
  if (!failed) failed = linalg_rect_rows(run, rt, largest);
  int rc = tarn_rt_destroy(rt);
  if (rc != 0 && !failed) failed = tarn_failed("tarn_rt_destroy", rc);
  print_goals(&f);
  return failed;
}
