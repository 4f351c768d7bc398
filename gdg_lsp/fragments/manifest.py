"""Loading fragments from ``grammars/<language>/``: manifests and templates.

A language's ``grammars/<language>/manifest.toml`` lists its fragments: a
template file (EBNF with ``%slot%`` atoms), the rungs it offers, and for each
slot what it reads at each rung. A slot spec is one of

- ``{ sort = [...], <attr> = value, ... }``: a query over Γ (``Gamma.names``);
  a value ``"$key"`` is taken from the hole's context;
- ``{ ebnf = "..." }``: a fixed EBNF expression (it may name rules of the template);
- ``{ identifier = { first = "a-zA-Z_", rest = "a-zA-Z0-9_", exclude = [...] } }``:
  an open identifier that is none of the excluded (reserved) words (``exclude``
  may be ``"$key"``: the words the hole's context lists);
- ``{ names = [...] }``: fixed literal alternatives;
- ``{ context = "key" }``: literal alternatives from the hole's context.

A slot marked ``optional = true`` may answer with nothing: the derivations that
need it disappear (``return`` outside a function). Any other empty answer
raises ``GammaEmptyError`` and π climbs one rung.

A manifest may list slot specs once for all its fragments (``[slots.<name>]``);
a fragment's own ``[fragments.<f>.slots.<name>]`` replaces the shared spec. A
fragment may name a ``start`` rule: several fragments then share one template
file, each made of the rules reachable from its start (and only their slots).

A fragment may declare rule *families*: a set of its rules copied once per
member of a list the hole's context supplies (``members``, a context key, or
one key per rung). Each member is a mapping whose entries are looked up
before the hole's context when the copy's slots are answered, so one copy
can read "the columns of this table" while another reads "the columns of that
one". Inside a copy, references to rules of the same family stay inside the
copy; a reference from any other rule to a family rule means "any member's
copy" (an alternation). SQL uses this to keep a select list consistent with
the FROM clause the same suggestion writes after it.

Rungs, tightest first: ``pin`` ⊑ ``ctx`` ⊑ ``gamma`` ⊑ ``base``. A slot without
a spec for a rung uses the next looser rung's spec.

Besides its manifest, a language folder may hold fragment files,
``grammars/<language>/fragments/*.toml`` (one fragment each, its template
inline: fragments/fileformat.py); they are built-in fragments like the
manifest's. Fragments from users' files (a workspace's ``.gdg/fragments/``,
``gdg.fragments.paths``) live in ``fragments.store`` once their gate passed;
``fragment`` and ``available`` see both.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources

from gdg_lsp.errors import GrammarError
from gdg_lsp.fragments import ebnf, fileformat, store
from gdg_lsp.fragments.model import RUNGS, Family, Fragment, SlotSpec


@lru_cache(maxsize=None)
def load_fragments(language: str) -> Mapping[str, Fragment]:
    """The built-in fragments of ``grammars/<language>/``: its manifest's and its
    fragment files' (parsed once per process)."""
    folder = resources.files("gdg_lsp.grammars").joinpath(language)
    manifest_file = folder.joinpath("manifest.toml")
    files_folder = folder.joinpath("fragments")
    if not manifest_file.is_file() and not files_folder.is_dir():
        raise GrammarError(f"no grammars for language {language!r} (missing {manifest_file})")
    fragments = _manifest_fragments(language, folder) if manifest_file.is_file() else {}
    if files_folder.is_dir():
        for entry in sorted(files_folder.iterdir(), key=lambda e: e.name):
            if not entry.name.endswith(".toml"):
                continue
            origin = f"grammars/{language}/fragments/{entry.name}"
            try:
                parsed = fileformat.parse(entry.read_text(encoding="utf-8"), origin)
            except fileformat.FragmentFileError as err:
                raise GrammarError(str(err)) from None
            if parsed.language != language or parsed.name in fragments:
                raise GrammarError(f"{origin}: fragment {parsed.language}/{parsed.name} is not new to {language!r}")
            fragments[parsed.name] = parsed.fragment
    return fragments


