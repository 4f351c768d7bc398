"""A misconfigured proxy in front of an engine: it forwards every request but strips the
grammar fields (``structured_outputs``, ``grammar``, ``guided_grammar``), so the engine
answers unconstrained. With ``after`` > 0 the first ``after`` completions pass intact
(a proxy that fools the connection probe)."""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

GRAMMAR_FIELDS = ("structured_outputs", "grammar", "guided_grammar")


class StrippingProxy:
    def __init__(self, target: str, after: int = 0) -> None:
        self.target = urlsplit(target)
        self.after = after
        self.completions = 0
        self.stripped = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                proxy._forward(self, None)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path.rstrip("/").endswith("/completions"):
                    proxy.completions += 1
                    if proxy.completions > proxy.after:
                        proxy.stripped += sum(body.pop(f, None) is not None for f in GRAMMAR_FIELDS)
                proxy._forward(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def _forward(self, handler: BaseHTTPRequestHandler, body: dict[str, Any] | None) -> None:
        conn = http.client.HTTPConnection(self.target.hostname, self.target.port, timeout=120)
        headers = {k: v for k, v in handler.headers.items() if k.lower() in ("authorization", "content-type", "accept")}
        payload = json.dumps(body).encode() if body is not None else None
        try:
            conn.request(handler.command, self.target.path.rstrip("/") + handler.path, body=payload, headers=headers)
            response = conn.getresponse()
            handler.send_response(response.status)
            handler.send_header("Content-Type", response.getheader("Content-Type") or "application/json")
            handler.send_header("Connection", "close")
            handler.end_headers()
            while chunk := response.read1(65536) if hasattr(response, "read1") else response.read(65536):
                handler.wfile.write(chunk)
                handler.wfile.flush()
        except OSError:
            pass
        finally:
            conn.close()
            handler.close_connection = True

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> StrippingProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
