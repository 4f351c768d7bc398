"""A language taught by a fragment file: its tree-sitter grammar, and how names are declared.

A fragment file's ``[new_language]`` table (fragments/fileformat.py) becomes a
``Definition`` here. It is data: nothing in it names code to run.

- ``tree_sitter`` names a grammar **wheel** from the allow-list below
  (``ALLOWED_GRAMMARS``: the tree-sitter organisation's maintained Python
  wheels). The name is only a key into that table; the module imported is the
  table's (a constant of gdg-lsp), and only if it is already installed in the
  server's own environment, from its site-packages (a module of that name
  planted in a workspace or the current folder is refused). gdg-lsp never
  installs a package a file names.
- ``declare`` lists tree-sitter queries (data for the tree-sitter library,
  with the ``@name`` capture on the declared name, optionally ``@value`` and
  ``@type``); regular-expression predicates are refused (a pathological pattern
  could stall analysis), so are queries over ``MAX_QUERY_CHARS``.
- ``claims`` lets the language take over documents of another language whose
  text contains a marker (Triton: Python files that import triton), by plain
  substring search.

``syntax = "python"`` starts from the preset for tree-sitter-python (its
declarations, scopes, keywords, builtins); every key the file gives replaces
the preset's.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import site
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from gdg_lsp.errors import GdgError

ALLOWED_GRAMMARS: dict[str, tuple[str, str]] = {
    "tree-sitter-bash": ("tree_sitter_bash", "language"),
    "tree-sitter-c": ("tree_sitter_c", "language"),
    "tree-sitter-c-sharp": ("tree_sitter_c_sharp", "language"),
    "tree-sitter-cpp": ("tree_sitter_cpp", "language"),
    "tree-sitter-css": ("tree_sitter_css", "language"),
    "tree-sitter-go": ("tree_sitter_go", "language"),
    "tree-sitter-haskell": ("tree_sitter_haskell", "language"),
    "tree-sitter-html": ("tree_sitter_html", "language"),
    "tree-sitter-java": ("tree_sitter_java", "language"),
    "tree-sitter-javascript": ("tree_sitter_javascript", "language"),
    "tree-sitter-json": ("tree_sitter_json", "language"),
    "tree-sitter-julia": ("tree_sitter_julia", "language"),
    "tree-sitter-lua": ("tree_sitter_lua", "language"),
    "tree-sitter-ocaml": ("tree_sitter_ocaml", "language_ocaml"),
    "tree-sitter-php": ("tree_sitter_php", "language_php"),
    "tree-sitter-python": ("tree_sitter_python", "language"),
    "tree-sitter-ruby": ("tree_sitter_ruby", "language"),
    "tree-sitter-rust": ("tree_sitter_rust", "language"),
    "tree-sitter-scala": ("tree_sitter_scala", "language"),
    "tree-sitter-sql": ("tree_sitter_sql", "language"),
    "tree-sitter-toml": ("tree_sitter_toml", "language"),
    "tree-sitter-typescript": ("tree_sitter_typescript", "language_typescript"),
    "tree-sitter-yaml": ("tree_sitter_yaml", "language"),
}
"""The tree-sitter grammars a fragment file may name (distribution -> module, function)."""

MAX_DECLARES = 32
MAX_QUERY_CHARS = 2048
MAX_LIST = 512
_ALLOWED_PREDICATES = {"eq?", "not-eq?", "any-of?", "not-any-of?"}
_KEYS = {"name", "syntax", "tree_sitter", "extensions", "claims", "keywords", "builtins", "identifiers", "scopes",
         "no_holes_in", "not_references", "atoms", "declare"}


class DefinitionError(GdgError):
    """A ``[new_language]`` table that cannot be used; ``key`` is the entry it is about."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Declare:
    query: str
    sort: str
    outer: bool = False
    """The name belongs to the scope around the scope node that declares it (a function's name)."""
    hoist: bool = False
    """Visible throughout its scope, before its declaration too."""
    attrs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Trigger:
    text: str
    fragment: str
    anchor: str


