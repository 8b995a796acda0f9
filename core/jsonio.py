"""The apps' JSON provider: money stays exact.

A ``decimal.Decimal`` left in a response is written as a JSON number with its exact decimal text
(``1234.50`` stays ``1234.50``), never through a float. Areas that answer amounts as strings (most CRM
amounts) put strings in their responses; the pipeline summary's totals are numbers, as the spec's table
says. simplejson is the well-kept encoder that writes decimals natively (``use_decimal``).
"""

from __future__ import annotations

from typing import Any

import simplejson
from flask.json.provider import DefaultJSONProvider


class ExactJSONProvider(DefaultJSONProvider):
    def dumps(self, obj: Any, **kwargs: Any) -> str:
        kwargs.setdefault("default", self.default)
        kwargs.setdefault("ensure_ascii", self.ensure_ascii)
        kwargs.setdefault("sort_keys", self.sort_keys)
        return simplejson.dumps(obj, use_decimal=True, **kwargs)

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        try:
            return super().loads(s, **kwargs)
        except RecursionError:  # thousands of nested brackets: a malformed body, not a server error
            raise ValueError("JSON nested too deeply") from None
