"""Django's makemessages, which also reads the Jinja2 fragments (config/jinja2.py).

A ``.jinja`` file is turned into Python that xgettext reads: one ``gettext("…")`` per ``_()`` or
``bt()`` call, on the call's own line (so the catalogue's "#:" references stay right). Jinja2's
own extractor finds the calls. Keys are written as Django writes them from its template tags:
``_()`` is ``{% translate %}``, whose key has every % doubled; ``bt()`` already is a key.
"""

from __future__ import annotations

from typing import Any

from django.core.management.commands import makemessages
from jinja2 import Environment
from jinja2.ext import extract_from_ast

JINJA_SUFFIX = ".jinja"


def python_for_xgettext(source: str) -> str:
    lines = [""] * (source.count("\n") + 1)
    tree = Environment().parse(source)
    found = extract_from_ast(tree, gettext_functions=("_", "bt"), babel_style=False)
    for lineno, function, strings in found:
        message = strings if isinstance(strings, str) else (strings or (None,))[0]
        if not isinstance(message, str):
            continue  # a call whose first argument is not a literal: nothing to extract
        key = message.replace("%", "%%") if function == "_" else message
        lines[lineno - 1] += f"gettext({key!r}); "
    return "\n".join(lines)


class BuildFile(makemessages.BuildFile):
    def preprocess(self) -> None:
        if not self.path.endswith(JINJA_SUFFIX):
            return super().preprocess()
        with open(self.path, encoding="utf-8") as source:
            content = python_for_xgettext(source.read())
        with open(self.work_path, "w", encoding="utf-8") as output:
            output.write(content)


class Command(makemessages.Command):
    build_file_class = BuildFile
    # calculator.inputs.l10n.gettext_memo is gettext, memoised: its messages are extracted too.
    xgettext_options = [*makemessages.Command.xgettext_options, "--keyword=gettext_memo"]

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("domain", "django") == "django" and not options.get("extensions"):
            options["extensions"] = ["html", "txt", "py", "jinja"]
        super().handle(*args, **options)