@dataclass(frozen=True)
class Definition:
    name: str
    tree_sitter: str
    extensions: tuple[str, ...] = ()
    claims: tuple[str, tuple[str, ...]] | None = None
    keywords: tuple[str, ...] = ()
    builtins: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ("identifier",)
    scopes: tuple[str, ...] = ()
    no_holes_in: tuple[str, ...] = ("comment", "string")
    not_references: tuple[str, ...] = ()
    atoms: tuple[str, ...] = ()
    declares: tuple[Declare, ...] = ()
    triggers: tuple[Trigger, ...] = field(default=(), compare=False)
    """Filled from the language's fragments (each one's ``[hole] trigger``); not part of the file."""
    origin: str = field(default="", compare=False)

    def with_triggers(self, triggers: tuple[Trigger, ...]) -> Definition:
        return replace(self, triggers=triggers)

    def same_language(self, other: Definition) -> bool:
        return self == other


PYTHON_DECLARES = (
    Declare("(function_definition name: (identifier) @name)", "Function", outer=True, hoist=True),
    Declare("(class_definition name: (identifier) @name)", "Class", outer=True, hoist=True),
    Declare("(parameters (identifier) @name)", "Parameter"),
    Declare("(parameters (typed_parameter (identifier) @name type: (_) @type))", "Parameter"),
    Declare("(parameters (default_parameter name: (identifier) @name))", "Parameter"),
    Declare("(parameters (typed_default_parameter name: (identifier) @name type: (_) @type))", "Parameter"),
    Declare("(lambda_parameters (identifier) @name)", "Parameter"),
    Declare("(assignment left: (identifier) @name right: (_) @value)", "Variable"),
    Declare("(assignment left: (identifier) @name type: (_) @type)", "Variable"),
    Declare("(assignment left: [(pattern_list (identifier) @name) (tuple_pattern (identifier) @name)])", "Variable"),
    Declare("(augmented_assignment left: (identifier) @name)", "Variable"),
    Declare("(for_statement left: (identifier) @name)", "Variable"),
    Declare("(for_statement left: [(pattern_list (identifier) @name) (tuple_pattern (identifier) @name)])", "Variable"),
    Declare("(as_pattern alias: (as_pattern_target (identifier) @name))", "Variable"),
    Declare("(named_expression name: (identifier) @name value: (_) @value)", "Variable"),
    Declare("(import_statement name: (dotted_name . (identifier) @name))", "Import", hoist=True),
    Declare("(import_statement name: (aliased_import alias: (identifier) @name))", "Import", hoist=True),
    Declare("(import_from_statement name: (dotted_name (identifier) @name .))", "Import", hoist=True),
    Declare("(import_from_statement name: (aliased_import alias: (identifier) @name))", "Import", hoist=True),
    Declare("(global_statement (identifier) @name)", "Variable"),
)

PYTHON_BUILTINS = (
    "abs", "all", "any", "bool", "bytes", "callable", "chr", "dict", "divmod", "enumerate", "filter", "float",
    "format", "getattr", "hasattr", "hash", "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map",
    "max", "min", "next", "object", "ord", "pow", "print", "range", "repr", "reversed", "round", "set", "slice",
    "sorted", "str", "sum", "super", "tuple", "type", "zip", "ValueError", "TypeError", "RuntimeError",
    "NotImplementedError", "AssertionError", "Exception", "KeyError", "IndexError", "__name__", "__file__",
)

PRESETS: dict[str, dict[str, Any]] = {
    "python": {
        "tree_sitter": "tree-sitter-python",
        "keywords": ("False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
                     "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
                     "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
                     "while", "with", "yield"),
        "builtins": PYTHON_BUILTINS,
        "scopes": ("function_definition", "class_definition", "lambda"),
        "no_holes_in": ("comment", "string"),
        "not_references": ("keyword_argument.name", "attribute.attribute", "function_definition.name",
                           "class_definition.name", "default_parameter.name", "typed_parameter.*",
                           "typed_default_parameter.name", "parameters.*", "lambda_parameters.*", "dotted_name.*",
                           "aliased_import.alias", "import_from_statement.*"),
        "atoms": ("string", "concatenated_string"),
        "declares": PYTHON_DECLARES,
    },
}
"""Starting points a file names with ``syntax = "..."`` (data of gdg-lsp, not of the file)."""


