"""The multi-seed runner: plan a comparison's runs, execute them, assemble the tables.

:func:`run_comparison` plans (:mod:`.plan`: one row per seed and configuration, its run
store key, whether it is stored), executes the runs not stored (:mod:`.execute`: a timed
pilot run, then serially or in batches on an executor of :mod:`.executors`: this
process, local worker processes, or a Dask cluster), and assembles the records
(:mod:`.assemble`) into a :class:`ComparisonResult`.
"""

from .comparison import plan_comparison, run_comparison
from .result import CURVE_COLUMNS, FINAL_COLUMNS, SETTING_COLUMNS, ComparisonResult

__all__ = ["CURVE_COLUMNS", "FINAL_COLUMNS", "SETTING_COLUMNS", "ComparisonResult",
           "plan_comparison", "run_comparison"]
