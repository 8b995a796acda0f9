"""Substring search ("contains", case-insensitive, ``%`` and ``_`` literal) served by a real text index.

``LIKE '%q%'`` cannot use a B-tree: every row of the organization is read and compared. Each searchable
table therefore has a trigram index over its searched columns, built by its area's migration:

- PostgreSQL: one GIN ``gin_trgm_ops`` index per column (``ix_<table>_<column>_trgm``, extension
  ``pg_trgm``). The ``ILIKE`` itself is served by it (a bitmap scan of the trigrams, rows rechecked), so
  the query stays the plain ``ILIKE`` with exactly its meaning.
- SQLite: an external-content FTS5 table ``<table>_fts`` with the ``trigram`` tokenizer, keyed on the
  table's rowid and kept in step by three triggers (insert, delete, update *of the searched columns*,
  so the frequent updates of other columns cost nothing). Candidates are found with ``MATCH "q"`` and
  rechecked with the same ``ILIKE``: the result is exactly the ``ILIKE``'s (the tokenizer also folds
  non-ASCII case, which SQLite's ``LIKE`` does not, so the recheck is what keeps "accents as before").
  A ``VACUUM`` may renumber rowids of tables without an INTEGER PRIMARY KEY: run
  ``INSERT INTO <table>_fts(<table>_fts) VALUES('rebuild')`` after one (``rebuild_statements``).

A query shorter than three characters has no trigram to look up: it is the ``ILIKE`` alone on both stores
(PostgreSQL's planner then reads the rows; SQLite scans), which is what a trigram index would do anyway.

The index objects are not declared on the models (autogenerate cannot express them): :func:`text_index`
registers their names so that the model/migration comparison (``core.db.compared``) skips them, the way
``ordered_index`` does; their use is proven by plan tests instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, column, literal_column, or_, select, table

from core.db import UNMODELLED, db
from core.text import LIKE_ESCAPE, contains_pattern

# Trigram indexes find nothing for fewer characters than this.
MIN_INDEXED_LENGTH = 3
# The FTS5 tables' own shadow tables (``<name>_data``, ``_idx``, ``_docsize``, ``_config``).
FTS5_SHADOW_SUFFIXES = ("_data", "_idx", "_docsize", "_config", "_content")


@dataclass(frozen=True)
class TextIndex:
    """The searched columns of one table."""

    table: str
    columns: tuple[str, ...]

    @property
    def fts_table(self) -> str:
        return f"{self.table}_fts"

    def trigram_index(self, column: str) -> str:
        return f"ix_{self.table}_{column}_trgm"

    @property
    def names(self) -> set[str]:
        """Every schema object the index is made of, on either store."""
        fts = {self.fts_table, *(self.fts_table + suffix for suffix in FTS5_SHADOW_SUFFIXES)}
        return fts | {self.trigram_index(column) for column in self.columns}


TEXT_INDEXES: dict[str, TextIndex] = {}


def text_index(table: str, *columns: str) -> TextIndex:
    """Declare the text index of ``table`` (created by a migration) and keep it out of the comparison."""
    index = TextIndex(table, columns)
    TEXT_INDEXES[table] = index
    UNMODELLED.update(index.names)
    return index


def fts_phrase(text: str) -> str:
    """``text`` as one FTS5 phrase: a string in double quotes (quotes doubled) is taken literally, and the
    trigram tokenizer matches a phrase as a contiguous substring."""
    return '"' + text.replace('"', '""') + '"'


def contains(index: TextIndex, model: Any, text: str) -> ColumnElement[bool]:
    """Rows of ``model`` (the mapped class of ``index.table``) where any searched column contains ``text``.

    One expression for both stores; only SQLite adds the FTS5 lookup (PostgreSQL's ILIKE is already the
    indexed form)."""
    columns = model.__table__.c
    pattern = contains_pattern(text)
    like = or_(*(columns[name].ilike(pattern, escape=LIKE_ESCAPE) for name in index.columns))
    if len(text) < MIN_INDEXED_LENGTH or db.session.get_bind().dialect.name != "sqlite":
        return like
    fts = table(index.fts_table, column("rowid"))
    matched = select(fts.c.rowid).where(literal_column(index.fts_table).match(fts_phrase(text)))
    return and_(literal_column(f"{index.table}.rowid").in_(matched), like)


def rebuild_statements(index: TextIndex) -> list[str]:
    """SQLite: rebuild an FTS5 table from its content table (after a VACUUM, or to repair)."""
    return [f"INSERT INTO {index.fts_table}({index.fts_table}) VALUES('rebuild')"]
