"""The process: `aiosched`'s command line, its subcommands and the service they start.

This is upstream's cmd/kube-scheduler/app: flags and configuration become a running service
(leader election, the secure port, hot reload) around one `scheduler.cycle.Scheduler`. Nothing
below this package imports it.
"""
