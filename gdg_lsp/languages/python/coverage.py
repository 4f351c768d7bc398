"""Which reference positions of a finished Python statement Γ covered, for honest labels.

A statement decoded at the gamma rung references names, members after a dot and
keyword names. Each reference position is one of:

- *slotted*: the grammar only allowed names of Γ there (a name; a member after a
  receiver whose members Γ knows; a keyword in a call of a callee whose keyword names
  Γ knows -- the grammar allows any known callee's keywords, and this module checks
  the callee's own);
- *checked*: inside a comprehension or a lambda the grammar leaves positions open
  (the names there are used before the ``for`` that binds them); they are checked here
  once the statement is complete, and a statement failing the check is dropped;
- *open*: an attribute after a value whose members Γ does not know (``f(x).strip``,
  a module read as open), a keyword in a call of a callee whose signature is unknown,
  an attribute assigned to such a value (``obj.new = 1``: whether ``obj`` has it, or may
  be given it, nobody knows). Nothing is checked there; the suggestion says so and is not
  labelled guaranteed.

An attribute assigned to (``self.x = ...``, ``for self.x in``, ``with ... as self.x``) is a
member of Γ (slotted: an existing attribute written again), or a *declaration* where the
receiver may take a new one (``self`` in a defining method, attr ``declares``): said in
``declared``, and like ``x = ...`` no open reference. After any other receiver whose members
Γ knows a new attribute is a ghost: writing ``math.mean = ...`` or ``self.new = ...`` in an
ordinary method invents exactly the name the grammar refuses there.

``ghosts`` lists references that name nothing Γ knows at a position that should have
been slotted or checked (a keyword another callee has, a member inside a
comprehension): the executor drops such a statement.
"""

from __future__ import annotations

from typing import Any

from gdg_lsp.gamma import Gamma
from gdg_lsp.languages.base import Coverage
from gdg_lsp.languages.python import scopes

_SCOPED = frozenset({"list_comprehension", "set_comprehension", "dictionary_comprehension", "generator_expression",
                     "lambda"})


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _dotted(node: Any) -> str | None:
    if node is None:
        return None
    if node.type == "identifier":
        return _text(node)
    if node.type == "attribute":
        head = _dotted(node.child_by_field_name("object"))
        attr = node.child_by_field_name("attribute")
        return f"{head}.{_text(attr)}" if head is not None and attr is not None else None
    return None


def _bound_inside(node: Any) -> set[str]:
    """Names a comprehension or lambda binds (its targets, its parameters)."""
    names: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "for_in_clause":
            left = current.child_by_field_name("left")
            stack_targets = [left] if left is not None else []
            while stack_targets:
                target = stack_targets.pop()
                if target.type == "identifier":
                    names.add(_text(target))
                else:
                    stack_targets.extend(target.named_children)
        elif current.type == "lambda_parameters":
            for param in current.named_children:
                ident = param if param.type == "identifier" else param.child_by_field_name("name")
                if ident is None:
                    ident = next((c for c in param.named_children if c.type == "identifier"), None)
                if ident is not None:
                    names.add(_text(ident))
        elif current.type == "named_expression":
            name = current.child_by_field_name("name")
            if name is not None:
                names.add(_text(name))
        stack.extend(current.named_children)
    return names


TARGET_CONTAINERS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list",
                               "parenthesized_expression", "list_splat_pattern"})
"""Nodes a target may sit in (``a, (self.x, *b) = ...``)."""


def is_target(node: Any) -> bool:
    """An attribute assigned to (``self.x = ...``, ``for self.i in``, ``with ... as self.f``),
    not read first (an augmented assignment and ``del`` read it)."""
    child, parent = node, node.parent
    while parent is not None and parent.type in TARGET_CONTAINERS:
        child, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type == "as_pattern_target":
        return True
    left = parent.child_by_field_name("left") if parent.type in ("assignment", "for_statement", "for_in_clause") else None
    return left is not None and left.id == child.id


def coverage(tree: Any, source: bytes, gamma: Gamma) -> Coverage:
    """Reference positions of the statement ``source`` parsed as ``tree`` (see the module docstring)."""
    out = Coverage()
    for ref in scopes.build(tree, source).references:  # names read (not bound) by the statement
        _count_name(out, any(s.kind in ("comprehension", "lambda") for s in ref.scope.chain()))

    def visit(node: Any, shadowed: frozenset[str], scoped: bool) -> None:
        if node.type in _SCOPED:
            shadowed = shadowed | _bound_inside(node)
            scoped = True
        if node.type == "attribute":
            _attribute(node, gamma, shadowed, scoped, out)
        elif node.type == "call":
            _keywords(node, gamma, shadowed, scoped, out)
        for child in node.named_children:
            visit(child, shadowed, scoped)

    visit(tree.root_node, frozenset(), False)
    return out


def _count_name(out: Coverage, scoped: bool) -> None:
    if scoped:
        out.checked += 1
    else:
        out.slotted += 1


def _attribute(node: Any, gamma: Gamma, shadowed: frozenset[str], scoped: bool, out: Coverage) -> None:
    obj = node.child_by_field_name("object")
    attr = _text(node.child_by_field_name("attribute"))
    receiver = _dotted(obj)
    known = receiver is not None and receiver.split(".")[0] not in shadowed
    if known and f"{receiver}.{attr}" in gamma:  # one string of Γ (a member; TileLang's `T.copy`)
        _count_name(out, scoped)
        return
    owner = gamma.lookup(receiver) if known else None
    shown = (receiver or _text(obj))[:40]
    if is_target(node):
        if owner is not None and "members" in owner.attrs:
            if "declares" in owner.attrs:
                out.declared.append(f"new attribute {receiver}.{attr} ({owner.attrs['declares']})")
            else:
                out.ghosts.append(f"{receiver}.{attr}")
        else:
            why = owner.attrs.get("open_members") if owner is not None else None
            out.open.append(f"new attribute {attr} of {shown}" + (f" ({why})" if why else ""))
    elif owner is None or "members" not in owner.attrs:
        out.open.append(f"attribute {attr} after {shown}")
    else:
        out.ghosts.append(f"{receiver}.{attr}")


def _keywords(node: Any, gamma: Gamma, shadowed: frozenset[str], scoped: bool, out: Coverage) -> None:
    args = node.child_by_field_name("arguments")
    if args is None:
        return
    keywords = [c for c in args.named_children if c.type == "keyword_argument"]
    if not keywords:
        return
    callee = _dotted(node.child_by_field_name("function"))
    binding = gamma.lookup(callee) if callee is not None and callee.split(".")[0] not in shadowed else None
    known = binding.attrs.get("keywords") if binding is not None else None
    for keyword in keywords:
        name = _text(keyword.child_by_field_name("name"))
        if not isinstance(known, tuple):
            out.open.append(f"keyword {name} of {(callee or _text(node.child_by_field_name('function')))[:40]}")
        elif name in known:
            _count_name(out, scoped)
        else:
            out.ghosts.append(f"{callee}({name}=)")
