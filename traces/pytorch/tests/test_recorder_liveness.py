"""Liveness as the tree judges it (cgtrace/liveness.py): the probe of a
named tensor, and a forward's saved tensors, which the tree counts dead
while autograd still holds them."""

import sys
import unittest
import weakref

# (fake_torch first: it puts the recorder on sys.path)
from fake_torch import (CUDAGraphTreeManager, Storage, StorageWeakRef, Tensor, TraceFileTest, _invocation)

import cgtrace  # noqa: E402  (after fake_torch)


class ProbeTest(unittest.TestCase):
    """Liveness as the tree judges it: a cached replay output by the tree's
    own wrapper, anything else by its object, then its storage."""

    class Wrapper:
        def __init__(self):
            self.extra_ref_check = lambda: True
            self.dead = False

        def expired(self):
            return self.dead

    def test_cached_output_follows_tree_wrapper(self):
        t = Tensor([4])
        p = cgtrace._Probe(weakref.ref(t), StorageWeakRef(t.untyped_storage()))
        p.tree_ref = w = self.Wrapper()
        self.assertTrue(p.alive())
        w.dead = True  # the tree counts it dead although the object lives on in its cache
        self.assertFalse(p.alive())
        w.extra_ref_check = None  # un-cached (a checkpoint): the object decides
        self.assertTrue(p.alive())

    def test_storage_outlives_object(self):
        t = Tensor([4])
        keep = Tensor([4], storage=t.untyped_storage())  # a view, or autograd's saved copy
        p = cgtrace._Probe(weakref.ref(t), StorageWeakRef(t.untyped_storage()))
        del t
        self.assertTrue(p.alive())
        del keep
        self.assertFalse(p.alive())


class HostValuesTest(unittest.TestCase):
    """The recorder's read of a tensor's values goes to the host before
    anything else is done to it: a non-contiguous device tensor through a
    copy of the bytes it spans (torch_api.span_to_host), anything else
    through .cpu() first; no reshape or conversion on the device (each
    would allocate there: tools/gpu/host-values.py checks it on a GPU)."""

    class T:
        def __init__(self, log, name, is_cuda, contiguous, values=(1.0, 2.0)):
            self.log, self.name, self.is_cuda, self._c, self.values = log, name, is_cuda, contiguous, values

        def detach(self):
            return self

        def is_contiguous(self):
            return self._c

        def cpu(self):
            self.log.append((self.name, "cpu"))
            return HostValuesTest.T(self.log, "host", False, True, self.values)

        def reshape(self, *shape):
            self.log.append((self.name, "reshape"))
            return self

        def float(self):
            self.log.append((self.name, "float"))
            return self

        def tolist(self):
            return list(self.values)

    def test_copied_to_the_host_first(self):
        from unittest import mock
        for cuda, contiguous, want in ((True, True, [("dev", "cpu"), ("host", "reshape"), ("host", "float")]),
                                       (False, False, [("dev", "cpu"), ("host", "reshape"), ("host", "float")]),
                                       (True, False, [("dev", "span"), ("host", "reshape"), ("host", "float")])):
            with self.subTest(cuda=cuda, contiguous=contiguous):
                log = []
                t = self.T(log, "dev", cuda, contiguous)

                def span(x):
                    log.append((x.name, "span"))
                    return self.T(log, "host", False, False, x.values)

                with mock.patch.object(cgtrace.liveness.torch_api, "span_to_host", span):
                    self.assertEqual(cgtrace.liveness.host_values(t), [1.0, 2.0])
                self.assertEqual(log, want)


