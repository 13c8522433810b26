"""The scheduler proper: one serial scheduling loop and the binding tasks it spawns.

Informer events reach the cache and the queue through `eventhandlers`; `scheduler` pops pods and
runs each one's scheduling cycle (`scheduling_cycle`, which calls `algorithm`, with
`algorithm_rows` as its fast path), then starts its binding cycle (`binding_cycle`);
`profile_set` builds one framework per schedulerName; `instrumentation` tells the outside about
each attempt; `what_if` runs the same algorithm without scheduling.
"""
