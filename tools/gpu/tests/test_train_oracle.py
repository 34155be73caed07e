"""tools/gpu/train-oracle.py without a GPU: the pairing of backward calls
with forward calls, the differentiable rewrite of forward bodies (valid
source for torch-oracle2, values unchanged), the dispatch that runs every
trace through its loop, the action of a call that raised, the header's
knobs, and the wiring of its workers (run with
ORACLE2_SELFTEST, torch-oracle2's stand-in for PyTorch)."""
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

import gputool  # (tools/gpu/tests: the tool scripts as modules)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SCRIPT = gputool.path("train-oracle.py")
ORACLE2 = os.path.join(ROOT, "..", "shared", "tools", "torch-oracle2.py")
to = gputool.load("train-oracle.py")


def recs(*rs):
    return list(enumerate(rs, start=2))


FWD = {"op": "def", "fn": "mlp", "mode": "forward", "params": ["w", "x"],
       "body": [{"out": "r0", "k": "fill", "shape": [2, 2], "value": 1},
                {"out": "r1", "k": "add", "a": "x", "b": 2},
                {"out": "r2", "k": "view", "a": "x", "shape": [4]}],
       "returns": ["r0", "r1", "r2", "w"]}
BWD = {"op": "def", "fn": "mlp_bwd", "mode": "backward", "params": ["tangents_1"],
       "body": [{"out": "r0", "k": "add", "a": "tangents_1", "b": 1}], "returns": ["r0"]}


class PlanTest(unittest.TestCase):
    def test_backwards_pair_with_latest_pending_forward(self):
        trace = recs(FWD, BWD,
                     {"op": "param", "name": "w", "shape": [2, 2], "init": "zeros"},
                     {"op": "tensor", "name": "x", "shape": [2, 2], "init": "zeros"},
                     {"op": "call", "fn": "mlp", "args": ["w", "x"]},          # 6
                     {"op": "call", "fn": "mlp", "args": ["w", "x"]},          # 7
                     {"op": "call", "fn": "mlp_bwd", "args": ["x"]},           # 8: the second forward's
                     {"op": "call", "fn": "mlp_bwd", "args": ["x"]},           # 9: the first's
                     {"op": "call", "fn": "mlp_bwd", "args": ["x"]})           # 10: none left
        pairs, unpaired, grad = to.plan(trace)
        self.assertEqual(pairs, {8: 7, 9: 6})
        self.assertEqual(unpaired, [10])
        self.assertEqual(grad, {"w"})
        self.assertTrue(to.is_training(trace))
        self.assertFalse(to.is_training(recs({"op": "def", "fn": "f", "params": [], "body": [], "returns": []})))


class DifferentiableTest(unittest.TestCase):
    def test_fresh_outputs_depend_on_inputs(self):
        d = to.differentiable_def(FWD)
        self.assertEqual(d["returns"], FWD["returns"])
        made = {st["out"]: st for st in d["body"]}
        # r0 and r1 now add 0 * (sum w + sum x); the view and the param stay aliases
        self.assertEqual(made["r0"]["k"], "add")
        self.assertEqual(made[made["r0"]["a"]]["k"], "fill")
        self.assertEqual(made["r1"]["b"], made["r0"]["b"])
        zero = made[made["r0"]["b"]]
        self.assertEqual((zero["k"], zero["b"]), ("mul", 0))
        self.assertEqual(made["r2"], FWD["body"][2])
        self.assertEqual(FWD["body"][0]["out"], "r0")  # the input def is not changed

    def test_source_is_valid_for_oracle2(self):
        if not os.path.isfile(ORACLE2):
            self.skipTest("no ../shared/tools/torch-oracle2.py")
        o2 = to.load_oracle2(ORACLE2)
        _, src = o2.def_source(to.differentiable_def(FWD))
        compile(src, "<fwd>", "exec")
        self.assertIn("torch.mul(", src)


class DispatchTest(unittest.TestCase):
    def test_every_trace_runs_through_the_loop(self):
        ran = []
        o2 = types.SimpleNamespace(
            read_trace=lambda p: ({"name": p}, recs({"op": "def", "fn": "f", "params": [], "body": [],
                                                     "returns": []})),
            run_trace=lambda p, b: self.fail("an inference trace went to torch-oracle2's own loop"))
        saved = to.run_training
        to.run_training = lambda o, p, b, h, r: ran.append((p, h["name"])) or {"trace": p, "expect_failures": []}
        try:
            run = to.make_runner(o2)
            self.assertEqual(run("t.cgt.jsonl", None), {"trace": "t.cgt.jsonl", "expect_failures": []})
        finally:
            to.run_training = saved
        self.assertEqual(ran, [("t.cgt.jsonl", "t.cgt.jsonl")])


