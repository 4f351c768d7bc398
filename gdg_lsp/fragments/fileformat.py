"""Fragment files: one fragment and its ladder per TOML file, the template inline.

A fragment file is data. Reading one never runs, imports or unpickles
anything: TOML is parsed by the standard library, the template by
``fragments.ebnf``, and every value is checked against the shapes below. A
file that does not fit gets a ``FragmentFileError`` that names the line and
column (1-based) it is about, so the server can show it on the file.

    format = 1                       # optional; the only format so far
    language = "triton"              # the language it applies to
    name = "load"                    # unique within the language
    anchor = "Load"                  # the hole sort (what `explain` shows)
    description = "tl.load(pointer, mask=..., other=...)"
    rungs = ["pin", "ctx", "gamma", "base"]
    start = "root"                   # optional: the rule the fragment starts from
    template = '''
    root ::= "tl.load(" ARG ")"      # XGrammar EBNF plus %slot% atoms (fragments/ebnf.py)
    ARG ::= %ptr%
    '''

    [hole]
    kind = "call:tl.load("           # how regions are found in a corpus: a tree-sitter node
                                     # type, optionally ":" and the text the region starts with
    trigger = ["tl.load("]           # text that opens this hole in an editor

    [slots.ptr]                      # one table per %slot%: what it reads at each rung
    base = { identifier = { first = "a-zA-Z_", rest = "a-zA-Z0-9_", exclude = ["if"] } }
    gamma = { sort = ["Parameter", "Variable"] }
    ctx = { sort = ["Parameter", "Variable"], annotation = [""] }
    pin = { sort = ["Parameter", "Variable"], annotation = [""], among = ["x_ptr"] }
    optional = false

    [families.<name>]                # optional: rules copied per member of a context list
    members = "from_tables"          # (see fragments/manifest.py)
    rules = ["select_item"]

    [[examples]]                     # positives the gate checks when the file is loaded
    text = "tl.load(x_ptr + offsets, mask=mask)"
    gamma = { x_ptr = { sort = "Parameter", annotation = "" }, offsets = { sort = "Variable" } }
    context = {}

    [new_language]                   # only for a language gdg-lsp does not know yet
    ...                              # (languages/generic/definition.py)

    [provenance]                     # where it came from: free-form, kept as written
    source = "induced"
    [provenance.gate]
    positives = 80

The slot specs are the manifest's (fragments/manifest.py) plus ``among``: a Γ
query whose answer is intersected with a fixed list of names (the pin rung of
an induced fragment: the names the corpus used, when Γ has them).

Why TOML with the template inline rather than a grammar file plus a header:
one file is one unit for the editor (one diagnostic URI, one reload), TOML is
already how manifests are written and is parsed by the standard library, and
a literal string (``'''``) keeps the template's backslashes as written.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gdg_lsp.errors import GdgError, GrammarError
from gdg_lsp.fragments import ebnf
from gdg_lsp.fragments.model import RUNGS, Family, Fragment, SlotSpec

FORMAT = 1
MAX_FILE_BYTES = 256 * 1024
MAX_TEMPLATE_CHARS = 64 * 1024
MAX_RULES = 2000
MAX_EXAMPLES = 200
MAX_TRIGGER_CHARS = 64

TOP_LEVEL = {"format", "language", "name", "anchor", "description", "rungs", "start", "template", "hole",
             "slots", "families", "examples", "new_language", "provenance"}
SLOT_KINDS = ("ebnf", "identifier", "names", "context")
"""Slot specs that do not read Γ; any other spec is a query over Γ (``sort`` plus attribute filters)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}\Z")
_LANGUAGE = re.compile(r"[a-z][a-z0-9_+\-]{0,31}\Z")
_KEY = re.compile(r"[A-Za-z0-9_\-]+\Z")


class FragmentFileError(GdgError):
    """A fragment file that cannot be used; ``line``/``column`` are 1-based (0: the whole file)."""

    def __init__(self, message: str, line: int = 0, column: int = 0, origin: str = "") -> None:
        where = f"{origin}:{line}:{column}: " if origin and line else (f"{origin}: " if origin else "")
        super().__init__(where + message)
        self.message = message
        self.line = line
        self.column = column
        self.origin = origin


