"""The attribute oracle's checker, run as its own process by the Python bench plug-in
(``bench.py``): it imports standard-library modules to see which attributes they have.

It is a script, not part of the server: it imports nothing of gdg-lsp (so it shares no
code with the surfaces it judges), and it is only ever started by ``gdg-lsp bench
quality``, never by the server. Input (stdin, JSON): ``{"preload": [module, ...], "entries": [...]}``
-- the standard-library modules the judged file imports (importing ``os.path`` or
``xml.dom`` is what makes them attributes), and entries ``[module, [attr, ...]]`` (an
attribute chain after an imported module) or ``[module, [cls, ...], attr]`` (whether the
class ``module.cls`` has ``attr``). Output (stdout, JSON): for each entry ``true``
(exists), ``false`` (does not) or ``null`` (cannot be judged: not a standard-library
module, or it failed to import).
"""

from __future__ import annotations

import importlib
import json
import sys


def _judge(entry: list) -> bool | None:
    module = entry[0]
    if module.split(".")[0] not in sys.stdlib_module_names:
        return None
    try:
        value = importlib.import_module(module)
    except Exception:
        return None
    for name in entry[1]:
        if not hasattr(value, name):
            return False
        value = getattr(value, name)
    if len(entry) > 2:
        return hasattr(value, entry[2])
    return True


def main() -> int:
    request = json.loads(sys.stdin.read() or "{}")
    for module in request.get("preload", []):
        if module.split(".")[0] in sys.stdlib_module_names:
            try:
                importlib.import_module(module)
            except Exception:
                pass
    print(json.dumps([_judge(entry) for entry in request.get("entries", [])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
