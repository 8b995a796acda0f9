"""The apps' JSON provider: fast, and money stays exact.

Responses are written by orjson (about ten times faster than the standard library's encoder on our
payloads). A ``decimal.Decimal`` left in a response is written as a JSON number with its exact decimal
text (``1234.50`` stays ``1234.50``), never through a float: orjson has no decimal type, so each one is
handed over as an ``orjson.Fragment`` of its text. Areas that answer amounts as strings (most CRM
amounts) put strings in their responses; the pipeline summary's totals are numbers, as the spec's table
says. Anything orjson refuses (an integer beyond 64 bits, an option it lacks) goes through simplejson,
the well-kept encoder that writes decimals natively, so the answer never depends on which one wrote it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson
import simplejson
from flask.json.provider import DefaultJSONProvider

# Datetimes and dataclasses go through Flask's own ``default`` (as with the standard encoder) so that
# switching encoders changes no response; non-string keys are written as strings, as json does.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS


class ExactJSONProvider(DefaultJSONProvider):
    def _orjson_default(self, value: Any) -> Any:
        if isinstance(value, Decimal):
            if not value.is_finite():
                raise TypeError("NaN and infinite decimals have no JSON form")
            return orjson.Fragment(str(value))
        return self.default(value)

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        sort_keys = kwargs.pop("sort_keys", self.sort_keys)
        indent = kwargs.pop("indent", None)
        kwargs.pop("ensure_ascii", None)  # UTF-8 either way once parsed; orjson writes UTF-8
        if not kwargs and indent in (None, 2):
            options = _OPTIONS | (orjson.OPT_SORT_KEYS if sort_keys else 0)
            options |= orjson.OPT_INDENT_2 if indent else 0
            try:
                return orjson.dumps(obj, default=self._orjson_default, option=options).decode()
            except TypeError:
                pass  # e.g. an integer beyond 64 bits: the exact slow path below
        kwargs.setdefault("default", self.default)
        return simplejson.dumps(
            obj, use_decimal=True, sort_keys=sort_keys, indent=indent, ensure_ascii=False, **kwargs
        )

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        try:
            return super().loads(s, **kwargs)
        except RecursionError:  # thousands of nested brackets: a malformed body, not a server error
            raise ValueError("JSON nested too deeply") from None
