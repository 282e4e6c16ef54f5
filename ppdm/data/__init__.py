"""Data layer: schema, table I/O, shipped datasets."""

from ppdm.data.io import atomic_path, atomic_write_text, read_table, write_table
from ppdm.data.schema import Schema

__all__ = ["Schema", "read_table", "write_table", "atomic_path", "atomic_write_text"]
