"""The canary tests: each expects torch to behave as a lesson says, and fails naming the lesson and
the section to update when a newer torch behaves otherwise. Run them alone with
`pytest --course -m canary` (or `pytest --course tests/course/canaries`)."""

import pathlib

import pytest

_HERE = pathlib.Path(__file__).parent


def pytest_configure(config):
    config.addinivalue_line("markers", "canary: expects torch to behave as a lesson says (tests/course/canaries)")


def pytest_collection_modifyitems(items):
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.canary)
