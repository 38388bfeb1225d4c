r"""Grid modules whose grid size is traced: one compiled program for every grid size up to a bound.

A grid forecaster's state, an adaptive nature's buckets and a grid summary's counts have
$m + 1$ entries, so $m$ (``n_bins``) is a static field and every grid size compiles its own
program. :func:`padded` copies such a module into a *padded* variant of its class: the tables
are sized for ``max_bins`` and ``n_bins`` is an int32 array (traced inside compiled functions),
so the programs of every ``n_bins <= max_bins`` are one. The padded variant computes exactly the
same numbers as the original: table entries past $m$ are never read or written, the bisection
for a sign change starts from $[0, m]$ as the original does, a product $m p$ is the same
product, and the grid points $i/m$ come from a table (the array field ``points``, made on the
host by :func:`jcalib._grid.grid_points`' rule), not from a division in the graph: XLA computes
a division by a loop-invariant value as a multiplication by its reciprocal, which misses the
nearest float by one ulp (``9 * (1/10) = 0.90000004`` in float32).

Used by ``jcalib demo``, whose horizons $T$ each size the grids by $\lceil\sqrt T\rceil$: with
the grids padded to the largest horizon's, one program per forecaster serves all horizons.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._grid import grid_points, sign_change_index
from ._validation import check_positive_int, to_device

__all__ = ["grid_value", "is_padded", "padded", "padded_class", "scale", "sign_change_below", "table_bins"]


def _traced_size(value):
    """``n_bins`` of a padded module: an int32 array (a tracer passes unchanged)."""
    if isinstance(value, jax.core.Tracer):
        return value
    return to_device(check_positive_int(value, "n_bins"), jnp.int32)


def _check_padded(self):
    m = self.n_bins
    if not isinstance(m, jax.core.Tracer) and int(m) > self.max_bins:
        raise ValueError(f"n_bins={int(m)} exceeds max_bins={self.max_bins}")


@functools.cache
def padded_class(cls: type) -> type:
    """The padded variant of a grid module class ``cls`` (one per class, cached).

    ``cls`` has a static size field ``n_bins`` and reads its table size through
    :func:`table_bins`. The variant redeclares ``n_bins`` as an array field and adds the static
    ``max_bins`` (both keyword-only).
    """
    base_size = cls.__dataclass_fields__["n_bins"]
    del base_size  # the base must have the field; its converter is replaced
    ns = {
        "__annotations__": {"n_bins": Any, "max_bins": int, "points": Any},
        "n_bins": eqx.field(converter=_traced_size, kw_only=True),
        "max_bins": eqx.field(static=True, kw_only=True, converter=lambda v: check_positive_int(v, "max_bins")),
        # the grid {i / (k m)}, i = 0..k max_bins, k = the class's grid_factor (entries past k m unused)
        "points": eqx.field(kw_only=True),
        "__check_init__": _check_padded,
        "__module__": cls.__module__,
        "__doc__": f"{cls.__name__} with tables sized for ``max_bins`` and a traced ``n_bins`` "
                   "(see :func:`jcalib._padded.padded`).",
    }
    return type(f"Padded{cls.__name__}", (cls,), ns)


def padded(module, max_bins: int):
    """A copy of the grid module ``module`` with tables for grids up to ``max_bins`` and its
    ``n_bins`` an array (traced in compiled functions): same numbers, one program for every
    ``n_bins <= max_bins``. A padded module is re-padded from its current ``n_bins``."""
    cls = type(module)
    if is_padded(module):
        cls = cls.__mro__[1]
    fields = {f.name: getattr(module, f.name) for f in dataclasses.fields(module) if f.name != "max_bins"}
    fields.pop("points", None)
    m = fields["n_bins"] = int(fields["n_bins"])
    max_bins = check_positive_int(max_bins, "max_bins")
    k = getattr(cls, "grid_factor", 1)
    points = jnp.asarray(np.arange(k * max_bins + 1) / (k * m), jnp.result_type(float))
    return padded_class(cls)(**fields, max_bins=max_bins, points=points)


def is_padded(module) -> bool:
    """Whether ``module`` is a padded variant (made by :func:`padded`)."""
    return "max_bins" in getattr(type(module), "__dataclass_fields__", {})


def table_bins(module) -> int:
    """The static table size $M$ of a grid module: ``max_bins`` when padded, else ``n_bins``."""
    return module.max_bins if is_padded(module) else module.n_bins


def scale(m, dtype):
    """The grid size as a multiplier of ``dtype`` values: a Python int stays one (a weakly
    typed constant, as before), an array is cast (the same product, correctly rounded)."""
    return m if isinstance(m, int) else jnp.asarray(m).astype(dtype)


def grid_value(module, i, factor: int = 1):
    r"""The grid point $i / (f m)$ of a grid module ($m$ = ``module.n_bins``, $f$ = ``factor``),
    correctly rounded in the default float dtype: an entry of
    :func:`~jcalib._grid.grid_points`, or of a padded module's ``points`` table (the grid of
    $k m$, $k$ the class's ``grid_factor``, which ``factor`` divides)."""
    if not is_padded(module):
        return grid_points(factor * module.n_bins)[i]
    k = getattr(type(module), "grid_factor", 1)
    return module.points[i * (k // factor)] if k != factor else module.points[i]


def sign_change_below(values, n):
    r""":func:`~jcalib._grid.sign_change_index` on ``values[: n + 1]`` for a traced ``n``.

    The same bisection started from $[0, n]$ instead of $[0, N]$ ($N + 1$ = ``len(values)``), for
    $\lceil\log_2 N\rceil$ steps: steps at $hi - lo = 1$ change nothing, so it returns what the
    search over the first $n + 1$ entries returns. Entries past $n$ are never read.
    """
    N = values.shape[0] - 1
    if isinstance(n, int) and n == N:
        return sign_change_index(values)
    n_iter = max(N - 1, 0).bit_length()

    def body(_, lohi):
        lo, hi = lohi
        mid = jax.lax.shift_right_logical(lo + hi, jnp.int32(1))
        right = values[mid] <= 0
        return jnp.where(right, mid, lo), jnp.where(right, hi, mid)

    lo, _ = jax.lax.fori_loop(0, n_iter, body, (jnp.int32(0), jnp.asarray(n, jnp.int32)), unroll=True)
    return lo
