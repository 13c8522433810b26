"""The scheduling queue: activeQ, backoffQ, unschedulable pods, nominated pods."""
