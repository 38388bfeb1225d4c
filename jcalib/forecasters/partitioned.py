r"""``Partitioned``: one inner forecaster per cell of the context (Kuleshov–Ermon; Marx et al. 2024, App. D).

The context space is cut into cells $C_1, \dots, C_N$; an independent copy of the inner
forecaster runs on the rounds whose context falls in each cell. Online recalibration by
partition (Kuleshov & Ermon 2017; Marx et al. 2024, §5.2, Theorem 5.2) is this construction with a
calibrated inner forecaster: calibration holds within every cell, hence conditionally on the
model's forecast up to the cell width.

State: the inner state stacked along a leading cell axis; a round reads the active cell's slice,
the inner forecaster predicts and updates it, and the slice is written back — O(state of one
cell) work per round, memory N × the inner state.
"""


from typing import Any, Callable, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Int, PRNGKeyArray

from .._grid import size_field, table_size
from .._threefry import split
from .._validation import as_float_array, check_positive_int, in_graph, is_concrete, offending
from ..core.types import AbstractForecaster, Forecast

__all__ = ["AbstractPartitioned", "Partitioned", "PartitionedState", "UniformCells"]


class UniformCells(eqx.Module):
    """Cells of equal width on [0, 1]: ``cell(x) = min(floor(x * n), n - 1)`` (x = 1 is in the last).

    A context outside [0, 1] (or NaN) raises a ``ValueError`` when concrete and fails an
    ``eqx.error_if`` check inside ``play`` (unless ``jcalib.config.checks(False)``).

    Attributes:
        n_cells: number of cells (static).
    """

    n_cells: int = size_field("n_cells", lambda n: n, what="its cells")

    def __call__(self, x) -> Int[Array, ""]:
        x = as_float_array(x, "x")
        bad = ~((x >= 0) & (x <= 1))  # NaN fails both
        if is_concrete(x) and bool(np.any(bad)):
            raise ValueError(f"the context x must lie in [0, 1] for UniformCells ({offending(x, bad)})")
        x = in_graph(x, jnp.any(bad), "the context x must lie in [0, 1] for UniformCells")
        c = jnp.floor(x * self.n_cells).astype(jnp.int32)
        return jnp.clip(c, 0, self.n_cells - 1)  # x = 1 is in the last cell


class PartitionedState(NamedTuple):
    """``Partitioned``'s state.

    Attributes:
        cells: the inner forecaster's state, every leaf with a leading axis of ``n_cells``.
    """

    cells: Any


class AbstractPartitioned(AbstractForecaster):
    r"""One inner forecaster per cell of the context: only the active cell predicts and updates.

    Round $t$ with context $x_t$: $c_t = \mathrm{cell\_of}(x_t)$; the forecast is
    ``inner.predict(state[c_t], x_t, key)`` (its public strategy and certificate included), and
    after $y_t$ only ``state[c_t]`` is updated. Each cell's copy is initialised with its own key.
    Subclasses say what ``inner``, ``n_cells`` and ``cell_of`` are: :class:`Partitioned` takes
    them as given, :class:`~jcalib.forecasters.KuleshovErmon` builds them from its settings.

    Attributes:
        inner: the forecaster each cell runs (it receives the context too).
        n_cells: number of cells (static: fixes the stacked state's shape).
        cell_of: maps a context to its cell, an int32 in ``[0, n_cells)``.
    """

    inner: eqx.AbstractVar[AbstractForecaster]
    n_cells: eqx.AbstractVar[int]
    cell_of: eqx.AbstractVar[Callable[[Any], Array]]

    needs_context = True  # the cell is a function of the context

    @property
    def outcome_space(self) -> str | None:
        return self.inner.outcome_space

    def _cell(self, x) -> Int[Array, ""]:
        if x is None:
            raise ValueError(
                "Partitioned needs a context to choose a cell, but the nature's context is None; "
                "play it against a nature with a context (a model's forecast, an expert, features)"
            )
        c = jnp.asarray(self.cell_of(x))
        if not jnp.issubdtype(c.dtype, jnp.integer) or c.ndim != 0:
            raise ValueError(f"cell_of must return an integer scalar, got dtype {c.dtype} and shape {c.shape}")
        bad = (c < 0) | (c >= self.n_cells)
        msg = f"cell_of(x) is outside [0, {self.n_cells})"
        if is_concrete(c) and bool(bad):
            raise ValueError(f"{msg}: got {int(c)}")
        c = in_graph(c, bad, msg)
        return jnp.clip(c, 0, self.n_cells - 1).astype(jnp.int32)

    def init(self, key: PRNGKeyArray) -> PartitionedState:
        keys = split(key, self.n_cells)
        return PartitionedState(jax.vmap(self.inner.init)(keys))

    def _slice(self, state: PartitionedState, c):
        return jax.tree_util.tree_map(lambda s: s[c], state.cells)

    def predict(self, state: PartitionedState, x, key: PRNGKeyArray) -> Forecast:
        return self.inner.predict(self._slice(state, self._cell(x)), x, key)

    def info(self, state: PartitionedState, x, forecast: Forecast, y) -> Any:
        return self.inner.info(self._slice(state, self._cell(x)), x, forecast, y)

    def update(self, state: PartitionedState, x, forecast: Forecast, y) -> PartitionedState:
        c = self._cell(x)
        new = self.inner.update(self._slice(state, c), x, forecast, y)
        return PartitionedState(jax.tree_util.tree_map(lambda s, n: s.at[c].set(n), state.cells, new))


