"""cpp.py, the loader of the lean paths' torch reads through libtorch's
C++ API: where it finds a build, how it starts one (in the background, one
at a time on a machine, whole or not at all) and why it says it has none.
_cpp.cpp itself needs a real torch: tools/gpu/cpp-check.py holds it
to torch's own reads on the GPU; here it is only compiled, against
stand-in declarations of the API it uses (CompilesTest, cpp_headers/);
the recorder with it is tested with the stand-in's CppReads
(test_fastpath)."""

import io
import os
import shutil
import stat
import sys
import sysconfig
import tempfile
import time
import types
import unittest
from unittest import mock

import fake_torch as fake  # (puts the recorder on sys.path)

from cgtrace import cpp as R  # noqa: E402
from cgtrace import torch_api  # noqa: E402

# A module of _cpp.cpp's name and API, in C: what the stand-in
# compiler below builds in its place (this machine has no torch headers).
STAND_IN = r"""
#include <Python.h>
static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "_cgtrace_cpp", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__cgtrace_cpp(void) {
    PyObject *mod = PyModule_Create(&m);
    if (mod != NULL) PyModule_AddIntConstant(mod, "API", %d);
    return mod;
}
"""


def _cc():
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    return cc if shutil.which(cc) and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) \
        else None


class ReadsLoadTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.cache = os.path.join(self.dir.name, "cache")
        # (every path the loader makes is under the test's own cache, also
        # one a test computes outside env(): nothing of a test's is left in
        # the machine's ~/.cache/cgtrace)
        p = mock.patch.dict(os.environ, {"CGTRACE_CACHE": self.cache})
        p.start()
        self.addCleanup(p.stop)
        # A torch with C++ headers (a folder holding python_variable.h)
        # and a lib folder, as the loader looks for them.
        inc = os.path.join(self.dir.name, "include")
        os.makedirs(os.path.join(inc, "torch", "csrc", "autograd"))
        open(os.path.join(inc, "torch", "csrc", "autograd", "python_variable.h"), "w").close()
        self.torch = types.SimpleNamespace(__version__="2.11.0-test",
                                           __file__=os.path.join(self.dir.name, "torch", "__init__.py"),
                                           _C=types.SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=True))
        p = mock.patch.object(torch_api, "cpp_include_paths", lambda: [inc])
        p.start()
        self.addCleanup(p.stop)
        p = mock.patch.dict(R._loaded, clear=True)
        p.start()
        self.addCleanup(p.stop)
        # (the stand-in module has no reads: its self-check is
        # SelfCheckTest's)
        p = mock.patch.object(R, "self_check", lambda m, torch: None)
        p.start()
        self.addCleanup(p.stop)

    def compiler(self, body, name="cxx.sh"):
        """A stand-in C++ compiler (CXX): a shell script running body,
        with $out the file it is asked to write."""
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as fh:
            fh.write('#!/bin/sh\nout=""\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done\n'
                     + body + "\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def env(self, mode, cxx):
        return mock.patch.dict(os.environ, {"CGTRACE_CPP": mode, "CGTRACE_CACHE": self.cache, "CXX": cxx})

    def builder(self, api=R.API):
        """A compiler that builds the C stand-in of the module (API api)."""
        cc = _cc()
        if cc is None:
            self.skipTest("no C compiler or no Python.h here")
        src = os.path.join(self.dir.name, "stand_in.c")
        with open(src, "w") as fh:
            fh.write(STAND_IN % api)
        return self.compiler('%s -shared -fPIC -I%s %s -o "$out"'
                             % (cc, sysconfig.get_paths()["include"], src), name="builder.sh")

    def left(self):
        return sorted(os.listdir(self.cache)) if os.path.exists(self.cache) else []

    def test_off(self):
        with self.env("0", "/nonexistent"):
            self.assertEqual(R.load(self.torch), (None, "CGTRACE_CPP=0"))
        self.assertEqual(self.left(), [])

    def test_unset_is_the_default(self):
        env = dict(os.environ, CGTRACE_CACHE=self.cache, CXX=self.compiler("exit 1"))
        env.pop("CGTRACE_CPP", None)
        with mock.patch.dict(os.environ, env, clear=True):
            got = R.load(self.torch)
        if R.DEFAULT == "0":
            self.assertEqual(got, (None, "off unless CGTRACE_CPP=1"))
            self.assertEqual(self.left(), [])  # (no build started)
        else:
            self.assertIn("in the background", got[1])

    def test_the_stand_in_torch_has_no_headers(self):
        saved = fake.install_fake_torch()
        self.addCleanup(fake.remove_fake_torch, saved)
        import torch
        with self.env("wait", "/nonexistent"), mock.patch.object(torch_api, "cpp_include_paths", lambda: []):
            mod, why = R.load(torch)
        self.assertIsNone(mod)
        self.assertIn("has no C++ headers", why)
        self.assertEqual(self.left(), [])  # (nothing half-built, no marker)

    def test_no_compiler(self):
        with self.env("1", "/nonexistent/c++"), mock.patch("shutil.which", return_value=None):
            mod, why = R.load(self.torch)
        self.assertIsNone(mod)
        self.assertIn("no C++ compiler", why)
        self.assertEqual(self.left(), [])

    def test_built_at_once_then_loaded_from_the_cache(self):
        cxx = self.builder()
        with self.env("wait", cxx):
            mod, why = R.load(self.torch)
        self.assertIsNone(why)
        self.assertEqual(mod.API, R.API)
        self.assertEqual(self.left(), [os.path.basename(R.module_path(self.torch))])
        # Another process, the build there: loaded, not built again.
        R._loaded.clear()
        with self.env("1", self.compiler("exit 1")):
            mod2, why2 = R.load(self.torch)
        self.assertIsNone(why2)
        self.assertEqual(mod2.API, R.API)

    def test_a_failed_build_says_why_and_leaves_its_messages(self):
        with self.env("wait", self.compiler('echo "error: no such header" >&2; exit 1')):
            mod, why = R.load(self.torch)
            so = R.module_path(self.torch)
        self.assertIsNone(mod)
        self.assertIn("RuntimeError", why)
        self.assertIn("no such header", why)
        self.assertEqual(self.left(), [os.path.basename(R.failed_path(so))])  # (nothing half-built)
        with open(R.failed_path(so)) as fh:
            self.assertIn("no such header", fh.read())

    def test_a_module_of_another_api_is_not_used(self):
        with self.env("wait", self.builder(api=R.API + 1)):
            mod, why = R.load(self.torch)
        self.assertIsNone(mod)
        self.assertIn("API %d, not %d" % (R.API + 1, R.API), why)

    def test_another_torch_another_build(self):
        other = types.SimpleNamespace(**dict(vars(self.torch), __version__="2.14.1"))
        self.assertNotEqual(R.module_path(self.torch), R.module_path(other))

    def wait_for(self, cond, what):
        deadline = time.time() + 60
        while not cond():
            if time.time() > deadline:
                self.fail("%s: not after 60 s (%s)" % (what, self.left()))
            time.sleep(0.05)

    def test_built_in_the_background_one_at_a_time(self):
        cc = self.builder()
        gate = os.path.join(self.dir.name, "go")
        # (the compiler waits for the test's word: the build is under way
        # while the test looks)
        slow = self.compiler('while [ ! -e %s ]; do sleep 0.05; done\n"%s" -o "$out"' % (gate, cc))
        so = R.module_path(self.torch)
        with self.env("1", slow):
            mod, why = R.load(self.torch)
            self.assertIsNone(mod)
            self.assertIn("building %s in the background" % os.path.basename(so), why)
            self.assertIn(os.path.basename(so) + ".building", self.left())
            # A second process meanwhile starts none.
            R._loaded.clear()
            mod, why = R.load(self.torch)
            self.assertIsNone(mod)
            self.assertIn("another process is building", why)
            open(gate, "w").close()
            self.wait_for(lambda: self.left() == [os.path.basename(so)], "the build renamed into place")
            R._loaded.clear()
            mod, why = R.load(self.torch)
        self.assertIsNone(why)
        self.assertEqual(mod.API, R.API)

    def test_a_failed_background_build_is_not_tried_again(self):
        """A background build that fails leaves only the compiler's
        messages (so.failed); later recordings start no build, and say
        where the messages are, until a build at once (cgtrace build,
        CGTRACE_CPP=wait) tries again."""
        tries = os.path.join(self.dir.name, "tries")
        failing = self.compiler('echo x >> %s; echo "cc1plus: error: no good" >&2; echo partial > "$out"; exit 1'
                                % tries)
        with self.env("1", failing):
            so = R.module_path(self.torch)
            mod, why = R.load(self.torch)
            self.assertIn("in the background", why)
            self.wait_for(lambda: self.left() == [os.path.basename(R.failed_path(so))], "the failed build's messages")
            with open(R.failed_path(so)) as fh:
                self.assertIn("cc1plus: error: no good", fh.read())
            R._loaded.clear()
            mod, why = R.load(self.torch)
            self.assertIsNone(mod)
            self.assertEqual(why, "the last build of %s failed (its messages: %s); `python3 -m cgtrace build` "
                                  "tries again" % (os.path.basename(so), R.failed_path(so)))
            self.assertFalse(R.say_building(why, io.StringIO()))  # (nothing runs beside the program: not said)
        with open(tries) as fh:
            self.assertEqual(fh.read(), "x\n")  # (the compiler ran once)
        self.assertFalse(os.path.exists(so))
        # A build at once tries again: failing, it says so and leaves the
        # messages; succeeding, it takes them away.
        R._loaded.clear()
        with self.env("wait", failing):
            mod, why = R.load(self.torch)
        self.assertIsNone(mod)
        self.assertIn("RuntimeError", why)
        self.assertEqual(self.left(), [os.path.basename(R.failed_path(so))])
        R._loaded.clear()
        with self.env("wait", self.builder()):
            mod, why = R.load(self.torch)
        self.assertIsNone(why)
        self.assertEqual(self.left(), [os.path.basename(so)])

    def test_a_killed_builds_marker_is_taken_over(self):
        with self.env("1", self.compiler("exit 1")):
            so = R.module_path(self.torch)
            os.makedirs(self.cache)
            mark = so + ".building"
            open(mark, "w").close()
            old = time.time() - 3600
            os.utime(mark, (old, old))
            mod, why = R.load(self.torch)
        self.assertIn("building %s in the background" % os.path.basename(so), why)
        self.wait_for(lambda: self.left() == [os.path.basename(R.failed_path(so))], "the new build's failure")


class SelfCheckTest(fake.FakeTorchTest):
    def test_a_module_that_reads_otherwise_is_refused(self):
        import torch
        t = fake.Tensor([2, 4])
        st = t.untyped_storage()
        right = (tuple(t.shape), tuple(t.stride()), 0, True, t.get_device(), st._cdata, st.nbytes(), t.data_ptr())
        ok = types.SimpleNamespace(facts=lambda x: right)
        R.self_check(ok, torch, t)
        for i, what in enumerate(("shape", "strides", "offset", "layout", "device", "storage", "nbytes", "pointer")):
            wrong = right[:i] + ((right[i], 1) if not isinstance(right[i], bool) else (not right[i],),) + right[i + 1:]
            bad = types.SimpleNamespace(facts=lambda x, w=wrong: w)
            with self.subTest(what=what), self.assertRaises(ImportError):
                R.self_check(bad, torch, t)


class RecorderSaysTest(fake.FakeTorchTest):
    def test_the_recorder_says_why_it_reads_through_the_bindings(self):
        import cgtrace
        with mock.patch.dict(R._loaded, clear=True), mock.patch.dict(os.environ, {"CGTRACE_CPP": "0"}):
            with cgtrace.record(os.path.join(self.dir.name, "t.cgt.jsonl")) as rec:
                pass
        self.assertIsNone(rec._cpp)
        self.assertEqual(rec.cpp_why, "CGTRACE_CPP=0")

    def test_a_build_started_for_a_recording_is_said_once(self):
        """The recording that starts a build in the background says so on
        stderr, once a process, with how to go without; one that finds the
        module, or goes without, says nothing."""
        import io
        import cgtrace
        for why, said in (("building _cgtrace_cpp-x.so in the background for torch 2.11 (used from the next "
                           "recording)", True), ("another process is building _cgtrace_cpp-x.so in the "
                                                 "background for torch 2.11 (used from the next recording)", True),
                          (None, False), ("CGTRACE_CPP=0", False)):
            with self.subTest(why=why), mock.patch.dict(R._loaded, clear=True), \
                    mock.patch.object(R, "_load", return_value=(None, why)), \
                    mock.patch("sys.stderr", new_callable=io.StringIO) as err:
                for n in range(2):
                    with cgtrace.record(os.path.join(self.dir.name, "t%d.cgt.jsonl" % n)) as rec:
                        pass
                    self.assertEqual(rec.cpp_why, why)
                lines = [line for line in err.getvalue().splitlines() if "CGTRACE_CPP=0 goes without" in line]
                self.assertEqual(lines, ["cgtrace: %s; CGTRACE_CPP=0 goes without, `python3 -m cgtrace build` "
                                         "builds it at once" % why] if said else [])


if __name__ == "__main__":
    unittest.main()


class CompilesTest(unittest.TestCase):
    """_cpp.cpp compiled (-fsyntax-only) against the stand-in declarations
    of the torch API it uses (tests/cpp_headers): a typo or a wrong type
    fails here, on a machine without torch, not in the module's build on
    a GPU host (where a failed build leaves the recorder on torch's
    bindings)."""

    HEADERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_headers")

    def cxx(self):
        for name in ("c++", "g++", "clang++"):
            if shutil.which(name) and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
                return name
        self.skipTest("no C++ compiler or no Python.h here")

    def compile(self, src):
        import subprocess
        return subprocess.run([self.cxx(), "-std=c++17", "-fsyntax-only", "-I", self.HEADERS,
                               "-I", sysconfig.get_paths()["include"], src],
                              capture_output=True, text=True, timeout=120)

    def test_the_module_compiles(self):
        p = self.compile(R._SRC)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])

    def test_a_wrong_call_does_not(self):
        # (the check can fail: a function torch does not declare)
        with open(R._SRC) as fh:
            text = fh.read()
        self.assertIn("weak_intrusive_ptr::decref(", text)
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "_cpp.cpp")
            with open(src, "w") as fh:
                fh.write(text.replace("weak_intrusive_ptr::decref(", "weak_intrusive_ptr::decref_all(", 1))
            p = self.compile(src)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("decref_all", p.stderr)
