"""What the model reads before a SQL statement: the schema of the file's data source.

Two forms (``gdg.sql.prompt``):

- ``schema`` (default): the data source's tables as compact one-line
  ``CREATE TABLE`` statements (columns with their first type word, foreign
  keys), the tables the statement already names first and then the others by
  relevance to the question, while they fit the budget; then two worked
  examples made from the most relevant table (a question as a comment, its
  query ending in ``;``: a small model learns the shape of an answer from
  them, see docs/EVALUATION.md); then, while room is left, up to three example
  rows of each shown table when the source is a SQLite database (read only if
  cheap, see ``sqlite.sample_rows``); last, one line naming the engine and the
  question written in the comment above the statement. This is the layout
  text-to-SQL prompts use (schema, rows, examples, question), made to fit a
  small window.
- ``plain``: the tables' DDL as written, whole while it fits, then one-line
  summaries (the earlier form, kept for comparison in ``bench quality``).

The budget is in characters (``gdg.contextTokens`` × share × 3 characters per
token): counting tokens would need the model's tokenizer, which analyzers
never see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gdg_lsp.languages.sql.dialects import Dialect
from gdg_lsp.languages.sql.lexer import significant, tokenize
from gdg_lsp.languages.sql.schema import Table
from gdg_lsp.words import comment_text

ROW_CHARS = 160
"""At most this much of one example row."""


def _comment(text: str) -> str:
    """One ``--`` line whatever ``text`` holds (a value, a question, a name): the model reads
    what follows it as SQL, so nothing in it may end the line (``words.comment_text``)."""
    return "-- " + comment_text(text)


def compact_ddl(table: Table) -> str:
    """``CREATE TABLE name (col type, …, FOREIGN KEY (c) REFERENCES t (c));`` on one line."""
    parts = []
    for column in table.columns:
        kind = column.type.split("(")[0].split()[0] if column.type.strip() else ""
        parts.append(f"{column.name} {kind}".strip())
    for fk in table.foreign_keys:
        target = f"{fk.ref_table} ({', '.join(fk.ref_columns)})" if fk.ref_columns else fk.ref_table
        parts.append(f"FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {target}")
    keyword = "VIEW" if table.kind == "view" else "TABLE"
    return f"CREATE {keyword} {table.name} ({', '.join(parts)});"


def _row(values: tuple) -> str:
    shown = "(" + ", ".join("NULL" if v is None else repr(v) if isinstance(v, str) else str(v) for v in values) + ")"
    return shown if len(shown) <= ROW_CHARS else shown[: ROW_CHARS - 2] + "…)"


def worked_examples(table: Table) -> list[str]:
    """Two question/query pairs about ``table`` (only its own names): the shape of an answer."""
    examples = [_comment(f"Question: How many rows are there in {table.name}?"), f"SELECT count(*) FROM {table.name};"]
    columns = [c.name for c in table.columns]
    if len(columns) >= 2:
        examples += [_comment(f"Question: Show the {columns[1]} of each {table.name}, sorted by {columns[0]}."),
                     f"SELECT {columns[1]} FROM {table.name} ORDER BY {columns[0]};"]
    return examples


def schema_prompt(tables: Sequence[Table], budget_chars: int, dialect: Dialect, question: str = "",
                  rows: Mapping[str, list[tuple]] | None = None) -> str:
    """The schema-aware prompt (see the module docstring); "" when no table fits.

    What goes in, by value to the model: the tables' DDL (most relevant first), then the
    worked examples, then the example rows; each only while the budget allows."""
    rows = rows or {}
    closing = [f"-- Using valid {dialect.title}, answer the question with the tables above."]
    if question:
        closing.append(_comment(f"Question: {' '.join(question.split())}"))
    head = f"-- Database schema ({dialect.title}):"

    def size(lines: Sequence[str]) -> int:
        return sum(len(line) + 1 for line in lines)

    used = size([head, *closing])
    shown: list[tuple[Table, str]] = []
    for table in tables:
        line = compact_ddl(table)
        if used + len(line) + 1 > budget_chars:
            continue  # a smaller table further down may still fit
        shown.append((table, line))
        used += len(line) + 1
    if not shown:
        return ""
    examples = worked_examples(shown[0][0])
    if used + size(examples) <= budget_chars:
        used += size(examples)
    else:
        examples = []
    body: list[str] = []
    for table, line in shown:
        body.append(line)
        sample = rows.get(table.name)
        if sample:
            line = _comment(f"{len(sample)} example row{'s' if len(sample) > 1 else ''}: " + " ".join(_row(r) for r in sample))
            if used + len(line) + 1 <= budget_chars:
                body.append(line)
                used += len(line) + 1
    return "\n".join([head, *body, *examples, *closing]) + "\n\n"


def plain_prompt(ddl: Sequence[str], budget_chars: int) -> str:
    """The tables' DDL, most relevant first, within ``budget_chars``: whole
    definitions while they fit, then one-line summaries, then nothing."""
    parts = ["-- Database schema:"]
    used = len(parts[0]) + 1
    for definition in ddl:
        if used + len(definition) + 1 <= budget_chars:
            parts.append(definition)
            used += len(definition) + 1
            continue
        summary = _summary(definition)
        if summary and used + len(summary) + 1 <= budget_chars:
            parts.append(summary)
            used += len(summary) + 1
    if len(parts) == 1:
        return ""
    return "\n".join(parts) + "\n\n"


def _summary(definition: str) -> str:
    """``-- name(col, col, …)`` for a CREATE statement."""
    toks = significant(tokenize(definition))
    try:
        start = next(i for i, t in enumerate(toks) if t.text == "(")
    except StopIteration:
        return ""
    name = toks[start - 1].text
    columns = []
    depth = 0
    expect_name = True
    for tok in toks[start + 1 :]:
        if tok.text == "(":
            depth += 1
        elif tok.text == ")":
            if depth == 0:
                break
            depth -= 1
        elif tok.text == "," and depth == 0:
            expect_name = True
            continue
        elif expect_name and depth == 0:
            if tok.kind in ("word", "quoted") and not tok.is_word("primary", "foreign", "constraint", "unique", "check"):
                columns.append(tok.text)
            expect_name = False
    return _comment(f"{name}({', '.join(columns)})")


def question_above(text: str, statement_start: int) -> str:
    """The comment written right above a statement (its question), as plain text."""
    lines: list[str] = []
    for tok in reversed(tokenize(text, max(0, statement_start - 2000), statement_start)):
        if tok.kind == "space":
            if tok.text.count("\n") > 1 and lines:
                break  # a blank line ends the comment block
            continue
        if tok.kind != "comment":
            break
        body = tok.text[2:] if tok.text.startswith("--") else tok.text[2:-2]
        if body.strip().lower().startswith("gdg:"):
            continue  # a data source directive, not a question
        lines.append(body.strip())
    return " ".join(reversed([line for line in lines if line]))
