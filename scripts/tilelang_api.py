"""Write the TileLang API surface (``import tilelang.language as T``) as data.

    python scripts/tilelang_api.py WHEEL [--out grammars/tilelang/api]

Reads the wheel's Python sources straight from the zip file and never imports
them: ``tilelang.language.__all__`` is built at import time from star imports,
tuple concatenations, comprehensions and loops over other modules' lists (and
tvm's, which the wheel bundles), so this script evaluates that small, data-only
subset of Python itself: literals, names, module attributes, ``+ | -``,
``tuple/list/set/sorted/dict.fromkeys``, comprehensions, f-strings, top-level
``for`` loops with ``append``/``extend``, ``if TYPE_CHECKING`` (the runtime
branch), ``try`` bodies and ``del``. Anything else evaluates to "unknown", which
is fatal only when ``__all__`` itself depends on it.

Besides the member list it records what the completion engine needs to know
about the tile operations, read from their definitions in the same sources:

- ``allocators``: each ``alloc_*``/``empty`` function with its memory space,
  taken from the default of its ``scope`` parameter (or the ``scope="..."`` it
  passes on), and its positional parameters;
- ``annotations``: the parameter annotations (``T.Tensor``, ``T.SharedBuffer``,
  ...) with the memory space of their proxy class (``default_scope``);
- ``operations``: the tile operations' positional parameters, with operand
  roles for the parameters this script knows about (``ROLES`` below), checked
  against the real signature so that a role is only written for a parameter
  the version has.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# Where a top-level package's sources live inside the wheel.
PACKAGE_ROOTS = {"tilelang": "", "tvm": "tilelang/3rdparty/tvm/python/"}

# TileLang memory scopes -> the memory spaces Γ records.
SCOPE_MEM = {
    "global": "global",
    "shared": "shared",
    "shared.dyn": "shared",
    "shared.barrier": "barrier",
    "shared.cluster_barrier": "barrier",
    "shared.tmem": "tmem",
    "local.fragment": "fragment",
    "local.reducer": "fragment",
    "local": "local",
    "local.var": "local",
}

# Operand roles of the tile operations (which operands are buffers, which
# memory spaces TileLang accepts there, which is the accumulator). Facts from
# the operations' documentation and lowering checks; a role is emitted only
# when the version's signature has the parameter.
ON_CHIP = ["shared", "fragment", "local"]
ROLES: dict[str, dict[str, dict[str, Any]]] = {
    "copy": {"src": {"role": "source", "buffer": True}, "dst": {"role": "destination", "buffer": True}},
    "async_copy": {"src": {"role": "source", "buffer": True}, "dst": {"role": "destination", "buffer": True}},
    "tma_copy": {"src": {"role": "source", "buffer": True}, "dst": {"role": "destination", "buffer": True}},
    "transpose": {"src": {"role": "source", "buffer": True}, "dst": {"role": "destination", "buffer": True}},
    "gemm": {
        "A": {"role": "operand", "buffer": True, "mem": ["shared", "fragment"]},
        "B": {"role": "operand", "buffer": True, "mem": ["shared", "fragment"]},
        "C": {"role": "accumulator", "buffer": True, "mem": ["fragment"]},
    },
    "gemm_sp": {
        "A_sparse": {"role": "operand", "buffer": True, "mem": ["shared", "fragment"]},
        "E": {"role": "metadata", "buffer": True},
        "B": {"role": "operand", "buffer": True, "mem": ["shared", "fragment"]},
        "C": {"role": "accumulator", "buffer": True, "mem": ["fragment"]},
    },
    "gemm_blockscaled": {
        "A": {"role": "operand", "buffer": True, "mem": ["shared", "fragment"]},
        "B": {"role": "operand", "buffer": True, "mem": ["shared", "fragment"]},
        "C": {"role": "accumulator", "buffer": True, "mem": ["fragment", "tmem"]},
        "SFA": {"role": "scale", "buffer": True},
        "SFB": {"role": "scale", "buffer": True},
    },
    "fill": {"buffer": {"role": "destination", "buffer": True}, "value": {"role": "value"}},
    "clear": {"buffer": {"role": "destination", "buffer": True}},
    "cumsum": {"src": {"role": "source", "buffer": True, "mem": ["shared", "fragment"]},
               "dst": {"role": "destination", "buffer": True, "mem": ["shared", "fragment"]}},
    "cummax": {"src": {"role": "source", "buffer": True, "mem": ["shared", "fragment"]},
               "dst": {"role": "destination", "buffer": True, "mem": ["shared", "fragment"]}},
    "atomic_add": {"dst": {"role": "destination", "buffer": True}, "value": {"role": "value"}},
    "atomic_max": {"dst": {"role": "destination", "buffer": True}, "value": {"role": "value"}},
    "atomic_min": {"dst": {"role": "destination", "buffer": True}, "value": {"role": "value"}},
    "atomic_addx2": {"dst": {"role": "destination", "buffer": True}, "value": {"role": "value"}},
    "atomic_addx4": {"dst": {"role": "destination", "buffer": True}, "value": {"role": "value"}},
    "finalize_reducer": {"reducer": {"role": "source", "buffer": True, "mem": ["fragment"]}},
}
for _reduce in ("reduce_max", "reduce_min", "reduce_sum", "reduce_abssum", "reduce_absmax",
                "reduce_bitand", "reduce_bitor", "reduce_bitxor"):
    ROLES[_reduce] = {
        "buffer": {"role": "source", "buffer": True, "mem": ["shared", "fragment"]},
        "out": {"role": "destination", "buffer": True, "mem": ["shared", "fragment", "local"]},
    }


class Unknown(Exception):
    """A value this evaluator does not model."""


class ModuleRef:
    def __init__(self, name: str) -> None:
        self.name = name


class Opaque:
    """A bound name whose value is code (a def, a class, an unmodelled call)."""


class Wheel:
    """Python modules of a wheel, read from the zip and evaluated on demand."""

    def __init__(self, path: Path) -> None:
        self.zip = zipfile.ZipFile(path)
        self.files = set(self.zip.namelist())
        self.envs: dict[str, dict[str, Any]] = {}
        self.trees: dict[str, ast.Module] = {}
        self.in_progress: set[str] = set()
        self.resolving: set[tuple[str, str]] = set()

    def version(self) -> str:
        for name in self.files:
            if name.endswith(".dist-info/METADATA"):
                for line in self.zip.read(name).decode("utf-8", "replace").splitlines():
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
        raise SystemExit("the wheel has no METADATA with a Version")

    def path_of(self, module: str) -> tuple[str, bool] | None:
        """(zip path, is_package) of a dotted module name."""
        top = module.split(".")[0]
        if top not in PACKAGE_ROOTS:
            return None
        base = PACKAGE_ROOTS[top] + module.replace(".", "/")
        if base + "/__init__.py" in self.files:
            return base + "/__init__.py", True
        if base + ".py" in self.files:
            return base + ".py", False
        return None

    def tree(self, module: str) -> ast.Module | None:
        if module not in self.trees:
            found = self.path_of(module)
            if found is None:
                return None
            self.trees[module] = ast.parse(self.zip.read(found[0]).decode("utf-8"), found[0])
        return self.trees[module]

    def resolve_relative(self, module: str, level: int, target: str | None) -> str:
        if not level:
            return target or ""
        found = self.path_of(module)
        package = module if found and found[1] else module.rpartition(".")[0]
        for _ in range(level - 1):
            package = package.rpartition(".")[0]
        return f"{package}.{target}" if target else package

    def env(self, module: str) -> dict[str, Any]:
        if module in self.envs:
            return self.envs[module]
        env: dict[str, Any] = {}
        self.envs[module] = env  # partial while it is being built (import cycles)
        tree = self.tree(module)
        if tree is None:
            return env
        self.in_progress.add(module)
        try:
            _Evaluator(self, module, env).block(tree.body)
        finally:
            self.in_progress.discard(module)
        return env

    def exported(self, module: str) -> list[str]:
        env = self.env(module)
        if "__all__" in env:
            try:
                names = self.attribute(module, "__all__")
            except Unknown as err:
                raise SystemExit(f"cannot evaluate {module}.__all__: {err}") from err
            if isinstance(names, (list, tuple, set, dict)):
                return [str(n) for n in names]
            raise SystemExit(f"cannot evaluate {module}.__all__ (it is not a list)")
        return [n for n in env if not n.startswith("_")]

    def attribute(self, module: str, name: str) -> Any:
        env = self.env(module)
        if name in env:
            value = env[name]
            if not (callable(value) and not isinstance(value, type)):
                return value
            if (module, name) in self.resolving:  # an import cycle: nothing to learn here
                raise Unknown(f"{module}.{name} (cycle)")
            self.resolving.add((module, name))
            try:
                return value()
            finally:
                self.resolving.discard((module, name))
        sub = f"{module}.{name}"
        if self.path_of(sub) is not None:
            return ModuleRef(sub)
        raise Unknown(f"{module}.{name}")


class _Evaluator:
    def __init__(self, wheel: Wheel, module: str, env: dict[str, Any]) -> None:
        self.wheel, self.module, self.env = wheel, module, env

    # statements ------------------------------------------------------------

    def block(self, body: Iterable[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def bind(self, name: str, thunk) -> None:
        try:
            self.env[name] = thunk()
        except Unknown:
            self.env[name] = Opaque()

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.env[alias.asname] = ModuleRef(alias.name)
                else:
                    head = alias.name.split(".")[0]
                    self.env[head] = ModuleRef(head)
        elif isinstance(node, ast.ImportFrom):
            source = self.wheel.resolve_relative(self.module, node.level, node.module)
            for alias in node.names:
                if alias.name == "*":
                    if self.wheel.path_of(source) is None:
                        continue
                    for name in self.wheel.exported(source):
                        self.env[name] = self._lazy(source, name)
                else:
                    self.env[alias.asname or alias.name] = self._lazy(source, alias.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self.assign(target, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign(node.target, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            self.bind(name, lambda: self.binop(node.op, self.value(self.env[name]), self.expr(node.value)))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.env[node.name] = Opaque()
        elif isinstance(node, ast.If):
            if self._is_type_checking(node.test):
                self.block(node.orelse)  # at run time TYPE_CHECKING is False
            else:
                try:
                    branch = node.body if self.expr(node.test) else node.orelse
                except Unknown:
                    branch = node.body
                self.block(branch)
        elif isinstance(node, ast.Try):
            self.block(node.body)
            self.block(node.orelse)
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            try:
                items = list(self.expr(node.iter))
            except Unknown:
                return
            for item in items:
                self.env[node.target.id] = item
                self.block(node.body)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.env.pop(target.id, None)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self.mutating_call(node.value)

    def _is_type_checking(self, test: ast.expr) -> bool:
        return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        )

    def _lazy(self, module: str, name: str):
        wheel = self.wheel

        def resolve() -> Any:
            return wheel.attribute(module, name)

        return resolve

    def assign(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, lambda: self.expr(value))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                if isinstance(element, ast.Name):
                    self.env[element.id] = Opaque()

    def mutating_call(self, call: ast.Call) -> None:
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return
        target = self.env.get(func.value.id)
        if not isinstance(target, (list, set)):
            return
        try:
            args = [self.expr(a) for a in call.args]
        except Unknown:
            self.env[func.value.id] = Opaque()
            return
        if func.attr == "append" and isinstance(target, list):
            target.append(args[0])
        elif func.attr == "extend" and isinstance(target, list):
            target.extend(args[0])
        elif func.attr == "add" and isinstance(target, set):
            target.add(args[0])
        elif func.attr == "update" and isinstance(target, set):
            target.update(args[0])

    # expressions -----------------------------------------------------------

    def value(self, value: Any) -> Any:
        if callable(value) and not isinstance(value, type):
            value = value()
        if isinstance(value, Opaque):
            raise Unknown("opaque value")
        return value

    def expr(self, node: ast.expr, scope: dict[str, Any] | None = None) -> Any:
        scope = scope or {}
        ev = lambda n: self.expr(n, scope)  # noqa: E731
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in scope:
                return scope[node.id]
            if node.id in self.env:
                return self.value(self.env[node.id])
            raise Unknown(node.id)
        if isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name) and base.id not in scope and isinstance(self.env.get(base.id), ModuleRef):
                return self.value(self.wheel.attribute(self.env[base.id].name, node.attr))
            obj = ev(base)
            if isinstance(obj, ModuleRef):
                return self.value(self.wheel.attribute(obj.name, node.attr))
            raise Unknown(ast.unparse(node))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items: list[Any] = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    items.extend(ev(element.value))
                else:
                    items.append(ev(element))
            return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, ev(node.left), ev(node.right))
        if isinstance(node, ast.BoolOp):
            values = [ev(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return all(values)
            return next((v for v in values if v), values[-1])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not ev(node.operand)
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = ev(right_node)
                ok = {ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
                      ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}.get(type(op))
                if ok is None:
                    raise Unknown("comparison")
                if not ok(left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return ev(node.body) if ev(node.test) else ev(node.orelse)
        if isinstance(node, ast.JoinedStr):
            return "".join(str(ev(v.value)) if isinstance(v, ast.FormattedValue) else str(v.value) for v in node.values)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            results = list(self.comprehension(node.elt, node.generators, dict(scope)))
            return set(results) if isinstance(node, ast.SetComp) else results
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        raise Unknown(type(node).__name__)

    def comprehension(self, elt: ast.expr, generators: list[ast.comprehension], scope: dict[str, Any]):
        if not generators:
            yield self.expr(elt, scope)
            return
        first, rest = generators[0], generators[1:]
        if not isinstance(first.target, ast.Name):
            raise Unknown("comprehension target")
        for item in self.expr(first.iter, scope):
            inner = {**scope, first.target.id: item}
            if all(self.expr(cond, inner) for cond in first.ifs):
                yield from self.comprehension(elt, rest, inner)

    def call(self, node: ast.Call, scope: dict[str, Any]) -> Any:
        func = node.func
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.expr(a.value, scope))
            else:
                args.append(self.expr(a, scope))
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "dict" and func.attr == "fromkeys":
            return dict.fromkeys(args[0])
        if isinstance(func, ast.Name) and func.id not in self.env:
            builtin = {"tuple": tuple, "list": list, "set": set, "frozenset": frozenset, "sorted": sorted,
                       "str": str, "len": len, "range": range}.get(func.id)
            if builtin is not None and not node.keywords:
                return builtin(*args)
        raise Unknown(ast.unparse(node))

    @staticmethod
    def binop(op: ast.operator, left: Any, right: Any) -> Any:
        if isinstance(op, ast.Add):
            if isinstance(left, tuple) and isinstance(right, list):
                return list(left) + right
            if isinstance(left, list) and isinstance(right, tuple):
                return left + list(right)
            return left + right
        if isinstance(op, ast.BitOr):
            return left | right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.BitAnd):
            return left & right
        raise Unknown("operator")


# -- definitions of the tile operations ----------------------------------------


def _find_defs(wheel: Wheel, module: str, name: str, seen: set[tuple[str, str]] | None = None) -> ast.FunctionDef | ast.ClassDef | None:
    """The def (or class) that ``module.name`` is, following ``from x import name``."""
    seen = seen or set()
    if (module, name) in seen:
        return None
    seen.add((module, name))
    tree = wheel.tree(module)
    if tree is None:
        return None
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            found = node  # the last definition wins (overloads come first)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                source = wheel.resolve_relative(module, node.level, node.module)
                if alias.name == "*" and found is None and name in wheel.exported(source):
                    found = _find_defs(wheel, source, name, seen) or found
                elif (alias.asname or alias.name) == name:
                    found = _find_defs(wheel, source, alias.name, seen) or found
    return found


def _positional(fn: ast.FunctionDef) -> list[dict[str, Any]]:
    args = fn.args
    plain = args.posonlyargs + args.args
    defaults = [None] * (len(plain) - len(args.defaults)) + list(args.defaults)
    out = []
    for arg, default in zip(plain, defaults):
        if arg.arg in ("self", "cls"):
            continue
        entry: dict[str, Any] = {"name": arg.arg}
        if default is not None:
            entry["default"] = ast.unparse(default)
        out.append(entry)
    return out


def _keywords(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.kwonlyargs]


def _scope_of(fn: ast.FunctionDef) -> str | None:
    for param in _positional(fn) + [{"name": a.arg, "default": ast.unparse(d)} for a, d in
                                    zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None]:
        if param["name"] == "scope" and "default" in param:
            return ast.literal_eval(param["default"])
    scopes = [kw.value.value for node in ast.walk(fn) if isinstance(node, ast.Call) for kw in node.keywords
              if kw.arg == "scope" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)]
    return scopes[-1] if scopes else None


def _class_scope(wheel: Wheel, module: str, cls: ast.ClassDef) -> str | None:
    for node in cls.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "default_scope" for t in node.targets):
            if isinstance(node.value, ast.Constant):
                return node.value.value
    for node in ast.walk(cls):  # BufferProxy passes scope="global" on
        if isinstance(node, ast.arg) and node.arg == "scope":
            pass
        if isinstance(node, ast.FunctionDef):
            scope = _scope_of(node)
            if scope:
                return scope
    for base in cls.bases:
        if isinstance(base, ast.Name):
            parent = _find_defs(wheel, module, base.id)
            if isinstance(parent, ast.ClassDef):
                return _class_scope(wheel, module, parent)
    return None


def surface(wheel_path: Path) -> dict[str, Any]:
    wheel = Wheel(wheel_path)
    facade = "tilelang.language"
    members = list(dict.fromkeys(wheel.exported(facade)))
    if not members:
        raise SystemExit(f"{wheel_path}: could not read {facade}.__all__")

    allocators: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    annotations: dict[str, Any] = {}
    for name in members:
        node = _find_defs(wheel, facade, name)
        if name.startswith("alloc_") or name == "empty":
            if isinstance(node, ast.FunctionDef):
                scope = _scope_of(node)
                allocators[name] = {"scope": scope, "mem": SCOPE_MEM.get(scope or "", "local" if scope else None),
                                    "params": [p["name"] for p in _positional(node)]}
                if name == "empty":
                    allocators[name]["mem"] = "global"
            continue
        if name in ROLES and isinstance(node, ast.FunctionDef):
            params = _positional(node)
            names = [p["name"] for p in params]
            roles = {p: r for p, r in ROLES[name].items() if p in names}
            operations[name] = {"params": names, "keywords": _keywords(node), "roles": roles}
        if name in ("Tensor", "StridedTensor", "Buffer", "SharedBuffer", "FragmentBuffer", "LocalBuffer"):
            scope = None
            tree = wheel.tree(_module_defining(wheel, facade, name) or "")
            if tree is not None:
                for stmt in _runtime_statements(tree.body):  # Tensor = TensorProxy()
                    if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                        if isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name):
                            cls = _find_defs(wheel, _module_defining(wheel, facade, name), stmt.value.func.id)
                            if isinstance(cls, ast.ClassDef):
                                scope = _class_scope(wheel, _module_defining(wheel, facade, name), cls)
            if scope is None and name == "Buffer":
                scope = "global"  # tvm's T.Buffer: global unless a scope is given
            annotations[name] = {"scope": scope, "mem": SCOPE_MEM.get(scope or "", None)}
    return {
        "package": "tilelang",
        "version": wheel.version(),
        "source": wheel_path.name,
        "members": members,
        "allocators": allocators,
        "annotations": annotations,
        "operations": operations,
    }


def _runtime_statements(body: list[ast.stmt]):
    """Top-level statements as they run (``if TYPE_CHECKING`` takes its else branch)."""
    for node in body:
        if isinstance(node, ast.If):
            test = node.test
            type_checking = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
            yield from _runtime_statements(node.orelse if type_checking else node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _runtime_statements(node.body)
        else:
            yield node


def _module_defining(wheel: Wheel, module: str, name: str, depth: int = 0) -> str | None:
    """The module whose top level assigns ``name`` (following imports)."""
    tree = wheel.tree(module)
    if tree is None or depth > 12:
        return None
    for node in _runtime_statements(tree.body):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return module
    for node in _runtime_statements(tree.body):
        if isinstance(node, ast.ImportFrom):
            source = wheel.resolve_relative(module, node.level, node.module)
            for alias in node.names:
                if (alias.asname or alias.name) == name or (alias.name == "*" and name in wheel.exported(source)):
                    found = _module_defining(wheel, source, alias.name if alias.name != "*" else name, depth + 1)
                    if found:
                        return found
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "grammars" / "tilelang" / "api")
    parser.add_argument("--names", action="store_true", help="print the member names instead of writing files")
    args = parser.parse_args(argv)
    for wheel in args.wheel:
        data = surface(wheel)
        if args.names:
            print("\n".join(data["members"]))
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        target = args.out / f"{data['version']}.json"
        target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"{target}: {len(data['members'])} members, {len(data['operations'])} operations, "
              f"{len(data['allocators'])} allocators", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
