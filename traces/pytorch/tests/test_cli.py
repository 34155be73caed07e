"""The command line (cgtrace/cli.py): `summary` counts what a trace holds."""

import os
import subprocess
import sys
import tempfile
import unittest

# CGTRACE_TEST_INSTALLED=1 tests the installed package (tests/venv_check.sh)
# instead of the folder beside these tests.
if os.environ.get("CGTRACE_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cgtrace  # noqa: E402
from cgtrace import Session, Trace  # noqa: E402
from test_session import FakeTensor, info  # noqa: E402


class SummaryTest(unittest.TestCase):
    def test_summary_counts(self):
        t = Trace("s")
        s = Session(t)
        fi = info(0)
        x = FakeTensor([4])
        for act in ("warmup", "record", "replay", "replay"):
            ctx = s.begin_call(fi, [x.fact()])
            s.end_call(ctx, [act], ((0, 0, 0), None) if act != "warmup" else None, 1, [FakeTensor([4]).fact()])
        s.step()
        s.finish()
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "s.cgt.jsonl")
            t.write(p)
            got = cgtrace.summarise_file(p)["counts"]
        self.assertEqual((got["calls"], got["warmup"], got["record"], got["replay"]), (4, 1, 1, 2))
        self.assertEqual((got["defs"], got["steps"], got["checkpoints"]), (1, 1, 1))

    def test_summary_of_a_trace_a_dying_program_left(self):
        # (issue 33 item 1) A journal's header says the recording did not
        # end; a last line cut mid-write is not counted and is said.
        head = '{"cgtviz": 1, "name": "j", "devices": 1, "meta": {"journal": "the recording did not end"}}\n'
        call = '{"op": "call", "fn": "f", "args": ["x"]}\n'
        with tempfile.TemporaryDirectory() as d:
            for name, text, want in (
                    ("whole", head.replace(', "meta": {"journal": "the recording did not end"}', "") + call, {}),
                    ("journal", head + call, {"ended": False}),
                    ("cut", head + call + call[:12], {"ended": False, "cut": True}),
                    ("cut-only", head.replace('"the recording did not end"', "null") + call + call[:12],
                     {"ended": False, "cut": True})):
                p = os.path.join(d, name + ".cgt.jsonl")
                with open(p, "w") as fh:
                    fh.write(text)
                got = cgtrace.summarise_file(p)
                self.assertEqual(got["counts"]["calls"], 1, name)
                self.assertEqual({k: got[k] for k in ("ended", "cut") if k in got}, want, name)
            p = os.path.join(d, "bad.cgt.jsonl")
            with open(p, "w") as fh:
                fh.write(head + call[:12] + "\n" + call)
            with self.assertRaises(ValueError):  # (a broken line before the last: not a cut)
                cgtrace.summarise_file(p)


# Runs cgtrace's command line with torch made unimportable (a finder that
# refuses it, whether or not this Python has torch).
_NO_TORCH = """
import sys
class NoTorch:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
        return None
sys.meta_path.insert(0, NoTorch)
from cgtrace.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _cli_without_torch(*args, cwd=None):
    env = dict(os.environ)
    if os.environ.get("CGTRACE_TEST_INSTALLED") != "1":
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = here + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", _NO_TORCH] + list(args), cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


class NoTorchTest(unittest.TestCase):
    """Issue 34 item 13: `cgtrace run` on a Python without torch says what
    to install, in one line, and exits 2; `summary` needs no torch."""

    def test_run_names_what_to_install(self):
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "train.py")
            with open(script, "w") as fh:
                fh.write("import torch\n")
            p = _cli_without_torch("run", script, cwd=d)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertNotIn("Traceback", p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn("PyTorch is not installed", p.stderr)
            self.assertIn("pip install torch", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "train.cgt.jsonl")))

    def test_summary_works_without_torch(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "s.cgt.jsonl")
            t = Trace("s")
            t.write(p)
            got = _cli_without_torch("summary", p, cwd=d)
            self.assertEqual(got.returncode, 0, got.stderr)
            self.assertIn('"calls": 0', got.stdout)


    def test_build_without_torch(self):
        with tempfile.TemporaryDirectory() as d:
            got = _cli_without_torch("build", cwd=d)
            self.assertEqual(got.returncode, 2, got.stderr)
            self.assertIn("the lean paths' checks:", got.stdout)
            self.assertIn("PyTorch is not installed", got.stderr)


class BuildTest(unittest.TestCase):
    def test_build_says_what_a_recording_uses(self):
        """`build` on the stand-in torch: the C checks built, the C++ reads
        not (the stand-in has no headers), each said, exit 1."""
        import fake_torch as fake
        from unittest import mock
        saved = fake.install_fake_torch()
        self.addCleanup(fake.remove_fake_torch, saved)
        import io
        from contextlib import redirect_stdout
        from cgtrace import cli, cpp
        out = io.StringIO()
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(cpp._loaded, clear=True), \
                mock.patch.dict(os.environ, {"CGTRACE_CACHE": d}), redirect_stdout(out):
            rc = cli.main(["build"])
            self.assertEqual(os.environ.get("CGTRACE_CPP"), "wait")
        self.assertEqual(rc, 1)
        self.assertRegex(out.getvalue(), r"the lean paths' checks: (C|Python) \(")
        self.assertRegex(out.getvalue(), r"the lean paths' torch reads: torch's bindings \(.*\)")


if __name__ == "__main__":
    unittest.main()
