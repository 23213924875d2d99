"""Profiled (RE)ML criterion of a linear mixed model with blocked random effects, as lme4 computes it.

Model (n observations, p fixed effects, K random-effects terms; term k has a grouping factor with
q_k levels and r_k columns, e.g. r_k = 2 for ``(1 + x | g)``)::

    y = X beta + Z b + e,    b = Lambda u,    u ~ N(0, sigma^2 I_q),    e ~ N(0, sigma^2 I_n)

with q = sum_k q_k r_k, Z = [Z_1 ... Z_K] (Z_k has a column per (level, coefficient)) and
Lambda = blockdiag_k(I_{q_k} (x) T_k), T_k the lower-triangular (r_k, r_k) relative Cholesky factor
of term k's covariance: Cov(b_k level) = sigma^2 T_k T_k'. theta stacks each T_k's lower triangle in
column-major order (lme4's order within a term). Following Bates, Maechler, Bolker & Walker (2015,
"Fitting linear mixed-effects models using lme4", J. Stat. Softw. 67(1), sections 3.2-3.4),
beta and sigma are profiled out; with the (q+p) system matrix

    A(theta) = [[Lambda'Z'Z Lambda + I, Lambda'Z'X], [X'Z Lambda, X'X]]

the criteria are (r2 = penalised residual sum of squares at the conditional optimum)::

    ML:   log det(Lambda'Z'Z Lambda + I) + n (1 + log(2 pi r2 / n))
    REML: log det(A)                     + (n - p) (1 + log(2 pi r2 / (n - p)))

Structure used: each term's own block Z_k'Z_k is block diagonal (q_k blocks of r_k x r_k), because
each observation belongs to one level. The term with the most columns ("eliminated" term, index
``e``) is removed exactly by block elimination; only the dense Schur complement S of size
m = (q - q_e r_e) + p is Cholesky-factorised. With C0 = Lambda_e' Z_e'[Z_rest X] and
D = Lambda_e' Z_e'Z_e Lambda_e + I (block diagonal), S = Lambda~_v' S0 Lambda~_v + diag(I, 0) where
S0 = [Z_rest X]'[Z_rest X] - C0' D^-1 C0 is formed with one symmetric rank-k product. Everything is computed
from cross-products formed once (O(n) work), so an evaluation costs O(q_e r_e m^2 + m^3), independent of n.

Derivatives (used by the optimiser and by the Satterthwaite approximation):

* d log det(A) / d theta_j = 2 tr(A^-1 Lambda~' G Lambda~_j), G = [Z X]'[Z X], Lambda~ = blockdiag(Lambda, I_p),
  Lambda~_j = d Lambda~ / d theta_j; only level-diagonal (r_k, r_k) blocks of A^-1 Lambda~' G are needed.
* d r2 / d theta_j = -2 (Z' res)' Lambda_j u (envelope theorem: u, beta minimise the penalised RSS).
* d (A^-1)_{beta beta} / d theta_j = -W' dA_j W with W = A^-1[:, beta].

For ML the log-determinant terms use the u-only system, whose Schur complement is the leading
(q - q_e r_e) block of S.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg.lapack
import scipy.sparse as sp

_potrf = scipy.linalg.lapack.dpotrf
_potri = scipy.linalg.lapack.dpotri
_potrs = scipy.linalg.lapack.dpotrs


@dataclass(frozen=True)
class TermLayout:
    """Where one random-effects term lives.

    Attributes:
        q: number of levels of the grouping factor.
        r: number of coefficients per level (columns of the term's Z).
        offset: first column of the term inside the non-eliminated random effects (-1 for the
            eliminated term).
        theta_start: index of the term's first theta element; it has r (r + 1) / 2 of them.
        lower: (rows, cols) of the lower triangle of T in column-major order (lme4's theta order).
    """

    q: int
    r: int
    offset: int
    theta_start: int
    lower: tuple[np.ndarray, np.ndarray]

    @property
    def n_theta(self) -> int:
        return self.r * (self.r + 1) // 2

    @property
    def width(self) -> int:
        return self.q * self.r


def lower_indices(r: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of an (r, r) lower triangle in column-major order: (0,0), (1,0), ..., (r-1,r-1)."""
    rows = [i for j in range(r) for i in range(j, r)]
    cols = [j for j in range(r) for i in range(j, r)]
    return np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp)


def _term_matrix(codes: np.ndarray, q: int, Zk: np.ndarray) -> sp.csr_matrix:
    """Sparse (n, q r) design of one term: row i has Zk[i, :] in the columns of level codes[i]."""
    n, r = Zk.shape
    cols = (codes[:, None] * r + np.arange(r)[None, :]).ravel()
    rows = np.repeat(np.arange(n), r)
    return sp.csr_matrix((Zk.ravel(), (rows, cols)), shape=(n, q * r))


@dataclass
class Evaluation:
    """One evaluation of the profiled criterion (scaled data; see :class:`ProfiledLmm`).

    Attributes:
        f: profiled criterion (REML criterion or ML deviance).
        logdet: log det(A) (REML) or log det(Lambda'Z'Z Lambda + I) (ML).
        r2: penalised residual sum of squares.
        beta: (p,) conditional estimate of the fixed effects.
        ainv_beta: (p, p) (A^-1)_{beta beta} = (R_X'R_X)^-1 (vcov(beta) / sigma^2).
        u: list of (q_k, r_k) spherical conditional modes per term (model term order).
        dlogdet, dr2: (n_theta,) gradients of logdet and r2 (None unless requested).
        dainv_beta: (n_theta, p, p) derivatives of ainv_beta (None unless requested).
    """

    f: float
    logdet: float
    r2: float
    beta: np.ndarray
    ainv_beta: np.ndarray
    u: list[np.ndarray]
    dlogdet: np.ndarray | None = None
    dr2: np.ndarray | None = None
    dainv_beta: np.ndarray | None = None

    def grad(self, nu: float) -> np.ndarray:
        """(n_theta,) gradient of f = logdet + nu (1 + log(2 pi r2 / nu))."""
        if self.dlogdet is None or self.dr2 is None:
            raise TypeError("Evaluation.grad: the gradients were not requested (evaluate with grad=True)")
        return self.dlogdet + nu * self.dr2 / self.r2


class ProfiledLmm:
    """Cross-products of one LMM and the profiled criterion with its derivatives.

    Args:
        y: (n,) response (the caller centres/scales it; the criterion is scale-equivariant).
        X: (n, p) full-rank fixed-effects design.
        codes: per term, (n,) integer level codes 0..q_k-1 (every level used).
        n_levels: per term, q_k.
        Zs: per term, (n, r_k) term columns (ones for an intercept; [ones, x] for a slope).
    """

    def __init__(
        self, y: np.ndarray, X: np.ndarray, codes: list[np.ndarray], n_levels: list[int], Zs: list[np.ndarray]
    ) -> None:
        n, p = X.shape
        self.n, self.p = n, p
        K = len(codes)
        widths = [q * Z.shape[1] for q, Z in zip(n_levels, Zs)]
        self.elim = int(np.argmax(widths))
        rest = [k for k in range(K) if k != self.elim]
        layouts: list[TermLayout | None] = [None] * K
        theta_start, offset = 0, 0
        offsets = {}
        for k in rest:
            offsets[k] = offset
            offset += widths[k]
        for k in range(K):
            r = Zs[k].shape[1]
            layouts[k] = TermLayout(
                q=n_levels[k], r=r, offset=offsets.get(k, -1), theta_start=theta_start, lower=lower_indices(r)
            )
            theta_start += r * (r + 1) // 2
        self.terms: list[TermLayout] = layouts  # type: ignore[assignment]
        self.rest = rest
        self.n_theta = theta_start
        self.qr = offset  # columns of the non-eliminated random effects
        self.m = offset + p  # size of the Schur complement
        e = self.terms[self.elim]
        Z1 = _term_matrix(codes[self.elim], e.q, Zs[self.elim])
        Zr = (
            sp.hstack([_term_matrix(codes[k], n_levels[k], Zs[k]) for k in rest], format="csr")
            if rest
            else sp.csr_matrix((n, 0))
        )
        Z1t = Z1.T.tocsr()
        Zrt = Zr.T.tocsr()
        # Block-diagonal Z1'Z1 as (q1, r1, r1).
        Ze, ce = Zs[self.elim], codes[self.elim]
        N1 = np.empty((e.q, e.r, e.r))
        for a in range(e.r):  # r1 <= a handful: loops over coefficients, not rows
            for b in range(a, e.r):
                N1[:, a, b] = N1[:, b, a] = np.bincount(ce, weights=Ze[:, a] * Ze[:, b], minlength=e.q)
        self.N1 = N1
        G1v = np.hstack([(Z1t @ Zr).toarray(), Z1t @ X])  # (q1 r1, m)
        self.G1v = G1v.reshape(e.q, e.r, self.m)
        qr = self.qr
        # G1v is sparse (a level of the eliminated term meets few levels of the others): kept as CSR for the
        # gradient's (G1v Sig G1v')_ll when r1 = 1, and its u part transposed for Z_rest' res.
        self.G1s = sp.csr_matrix(G1v) if e.r == 1 else None
        self.G1s_u = self.G1s[:, :qr].tocsr() if self.G1s is not None else None
        self.G1v_ut = np.ascontiguousarray(G1v[:, :qr].T)  # (qr, q1 r1)
        Gvv = np.empty((self.m, self.m))
        Gvv[:qr, :qr] = (Zrt @ Zr).toarray()
        ZrX = Zrt @ X
        Gvv[:qr, qr:] = ZrX
        Gvv[qr:, :qr] = ZrX.T
        Gvv[qr:, qr:] = X.T @ X
        self.Gvv = Gvv
        self.Z1y = (Z1t @ y).reshape(e.q, e.r)
        self.Zvy = np.concatenate([Zrt @ y, X.T @ y])
        self.yty = float(y @ y)

    # --- theta -> per-term factors ------------------------------------------------------------

    def factors(self, theta: np.ndarray) -> list[np.ndarray]:
        """Per term, the (r_k, r_k) lower-triangular relative factor T_k."""
        out = []
        for t in self.terms:
            T = np.zeros((t.r, t.r))
            T[t.lower] = theta[t.theta_start : t.theta_start + t.n_theta]
            out.append(T)
        return out

    def _scale_v_rows(self, Ts: list[np.ndarray], M: np.ndarray) -> np.ndarray:
        """Lambda~_v' M for M (m, c): each rest term's row blocks multiplied by T_k' per level."""
        out = M.copy()
        for k in self.rest:
            t, T = self.terms[k], Ts[k]
            blk = slice(t.offset, t.offset + t.width)
            if t.r == 1:
                out[blk] *= T[0, 0]
            else:
                out[blk] = np.matmul(T.T, M[blk].reshape(t.q, t.r, -1)).reshape(t.width, -1)
        return out

    def _scale_v_cols(self, Ts: list[np.ndarray], M: np.ndarray) -> np.ndarray:
        """M Lambda~_v for M (c, m): each rest term's column blocks multiplied by T_k per level."""
        out = M.copy()
        for k in self.rest:
            t, T = self.terms[k], Ts[k]
            blk = slice(t.offset, t.offset + t.width)
            if t.r == 1:
                out[:, blk] *= T[0, 0]
            else:
                out[:, blk] = (M[:, blk].reshape(-1, t.q, t.r) @ T).reshape(-1, t.width)
        return out

    def _scale_v_vec(self, Ts: list[np.ndarray], x: np.ndarray) -> np.ndarray:
        """Lambda~_v x for x (m,) or (m, c)."""
        out = x.copy()
        for k in self.rest:
            t, T = self.terms[k], Ts[k]
            blk = slice(t.offset, t.offset + t.width)
            if t.r == 1:
                out[blk] = x[blk] * T[0, 0]
            else:
                shaped = x[blk].reshape(t.q, t.r, -1)  # batched T @ x_level: BLAS, not einsum
                out[blk] = np.matmul(T, shaped).reshape(out[blk].shape)
        return out

    # --- the criterion ----------------------------------------------------------------------

    def _eliminated_block(self, T1: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, np.ndarray]:
        """Pieces of the eliminated term at T1.

        Returns (C0, Dinv, log det D, F0, G0): C0 = Lambda_1' G1v (q1, r1, m); D = T1' N1 T1 + I per
        level, Dinv (q1, r1, r1); F0 = D^-1 C0; G0 = chol(D)^-1 C0 as (q1 r1, m), so G0'G0 = C0' D^-1 C0.
        """
        e = self.terms[self.elim]
        q1, r1, m = e.q, e.r, self.m
        if r1 == 1:
            t1 = T1[0, 0]
            C0 = t1 * self.G1v
            Dd = t1 * t1 * self.N1[:, 0, 0] + 1.0
            dinv = 1.0 / Dd
            G0 = C0[:, 0, :] * np.sqrt(dinv)[:, None]
            return C0, dinv[:, None, None], float(np.log(Dd).sum()), C0 * dinv[:, None, None], G0
        C0 = np.matmul(T1.T, self.G1v)
        D = T1.T @ self.N1 @ T1 + np.eye(r1)
        Lc = np.linalg.cholesky(D)
        Lci = np.linalg.inv(Lc)
        Dinv = np.swapaxes(Lci, 1, 2) @ Lci
        logdet_D = 2.0 * float(np.log(np.diagonal(Lc, axis1=1, axis2=2)).sum())
        return C0, Dinv, logdet_D, Dinv @ C0, (Lci @ C0).reshape(q1 * r1, m)

    def evaluate(self, theta: np.ndarray, reml: bool, grad: bool = False, vcov_jac: bool = False) -> Evaluation:
        """Profiled criterion at ``theta`` (n_theta,), optionally with derivatives.

        With C0 = Lambda_1' G1v, the Schur complement is S = Lambda~_v' S0 Lambda~_v + diag(I_qr, 0),
        S0 = Gvv - C0' D^-1 C0 (S0 does not involve Lambda_v, and its columns also give the
        rest-term gradient blocks). Raises np.linalg.LinAlgError when S is not positive definite
        or r2 <= 0.
        """
        theta = np.asarray(theta, dtype=float)
        Ts = self.factors(theta)
        e = self.terms[self.elim]
        q1, r1, qr, p = e.q, e.r, self.qr, self.p
        T1 = Ts[self.elim]
        C0, Dinv, logdet_D, F0, G0 = self._eliminated_block(T1)
        S0 = self.Gvv - G0.T @ G0
        S = self._scale_v_rows(Ts, self._scale_v_cols(Ts, S0))
        S[np.arange(qr), np.arange(qr)] += 1.0
        L, info = _potrf(S, lower=1, clean=1)
        if info != 0:
            raise np.linalg.LinAlgError("Schur complement is not positive definite")
        logdiag = np.log(np.diag(L))
        c1 = np.einsum("ba,lb->la", T1, self.Z1y) if r1 > 1 else T1[0, 0] * self.Z1y
        c1f = c1.ravel()
        F02 = F0.reshape(q1 * r1, -1)
        cv = self._scale_v_vec_t(Ts, self.Zvy)
        rhs = self._scale_v_vec_t(Ts, self.Zvy - F02.T @ c1f)
        xv, info = _potrs(L, rhs, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError("triangular solve failed")
        wv = self._scale_v_vec(Ts, xv)  # Lambda~_v x_v = [b_rest; beta]
        u1 = (Dinv @ c1[:, :, None])[:, :, 0] - (F02 @ wv).reshape(q1, r1)
        r2 = self.yty - float(c1f @ u1.ravel()) - float(cv @ xv)
        if not r2 > 0:
            raise np.linalg.LinAlgError("non-positive penalised residual sum of squares")
        if reml:
            logdet = logdet_D + 2.0 * float(logdiag.sum())
            nu = self.n - p
        else:
            logdet = logdet_D + 2.0 * float(logdiag[:qr].sum())
            nu = self.n
        f = logdet + nu * (1.0 + np.log(2.0 * np.pi * r2 / nu))
        Sinv = _cho_inverse(L)
        # every term is either the eliminated one or in self.rest
        u = [
            u1 if k == self.elim else xv[t.offset : t.offset + t.width].reshape(t.q, t.r)
            for k, t in enumerate(self.terms)
        ]
        ev = Evaluation(f=float(f), logdet=logdet, r2=r2, beta=xv[qr:].copy(), ainv_beta=Sinv[qr:, qr:].copy(), u=u)
        if grad:
            ev.dlogdet, ev.dr2 = self._gradients(Ts, reml, L, Sinv, S0, F0, Dinv, u, wv)
        if vcov_jac:
            ev.dainv_beta = self._dainv_beta(Ts, Sinv, F02)
        return ev

    def _scale_v_vec_t(self, Ts: list[np.ndarray], x: np.ndarray) -> np.ndarray:
        """Lambda~_v' x for x (m,)."""
        return self._scale_v_rows(Ts, x[:, None])[:, 0]

    def _gradients(self, Ts, reml, L, Sinv, S0, F0, Dinv, u, wv) -> tuple[np.ndarray, np.ndarray]:
        """(d logdet / d theta, d r2 / d theta), both (n_theta,). See the module docstring.

        Level-diagonal blocks of A^-1 Lambda~' G: for the eliminated term
        D^-1 T1' N1 + F0 Sig E0' with Sig = Lambda~_v S^-1 Lambda~_v' and E0 = N1 T1 F0 - G1v;
        for a rest term the rows of S^-1 (Lambda~_v' S0[:, :qr]) and its columns.
        (For ML, S^-1 is the inverse of the leading qr block of S, and only u columns enter.)
        """
        e = self.terms[self.elim]
        q1, r1, qr = e.q, e.r, self.qr
        T1 = Ts[self.elim]
        kd = self.m if reml else qr
        Sk = Sinv if reml else (_cho_inverse(np.ascontiguousarray(L[:qr, :qr])) if qr else np.zeros((0, 0)))
        NT = self.N1 @ T1  # (q1, r1, r1)
        Sig = self._scale_v_vec(Ts, self._scale_v_vec(Ts, Sk).T)  # Lambda Sk Lambda' (symmetric)
        if r1 == 1:
            # F0 = t1 d G1v and E0 = (t1^2 n d - 1) G1v = -d G1v per level: F0 Sig E0' = -t1 d^2 (G1v Sig G1v')_ll
            G = self.G1s if reml else self.G1s_u
            assert G is not None
            gsg = np.asarray(G.multiply(G @ Sig).sum(axis=1)).ravel()
            d, t1 = Dinv[:, 0, 0], T1[0, 0]
            K1 = (d * NT[:, 0, 0] - t1 * d * d * gsg)[:, None, None]
        else:
            E0 = NT @ F0[:, :, :kd] - self.G1v[:, :, :kd]
            FS = (F0[:, :, :kd].reshape(q1 * r1, kd) @ Sig).reshape(q1, r1, kd)
            K1 = Dinv @ np.swapaxes(NT, 1, 2) + FS @ np.swapaxes(E0, 1, 2)
        blocks: dict[int, np.ndarray] = {self.elim: K1}
        if qr:
            Tall = self._scale_v_rows(Ts, S0[:, :qr])[:kd]
            for k in self.rest:
                t = self.terms[k]
                blk = slice(t.offset, t.offset + t.width)
                if t.r == 1:
                    blocks[k] = np.einsum("li,il->l", Sk[blk], Tall[:, blk])[:, None, None]
                else:
                    Srows = Sk[blk].reshape(t.q, t.r, kd)
                    Tcols = Tall[:, blk].reshape(kd, t.q, t.r).transpose(1, 0, 2)
                    blocks[k] = np.matmul(Srows, Tcols)  # (q, r, r), per level sum over kd
        # Z' res per term, for d r2.
        b1 = u[self.elim] @ T1.T  # (q1, r1) b = T1 u per level
        z1r = self.Z1y - np.einsum("lab,lb->la", self.N1, b1) - self.G1v @ wv
        zr = {self.elim: z1r}
        if qr:
            zrr = self.Zvy[:qr] - self.G1v_ut @ b1.ravel() - self.Gvv[:qr] @ wv
            for k in self.rest:
                t = self.terms[k]
                zr[k] = zrr[t.offset : t.offset + t.width].reshape(t.q, t.r)
        dlog = np.empty(self.n_theta)
        dr2 = np.empty(self.n_theta)
        for k, t in enumerate(self.terms):
            rows, cols = t.lower
            Kb = blocks[k]
            for i, (a, b) in enumerate(zip(rows, cols)):
                j = t.theta_start + i
                dlog[j] = 2.0 * float(Kb[:, b, a].sum())
                dr2[j] = -2.0 * float(zr[k][:, a] @ u[k][:, b])
        return dlog, dr2

    def _dainv_beta(self, Ts, Sinv, F02) -> np.ndarray:
        """(n_theta, p, p) derivatives of (A^-1)_{beta beta}: -(M_j + M_j'), M_j = Y' Lambda~_j W.

        W = A^-1[:, beta] (W_v = S^-1[:, beta], W_1 = -F0 Lambda~_v W_v), Y = G Lambda~ W.
        """
        e = self.terms[self.elim]
        q1, r1, qr, p = e.q, e.r, self.qr, self.p
        T1 = Ts[self.elim]
        Wv = Sinv[:, qr:]  # (m, p)
        Whv = self._scale_v_vec(Ts, Wv)  # Lambda~_v W_v
        W1 = -(F02 @ Whv).reshape(q1, r1, p)
        Wh1 = np.matmul(T1, W1)  # Lambda_1 W_1
        Y1 = self.N1 @ Wh1 + self.G1v @ Whv  # (q1, r1, p)
        Wu = {self.elim: W1}
        Yu = {self.elim: Y1}
        if qr:
            Yr = self.G1v_ut @ Wh1.reshape(q1 * r1, p) + self.Gvv[:qr] @ Whv
            for k in self.rest:
                t = self.terms[k]
                blk = slice(t.offset, t.offset + t.width)
                Yu[k] = Yr[blk].reshape(t.q, t.r, p)
                Wu[k] = Wv[blk].reshape(t.q, t.r, p)
        out = np.empty((self.n_theta, p, p))
        for k, t in enumerate(self.terms):
            rows, cols = t.lower
            for i, (a, b) in enumerate(zip(rows, cols)):
                M = Yu[k][:, a, :].T @ Wu[k][:, b, :]
                out[t.theta_start + i] = -(M + M.T)
        return out


def _cho_inverse(L: np.ndarray) -> np.ndarray:
    """Full symmetric inverse of L L' from its lower Cholesky factor (LAPACK potri); L's upper triangle must be 0."""
    if L.shape[0] == 0:
        return np.zeros((0, 0))
    inv, info = _potri(L, lower=1)  # lower triangle; the upper one is L's (zeroed by potrf's clean)
    if info != 0:
        raise np.linalg.LinAlgError("singular Cholesky factor")
    out = inv + inv.T
    out[np.diag_indices_from(out)] *= 0.5
    return out