class AutogradSavedTest(TraceFileTest):
    """A forward's replay returns its saved tensors as cached outputs, which
    the tree counts dead as soon as the program holds no Python reference,
    while autograd keeps them for the backward (PyTorch's
    test_multi_dispatch_parent_node)."""

    def setUp(self):
        super().setUp()
        self.mgr = CUDAGraphTreeManager()
        self.mgr.cache_replays = True
        self.fw = self.mgr.add(0, mode="FORWARD")
        self.bw = self.mgr.add(1, mode="BACKWARD", static=[0])
        self.mgr.models[0] = lambda ins: [Tensor([4]), Tensor([4])]  # an output, a saved activation
        self.mgr.models[1] = lambda ins: [Tensor([4])]
        self.other = self.mgr.add(3)

    def test_dead_cached_output_handed_to_backward_is_saved(self):
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        with cgtrace.record(self.path) as rec:
            for i in range(4):
                cgt.mark_step_begin()
                _invocation()
                y, act = self.mgr._run([Tensor([4])], self.fw)
                # autograd keeps act (C++ side: no Python reference the
                # tree's refcount check sees); the program drops its own
                node = self.mgr.roots.get(self.fw, [None])[0]
                keep = node is not None and i >= 2
                if not keep:
                    autograd = act  # a recording's output: its storage is held
                del act
                # the program goes on (another compiled call): the tree
                # counts the replay's cached act dead by now
                _invocation()
                z, = self.mgr._run([y], self.other)
                # the backward gets the saved tensor back: on replays the
                # same object as the node's cached output
                act = node.cached_tensor_outputs[1] if keep else autograd
                autograd = None
                g, = self.mgr._run([act, Tensor([4])], self.bw)
                del y, z, g, act
        self.assertIsNone(rec.error)
        _, recs = self.records()
        saved = [r for r in recs if r["op"] == "saved"]
        self.assertEqual(len(saved), 2, [r for r in recs if r["op"] not in ("expect",)])
        outs = {o: r for r in recs if r["op"] == "call" for o in r.get("out", [])}
        for s in saved:
            # of: the forward's dead second output, deleted before the record
            fw = next(r["fn"] for r in recs if r["op"] == "def" and r["mode"] == "forward")
            self.assertEqual((outs[s["of"]]["fn"], outs[s["of"]]["out"].index(s["of"])), (fw, 1))
            i = recs.index(s)
            dels = [n for r in recs[:i] if r["op"] == "del" for n in r["names"]]
            self.assertIn(s["of"], dels)
            # the backward's first argument is the saved name, which dies after it
            call = next(r for r in recs[i:] if r["op"] == "call")
            self.assertEqual(call["args"][0], s["name"])
            later = [n for r in recs[recs.index(call):] if r["op"] == "del" for n in r["names"]]
            self.assertIn(s["name"], later)

    def test_defs_say_their_static_inputs(self):
        with cgtrace.record(self.path):
            for _ in range(3):
                _invocation()
                y, act = self.mgr._run([Tensor([4])], self.fw)
                g, = self.mgr._run([act, Tensor([4])], self.bw)
                del y, act, g
        _, recs = self.records()
        static = {r["fn"]: r.get("static") for r in recs if r["op"] == "def"}
        self.assertEqual(sorted(static.values()), [[], [0]])

    def test_replaced_param_data_comes_before_new_inputs(self):
        """`p.data = new; f(torch.rand(...))`: the new data was made first, so
        its record comes before the new input's, and the old data's del
        before the input (which may take its memory)."""
        fid = self.mgr.add(2, static=[1])
        self.mgr.models[2] = lambda ins: [Tensor([4])]
        w = Tensor([4])
        with cgtrace.record(self.path):
            for _ in range(3):
                _invocation()
                out, = self.mgr._run([Tensor([4]), w], fid)
                del out
                w._storage = Storage(16)  # w.data = new data
        _, recs = self.records()
        ops = [(r["op"], r.get("name") or r.get("names")) for r in recs if r["op"] in ("tensor", "param", "del")]
        params = [n for op, n in ops if op == "param"]
        for p in params[1:]:
            i = ops.index(("param", p))
            self.assertEqual(ops[i + 1][0], "del", ops)  # the old data's name
            self.assertEqual(ops[i + 2][0], "tensor", ops)  # then the call's new input


if __name__ == "__main__":
    unittest.main()
