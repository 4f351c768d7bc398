"""Member diagnostics beyond modules: a read of ``self.x``, ``box.x`` or ``Box.x`` that the
class (along its static MRO) does not have, and a keyword a known callee does not take,
each warned with the closest real name as the quick fix; and none where a member may exist
that no statement names (``setattr``, ``__slots__``, ``__getattr__``, dataclass fields,
named tuples, enums, properties, unknown decorators or bases, subclasses that define it)."""

from __future__ import annotations

import textwrap

import pytest

from gdg_lsp.documents import Document
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.settings import PythonSettings, Settings

CODES = ("unknown-member", "unknown-keyword")


def warned(code: str, workspace: WorkspaceContext | None = None) -> list[tuple[str, str, str | None]]:
    """(code, the text warned about, the replacement) of the member and keyword warnings."""
    code = textwrap.dedent(code)
    doc = Document("file:///members_warned.py", "python", 1, code, parse)
    return [(f.code, code[f.start:f.end], (f.data or {}).get("replacement"))
            for f in PythonAnalyzer().diagnostics(doc.snapshot(), workspace or WorkspaceContext()) if f.code in CODES]


BASKET = """\
class Base:
    kind = "b"

    def helper(self, value, *, flag=False):
        self.seen = value


class Basket(Base):
    size = 1

    def __init__(self, items):
        self.pelnor_items = list(items)

    @property
    def count(self):
        return len(self.pelnor_items)

    def add(self, item):
        self.pelor_items.append(item)
        self.helper(item, flg=True)
        return self.count + self.kind_of + self.seen

    @classmethod
    def make(cls):
        return cls.sise


def use(items, sep=", "):
    basket = Basket(items)
    basket.totl = basket.pelnor_items
    width = Basket.siz
    Basket(itemz=items)
    use(items, sepp=1)
    print(items, sepp="")
    return basket.pelnor_itemz
"""


def test_reads_of_members_and_keywords_that_do_not_exist_are_warned_with_the_closest_name():
    assert warned(BASKET) == [
        ("unknown-member", "pelor_items", "pelnor_items"),
        ("unknown-keyword", "flg", "flag"),
        ("unknown-member", "kind_of", "kind"),
        ("unknown-member", "sise", "size"),
        ("unknown-member", "siz", "size"),
        ("unknown-keyword", "itemz", "items"),
        ("unknown-keyword", "sepp", "sep"),
        ("unknown-keyword", "sepp", "sep"),
        ("unknown-member", "pelnor_itemz", "pelnor_items"),
    ]


def test_member_warnings_can_be_turned_off():
    off = WorkspaceContext(settings=Settings(python=PythonSettings(member_warnings=False)))
    assert warned(BASKET, off) == []


@pytest.mark.parametrize("code", [
    # setattr, __dict__ and vars() write attributes no statement names
    "class K:\n    def __init__(self, **kw):\n        for k, v in kw.items():\n            setattr(self, k, v)\n"
    "    def f(self):\n        return self.anything\n",
    "class K:\n    def __init__(self, kw):\n        self.__dict__.update(kw)\n    def f(self):\n        return self.anything\n",
    "class K:\n    def __init__(self, kw):\n        vars(self).update(kw)\n    def f(self):\n        return self.anything\n",
    # __slots__ names are attributes; a computed __slots__ is not read
    "class K:\n    __slots__ = ('a', 'b')\n    def f(self):\n        return self.a + self.b\n",
    "NAMES = ['a']\nclass K:\n    __slots__ = NAMES\n    def f(self):\n        return self.a\n",
    # __getattr__ in the class or a base
    "class B:\n    def __getattr__(self, name):\n        return 1\nclass K(B):\n    def f(self):\n        return self.anything\n",
    "class K:\n    def __getattribute__(self, name):\n        return 1\n    def f(self):\n        return self.anything\n",
    # dataclass fields, named tuples, enums, properties
    "from dataclasses import dataclass, field\n@dataclass\nclass P:\n    x: int\n    y: list = field(default_factory=list)\n"
    "    def f(self):\n        return self.x + len(self.y)\np = P(1)\nq = p.x\n",
    "from typing import NamedTuple\nclass P(NamedTuple):\n    x: int\n    y: int = 0\n"
    "    def f(self):\n        return self.x + self.y + self._asdict()['x']\nq = P(1).x\np = P(1)\nr = p._replace(x=2)\n",
    "import enum\nclass C(enum.Enum):\n    RED = 1\n    def f(self):\n        return self.value + self.name\nx = C.RED\ny = C.__members__\n",
    "class K:\n    @property\n    def size(self):\n        return 1\n    @size.setter\n    def size(self, v):\n        pass\n"
    "    def f(self):\n        return self.size\n",
    # a class decorator or a base that cannot be read may add anything
    "from somewhere_unknown import register, Base\n@register\nclass K:\n    def f(self):\n        return self.anything\n",
    "from somewhere_unknown import Base\nclass K(Base):\n    def f(self):\n        return self.anything\n",
    "from somewhere_unknown import Base\nclass Mixin:\n    pass\nclass K(Mixin, Base):\n    def f(self):\n        return self.anything\n",
    # a mixin names what the classes it is mixed into have
    "class LoggingMixin:\n    def log(self):\n        return self.logger\n",
    # an abstract base names what its subclasses define
    "class Handler:\n    def handle(self):\n        return self.rfile.read()\nclass StreamHandler(Handler):\n"
    "    def setup(self):\n        self.rfile = open('x')\n",
    "import abc\nclass Shape(abc.ABC):\n    def describe(self):\n        return self.sides\n",
    # an attribute set on an instance from outside the class
    "class K:\n    def f(self):\n        return self.extra\nk = K()\nk.extra = 1\n",
    # a value rebound to another class, a parameter without a known type
    "class A:\n    x = 1\nclass B:\n    y = 1\ndef f(flag):\n    v = A()\n    if flag:\n        v = B()\n    return v.y\n",
    "def f(obj):\n    return obj.anything\n",
    # a callee with **kwargs, a decorated callee, a class whose __init__ cannot be read
    "def f(a, **kw):\n    return a\nf(1, anything=2)\n",
    "import functools\n@functools.lru_cache\ndef f(a):\n    return a\nf(a=1)\ndef g(a):\n    return a\ng = functools.partial(g, 1)\ng(b=2)\n",
    "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nP(x=1)\n",
    "class K:\n    def __init__(self, *args, **kwargs):\n        pass\nclass L(K):\n    pass\nL(anything=1)\n",
    # a method redefined below the class (the name means another function by then)
    "def f(a):\n    return a\ndef f(b):\n    return b\nf(b=1)\n",
])
def test_no_warning_where_a_member_may_exist_that_no_statement_names(code):
    assert warned(code) == [], code


def test_self_of_a_nested_function_is_its_own_parameter():
    code = ("class K:\n    def f(self):\n        def inner(self):\n            return self.anything\n"
            "        return inner\n")
    assert warned(code) == []