@dataclass(frozen=True)
class HoleSpec:
    kind: str = ""
    """``node_type`` or ``node_type:prefix``: how ``induce`` and ``gate`` find regions in a corpus."""
    triggers: tuple[str, ...] = ()
    """Text that opens the hole when typed (the region starts where it starts)."""

    @property
    def node_type(self) -> str:
        return self.kind.partition(":")[0]

    @property
    def prefix(self) -> str:
        return self.kind.partition(":")[2]


@dataclass(frozen=True)
class Example:
    """A positive: a region's text and the Γ (name -> sort and attributes) it was written in."""

    text: str
    gamma: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    context: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FragmentFile:
    fragment: Fragment
    template: str
    hole: HoleSpec = HoleSpec()
    examples: tuple[Example, ...] = ()
    language_table: Mapping[str, Any] | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    start: str | None = None
    origin: str = ""

    @property
    def language(self) -> str:
        return self.fragment.language

    @property
    def name(self) -> str:
        return self.fragment.name


# -- reading -----------------------------------------------------------------------


def parse(text: str, origin: str = "<fragment>") -> FragmentFile:
    """The fragment file in ``text``; raises ``FragmentFileError`` located in the file."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise FragmentFileError(f"the file is over {MAX_FILE_BYTES // 1024} KiB", origin=origin)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        line, column = _toml_position(err)
        if not line and "end of document" in str(err):  # where the file stops (an unclosed value)
            body = text.rstrip()
            line, column = body.count("\n") + 1, len(body) - body.rfind("\n")
        raise FragmentFileError(f"not valid TOML: {_toml_message(err)}", line, column, origin) from None
    return _Reader(text, origin).read(data)


def _toml_position(err: tomllib.TOMLDecodeError) -> tuple[int, int]:
    if getattr(err, "lineno", None):
        return int(err.lineno), int(getattr(err, "colno", 1) or 1)
    m = re.search(r"\(at line (\d+), column (\d+)\)", str(err))
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _toml_message(err: tomllib.TOMLDecodeError) -> str:
    return re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(getattr(err, "msg", err)))


class _Reader:
    def __init__(self, text: str, origin: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.origin = origin

    # -- locating ----------------------------------------------------------------

    def line_of(self, *patterns: str) -> int:
        """The 1-based line of the first pattern found (a table header or a key), else 0."""
        for pattern in patterns:
            # `^\s*` would match from an empty line above (\s takes the line break)
            rx = re.compile(pattern.replace(r"^\s*", r"^[ \t]*"), re.MULTILINE)
            if (m := rx.search(self.text)) is not None:
                return self.text.count("\n", 0, m.start()) + 1
        return 0

    def fail(self, message: str, *patterns: str, line: int = 0) -> FragmentFileError:
        line = line or self.line_of(*patterns)
        return FragmentFileError(message, line, 1 if line else 0, self.origin)

    def key_line(self, key: str) -> int:
        return self.line_of(rf"^\s*{re.escape(key)}\s*=")

    # -- reading -----------------------------------------------------------------

    def read(self, data: Mapping[str, Any]) -> FragmentFile:
        for key in data:
            if key not in TOP_LEVEL:
                raise self.fail(f"unknown key {key!r} (expected one of: {', '.join(sorted(TOP_LEVEL))})",
                                rf"^\s*\[{re.escape(key)}[.\]]", rf"^\s*{re.escape(key)}\s*=")
        fmt = data.get("format", FORMAT)
        if fmt != FORMAT:
            raise self.fail(f"format {fmt!r} is not supported (this gdg-lsp reads format {FORMAT})",
                            r"^\s*format\s*=")
        language = self.string(data, "language", required=True)
        if not _LANGUAGE.match(language):
            raise self.fail(f"language {language!r} must be lower case letters, digits, _, + or -",
                            r"^\s*language\s*=")
        name = self.string(data, "name", required=True)
        if not _NAME.match(name):
            raise self.fail(f"name {name!r} must be an identifier (letters, digits, _ and -)", r"^\s*name\s*=")
        anchor = self.string(data, "anchor") or "Hole"
        description = self.string(data, "description")
        template = self.string(data, "template", required=True)
        if len(template) > MAX_TEMPLATE_CHARS:
            raise self.fail(f"the template is over {MAX_TEMPLATE_CHARS} characters", r"^\s*template\s*=")
        rungs = self.rungs(data)
        start = self.string(data, "start") or None
        rules = self.rules(template, start)
        slot_specs = self.slots(data.get("slots", {}), rules)
        families = self.families(data.get("families", {}), rules, start)
        hole = self.hole(data.get("hole", {}))
        examples = self.examples(data.get("examples", []))
        language_table = data.get("new_language")
        if language_table is not None and not isinstance(language_table, Mapping):
            raise self.fail("[new_language] must be a table", r"^\s*new_language\s*=")
        provenance = data.get("provenance", {})
        if not isinstance(provenance, Mapping):
            raise self.fail("[provenance] must be a table", r"^\s*provenance\s*=")
        fragment = Fragment(language, name, anchor, rungs, rules, slot_specs, description, families)
        return FragmentFile(fragment, template, hole, examples,
                            _freeze(language_table) if language_table is not None else None,
                            _freeze(provenance), start, self.origin)

    def string(self, data: Mapping[str, Any], key: str, required: bool = False) -> str:
        if key not in data:
            if required:
                raise self.fail(f"missing `{key} = ...`")
            return ""
        value = data[key]
        if not isinstance(value, str):
            raise self.fail(f"`{key}` must be a string", rf"^\s*{key}\s*=")
        return value

    def rungs(self, data: Mapping[str, Any]) -> tuple[str, ...]:
        rungs = data.get("rungs", ["gamma", "base"])
        if not isinstance(rungs, list) or not rungs or not all(isinstance(r, str) for r in rungs):
            raise self.fail("`rungs` must be a non-empty list of rung names", r"^\s*rungs\s*=")
        if unknown := sorted(set(rungs) - set(RUNGS)):
            raise self.fail(f"unknown rungs {unknown} (the rungs are {', '.join(RUNGS)})", r"^\s*rungs\s*=")
        return tuple(r for r in RUNGS if r in rungs)

    def template_line(self) -> int:
        """The file line on which the template's first line is."""
        m = re.search(r"^[ \t]*template\s*=\s*('''|\"\"\"|'|\")", self.text, re.MULTILINE)
        if m is None:
            return 0
        line = self.text.count("\n", 0, m.start()) + 1
        return line + 1 if self.text[m.end():].startswith("\n") and len(m.group(1)) == 3 else line

    def rules(self, template: str, start: str | None) -> dict[str, ebnf.Expr]:
        base = self.template_line()
        try:
            rules = ebnf.parse(template, "template")
        except (GrammarError, ValueError, IndexError) as err:
            m = re.match(r"template:(\d+): (.*)", str(err))
            if m and base:
                raise FragmentFileError(m.group(2), base + int(m.group(1)) - 1, 1, self.origin) from None
            raise FragmentFileError(f"template: {err}", base, 1 if base else 0, self.origin) from None
        if len(rules) > MAX_RULES:
            raise FragmentFileError(f"the template has over {MAX_RULES} rules", base, 1, self.origin)
        if start:
            if start not in rules:
                raise self.fail(f"start rule {start!r} is not defined in the template", r"^\s*start\s*=")
            rules = {"root": ebnf.Ref(start), **{k: v for k, v in rules.items() if k != "root"}}
        try:
            ebnf.check(rules, "template")
        except GrammarError as err:
            missing = re.search(r"undefined rule '([^']+)'", str(err))
            line = base
            if missing and base:
                idx = template.find(missing.group(1))
                line = base + template.count("\n", 0, idx) if idx >= 0 else base
            raise FragmentFileError(str(err).removeprefix("template: "), line, 1 if line else 0, self.origin) from None
        return {k: v for k, v in rules.items() if k in ebnf.reachable(rules)}

    def slots(self, table: Any, rules: Mapping[str, ebnf.Expr]) -> dict[str, SlotSpec]:
        if not isinstance(table, Mapping):
            raise self.fail("`slots` must be a table of [slots.<name>] tables", r"^\s*slots\s*=")
        used = {s for expr in rules.values() for s in ebnf.slots(expr)}
        if missing := sorted(used - set(table)):
            raise self.fail(f"slots {missing} are used in the template but have no [slots.<name>] table",
                            rf"%{re.escape(missing[0])}%")
        specs = {}
        for slot, spec in table.items():
            header = (rf"^\s*\[slots\.{re.escape(slot)}[.\]]",)
            if not isinstance(spec, Mapping):
                raise self.fail(f"[slots.{slot}] must be a table", *header)
            for key in spec:
                if key not in (*RUNGS, "all", "optional"):
                    raise self.fail(f"[slots.{slot}]: unknown key {key!r} (rungs, `all` or `optional`)",
                                    rf"^\s*{re.escape(key)}\s*=", *header)
            if "optional" in spec and not isinstance(spec["optional"], bool):
                raise self.fail(f"[slots.{slot}]: `optional` must be true or false", *header)
            per_rung = {}
            for key, value in spec.items():
                if key == "optional":
                    continue
                problem = slot_spec_problem(value)
                if problem:
                    raise self.fail(f"[slots.{slot}] {key}: {problem}", rf"^\s*{re.escape(key)}\s*=", *header)
                per_rung[key] = _freeze(value)
            if not per_rung:
                raise self.fail(f"[slots.{slot}] gives no spec for any rung", *header)
            if slot in used:
                specs[slot] = SlotSpec(slot, MappingProxyType(per_rung), bool(spec.get("optional", False)))
        return specs

    def families(self, table: Any, rules: Mapping[str, ebnf.Expr], start: str | None) -> tuple[Family, ...]:
        if not isinstance(table, Mapping):
            raise self.fail("`families` must be a table", r"^\s*families\s*=")
        out = []
        for name, fam in table.items():
            header = (rf"^\s*\[families\.{re.escape(name)}\]",)
            if not isinstance(fam, Mapping):
                raise self.fail(f"[families.{name}] must be a table", *header)
            members = fam.get("members")
            members = {"all": members} if isinstance(members, str) else dict(members or {})
            listed = fam.get("rules", ())
            if not members or not listed or not all(isinstance(v, str) for v in members.values()) \
                    or not all(isinstance(r, str) for r in listed):
                raise self.fail(f"family {name!r} needs `members` (a context key) and `rules` (rule names)", *header)
            if unknown := [r for r in listed if r not in rules]:
                raise self.fail(f"family {name!r} names undefined rules {unknown}", *header)
            if "root" in listed:
                raise self.fail(f"the root rule cannot belong to family {name!r}", *header)
            out.append(Family(name, tuple(listed), MappingProxyType(members)))
        if len({r for f in out for r in f.rules}) != sum(len(f.rules) for f in out):
            raise self.fail("a rule belongs to two families", r"^\s*\[families\.")
        return tuple(out)

    def hole(self, table: Any) -> HoleSpec:
        if not isinstance(table, Mapping):
            raise self.fail("[hole] must be a table", r"^\s*hole\s*=")
        for key in table:
            if key not in ("kind", "trigger"):
                raise self.fail(f"[hole]: unknown key {key!r} (kind, trigger)", rf"^\s*{re.escape(key)}\s*=")
        kind = table.get("kind", "")
        if not isinstance(kind, str) or len(kind) > 200 or "\n" in kind:
            raise self.fail("[hole] kind must be `node_type` or `node_type:prefix` (one line)", r"^\s*kind\s*=")
        triggers = table.get("trigger", [])
        triggers = [triggers] if isinstance(triggers, str) else triggers
        if not isinstance(triggers, list) or not all(
                isinstance(t, str) and 0 < len(t) <= MAX_TRIGGER_CHARS and "\n" not in t for t in triggers):
            raise self.fail(f"[hole] trigger must be one or more strings of 1-{MAX_TRIGGER_CHARS} characters "
                            "on one line", r"^\s*trigger\s*=")
        return HoleSpec(kind, tuple(triggers))

    def examples(self, entries: Any) -> tuple[Example, ...]:
        if not isinstance(entries, list):
            raise self.fail("`examples` must be an array of [[examples]] tables", r"^\s*examples\s*=")
        if len(entries) > MAX_EXAMPLES:
            raise self.fail(f"over {MAX_EXAMPLES} examples", r"^\s*\[\[examples\]\]")
        out = []
        headers = [m.start() for m in re.finditer(r"^[ \t]*\[\[examples\]\]", self.text, re.MULTILINE)]
        for index, entry in enumerate(entries):
            line = self.text.count("\n", 0, headers[index]) + 1 if index < len(headers) else 0
            if not isinstance(entry, Mapping) or not isinstance(entry.get("text"), str):
                raise self.fail(f"example {index + 1} needs `text = \"...\"`", line=line)
            for key in entry:
                if key not in ("text", "gamma", "context"):
                    raise self.fail(f"example {index + 1}: unknown key {key!r} (text, gamma, context)", line=line)
            gamma = entry.get("gamma", {})
            if not isinstance(gamma, Mapping) or not all(
                    isinstance(b, Mapping) and isinstance(b.get("sort"), str) for b in gamma.values()):
                raise self.fail(f"example {index + 1}: `gamma` maps each name to {{ sort = \"...\", <attr> = ... }}",
                                line=line)
            context = entry.get("context", {})
            if not isinstance(context, Mapping):
                raise self.fail(f"example {index + 1}: `context` must be a table", line=line)
            out.append(Example(entry["text"], _freeze(gamma), _freeze(context)))
        return tuple(out)


