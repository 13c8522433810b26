"""The scheduler's asynchronous API calls (KEP-5229, the SchedulerAsyncAPICalls gate).

Upstream: pkg/scheduler/framework/api_calls/ (the call types, their relevances and merging
rules) and pkg/scheduler/backend/api_dispatcher/ (the queue keyed by object UID and the loop
that sends calls off the scheduling cycle). The dispatcher decides what is sent and when; how a
request reaches the API server stays the client's transport (scheduler/client/transport.py).
"""
