"""Attack: a password that the redaction shows in part.

``password=a\\ b`` (libpq reads the backslash as escaping the space: the password is
``a b``) was redacted to ``password=*** b``: the redaction read the value as ending at
the first blank, as a regular expression did, not as libpq reads it. A libpq
connection string is read here by its rules (PostgreSQL's "Keyword/Value Connection
Strings"): a value is quoted (``'...'``, with ``\\'`` and ``\\\\`` inside) or runs to the
first unescaped blank, a backslash escapes the character after it, blanks around ``=``
are allowed, and a quoted value may be followed by the next keyword at once. The
property test writes random connection strings by those rules and checks that the
password reads back, and that the redaction changes the password's value and nothing else.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gdg_lsp.languages.sql import postgres as sql_postgres

KEYS = ("host", "dbname", "user", "password", "application_name", "options", "sslpassword", "sslrootcert")
"""Keywords whose values parse_dsn takes as they are (a port or an sslmode must be one it knows)."""
SECRET_KEYS = ("password", "sslpassword")
LIBPQ_BLANKS = " \t\n\v\f\r"
"""What libpq's isspace() reads as a blank (a no-break space is a character of the value)."""
CHARACTERS = st.lists(st.sampled_from(list("ab7@#:/?=%'\\ \t\né\u00a0") + ["pw", "x y"]), max_size=8).map("".join)


def _written(value: str, quoted: bool) -> str:
    if quoted:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "".join("\\" + ch if ch in LIBPQ_BLANKS or ch in "\\'" else ch for ch in value)


@st.composite
def connection_strings(draw) -> tuple[str, list[tuple[str, str]]]:
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=6, unique=True))
    pairs, parts = [], []
    for key in keys:
        value = draw(CHARACTERS)
        quoted = not value or draw(st.booleans())  # an empty value must be quoted
        around = draw(st.sampled_from(["", " ", "\t", "  "]))
        after = draw(st.sampled_from(["", " ", "\t"]))
        if parts:  # a quoted value may be followed by the next keyword at once
            parts.append(draw(st.sampled_from(["", " "] if pairs[-1][2] else [" ", "\t", "  ", "\n"])))
        parts.append(f"{key}{around}={after}{_written(value, quoted)}")
        pairs.append((key, value, quoted))
    lead, tail = draw(st.sampled_from(["", " "])), draw(st.sampled_from(["", " ", "\n"]))
    return lead + "".join(parts) + tail, [(k, v) for k, v, _ in pairs]


def _read(dsn: str) -> list[tuple[str, str]]:
    return [(pair.key, pair.value) for pair in sql_postgres.conninfo_pairs(dsn)]


@settings(max_examples=400, deadline=None)
@given(connection_strings())
def test_a_connection_string_reads_back_and_its_redaction_hides_exactly_the_passwords(written):
    dsn, pairs = written
    assert _read(dsn) == pairs
    values = dict(pairs)
    assert sql_postgres.parse_dsn(dsn).password == values.get("password")
    # read back, the redaction has the same keys and values, the passwords' as ***: nothing
    # of a password is left anywhere (it would make some value read differently)
    redacted = sql_postgres.redact(dsn)
    assert _read(redacted) == [(k, "***" if k in SECRET_KEYS else v) for k, v in pairs], redacted


def test_escaped_and_quoted_passwords_are_hidden_whole():
    cases = {
        r"host=db password=a\ b user=u": "host=db password=*** user=u",
        "host=db password='a b' user=u": "host=db password=*** user=u",
        r"password = 'it\'s me'": "password = ***",
        "password='a b'host=db": "password=*** host=db",
        "host=db PASSWORD=s3cret": "host=db PASSWORD=***",
        r"sslpassword=key\ pass host=db": "sslpassword=*** host=db",
        # not what libpq accepts: when in doubt, more is hidden
        "password='it''s me' user=u": "password=*** user=u",
        "user=u password='never closed x": "user=u password=***",
    }
    for dsn, shown in cases.items():
        assert sql_postgres.redact(dsn) == shown, dsn


def test_a_message_is_scrubbed_of_the_password_as_written_and_as_read():
    dsn = r"host=127.0.0.1 user=alice password=top\ secret\\x"
    password = sql_postgres.parse_dsn(dsn).password
    assert password == "top secret\\x"
    message = f"could not connect with {dsn}: password {password} ({password!r}) rejected"
    scrubbed = sql_postgres.scrub(message, dsn)
    assert "secret" not in scrubbed and "top" not in scrubbed, scrubbed
    assert "user=alice" in scrubbed
