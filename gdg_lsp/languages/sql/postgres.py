"""Γ source: a live PostgreSQL database named in ``gdg.sql.connections``.

Catalog introspection only (``pg_catalog``: relations, columns, foreign
keys), inside a READ ONLY transaction that is rolled back, with a statement
timeout and a socket timeout; the whole call is also bounded by a wall-clock
limit, so a server that accepts the connection and then hangs cannot hold a
request. The driver is pg8000 (pure Python). Errors become a message that
never shows the password (``redact``, ``scrub``).

DSN options are honoured as libpq defines them: ``sslmode`` (``verify-full``
checks the certificate chain against ``sslrootcert`` and the host name;
``verify-ca`` the chain; ``require`` encrypts without checking; ``prefer``,
the default, uses TLS when the server offers it), ``sslrootcert`` (a file, or
``system``), ``sslcert``/``sslkey``, ``connect_timeout``, ``options`` and
``application_name``. Any other option is named in a warning.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, unquote

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


SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
"""libpq's ``sslmode`` values (https://www.postgresql.org/docs/current/libpq-ssl.html)."""

PASSED_OPTIONS = ("host", "port", "dbname", "user", "password", "sslmode", "sslrootcert", "sslcert", "sslkey",
                  "connect_timeout", "options", "application_name")
"""DSN options honoured; any other is named in a warning (never silently dropped)."""


class DsnError(ValueError):
    """A DSN that cannot be used as written (the message never holds the password)."""


