"""The fresh clone's install starts with the session and its tests run last (``_fresh.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.site._fresh import FreshClone

FRESH = "test_fresh_clone.py"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The fresh clone's tests last, so that the other tests run while its install does."""
    items.sort(key=lambda item: item.path.name == FRESH)  # stable: the order is kept otherwise


@pytest.fixture(scope="session", autouse=True)
def fresh_clone(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[FreshClone | None]:
    """The clone and its README command, started before the session's first test when the
    fresh clone's tests are selected; stopped at the end if it still runs."""
    if not any(item.path.name == FRESH for item in request.session.items):
        yield None
        return
    job = FreshClone(tmp_path_factory.mktemp("clone") / "toolregistry")
    try:
        yield job
    finally:
        job.stop()
