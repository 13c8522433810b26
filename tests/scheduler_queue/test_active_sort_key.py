"""activeQ ordered through PrioritySort's sort_key hands pods out in exactly the order its
`less` alone gives, equal priorities and timestamps included."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scheduler.plugins.prioritysort import PrioritySort
from scheduler.queue.active import ActiveQueue
from scheduler.queue.types import QueuedPodInfo
from scheduler.testing.builders import make_pod

operation = st.one_of(
    st.tuples(
        st.just("add"), st.integers(0, 30), st.integers(-2, 2), st.sampled_from([0.0, 1.0, 1.5])
    ),
    st.tuples(st.just("remove"), st.integers(0, 30)),
    st.tuples(st.just("pop")),
)


@given(st.lists(operation, max_size=120))
def test_a_keyed_active_queue_pops_as_the_less_function_orders(ops: list[tuple[Any, ...]]) -> None:
    sort = PrioritySort()
    plain, keyed = ActiveQueue(sort.less), ActiveQueue(sort.less, sort.sort_key)
    for op in ops:
        if op[0] == "add":
            pod = make_pod(f"p{op[1]}", uid=f"u{op[1]}", priority=op[2])
            for queue in (plain, keyed):
                queue.add(QueuedPodInfo(pod=pod, timestamp=op[3]))
        elif op[0] == "remove":
            a, b = plain.remove(f"u{op[1]}"), keyed.remove(f"u{op[1]}")
            assert (a and a.uid) == (b and b.uid)
        else:
            a, b = plain.pop(), keyed.pop()
            assert (a and a.uid) == (b and b.uid)
        assert len(plain) == len(keyed)
    if ops:  # a QueueSort swapped in later (profile reload) keeps the same order
        keyed.set_less(sort.less)
        plain.set_less(sort.less, sort.sort_key)
    while len(plain) or len(keyed):
        a, b = plain.pop(), keyed.pop()
        assert (a and a.uid) == (b and b.uid)
