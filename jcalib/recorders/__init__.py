"""jcalib.recorders: what a run keeps (``record=`` in ``play`` and ``sweep``).

:class:`History` keeps everything; the summaries keep running statistics in memory O(1) in
the number of rounds. One module per family.
"""

from .base import AbstractRecorder, History, Round, register_shorthand
from .grid import GridCounts, GridSummary, forecast_grid, summary_from_trajectory
from .buckets import RecalibrationCounts, RecalibrationSummary

__all__: list[str] = [
    "AbstractRecorder",
    "GridCounts",
    "GridSummary",
    "History",
    "Round",
    "forecast_grid",
    "register_shorthand",
    "summary_from_trajectory",
    "RecalibrationCounts",
    "RecalibrationSummary",
]
