"""The identifiers a line of Python references (found with tree-sitter, error-tolerant):
not the names it declares, not keyword-argument names, not attribute names."""

from __future__ import annotations

from gdg_lsp.languages.python.analyzer import parse


def references(line: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of the identifiers the line references (not declared, not keyword names,
    not attribute names), found with tree-sitter on the line alone."""
    source = line.strip().encode()
    if source.endswith(b":"):
        source += b"\n    pass"
    tree = parse(source)
    out = []
    stack = [tree.root_node]
    declared: set[int] = set()
    while stack:
        node = stack.pop()
        if node.type == "for_statement" and node.child_by_field_name("left") is not None:
            declared |= {n.start_byte for n in idents(node.child_by_field_name("left"))}
        if node.type == "as_pattern_target":
            declared |= {n.start_byte for n in idents(node)}
        if node.type == "assignment" and node.child_by_field_name("left") is not None and node.child_by_field_name("left").type == "identifier":
            declared.add(node.child_by_field_name("left").start_byte)
        if node.type == "identifier":
            parent = node.parent
            if parent.type == "attribute" and parent.child_by_field_name("attribute") == node:
                continue
            if parent.type == "keyword_argument" and parent.child_by_field_name("name") == node:
                continue
            if node.start_byte not in declared and node.text != b"pass":
                out.append((node.start_byte, node.end_byte, node.text.decode()))
        stack.extend(node.children)
    return [r for r in out if r[0] not in declared]


def idents(node):
    if node.type == "identifier":
        yield node
    for child in node.children:
        yield from idents(child)


def free_names(statement: str) -> list[str]:
    """Names a statement uses that it does not bind itself (lambda and comprehension
    variables, assignment targets... are bound), by Python's scoping rules."""
    from gdg_lsp.languages.python import scopes

    line = statement.strip()
    source = (line + ("\n    pass\n" if line.endswith(":") else "\n")).encode()
    tree = scopes.build(parse(source), source)
    out = []
    for ref in tree.references:
        found = tree.resolve(ref.name, ref.start, ref.scope)
        if not isinstance(found, scopes.Decl) or found.attrs.get("implicit"):
            out.append(ref.name)
    return out
