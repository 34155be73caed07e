"""The lean paths' checks in C (_fastpath.c) against their Python
reference (fastpath.py): every function on a table of cases that makes
each of its conditions decide, the same answer or the same exception.
The recorder as a whole, with one and with the other, writes the same
traces (test_recorder_random's "python checks" way)."""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tracemalloc
import unittest
import weakref
from unittest import mock

import fake_torch as fake  # (puts the recorder on sys.path)

from cgtrace import fastpath as P  # noqa: E402
from cgtrace.freshq import _FQ_BOUND  # noqa: E402


def _can_build():
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) is not None and os.path.exists(os.path.join(sysconfig.get_paths()["include"],
                                                                        "Python.h"))


class Obj:
    """Something a weak reference can name, with torch's _use_count."""

    uses = 1

    def _use_count(self):
        return self.uses


class Plan:
    """What frame_src and fresh_src read of a Plan (state.py): src_lasti,
    and src_of, which finds a src by the frame's code and caches it by
    f_lasti as Plan.src_of does."""

    def __init__(self, code, src):
        self.code, self.src, self.src_lasti, self.asked = code, src, {}, 0

    def src_of(self, f):
        self.asked += 1
        if f.f_code is not self.code:
            return None
        self.src_lasti[f.f_lasti] = self.src
        return self.src


def held_elsewhere(lock):
    """lock taken by a thread of its own, which lets go of it once the
    returned event is set: (that event, the thread)."""
    import threading
    hold, done = threading.Event(), threading.Event()

    def holder():
        lock.acquire()
        hold.set()
        done.wait(10)
        lock.release()
    t = threading.Thread(target=holder)
    t.start()
    hold.wait()
    return done, t


def outcome(fn, *args):
    """fn(*args)'s result, or its exception's type."""
    try:
        return ("ok", fn(*args))
    except Exception as e:
        return ("raised", type(e))


@unittest.skipUnless(_can_build(), "no C compiler or no Python.h here: the recorder uses the Python checks")
class BuiltTest(unittest.TestCase):
    """A test class with the C module built for it (cls.C)."""

    @classmethod
    def setUpClass(cls):
        # A build of its own, in a folder of its own: the test sees the
        # compiler's answer, not a cached one.
        cls.cache = tempfile.TemporaryDirectory()
        with mock.patch.dict(os.environ, {"CGTRACE_CACHE": cls.cache.name, "CGTRACE_FAST": "1"}), \
                mock.patch.dict(P._loaded, clear=True):
            cls.C, why = P.load()
        assert why is None, why

    @classmethod
    def tearDownClass(cls):
        cls.cache.cleanup()


