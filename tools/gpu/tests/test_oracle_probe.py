"""Tests of tools/gpu/oracle-probe.py that need no GPU and no torch: the
per-function code objects, and the probe wiring on a stand-in oracle."""
import os
import types
import unittest

import gputool  # (tools/gpu/tests: the tool scripts as modules)

probe_mod = gputool.load("oracle-probe.py")


def run_stmt(st, env, params=()):
    """A two-kernel stand-in for torch-oracle.py's run_stmt."""
    a = env[st["a"]]
    b = st.get("b", 0)
    return {"add": a + b, "mul": a * b}[st["k"]]


DEF_F = {"fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}
DEF_G = {"fn": "g", "params": ["x"], "body": [{"out": "y", "k": "mul", "a": "x", "b": 3}], "returns": ["y", "x"]}


class SeparateCodeTest(unittest.TestCase):
    def test_each_function_has_its_own_code_object(self):
        f = probe_mod.separate_code(probe_mod.function_body(run_stmt, DEF_F), "f")
        g = probe_mod.separate_code(probe_mod.function_body(run_stmt, DEF_G), "g")
        self.assertIsNot(f.__code__, g.__code__)
        self.assertEqual((f.__name__, f.__code__.co_name), ("f", "f"))
        self.assertEqual(g.__code__.co_name, "g")
        # Dynamo's CodeId is (file, first line, name): all three must not collide.
        self.assertNotEqual(f.__code__.co_firstlineno, g.__code__.co_firstlineno)

    def test_bodies_still_compute(self):
        f = probe_mod.separate_code(probe_mod.function_body(run_stmt, DEF_F), "f")
        g = probe_mod.separate_code(probe_mod.function_body(run_stmt, DEF_G), "g")
        self.assertEqual(f(4), (5,))
        self.assertEqual(g(2), (6, 2))


class Node:
    """Stands in for CUDAGraphNode: check_invariants returns (status, logger)."""

    def __init__(self, nid, ok):
        self.id = types.SimpleNamespace(id=nid)
        self.ok = ok
        self.static_input_idxs = [1, 0]
        self.cudagraph_managed_idxs = []

    def check_invariants(self, inputs):
        return ("SUCCESS" if self.ok else "StaticInputIdxMismatch", lambda: "")


class InstallTest(unittest.TestCase):
    def fake_oracle(self, manager_run):
        """A stand-in oracle whose torch.compile returns manager_run bound to
        the function compiled: it plays the tree manager for each call."""
        log = types.SimpleNamespace(actions=[])
        manager = types.SimpleNamespace(current_node=None)
        compiled = []

        def compile_(fn, mode):
            compiled.append(fn)
            return lambda *a: manager_run(log, manager, fn, *a)

        oracle = types.SimpleNamespace(
            torch=types.SimpleNamespace(compile=compile_),
            cgt=types.SimpleNamespace(CUDAGraphNode=Node),
            LOG=log, run_stmt=run_stmt, mgr=lambda: manager,
            fn_name=lambda n: "f", make_fn=lambda d: None)
        return oracle, compiled

    def setUp(self):
        saved = Node.check_invariants
        self.addCleanup(setattr, Node, "check_invariants", saved)

    def test_probe_records_checks_and_static_indices(self):
        def manager_run(log, manager, fn, *a):
            # Two candidates are checked, neither passes, the call records.
            Node.check_invariants(Node(3, ok=False), a)
            Node.check_invariants(Node(5, ok=False), a)
            log.actions.append("record")
            manager.current_node = Node(7, ok=True)
            return fn(*a)

        oracle, compiled = self.fake_oracle(manager_run)
        probe = probe_mod.Probe()
        probe_mod.install(oracle, probe, shared=False)
        call = oracle.make_fn(DEF_F)
        self.assertEqual(compiled[0].__code__.co_name, "f")
        self.assertEqual(call(1), (2,))
        self.assertEqual(len(probe.calls), 1)
        c = probe.calls[0]
        self.assertEqual(c["fn"], "f")
        self.assertEqual([(x["node"], x["status"]) for x in c["checks"]],
                         [(3, "StaticInputIdxMismatch"), (5, "StaticInputIdxMismatch")])
        self.assertEqual(c["recorded"], {"node": 7, "static_input_idxs": [0, 1], "cudagraph_managed_idxs": []})

    def test_a_replay_records_nothing(self):
        def manager_run(log, manager, fn, *a):
            Node.check_invariants(Node(3, ok=True), a)
            log.actions.append("replay")
            return fn(*a)

        oracle, _ = self.fake_oracle(manager_run)
        probe = probe_mod.Probe()
        probe_mod.install(oracle, probe, shared=False)
        oracle.make_fn(DEF_G)(2)
        self.assertEqual(probe.calls, [{"fn": "g", "checks": [{"node": 3, "fn": "f", "status": "SUCCESS"}]}])

    def test_shared_keeps_the_oracles_make_fn(self):
        oracle, compiled = self.fake_oracle(lambda *a: None)
        seen = []
        oracle.make_fn = lambda d: seen.append(d["fn"]) or (lambda *a: a)
        probe_mod.install(oracle, probe_mod.Probe(), shared=True)
        oracle.make_fn(DEF_G)
        self.assertEqual(seen, ["g"])
        self.assertEqual(compiled, [])


if __name__ == "__main__":
    unittest.main()


class LoadOracleTest(unittest.TestCase):
    def test_loaded_oracle_is_importable_by_name(self):
        # Dynamo imports a traced function's module by its __name__: the
        # oracle loaded from a path must be in sys.modules under it.
        import sys
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "torch-oracle.py")
            with open(path, "w") as f:
                f.write("def fn():\n    return __name__\n")
            mod = probe_mod.load_oracle(path)
            try:
                self.assertIs(sys.modules[mod.fn()], mod)
            finally:
                sys.modules.pop("torch_oracle", None)
