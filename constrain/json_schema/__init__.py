"""JSON Schema -> grammar. See ``compiler.py``."""

from constrain.json_schema.compiler import SchemaOptions, schema_to_cfg
from constrain.json_schema.errors import SchemaError, UnsupportedSchemaError

__all__ = ["SchemaOptions", "schema_to_cfg", "SchemaError", "UnsupportedSchemaError"]
