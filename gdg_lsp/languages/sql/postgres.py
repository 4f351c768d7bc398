"""Γ source: a live PostgreSQL database named in ``gdg.sql.connections``.

Catalog introspection only (``pg_catalog``: relations, columns, foreign
keys), inside a READ ONLY transaction that is rolled back, with a statement
timeout and a socket timeout; the whole call is also bounded by a wall-clock
limit, so a server that accepts the connection and then hangs cannot hold a
request. The driver is pg8000 (pure Python). Errors become a message that
never shows the password.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from gdg_lsp.languages.sql.lexer import spell
from gdg_lsp.languages.sql.schema import Column, ForeignKey, Schema, Table

DEFAULT_TIMEOUT = 5.0

_RELATIONS = """
SELECT n.nspname::text, c.relname::text, c.relkind::text, a.attname::text,
       pg_catalog.format_type(a.atttypid, a.atttypmod)
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
ORDER BY n.nspname, c.relname, a.attnum
"""

_FOREIGN_KEYS = """
SELECT n.nspname::text, c.relname::text, rn.nspname::text, rc.relname::text,
       ARRAY(SELECT a.attname::text FROM unnest(co.conkey) WITH ORDINALITY AS k(num, pos)
             JOIN pg_catalog.pg_attribute a ON a.attrelid = co.conrelid AND a.attnum = k.num ORDER BY k.pos),
       ARRAY(SELECT a.attname::text FROM unnest(co.confkey) WITH ORDINALITY AS k(num, pos)
             JOIN pg_catalog.pg_attribute a ON a.attrelid = co.confrelid AND a.attnum = k.num ORDER BY k.pos)
FROM pg_catalog.pg_constraint co
JOIN pg_catalog.pg_class c ON c.oid = co.conrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_class rc ON rc.oid = co.confrelid
JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace
WHERE co.contype = 'f'
"""

_KINDS = {"r": "table", "p": "table", "f": "table", "v": "view", "m": "view"}


@dataclass(frozen=True)
class ConnectionParams:
    host: str | None = None
    port: int = 5432
    user: str | None = None
    password: str | None = None
    database: str | None = None
    unix_sock: str | None = None

    def kwargs(self) -> dict[str, Any]:
        params: dict[str, Any] = {"user": self.user or "postgres", "database": self.database, "password": self.password}
        if self.unix_sock:
            params["unix_sock"] = self.unix_sock
        else:
            params["host"], params["port"] = self.host or "localhost", self.port
        return params


def redact(dsn: str) -> str:
    """The DSN without its password, for messages."""
    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", dsn)


def parse_dsn(dsn: str) -> ConnectionParams:
    """A ``postgresql://`` URL or a ``key=value`` connection string."""
    dsn = dsn.strip()
    values: dict[str, str] = {}
    if dsn.startswith(("postgresql://", "postgres://")):
        url = urlparse(dsn)
        if url.hostname:
            values["host"] = unquote(url.hostname)
        if url.port:
            values["port"] = str(url.port)
        if url.username:
            values["user"] = unquote(url.username)
        if url.password is not None:
            values["password"] = unquote(url.password)
        if url.path and url.path != "/":
            values["dbname"] = unquote(url.path.lstrip("/"))
        for key, items in parse_qs(url.query).items():
            values[key] = items[-1]
    else:
        for m in re.finditer(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", dsn):
            value = m.group(2)
            values[m.group(1)] = value[1:-1].replace("\\'", "'") if value.startswith("'") else value
        if not values:
            raise ValueError("not a PostgreSQL connection string (expected postgresql://… or key=value pairs)")
    port = int(values.get("port", "5432"))
    host = values.get("host")
    unix_sock = f"{host.rstrip('/')}/.s.PGSQL.{port}" if host and host.startswith("/") else None
    return ConnectionParams(None if unix_sock else host, port, values.get("user"), values.get("password"),
                            values.get("dbname") or values.get("database"), unix_sock)


def _spell(name: str) -> str:
    # PostgreSQL folds unquoted names to lower case: anything else must be quoted
    return spell(name, '"', fold_lower=True)


def _qualified(namespace: str, relname: str) -> str:
    return _spell(relname) if namespace == "public" else f"{_spell(namespace)}.{_spell(relname)}"


def introspect(dsn: str, timeout: float = DEFAULT_TIMEOUT) -> Schema:
    """The relations of the database at ``dsn``; never raises, never waits much
    longer than ``timeout`` (a failure is a warning in the returned schema)."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["schema"] = _introspect(dsn, timeout)
        except Exception as err:  # the driver raises many kinds; all mean "no schema this time"
            outcome["error"] = err

    worker = threading.Thread(target=work, name="gdg-sql-postgres", daemon=True)
    worker.start()
    worker.join(timeout + 1.0)
    shown = redact(dsn)
    if worker.is_alive():
        return Schema(warnings=[f"PostgreSQL {shown}: no answer within {timeout:g} s"])
    if "error" in outcome:
        message = str(outcome["error"]).replace(dsn, shown)
        if (password := _password(dsn)) :
            message = message.replace(password, "***")
        return Schema(warnings=[f"PostgreSQL {shown}: {type(outcome['error']).__name__}: {message}"])
    return outcome["schema"]


def _password(dsn: str) -> str | None:
    try:
        return parse_dsn(dsn).password
    except ValueError:
        return None


def _introspect(dsn: str, timeout: float) -> Schema:
    import pg8000.native

    params = parse_dsn(dsn)
    connection = pg8000.native.Connection(timeout=timeout, application_name="gdg-lsp", **params.kwargs())
    try:
        connection.run("START TRANSACTION READ ONLY")
        connection.run(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
        relations = connection.run(_RELATIONS)
        foreign_keys = connection.run(_FOREIGN_KEYS)
        connection.run("ROLLBACK")
    finally:
        try:
            connection.close()
        except Exception:
            pass
    return _schema(relations, foreign_keys, f"postgres:{redact(dsn)}")


def _schema(relations: list[list[Any]], foreign_keys: list[list[Any]], source: str) -> Schema:
    columns: dict[tuple[str, str], list[Column]] = {}
    kinds: dict[tuple[str, str], str] = {}
    for namespace, relname, relkind, attname, type_name in relations:
        key = (namespace, relname)
        kinds[key] = _KINDS.get(relkind, "table")
        bucket = columns.setdefault(key, [])
        if attname is not None:
            bucket.append(Column(_spell(attname), type_name or ""))
    fks: dict[tuple[str, str], list[ForeignKey]] = {}
    for namespace, relname, ref_ns, ref_rel, cols, ref_cols in foreign_keys:
        fks.setdefault((namespace, relname), []).append(
            ForeignKey(tuple(_spell(c) for c in cols or ()), _qualified(ref_ns, ref_rel), tuple(_spell(c) for c in ref_cols or ()))
        )
    tables = [
        Table(_qualified(*key), tuple(cols), kinds[key], source, tuple(fks.get(key, ())))
        for key, cols in columns.items()
    ]
    return Schema(tables)


def connections_from(settings: Any) -> list[str]:
    """The DSNs in ``settings.sql.connections`` (a Settings object or a plain mapping)."""
    sql = getattr(settings, "sql", None)
    if sql is None and isinstance(settings, Mapping):
        sql = settings.get("sql")
    value = getattr(sql, "connections", None)
    if value is None and isinstance(sql, Mapping):
        value = sql.get("connections")
    return [str(v) for v in value or () if str(v).strip()]
