"""Test configuration for the langchain plugin."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # langchain-community (used only by these tests, for its offline file / JSON / sleep tools)
    # warns on import that the distribution is being sunset. The root configuration turns
    # warnings into errors; this one warning is about a test dependency, not about our code,
    # so it alone is ignored -- matched by its message, nothing else from LangChain.
    config.addinivalue_line(
        "filterwarnings",
        r"ignore:`langchain-community` is being sunset:DeprecationWarning",
    )
