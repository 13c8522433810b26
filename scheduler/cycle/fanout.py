"""The seam through which a scheduling cycle's Filter row pass may be split across processes.

Upstream checks nodes with `parallelism` goroutines (pkg/scheduler/framework/parallelize,
findNodesThatPassFilters). Here the cycle stays serial and exact: the algorithm's row pass
(`find_feasible_rows`) calls a `RowsFilter` for each chunk of rows it wants filtered, and a
`FilterFanout` (scheduler/parallel/, started by the app when `parallelism` allows) may hand it
one that filters the chunk's shards in worker processes and answers exactly as
`Framework.run_filter_plugins_rows` over the whole chunk. Everything around it (the stop point
at numFeasibleNodesToFind, nominated pods, statuses, the next start index) is the serial code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from scheduler.api.objects import PodView
    from scheduler.cache.node_table import NodeTable
    from scheduler.cache.rows import Rows
    from scheduler.framework.filter_tally import FilterTally
    from scheduler.framework.interface import CycleState
    from scheduler.framework.runtime import Framework, RowRejections


class RowsFilter(Protocol):
    """`Framework.run_filter_plugins_rows`'s signature and answer: positions (into `rows`) that
    pass every Filter plugin, and each plugin's rejections."""

    def __call__(
        self,
        state: CycleState,
        pod: PodView,
        table: NodeTable,
        rows: Rows,
        tally: FilterTally | None = None,
        /,
    ) -> tuple[npt.NDArray[np.intp], list[RowRejections]]: ...


class FilterFanout(Protocol):
    """Who may filter a cycle's rows elsewhere."""

    def rows_filter(
        self, fwk: Framework, state: CycleState, pod: PodView, table: NodeTable
    ) -> RowsFilter | None:
        """The filter for this cycle's row pass, or None to filter in process (the cycle is
        cheap, or its plugins read something the workers do not have)."""
        ...
