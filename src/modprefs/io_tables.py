"""The one reader for user tables (ratings, trials, participants, stimuli/clips, assignments, judges).

Every entry point that reads such a table -- the ratings validation, ``modprefs stats`` and the
workflow's statistics adapters -- goes through :func:`read_table`, so a value means the same thing
everywhere:

* **Ids are strings, verbatim.** In an id column (:func:`is_id_column`: ``participant_id``,
  ``prompt_id``, ``clip_id``, ... any ``*_id``, and ``preference``) the NA tokens of pandas
  (``NA``, ``None``, ``null``, ``nan``, ``NULL``, ...) are ordinary values: a participant called
  ``NA`` stays ``"NA"``. Only an empty cell is missing. Other columns get pandas' usual NA tokens
  and type inference (``strings=False``) or stay raw strings (``strings=True``, for validation).
* **Encoding**: UTF-8 (with or without BOM) and UTF-16 with a BOM are decoded; anything else is a
  :class:`TableError` naming the file, line, column and byte (e.g. a Latin-1 export).
* **Delimiter**: comma, tab, semicolon or pipe, chosen from the header line (the one that splits
  it into the most fields; ``.tsv`` files are tab-separated); parse errors name the delimiter.
* **Cell size**: no limit (Python's ``csv`` module stops at 131,072 characters a field; :func:`csv_rows` lifts
  that for the checks here, and pandas has none), so a long justification or response is read as it is.
* **Empty files**: a 0-byte or blank file is an error; a header without data rows is an error
  unless ``allow_empty=True``. A column name given twice in the header is an error.
* **Parquet** (``.parquet``/``.pq``) is read with pyarrow; ids become strings the same way.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from modprefs.errors import UserInputError

# pandas' default NA strings (pandas._libs.parsers.STR_NA_VALUES); not special in id columns.
NA_TOKENS: tuple[str, ...] = (
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "<NA>",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "None",
    "n/a",
    "nan",
    "null",
)
ID_COLUMNS = frozenset(
    {
        "participant_id",
        "prompt_id",
        "clip_id",
        "conversation_id",
        "item_id",
        "preference",
        "judge",
        "prompt_version",
        "slot_id",
    }
)
DELIMITERS = (",", "\t", ";", "|")
PARQUET_SUFFIXES = (".parquet", ".pq")
TABLE_SUFFIXES = (".csv", ".tsv", ".txt", *PARQUET_SUFFIXES)


class TableError(UserInputError):
    """A table that cannot be read as a table; the message names the file (and line/column)."""


def as_bool_column(values: pd.Series) -> pd.Series:
    """Booleans from a column read from CSV (bool, 0/1 or 'True'/'False' strings); missing -> False."""
    if values.dtype == bool:
        return values
    text = values.astype("string").str.strip().str.lower()
    return text.isin(["true", "1", "1.0", "yes"]).fillna(False).astype(bool)


def is_id_column(name: str) -> bool:
    """True for identifier columns whose cells are read verbatim (see the module docstring)."""
    return name in ID_COLUMNS or name.endswith("_id")


def decode(data: bytes, path: str | os.PathLike[str]) -> str:
    """``data`` as text: UTF-8 (BOM optional) or BOM-marked UTF-16; otherwise a :class:`TableError`."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise TableError(f"{path}: has a UTF-16 byte-order mark but is not valid UTF-16 ({exc.reason})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        kind = (
            "binary data, not a text table"
            if b"\x00" in data[:4096]
            else "it may be Latin-1/Windows-1252 or another legacy encoding"
        )
        raise TableError(
            f"{path}: not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}, column {column} "
            f"cannot be decoded ({kind}); save the file as UTF-8"
        ) from None


@contextlib.contextmanager
def _no_field_limit() -> Iterator[None]:
    """Within the block the ``csv`` module reads fields of any length (its default stops at 131,072 characters)."""
    before = csv.field_size_limit()
    csv.field_size_limit(min(sys.maxsize, 2**62))
    try:
        yield
    finally:
        csv.field_size_limit(before)