class RaisedTest(unittest.TestCase):
    def test_the_action_of_a_call_that_raised(self):
        # cgtrace's rule: the last entry point entered; eager inside run
        # before any; none when the call never reached the tree.
        self.assertEqual(to.raised_action(["warmup"], True), "warmup")
        self.assertEqual(to.raised_action(["replay", "record"], True), "record")
        self.assertEqual(to.raised_action([], True), "eager")
        self.assertIsNone(to.raised_action([], False))

    def test_the_entered_flag_wraps_run_once(self):
        class M:
            def run(self, x):
                return x + 1
        to._patch_entered(M)
        wrapped = M.run
        to._patch_entered(M)
        self.assertIs(M.run, wrapped)
        to.Entered.flag = False
        self.assertEqual(M().run(1), 2)
        self.assertTrue(to.Entered.flag)


class KnobTest(unittest.TestCase):
    def test_header_config_sets_pytorch_knobs(self):
        sets, notes = to.knob_settings({"config": {
            "support_input_mutation": False, "inline_inbuilt_nn_modules": False,
            "warmup_runs": 0, "max_tensor_bytes": 1 << 40, "cudagraph_or_error": True}})
        self.assertEqual(sets, [
            ("_inductor.config.triton", "cudagraph_or_error", True),
            ("_dynamo.config", "inline_inbuilt_nn_modules", False),
            ("_inductor.config.triton", "cudagraph_support_input_mutation", False),
            ("_inductor.config.triton", "skip_cudagraph_warmup", True),
        ])
        self.assertEqual(len(notes), 1)
        self.assertIn("max_tensor_bytes", notes[0])
        sets, notes = to.knob_settings({"config": {"warmup_runs": 2}})
        self.assertEqual(sets, [])
        self.assertIn("warmup_runs=2", notes[0])
        self.assertEqual(to.knob_settings({}), ([], []))


class WiringTest(unittest.TestCase):
    def test_workers_run_this_script_with_the_same_oracle2(self):
        if not os.path.isfile(ORACLE2):
            self.skipTest("no ../shared/tools/torch-oracle2.py")
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i in range(3):
                p = os.path.join(d, "t%d.cgt.jsonl" % i)
                with open(p, "w") as fh:
                    fh.write(json.dumps({"cgtviz": 1, "name": "t%d" % i}) + "\n")
                    fh.write(json.dumps(FWD) + "\n")
                paths.append(p)
            env = dict(os.environ, ORACLE2_SELFTEST="1")
            env.pop("TORCH_ORACLE2", None)
            out = subprocess.run([sys.executable, SCRIPT, "--oracle2", ORACLE2, "--jobs", "2"] + paths,
                                 capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            got = [json.loads(line) for line in out.stdout.splitlines()]
            self.assertEqual([g["trace"] for g in got], paths)
            self.assertEqual([g["torch"] for g in got], ["selftest"] * 3)

    def test_missing_oracle2_is_named(self):
        saved_root, saved_env = to.ROOT, os.environ.pop("TORCH_ORACLE2", None)
        # A checkout folder inside an empty one: neither it nor its parent
        # holds a shared/ (a shared/ beside the system's temp folder must
        # not count).
        outer = tempfile.mkdtemp()
        to.ROOT = os.path.join(outer, "checkout")
        os.mkdir(to.ROOT)
        try:
            with self.assertRaisesRegex(SystemExit, "torch-oracle2.py not found"):
                to.find_oracle2(["--oracle2", "/nonexistent/o2.py", "t.cgt.jsonl"])
            path, rest = to.find_oracle2(["--oracle2", SCRIPT, "t.cgt.jsonl"])
            self.assertEqual((path, rest), (os.path.abspath(SCRIPT), ["t.cgt.jsonl"]))
        finally:
            os.rmdir(to.ROOT)
            os.rmdir(outer)
            to.ROOT = saved_root
            if saved_env is not None:
                os.environ["TORCH_ORACLE2"] = saved_env

if __name__ == "__main__":
    unittest.main()
