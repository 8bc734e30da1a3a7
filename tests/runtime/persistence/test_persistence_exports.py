"""The persistence package's public surface: exactly what ``__all__`` lists, all documented."""

from __future__ import annotations

import inspect

import livecontext.runtime.persistence as persistence
from livecontext.runtime import LivecontextError, UsageError


def test_every_public_name_is_listed_once_and_documented() -> None:
    public = {name for name in dir(persistence) if not name.startswith("_")}
    modules = {name for name in public if inspect.ismodule(getattr(persistence, name))}
    assert sorted(persistence.__all__) == sorted(public - modules - {"annotations"})
    assert len(set(persistence.__all__)) == len(persistence.__all__)
    for name in persistence.__all__:
        value = getattr(persistence, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), name


def test_errors_share_one_base_and_usage_errors_say_so() -> None:
    errors = [
        getattr(persistence, name)
        for name in persistence.__all__
        if name.endswith("Error") and inspect.isclass(getattr(persistence, name))
    ]
    for error in errors:
        assert issubclass(error, persistence.PersistenceError), error
        assert issubclass(error, LivecontextError), error
    assert issubclass(persistence.StoreUrlError, UsageError)
    assert issubclass(persistence.ThreadLockedError, UsageError)
    assert not issubclass(persistence.CorruptRecordError, UsageError)
