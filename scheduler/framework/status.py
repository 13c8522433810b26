"""Plugin status codes and the Status value every extension point returns.

Semantics follow upstream's framework.Status (pkg/scheduler/framework/interface.go): the code
tells the queue what to do with a rejected pod, the reasons end up in the FitError message users
read, and `plugin` records who failed so cluster events can be routed back to the pod.
"""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    # An internal error: the pod is retried with backoff, the message is not a scheduling reason.
    ERROR = 1
    # The pod does not fit now; preemption may help; a cluster event may make it schedulable.
    UNSCHEDULABLE = 2
    # The pod does not fit and preemption cannot help on this node.
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    # Permit only: wait (with a timeout) for an Allow or Reject from elsewhere.
    WAIT = 4
    # Bind: this plugin does not handle the pod, try the next one. PreFilter / PreScore: this
    # plugin has nothing to do for the pod; its Filter / Score are skipped for this cycle.
    SKIP = 5
    # Waiting for something outside the scheduler (e.g. a DRA driver); not a failure of the pod
    # itself, so the queue does not back it off.
    PENDING = 6


_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


# The codes as plain module globals: reading a member off an Enum class costs about 90 ns in
# CPython 3.11, and these properties run about a hundred times per pod scheduled.
_SUCCESS, _SKIP_CODE, _WAIT = Code.SUCCESS, Code.SKIP, Code.WAIT
_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


def code_name(code: Code) -> str:
    """Upstream's Code.String() for a bare code (what Status.code_name says)."""
    return _CODE_NAMES[code]


class Status:
    """Outcome of one plugin call. `None` is never used for success; use `Status.OK`."""

    __slots__ = ("code", "plugin", "reasons")

    OK: Status  # the shared success value (assigned below)

    def __init__(self, code: Code = Code.SUCCESS, *reasons: str, plugin: str = "") -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin

    # Constructors read better at call sites than Status(Code.X, ...).
    @classmethod
    def error(cls, message: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, message, plugin=plugin)

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, *reasons, plugin=plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons, plugin=plugin)

    @classmethod
    def skip(cls) -> Status:
        """The shared Skip status (statuses are never changed in place, as Status.OK)."""
        return _SKIP

    @classmethod
    def wait(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.WAIT, *reasons, plugin=plugin)

    @classmethod
    def pending(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.PENDING, *reasons, plugin=plugin)

    @property
    def is_success(self) -> bool:
        return self.code == _SUCCESS

    @property
    def is_skip(self) -> bool:
        return self.code == _SKIP_CODE

    @property
    def is_wait(self) -> bool:
        return self.code == _WAIT

    @property
    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending (upstream's IsRejected)."""
        return self.code in _REJECTED

    @property
    def code_name(self) -> str:
        """Upstream's Code.String(): the `status` label of framework metrics."""
        return _CODE_NAMES[self.code]

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        """This status attributed to `plugin` (a copy; OK stays shared)."""
        if self.plugin == plugin:
            return self
        return Status(self.code, *self.reasons, plugin=plugin)

    def as_error(self) -> Exception:
        return RuntimeError(self.message or _CODE_NAMES[self.code])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self.code == other.code and self.reasons == other.reasons

    def __hash__(self) -> int:
        return hash((self.code, self.reasons))

    def __repr__(self) -> str:
        who = f" plugin={self.plugin}" if self.plugin else ""
        return f"Status({_CODE_NAMES[self.code]}{who}: {self.message!r})"


Status.OK = Status()
_SKIP = Status(Code.SKIP)