def _manifest_fragments(language: str, folder) -> dict[str, Fragment]:
    manifest = tomllib.loads(folder.joinpath("manifest.toml").read_text(encoding="utf-8"))
    shared_slots = manifest.get("slots", {})
    fragments: dict[str, Fragment] = {}
    for name, entry in manifest.get("fragments", {}).items():
        origin = f"grammars/{language}/{entry['file']}"
        rules = ebnf.parse(folder.joinpath(entry["file"]).read_text(encoding="utf-8"), origin)
        parsed = set(rules)
        if start := entry.get("start"):
            # several fragments share one template, each from its own start rule
            if start not in rules:
                raise GrammarError(f"{origin}: start rule {start!r} of fragment {name!r} is not defined")
            rules = {"root": ebnf.Ref(start), **{k: v for k, v in rules.items() if k != "root"}}
        ebnf.check(rules, origin)
        rules = {k: v for k, v in rules.items() if k in ebnf.reachable(rules)}
        rungs = tuple(entry.get("rungs", ("gamma", "base")))
        unknown = set(rungs) - set(RUNGS)
        if unknown:
            raise GrammarError(f"{origin}: unknown rungs {sorted(unknown)}")
        rungs = tuple(r for r in RUNGS if r in rungs)
        slot_specs = {
            slot: SlotSpec(
                slot,
                {k: v for k, v in spec.items() if k in (*RUNGS, "all")},
                bool(spec.get("optional", False)),
            )
            for slot, spec in {**shared_slots, **entry.get("slots", {})}.items()
        }
        used = {s for expr in rules.values() for s in ebnf.slots(expr)}
        if missing := used - set(slot_specs):
            raise GrammarError(f"{origin}: slots {sorted(missing)} have no spec in the manifest")
        families = []
        for fam_name, fam in entry.get("families", {}).items():
            members = fam.get("members")
            members = {"all": members} if isinstance(members, str) else dict(members or {})
            listed = tuple(fam.get("rules", ()))
            if not members or not listed:
                raise GrammarError(f"{origin}: family {fam_name!r} needs `members` and `rules`")
            if unknown := [r for r in listed if r not in parsed]:
                raise GrammarError(f"{origin}: family {fam_name!r} names undefined rules {unknown}")
            fam_rules = tuple(r for r in listed if r in rules)  # those this fragment's start reaches
            if "root" in fam_rules:
                raise GrammarError(f"{origin}: the root rule cannot belong to family {fam_name!r}")
            families.append(Family(fam_name, fam_rules, members))
        if len({r for f in families for r in f.rules}) != sum(len(f.rules) for f in families):
            raise GrammarError(f"{origin}: a rule belongs to two families")
        fragments[name] = Fragment(
            language, name, entry.get("anchor", "Stmt"), rungs, rules,
            {k: v for k, v in slot_specs.items() if k in used}, entry.get("description", ""),
            tuple(families),
        )
    return fragments


def builtin_languages() -> list[str]:
    """The languages with a folder of built-in fragments."""
    root = resources.files("gdg_lsp.grammars")
    return sorted(entry.name for entry in root.iterdir() if entry.is_dir() and not entry.name.startswith("_"))


def available(language: str) -> Mapping[str, Fragment]:
    """Built-in fragments of ``language`` and those from users' files whose gate passed."""
    users = store.USER.fragments(language)
    try:
        builtin = load_fragments(language)
    except GrammarError:
        if users:
            return users
        raise
    return {**builtin, **users} if users else builtin


def fragment(language: str, name: str) -> Fragment:
    user = store.USER.fragments(language).get(name)
    if user is not None:
        return user
    fragments = available(language)
    if name not in fragments:
        raise GrammarError(f"language {language!r} has no fragment {name!r}")
    return fragments[name]
