"""The package's build backend (_build/cgtrace_build.py) makes wheels pip
accepts: the package's modules, a console script, torch as an extra only, a RECORD
whose hashes hold; and the package's one door to torch (torch_api.py).
tests/venv_check.sh installs it for real."""

import ast
import base64
import hashlib
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "_build"))

import cgtrace_build  # noqa: E402


class WheelTest(unittest.TestCase):
    def build(self, hook):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: [os.remove(os.path.join(d, f)) for f in os.listdir(d)] and os.rmdir(d))
        name = hook(d)
        self.assertEqual(os.listdir(d), [name])  # no .part left behind
        return zipfile.ZipFile(os.path.join(d, name))

    def check_record(self, zf):
        info = cgtrace_build.DIST_INFO
        rows = [line.split(",") for line in zf.read(info + "/RECORD").decode().splitlines()]
        self.assertEqual(sorted(r[0] for r in rows), sorted(zf.namelist()))
        for path, digest, size in rows:
            if path.endswith("RECORD"):
                self.assertEqual((digest, size), ("", ""))
                continue
            data = zf.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            self.assertEqual((digest, int(size)), ("sha256=" + want, len(data)), path)

    def test_wheel(self):
        zf = self.build(cgtrace_build.build_wheel)
        info = cgtrace_build.DIST_INFO
        pkg = os.path.join(os.path.dirname(HERE), "cgtrace")
        modules = sorted(f for f in os.listdir(pkg) if f.endswith((".py", ".c", ".cpp")))
        self.assertIn("__init__.py", modules)
        self.assertIn("__main__.py", modules)
        self.assertIn("_fastpath.c", modules)  # (built where it runs: fastpath.load)
        self.assertIn("_cpp.cpp", modules)  # (likewise: cpp.load)
        self.assertEqual(sorted(n for n in zf.namelist() if n.startswith("cgtrace/")),
                         ["cgtrace/" + f for f in modules])  # every module, no __pycache__
        for f in modules:
            with open(os.path.join(pkg, f), "rb") as fh:
                self.assertEqual(zf.read("cgtrace/" + f), fh.read(), f)
        meta = zf.read(info + "/METADATA").decode()
        self.assertIn("Name: cgtrace", meta)
        self.assertIn('Requires-Dist: torch>=2.11; extra == "torch"', meta)
        self.assertNotIn("Requires-Dist: torch>=2.11\n", meta)  # never unconditional
        self.assertIn("cgtrace = cgtrace:main", zf.read(info + "/entry_points.txt").decode())
        self.check_record(zf)

    def test_editable_wheel_points_here(self):
        zf = self.build(cgtrace_build.build_editable)
        pth = [n for n in zf.namelist() if n.endswith(".pth")]
        self.assertEqual(len(pth), 1)
        self.assertEqual(zf.read(pth[0]).decode().strip(), os.path.dirname(HERE))
        self.check_record(zf)

    def test_no_build_requirements(self):
        for hook in (cgtrace_build.get_requires_for_build_wheel, cgtrace_build.get_requires_for_build_editable,
                     cgtrace_build.get_requires_for_build_sdist):
            self.assertEqual(hook(), [])


class TorchDoorTest(unittest.TestCase):
    """torch is imported by cgtrace/torch_api.py alone, and only when a
    recording starts: every other module imports without torch."""

    PKG = os.path.join(os.path.dirname(HERE), "cgtrace")

    def test_one_module_imports_torch(self):
        importers = set()
        for f in sorted(os.listdir(self.PKG)):
            if not f.endswith(".py"):
                continue
            with open(os.path.join(self.PKG, f), encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), f)
            for n in ast.walk(tree):
                names = []
                if isinstance(n, ast.Import):
                    names = [a.name for a in n.names]
                elif isinstance(n, ast.ImportFrom) and n.level == 0:
                    names = [n.module or ""]
                if any(m == "torch" or m.startswith("torch.") for m in names):
                    importers.add(f)
        self.assertEqual(importers, {"torch_api.py"})

    def test_every_module_imports_without_torch(self):
        mods = sorted(f[:-3] for f in os.listdir(self.PKG) if f.endswith(".py") and f != "__main__.py")
        code = ("import sys; sys.modules['torch'] = None\n"  # (an import of torch raises)
                "import importlib\n"
                "for m in %r: importlib.import_module('cgtrace' if m == '__init__' else 'cgtrace.' + m)\n"
                "print(sorted(n for n in sys.modules if n.startswith('torch.')))" % mods)
        env = dict(os.environ)
        if env.get("CGTRACE_TEST_INSTALLED") != "1":
            env["PYTHONPATH"] = os.path.dirname(HERE)
        out = subprocess.run([sys.executable, "-c", code], cwd="/", env=env, capture_output=True, text=True)
        self.assertEqual((out.returncode, out.stderr), (0, ""))
        self.assertEqual(out.stdout.strip(), "[]")


if __name__ == "__main__":
    unittest.main()
