"""Tracing off: shared immutable no-op twins of the recording spans (otel.py), so that a
scheduler without a tracing endpoint allocates nothing per pod, attempt or extension point.

It changes only when the recording interface does, in step with otel.py.
"""

from __future__ import annotations

from typing import Final

#: What a span attribute may hold (OpenTelemetry's primitive attribute values). Defined here,
#: below otel.py, since both the recording spans and their no-op twins take it.
AttributeValue = str | bool | int | float


# ---------------------------------------------------------------------------------------------
# No-op implementation: shared immutable objects, nothing allocated per call
# ---------------------------------------------------------------------------------------------


class NoopPointSpan:
    __slots__ = ()

    def __enter__(self) -> NoopPointSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def status(self, code: str, message: str = "") -> None:
        pass

    def plugin(
        self,
        name: str,
        status: str = "Success",
        seconds: float | None = None,
        rejected: int | None = None,
    ) -> None:
        pass

    def set(self, **attrs: AttributeValue) -> None:
        pass


class NoopAttemptSpan:
    __slots__ = ()
    recording: Final = False

    def extension_point(self, name: str, start_ns: int | None = None) -> NoopPointSpan:
        return NOOP_POINT

    def record_extension_point(
        self, name: str, start_ns: int, end_ns: int, status: str = "Success", message: str = ""
    ) -> None:
        pass

    def set(self, **attrs: AttributeValue) -> None:
        pass

    def end(
        self,
        result: str = "scheduled",
        message: str = "",
        node: str | None = None,
        end_ns: int | None = None,
    ) -> None:
        pass


class NoopPodSpan:
    __slots__ = ()
    recording: Final = False
    uid: Final = ""

    def bound(self, node: str, attempts: int, end_ns: int | None = None) -> None:
        pass

    def deleted(self, attempts: int, end_ns: int | None = None) -> None:
        pass

    def end(self, outcome: str, attempts: int | None = None, end_ns: int | None = None) -> None:
        pass


class NoopGroupSpan:
    __slots__ = ()
    recording: Final = False

    def end(
        self, result: str, message: str = "", placed: int = 0, end_ns: int | None = None
    ) -> None:
        pass


class NoopTracing:
    """Tracing off: every call returns a shared no-op object."""

    __slots__ = ()
    enabled: Final = False

    def pod_span(
        self, pod_key: str, uid: str, namespace: str, name: str, start_ns: int | None = None
    ) -> NoopPodSpan:
        return NOOP_POD

    def attempt(
        self,
        pod: object,
        profile: str,
        attempt: int,
        start_ns: int | None = None,
        group: object = None,
    ) -> NoopAttemptSpan:
        return NOOP_ATTEMPT

    def group_span(self, namespace: str, name: str, profile: str, members: int) -> NoopGroupSpan:
        return NOOP_GROUP

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def end_open_pods(self) -> None:
        pass

    def shutdown(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


NOOP_POINT: Final = NoopPointSpan()
NOOP_ATTEMPT: Final = NoopAttemptSpan()
NOOP_POD: Final = NoopPodSpan()
NOOP_GROUP: Final = NoopGroupSpan()
NOOP_TRACING: Final = NoopTracing()
