"""Schema errors name the keyword and its JSON pointer (defined in ``constrain.errors``, exported
as ``constrain.SchemaError``, ``constrain.UnsupportedSchemaError``, ``constrain.EmptySchemaError``)."""

from __future__ import annotations

from constrain.errors import EmptySchemaError, SchemaError, UnsupportedSchemaError

__all__ = ["SchemaError", "UnsupportedSchemaError", "EmptySchemaError"]
