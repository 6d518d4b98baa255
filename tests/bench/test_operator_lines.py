"""bench/operator's line count: code lines only, docstrings and comments excluded."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bench.operator._lines import operator_sources, source_lines

CASES = [
    ("empty", "", 0),
    ("one statement", "x = 1\n", 1),
    ("blank lines and comments", "\n# a comment\n\nx = 1  # trailing\n\n    \n", 1),
    ("module docstring", '"""Module.\n\nMore.\n"""\nx = 1\n', 1),
    (
        "function docstring and body",
        'def f():\n    """Doc.\n\n    More doc.\n    """\n    return 1\n',
        2,
    ),
    ("class docstring", 'class A:\n    """Doc."""\n\n    x = 1\n', 2),
    ("attribute docstring", 'X = 1\n"""What X is."""\n', 1),
    ("one-line function with docstring", 'def f(): """Doc."""\n', 1),
    ("a multi-line string that is code", 'x = """\na\nb\n"""\n', 4),
    ("a string argument", 'print(\n    "a",\n    "b",\n)\n', 4),
    ("implicitly concatenated docstring", 'def f():\n    "a" \\\n    "b"\n    return 1\n', 2),
    ("a comment inside a bracket", "x = [\n    1,\n    # two\n    2,\n]\n", 4),
    ("a line continuation", "x = 1 + \\\n    2\n", 2),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_source_lines(text: str, expected: int) -> None:
    assert source_lines(text) == expected


def test_source_lines_rejects_non_python() -> None:
    with pytest.raises(SyntaxError):
        source_lines("def (:\n")


def test_source_lines_of_a_realistic_module() -> None:
    text = textwrap.dedent(
        '''\
        """An operator."""

        import kopf  # the framework

        WEBSITE = ("demo.example.com", "v1", "websites")
        """The resource."""


        @kopf.on.create(*WEBSITE)
        def create(spec, **_):
            """Create the children."""
            # nothing yet
            return {
                "image": spec["image"],
            }
        '''
    )
    assert source_lines(text) == 7  # import, WEBSITE, decorator, def, return { ... }


def test_operator_sources_leaves_out_tests(tmp_path: Path) -> None:
    for name in (
        "__init__.py",
        "__main__.py",
        "_controller.py",
        "test_controller.py",
        "controller_test.py",
        "conftest.py",
        "tests/helpers.py",
        "sub/_status.py",
        "crd.yaml",
    ):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    found = [p.relative_to(tmp_path).as_posix() for p in operator_sources(tmp_path)]
    assert found == ["__init__.py", "__main__.py", "_controller.py", "sub/_status.py"]
    assert operator_sources(tmp_path / "_controller.py") == [tmp_path / "_controller.py"]
