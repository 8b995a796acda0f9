"""Glue between pydantic (via flask-openapi3) and the area error formats.

Request models subclass :class:`RequestModel`. A failed validation becomes a 400 whose message names the
field (``name: Field required``), rendered in the format of the area the request was for.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from types import UnionType
from typing import Annotated, Any, ClassVar, Self, Union, get_args, get_origin

from flask import Response
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator

from core.errors import ApiError, error_response

# Integers that every SQL integer column (PostgreSQL ``integer`` is 32-bit) and every JSON client can hold.
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
MIN_YEAR, MAX_YEAR = 1900, 2999


_MAX_TEXT_DEPTH = 64
# Bounds of free-form JSON in request bodies (a field whose model says nothing tighter): no list longer
# than MAX_LIST_ITEMS, no object with more than MAX_OBJECT_KEYS keys. Fields that need more declare it.
MAX_LIST_ITEMS = 1000
MAX_OBJECT_KEYS = 200


def unstorable_reason(text: str) -> str | None:
    """Why ``text`` cannot be stored as it is, or None."""
    if "\x00" in text:
        return "must not contain NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must not contain unpaired surrogates"
    return None


def find_unstorable_text(value: Any, depth: int = 0) -> str | None:
    """The first reason ``value`` cannot be stored as sent, or None: a string (keys included) with NUL or
    a lone surrogate, nesting deeper than 64 levels, a list or object beyond the free-form bounds."""
    if isinstance(value, str):
        return unstorable_reason(value)
    if depth > _MAX_TEXT_DEPTH:
        return f"must not be nested more than {_MAX_TEXT_DEPTH} levels deep"
    if isinstance(value, list | tuple) and len(value) > MAX_LIST_ITEMS:
        return f"at most {MAX_LIST_ITEMS} items"
    if isinstance(value, dict) and len(value) > MAX_OBJECT_KEYS:
        return f"at most {MAX_OBJECT_KEYS} keys"
    if isinstance(value, dict):
        for key, item in value.items():
            found = find_unstorable_text(key, depth + 1) or find_unstorable_text(item, depth + 1)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for item in value:
            found = find_unstorable_text(item, depth + 1)
            if found:
                return found
    return None


_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) or (
        isinstance(value, str) and bool(_NUMBER.fullmatch(value.strip()))
    )


def _scalar_kinds(annotation: Any) -> set[Any]:
    """The plain types an annotation admits, ``None`` left out (``datetime | None`` -> {datetime})."""
    if get_origin(annotation) in (Union, UnionType):
        return {kind for arg in get_args(annotation) for kind in _scalar_kinds(arg)}
    if get_origin(annotation) is Annotated:
        return _scalar_kinds(get_args(annotation)[0])
    return set() if annotation is type(None) else {annotation}


class RequestModel(BaseModel):
    """Base of every request body and query model."""

    # defer_build: a model's validator is built when it first validates, not when its module is
    # imported; start-up (every CLI command) would otherwise build all ~400 (docs/benchmarks.md).
    model_config = ConfigDict(
        str_strip_whitespace=True, extra="ignore", allow_inf_nan=False, defer_build=True
    )

    # PATCH models: fields that may be left out but, when sent, may not be null.
    not_null: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="after")
    def _extra_keys_storable(self) -> Self:
        # Models that keep unknown keys (``extra="allow"``) hold the client's own values: same edge rule.
        for key, value in (self.model_extra or {}).items():
            problem = unstorable_reason(key) or find_unstorable_text(value)
            if problem:
                raise ValueError(f"{key}: {problem}")
        return self

    @model_validator(mode="after")
    def _sent_fields_not_null(self) -> Self:
        for name in self.not_null:
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name}: must not be null")
        return self

    @field_validator("*", mode="after")
    @classmethod
    def _bounded_values(cls, value: Any) -> Any:
        # An offset of 10**30 or the date 0001-01-01 must be a 400 naming the field, not an overflow deep in
        # the database driver or in time-zone arithmetic.
        if isinstance(value, int) and not isinstance(value, bool) and not INT_MIN <= value <= INT_MAX:
            raise ValueError(f"must be between {INT_MIN} and {INT_MAX}")
        if isinstance(value, date) and not MIN_YEAR <= value.year <= MAX_YEAR:
            raise ValueError(f"must be a date between the years {MIN_YEAR} and {MAX_YEAR}")
        return value

    # Query strings carry every value as text, so query models read "true"/"1" as booleans; JSON bodies
    # have real booleans and must use them.
    lax_booleans: ClassVar[bool] = False

    @field_validator("*", mode="before")
    @classmethod
    def _edge_rules(cls, value: Any, info: ValidationInfo) -> Any:
        # NUL cannot be stored in PostgreSQL text and a lone surrogate cannot be encoded as UTF-8: refuse
        # both at the edge, naming the field, wherever they hide (nested objects and lists included).
        problem = find_unstorable_text(value)
        if problem:
            raise ValueError(problem)
        field = cls.model_fields.get(info.field_name or "")
        kinds = _scalar_kinds(field.annotation) if field is not None else set()
        if kinds & {datetime, date} and _is_number(value):
            # pydantic would read 0 as 1970-01-01 and 0.5 as half a second past it: a client that sends a
            # number meant something else, so say what is expected.
            raise ValueError("must be an ISO 8601 date or date-time, not a number")
        if kinds == {bool} and not cls.lax_booleans and value is not None and not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value

    def sent_fields(self) -> dict[str, Any]:
        """Only the fields the client actually sent: PATCH semantics."""
        return self.model_dump(exclude_unset=True)


class QueryModel(RequestModel):
    """Base of every query-string model: a parameter the endpoint does not know is a 400 naming it, so a
    misspelt filter never silently returns everything."""

    model_config = ConfigDict(
        str_strip_whitespace=True, extra="forbid", allow_inf_nan=False, defer_build=True
    )
    lax_booleans: ClassVar[bool] = True


def describe_validation_error(error: ValidationError) -> tuple[str, str | None]:
    """One readable sentence for the first problem, and the dotted name of the field it concerns."""
    problems = error.errors(include_url=False)
    if not problems:
        return "Invalid request", None
    first = problems[0]
    location = ".".join(str(part) for part in first.get("loc", ()) if part != "__root__")
    message = first.get("msg", "Invalid value")
    if first.get("type") == "extra_forbidden":
        message = "unknown query parameter"
    if first.get("type") in ("model_type", "dict_type") and not location:
        return "Request body must be a JSON object", None
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if len(problems) > 1:
        others = sorted(
            {".".join(str(p) for p in item.get("loc", ())) for item in problems[1:]} - {location, ""}
        )
        suffix = f" (also invalid: {', '.join(others)})" if others else ""
    else:
        suffix = ""
    if location:
        return f"{location}: {message}{suffix}", location
    return f"{message}{suffix}", None


def validation_error_response(error: ValidationError) -> Response:
    message, field = describe_validation_error(error)
    return error_response(ApiError(400, message, code="parameter_invalid", param=field))
