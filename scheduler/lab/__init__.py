"""The policy lab: replay a trace of a cluster's workload through scheduler profiles, in
virtual time, and compare what they do with it.

A replay drives the very objects `aiosched run` drives (the Scheduler's cache, queue, profiles
and their frameworks and plugins, the scheduling and binding cycles, the DRA allocator); only
the API server is replaced by an in-memory one (`client.py`) whose writes the replay applies
back as the watch would. Modules:

- `trace.py`: a trace (nodes, DeviceClasses, ResourceSlices, pods with their claims, arrival
  and departure times) and its documented file format (YAML documents or JSON lines);
- `openb.py`: the openb CSV traces of Weng et al. (ATC '23) as such a trace, with the paper's
  seeded shuffle and workload inflation;
- `client.py`: the in-memory API the binding cycle writes to;
- `engine.py`: one replay of one trace through one configuration with one seed;
- `gpu_metrics.py`: GPU allocation and the paper's fragmentation measure along the replay;
- `experiment.py`: many (configuration, seed) runs on every core;
- `report.py`: JSON, CSV, the text summary and the SVG plots.
"""
