"""PostgreSQL DSN options are honoured, TLS is verified when asked, passwords never show.

A fake server on 127.0.0.1 speaks just enough of the protocol to see what a
client sends before authentication: an SSLRequest or not, then the startup
message (user, database, options). Certificates are made for the test with
``openssl`` (a CA, a server certificate for 127.0.0.1 signed by it, one for
another host name signed by it, and a self-signed one).

The attacks: a ``verify-full`` DSN aimed at a server with an untrusted
certificate, or one for another host (before: pg8000 got no SSL context, TLS
was opportunistic and unverified, and the startup message with the user and
database went to the impostor); ``sslmode=disable`` and ``options`` silently
dropped; passwords holding ``@ : / ? #`` or percent-escapes leaking in pieces
from the redaction (``alice:***@t@host``) or from an error the server echoes.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import struct
import subprocess
import threading
from pathlib import Path

import pytest

from gdg_lsp.languages.sql import postgres as sql_postgres
from gdg_lsp.languages.sql.catalog import SchemaCatalog

SSL_REQUEST = 80877103
PROTOCOL_3 = 196608


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> dict[str, Path]:
    if shutil.which("openssl") is None:
        pytest.fail("these tests make their TLS certificates with the openssl command (apt-get install openssl)")
    folder = tmp_path_factory.mktemp("certs")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True, timeout=60)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=gdg test CA", "-days", "2",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, san in (("good", "IP:127.0.0.1"), ("otherhost", "DNS:db.example")):
        (folder / f"{name}.ext").write_text(f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n")
        run("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")
    run("req", "-x509", *ec, "-keyout", "selfsigned.key", "-out", "selfsigned.crt", "-subj", "/CN=impostor",
        "-days", "2", "-addext", "subjectAltName=IP:127.0.0.1")
    return {name: folder / name for name in
            ("ca.crt", "good.crt", "good.key", "otherhost.crt", "otherhost.key", "selfsigned.crt", "selfsigned.key")}


class FakePostgres:
    """Records what each client sends before authentication, then refuses it with ``reply``."""

    def __init__(self, cert: Path | None = None, key: Path | None = None, reply: str = "fake server: go away") -> None:
        self.context = None
        if cert is not None:
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(cert, key)
        self.reply = reply
        self.events: list[tuple] = []
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(4)
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(client,), daemon=True).start()

    @staticmethod
    def _message(sock) -> bytes:
        head = b""
        while len(head) < 4:
            chunk = sock.recv(4 - len(head))
            if not chunk:
                raise ConnectionError("closed")
            head += chunk
        (length,) = struct.unpack("!I", head)
        body = b""
        while len(body) < length - 4:
            chunk = sock.recv(length - 4 - len(body))
            if not chunk:
                raise ConnectionError("closed")
            body += chunk
        return body

    def _client(self, sock: socket.socket) -> None:
        sock.settimeout(5)
        try:
            body = self._message(sock)
            if struct.unpack("!I", body[:4])[0] == SSL_REQUEST:
                self.events.append(("ssl-request",))
                if self.context is None:
                    sock.sendall(b"N")
                else:
                    sock.sendall(b"S")
                    try:
                        sock = self.context.wrap_socket(sock, server_side=True)
                    except (ssl.SSLError, OSError) as err:
                        self.events.append(("tls-refused-by-client", str(err)))
                        return
                    self.events.append(("tls",))
                body = self._message(sock)
            if struct.unpack("!I", body[:4])[0] == PROTOCOL_3:
                parts = body[4:].split(b"\0")
                params = {parts[i].decode(): parts[i + 1].decode() for i in range(0, len(parts) - 1, 2) if parts[i]}
                self.events.append(("startup", params))
                fields = b"SFATAL\0C28000\0M" + self.reply.encode() + b"\0\0"
                sock.sendall(b"E" + struct.pack("!I", len(fields) + 4) + fields)
        except (ConnectionError, OSError, struct.error):
            pass
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def startups(self) -> list[dict]:
        return [e[1] for e in self.events if e[0] == "startup"]

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def fake():
    servers: list[FakePostgres] = []

    def make(*args, **kwargs) -> FakePostgres:
        servers.append(FakePostgres(*args, **kwargs))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def _introspect(dsn: str) -> str:
    schema = sql_postgres.introspect(dsn, timeout=5)
    assert schema.warnings and not schema.tables
    return schema.warnings[0]


def test_verify_full_refuses_an_untrusted_certificate_before_saying_who_connects(fake, certs):
    server = fake(certs["selfsigned.crt"], certs["selfsigned.key"])
    dsn = f"postgresql://alice@127.0.0.1:{server.port}/payroll?sslmode=verify-full&sslrootcert={certs['ca.crt']}"
    warning = _introspect(dsn)
    assert "certificate verify failed" in warning, warning
    assert server.startups() == []  # neither the user nor the database reached the impostor
    assert ("ssl-request",) in server.events


def test_verify_full_refuses_a_certificate_for_another_host(fake, certs):
    server = fake(certs["otherhost.crt"], certs["otherhost.key"])
    dsn = f"host=127.0.0.1 port={server.port} user=alice dbname=payroll sslmode=verify-full sslrootcert={certs['ca.crt']}"
    warning = _introspect(dsn)
    assert "certificate verify failed" in warning and "127.0.0.1" in warning, warning
    assert server.startups() == []
    # verify-ca checks the chain only: the same server is accepted, and TLS carries the startup
    server = fake(certs["otherhost.crt"], certs["otherhost.key"])
    dsn = f"host=127.0.0.1 port={server.port} user=alice dbname=payroll sslmode=verify-ca sslrootcert={certs['ca.crt']}"
    assert "fake server: go away" in _introspect(dsn)
    assert ("tls",) in server.events and server.startups()[0]["user"] == "alice"


def test_verify_full_reaches_the_right_server_over_tls(fake, certs):
    server = fake(certs["good.crt"], certs["good.key"])
    dsn = f"postgresql://alice@127.0.0.1:{server.port}/payroll?sslmode=verify-full&sslrootcert={certs['ca.crt']}"
    assert "fake server: go away" in _introspect(dsn)
    assert ("tls",) in server.events and server.startups()[0]["database"] == "payroll"


def test_verify_full_without_a_ca_says_what_is_missing(fake, tmp_path):
    server = fake()
    dsn = f"postgresql://alice@127.0.0.1:{server.port}/payroll?sslmode=verify-full&sslrootcert={tmp_path / 'none.crt'}"
    assert "sslrootcert" in _introspect(dsn)
    assert server.events == []  # nothing was sent at all


def test_require_refuses_a_server_without_tls(fake):
    server = fake()  # answers N to the SSLRequest
    warning = _introspect(f"postgresql://alice@127.0.0.1:{server.port}/payroll?sslmode=require")
    assert "refuses SSL" in warning and server.startups() == []


def test_disable_options_and_application_name_are_passed_through(fake, monkeypatch):
    server = fake()
    dsn = (f"postgresql://alice@127.0.0.1:{server.port}/payroll?sslmode=disable"
           "&options=-c%20search_path%3Dsales&application_name=report-tool&connect_timeout=2")
    _introspect(dsn)
    assert ("ssl-request",) not in server.events  # plaintext asked for, plaintext from the first byte
    [startup] = server.startups()
    assert startup["options"] == "-c search_path=sales" and startup["application_name"] == "report-tool"
    # connect_timeout bounds the connection (the socket timeout pg8000 gets)
    import pg8000.native

    seen = {}

    class Capture:
        def __init__(self, **kwargs):
            seen.update(kwargs)
            raise pg8000.native.InterfaceError("captured")

    monkeypatch.setattr(pg8000.native, "Connection", Capture)
    _introspect(dsn)
    assert seen["timeout"] == 2 and seen["ssl_context"] is False


def test_unsupported_options_are_named_not_dropped_silently(fake):
    server = fake()
    schema = sql_postgres.introspect(f"postgresql://alice@127.0.0.1:{server.port}/db?sslmode=disable&target_session_attrs=any", 5)
    assert schema.warnings
    assert sql_postgres.parse_dsn("postgresql://a@h/d?target_session_attrs=any&gssencmode=disable").ignored == (
        "gssencmode", "target_session_attrs")


PASSWORDS = ["t@t", "p@ss:w/rd?#x", "se:cr@et/42", "%40t%2Fz%", "a'b\\c d", "pw?x#y@"]


def _fragments(password: str) -> set[str]:
    """Every piece of the password of three characters or more (what a leak would show)."""
    return {password[i:j] for i in range(len(password)) for j in range(i + 3, len(password) + 1)}


@pytest.mark.parametrize("password", PASSWORDS)
def test_passwords_never_show_in_any_form(fake, password):
    from urllib.parse import quote

    server = fake(reply=f"password authentication failed for alice with {password!s} / {quote(password, safe='')}")
    raw_url = f"postgresql://alice:{password}@127.0.0.1:{server.port}/db?sslmode=disable"
    escaped_url = f"postgresql://alice:{quote(password, safe='')}@127.0.0.1:{server.port}/db?sslmode=disable"
    keyword = "host=127.0.0.1 port={} user=alice sslmode=disable password='{}'".format(
        server.port, password.replace("\\", "\\\\").replace("'", "\\'"))
    decoded = sql_postgres.parse_dsn(escaped_url).password
    assert decoded == password and sql_postgres.parse_dsn(keyword).password == password
    for dsn in (raw_url, escaped_url, keyword):
        catalog = SchemaCatalog([], [dsn], database_timeout=5)
        catalog.tables()
        shown = [sql_postgres.redact(dsn), *catalog.warnings()]
        assert catalog.warnings()
        leaks = [(piece, text) for text in shown for piece in _fragments(password) | _fragments(quote(password, safe=""))
                 if piece in text and piece not in dsn.replace(password, "").replace(quote(password, safe=""), "")]
        assert not leaks, leaks
