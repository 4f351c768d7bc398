"""Facts about P4's standard library files, for when they cannot be found.

When ``#include <core.p4>`` or ``<v1model.p4>`` resolves to no file (no p4c
installed, no include path set), Γ still needs the names those files declare.
This module records them as data written for this project: the names, kinds,
fields and signatures of the declarations of p4c's ``core.p4`` and
``v1model.p4`` (no text of those files). ``symbols(name, defines)`` turns the
facts into the same ``Sym`` records the binder makes from source.

A parameter is ``(direction, type, name)`` with direction ``""`` for none; a
fourth element ``True`` marks a parameter with a default value. Entries that
differ between v1model versions carry the first ``V1MODEL_VERSION`` they hold
for (``since``) or the first they no longer do (``until``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gdg_lsp.languages.p4.symbols import Param, Sym

V1MODEL_DEFAULT_VERSION = 20180101
V1MODEL_GENERIC_INDEX = 20200408
"""From this V1MODEL_VERSION on, counters, meters and registers take an index type I."""

CORE: dict[str, Any] = {
    "errors": ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
               "ParserTimeout", "ParserInvalidArgument"],
    "match_kinds": ["exact", "ternary", "lpm"],
    "externs": [
        {"name": "packet_in", "methods": [
            ("void", "extract", ["T"], [("out", "T", "hdr")]),
            ("void", "extract", ["T"], [("out", "T", "variableSizeHeader"), ("in", "bit<32>", "variableFieldSizeInBits")]),
            ("T", "lookahead", ["T"], []),
            ("void", "advance", [], [("in", "bit<32>", "sizeInBits")]),
            ("bit<32>", "length", [], []),
        ]},
        {"name": "packet_out", "methods": [("void", "emit", ["T"], [("in", "T", "hdr")])]},
    ],
    "functions": [
        ("void", "verify", [], [("in", "bool", "check"), ("in", "error", "toSignal")]),
        ("bool", "static_assert", [], [("", "bool", "check"), ("", "string", "message")]),
        ("bool", "static_assert", [], [("", "bool", "check")]),
    ],
    "actions": [("NoAction", [])],
    "macros": [("_CORE_P4_", "")],
}

_PORT = "PortId_t"

V1MODEL: dict[str, Any] = {
    "includes": ["core.p4"],
    "macros": [("_V1_MODEL_P4_", ""), ("V1MODEL_VERSION", str(V1MODEL_DEFAULT_VERSION)),
               ("V1MODEL_METER_COLOR_GREEN", "0"), ("V1MODEL_METER_COLOR_YELLOW", "1"),
               ("V1MODEL_METER_COLOR_RED", "2")],
    "match_kinds": ["range", "optional", "selector"],
    "constants": [("bit<32>", "__v1model_version")],
    "typedefs": [{"name": _PORT, "type": "bit<9>", "since": V1MODEL_GENERIC_INDEX}],
    "structs": [{"name": "standard_metadata_t", "fields": [
        ("bit<9>", "ingress_port", {"until": V1MODEL_GENERIC_INDEX}),
        ("bit<9>", "egress_spec", {"until": V1MODEL_GENERIC_INDEX}),
        ("bit<9>", "egress_port", {"until": V1MODEL_GENERIC_INDEX}),
        (_PORT, "ingress_port", {"since": V1MODEL_GENERIC_INDEX}),
        (_PORT, "egress_spec", {"since": V1MODEL_GENERIC_INDEX}),
        (_PORT, "egress_port", {"since": V1MODEL_GENERIC_INDEX}),
        ("bit<32>", "instance_type"), ("bit<32>", "packet_length"),
        ("bit<32>", "enq_timestamp"), ("bit<19>", "enq_qdepth"),
        ("bit<32>", "deq_timedelta"), ("bit<19>", "deq_qdepth"),
        ("bit<48>", "ingress_global_timestamp"), ("bit<48>", "egress_global_timestamp"),
        ("bit<16>", "mcast_grp"), ("bit<16>", "egress_rid"),
        ("bit<1>", "checksum_error"), ("error", "parser_error"), ("bit<3>", "priority"),
    ]}],
    "enums": [
        ("CounterType", ["packets", "bytes", "packets_and_bytes"]),
        ("MeterType", ["packets", "bytes"]),
        ("HashAlgorithm", ["crc32", "crc32_custom", "crc16", "crc16_custom", "random", "identity", "csum16", "xor16"]),
        ("CloneType", ["I2E", "E2E"]),
    ],
    "externs": [
        {"name": "counter", "type_params": ["I"], "since": V1MODEL_GENERIC_INDEX,
         "ctor": [("", "bit<32>", "size"), ("", "CounterType", "type")],
         "methods": [("void", "count", [], [("in", "I", "index")])]},
        {"name": "counter", "until": V1MODEL_GENERIC_INDEX,
         "ctor": [("", "bit<32>", "size"), ("", "CounterType", "type")],
         "methods": [("void", "count", [], [("in", "bit<32>", "index")])]},
        {"name": "direct_counter", "ctor": [("", "CounterType", "type")], "methods": [("void", "count", [], [])]},
        {"name": "meter", "type_params": ["I"], "since": V1MODEL_GENERIC_INDEX,
         "ctor": [("", "bit<32>", "size"), ("", "MeterType", "type")],
         "methods": [("void", "execute_meter", ["T"], [("in", "I", "index"), ("out", "T", "result")])]},
        {"name": "meter", "until": V1MODEL_GENERIC_INDEX,
         "ctor": [("", "bit<32>", "size"), ("", "MeterType", "type")],
         "methods": [("void", "execute_meter", ["T"], [("in", "bit<32>", "index"), ("out", "T", "result")])]},
        {"name": "direct_meter", "type_params": ["T"], "ctor": [("", "MeterType", "type")],
         "methods": [("void", "read", [], [("out", "T", "result")])]},
        {"name": "register", "type_params": ["T", "I"], "since": V1MODEL_GENERIC_INDEX,
         "ctor": [("", "bit<32>", "size")],
         "methods": [("void", "read", [], [("out", "T", "result"), ("in", "I", "index")]),
                     ("void", "write", [], [("in", "I", "index"), ("in", "T", "value")])]},
        {"name": "register", "type_params": ["T"], "until": V1MODEL_GENERIC_INDEX,
         "ctor": [("", "bit<32>", "size")],
         "methods": [("void", "read", [], [("out", "T", "result"), ("in", "bit<32>", "index")]),
                     ("void", "write", [], [("in", "bit<32>", "index"), ("in", "T", "value")])]},
        {"name": "action_profile", "ctor": [("", "bit<32>", "size")], "methods": []},
        {"name": "action_selector",
         "ctor": [("", "HashAlgorithm", "algorithm"), ("", "bit<32>", "size"), ("", "bit<32>", "outputWidth")],
         "methods": []},
        {"name": "Checksum16", "ctor": [], "methods": [("bit<16>", "get", ["D"], [("in", "D", "data")])]},
    ],
    "functions": [
        ("void", "random", ["T"], [("out", "T", "result"), ("in", "T", "lo"), ("in", "T", "hi")]),
        ("void", "digest", ["T"], [("in", "bit<32>", "receiver"), ("in", "T", "data")]),
        ("void", "mark_to_drop", [], []),
        ("void", "mark_to_drop", [], [("inout", "standard_metadata_t", "standard_metadata")]),
        ("void", "hash", ["O", "T", "D", "M"], [("out", "O", "result"), ("in", "HashAlgorithm", "algo"),
                                                 ("in", "T", "base"), ("in", "D", "data"), ("in", "M", "max")]),
        ("void", "verify_checksum", ["T", "O"], [("in", "bool", "condition"), ("in", "T", "data"),
                                                 ("in", "O", "checksum"), ("", "HashAlgorithm", "algo")]),
        ("void", "update_checksum", ["T", "O"], [("in", "bool", "condition"), ("in", "T", "data"),
                                                 ("inout", "O", "checksum"), ("", "HashAlgorithm", "algo")]),
        ("void", "verify_checksum_with_payload", ["T", "O"], [("in", "bool", "condition"), ("in", "T", "data"),
                                                              ("in", "O", "checksum"), ("", "HashAlgorithm", "algo")]),
        ("void", "update_checksum_with_payload", ["T", "O"], [("in", "bool", "condition"), ("in", "T", "data"),
                                                              ("inout", "O", "checksum"), ("", "HashAlgorithm", "algo")]),
        ("void", "clone", [], [("in", "CloneType", "type"), ("in", "bit<32>", "session")]),
        ("void", "resubmit", ["T"], [("in", "T", "data")]),
        ("void", "resubmit_preserving_field_list", [], [("", "bit<8>", "index")]),
        ("void", "recirculate", ["T"], [("in", "T", "data")]),
        ("void", "recirculate_preserving_field_list", [], [("", "bit<8>", "index")]),
        ("void", "clone3", ["T"], [("in", "CloneType", "type"), ("in", "bit<32>", "session"), ("in", "T", "data")]),
        ("void", "clone_preserving_field_list", [], [("in", "CloneType", "type"), ("in", "bit<32>", "session"),
                                                     ("", "bit<8>", "index")]),
        ("void", "truncate", [], [("in", "bit<32>", "length")]),
        ("void", "assert", [], [("in", "bool", "check")]),
        ("void", "assume", [], [("in", "bool", "check")]),
        ("void", "log_msg", [], [("", "string", "msg")]),
        ("void", "log_msg", ["T"], [("", "string", "msg"), ("in", "T", "data")]),
    ],
    "parser_types": [
        ("Parser", ["H", "M"], [("", "packet_in", "b"), ("out", "H", "parsedHdr"), ("inout", "M", "meta"),
                                ("inout", "standard_metadata_t", "standard_metadata")]),
    ],
    "control_types": [
        ("VerifyChecksum", ["H", "M"], [("inout", "H", "hdr"), ("inout", "M", "meta")]),
        ("Ingress", ["H", "M"], [("inout", "H", "hdr"), ("inout", "M", "meta"),
                                 ("inout", "standard_metadata_t", "standard_metadata")]),
        ("Egress", ["H", "M"], [("inout", "H", "hdr"), ("inout", "M", "meta"),
                                ("inout", "standard_metadata_t", "standard_metadata")]),
        ("ComputeChecksum", ["H", "M"], [("inout", "H", "hdr"), ("inout", "M", "meta")]),
        ("Deparser", ["H"], [("", "packet_out", "b"), ("in", "H", "hdr")]),
    ],
    "packages": [
        ("V1Switch", ["H", "M"], [("", "Parser<H,M>", "p"), ("", "VerifyChecksum<H,M>", "vr"),
                                  ("", "Ingress<H,M>", "ig"), ("", "Egress<H,M>", "eg"),
                                  ("", "ComputeChecksum<H,M>", "ck"), ("", "Deparser<H>", "dep")]),
    ],
}

LIBRARY: dict[str, dict[str, Any]] = {"core.p4": CORE, "v1model.p4": V1MODEL}
"""Facts by include name."""


def _applies(entry: Mapping[str, Any], version: int) -> bool:
    return version >= entry.get("since", 0) and version < entry.get("until", 1 << 62)


def _params(specs: list[tuple]) -> tuple[Param, ...]:
    return tuple(Param(s[2], s[1], s[0] or None, len(s) > 3 and bool(s[3]), -1) for s in specs)


def _proto(kind: str, spec: tuple, uri: str, parent: str | None = None) -> Sym:
    returns, name, type_params, params = spec
    sym = Sym(name, kind, -1, -1, returns=returns, type_params=tuple(type_params), params=_params(params), uri=uri,
              info={"parent": parent} if parent else {})
    return sym


def symbols(include: str, version: int = V1MODEL_DEFAULT_VERSION) -> list[Sym]:
    """The declarations of library file ``include`` (``core.p4``, ``v1model.p4``) as Syms."""
    facts = LIBRARY.get(include)
    if facts is None:
        return []
    uri = f"p4-library:{include}"
    out: list[Sym] = []
    for name in facts.get("errors", ()):
        out.append(Sym(name, "error", -1, -1, uri=uri))
    for name in facts.get("match_kinds", ()):
        out.append(Sym(name, "match_kind", -1, -1, uri=uri))
    for entry in facts.get("typedefs", ()):
        if _applies(entry, version):
            out.append(Sym(entry["name"], "typedef", -1, -1, type=entry["type"], uri=uri))
    for entry in facts.get("structs", ()):
        fields = [Sym(f[1], "field", -1, -1, type=f[0], info={"parent": entry["name"]}, uri=uri)
                  for f in entry["fields"] if len(f) < 3 or _applies(f[2], version)]
        out.append(Sym(entry["name"], "struct", -1, -1, members=fields, uri=uri))
    for name, members in facts.get("enums", ()):
        out.append(Sym(name, "enum", -1, -1, uri=uri, members=[
            Sym(m, "enum_member", -1, -1, info={"parent": name}, uri=uri) for m in members]))
    for entry in facts.get("externs", ()):
        if not _applies(entry, version):
            continue
        name = entry["name"]
        members = []
        if "ctor" in entry:
            members.append(Sym(name, "constructor", -1, -1, params=_params(entry["ctor"]), info={"parent": name}, uri=uri))
        members += [_proto("method", m, uri, name) for m in entry["methods"]]
        out.append(Sym(name, "extern", -1, -1, type_params=tuple(entry.get("type_params", ())), members=members, uri=uri))
    for spec in facts.get("functions", ()):
        out.append(_proto("extern_function", spec, uri))
    for name, params in facts.get("actions", ()):
        out.append(Sym(name, "action", -1, -1, params=_params(params), uri=uri))
    for type_, name in facts.get("constants", ()):
        out.append(Sym(name, "constant", -1, -1, type=type_, uri=uri))
    for kind, key in (("parser_type", "parser_types"), ("control_type", "control_types"), ("package", "packages")):
        for name, type_params, params in facts.get(key, ()):
            out.append(Sym(name, kind, -1, -1, type_params=tuple(type_params), params=_params(params), uri=uri))
    return out


def macros(include: str) -> list[tuple[str, str]]:
    facts = LIBRARY.get(include)
    return list(facts.get("macros", ())) if facts else []


def type_names(include: str, version: int = V1MODEL_DEFAULT_VERSION) -> set[str]:
    """Names the facts declare as types (for the lexer), type parameters included."""
    names: set[str] = set()
    for sym in symbols(include, version):
        if sym.kind in ("typedef", "struct", "enum", "extern", "parser_type", "control_type", "package"):
            names.add(sym.name)
        names.update(sym.type_params)
        for member in sym.members:
            names.update(member.type_params)
    return names