class FastPathTest(BuiltTest):

    def same(self, name, *args):
        """The C function and the Python one agree on args; returns the
        answer."""
        want = outcome(getattr(P, name), *args)
        got = outcome(getattr(self.C, name), *args)
        self.assertEqual(got, want, name)
        return want

    def test_loads_the_c_module(self):
        self.assertNotEqual(self.C, P)
        self.assertEqual(self.C.API, P.API)
        self.assertTrue(os.listdir(self.cache.name))

    def test_load_falls_back_with_its_reason(self):
        with mock.patch.dict(P._loaded, clear=True), mock.patch.dict(os.environ, {"CGTRACE_FAST": "0"}):
            self.assertEqual(P.load(), (P, "CGTRACE_FAST=0"))
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(P._loaded, clear=True), \
                mock.patch.dict(os.environ, {"CGTRACE_CACHE": d, "CGTRACE_FAST": "1"}), \
                mock.patch("shutil.which", return_value=None):
            mod, why = P.load()
            self.assertIs(mod, P)
            self.assertIn("no C compiler", why)
            self.assertEqual(os.listdir(d), [])  # (nothing half-built)
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(P._loaded, clear=True), \
                mock.patch.dict(os.environ, {"CGTRACE_CACHE": d, "CGTRACE_FAST": "1", "CC": "/nonexistent/cc -O1"}):
            mod, why = P.load()  # (a CC not here: the next compiler, as a conda Python's own often is)
            self.assertIsNone(why)
            self.assertEqual(mod.API, P.API)

    def test_not_on_a_free_threaded_python(self):
        import sysconfig as sc
        real = sc.get_config_var
        with mock.patch.dict(P._loaded, clear=True), mock.patch.dict(os.environ, {"CGTRACE_FAST": "1"}), \
                mock.patch("sysconfig.get_config_var", lambda k: 1 if k == "Py_GIL_DISABLED" else real(k)):
            self.assertEqual(P.load(), (P, "a free-threaded Python"))

    def test_a_failed_build_says_why(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(P._loaded, clear=True), \
                mock.patch.dict(os.environ, {"CGTRACE_CACHE": d, "CGTRACE_FAST": "1"}), \
                mock.patch.object(P, "_SRC", os.path.join(d, "broken.c")):
            with open(P._SRC, "w") as fh:
                fh.write("not C\n")
            mod, why = P.load()
            self.assertIs(mod, P)
            self.assertIn("RuntimeError", why)
            self.assertEqual(os.listdir(d), ["broken.c"])  # (no module, no temporary left)

    def test_a_build_leaves_the_module_whole_or_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            so = os.path.join(d, "x" + sysconfig.get_config_var("EXT_SUFFIX"))
            with open(os.path.join(d, "bad.c"), "w") as fh:
                fh.write("this is not C\n")
            with self.assertRaises(RuntimeError):
                P._build(os.path.join(d, "bad.c"), so)
            self.assertEqual(sorted(os.listdir(d)), ["bad.c"])
            P._build(P._SRC, so)
            self.assertTrue(os.path.exists(so))

    def test_a_build_without_the_frames_header_walks_the_frame_objects(self):
        """A compiler that cannot build the walk of the interpreter's own
        frames (its internal header) gets a second build without it: the
        module, with FAST_FRAMES 0, not the Python checks."""
        real = P._compile
        seen = []

        def compile_(cmd, tmp, so, timeout):
            seen.append("-DCGT_NO_FAST_FRAMES" in cmd)
            if not seen[-1]:
                raise RuntimeError("cc: internal/pycore_frame.h: an error")
            return real(cmd, tmp, so, timeout)
        with tempfile.TemporaryDirectory() as d:
            so = os.path.join(d, "_cgtrace_fastpath" + sysconfig.get_config_var("EXT_SUFFIX"))
            with mock.patch.object(P, "_compile", compile_):
                P._build(P._SRC, so)
            self.assertEqual(seen, [False, True])
            self.assertEqual(sorted(os.listdir(d)), [os.path.basename(so)])
            self.assertEqual(P._import_built("_cgtrace_fastpath", so, P.API).FAST_FRAMES, 0)
            # (a build that fails without the walk too fails once, its error
            # the caller's)
            seen.clear()

            def fails(cmd, tmp, so, timeout):
                seen.append("-DCGT_NO_FAST_FRAMES" in cmd)
                raise RuntimeError("cc: an error")
            for extra, tries in (((), [False, True]), (("-DCGT_NO_FAST_FRAMES",), [True])):
                seen.clear()
                with mock.patch.object(P, "_compile", fails), self.assertRaises(RuntimeError):
                    P._build(P._SRC, so + ".2", extra)
                self.assertEqual(seen, tries)

    def lean(self, ins, mgr, fid, **over):
        """A steady replay's lean tuple for inputs ins (fastpath.L_*)."""
        t = dict(fid=fid, plan=None, mref=weakref.ref(mgr), low=64, nin=len(ins),
                 in_refs=tuple(weakref.ref(x) for x in ins), in_ptrs=[x.data_ptr() for x in ins],
                 in_idx=list(range(len(ins))), polled=None, uses=False, node_ref=None, nout=1, ckpt=3,
                 out_refs=(), wrappers=[])
        t.update(over)
        return tuple(t.values())

    def test_steady_ok(self):
        saved = fake.install_fake_torch()
        self.addCleanup(fake.remove_fake_torch, saved)
        ptrs_equal = fake._tensors_data_ptrs_at_indices_equal
        ins = [fake.Tensor([4]), fake.Tensor([2, 2])]
        mgr, fid, other = Obj(), Obj(), Obj()
        keep = [Obj()]  # (the polled output, held by this list alone, and by 0 to 4 more references below)
        cases = [
            ("all hold", self.lean(ins, mgr, fid), ins, fid, 70, 80, 5, False, []),
            ("another function", self.lean(ins, mgr, fid), ins, other, 70, 80, 5, False, []),
            ("below low", self.lean(ins, mgr, fid), ins, fid, 63, 80, 5, False, []),
            ("above mc", self.lean(ins, mgr, fid), ins, fid, 81, 80, 5, False, []),
            ("no calls left", self.lean(ins, mgr, fid), ins, fid, 70, 80, 0, False, []),
            ("probed", self.lean(ins, mgr, fid), ins, fid, 70, 80, 0, True, []),
            ("another manager", self.lean(ins, Obj(), fid), ins, fid, 70, 80, 5, False, []),
            ("fewer inputs", self.lean(ins, mgr, fid), ins[:1], fid, 70, 80, 5, False, []),
            ("another object", self.lean(ins, mgr, fid), [ins[0], fake.Tensor([2, 2])], fid, 70, 80, 5, False, []),
            ("moved", self.lean(ins, mgr, fid, in_ptrs=[ins[0].data_ptr(), 1]), ins, fid, 70, 80, 5, False, []),
            ("a death", self.lean(ins, mgr, fid), ins, fid, 70, 80, 5, False, [(None, 1)]),
            ("a tuple of inputs", self.lean(ins, mgr, fid), tuple(ins), fid, 70, 80, 5, False, []),
        ]
        for ptrs in (ptrs_equal, None):
            for what, lean, new, f, c, mc, left, probed, dead in cases:
                with self.subTest(what=what, ptrs_equal=ptrs is not None):
                    self.same("steady_ok", lean, f, mgr, new, c, mc, left, probed, dead, ptrs, fake.Tensor.data_ptr)
        self.assertEqual(self.same("steady_ok", *cases[0][1:2], fid, mgr, ins, 70, 80, 5, False, [], ptrs_equal,
                                   None), ("ok", True))
        # (A lean tuple not of hooks._steady's making: C refuses it, where
        # Python reads what it can.)
        for lean in (list(cases[0][1]), cases[0][1][:9]):
            with self.assertRaises(TypeError):
                self.C.steady_ok(lean, fid, mgr, ins, 70, 80, 5, False, [], ptrs_equal, None)
        # Each polled output by its refcount: the count the tree's rule
        # reads, held by 0 to 4 more references, with c10's use or not.
        r = weakref.ref(keep[0])
        for extra in range(5):
            for uses in (False, True):
                for c10 in (1, 2):
                    keep[0].uses = c10
                    keep[1:] = [keep[0]] * extra
                    lean = self.lean(ins, mgr, fid, polled=(r,), uses=uses)
                    with self.subTest(extra=extra, uses=uses, c10=c10):
                        self.same("steady_ok", lean, fid, mgr, ins, 70, 80, 5, False, [], ptrs_equal, None)
        dead = Obj()
        lean = self.lean(ins, mgr, fid, polled=(weakref.ref(dead),))
        del dead
        self.assertEqual(self.same("steady_ok", lean, fid, mgr, ins, 70, 80, 5, False, [], ptrs_equal, None),
                         ("ok", False))

    def test_steady_after(self):
        mgr, node = Obj(), Obj()
        mgr.debug_checkpointing_counter = 3
        outs = [Obj(), Obj()]
        node.outputs_weakrefs = ["w0", "w1"]
        base = dict(node_ref=weakref.ref(node), nout=2, ckpt=3, out_refs=tuple(weakref.ref(o) for o in outs),
                    wrappers=["w0", "w1"])

        def lean(**over):
            d = dict(base, **over)
            return self.lean([], mgr, None, **d)

        cases = [
            ("all hold", lean(), outs, node, False, []),
            ("another node", lean(), outs, Obj(), False, []),
            ("something else done", lean(), outs, node, True, []),
            ("a tuple out", lean(), tuple(outs), node, False, []),
            ("one out", lean(), outs[:1], node, False, []),
            ("a checkpoint", lean(ckpt=4), outs, node, False, []),
            ("a death", lean(), outs, node, False, [1]),
            ("other objects", lean(), [outs[0], Obj()], node, False, []),
            ("other wrappers", lean(wrappers=["w0", "x"]), outs, node, False, []),
            ("no node", lean(), outs, None, False, []),
            ("a manager without the counter", lean(), outs, node, False, [], Obj()),
        ]
        for what, ln, out, nd, other, dead, *m in cases:
            with self.subTest(what=what):
                self.same("steady_after", ln, out, nd, other, m[0] if m else mgr, dead)
        self.assertEqual(self.same("steady_after", lean(), outs, node, False, mgr, []), ("ok", True))

    def test_frame_src(self):
        def caller(checks, depth, ref, plan):
            return checks.frame_src(depth, ref, plan)

        def outer(checks, depth, ref, plan):
            return caller(checks, depth, ref, plan)

        src = ({"line": 1}, '{"line": 1}')
        for impl in (P, self.C):
            plan = Plan(outer.__code__, src)
            ref = weakref.ref(outer.__code__)
            with self.subTest(impl=impl.__name__):
                self.assertIs(outer(impl, 1, ref, plan), src)  # (src_of asked, then cached by f_lasti)
                self.assertEqual(plan.asked, 1)
                self.assertIs(outer(impl, 1, ref, plan), src)
                self.assertEqual(plan.asked, 1)
                self.assertIsNone(outer(impl, 0, ref, plan))  # (the caller's own code)
                self.assertIsNone(outer(impl, 10 ** 6, ref, plan))  # (past the stack's top)
                self.assertIsNone(outer(impl, 1, weakref.ref(caller.__code__), plan))
        self.assertEqual(outcome(self.C.frame_src, "1", None, None)[0], "raised")

    def test_fresh_src(self):
        src = ({"line": 2}, '{"line": 2}')

        def fresh_run(checks, own, d, ref, lasti, plan, src):
            return checks.fresh_src(own, d, ref, lasti, plan, src, 2)  # (tree: two frames up)

        def wrapper(*args):
            return fresh_run(*args)

        def tree(*args):
            return wrapper(*args)

        def user(*args):
            return tree(*args)

        for impl in (P, self.C):
            with self.subTest(impl=impl.__name__):
                plan = Plan(user.__code__, src)
                ref = weakref.ref(user.__code__)
                own = {__file__: False}
                self.assertTrue(user(impl, own, 1, ref, plan.src_lasti, plan, src))
                self.assertTrue(user(impl, own, 1, ref, plan.src_lasti, plan, src))
                self.assertEqual(plan.asked, 1)
                self.assertFalse(user(impl, {}, 1, ref, plan.src_lasti, plan, src))  # (the tree's frame: ours)
                self.assertFalse(user(impl, {__file__: True}, 1, ref, plan.src_lasti, plan, src))
                self.assertFalse(user(impl, own, 0, ref, plan.src_lasti, plan, src))  # (the tree's code)
                self.assertFalse(user(impl, own, 1, ref, plan.src_lasti, plan, ({"line": 2}, "")))
                self.assertTrue(tree(impl, own, 0, weakref.ref(tree.__code__), {}, Plan(tree.__code__, src), src))
                self.assertEqual(outcome(tree, impl, own, 10 ** 6, ref, {}, plan, src), ("raised", ValueError))
        self.assertEqual(outcome(self.C.fresh_src, {}, 0, None, {}, None, None), ("raised", TypeError))

    def test_frames_walked_without_their_objects(self):
        """Where the C module walks the interpreter's own frames (3.11 to
        3.13: FAST_FRAMES), frame_src and fresh_src find the frame
        sys._getframe finds, through generators and nested calls, and
        make no frame object of a frame they pass once its line is known
        (a build with -DCGT_NO_FAST_FRAMES makes one of each: the count
        this test holds it to)."""
        if sys.version_info < (3, 11):
            self.skipTest("before 3.11 every frame has its object")
        self.assertEqual(self.C.FAST_FRAMES, 1)
        with tempfile.TemporaryDirectory() as d:
            so = os.path.join(d, "_cgtrace_fastpath" + sysconfig.get_config_var("EXT_SUFFIX"))
            P._build(P._SRC, so, ("-DCGT_NO_FAST_FRAMES",))
            slow = P._import_built("_cgtrace_fastpath", so, P.API)
        self.assertEqual(slow.FAST_FRAMES, 0)
        got = {}
        for mod in (self.C, slow):
            plan = Plan(None, "src")
            own = {__file__: False}

            def outer(n, mod=mod, plan=plan, own=own):
                return list(gen(n, mod, plan, own))  # (a generator's frame among them)

            def gen(n, mod, plan, own):
                yield inner(n, mod, plan, own)

            def inner(n, mod, plan, own):
                if n:
                    return inner(n - 1, mod, plan, own)
                # (depth 4 from here: outer's frame, past three of inner's and
                # gen's; list() is C, no frame)
                # (tracemalloc sees every allocator's blocks: ASan's
                # PYTHONMALLOC=malloc too)
                ref = weakref.ref(plan.code)
                none = tracemalloc.get_traced_memory()[0]  # (what the count itself holds)
                none = tracemalloc.get_traced_memory()[0] - none
                held = tracemalloc.get_traced_memory()[0]
                a = mod.frame_src(4, ref, plan)
                b = mod.fresh_src(own, 1, ref, plan.src_lasti, plan, "src", 3)
                held = tracemalloc.get_traced_memory()[0] - held - none
                return a, b, held, sys._getframe(4).f_code is plan.code

            plan.code = outer.__code__
            first = outer(2)[0]  # (src_of asked: the line learnt)
            tracemalloc.start()
            try:
                again = outer(2)[0]
            finally:
                tracemalloc.stop()
            got[mod.FAST_FRAMES] = (first, again, plan.asked)
        (first, again, asked), (sfirst, sagain, sasked) = got[1], got[0]
        self.assertEqual(first[:2], ("src", True))
        self.assertEqual(again[:2], ("src", True))
        self.assertTrue(first[3] and again[3])
        self.assertEqual(asked, 1)
        self.assertEqual(sfirst[:2], ("src", True))
        self.assertEqual(sagain[:2], ("src", True))
        # The walk past five frames: nothing held once the line is known
        # (a frame object of each, alive while its frame runs, otherwise:
        # several hundred bytes).
        self.assertLessEqual(again[2], 0)
        self.assertGreaterEqual(sagain[2], 5 * 48)
        # Another code at that depth, or a shallower stack: as before.
        plan = Plan(Plan.__init__.__code__, "src")
        self.assertIsNone(self.C.frame_src(1, weakref.ref(plan.code), plan))
        self.assertIsNone(self.C.frame_src(10 ** 6, weakref.ref(plan.code), plan))
        with self.assertRaises(ValueError):
            self.C.fresh_src({}, 0, weakref.ref(plan.code), {}, plan, "src", 10 ** 6)

    def test_probes_and_kept(self):
        saved = fake.install_fake_torch()
        self.addCleanup(fake.remove_fake_torch, saved)
        ptrs_equal = fake._tensors_data_ptrs_at_indices_equal
        vals = [1, "x", None]
        for probes, want in (((lambda: 1, lambda: "x", lambda: None), vals), ((lambda: 1,), vals),
                             ((lambda: 2, lambda: "x", lambda: None), vals), ((), []), ((lambda: 1,), (1,)),
                             ((lambda: 1 / 0,), [1])):
            self.same("probes_same", probes, want)
        for what, r, i, k, f, p in self.kept_cases():
            for pe in (ptrs_equal, None):
                with self.subTest(what=what, ptrs_equal=pe is not None):
                    self.same("kept_same", r, i, k, f, p, pe, fake.Tensor.data_ptr)

    def kept_cases(self):
        """kept_same's cases: (what, refs, inputs, kept, full, ptrs), of
        two kept tensors and a new one between them (held by the list)."""
        a, b, new = fake.Tensor([2]), fake.Tensor([3]), fake.Tensor([4])
        ins = [a, new, b]
        full = [a.data_ptr(), None, b.data_ptr()]
        refs = (weakref.ref(a), weakref.ref(b))
        ptrs = [a.data_ptr(), b.data_ptr()]
        return (
            ("all hold", refs, ins, [0, 2], full, ptrs),
            ("another object", refs, [a, new, new], [0, 2], full, ptrs),
            ("moved", refs, ins, [0, 2], [a.data_ptr(), None, 5], [a.data_ptr(), 5]),
            ("past the end", refs, ins, [0, 7], full, ptrs),
            ("a tuple of inputs", refs, tuple(ins), [0, 2], full, ptrs),
            # (the list's items read in place where an index is a plain
            # int in its range; any other index as Python's [] takes it)
            ("a negative index", refs, ins, [0, -1], full, ptrs),
            ("an index past a C ssize_t", refs, ins, [0, 1 << 70], full, ptrs),
            ("a bool index", refs, ins, [False, 2], full, ptrs),
            ("an index no int", refs, ins, [0, "2"], full, ptrs),
            ("a list of the wrong objects", (weakref.ref(b), weakref.ref(a)), ins, [0, 2], full, ptrs))

    # (kept_cases' positions a KeptSet refuses: below)
    REFUSED = ("a negative index", "an index past a C ssize_t", "an index no int")

    def test_kept_set(self):
        # (_fastpath.c's KeptSet: the kept inputs by address, each death
        # noted by its weak references' callback; it answers as kept_same
        # does for the weak references it was made of, and declines where
        # kept_same raises: a position past the inputs' end)
        saved = fake.install_fake_torch()
        self.addCleanup(fake.remove_fake_torch, saved)
        ptrs_equal, data_ptr = fake._tensors_data_ptrs_at_indices_equal, fake.Tensor.data_ptr
        cases = self.kept_cases()
        for what, r, i, k, f, p in cases:
            if what in self.REFUSED:
                continue
            for pe in (ptrs_equal, None):
                with self.subTest(what=what, ptrs_equal=pe is not None):
                    want = outcome(P.kept_same, r, i, k, f, p, pe, data_ptr)
                    ks = self.C.KeptSet(r, k, p)
                    self.assertIs(ks.dead, False)
                    got = outcome(ks.same, i, k, f, pe, data_ptr, p)
                    self.assertIn(got, (want, ("ok", False)) if want[0] == "raised" else (want,))
        refs, ptrs = cases[0][1], cases[0][5]
        # (what it cannot hold by address it refuses: freshq._kept_set
        # arms the weak references then)
        for what, k, p, err in (("a negative position", [0, -1], ptrs, ValueError),
                                ("a position past a C ssize_t", [0, 1 << 70], ptrs, OverflowError),
                                ("a position no int", [0, "2"], ptrs, TypeError),
                                ("a pointer no int", [0, 2], [1, "p"], TypeError),
                                ("lengths apart", [0], ptrs, ValueError)):
            with self.subTest(what=what), self.assertRaises(err):
                self.C.KeptSet(refs, k, p)
        with self.assertRaises(ValueError):
            self.C.KeptSet(refs, [0, 2], ptrs, object())  # (no capsule: not a ptrs_are)
        # A death, and an object at the dead one's address: never the same
        # (the stand-in's allocator hands the next object of the size its
        # block, as CPython's does: looked for among a few)
        class Obj:
            __slots__ = ("__weakref__",)  # (no dict: 3.13 puts a new plain instance elsewhere)

        x, y = Obj(), Obj()
        ks = self.C.KeptSet((weakref.ref(x), weakref.ref(y)), [0, 1], [1, 2])
        always = lambda *args: True  # noqa: E731 (the pointers never the question here)
        self.assertIs(ks.same([x, y], [0, 1], [1, 2], always, None, [1, 2]), True)
        where = id(x)
        del x
        self.assertIs(ks.dead, True)
        others = [Obj() for _ in range(20)]
        there = [o for o in others if id(o) == where]
        if os.environ.get("PYTHONMALLOC") != "malloc":  # (ASan's quarantine hands no freed block out again)
            self.assertTrue(there, "no object took the dead one's address")
        for o in there:
            self.assertIs(ks.same([o, y], [0, 1], [1, 2], always, None, [1, 2]), False)
        self.assertIs(self.C.KeptSet((weakref.ref(y), weakref.ref(Obj())), [0, 1], [1, 2]).dead, True)

    def test_kept_set_asks_ptrs_are(self):
        # (the C++ module's PTRS_ARE capsule, stood in for by a ctypes
        # function of the capsule's name and signature: asked with the
        # kept objects and their pointers, its answer the check's, and no
        # Python check of the pointers asked beside it)
        import ctypes
        saved = fake.install_fake_torch()
        self.addCleanup(fake.remove_fake_torch, saved)
        proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.py_object), ctypes.c_ssize_t,
                                 ctypes.POINTER(ctypes.c_void_p))
        asked = []

        def ptrs_are(objs, n, want):
            got = [(objs[j], want[j] or 0) for j in range(n)]
            asked.append(got)
            return int(all(o.data_ptr() == w for o, w in got))

        fn = proto(ptrs_are)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
        self.name = b"_cgtrace_cpp.ptrs_are"  # (the capsule's name must outlive it)
        cap = new(ctypes.cast(fn, ctypes.c_void_p), self.name, None)
        a, b, new_in = fake.Tensor([2]), fake.Tensor([3]), fake.Tensor([4])
        refuse = lambda *args: self.fail("the Python check asked")  # noqa: E731
        ks = self.C.KeptSet((weakref.ref(a), weakref.ref(b)), [0, 2], [a.data_ptr(), b.data_ptr()], cap)
        self.assertIs(ks.same([a, new_in, b], [0, 2], None, refuse, None, None), True)
        self.assertEqual(asked, [[(a, a.data_ptr()), (b, b.data_ptr())]])
        ks = self.C.KeptSet((weakref.ref(a), weakref.ref(b)), [0, 2], [a.data_ptr(), 5], cap)
        self.assertIs(ks.same([a, new_in, b], [0, 2], None, refuse, None, None), False)
        self.assertIs(ks.same([new_in, a, b], [0, 2], None, refuse, None, None), False)
        self.assertEqual(len(asked), 2)  # (another object: no pointer asked)
        with self.assertRaises(ValueError):
            self.C.KeptSet((weakref.ref(a),), [0], [1], ctypes.pythonapi.PyCapsule_New(
                ctypes.cast(fn, ctypes.c_void_p), b"another.name", None))

    def armed(self, t, **over):
        """A lean fresh call's armed tuple for a new input like t
        (fastpath.A_*; the rest None)."""
        a = [None] * 28
        a[P.A_CLS], a[P.A_DT], a[P.A_SHAPE], a[P.A_STRIDE], a[P.A_DEV], a[P.A_NBYTES] = (
            type(t), t.dtype, tuple(t.shape), t.stride(), t.get_device(), t.untyped_storage().nbytes())
        for k, v in over.items():
            a[getattr(P, "A_" + k.upper())] = v
        return tuple(a)

    def test_fresh_input(self):
        saved = fake.install_fake_torch()
        self.addCleanup(fake.remove_fake_torch, saved)
        t = fake.Tensor([4, 8])
        a = self.armed(t)

        class Entry:
            def __init__(self, **kw):
                self.__dict__.update(kw)

        reads = fake.CppReads()
        new_input = [None]  # (the bindings' reads; then cpp.py's, the stand-in's)

        def maps(**over):
            m = dict(strided=fake.STRIDED, by_obj_entry={}, by_view={}, entries={}, dead_cached=set(),
                     by_storage={}, fq_ids={}, fq_stor={}, new_input=new_input[0])
            m.update(over)
            return tuple(m.values())

        cd = t.untyped_storage()._cdata
        vk = (cd, 0, (4, 8), t.stride())
        same_obj = Entry(fact=Entry(obj_ref=weakref.ref(t)))
        sliced = fake.Tensor([4, 8])
        sliced._offset = 1
        cases = [
            ("new", t, a, maps()),
            ("another class", Obj(), a, maps()),
            ("another dtype", fake.Tensor([4, 8], dtype=fake.int64), a, maps()),
            ("another shape", fake.Tensor([8, 4]), a, maps()),
            ("other strides", t, self.armed(t, stride=(1, 4)), maps()),
            ("an offset", sliced, a, maps()),
            ("another device", t, self.armed(t, dev=1), maps()),
            ("another storage size", t, self.armed(t, nbytes=7), maps()),
            ("named", t, a, maps(by_obj_entry={id(t): same_obj})),
            ("an id named before", t, a, maps(by_obj_entry={id(t): Entry(fact=Entry(obj_ref=None))})),
            ("its view named", t, a, maps(by_view={vk: "x"}, entries={"x": 1})),
            ("its view named once", t, a, maps(by_view={vk: "x"})),
            ("a cached view dead", t, a, maps(dead_cached={vk})),
            ("its storage named", t, a, maps(by_storage={cd: {"x": 1}})),
            ("its storage named by none now", t, a, maps(by_storage={cd: {}})),
            ("queued", t, a, maps(fq_ids={id(t): Entry(wr=weakref.ref(t))})),
            ("an id queued before", t, a, maps(fq_ids={id(t): Entry(wr=weakref.ref(Obj()))})),
            ("its storage queued", t, a, maps(fq_stor={cd: Entry(gone=False)})),
            ("its storage queued, gone", t, a, maps(fq_stor={cd: Entry(gone=True)})),
            ("maps of another kind", t, a, maps(by_obj_entry=[])),
        ]
        taken = {}
        for new_input[0], fns in ((None, False), (reads.new_input, False), (reads.new_input, True)):
            if fns:
                # The C checks asking the module's FNS (use_cpp) where the
                # maps name its new_input; the Python reference calls it.
                self.C.use_cpp(reads.FNS, fake.Tensor, reads.new_input)
                self.addCleanup(self.C.use_cpp, None, None)
            for what, v, arm, m in cases:
                m = m[:8] + (new_input[0],)
                with self.subTest(what=what, reads=new_input[0] is not None, fns=fns):
                    before = reads.calls.get("new_input_c", 0)
                    got = self.same("fresh_input", v, arm, m)
                    if fns and type(v) is fake.Tensor:
                        self.assertEqual(reads.calls.get("new_input_c", 0), before + 1)
                    if got[0] == "ok" and got[1] is not None:
                        taken[what, new_input[0] is not None] = True
                        stor = v.untyped_storage()
                        # (the storage, read whole; with the reads, the
                        # tensor its weak reference is made of, and its
                        # data pointer read with the rest)
                        self.assertEqual(got[1], (stor, stor._cdata, None) if new_input[0] is None
                                         else (v, stor._cdata, v.data_ptr()))
        self.C.use_cpp(None, None)
        self.assertEqual(reads.errors, [])
        self.assertEqual(sorted(taken), [(w, r) for w in ("an id named before", "an id queued before",
                                                          "its storage named by none now",
                                                          "its storage queued, gone", "its view named once",
                                                          "new")
                                         for r in (False, True)])
        self.assertGreater(reads.calls["new_input"], 10)
        self.assertIs(self.C.fresh_input(t, a, maps())[0], t)
        with self.assertRaises(TypeError):  # (an armed tuple not of _fq_arm's making)
            self.C.fresh_input(t, a[:5], maps())
        with self.assertRaises(TypeError):  # (maps of an older recorder's making)
            self.C.fresh_input(t, a, maps()[:8])
        # A new_input that answers something else is an error (the caller
        # declines), not a crash.
        for bad in (lambda *a: 3, lambda *a: (1,), lambda *a: 1 / 0):
            with self.subTest(new_input=bad):
                self.assertEqual(outcome(self.C.fresh_input, t, a, maps()[:8] + (bad,))[0], "raised")

    def test_polled_alive(self):
        keep = [Obj()]  # (held by this list alone, and by 0 to 4 more references)
        r = weakref.ref(keep[0])
        for extra in range(5):
            for uses in (False, True):
                for c10 in (1, 2):
                    for alive in (True, False):
                        keep[0].uses = c10
                        keep[1:] = [keep[0]] * extra
                        with self.subTest(extra=extra, uses=uses, c10=c10, alive=alive):
                            self.same("polled_alive", ((r, uses, lambda: alive),))
        self.same("polled_alive", ((None, False, lambda: True), (None, False, lambda: False)))
        self.same("polled_alive", ())
        self.same("polled_alive", ((None, False),))
        self.same("polled_alive", ((None, False, lambda: 1 / 0),))
        # uses None (no tree wrapper judges it): alive while its object is,
        # alive() not asked; once it died, asked.
        for alive in (True, False):
            with self.subTest(uses=None, alive=alive):
                asked = []
                self.assertIs(self.same("polled_alive", ((r, None, lambda: asked.append(1) or 1 / 0),))[1], True)
                self.assertEqual(asked, [])
                gone = Obj()
                dead = weakref.ref(gone)
                del gone
                self.assertIs(self.same("polled_alive", ((dead, None, lambda: asked.append(1) or alive),))[1], alive)
                self.assertEqual(len(asked), 2)  # (once a side)

    def test_watch_dead(self):
        # Polled names as the session holds them: cached replay outputs
        # judged by their tree wrapper's check (2.11's, counting c10's
        # reference too; and one whose check was taken away), held by
        # the program 0 to 3 more times, c10 holding each once or twice;
        # and names judged by their object or storage alone. Each polled
        # once in Python first (its probe reads the rule), then both ways.
        from cgtrace.liveness import _Probe
        saved = fake.install_fake_torch()
        try:
            node = fake.Node(None, None)
            outs = [fake.Tensor([4]) for _ in range(16)]
            node.cache_outputs(outs)
            del outs
            entries, keep = [], []
            for i, t in enumerate(node.cached_tensor_outputs):
                t._c10_uses = 2 if i % 2 and i >= 4 else 1  # (c10's second reference: one of the program's)
                keep.append([t] * (i // 4))
                p = _Probe(weakref.ref(t), fake.StorageWeakRef(t.untyped_storage()))
                p.tree_ref = node.outputs_weakrefs[i]
                if i == 15:
                    p.tree_ref.extra_ref_check = None
                e = mock.NonCallableMock(spec=["fact"])
                e.fact = mock.NonCallableMock(spec=["probe", "alive"], probe=p, alive=p.alive)
                entries.append(e)
            t = None
            gone = Obj()
            p = _Probe(weakref.ref(gone), mock.NonCallableMock(spec=["expired"], expired=lambda: True))
            entries.append(mock.NonCallableMock(spec=["fact"], fact=mock.NonCallableMock(
                spec=["probe", "alive"], probe=p, alive=p.alive)))
            del gone
            entries.append(mock.NonCallableMock(spec=["fact"], fact=mock.NonCallableMock(
                spec=["probe", "alive"], probe=None, alive=lambda: True)))
            first = P.watch_dead(entries)
            self.assertEqual([entries.index(e) for e in first], [0, 1, 2, 3, 5, 7, 16])
            self.assertEqual(self.same("watch_dead", entries), ("ok", first))
            self.same("watch_dead", entries[4:15] + entries[17:])  # (none dead: None)
            self.same("watch_dead", [])
            self.same("watch_dead", [object()])  # (no fact: AttributeError either way)
            self.same("watch_dead", entries[:2] + [mock.NonCallableMock(spec=["fact"], fact=mock.NonCallableMock(
                spec=["probe", "alive"], probe=None, alive=lambda: 1 / 0))])
            # A count that says alive for sure is read in place: the tree's
            # check is not asked (it is, at every poll, in Python).
            asked = []
            for e in entries[8:12]:
                w = e.fact.probe.tree_ref
                real = w.extra_ref_check
                w.extra_ref_check = e.fact.probe.check = (lambda real=real: asked.append(1) or real())
            self.assertIsNone(self.C.watch_dead(entries[8:12]))
            self.assertEqual(asked, [])
            self.assertIsNone(P.watch_dead(entries[8:12]))
            self.assertEqual(len(asked), 0)  # (alive for sure in Python too: the count)
            keep[8] = keep[10] = []  # (let go: the tree's check is asked, and says dead)
            self.assertEqual(self.same("watch_dead", entries[8:12]), ("ok", [entries[8], entries[10]]))
            self.assertEqual(len(asked), 4)
            # The C asks the tree's wrapper itself where the Fact's alive is
            # its probe's: no _Probe.alive frame (the Python runs one a name).
            frames = []

            def prof(frame, event, arg):
                if event == "call" and frame.f_code is _Probe.alive.__code__:
                    frames.append(1)
            # (The Python's answer is not asked under the profile: before
            # 3.11 a Python profile function copies each frame's locals
            # into its dict, a reference more to the tensor it counts.)
            for check, want in ((self.C.watch_dead, 0), (P.watch_dead, 4)):
                del frames[:]
                sys.setprofile(prof)
                try:
                    got = check(entries[8:12])
                finally:
                    sys.setprofile(None)
                self.assertEqual(len(frames), want)
                if check is self.C.watch_dead:
                    self.assertEqual(got, [entries[8], entries[10]])
        finally:
            fake.remove_fake_torch(saved)

    def test_bind_all_and_forget_all(self):
        # The same random bindings and unbindings on two sets of a
        # session's maps, one by the Python, one by the C: names over
        # shared storages and views (a storage's output name passing to
        # the next output over it), objects named twice (takeover and
        # not), held Facts (a weak reference, its callback called at the
        # object's death) and polled ones, objects gone before their
        # binding; after each step the maps hold the same names, entries
        # and order, and the C's entries every slot _Entry's __init__ sets.
        import random
        from cgtrace.state import Fact, _Entry
        self.assertEqual(set(_Entry.__slots__), {"name", "fact", "kind", "order", "obj_id", "wr", "in_memo"})
        rnd = random.Random(5)
        objs = [Obj() for _ in range(12)]
        facts = []
        for i in range(40):
            o = objs[rnd.randrange(len(objs))]
            st = rnd.randrange(6)
            f = Fact([rnd.choice([2, 4])], "cuda:0", None if i % 9 == 0 else weakref.ref(o), st,
                     rnd.choice([0, 2]), (1,), lambda: True)
            f.held = rnd.random() < 0.4
            facts.append(f)
        gone = Obj()
        facts.append(Fact([4], "cuda:0", weakref.ref(gone), 9, 0, (1,), lambda: True))
        facts[-1].held = True
        del gone  # (its reference answers None: neither by_obj nor a weak reference)

        def maps(died):
            return ({}, {}, {}, {}, {}, {}, {}, {}, died, _Entry)

        deaths = {"py": [], "c": []}
        sides = {"py": (P, maps(deaths["py"].append)), "c": (self.C, maps(deaths["c"].append))}

        def desc(e):
            w = e.wr
            return (type(e), e.name, id(e.fact), e.kind, e.order, e.obj_id, e.in_memo,
                    None if w is None else id(w()))

        def state(m):
            entries, by_storage, out_storage, by_obj, by_obj_entry, by_view, watch, held_wr = m[:8]
            return ([(n, desc(e)) for n, e in entries.items()],
                    [(k, [(n, desc(e)) for n, e in d.items()]) for k, d in by_storage.items()],
                    list(out_storage.items()), list(by_obj.items()),
                    [(k, desc(e)) for k, e in by_obj_entry.items()], list(by_view.items()),
                    [(n, desc(e)) for n, e in watch.items()], list(held_wr.values()))

        bound, order, serial = [], 0, 0
        for step in range(400):
            if bound and rnd.random() < 0.4:
                names = rnd.sample(bound, min(len(bound), rnd.randrange(1, 4)))
                for n in names:
                    bound.remove(n)
                got = {k: outcome(mod.forget_all, m, names) for k, (mod, m) in sides.items()}
            else:
                k = rnd.randrange(1, 4)
                names = ["t%d" % (serial + j) for j in range(k)]
                serial += k
                fs = [rnd.choice(facts) for _ in names]
                kind, takeover = rnd.choice(["out", "out", "view", "tensor"]), rnd.random() < 0.8
                got = {k: outcome(mod.bind_all, m, names, fs, kind, takeover, order) for k, (mod, m) in sides.items()}
                bound += names
                order += len(names)
            self.assertEqual(got["c"], got["py"], step)
            self.assertEqual(got["py"], ("ok", None), step)
            self.assertEqual(state(sides["c"][1]), state(sides["py"][1]), step)
        # Objects dying: each side's held weak references call back alike.
        objs.clear()
        self.assertEqual(len(deaths["c"]), len(deaths["py"]))
        self.assertTrue(deaths["py"])
        # Errors, alike: a name not bound, names and facts of two lengths.
        for mod, m in sides.values():
            self.assertEqual(outcome(mod.forget_all, m, ["nope"]), ("raised", KeyError))
            self.assertEqual(outcome(mod.bind_all, m, ["a", "b"], facts[:1], "out", True, 0),
                             ("raised", ValueError))
        self.assertEqual(state(sides["c"][1]), state(sides["py"][1]))
        self.assertEqual(outcome(self.C.forget_all, ([],) * 8, ["a"]), ("raised", TypeError))
        self.assertEqual(outcome(self.C.bind_all, (), [], [], "out", True, 0), ("raised", TypeError))

        # A class not made by object.__new__ alone is called, as Python does.
        class Other(_Entry):
            __slots__ = ()

            def __new__(cls, *args):
                return super().__new__(cls)

        m = maps(None)[:9] + (Other,)
        self.C.bind_all(m, ["x"], facts[1:2], "out", True, 7)
        self.assertEqual(desc(m[0]["x"])[:7], (Other, "x", id(facts[1]), "out", 8, m[0]["x"].obj_id, False))

    def test_fresh_deaths(self):
        class Ref:
            """A death's weak reference (only its identity is read)."""

        class Call:
            def __init__(self, gone=False, expired=True):
                self.gone = gone
                self.sref = Obj()
                self.sref.expired = lambda: expired

        class Entry:
            def __init__(self, wr, kind="tensor", alive=False):
                self.wr, self.kind = wr, kind
                self.fact = Obj()
                self.fact.alive = lambda: alive

        a, b, c, n = Ref(), Ref(), Ref(), Ref()
        fq_wrs = {id(a): Call(), id(b): Call(), id(c): Call(gone=True)}
        held = {id(n): "in_3"}
        cases = [
            ("none", [], {}),
            ("one queued", [(a, 10)], {}),
            ("two, steps apart", [(a, 10), (b, 8)], {}),
            ("two at one step", [(a, 9), (b, 9)], {}),
            ("before the call's steps", [(a, 2)], {}),
            ("after the last step", [(a, 12)], {}),
            ("gone already", [(c, 10)], {}),
            ("bound since", [(a, 10)], {"held": {id(a): "x"}}),
            ("its storage alive", [(a, 10)], {"fq_wrs": {id(a): Call(expired=False)}}),
            ("a named input", [(n, 10)], {"entries": {"in_3": Entry(n)}}),
            ("a named input, another reference", [(n, 10)], {"entries": {"in_3": Entry(Ref())}}),
            ("a named output", [(n, 10)], {"entries": {"in_3": Entry(n, kind="out")}}),
            ("a named input, alive", [(n, 10)], {"entries": {"in_3": Entry(n, alive=True)}}),
            ("unknown", [(Ref(), 10)], {}),
            ("not a pair", [(a,)], {}),
            ("past k", [(a, 10), (Ref(), 10)], {"k": 1}),
        ]
        for what, dead, over in cases:
            args = dict(dead_objs=dead, k=over.get("k", len(dead)), fq_wrs=over.get("fq_wrs", fq_wrs),
                        held=over.get("held", held), entries=over.get("entries", {}), mc=11, steps=3)
            with self.subTest(what=what):
                self.same("fresh_deaths", *args.values())
        got = self.C.fresh_deaths([(a, 10), (b, 8), (n, 11)], 3, fq_wrs, held, {"in_3": Entry(n)}, 11, 3)
        self.assertEqual(sorted(got), [0, 1, 3])
        self.assertEqual([w for w, _ in got[1]], [a])

    def writer_case(self, impl, items, used=(), fresh_next=None, devices=1, base="in", fn="f", reads_at=None,
                    used_names=False):
        """fq_run over items (dicts of a _Queued's fields, "gone_by": the
        name of the queued call in its one group, or a list of such names,
        "other": an entry of another kind there), then fq_tail on the one
        it stops at, and on; returns everything either changed. reads_at:
        {index: [(src, deaths)]}, the host reads queued behind that call,
        deaths None or as gone_by; a call fq_run leaves with its reads
        gets a line saying how many after fq_tail's. used_names: the
        names made a names.UsedNames over fresh_next (as Session's), used
        added to it, not a set."""
        from cgtrace.freshq import _Queued
        from cgtrace.names import UsedNames
        fresh_next = dict(fresh_next or {})

        class Session:
            def __init__(self):
                self.names_used = UsedNames(fresh_next) if used_names else set()
                for n in used:
                    self.names_used.add(n)
                self.asked = []

            def _fresh(self, name):
                self.asked.append(name)
                n = name + "_x"
                self.names_used.add(n)
                return n

        class Trace:
            pass

        session, trace = Session(), Trace()
        trace.devices = devices
        q = []
        for it in items:
            t = _Queued()
            it = dict(it)
            gone_by = it.pop("gone_by", None)
            j = it.pop("j", 0)
            for k, v in it.items():
                setattr(t, k, v)
            if gone_by is not None:
                others = []
                for g in (gone_by if isinstance(gone_by, list) else [gone_by]):
                    if g == "other":
                        others.append(("wr", object()))
                    else:
                        x = _Queued()
                        x.name = g
                        others.append(("wr", x))
                t.groups = {j: others}
            q.append(t)
        def gone_of(spec):
            if spec is None:
                return None
            got = []
            for g in (spec if isinstance(spec, list) else [spec]):
                x = _Queued()
                x.name = g
                got.append(("wr", x) if g != "other" else ("wr", object()))
            return got

        reads = None
        if reads_at is not None:
            reads = {id(q[i]): [(src, gone_of(d)) for src, d in rs] if isinstance(rs, list) else rs
                     for i, rs in reads_at.items()}
        by_view = {(t.cd, 0, t.spec[0], t.spec[1]): "v" for t in q if t.spec is not None}
        by_obj = {t.oid: "n" for t in q}
        by_obj_entry = dict(by_obj)
        recs = []
        st = [10, 20, 30, 0, 5, "f_c5_0"]
        w = (fresh_next, session.names_used, base, recs, by_view, by_obj, by_obj_entry, trace,
             '{"op": "call", "fn": "%s", "args": ["' % fn, '"], "out": ["', fn + "_c", "_0",
             '\n{"op": "expect"}\n{"op": "del", "names": ["', session, _Queued)
        k = 0
        self.last_writer = (st, recs)  # (what a failure left: test_fq_run_keeps_the_calls_before_a_failure)
        while True:
            k = impl.fq_run(q, k, st, w, reads)
            if k >= len(q):
                break
            q[k].name = "slow%d" % k
            impl.fq_tail(q[k], "", st, w)
            if reads and id(q[k]) in reads:
                recs.append("(%d reads left)" % len(reads[id(q[k])]))
            k += 1
        return (st, recs, sorted(session.names_used), session.asked, w[0], trace.devices, by_view, by_obj,
                by_obj_entry, [(t.name, getattr(t, "order", None)) for t in q])

    def test_fq_run_and_tail(self):
        src = ({"line": 3}, '{"file": "m.py", "line": 3}')
        tmpl = ('{"op": "tensor", "name": "', '", "seed": ', "}")
        spec = ((4, 8), (8, 1), 0, None, 32, None)

        def call(i, **over):
            d = dict(spec=spec, groups=None, gone=True, steps=1, tmpl=tmpl, cd=100 + i, oid=200 + i, inv=7 + i,
                     src=src)
            d.update(over)
            return d

        cases = [
            ("a loop", [call(0), call(1, gone_by="in_1", j=0), call(2, gone_by="in_2", j=1, steps=2)], {}),
            ("names taken", [call(0), call(1)], {"used": ["in", "in_1", "f_c6_0"], "fresh_next": {"in": 0}}),
            ("counted from before", [call(0)], {"fresh_next": {"in": 4}}),
            ("no steps, many steps", [call(0, steps=0), call(1, steps=3)], {}),
            ("a death past the steps", [call(0, gone_by="in_0", j=3, steps=1)], {}),
            ("no invocation, no src", [call(0, inv=None), call(1, src=None), call(2, inv=None, src=None)], {}),
            ("another device", [call(0, spec=((4, 8), (8, 1), 2, None, 32, None))], {"devices": 1}),
            ("a device known", [call(0, spec=((4, 8), (8, 1), 1, None, 32, None))], {"devices": 3}),
            ("not lean", [call(0), call(1, spec=None), call(2)], {}),
            ("bound", [call(0, gone=False), call(1)], {}),
            ("two deaths", [call(0, gone_by=["a", "b"])], {}),
            ("a death of another kind", [call(0, gone_by="other")], {}),
            ("two groups", [call(0, groups={0: [], 1: []})], {}),
            # (the text: UTF-8 where a part is not ASCII, a lone surrogate
            # as surrogatepass keeps it, a run longer than the buffer's
            # first size, an invocation past a C long's)
            ("not ASCII", [call(0, src=({}, '{"file": "m\u00e9\u4e2d.py"}')), call(1, gone_by="in")],
             {"base": "\u00eft", "fn": "f\u00e9"}),
            ("a surrogate", [call(0, src=({}, '{"file": "m\udc80.py"}'))], {}),
            ("long lines", [call(i, tmpl=("x" * 3000, '", "seed": ', "}"), gone_by="in" if i else None)
                            for i in range(5)], {}),
            ("a long loop", [call(i, gone_by=("in_%d" % i if i > 1 else "in") if i else None)
                             for i in range(300)], {}),
            ("a huge invocation", [call(0, inv=1 << 70), call(1, inv=-5), call(2, inv=True)], {}),
            # (the writer's digits, two at a time: every length, both ends
            # of a C long long)
            ("invocations of every length",
             [call(i, inv=v) for i, v in enumerate([0, 7, 10, 99, 100, 12345, 10 ** 18 - 1, -(1 << 63),
                                                     (1 << 63) - 1, -10, -101])], {}),
            ("an output name taken", [call(0), call(1)], {"used": ["f_c6_0", "f_c7_0"], "fresh_next": {"in": 2}}),
            # (with UsedNames, an output's name a base's own: taken; bases
            # and a name beginning as the output names do that take none
            # of them: "_0" is no number below a base's)
            ("an output name a base", [call(0), call(1), call(2)], {"fresh_next": {"in": 1, "f_c7_0": 1}}),
            ("an output name numbered", [call(0), call(1)], {"fresh_next": {"f_c6_0": 0, "f_c7": 3}}),
            ("a base like the outputs'", [call(0), call(1)], {"fresh_next": {"f_c": 4}, "used": ["f_cx"]}),
            # (host reads queued behind calls, Recorder._queue_read: each
            # its input's del or none, with a src or none; those of a kind
            # fq_run does not write leave their call to fq_tail's way)
            ("reads", [call(0), call(1), call(2, gone_by="in_1")],
             {"reads_at": {0: [(src, "in"), (None, None)], 1: [(None, "in_1")], 2: [(src, None)]}}),
            ("reads with two deaths", [call(0), call(1)], {"reads_at": {0: [(src, ["a", "b"])], 1: [(src, None)]}}),
            ("a read of another death", [call(0), call(1)], {"reads_at": {0: [(None, "other")]}}),
            ("reads not a list", [call(0), call(1)], {"reads_at": {1: ((src, None),)}}),
            ("a src not a pair", [call(0)], {"reads_at": {0: [("src", None)]}}),
            ("no reads", [call(0)], {"reads_at": {}}),
        ]
        for what, items, kw in cases:
            for used_names in (False, True):
                with self.subTest(what=what, used_names=used_names):
                    want = self.writer_case(P, items, used_names=used_names, **kw)
                    got = self.writer_case(self.C, items, used_names=used_names, **kw)
                    self.assertEqual(got, want)
        # (UsedNames: an output's name taken asks _fresh for another)
        for what in ("an output name taken", "an output name a base"):
            kw = next(kw for w_, _, kw in cases if w_ == what)
            items = next(it for w_, it, _ in cases if w_ == what)
            self.assertTrue(self.writer_case(self.C, items, used_names=True, **kw)[3], what)
        got = self.writer_case(self.C, cases[0][1])
        self.assertEqual(got[0][:5], [16, 25, 33, 2, 8])  # (order: two a call; epoch: one a call and a death)
        # One record for a run of calls, each call's lines as fq_tail
        # writes one, the calls' separated by a line end.
        self.assertEqual(len(got[1]), 1)
        lines = got[1][0].split("\n")
        self.assertEqual([json.loads(x)["op"] for x in lines],
                         ["step", "tensor", "call", "expect", "del", "del", "step", "tensor", "call", "expect", "del",
                          "step", "del", "step", "tensor", "call", "expect", "del"])
        self.assertEqual(json.loads(lines[8])["args"], ["in_1"])
        with self.assertRaises(TypeError):
            self.C.fq_run((), 0, [0] * 6, (None,) * 15, None)
        # The reads after their calls: the input's del, the read of the
        # call's output, its expect.
        byname = {what: (items, kw) for what, items, kw in cases}
        got = self.writer_case(self.C, byname["reads"][0], **byname["reads"][1])
        lines = got[1][0].split("\n")
        ops = [json.loads(x)["op"] for x in lines]
        self.assertEqual(ops[:10], ["step", "tensor", "call", "expect", "del", "del", "read", "expect", "read",
                                    "expect"])
        self.assertEqual(json.loads(lines[5]), {"op": "del", "names": ["in"]})
        self.assertEqual(json.loads(lines[6]), {"op": "read", "name": "f_c6_0", "src": {"file": "m.py", "line": 3}})
        self.assertEqual(json.loads(lines[8]), {"op": "read", "name": "f_c6_0"})
        self.assertEqual(got[0][3], 3)  # (three dels: two reads' and a call's group)
        for what in ("reads with two deaths", "a read of another death", "reads not a list", "a src not a pair"):
            got = self.writer_case(self.C, byname[what][0], **byname[what][1])
            self.assertTrue(any("reads left" in r for r in got[1]), what)

    def test_fq_run_keeps_the_calls_before_a_failure(self):
        """A queued call fq_run cannot write (a steps count not an int:
        TypeError) leaves the calls before it written, in recs and in
        st, and itself not begun, in C as in Python."""
        src = ({"line": 3}, '{"file": "m.py", "line": 3}')
        tmpl = ('{"op": "tensor", "name": "', '", "seed": ', "}")
        spec = ((4, 8), (8, 1), 0, None, 32, None)
        got = {}
        for impl in (P, self.C):
            items = [dict(spec=spec, groups=None, gone=True, steps=1, tmpl=tmpl, cd=100 + i, oid=200 + i, inv=7 + i,
                          src=src) for i in range(3)]
            items[2]["steps"] = "x"
            with self.assertRaises(TypeError):
                self.writer_case(impl, items)
            got[impl] = self.last_writer
        self.assertEqual(got[P], got[self.C])
        st, recs = got[P]
        self.assertEqual(st[:5], [14, 22, 32, 0, 7])  # (two calls: order two each, epoch and seed one each)
        self.assertEqual(len(recs), 1)
        self.assertEqual(recs[0].count('"op": "call"'), 2)

    def test_replay_run_with_reads(self):
        # The host reads queued behind replays (Recorder._queue_read):
        # after the i-th call's lines, a read of its output and an expect
        # each, with its src or none; bad reads raise alike.
        src = ({"line": 3}, '{"file": "m.py", "line": 3}')
        head = '{"op": "call", "fn": "f", "args": ["x"], "out": ["'
        mid = '\n{"op": "expect", "action": "replay"}\n{"op": "del", "names": ["'
        loop = [(None, 1, 7 + i, src) for i in range(4)]
        for what, reads in (("one after each", {i: [src] for i in range(4)}),
                            ("two after one, none after others", {1: [src, None]}),
                            ("after the last", {3: [None]}),
                            ("an index past the run", {9: [None]}),
                            ("a src not a pair", {0: [5]}),
                            ("a src's JSON not a str", {0: [({}, 5)]}),
                            ("not a list", {0: 5}),
                            ("not a dict", [None]),
                            ("a surrogate in a src", {2: [({}, '{"file": "m\udc80.py"}')]})):
            with self.subTest(what=what):
                got = self.same("replay_run", loop, 2, set(), "f_c", "_0", "f_c1_0", head, mid, reads)
                if what == "two after one, none after others":
                    lines = got[1][0].split("\n")
                    at = [i for i, x in enumerate(lines) if '"read"' in x]
                    self.assertEqual(len(at), 2)
                    self.assertEqual(json.loads(lines[at[0]]), {"op": "read", "name": "f_c3_0", "src": {"file": "m.py", "line": 3}})
                    self.assertEqual(json.loads(lines[at[1]]), {"op": "read", "name": "f_c3_0"})
                    self.assertEqual(json.loads(lines[at[1] + 1]), {"op": "expect", "error": None})
                    self.assertIn('"out": ["f_c3_0"]', lines[at[0] - 3])

    def test_replay_run(self):
        class Src(str):
            def __str__(self):
                return "{}"

        src = ({"line": 3}, '{"file": "m.py", "line": 3}')
        head = '{"op": "call", "fn": "f", "args": ["x"], "out": ["'
        mid = '\n{"op": "expect", "action": "replay"}\n{"op": "del", "names": ["'
        loop = [(None, 1, 7, src), (None, 1, 8, src)]
        for what, run, k, used, pre in (
                ("a loop", loop, 2, set(), "f_c"),
                ("steps", [(None, 0, 7, src), (None, 3, 8, src)], 2, set(), "f_c"),
                ("no invocation, no src", [(None, 1, None, src), (None, 1, 8, None), (None, 0, None, None)], 5,
                 set(), "f_c"),
                ("a bool invocation, a huge one", [(None, 1, True, src), (None, 1, 1 << 70, src)], 2, set(), "f_c"),
                ("names not ascii", [(None, 1, 7, ({}, '{"file": "modèle.py"}'))], 1, set(), "ä_c"),
                ("a surrogate", [(None, 1, 7, ({}, '{"file": "m\udc80.py"}'))], 1, set(), "f_c"),
                ("none", [], 1, set(), "f_c"),
                ("a name taken", loop, 2, {"f_c3_0"}, "f_c"),
                ("another name taken", loop, 2, {"f_c4_0", "x"}, "f_c"),
                ("a long run", [(None, i % 3, 100 + i, src) for i in range(300)], 1 << 40, set(), "f_c"),
                ("long lines", [(None, 1, 7, ({}, "{" + "x" * 5000 + "}"))] * 3, 2, set(), "f_c"),
                ("not a token", [(None, 1, 7)], 2, set(), "f_c"),
                # (the tail's odd kinds: a str subclass's src is its %s
                # beside an invocation, its characters without one; a src
                # not a str fails as the concatenation does)
                ("a src of a str subclass", [(None, 1, 7, ({}, Src('{"f": 1}'))), (None, 1, None, ({}, Src("{}")))],
                 2, set(), "f_c"),
                ("a src not a str", [(None, 1, None, ({}, 5))], 2, set(), "f_c")):
            with self.subTest(what=what):
                got = self.same("replay_run", run, k, used, pre, "_0", "f_c1_0", head, mid, None)
                self.assertEqual(self.same("replay_run", run, k, used, pre, "_0", "f_c1_0", head, mid, {}), got)
                if what == "a loop":
                    text, last, steps = got[1]
                    lines = text.split("\n")
                    self.assertEqual(len(lines), 8)
                    self.assertEqual(lines[3], '{"op": "del", "names": ["f_c1_0"]}')
                    self.assertEqual(json.loads(lines[5])["out"], ["f_c3_0"])
                    self.assertEqual((last, steps), ("f_c3_0", 2))
                if what.startswith("a name taken"):
                    self.assertEqual(got, ("ok", None))

    def test_fresh_after(self):
        mgr, node, out = Obj(), Obj(), Obj()
        mgr.debug_checkpointing_counter = 2
        node.outputs_weakrefs = ["w"]
        base = dict(node_ref=weakref.ref(node), ckpt=2, out_ref=weakref.ref(out), tree_ref="w")
        t = Obj()
        t.dtype, t.shape = None, ()

        def armed(**over):
            a = [None] * 28
            for k, v in dict(base, **over).items():
                a[getattr(P, "A_" + k.upper())] = v
            return tuple(a)

        two = Obj()
        two.outputs_weakrefs = ["w", "v"]
        cases = [
            ("all hold", armed(), node, False, [out], mgr, []),
            ("something else", armed(), node, True, [out], mgr, []),
            ("no node", armed(), None, False, [out], mgr, []),
            ("another node", armed(), Obj(), False, [out], mgr, []),
            ("two outputs", armed(), node, False, [out, out], mgr, []),
            ("a tuple", armed(), node, False, (out,), mgr, []),
            ("a checkpoint", armed(ckpt=3), node, False, [out], mgr, []),
            ("a death", armed(), node, False, [out], mgr, [1]),
            ("another object", armed(), node, False, [Obj()], mgr, []),
            ("another wrapper", armed(tree_ref="x"), node, False, [out], mgr, []),
            ("two wrappers", armed(node_ref=weakref.ref(two)), two, False, [out], mgr, []),
            ("no counter", armed(), node, False, [out], Obj(), []),
        ]
        for what, a, nd, other, o, m, dead in cases:
            with self.subTest(what=what):
                self.same("fresh_after", a, nd, other, o, m, dead)
        self.assertEqual(self.same("fresh_after", armed(), node, False, [out], mgr, []), ("ok", True))


    def test_noter_notes_as_the_python_wrapper(self):
        """Noter(hot, tls, orig_exec, rec, py), execute_node's wrapper:
        a method of the class it is set on (no bound method made at a
        call through the instance), the steady call's first replay noted
        in hot, a second handed to rec._general_noting, a replay at depth
        noted in tls, and a call of another shape handed to py."""
        from cgtrace.recorder import _Hot
        log = []

        class Rec:
            def _general_noting(self):
                log.append("general")
                tls.depth = 1

        hot, tls, rec = _Hot(), Obj(), Rec()
        tls.depth, tls.actions, tls.node = 0, [], None

        def orig(mgr, node, new_inputs):
            log.append(("ran", node))
            return [node]

        def py(*args, **kwargs):
            log.append(("py", args, kwargs))
            return "py"

        class M:
            execute_node = self.C.Noter(hot, tls, orig, rec, py)

        m = M()
        self.assertEqual(m.execute_node("a", []), ["a"])  # (not steady, depth 0: run, nothing noted)
        self.assertEqual((log, tls.actions, hot.node), ([("ran", "a")], [], None))
        log.clear()
        hot.steady = True
        m.execute_node("a", [])
        self.assertIs(hot.node, "a")
        self.assertEqual(log, [("ran", "a")])
        log.clear()
        m.execute_node("b", [])  # a second replay in the steady call: the general path's noting
        self.assertEqual(log, ["general", ("ran", "b")])
        self.assertEqual((tls.actions, tls.node), (["replay"], "b"))
        log.clear()
        hot.steady, tls.actions = False, []
        self.assertEqual(M.execute_node(m, "c", new_inputs=[]), "py")  # (a keyword: the Python wrapper's)
        self.assertEqual(log, [("py", (m, "c"), {"new_inputs": []})])
        bound = M.__dict__["execute_node"].__get__(m, M)
        self.assertIs(bound.__self__, m)
        self.assertIs(M.__dict__["execute_node"].__get__(None, M), M.__dict__["execute_node"])

@unittest.skipUnless(_can_build(), "no C compiler or no Python.h here: the recorder uses the Python checks")
class SlotAccessTest(BuiltTest):
    """The C paths read and write the slots of the recorder's own classes
    (_Hot, _Queued, _Entry, Fact, the plan) at their offsets, found once a
    class: whatever Python's getattr and setattr would do, they do, when
    the class is not a plain one of slots or changes after the lookup."""

    def test_a_plain_slot_is_read_and_written(self):
        class K:
            __slots__ = ("a", "b")
        k = K()
        k.a = 1
        self.assertEqual(self.C.slot_get(k, "a"), 1)
        self.C.slot_set(k, "a", 2)
        self.assertEqual(k.a, 2)
        self.assertEqual(self.C.slot_get(k, "a"), 2)  # (its offset kept now)
        k.a = [3]
        self.assertIs(self.C.slot_get(k, "a"), k.a)
        self.C.slot_set(k, "b", "x")
        self.assertEqual((k.a, k.b), ([3], "x"))

    def test_an_empty_slot_takes_getattr_s_way(self):
        class K:
            __slots__ = ("a",)
        with self.assertRaises(AttributeError):
            self.C.slot_get(K(), "a")

        class Q:  # (as _Queued: an empty slot made when first asked for)
            __slots__ = ("fact",)

            def __getattr__(self, name):
                if name != "fact":
                    raise AttributeError(name)
                self.fact = "made"
                return self.fact
        q = Q()
        self.assertEqual(self.C.slot_get(q, "fact"), "made")
        self.assertEqual(self.C.slot_get(q, "fact"), "made")

    def test_a_class_that_changes_is_looked_up_again(self):
        class K:
            __slots__ = ("a",)
        k = K()
        k.a = 1
        self.assertEqual(self.C.slot_get(k, "a"), 1)
        # A __getattribute__ and a __setattr__ of its own from now on.
        K.__getattribute__ = lambda self, name: "theirs"
        seen = []
        K.__setattr__ = lambda self, name, v: seen.append((name, v))
        self.assertEqual(self.C.slot_get(k, "a"), "theirs")
        self.C.slot_set(k, "a", 5)
        self.assertEqual(seen, [("a", 5)])

    def test_what_is_not_a_plain_slot_takes_getattr_s_way(self):
        class Base:
            __slots__ = ("a",)

        class Prop(Base):
            __slots__ = ()
            a = property(lambda self: "property", lambda self, v: setattr(self, "seen", v))
            seen = None

        class Dicted:
            pass
        b, p, d = Base(), Prop(), Dicted()
        b.a = "slot"
        d.a = "dict"
        # One name on three classes in turn (two ways a name: each class
        # found again when its way was given to another).
        for _ in range(2):
            self.assertEqual(self.C.slot_get(b, "a"), "slot")
            self.assertEqual(self.C.slot_get(p, "a"), "property")
            self.assertEqual(self.C.slot_get(d, "a"), "dict")
        self.C.slot_set(d, "a", "set")
        self.assertEqual(d.a, "set")
        with self.assertRaises(AttributeError):  # (Prop's setter sets a class attribute: read-only here)
            self.C.slot_set(p, "a", 1)
        self.assertEqual(self.C.slot_get(b, "a"), "slot")


@unittest.skipUnless(_can_build(), "no C compiler or no Python.h here: the recorder uses the Python checks")
class StorageRefAndDiedTest(BuiltTest):
    """The C module's StorageRef (a storage's weak reference over torch's C
    functions, as StorageWeakRef holds one) and Died (Session._died)."""

    def test_storage_ref(self):
        S = fake.Storage
        refs = self.C.StorageRefs(S._free_weak_ref, S._expired)
        stor = S(64)
        cd = stor._cdata
        r = refs(stor)
        self.assertEqual(r.cdata, cd)
        self.assertEqual(S.weak_held.get(cd), 1)
        self.assertIs(r.expired(), False)
        del stor
        self.assertIs(r.expired(), True)
        self.assertEqual(S.weak_held.get(cd), 1)  # (held until the reference dies)
        del r
        self.assertNotIn(cd, S.weak_held)

    def test_storage_ref_failures(self):
        S = fake.Storage
        refs = self.C.StorageRefs(S._free_weak_ref, S._expired)

        class NoRef:
            def _weak_ref(self):
                raise TypeError("no weak reference")

        with self.assertRaises(TypeError):
            refs(NoRef())
        with self.assertRaises(TypeError):
            self.C.StorageRefs(1, S._expired)
        # A free that raises at the reference's death is unraisable, as a
        # __del__'s error is: never raised into whatever code dropped it.
        seen = []

        def bad_free(cd):
            raise ValueError("free")

        old, sys.unraisablehook = sys.unraisablehook, lambda u: seen.append(u.exc_type)
        stor = S(8)
        try:
            r = self.C.StorageRefs(bad_free, S._expired)(stor)
            del r
        finally:
            sys.unraisablehook = old
            S.weak_held.pop(stor._cdata, None)  # (the handle bad_free never gave back)
        self.assertEqual(seen, [ValueError])

    def test_died(self):
        dead = []
        clock = [5]
        died = self.C.Died(dead, lambda: clock[0])
        o = Obj()
        wr = weakref.ref(o, died)
        del o
        self.assertEqual(dead, [(wr, 5)])
        dead.clear()
        died0 = self.C.Died(dead, None)
        o = Obj()
        wr = weakref.ref(o, died0)
        del o
        self.assertEqual(dead, [(wr, 0)])
        with self.assertRaises(TypeError):
            self.C.Died((), None)
        for bad in ((), (wr, wr)):
            with self.assertRaises(TypeError):
                died0(*bad)
        with self.assertRaises(TypeError):
            died0(wr=wr)
        self.assertIsNone(died0(wr))  # (called as the weakref module calls it)
        self.assertEqual(dead, [(wr, 0), (wr, 0)])
        # The clock as an attribute (the recorder's step counter, a class's):
        # read at the death, the clock never called.
        dead.clear()

        class Box:
            counter = 7

        died2 = self.C.Died(dead, lambda: self.fail("the clock called"), Box, "counter")
        o = Obj()
        wr = weakref.ref(o, died2)
        Box.counter = 9
        del o
        self.assertEqual(dead, [(wr, 9)])
        with self.assertRaises(TypeError):
            self.C.Died(dead, None, Box)

    def test_rlock_is_threading_s(self):
        """The C RLock answers as threading.RLock does, step by step, in
        one thread and across two."""
        import threading
        for L in (self.C.RLock(), threading.RLock()):
            with self.subTest(type(L).__module__):
                self.assertFalse(L._is_owned())
                with self.assertRaises(RuntimeError):
                    L.release()
                self.assertIs(L.acquire(False), True)
                self.assertIs(L.acquire(), True)  # (reentrant)
                self.assertIs(L.acquire(blocking=False), True)
                self.assertTrue(L._is_owned())
                other = []
                t = threading.Thread(target=lambda: other.append((L.acquire(False), L._is_owned())))
                t.start()
                t.join()
                self.assertEqual(other, [(False, False)])
                # (the other thread cannot let go of this one's)
                t = threading.Thread(target=lambda: other.append(outcome(L.release)))
                t.start()
                t.join()
                self.assertEqual(other[-1], ("raised", RuntimeError))
                for _ in range(3):
                    L.release()
                self.assertFalse(L._is_owned())
                with L:
                    self.assertTrue(L._is_owned())
                self.assertFalse(L._is_owned())
                # A blocked acquire waits for the holder, the GIL let go.
                L.acquire()
                waited = threading.Event()
                got = []

                def waiter():
                    waited.set()
                    got.append(L.acquire())
                    got.append(L._is_owned())
                    L.release()
                t = threading.Thread(target=waiter)
                t.start()
                waited.wait()
                t.join(0.05)
                self.assertTrue(t.is_alive())
                self.assertEqual(got, [])
                L.release()
                t.join()
                self.assertEqual(got, [True, True])
                with self.assertRaises(TypeError):
                    L.acquire(True, -1, 3)
        L = self.C.RLock()
        self.assertIs(weakref.ref(L)(), L)  # (a weak reference may name it, as threading's)
        with self.assertRaises(ValueError):
            self.C.RLock().acquire(True, 1.0)  # (no timeout: the recorder takes none)

    def test_rlock_many_threads_take_turns(self):
        """Threads that each take and let go of the C RLock many times, the
        GIL let go while they hold it (as the tree's call does): never two
        inside at once, none left waiting (a letting go that wakes no
        waiter would leave one blocked for good), blocking and not."""
        import threading
        import time
        L = self.C.RLock()
        inside, seen, done = [0], [], []

        def worker(k):
            for i in range(300):
                if (i + k) % 3 == 0:
                    if not L.acquire(False):
                        continue
                else:
                    L.acquire()
                try:
                    inside[0] += 1
                    seen.append(inside[0])
                    time.sleep(0)  # (the GIL let go while held)
                    with L:  # (reentrant, across the wait)
                        time.sleep(0)
                    inside[0] -= 1
                finally:
                    L.release()
            done.append(k)

        threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(6)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self.assertEqual(sorted(done), list(range(6)), "a thread left waiting")
        self.assertEqual(set(seen), {1})
        self.assertGreater(len(seen), 6 * 200)
        self.assertIs(L.acquire(False), True)
        L.release()

    def test_rlock_wait_runs_signal_handlers(self):
        """A thread blocked in acquire runs the program's signal handlers,
        and one that raises ends the wait with its error (threading's)."""
        import signal
        if not hasattr(signal, "setitimer"):
            self.skipTest("no setitimer here")
        L = self.C.RLock()
        done, t = held_elsewhere(L)

        class Alarm(Exception):
            pass

        def on_alarm(*_):
            raise Alarm()
        old = signal.signal(signal.SIGALRM, on_alarm)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            with self.assertRaises(Alarm):
                L.acquire()
            self.assertFalse(L._is_owned())
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            done.set()
            t.join()
        self.assertIs(L.acquire(False), True)
        L.release()

    def test_runner_takes_its_rlock_in_place(self):
        """Given the C RLock, the Runner takes and lets go of it without
        calling the lock's methods (the ones it is given raise here), and
        leaves it as it found it; given another lock, it calls them."""
        import threading
        seen = []

        def orig_run(mgr, new_inputs, function_id):
            seen.append(L._is_owned())
            return "ran"

        def steady(mgr, new_inputs, function_id):
            seen.append(("steady", L._is_owned()))
            return "steady"

        def refuse(*a):
            raise AssertionError("the Runner called the lock's method")

        class Hot:
            steady = False
            lfid = None
            lean = None
            fql = None
            off = False

        class Rec:
            tls = type("T", (), {"depth": 0})()
            _fid_cache = {}

        for L, calls in ((self.C.RLock(), refuse), (threading.RLock(), None)):
            with self.subTest(type(L).__module__):
                seen.clear()
                fields = dict(hot=Hot(), armed={}, acquire=calls or L.acquire, owned=calls or L._is_owned,
                              release=calls or L.release, orig_run=orig_run, box=None, gen=None, dead_objs=[],
                              pend=None, ptrs_equal=None, data_ptr=None, steady=steady, rec=Rec(),
                              declined=object(), watch_alive=None, lock=L, fresh_ctx=None, fq=[], tls=Rec.tls,
                              fq_bound=32, compact=None)
                r = self.C.Runner(**fields)
                fid = object()
                # Not armed: _steady's, the lock held.
                self.assertEqual(r(None, [], fid), "steady")
                self.assertEqual(seen, [("steady", True)])
                self.assertFalse(L._is_owned())
                # Inside a steady call: passed through when this thread
                # holds the lock.
                fields["hot"].steady = True
                L.acquire()
                self.assertEqual(r(None, [], fid), "ran")
                L.release()
                fields["hot"].steady = False
                # Held by another thread: _steady's, which waits.
                done, t = held_elsewhere(L)
                self.assertEqual(r(None, [], fid), "steady")
                done.set()
                t.join()
                self.assertEqual(seen, [("steady", True), True, ("steady", False)])
                self.assertFalse(L._is_owned())


class NoReferenceKeptTest(fake.FakeTorchTest):
    """The C functions keep no reference past their call: over thousands
    of recorded calls of each lean loop no tensor outlives the program's
    hold on it and no kept object's refcount grows (a reference kept
    would change what the tree judges alive, and so the program)."""

    def loops(self):
        import cgtrace
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr, fwd, bwd = fake.training_tree(grads=2)
        params = [fake.Tensor([8, 8]), fake.Tensor([8])]
        x = fake.Tensor([16, 8])
        box = [None]

        def steady():
            cgt.mark_step_begin()
            fake._invocation()
            box[0] = mgr._run(params + [x], fwd)

        def fresh():
            cgt.mark_step_begin()
            fake._invocation()
            new = fake.Tensor([16, 8])  # (held through the call, as a caller's argument is)
            box[0] = mgr._run(params + [new], fwd)

        def train():
            cgt.mark_step_begin()
            fake._invocation()
            new = fake.Tensor([16, 8])
            y = mgr._run(params + [new], fwd)[0]
            fake._invocation()
            grad = fake.Tensor([16, 8])
            mgr._run([y, grad], bwd)

        return cgtrace, mgr, params, x, box, (steady, fresh, train)

    def test_lean_loops_keep_nothing(self):
        # (the module's reads with its FNS, the C functions of the weak
        # handles and the use count, and without: an older build's)
        for reads in (None, fake.CppReads(fns=False), fake.CppReads()):
            with mock.patch.dict(sys.modules["cgtrace.cpp"]._loaded, {"got": (reads, "a test")}):
                self.lean_loops_keep_nothing(reads)
            if reads is not None:
                self.assertEqual(reads.errors, [])
                if hasattr(reads, "FNS"):
                    # (each handle made through FNS freed through it; the
                    # last inputs' still held where the loop holds them)
                    made, freed = reads.calls.get("weak_make", 0), reads.calls.get("weak_free", 0)
                    self.assertGreater(made, 1500, reads.calls)
                    self.assertLessEqual(made - freed, 10, reads.calls)
                    self.assertGreater(reads.calls.get("weak_expired", 0), 1500, reads.calls)
                    self.assertGreater(reads.calls.get("use_count", 0), 1500, reads.calls)
                else:
                    self.assertNotIn("weak_make", reads.calls)
                    self.assertGreater(reads.calls.get("storage_weak_ref", 0), 1500, reads.calls)

    def lean_loops_keep_nothing(self, reads):
        cgtrace, mgr, params, x, box, loops = self.loops()
        # (the loader's answer asked again: a suite run with CGTRACE_FAST=0
        # cached the Python checks before this test)
        with mock.patch.dict(os.environ, {"CGTRACE_FAST": "1"}), mock.patch.dict(P._loaded, clear=True):
            for loop in loops:
                with self.subTest(loop=loop.__name__, reads=reads is not None):
                    for _ in range(5):
                        loop()
                    with cgtrace.record(os.path.join(self.dir.name, loop.__name__ + ".cgt.jsonl")) as rec:
                        for _ in range(100):
                            loop()
                        before, objs = self.held(mgr, params, x, box[0])
                        for _ in range(2000):
                            loop()
                        after, objs_after = self.held(mgr, params, x, box[0])
                    self.assertIsNone(rec.fast_why)
                    self.assertGreater(rec.short_calls, 1500)
                    self.assertEqual(after, before)
                    # Every storage weak reference taken is given back once
                    # what held it is gone (StorageRef's, the C functions'):
                    # only the live storages' remain.
                    import gc
                    gc.collect()
                    live = set(fake.Storage._live.keys())
                    self.assertLessEqual(set(fake.Storage.weak_held), live)
                    # (the recorder's own containers grow a little: none a
                    # call; but the queue, at any length up to its bound
                    # at either count, holds with CGTRACE_COMPACT=0 a
                    # _Queued and its few objects a call)
                    self.assertLess(objs_after - objs, 200 + 3 * _FQ_BOUND)
                    if reads is not None and loop.__name__ != "train":
                        # (the lean path's reads went through cpp.py's
                        # functions: the stand-in's, here)
                        # (through the module's FNS where it has one: its
                        # C function, not the Python one)
                        name = "ptrs_equal" if loop.__name__ == "steady" else \
                            "new_input_c" if hasattr(reads, "FNS") else "new_input"
                        self.assertGreater(reads.calls.get(name, 0), 1500, reads.calls)

    def test_the_runner_takes_a_lean_fresh_call_itself(self):
        """With the C checks the Runner takes a lean fresh call whole:
        freshq's fresh_run (its Python, the reference) runs for none of a
        new-input loop's calls, one Python frame fewer a call; with the
        Python checks it runs for each. The traces are the same (the
        lean paths against the general path: test_recorder_fresh and
        test_recorder_random's "python checks")."""
        if not _can_build():
            self.skipTest("no C compiler or no Python.h here")
        cgtrace, mgr, params, x, box, (_, fresh, _) = self.loops()
        got = {}
        for way, patch in (("c", {}), ("python", {"got": (P, "a test")})):
            ran = [0]

            def prof(frame, event, arg):
                if event == "call" and frame.f_code.co_name == "fresh_run" \
                        and frame.f_code.co_filename.endswith("freshq.py"):
                    ran[0] += 1
            with mock.patch.dict(P._loaded, patch, clear=True), mock.patch.dict(os.environ, {"CGTRACE_FAST": "1"}):
                for _ in range(5):
                    fresh()
                with cgtrace.record(os.path.join(self.dir.name, way + ".cgt.jsonl")) as rec:
                    sys.setprofile(prof)
                    try:
                        for _ in range(200):
                            fresh()
                    finally:
                        sys.setprofile(None)
                got[way] = (ran[0], rec.lean_queued_calls, rec.fast_why)
        (c_ran, c_lean, c_why), (py_ran, py_lean, py_why) = got["c"], got["python"]
        self.assertIsNone(c_why)
        self.assertEqual(py_why, "a test")
        self.assertGreater(c_lean, 150)
        self.assertEqual(c_ran, 0)
        self.assertGreater(py_lean, 150)
        self.assertGreaterEqual(py_ran, py_lean)

    def test_the_reads_write_the_same_trace(self):
        """A recording whose lean paths read through cpp.py's module
        writes, byte for byte, the trace of one that reads through torch's
        bindings, over each lean loop."""
        cgtrace, mgr, params, x, box, loops = self.loops()
        for loop in loops:
            texts = []
            for k, reads in enumerate((None, fake.CppReads(), fake.CppReads(fns=False))):
                path = os.path.join(self.dir.name, "%s-%d.cgt.jsonl" % (loop.__name__, k))
                with mock.patch.dict(sys.modules["cgtrace.cpp"]._loaded, {"got": (reads, "a test")}), \
                        mock.patch.dict(os.environ, {"CGTRACE_FAST": "1"}):
                    for _ in range(5):
                        loop()
                    with cgtrace.record(path) as rec:
                        for _ in range(300):
                            loop()
                self.assertEqual(rec.cpp_why, "a test")
                with open(path) as fh:
                    # (the header names the file; the stand-in's invocation
                    # count runs on from the first recording's)
                    texts.append([re.sub(r'"invocation": \d+', '"invocation": _', ln)
                                  for ln in fh.read().splitlines()[1:]])
            with self.subTest(loop=loop.__name__):
                self.assertGreater(len(texts[0]), 300)
                for other in texts[1:]:
                    diff = [(i, a, b) for i, (a, b) in enumerate(zip(texts[0], other)) if a != b]
                    self.assertEqual((len(texts[0]), diff[:3]), (len(other), []))

    @staticmethod
    def held(mgr, params, x, out):
        """(the live tensors and the refcounts of what the loop keeps, the
        output the tree's cache hands out again among them), and how many
        objects the collector tracks."""
        import gc
        gc.collect()
        objs = gc.get_objects()
        return ((sum(type(o) is fake.Tensor for o in objs),
                 [sys.getrefcount(o) for o in params + [x, mgr, out]]), len(objs))


class CallEndTest(unittest.TestCase):
    def test_a_deferred_calls_end_or_none(self):
        """_ReplayPlan.call_end: the expect's line and the del's head that follow
        a deferred call's line in the writers; None when the expect is no
        line (the encoder refused it), and then _steady_holds and
        _fq_start defer no call of the plan."""
        from cgtrace.state import _ReplayPlan
        plan = _ReplayPlan.__new__(_ReplayPlan)
        plan.expect_line = '{"op": "expect", "action": "replay"}'
        self.assertEqual(plan.call_end(), '\n{"op": "expect", "action": "replay"}\n{"op": "del", "names": ["')
        plan.expect_line = {"op": "expect", "action": object()}
        self.assertIsNone(plan.call_end())


class SetArgsAtTest(unittest.TestCase):
    def test_the_head_of_a_template_is_set_args_head(self):
        """_ReplayPlan.set_args_at (the deferred fresh calls' writer): the
        args, head and set set_args gives, the head made of the
        template's parts (freshq._fq_line's pre and post) where the new
        name is written as it is, by set_args where it is not; the set of
        names made where asked (arg_set), for the args last set."""
        from cgtrace.state import _ReplayPlan
        names = ["param", "param_1", "x", "param_2"]
        i = 2
        pre = '{"op": "call", "fn": "f", "args": ["' + "".join(n + '", "' for n in names[:i])
        post = "".join('", "' + n for n in names[i + 1:]) + '"], "out": ["'
        for name in ("in_7", "in_12345", "in_\u00e9", 'in_"q', "in_\\", "in_\n"):
            with self.subTest(name=name):
                args = names[:]
                args[i] = name
                got, want = (_ReplayPlan.__new__(_ReplayPlan) for _ in range(2))
                got.fn_json = want.fn_json = '"f"'
                got.set_args(["old"])
                self.assertEqual(got.arg_set(), frozenset(["old"]))
                got.set_args_at(args, i, pre, post)
                want.set_args(args)
                self.assertEqual((got.args, got.head), (want.args, want.head))
                self.assertEqual(got.arg_set(), frozenset(args))
                self.assertIs(got.arg_set(), got.arg_set())
        # (the template's own head, for a plain name, the list's json)
        args = names[:]
        args[i] = "in_7"
        plan = _ReplayPlan.__new__(_ReplayPlan)
        plan.fn_json = '"f"'
        plan.set_args_at(args, i, pre, post)
        self.assertEqual(plan.head, '{"op": "call", "fn": "f", "args": ["param", "param_1", "in_7", "param_2"], '
                                    '"out": ["')
        # (a function whose name no template writes: no head, as set_args)
        plan.fn_json = None
        plan.set_args_at(args, i, pre, post)
        self.assertIsNone(plan.head)
        self.assertEqual(plan.args, args)


class BuildHereTest(unittest.TestCase):
    def test_the_recorder_uses_c_where_it_can_build(self):
        """Where a compiler and Python's headers are (this machine's CI,
        and a GPU host whose Triton builds its launchers), a recording
        takes the C checks, and says which it took."""
        if not _can_build():
            self.skipTest("no C compiler or no Python.h here")
        code = ("import sys; sys.path.insert(0, %r); import fake_torch as fake; saved = fake.install_fake_torch()\n"
                "import cgtrace, tempfile, os\n"
                "d = tempfile.mkdtemp()\n"
                "rec = cgtrace.Recorder(os.path.join(d, 't.cgt.jsonl'))\n"
                "print(rec.fast_why, type(rec._checks).__name__, rec._checks.__name__, type(rec.lock).__name__)\n"
                "with cgtrace.record(os.path.join(d, 'u.cgt.jsonl')) as r2:\n"
                "    s = r2.session\n"
                "    print(type(s._died).__name__, s._bind_all.__module__, s._forget_all.__module__,\n"
                "          s._name_maps()[8] is s._died)\n"
                % os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, CGTRACE_FAST="1")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        # (and the session's weak-reference callback, its bindings and
        # unbindings are the C ones, the maps binding with that callback)
        self.assertEqual(out.stdout.split(), ["None", "module", "_cgtrace_fastpath", "RLock", "Died", "_cgtrace_fastpath",
                                              "_cgtrace_fastpath", "True"])

    def test_the_module_is_named_by_its_flags_too(self):
        """A build with other compiler flags is another file in the cache:
        a recording never loads a module built with flags other than the
        ones it asks for (as with another source or Python)."""
        with mock.patch.object(P, "_CFLAGS", ("-O2",)):
            o2 = P.module_path()
            self.assertEqual(o2, P.module_path())
        with mock.patch.object(P, "_CFLAGS", ("-Os",)):
            os_ = P.module_path()
        self.assertNotEqual(o2, os_)
        self.assertEqual(os.path.dirname(o2), os.path.dirname(os_))


if __name__ == "__main__":
    unittest.main()
