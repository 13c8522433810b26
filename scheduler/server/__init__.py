"""The secure port: its certificate when none is given, and delegated authentication and
authorization (TokenReview / SubjectAccessReview) in front of /metrics and /debug, as
kube-scheduler's. The endpoints themselves are observability.http's.
"""
