"""The one base of every response shape.

Each area declares its responses once as pydantic models: they feed the OpenAPI document and serialise
what the services return (ORM rows, dataclasses, dicts) with ``Model.dump(obj)``. On the wire, ids are
text and instants are ISO 8601 with milliseconds and ``Z`` (``core.db.isoformat``); JSON columns that
may hold null read as ``{}`` where a field says so (``WireObject``).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from core.db import isoformat


def wire_value(value: Any) -> Any:
    """A UUID as text, a datetime as the wire's ISO 8601; anything else as it is."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return isoformat(value)
    return value


def _object(value: Any) -> Any:
    return {} if value is None else value


WireText = Annotated[str, BeforeValidator(wire_value)]
WireOptionalText = Annotated[str | None, BeforeValidator(wire_value)]
WireInstant = Annotated[str, BeforeValidator(wire_value), Field(description="ISO 8601, UTC, milliseconds")]
WireObject = Annotated[dict[str, Any], BeforeValidator(_object)]


class ResponseModel(BaseModel):
    """Reads domain objects by attribute; ``derive`` computes the fields a row does not hold itself."""

    # defer_build: validators built on first use, as RequestModel's
    model_config = ConfigDict(from_attributes=True, populate_by_name=True, defer_build=True)

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        """Fields computed from the row rather than read from an attribute of the same name."""
        return {}

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, data: Any) -> Any:
        if isinstance(data, dict | BaseModel):
            return data
        derived = cls.derive(data)
        if not derived:
            return data
        return {name: derived[name] if name in derived else getattr(data, name) for name in cls.model_fields}

    @field_validator("*", mode="before")
    @classmethod
    def _wire(cls, value: Any) -> Any:
        return wire_value(value)

    @classmethod
    def dump(cls, obj: Any, **options: Any) -> Any:
        """The JSON body for ``obj`` in this shape."""
        return cls.model_validate(obj).model_dump(mode="json", by_alias=True, **options)
