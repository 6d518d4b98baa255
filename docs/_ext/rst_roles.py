"""A griffe extension: kcontrol's reST-flavoured docstrings, rendered as Markdown.

kcontrol's docstrings are written as reStructuredText prose: cross-references are roles
(``:class:`Reflector```, ``:meth:`~DelayingQueue.add_after```), literal blocks follow a line
ending in ``::``. mkdocstrings renders Markdown, where those would show as raw markup. Before
the docstrings are parsed, this rewrites

- each role to a cross-reference: the target is resolved in the scope of the object the
  docstring belongs to (its module's names, imports included, then its parents'), and becomes
  an optional autorefs link - a link when the target is rendered in the API reference, plain
  code otherwise (a private helper, a standard-library name);
- a role whose target names ``kcontrol`` explicitly (``:mod:`kcontrol.envtest```) but
  does not exist is reported as a warning, which fails ``mkdocs build --strict``: a renamed
  module or symbol cannot leave a dangling reference behind;
- each ``::`` literal block to a fenced code block, highlighted as Python when it parses as
  Python.
"""

from __future__ import annotations

import ast
import html
import logging
import re
import textwrap
from typing import Any

import griffe

_log = logging.getLogger("mkdocs.plugins.kcontrol.rst_roles")

_ROLE = re.compile(r":(?:py:)?(?P<role>[a-z]+):`(?P<body>[^`]+)`")
_EXPLICIT = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$")


class RstRoles(griffe.Extension):
    """Rewrite every docstring of a loaded package before it is parsed."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj.docstring.value, obj, loader)


def _walk(obj: griffe.Object) -> list[griffe.Object]:
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            found.extend(_walk(member))  # type: ignore[arg-type]
    return found


def rewrite(text: str, obj: griffe.Object, loader: griffe.GriffeLoader) -> str:
    """``text`` with its roles as cross-references and its literal blocks fenced."""

    def role(match: re.Match[str]) -> str:
        body = match["body"]
        explicit = _EXPLICIT.match(body)
        if explicit:
            title, target = explicit["title"], explicit["target"]
        else:
            target = body.lstrip("~.")
            title = target.rsplit(".", 1)[-1] if body.startswith("~") else target
        target = target.lstrip("~.")
        if match["role"] in ("func", "meth"):
            title = title if title.endswith(")") else f"{title}()"
        path = _resolve(target, obj, loader)
        code = f"<code>{html.escape(title)}</code>"
        if path is None:
            return code
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return _literal_blocks(_ROLE.sub(role, text))


def _literal_blocks(text: str) -> str:
    """Each ``::`` literal block as a fenced code block (``python`` when it parses as Python),
    its ``::`` as ``:`` (or nothing, on a line of its own)."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        stripped = line.rstrip()
        if not stripped.endswith("::") or stripped.endswith(":::"):
            out.append(line)
            continue
        indent = len(line) - len(line.lstrip())
        if line.lstrip().startswith("- "):
            indent += 2  # the block belongs to the list item
        lead = stripped[:-2].rstrip()
        if lead.strip():
            out.append(lead + ":")
        block: list[str] = []
        while i < len(lines) and (
            not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
        ):
            block.append(lines[i])
            i += 1
        while block and not block[-1].strip():
            i -= 1
            block.pop()
        code = textwrap.dedent("\n".join(block)).strip("\n")
        fence = " " * indent
        out += ["", f"{fence}```{_language(code)}"]
        out += [f"{fence}{row}" if row else "" for row in code.splitlines()]
        out += [f"{fence}```"]
    return "\n".join(out)


def _language(code: str) -> str:
    try:
        compile(code, "<docstring>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:
        return "text"
    return "python"


def _resolve(target: str, obj: griffe.Object, loader: griffe.GriffeLoader) -> str | None:
    head, _, rest = target.partition(".")
    if head == obj.package.name:
        try:
            loader.modules_collection.get_member(target)
        except (KeyError, ValueError) as error:
            where = f"{obj.filepath}:{obj.lineno or 1}"
            _log.warning(
                "%s: %s refers to %r, which does not exist (%s)", where, obj.path, target, error
            )
            return None
        return target
    try:
        path = obj.resolve(head)
    except griffe.NameResolutionError:
        return None
    return f"{path}.{rest}" if rest else path