def from_table(table: Mapping[str, Any], language: str, origin: str = "",
               builtin_names: frozenset[str] = frozenset(), builtin_extensions: frozenset[str] = frozenset()) -> Definition:
    """The definition in a ``[new_language]`` table, checked (the grammar imported, the queries compiled)."""
    for key in table:
        if key not in _KEYS:
            raise DefinitionError(f"[new_language]: unknown key {key!r} (expected: {', '.join(sorted(_KEYS))})", key)
    name = table.get("name", language)
    if name != language:
        raise DefinitionError(f"[new_language] name {name!r} differs from the file's language {language!r}", "name")
    if language in builtin_names:
        raise DefinitionError(f"{language!r} is a language gdg-lsp already has; a file cannot redefine it", "name")
    preset: dict[str, Any] = {}
    if "syntax" in table:
        if table["syntax"] not in PRESETS:
            raise DefinitionError(f"unknown syntax {table['syntax']!r} (known: {', '.join(PRESETS)})", "syntax")
        preset = PRESETS[table["syntax"]]
    grammar = table.get("tree_sitter", preset.get("tree_sitter"))
    if not isinstance(grammar, str):
        raise DefinitionError("[new_language] needs tree_sitter = \"tree-sitter-<language>\"", "tree_sitter")
    grammar = grammar.replace("_", "-").lower()
    if grammar not in ALLOWED_GRAMMARS:
        raise DefinitionError(f"tree-sitter grammar {grammar!r} is not one gdg-lsp loads; allowed: "
                              f"{', '.join(sorted(ALLOWED_GRAMMARS))}", "tree_sitter")
    load_grammar(grammar)  # raises when absent or not from the environment's site-packages
    extensions = _words(table, "extensions", ())
    for ext in extensions:
        if not re.fullmatch(r"\.[A-Za-z0-9_.+\-]{1,16}", ext):
            raise DefinitionError(f"extension {ext!r} must look like \".ext\"", "extensions")
        if ext.lower() in builtin_extensions:
            raise DefinitionError(f"extension {ext!r} belongs to a built-in language (use `claims` instead)",
                                  "extensions")
    claims = None
    if "claims" in table:
        raw = table["claims"]
        if not isinstance(raw, Mapping) or set(raw) != {"language", "contains"} or not isinstance(raw["language"], str):
            raise DefinitionError("claims = { language = \"python\", contains = [\"import triton\"] }", "claims")
        contains = raw["contains"]
        contains = [contains] if isinstance(contains, str) else contains
        if not isinstance(contains, list) or not contains or not all(
                isinstance(c, str) and 0 < len(c) <= 200 for c in contains):
            raise DefinitionError("claims.contains: one or more markers (strings of 1-200 characters)", "claims")
        claims = (raw["language"], tuple(contains))
    declares = preset.get("declares", ())
    if "declare" in table:
        declares = _declares(table["declare"])
    definition = Definition(
        name=language, tree_sitter=grammar, extensions=tuple(e.lower() for e in extensions), claims=claims,
        keywords=_words(table, "keywords", preset.get("keywords", ())),
        builtins=_words(table, "builtins", preset.get("builtins", ())),
        identifiers=_words(table, "identifiers", preset.get("identifiers", ("identifier",))),
        scopes=_words(table, "scopes", preset.get("scopes", ())),
        no_holes_in=_words(table, "no_holes_in", preset.get("no_holes_in", ("comment", "string"))),
        not_references=_words(table, "not_references", preset.get("not_references", ())),
        atoms=_words(table, "atoms", preset.get("atoms", ())),
        declares=tuple(declares), origin=origin,
    )
    compiled_queries(definition)  # a query the grammar does not have is an error now, not at the first keystroke
    return definition


