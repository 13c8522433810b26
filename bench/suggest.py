"""Suggestions ("did you mean") for a workload name `aiosched bench` does not know.

A misspelt name used to be answered with every known name on one line. The message now has the
shape of kubectl's (cobra's `unknown command "x" for "kubectl"` followed by "Did you mean
this?" and one tab-indented suggestion a line, spf13/cobra command.go findSuggestions), with
the close names found by difflib and a pointer to `--list` instead of the whole list.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_SUGGESTIONS = 4
# difflib's default: below 0.6 the "suggestions" are mostly noise
CUTOFF = 0.6
NEAR_BEST = 0.1  # a suggestion much worse than the best one only lengthens the list


def candidates(names: Iterable[str]) -> list[str]:
    """The names one may run: every workload, and every test ("Name/" runs all of its sizes)."""
    known: dict[str, None] = {}
    for name in names:
        test, _, _ = name.partition("/")
        known.setdefault(test + "/")
        known.setdefault(name)
    return list(known)


def close_matches(name: str, names: Iterable[str]) -> list[str]:
    """The known names closest to `name`, best first: a name that differs only in case alone,
    else difflib's close matches within NEAR_BEST of the best one."""
    by_folded: dict[str, str] = {}
    for candidate in candidates(names):
        by_folded.setdefault(candidate.casefold(), candidate)
    folded = name.casefold()
    if folded in by_folded:
        return [by_folded[folded]]
    matcher = difflib.SequenceMatcher(b=folded)
    scored = []
    for candidate in by_folded:
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() >= CUTOFF and matcher.quick_ratio() >= CUTOFF:
            score = matcher.ratio()
            if score >= CUTOFF:
                scored.append((-score, candidate))
    scored.sort()
    if not scored:
        return []
    best = -scored[0][0]
    return [by_folded[c] for s, c in scored[:MAX_SUGGESTIONS] if -s >= best - NEAR_BEST]


def unknown_workload_message(name: str, names: Iterable[str]) -> str:
    """The error for an unknown workload: the suggestions, if any, and where the list is."""
    known = candidates(names)
    message = f"unknown workload {name!r}"
    suggestions = close_matches(name, known)
    if suggestions:
        message += "\n\nDid you mean this?\n" + "".join(f"\t{s}\n" for s in suggestions)
    workloads = sum(1 for n in known if not n.endswith("/"))
    return message + f"\nRun 'aiosched bench --list' for the {workloads} workloads."
