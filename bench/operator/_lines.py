"""Lines of an operator's source: the non-blank lines that hold code.

A line counts when a token other than a comment sits on it; blank lines, comment lines and
docstrings do not count. "Docstring" means any statement that is a string literal and nothing
else - a module's, class's or function's docstring, and the attribute docstrings under
constants - so documentation costs nothing, whichever way it is written. A string that is
part of code (an argument, an assignment) counts on every line it spans.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterable
from pathlib import Path

__all__ = ["operator_sources", "source_lines", "sources_lines"]

_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
    tokenize.ENCODING,
}

Position = tuple[int, int]  # (line, column), as tokenize reports them


def _docstring_spans(tree: ast.AST) -> list[tuple[Position, Position]]:
    spans = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            assert node.end_lineno is not None and node.end_col_offset is not None
            spans.append(((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)))
    return spans


def source_lines(text: str) -> int:
    """How many lines of the Python source ``text`` hold code (see the module docstring).

    Raises ``SyntaxError`` for text that is not Python."""
    docstrings = _docstring_spans(ast.parse(text))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in _NOT_CODE:
            continue
        if token.type == tokenize.STRING and any(
            start <= token.start and token.end <= end for start, end in docstrings
        ):
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines)


def operator_sources(root: Path) -> list[Path]:
    """The Python files of an operator: ``root`` itself if it is a file, else every ``.py``
    file under it except tests (``test_*.py``, ``*_test.py``, ``conftest.py``, anything in a
    ``tests`` directory)."""
    if root.is_file():
        return [root]
    return sorted(
        path
        for path in root.rglob("*.py")
        if not (
            path.name.startswith("test_")
            or path.name.endswith("_test.py")
            or path.name == "conftest.py"
            or "tests" in path.relative_to(root).parts[:-1]
        )
    )


def sources_lines(paths: Iterable[Path]) -> int:
    """:func:`source_lines` summed over files."""
    return sum(source_lines(path.read_text()) for path in paths)
