"""The user's source lines in the trace (issue 33 item 3): each call's
src is the line that called the compiled function, each def's src the
function's definition, a tensor's the call that first passed it, a read's
the line that read. The stand-in's "compiled function" is a Python
function calling the tree, as Dynamo runs a compiled function's code in
its own frame."""

import json
import linecache
import os
import sys
import unittest

import fake_torch as fake  # (puts the recorder on sys.path)

import cgtrace  # noqa: E402
from cgtrace.facts import _make_src  # noqa: E402

MGR = FID = None


def model(x):
    """The compiled function: its frame calls the tree."""
    return MGR._run([W, x], FID)


W = None


def line_of(text):
    """The line of this file holding text (once)."""
    here = os.path.abspath(__file__)
    got = [i for i, line in enumerate(linecache.getlines(here), start=1) if text in line]
    assert len(got) == 1, (text, got)
    return got[0]


class SrcTest(fake.FakeTorchTest):
    def setUp(self):
        super().setUp()
        global MGR, FID, W
        MGR = fake.CUDAGraphTreeManager()
        MGR.cache_replays = True
        FID = MGR.add(0, static=[0])
        MGR.models[0] = lambda ins: [fake.Tensor([2, 4])]
        W = fake.Tensor([4, 4])

    def record(self, defer=True):
        from unittest import mock
        path = os.path.join(self.dir.name, "src%d.cgt.jsonl" % defer)
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        with mock.patch.object(cgtrace.Recorder, "_defer", defer):
            with cgtrace.record(path) as rec:
                x = fake.Tensor([2, 4])
                for i in range(12):
                    cgt.mark_step_begin()
                    fake._invocation()
                    if i == 6:
                        x = fake.Tensor([2, 4])
                    out, = model(x)  # the training step's line
                    if i == 3:
                        out.item()  # the read's line
        self.assertIsNone(rec.error)
        with open(path) as fh:
            return [json.loads(x) for x in fh][1:], rec

    def test_srcs_name_the_users_lines(self):
        recs, rec = self.record()
        self.assertGreater(rec.short_calls, 4)  # deferred replays among them
        here = os.path.abspath(__file__)
        step = {"file": here, "line": line_of("out, = model" + "(x)"), "fn": "record"}
        calls = [r for r in recs if r["op"] == "call"]
        self.assertEqual(len(calls), 12)
        for c in calls:
            self.assertEqual(c.get("src"), step)
        (d,) = [r for r in recs if r["op"] == "def"]
        self.assertEqual(d["src"], {"file": here, "line": model.__code__.co_firstlineno, "fn": "model"})
        for r in recs:
            if r["op"] in ("tensor", "param"):
                self.assertEqual(r["src"], step, r)
        (read,) = [r for r in recs if r["op"] == "read"]
        self.assertEqual(read["src"], {"file": here, "line": line_of("out.item" + "()"), "fn": "record"})

    def test_a_library_module_compiled_whole(self):
        # torch.compile of one of torch's own modules (nn.Sequential): the
        # compiled function's frame is the library's (its forward), which
        # Dynamo's transformed code marks (it calls the graph through a
        # global __compiled_fn_*): the def's src is that forward, the
        # module's class names the function, and the call's src is the
        # program's line, a loop at a module's top level among them; the
        # new-input loop then takes the fresh path. Without the mark the
        # library's frame is skipped: the program's top level taken for
        # the function (on the GPU its calls had no src then, and took no
        # fresh path: docs/gpu-runs/2026-12-05-h200.md, run 21).
        lib = "/nonexistent/fake-torch/torch/nn/modules/container.py"  # (under the stand-in's torch)
        for marked in (True, False):
            with self.subTest(marked=marked):
                self.tearDown()
                self.setUp()
                ns = {"MGR": MGR, "FID": FID, "W": W, "__compiled_fn_7": None}
                # (forward made outside the class: a name in a class body
                # would be mangled, where Dynamo's bytecode names the
                # global as it is)
                src = ("def forward(self, x):\n"
                       "    %s\n"
                       "    return MGR._run([W, x], FID)\n"
                       "class Sequential(Module):\n"
                       "    forward = forward\n"
                       "    def named_parameters(self):\n"
                       "        return [('0.weight', W)]\n"
                       "    def named_buffers(self):\n"
                       "        return []\n") % ("__compiled_fn_7" if marked else "pass")
                ns["Module"] = fake.sys.modules["torch"].nn.Module
                exec(compile(src, lib, "exec"), ns)
                seq = ns["Sequential"]()
                path = os.path.join(self.dir.name, "lib%d.cgt.jsonl" % marked)
                top = ("import sys\ncgt = sys.modules['torch._inductor.cudagraph_trees']\n"
                       "with cgtrace.record(PATH) as rec:\n"
                       "    for i in range(40):\n"
                       "        cgt.mark_step_begin()\n"
                       "        fake._invocation()\n"
                       "        x = fake.Tensor([16, 8])\n"  # (past SMALL_TENSOR: a template, not values)
                       "        out, = seq.forward(x)\n")
                prog = os.path.join(self.dir.name, "prog.py")  # (a program's top level)
                g = {"cgtrace": cgtrace, "fake": fake, "seq": seq, "PATH": path, "__name__": "__main__"}
                exec(compile(top, prog, "exec"), g)
                rec = g["rec"]
                self.assertIsNone(rec.error)
                with open(path) as fh:
                    recs = [json.loads(x) for x in fh][1:]
                calls = [r for r in recs if r["op"] == "call"]
                (d,) = [r for r in recs if r["op"] == "def"]
                if marked:
                    self.assertEqual(d["src"], {"file": lib, "line": 1, "fn": "forward"})
                    self.assertEqual(d["fn"], "Sequential_0")
                    (p,) = [r for r in recs if r["op"] == "param"]
                    self.assertEqual(p["name"], "param_0_weight")  # (its module path, learned from self)
                    for c in calls:
                        self.assertEqual(c.get("src"), {"file": prog, "line": 8, "fn": "<module>"})
                    self.assertGreater(rec.fresh_calls, 30)
                else:
                    self.assertEqual(d["src"], {"file": prog, "line": 1, "fn": "<module>"})
                    self.assertEqual(d["fn"], "fn_0")

    def test_deferred_replays_carry_the_general_paths_src(self):
        deferred, _ = fake.at_one_line(self.record, True)
        self.tearDown()
        self.setUp()
        general, _ = fake.at_one_line(self.record, False)
        self.assertEqual(deferred, general)

    def test_keeps_no_code_object_of_the_program(self):
        """Dynamo frees a compiled frame's globals (the compiled graph, and
        with it the graph's parameters and their grads in the tree's pool)
        when the frame's transformed code object dies; a recorder that kept
        the program's code objects alive changed what the program frees
        (issue 33 item 2). Here the program's functions are made at run
        time, called on every path (general, deferred, a new input each
        call), then dropped: their code must die while the recording goes
        on."""
        import gc
        import weakref
        from unittest import mock
        # (Inputs too large for their values to be recorded, so that a new
        # one each call takes the fresh path; the model's and the read's
        # lines split so that line_of finds the record test's lines alone,
        # as in the programs of the tests below.)
        program = (
            "def model(x):\n"
            "    return MGR._run([W, x], FID)\n"
            "def loop(cgt, fake, n, fresh):\n"
            "    x = fake.Tensor([64, 1024])\n"
            "    for i in range(n):\n"
            "        cgt.mark_step_begin()\n"
            "        fake._invocation()\n"
            "        if fresh:\n"
            "            x = fake.Tensor([64, 1024])\n"
            "        out, = mod" "el(x)\n"
            "        if i == 3:\n"
            "            out.it" "em()\n")
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        for defer in (True, False):
            with self.subTest(defer=defer), mock.patch.object(cgtrace.Recorder, "_defer", defer):
                path = os.path.join(self.dir.name, "code%d.cgt.jsonl" % defer)
                with cgtrace.record(path) as rec:
                    ns = {"MGR": MGR, "W": W, "FID": FID}
                    exec(compile(program, os.path.join(self.dir.name, "program%d.py" % defer), "exec"), ns)
                    codes = [weakref.ref(ns["model"].__code__), weakref.ref(ns["loop"].__code__)]
                    ns["loop"](cgt, fake, 20, False)
                    ns["loop"](cgt, fake, 20, True)
                    with rec.lock:
                        rec._settle()
                    ns = None
                    gc.collect()
                    self.assertEqual([c() for c in codes], [None, None])
                    # Every path ran: the replays short (deferred, or
                    # _fresh_before's), the new inputs through the fresh
                    # path, queued where calls are deferred.
                    self.assertGreater(rec.short_calls, 10)
                    self.assertGreater(rec.queued_fresh_calls if defer else rec.fresh_calls, 10)
                self.assertIsNone(rec.error)
                with open(path) as fh:
                    calls = [r for r in map(json.loads, fh) if r.get("op") == "call"]
                self.assertEqual(len(calls), 40)
                self.assertTrue(all(c["src"]["fn"] == "loop" for c in calls), calls[-1])

    def test_call_sites_are_found_by_their_instruction_offset(self):
        """The deferred path finds a call's src by its frame's instruction
        offset (Plan.src_of: f_lineno reads the code's line table from its
        start at every call), each offset looked up by its line once: two
        call sites on one line share its src, a site on another line has
        its own, and the trace is the general path's."""
        from unittest import mock
        program = (
            "def model(x):\n"
            "    return MGR._run([W, x], FID)\n"
            "def loop(cgt, fake, n):\n"
            "    x = fake.Tensor([2, 4])\n"
            "    for i in range(n):\n"
            "        cgt.mark_step_begin()\n"
            "        fake._invocation()\n"
            "        out, = mod" "el(x) if i % 3 else mod" "el(x)\n"
            "        if i % 4 == 0:\n"
            "            cgt.mark_step_begin()\n"
            "            out, = mod" "el(x)\n")
        import tempfile
        traces = {}
        here = tempfile.TemporaryDirectory()  # (the program's file: one name for both recordings)
        self.addCleanup(here.cleanup)
        for defer in (True, False):
            self.tearDown()  # (the stand-in's invocation count from 0 again)
            self.setUp()
            cgt = sys.modules["torch._inductor.cudagraph_trees"]
            with mock.patch.object(cgtrace.Recorder, "_defer", defer):
                path = os.path.join(self.dir.name, "sites.cgt.jsonl")
                with cgtrace.record(path) as rec:
                    ns = {"MGR": MGR, "W": W, "FID": FID}
                    exec(compile(program, os.path.join(here.name, "sites.py"), "exec"), ns)
                    ns["loop"](cgt, fake, 40)
                    with rec.lock:
                        fs = rec._fid_cache[id(FID)][3]
                        offsets = dict(fs.plan.src_lasti) if fs.plan is not None else {}
                self.assertIsNone(rec.error)
                with open(path) as fh:
                    traces[defer] = fh.read().split("\n")[1:]  # (the header names the file)
                if defer:
                    self.assertGreater(rec.short_calls, 20)
                    # Three call sites, on two lines: each site's offset
                    # once, the two on one line with one src.
                    self.assertEqual(len(offsets), 3)
                    self.assertEqual(sorted(s[0]["line"] for s in offsets.values()), [8, 8, 11])
                    self.assertEqual(len({id(s) for s in offsets.values()}), 2)
        self.assertEqual(traces[True], traces[False])
        lines = {json.loads(r)["src"]["line"] for r in traces[True] if r and json.loads(r).get("op") == "call"}
        self.assertEqual(lines, {8, 11})

    def test_src_the_format_cannot_hold_is_left_out(self):
        self.assertIsNone(_make_src("a\x1b]0;x\x07.py", 3, "f"))
        self.assertIsNone(_make_src("a.py", 3, "f\n"))
        self.assertIsNone(_make_src("a.py", 0, "f"))
        self.assertIsNone(_make_src("a.py", None, "f"))
        self.assertIsNone(_make_src("a" * 4097, 3, "f"))
        self.assertEqual(_make_src("a.py", 3, "f")[1], '{"file": "a.py", "line": 3, "fn": "f"}')
        self.assertEqual(_make_src("a.py", 3, "")[1], '{"file": "a.py", "line": 3}')


if __name__ == "__main__":
    unittest.main()
