"""An attribute that is another object's: a wrapper shows the state of what it wraps (the judging
controller its core's queue, a method's session the application's state) without a property for
each name."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class Forwarded(Generic[T]):
    """A read-only attribute read from the object in the attribute `via`: in a class body,
    `pos = Forwarded[int]("core")` makes `self.pos` read `self.core.pos`, and
    `future = Forwarded[Any]("worker", "pending")` reads `self.worker.pending`."""

    def __init__(self, via: str, name: str = "") -> None:
        self.via = via
        self.name = name

    def __set_name__(self, owner: type, name: str) -> None:
        if not self.name:
            self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Forwarded[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(getattr(obj, self.via), self.name)

    def __set__(self, obj: object, value: T) -> None:
        raise AttributeError(f"{self.name} is read from {self.via}; it cannot be set here")