@dataclass(frozen=True)
class ConnectionParams:
    host: str | None = None
    port: int = 5432
    user: str | None = None
    password: str | None = None
    database: str | None = None
    unix_sock: str | None = None
    sslmode: str = "prefer"
    sslrootcert: str | None = None
    sslcert: str | None = None
    sslkey: str | None = None
    connect_timeout: float | None = None
    options: str | None = None
    application_name: str | None = None
    ignored: tuple[str, ...] = ()
    """Options of the DSN that gdg-lsp does not honour (reported, not silently dropped)."""

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``pg8000.native.Connection`` (the timeout aside)."""
        params: dict[str, Any] = {"user": self.user or "postgres", "database": self.database, "password": self.password,
                                  "ssl_context": self.ssl_context()}
        if self.unix_sock:
            params["unix_sock"] = self.unix_sock
        else:
            params["host"], params["port"] = self.host or "localhost", self.port
        if self.options:
            params["startup_params"] = {"options": self.options}
        if self.application_name:
            params["application_name"] = self.application_name
        return params

    def ssl_context(self) -> Any:
        """What pg8000 takes as ``ssl_context``: False (no TLS), None (TLS when the server
        offers it, unverified: libpq's ``prefer``), or a context that TLS must use."""
        if self.unix_sock or self.sslmode == "disable":
            return False  # libpq never uses TLS on a Unix socket
        if self.sslmode in ("allow", "prefer"):
            return None
        import ssl

        context = ssl.create_default_context() if self.sslrootcert == "system" else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        verify = self.sslmode in ("verify-ca", "verify-full") or (self.sslmode == "require" and self.sslrootcert)
        if verify:
            if self.sslrootcert != "system":
                context.load_verify_locations(cafile=self._root_cert())
            context.verify_mode = ssl.CERT_REQUIRED
            context.check_hostname = self.sslmode == "verify-full"
        else:  # require: encrypted, the certificate unchecked (libpq's meaning)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.sslcert:
            context.load_cert_chain(os.path.expanduser(self.sslcert),
                                    os.path.expanduser(self.sslkey) if self.sslkey else None)
        return context

    def _root_cert(self) -> str:
        path = os.path.expanduser(self.sslrootcert or "~/.postgresql/root.crt")
        if not os.path.isfile(path):
            raise DsnError(f"sslmode={self.sslmode} needs the CA certificate: sslrootcert={path} is not a file "
                           f"(set sslrootcert=PATH, or sslrootcert=system for the system's CAs)")
        return path


_LIBPQ_BLANKS = frozenset(" \t\n\v\f\r")
"""The blanks libpq's connection-string reader skips (C isspace: a no-break space is not one)."""
SECRET_KEYS = frozenset({"password", "sslpassword"})
"""Keywords whose values are secrets (the login's password, the client key's passphrase)."""


@dataclass(frozen=True)
class ConninfoPair:
    """One ``keyword = value`` of a libpq connection string."""

    key: str
    value: str
    """As libpq reads it: quotes removed, backslash escapes applied."""
    start: int
    """Where the keyword begins."""
    value_start: int
    value_end: int
    """The value as written (its quotes included)."""


def conninfo_pairs(text: str) -> list[ConninfoPair]:
    """The pairs of a libpq ``keyword=value`` connection string, read by libpq's rules: blanks
    around ``=`` are skipped; a value is quoted (``'...'``) or runs to the first blank; in
    both, a backslash stands for the character after it (``\\ `` a space, ``\\'`` a quote);
    a quoted value may be followed by the next keyword at once. Where libpq would refuse
    the string, this reads on: a word with no ``=`` after it is skipped, a quote never
    closed runs to the end."""
    pairs: list[ConninfoPair] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _LIBPQ_BLANKS:
            i += 1
        if i >= n:
            return pairs
        start = i
        while i < n and text[i] != "=" and text[i] not in _LIBPQ_BLANKS:
            i += 1
        key = text[start:i]
        while i < n and text[i] in _LIBPQ_BLANKS:
            i += 1
        if i >= n or text[i] != "=":
            continue  # not a keyword (libpq: 'missing "=" after ...')
        i += 1
        while i < n and text[i] in _LIBPQ_BLANKS:
            i += 1
        value_start = i
        quoted = i < n and text[i] == "'"
        i += quoted
        chars = []
        while i < n and (text[i] != "'" if quoted else text[i] not in _LIBPQ_BLANKS):
            if text[i] == "\\":
                i += 1
                if i >= n:
                    break
            chars.append(text[i])
            i += 1
        i = min(n, i + quoted)  # past the closing quote
        pairs.append(ConninfoPair(key, "".join(chars), start, value_start, i))


def _secret_spans(text: str) -> list[tuple[int, int]]:
    """Where the secret values of a connection string are written: from the value to the
    next pair that reads as one (whatever libpq would refuse between them goes too)."""
    pairs = conninfo_pairs(text)
    spans = []
    for k, pair in enumerate(pairs):
        if pair.key.lower() in SECRET_KEYS:
            end = pairs[k + 1].start if k + 1 < len(pairs) else len(text)
            while end > pair.value_end and text[end - 1] in _LIBPQ_BLANKS:
                end -= 1
            spans.append((pair.value_start, end))
    return spans


def redact(dsn: str) -> str:
    """The DSN without its password, for messages and logs.

    A password may hold ``@ : / ? #`` and percent-escapes (written raw by users
    though URLs want them escaped): in a URL everything between the user's ``:``
    and the last ``@`` goes, and so does a ``password`` parameter. In a
    ``keyword=value`` string the value goes as libpq reads it (``conninfo_pairs``:
    ``password=a\\ b`` is the password ``a b``). When in doubt more is hidden, never less.
    """
    text = str(dsn)
    scheme = re.match(r"\s*[A-Za-z][A-Za-z0-9+.-]*://", text)
    if scheme is not None:
        rest = text[scheme.end():]
        at = rest.rfind("@")
        if at >= 0:
            user, colon, _ = rest[:at].partition(":")
            rest = f"{user}:***@{rest[at + 1:]}" if colon else rest
        rest = re.sub(r"(?i)([?&;](?:ssl)?password=)[^&#]*", r"\1***", rest)
        return text[: scheme.end()] + rest
    shown, last = [], 0
    for start, end in _secret_spans(text):
        # a quoted value may touch the next keyword; *** may not
        apart = " " if end < len(text) and text[end] not in _LIBPQ_BLANKS else ""
        shown += [text[last:start], "***", apart]
        last = end
    return "".join(shown) + text[last:]


def _split_url(rest: str) -> tuple[str, str, str, str]:
    """``user:password@hostspec/dbname?query`` as (userinfo, hostspec, dbname, query); the
    userinfo runs to the last ``@`` so a raw ``@``, ``/``, ``?`` or ``#`` in a password stays in it."""
    at = rest.rfind("@")
    userinfo, rest = (rest[:at], rest[at + 1:]) if at >= 0 else ("", rest)
    rest, _, query = rest.partition("?")
    hostspec, _, dbname = rest.partition("/")
    return userinfo, hostspec, dbname, query


def parse_dsn(dsn: str) -> ConnectionParams:
    """A ``postgresql://`` URL or a ``key=value`` connection string."""
    written, dsn = dsn, dsn.strip()  # (a value may end in an escaped blank: key=value is read as written)
    values: dict[str, str] = {}
    if dsn.startswith(("postgresql://", "postgres://")):
        userinfo, hostspec, dbname, query = _split_url(dsn.split("://", 1)[1])
        if userinfo:
            user, colon, password = userinfo.partition(":")
            values["user"] = unquote(user)
            if colon:
                values["password"] = unquote(password)
        host, port = hostspec, ""
        if hostspec.startswith("["):  # [IPv6]:port
            close = hostspec.find("]")
            host, port = hostspec[1:close], hostspec[close + 1 :].lstrip(":")
        elif ":" in hostspec:
            host, _, port = hostspec.rpartition(":")
        if host:
            values["host"] = unquote(host)
        if port:
            values["port"] = port
        if dbname:
            values["dbname"] = unquote(dbname)
        for key, items in parse_qs(query, keep_blank_values=True).items():
            values[key] = items[-1]
    else:
        for pair in conninfo_pairs(written):
            if pair.key:
                values[pair.key] = pair.value
        if not values:
            raise DsnError("not a PostgreSQL connection string (expected postgresql://… or key=value pairs)")
    try:
        port = int(values.get("port") or "5432")
    except ValueError:
        raise DsnError(f"port must be a number (got {values['port']!r})") from None
    sslmode = values.get("sslmode") or "prefer"
    if sslmode not in SSLMODES:
        raise DsnError(f"sslmode must be one of {', '.join(SSLMODES)} (got {sslmode!r})")
    connect_timeout = None
    if values.get("connect_timeout"):
        try:
            connect_timeout = float(values["connect_timeout"])
        except ValueError:
            raise DsnError(f"connect_timeout must be a number of seconds (got {values['connect_timeout']!r})") from None
    host = values.get("host")
    if host and "," in host:
        raise DsnError("several hosts in one DSN are not supported; give one host per DSN")
    unix_sock = f"{host.rstrip('/')}/.s.PGSQL.{port}" if host and host.startswith("/") else None
    ignored = tuple(sorted(k for k in values if k not in PASSED_OPTIONS and k != "database"))
    return ConnectionParams(
        None if unix_sock else host, port, values.get("user"), values.get("password"),
        values.get("dbname") or values.get("database"), unix_sock, sslmode, values.get("sslrootcert") or None,
        values.get("sslcert") or None, values.get("sslkey") or None, connect_timeout or None,
        values.get("options") or None, values.get("application_name") or None, ignored)


def database_name(dsn: str) -> str | None:
    """The database a DSN names (how ``gdg.sql.sources`` and ``-- gdg: source=`` refer to a connection)."""
    try:
        return parse_dsn(dsn).database
    except DsnError:
        return None


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
        err = outcome["error"]
        detail = scrub(f"{type(err).__name__}: {_message(err)}", dsn)
        return Schema(warnings=[f"PostgreSQL {shown}: {detail}"])
    schema = outcome["schema"]
    ignored = _ignored(dsn)
    if ignored:
        schema.warnings.append(f"PostgreSQL {shown}: DSN option{'s' if len(ignored) > 1 else ''} "
                               f"{', '.join(ignored)} not supported by gdg-lsp (ignored)")
    return schema


def _message(err: BaseException) -> str:
    """The error and its causes (pg8000 wraps socket and TLS errors in InterfaceError)."""
    parts, seen = [], set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        text = str(err)
        if text and text not in parts:
            parts.append(text)
        err = err.__cause__ or err.__context__
    return ": ".join(parts) or "failed"


def scrub(message: str, dsn: str) -> str:
    """``message`` with the DSN and its password in every spelling replaced: as written in
    the DSN, decoded, percent-encoded, and escaped the way ``repr`` shows it (drivers put
    the server's error fields in a dict)."""
    message = message.replace(dsn, redact(dsn))
    secrets = {s for s in (_password(dsn), _written_password(dsn)) if s}
    forms = {f for s in secrets for f in (s, quote(s, safe=""), quote(s))}
    forms |= {repr(f)[1:-1] for f in forms} | {f.replace("\\", "\\\\") for f in forms}
    for form in sorted(forms, key=len, reverse=True):
        message = message.replace(form, "***")
    return message


def _written_password(dsn: str) -> str | None:
    """The password exactly as the DSN spells it (before any unescaping)."""
    text = dsn.strip()
    if "://" in text:
        userinfo = _split_url(text.split("://", 1)[1])[0]
        return userinfo.partition(":")[2] or None
    spans = [dsn[start:end] for start, end in _secret_spans(dsn)]
    return spans[0].strip("'") if spans else None


def _password(dsn: str) -> str | None:
    try:
        return parse_dsn(dsn).password
    except DsnError:
        return None


def _ignored(dsn: str) -> tuple[str, ...]:
    try:
        return parse_dsn(dsn).ignored
    except DsnError:
        return ()


def _introspect(dsn: str, timeout: float) -> Schema:
    import pg8000.native

    params = parse_dsn(dsn)
    socket_timeout = min(timeout, params.connect_timeout) if params.connect_timeout else timeout
    kwargs = {"application_name": "gdg-lsp", **params.kwargs()}
    connection = pg8000.native.Connection(timeout=socket_timeout, **kwargs)
    try:
        if params.connect_timeout and (sock := getattr(connection, "_usock", None)) is not None:
            sock.settimeout(timeout)  # connect_timeout bounds the connection, not the queries
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
