"""`parallelism` made real: a scheduling cycle's Filter row pass split across worker processes.

Upstream checks nodes with `parallelism` goroutines. Under CPython's GIL threads do not pay
(bench/parallelism_probe.py), so aiosched uses processes (`aiosched-filter-N` in ps), each
holding a replica of the scheduler's cache:

- `replica.py`: the cache that also records every change it applies (the informers' adds,
  updates and deletes, assumed and forgotten pods), the bootstrap that rebuilds it elsewhere,
  and the worker's side that applies both;
- `wire.py`: the frames between the scheduler and a worker (length-prefixed pickles over a
  socketpair: both ends are this program, started by it);
- `worker.py`: the worker process: its replica, its own frameworks built from the same
  profiles, and the Filter row pass over the shards it is sent;
- `pool.py`: the scheduler's side, `FilterPool` (a `scheduler.cycle.fanout.FilterFanout`):
  which cycles are worth it, the split and the merge, workers' starts, deaths and restarts.

The seam in the cycle is `scheduler/cycle/fanout.py`; docs/processes.md is the user's view.
"""
