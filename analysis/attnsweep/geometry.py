"""Geometry of token configurations, tested on its own against exact answers: convex hulls
in 2-D and 3-D, the left leading eigenvector, the spectral projector onto an invariant
subspace and the coordinates of pi_F z, and the leaders read off an attention matrix."""

from __future__ import annotations

import itertools
from typing import Any, Dict, List, Tuple

import numpy as np

def convex_hull_2d(points: Any) -> List[int]:
    """Indices of the vertices of the convex hull of points (m, 2), counter-clockwise, by
    Andrew's monotone chain; collinear boundary points are not vertices."""
    pts = np.asarray(points, dtype=float)
    m = len(pts)
    if m < 3:
        return list(range(m))
    order = sorted(range(m), key=lambda i: (pts[i, 0], pts[i, 1]))

    def cross(o, a, b):
        return (pts[a, 0] - pts[o, 0]) * (pts[b, 1] - pts[o, 1]) - \
            (pts[a, 1] - pts[o, 1]) * (pts[b, 0] - pts[o, 0])

    lower: List[int] = []
    upper: List[int] = []
    for i in order:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], i) <= 0:
            lower.pop()
        lower.append(i)
    for i in reversed(order):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], i) <= 0:
            upper.pop()
        upper.append(i)
    hull = lower[:-1] + upper[:-1]
    return hull if len(hull) >= 2 else order[:1]


def convex_hull_3d(points: Any, tol: float = 1e-9
                    ) -> Tuple[List[Tuple[int, int, int]], List[int]]:
    """Triangular faces (index triples) of the convex hull of points (m, 3): every triple whose
    plane leaves all points on one side (brute force, vectorised; meant for the paper's small
    n). Coplanar facets come back as several triangles. Returns (faces, vertex indices)."""
    pts = np.asarray(points, dtype=float)
    m = len(pts)
    if m < 4:
        return [], list(range(m))
    scale = max(np.ptp(pts, axis=0).max(), 1e-300)
    tri = np.array(list(itertools.combinations(range(m), 3)))
    a, b, c = pts[tri[:, 0]], pts[tri[:, 1]], pts[tri[:, 2]]
    nrm = np.cross(b - a, c - a)
    keep = np.linalg.norm(nrm, axis=1) > tol * scale * scale
    tri, a, nrm = tri[keep], a[keep], nrm[keep]
    faces: List[Tuple[int, int, int]] = []
    step = max(1, 2_000_000 // max(m, 1))
    for s in range(0, len(tri), step):
        # side[t, j] = n_t . (p_j - a_t): the signed distance (times |n_t|) of point j
        side = np.einsum("tk,tmk->tm", nrm[s:s + step], pts[None, :, :] - a[s:s + step, None, :])
        lim = tol * scale * np.linalg.norm(nrm[s:s + step], axis=1)[:, None]
        ok = np.all(side <= lim, axis=1) | np.all(side >= -lim, axis=1)
        faces.extend((int(t[0]), int(t[1]), int(t[2])) for t in tri[s:s + step][ok])
    verts = sorted({i for f in faces for i in f})
    return faces, verts


def left_leading_eigvec(V: Any) -> Tuple[Any, np.ndarray, np.ndarray]:
    """(lambda_1, l_1, phi_1): the eigenvalue of V of largest modulus (taken real), the left
    eigenvector l_1 (V^T l_1 = lambda_1 l_1) and the right one phi_1 (|phi_1| = 1) scaled so
    that l_1^T phi_1 = 1, as docs/theory.md section 2.5 defines them."""
    V = np.asarray(V, dtype=float)
    w, R = np.linalg.eig(V)
    k = int(np.argmax(np.abs(w)))
    phi = np.real(R[:, k])
    phi /= np.linalg.norm(phi)
    wl, L = np.linalg.eig(V.T)
    kl = int(np.argmin(np.abs(wl - w[k])))
    l1 = np.real(L[:, kl])
    l1 = l1 / float(l1 @ phi)
    return float(np.real(w[k])), l1, phi


def spectral_projector(V: Any, k: int) -> Dict[str, Any]:
    """The spectral projector pi_F of V onto the invariant subspace F of its k eigenvalues of
    largest real part, along the invariant subspace G of the others (theory.md section 2: the
    observable of Thm 5.1 and of the codimension conjecture; oblique unless V is normal).
    Returns a dict: 'Pi' (d, d) real with Pi^2 = Pi, 'B' (d, k) an orthonormal basis of F (the
    coordinates of pi_F z in F are B^T Pi z), 'w' the k eigenvalues, 'R_F', 'L_F' (right
    eigenvectors of F as columns, the matching rows of the inverse eigenvector matrix, so
    Pi = R_F L_F and pi_F e^{-tV} = R_F diag(e^{-t w}) L_F), 'cond' (condition number of the
    eigenvector matrix: large means the projector is unreliable). ValueError when k splits a
    complex-conjugate pair."""
    V = np.asarray(V, dtype=float)
    d = V.shape[0]
    if not 1 <= k <= d:
        raise ValueError("dim F = %d is not in 1..%d" % (k, d))
    w, R = np.linalg.eig(V)
    order = np.argsort(-w.real, kind="stable")
    S = order[:k]
    if k < d and abs(w[order[k - 1]].real - w[order[k]].real) <= 1e-12 * max(1, abs(w).max()) \
            and abs(w[order[k - 1]].imag) > 0:
        raise ValueError("dim F = %d splits a complex-conjugate pair of eigenvalues" % k)
    L = np.linalg.inv(R)
    Pi = R[:, S] @ L[S, :]
    if np.abs(Pi.imag).max() > 1e-8 * max(1.0, np.abs(Pi.real).max()):
        raise ValueError("the projector onto the top %d eigenvalues is not real" % k)
    # an orthonormal basis of F: QR of a real basis of span(R_F), each column signed so that
    # its largest entry is positive (F = span(e_1, e_2) gives e_1, e_2)
    real = []
    for j in S:
        v = R[:, j]
        real.append(v.real if np.abs(v.real).max() >= np.abs(v.imag).max() else v.imag)
    Q, _ = np.linalg.qr(np.array(real).T)
    for c in range(Q.shape[1]):
        if Q[np.argmax(np.abs(Q[:, c])), c] < 0:
            Q[:, c] = -Q[:, c]
    return {"Pi": Pi.real, "B": Q, "w": w[S], "R_F": R[:, S], "L_F": L[S, :],
            "cond": float(np.linalg.cond(R))}


def observable_coords(proj: Dict[str, Any], X: Any, t: float = 0.0) -> np.ndarray:
    """Coordinates in F (basis proj['B']) of pi_F z for tokens X (n, d): X are rescaled tokens
    z when t = 0, original tokens x at time t otherwise (pi_F z = pi_F e^{-tV} x =
    R_F diag(e^{-t w}) L_F x). Returns (n, k)."""
    X = np.asarray(X, dtype=float)
    if t == 0.0:
        Y = X @ proj["Pi"].T
    else:
        E = proj["R_F"] @ np.diag(np.exp(-t * proj["w"])) @ proj["L_F"]
        Y = np.real(X @ E.T)
    return Y @ proj["B"]


def leaders_from_p(P: Any, threshold: float = 0.9) -> List[int]:
    """Tokens that receive a whole row of P: columns j with P_ij >= threshold for some i."""
    P = np.asarray(P, dtype=float)
    return sorted(int(j) for j in np.nonzero(P.max(axis=0) >= threshold)[0])


