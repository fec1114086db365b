"""The estimator is pure Python: nothing under calculator/estimator imports Django."""

import ast
from pathlib import Path

ESTIMATOR = Path(__file__).resolve().parents[2] / "calculator" / "estimator"


def test_no_module_in_the_estimator_imports_django():
    offenders = []
    for path in ESTIMATOR.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.name}: {name}" for name in names if name.split(".")[0] == "django"
            ]
    assert offenders == []
