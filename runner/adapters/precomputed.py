"""The `precomputed` adapter: responses stored with the cases or in a side file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from runner.adapters.base import AdapterContext, BaseAdapter
from runner.data.loading import iter_cases
from runner.data.models import Case, Response


@dataclass
class PrecomputedModel(BaseAdapter):
    """Replay stored responses.

    Args:
        system: A system whose responses the dataset stores (``dataset.systems``); when null,
            the dataset's ``default_system``, else the responses stored inside the cases.
        responses: A side file of ``{"id", "answer", "citations"}`` records keyed by case id;
            takes precedence over `system`.
    """

    system: Optional[str] = None
    responses: Optional[str] = None

    # Stored responses are cheap to read: caching them would only duplicate the file.
    cacheable = False

    def bind(self, context: AdapterContext) -> None:
        """Load the stored responses of the chosen system or side file."""
        super().bind(context)
        self._answered: set[str] = set()
        self._stored: dict[str, Response] | None
        if self.responses:
            self._stored = {}
            for case in iter_cases(self.responses,
                                   transform=lambda r: {"query": "", **r}):
                self._stored[case.id] = case.response or Response()
        else:
            self._stored = context.dataset.responses(self.system)

    def respond_sync(self, cases: Sequence[Case]) -> list[Response]:
        """The stored response of each case, or an error response when there is none."""
        out = []
        for case in cases:
            resp = self._stored.get(case.id) if self._stored is not None else case.response
            if resp is None:
                resp = Response(error=f"no stored response for case {case.id!r} in "
                                      f"{self._where()}")
            else:
                self._answered.add(case.id)
            out.append(resp)
        return out

    def notes(self) -> list[str]:
        """Stored responses whose ids match no case (when some match: none matching fails the
        run on its own), unless ``dataset.limit`` left cases out on purpose."""
        if not self._stored or not self._answered or self.context.dataset.limit is not None:
            return []
        unused = [i for i in self._stored if i not in self._answered]
        if not unused:
            return []
        shown = ", ".join(repr(i) for i in unused[:5]) + (", ..." if len(unused) > 5 else "")
        return [f"{self._where()}: {len(unused)} of {len(self._stored)} responses match no "
                f"case: {shown}"]

    def _where(self) -> str:
        if self.responses:
            return f"model.responses {self.responses}"
        return f"system {self.system!r}" if self.system else "the stored responses"
