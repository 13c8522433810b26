"""The scheduler proper: one serial scheduling loop and the binding tasks it spawns.

Informer events reach the cache and the queue through `eventhandlers`; `scheduler` pops pods and
runs the scheduling cycle (`algorithm`, with `algorithm_rows` as its fast path) and the binding
cycle; `profile_set` builds one framework per schedulerName; `instrumentation` tells the outside
about each attempt; `what_if` runs the same algorithm without scheduling.
"""