def csv_rows(text: str, delim: str, path: str | os.PathLike[str]) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of every record of ``text`` (no limit on a field's length); a record the ``csv``
    module cannot parse is a :class:`TableError` naming the file and line."""
    reader = csv.reader(io.StringIO(text), delimiter=delim)
    with _no_field_limit():
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise TableError(f"{path}: line {reader.line_num}: cannot be parsed as CSV ({exc})") from None
            yield reader.line_num, row


def sniff_delimiter(header: str, path: str | os.PathLike[str]) -> str:
    """The delimiter of a header line: the candidate giving the most fields (comma on ties; tab for .tsv)."""
    if str(path).lower().endswith(".tsv"):
        return "\t"
    best, best_n = ",", 1
    for delim in DELIMITERS:
        n = len(next((row for _, row in csv_rows(header, delim, path)), []))
        if n > best_n:
            best, best_n = delim, n
    return best


def _header(text: str, delim: str, path: str | os.PathLike[str]) -> list[str]:
    return [c.strip() for c in next((row for _, row in csv_rows(text, delim, path)), [])]


def _check_rows(text: str, delim: str, n_fields: int, path: str | os.PathLike[str], offset: int = 0) -> None:
    """Every non-blank line has the header's number of fields (pandas would shift or pad them)."""
    for line, row in csv_rows(text, delim, path):
        if row and len(row) != n_fields and any(cell.strip() for cell in row):
            shown = {"\t": "tab"}.get(delim, delim)
            raise TableError(
                f"{path}: line {line + offset} has {len(row)} field(s) but the header has "
                f"{n_fields} "
                f"(delimiter {shown!r}); quote values that contain the delimiter"
            )


def _check_header(columns: list[str], path: str | os.PathLike[str]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(columns):
        if name == "":
            raise TableError(f"{path}: column {i + 1} of the header has no name")
        if name in seen:
            raise TableError(f"{path}: column {name!r} appears more than once in the header")
        seen.add(name)


def _stringify(value: object) -> str:
    """A Parquet cell as the text a CSV would hold ('' for null; integral floats without '.0')."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def strings_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Every cell of a typed frame (Parquet, a ``datasets`` dataset) as a CSV-like string ('' = null)."""
    out = pd.DataFrame({str(c): [_stringify(v) for v in df[c].tolist()] for c in df.columns}, index=df.index)
    return out.reset_index(drop=True)


def typed_from_strings(raw: pd.DataFrame) -> pd.DataFrame:
    """The typed view of a strings frame, as :func:`read_table` gives for a CSV (ids verbatim)."""
    buf = io.StringIO()
    raw.to_csv(buf, index=False)
    return _parse_typed(buf.getvalue(), ",", list(raw.columns), "<table>")


def _parse_typed(text: str, delim: str, columns: list[str], path: str | os.PathLike[str]) -> pd.DataFrame:
    ids = [c for c in columns if is_id_column(c)]
    df = pd.read_csv(
        io.StringIO(text),
        sep=delim,
        header=0,
        names=columns,
        index_col=False,
        dtype={c: str for c in ids},
        keep_default_na=False,
        na_values={c: list(NA_TOKENS) for c in columns if c not in ids},
    )
    for c in ids:  # an empty id cell is missing; "NA" is an id
        df[c] = df[c].astype(object).where(df[c].astype(str).str.strip() != "", None)
    return df


def read_table(
    path: str | os.PathLike[str], *, strings: bool = False, allow_empty: bool = False, what: str | None = None
) -> pd.DataFrame:
    """Read a CSV/TSV (delimiter sniffed) or Parquet table (see the module docstring).

    Args:
        path: the file.
        strings: True -> every cell a string ('' = empty), for validation; False -> pandas types
            with ids verbatim (NA tokens are missing only outside id columns).
        allow_empty: accept a header without data rows (a 0-row frame with the columns).
        what: how to call the table in messages (default: the path).

    Raises:
        TableError: missing, empty, header-only (unless allowed), non-UTF-8, unparsable, or a
            duplicated column name -- the message names the file.
    """
    path = Path(path)
    name = what or str(path)
    if path.is_dir():
        raise TableError(
            f"{name}: is a folder; give the table's file (CSV, TSV or Parquet)" + (f" ({path})" if what else "")
        )
    if not path.is_file():  # a symbolic-link loop or a dangling link is said as such (modprefs.file_access)
        from modprefs.file_access import file_problem

        raise TableError(f"{name}: {file_problem(path) or 'file not found'}" + (f" ({path})" if what else ""))
    if path.suffix.lower() in PARQUET_SUFFIXES:
        return _read_parquet(path, name, strings, allow_empty)
    text = decode(path.read_bytes(), name)
    if not text.strip():
        raise TableError(f"{name}: the file is empty (no header row)")
    body = text.lstrip("\r\n")
    delim = sniff_delimiter(body.splitlines()[0], path)
    columns = _header(body, delim, name)
    _check_header(columns, name)
    _check_rows(body, delim, len(columns), name, offset=text[: len(text) - len(body)].count("\n"))
    try:
        if strings:
            df = pd.read_csv(
                io.StringIO(text),
                sep=delim,
                header=0,
                names=columns,
                index_col=False,
                dtype=str,
                keep_default_na=False,
                na_values=[],
            )
        else:
            df = _parse_typed(text, delim, columns, name)
    except (pd.errors.ParserError, ValueError) as exc:
        shown = {"\t": "tab"}.get(delim, delim)
        raise TableError(f"{name}: cannot be parsed as a table (delimiter {shown!r}): {str(exc).strip()}") from None
    if df.empty and not allow_empty:
        raise TableError(f"{name}: has a header but no data rows")
    return df


def _read_parquet(path: Path, name: str, strings: bool, allow_empty: bool) -> pd.DataFrame:
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        from modprefs.file_access import printable

        raise TableError(f"{name}: cannot be read as Parquet ({type(exc).__name__}: {printable(exc)})") from None
    columns = [str(c).strip() for c in df.columns]
    _check_header(columns, name)
    df.columns = columns
    if df.empty and not allow_empty:
        raise TableError(f"{name}: has no rows")
    raw = strings_frame(df)
    return raw if strings else typed_from_strings(raw)
