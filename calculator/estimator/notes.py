"""The assumptions an estimate returns, collected in the order its formulas run."""

from __future__ import annotations

from dataclasses import dataclass, field

from calculator.estimator.schemas import Assumption


@dataclass
class Notes:
    """Each note keeps its English text, the template the page translates and its source."""

    items: list[Assumption] = field(default_factory=list)

    def add(self, template: str, source: str, **params: str | int | float) -> None:
        self.items.append(
            Assumption(text=template % params, template=template, params=params, source=source)
        )
