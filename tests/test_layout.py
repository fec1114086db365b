"""The app's rooms and the direction of their imports (issue 26), read from the source as the
no-Django-in-the-estimator test reads it: every ``import`` and ``from … import`` of every module
under calculator/, at any depth (a function-level import is an arrow too).

From the bottom up: estimator < inputs < catalogue < result < web < api. A room may import the
rooms below it, never one above; the top-level modules Django looks for (apps, urls, models,
admin, templatetags, management commands, migrations) may import any room. No module imports
itself back through others (no circle), inside a room or across."""

import ast
from pathlib import Path

import pytest

CALCULATOR = Path(__file__).resolve().parent.parent / "calculator"
ROOMS = ["estimator", "inputs", "catalogue", "result", "web", "api"]
ENTRY_POINTS = {"apps", "urls", "models", "admin", "templatetags", "management", "migrations"}


def module_name(path: Path) -> str:
    parts = path.relative_to(CALCULATOR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The calculator modules ``path`` imports (a ``from package import module`` counts as the
    module when it is one)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("calculator")}
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("calculator")
        ):
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in MODULES else node.module)
    return found


MODULES = {
    module_name(path): path for path in CALCULATOR.rglob("*.py") if "migrations" not in path.parts
}
GRAPH = {name: imports(path) & MODULES.keys() for name, path in MODULES.items()}


def room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else None


def test_every_module_sits_in_a_room_or_is_a_django_entry_point():
    loose = sorted(
        name
        for name in MODULES
        if name != "calculator" and room(name) is None and name.split(".")[1] not in ENTRY_POINTS
    )
    assert loose == []


@pytest.mark.parametrize("name", sorted(r for r in ROOMS if r != "estimator"))
def test_each_room_says_what_it_holds_and_may_import(name):
    docstring = ast.get_docstring(ast.parse((CALCULATOR / name / "__init__.py").read_text()))
    assert docstring
    assert "import" in docstring  # its rule, in a sentence


def test_imports_run_down_the_rooms_only():
    upward = []
    for module, targets in GRAPH.items():
        here = room(module)
        if here is None:
            continue  # an entry point: may import any room
        for target in targets:
            there = room(target)
            if there is None:
                upward.append(f"{module} -> {target} (an entry point)")
            elif ROOMS.index(there) > ROOMS.index(here):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_no_import_circle():
    # Tarjan's strongly connected components over the module graph: any component of more than
    # one module (or a module importing itself) is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in GRAPH[node]:
                circles.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    assert circles == []


def test_the_check_sees_a_circle_and_an_upward_arrow():
    """The two checks above on a made-up graph: they are not vacuous."""
    global GRAPH
    saved = GRAPH
    try:
        GRAPH = {
            **saved,
            "calculator.inputs.forms": saved["calculator.inputs.forms"] | {"calculator.web.views"},
        }
        with pytest.raises(AssertionError):
            test_imports_run_down_the_rooms_only()
        with pytest.raises(AssertionError):
            test_no_import_circle()
    finally:
        GRAPH = saved