def slot_spec_problem(spec: Any) -> str | None:
    """Why ``spec`` is not a slot spec (None when it is one)."""
    if not isinstance(spec, Mapping) or not spec:
        return "a slot spec is a table such as { sort = \"Buffer\", mem = \"shared\" }"
    kinds = [k for k in SLOT_KINDS if k in spec]
    if len(kinds) > 1:
        return f"one of {', '.join(SLOT_KINDS)} or a Γ query, not {' and '.join(kinds)}"
    if kinds:
        kind, value = kinds[0], spec[kinds[0]]
        if len(spec) != 1:
            return f"`{kind}` stands alone in its spec"
        if kind == "ebnf":
            if not isinstance(value, str) or len(value) > 4096:
                return "`ebnf` is one EBNF expression (a string)"
            try:
                ebnf.parse(f"x ::= {value}", "slot")
            except (GrammarError, ValueError, IndexError) as err:
                return f"`ebnf` does not parse: {err}"
        elif kind == "identifier":
            if not isinstance(value, Mapping) or set(value) - {"first", "rest", "exclude"}:
                return "`identifier` is { first = \"a-zA-Z_\", rest = \"a-zA-Z0-9_\", exclude = [...] }"
            for part in ("first", "rest"):
                if part in value and (not isinstance(value[part], str) or not re.fullmatch(r"(\w-\w|\w)+", value[part])):
                    return f"identifier {part} is a character range such as \"a-zA-Z_\""
            if not _strings(value.get("exclude", [])):
                return "identifier exclude is a list of words"
        elif kind == "names":
            if not _strings(value):
                return "`names` is a list of strings"
        elif not isinstance(value, str):
            return "`context` names one key of the hole's context"
        return None
    for key, value in spec.items():
        if not _KEY.match(key):
            return f"attribute {key!r} must be a plain name"
        if key in ("sort", "among"):
            if not (isinstance(value, str) or _strings(value)):
                return f"`{key}` is a string or a list of strings"
        elif not _scalar_or_scalars(value):
            return f"filter {key!r} is a value or a list of values"
    if "sort" not in spec:
        return "a Γ query needs `sort` (one sort or a list)"
    return None


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _scalar_or_scalars(value: Any) -> bool:
    scalar = (str, int, float, bool)
    return isinstance(value, scalar) or (isinstance(value, list) and all(isinstance(v, scalar) for v in value))