class Partitioned(AbstractPartitioned):
    r"""Run ``inner`` separately on each cell of the context: only the active cell predicts and updates.

    Round $t$ with context $x_t$: $c_t = \mathrm{cell\_of}(x_t)$; the forecast is
    ``inner.predict(state[c_t], x_t, key)`` (its public strategy and certificate included), and
    after $y_t$ only ``state[c_t]`` is updated. Each cell's copy is initialised with its own key.

    Attributes:
        inner: the forecaster each cell runs (it receives the context too).
        n_cells: number of cells (static: fixes the stacked state's shape).
        cell_of: maps a context to its cell, an int32 in ``[0, n_cells)`` (e.g.
            :class:`UniformCells` for a model's forecast in [0, 1]). A cell outside
            ``[0, n_cells)`` is an error: ``ValueError`` for a concrete context, an
            ``eqx.error_if`` failure inside ``play`` (unless ``jcalib.config.checks(False)``;
            then it is clipped to the nearest cell). A nature with no context (``None``) is
            refused when ``play`` traces the round.

    Example:
        >>> import jax, jcalib
        >>> from jcalib.forecasters import Partitioned, UniformCells, RunningFrequency
        >>> f = Partitioned(RunningFrequency(), 5, UniformCells(5))
        >>> traj = jcalib.core.play(f, jcalib.natures.TwoLevelModel(), 2000, key=jax.random.key(0))
        >>> bool(abs(float(traj.forecast[-1]) - 0.5) < 0.2)
        True

    References:
        V. Kuleshov, S. Ermon (2017), *Estimating uncertainty online against an adversary*,
        AAAI; Marx et al. (2024), §5.2 and Appendix D.
    """

    inner: AbstractForecaster
    n_cells: int = size_field("n_cells", lambda n: n, what="the stacked per-cell state")
    cell_of: Callable[[Any], Array]

    def __check_init__(self):
        if not isinstance(self.inner, AbstractForecaster):
            raise ValueError(f"inner must be an AbstractForecaster, got {type(self.inner).__name__}")
        if not callable(self.cell_of):
            raise ValueError("cell_of must be callable: context -> cell index")
        # the state is n_cells copies of the inner state: bound it before play allocates it
        per_cell = sum(a.size * a.dtype.itemsize for a in jax.tree_util.tree_leaves(
            jax.eval_shape(self.inner.init, jax.random.key(0))) if hasattr(a, "dtype"))
        table_size(self.n_cells, "n_cells", lambda n: n * per_cell, what=f"{self.n_cells} copies of the inner state")
