"""The recorder imports and records on the oldest Python torch 2.11 runs
on (3.10): what it takes from later Pythons comes through _pycompat,
with a fallback of the same behaviour."""
import ast
import importlib
import operator
import os
import sys
import unittest
import weakref
from functools import partial
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(os.path.dirname(HERE), "cgtrace")
sys.path.insert(0, os.path.dirname(PKG))

from cgtrace import _pycompat  # noqa: E402

# Names of the standard library's modules that the recorder may not
# reach for directly (3.11 and later): module -> names.
NEWER = {"operator": {"call"}}


class PyCompatTest(unittest.TestCase):
    def test_op_call_without_operator_call(self):
        """On a Python without operator.call (3.10) op_call is still a
        call of its argument with no arguments, for every callable the
        recorder maps it over: weak references, partials, bound methods."""
        bare = mock.MagicMock(wraps=operator)
        del bare.call
        with mock.patch.dict(sys.modules, {"operator": bare}):
            old = importlib.reload(_pycompat)
        try:
            self.assertIsNot(old.op_call, getattr(operator, "call", None))

            class T:
                def m(self):
                    return "m"
            t = T()
            self.assertEqual(list(map(old.op_call, [weakref.ref(t), partial(getattr, t, "m"), t.m])),
                             [t, t.m, "m"])
            del t
            import gc
            gc.collect()
        finally:
            importlib.reload(_pycompat)
        if hasattr(operator, "call"):
            self.assertIs(_pycompat.op_call, operator.call)

    def test_no_module_reaches_for_a_newer_name(self):
        """No module of the package uses operator.call (or another name of
        NEWER) but through _pycompat."""
        found = []
        for name in sorted(os.listdir(PKG)):
            if not name.endswith(".py") or name == "_pycompat.py":
                continue
            with open(os.path.join(PKG, name)) as fh:
                tree = ast.parse(fh.read(), name)
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.attr in NEWER.get(node.value.id, ())):
                    found.append("%s:%d: %s.%s" % (name, node.lineno, node.value.id, node.attr))
                if isinstance(node, ast.ImportFrom) and node.module in NEWER:
                    found += ["%s:%d: from %s import %s" % (name, node.lineno, node.module, a.name)
                              for a in node.names if a.name in NEWER[node.module]]
        self.assertEqual(found, [])


if __name__ == "__main__":
    unittest.main()