def _words(table: Mapping[str, Any], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    if key not in table:
        return tuple(default)
    value = table[key]
    if not isinstance(value, list) or len(value) > MAX_LIST or not all(
            isinstance(v, str) and 0 < len(v) <= 128 for v in value):
        raise DefinitionError(f"`{key}` must be a list of at most {MAX_LIST} short strings", key)
    return tuple(value)


def _declares(raw: Any) -> list[Declare]:
    if not isinstance(raw, list) or len(raw) > MAX_DECLARES:
        raise DefinitionError(f"[[new_language.declare]]: at most {MAX_DECLARES} tables", "declare")
    out = []
    for entry in raw:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("query"), str) or not isinstance(entry.get("sort"), str):
            raise DefinitionError("each [[new_language.declare]] needs query = \"(...) @name\" and sort = \"...\"",
                                  "query")
        if set(entry) - {"query", "sort", "outer", "hoist", "attrs"}:
            raise DefinitionError(f"[[new_language.declare]]: unknown keys {sorted(set(entry) - {'query', 'sort', 'outer', 'hoist', 'attrs'})}",
                                  "query")
        query = entry["query"]
        if len(query) > MAX_QUERY_CHARS:
            raise DefinitionError(f"a declare query is over {MAX_QUERY_CHARS} characters", "query")
        for predicate in re.findall(r"#([A-Za-z_\-]+[?!])", query):
            if predicate not in _ALLOWED_PREDICATES:
                raise DefinitionError(f"query predicate #{predicate} is not allowed (only "
                                      f"{', '.join('#' + p for p in sorted(_ALLOWED_PREDICATES))})", "query")
        if "@name" not in query:
            raise DefinitionError("a declare query captures the declared name as @name", "query")
        attrs = entry.get("attrs", {})
        if not isinstance(attrs, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in attrs.items()):
            raise DefinitionError("declare attrs are { key = \"value\" } strings", "attrs")
        for flag in ("outer", "hoist"):
            if not isinstance(entry.get(flag, False), bool):
                raise DefinitionError(f"declare {flag} is true or false", flag)
        out.append(Declare(query, entry["sort"], bool(entry.get("outer", False)), bool(entry.get("hoist", False)),
                           tuple(sorted(attrs.items()))))
    return out


# -- loading the grammar -------------------------------------------------------------------


def _installed_roots() -> list[str]:
    paths = sysconfig.get_paths()
    roots = {paths.get("purelib"), paths.get("platlib")}
    roots.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        roots.add(site.getusersitepackages())
    return [os.path.realpath(r) for r in roots if r]


@lru_cache(maxsize=None)
def load_grammar(distribution: str) -> Any:
    """The ``tree_sitter.Language`` of an allowed, installed grammar wheel."""
    import tree_sitter

    if distribution not in ALLOWED_GRAMMARS:
        raise DefinitionError(f"tree-sitter grammar {distribution!r} is not on the allow-list", "tree_sitter")
    module_name, function = ALLOWED_GRAMMARS[distribution]
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        raise DefinitionError(f"the tree-sitter grammar {distribution} is not installed (gdg-lsp does not install "
                              f"packages a file names: `pip install {distribution}` in gdg-lsp's environment)",
                              "tree_sitter")
    origin = os.path.realpath(spec.origin)
    if not any(origin.startswith(root + os.sep) for root in _installed_roots()):
        raise DefinitionError(f"{module_name} would be imported from {origin}, outside the environment's "
                              "site-packages: refused", "tree_sitter")
    module = importlib.import_module(module_name)
    return tree_sitter.Language(getattr(module, function)())


@lru_cache(maxsize=None)
def vouched_keywords(distribution: str) -> frozenset[str]:
    """The words the grammar ``distribution`` itself reserves, as gdg-lsp knows them (never a
    file's own ``keywords``): a preset's keyword list for its grammar, else the grammar's own
    anonymous word tokens. Words of a suggestion that a user's fragment wrote are not Γ's;
    these are the ones that need no Γ (fragments/authored.py)."""
    for preset in PRESETS.values():
        if preset["tree_sitter"] == distribution:
            return frozenset(preset["keywords"])
    language = load_grammar(distribution)
    kinds = (language.node_kind_for_id(i) for i in range(language.node_kind_count)
             if not language.node_kind_is_named(i) and language.node_kind_is_visible(i))
    return frozenset(k for k in kinds if k and len(k) > 1 and re.fullmatch(r"[A-Za-z_]\w*", k))


@lru_cache(maxsize=64)
def compiled_queries(definition: Definition) -> tuple[Any, ...]:
    import tree_sitter

    language = load_grammar(definition.tree_sitter)
    out = []
    for declare in definition.declares:
        try:
            out.append(tree_sitter.Query(language, declare.query))
        except Exception as err:  # tree_sitter.QueryError and friends: the message names the place
            raise DefinitionError(f"declare query does not compile for {definition.tree_sitter}: "
                                  f"{str(err).splitlines()[0]}", "query") from None
    return tuple(out)