def _freeze(value: Any) -> Any:
    """Read-only copies: a fragment is shared by threads and must not change under them."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain dicts and lists again (for writing, and for JSON)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


# -- writing -----------------------------------------------------------------------


def dumps(ff: FragmentFile, header: str = "") -> str:
    """The file for ``ff``: ``parse(dumps(ff))`` gives ``ff`` back (origin aside).

    Written by hand rather than with a TOML writer so that slot specs stay one
    inline table per rung and the template a literal string, as people write them."""
    frag = ff.fragment
    out = [f"# {line}".rstrip() for line in header.splitlines()]
    out += [f"format = {FORMAT}", f"language = {_value(frag.language)}", f"name = {_value(frag.name)}",
            f"anchor = {_value(frag.anchor)}"]
    if frag.description:
        out.append(f"description = {_value(frag.description)}")
    out.append(f"rungs = {_value(list(frag.rungs))}")
    if ff.start:
        out.append(f"start = {_value(ff.start)}")
    template = ff.template if ff.template.endswith("\n") else ff.template + "\n"
    if "'''" in template or any(ord(c) < 0x20 and c not in "\n\t" for c in template):
        out.append(f"template = {_value(template)}")
    else:
        out.append("template = '''\n" + template + "'''")
    if ff.hole.kind or ff.hole.triggers:
        out += ["", "[hole]"]
        if ff.hole.kind:
            out.append(f"kind = {_value(ff.hole.kind)}")
        if ff.hole.triggers:
            out.append(f"trigger = {_value(list(ff.hole.triggers))}")
    for name, slot in frag.slots.items():
        out += ["", f"[slots.{_key(name)}]"]
        for rung in (*RUNGS, "all"):
            if rung in slot.per_rung:
                out.append(f"{rung} = {_value(thaw(slot.per_rung[rung]))}")
        if slot.optional:
            out.append("optional = true")
    for fam in frag.families:
        out += ["", f"[families.{_key(fam.name)}]"]
        members = dict(fam.members)
        out.append(f"members = {_value(members['all'] if list(members) == ['all'] else members)}")
        out.append(f"rules = {_value(list(fam.rules))}")
    for example in ff.examples:
        out += ["", "[[examples]]", f"text = {_value(example.text)}"]
        if example.gamma:
            out.append(f"gamma = {_value(thaw(example.gamma))}")
        if example.context:
            out.append(f"context = {_value(thaw(example.context))}")
    if ff.language_table is not None:
        out += ["", *_table("new_language", thaw(ff.language_table))]
    if ff.provenance:
        out += ["", *_table("provenance", thaw(ff.provenance))]
    return "\n".join(out) + "\n"


def _table(name: str, data: Mapping[str, Any]) -> list[str]:
    """``[name]`` with its scalar keys, then its sub-tables and arrays of tables."""
    lines = [f"[{name}]"]
    nested: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, Mapping) and value and all(isinstance(v, Mapping) for v in value.values()):
            nested.append((key, value))
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            nested.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in nested:
        if isinstance(value, list):
            for item in value:
                lines += ["", f"[[{name}.{_key(key)}]]", *(f"{_key(k)} = {_value(v)}" for k, v in item.items())]
        else:
            lines += ["", *_table(f"{name}.{_key(key)}", value)]
    return lines


def _key(key: str) -> str:
    return key if _KEY.match(key) else _value(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value!r} has no TOML spelling here")
        return repr(value)
    if isinstance(value, str):
        # a JSON string is a TOML basic string, but for DEL, which TOML wants escaped
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to a fragment file")
