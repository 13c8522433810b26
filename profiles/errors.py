"""Configuration errors: every problem names the file, the field path and what was expected."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigError:
    source: str
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.source}: {self.path}" if self.path else self.source
        return f"{where}: {self.message}"


class ConfigInvalidError(ValueError):
    """Raised when a configuration is rejected; carries every error found, not just the first."""

    def __init__(self, errors: Iterable[ConfigError]) -> None:
        self.errors: tuple[ConfigError, ...] = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


class ErrorSink:
    """Collects errors for one source file while the config is walked."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[ConfigError] = []

    def add(self, path: str, message: str) -> None:
        self.errors.append(ConfigError(self.source, path, message))

    def raise_if_any(self) -> None:
        if self.errors:
            raise ConfigInvalidError(self.errors)


def child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"
