"""Shapes and bodies (cgtrace/shapes.py): names and shapes the format
accepts, and function bodies synthesised from what the calls showed."""

import os
import sys
import unittest

# CGTRACE_TEST_INSTALLED=1 tests the installed package (tests/venv_check.sh)
# instead of the folder beside these tests.
if os.environ.get("CGTRACE_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cgtrace import OutSpec, check_body, fit_shape, sanitize, synth_def  # noqa: E402


class ShapeTest(unittest.TestCase):
    def test_fit_shape(self):
        self.assertEqual(fit_shape([2, 3, 4, 5]), [2, 3, 4, 5])
        self.assertEqual(fit_shape([2, 3, 4, 5, 6]), [2, 3, 4, 5, 6])
        self.assertEqual(fit_shape([1] * 8), [1] * 8)
        self.assertEqual(fit_shape([2, 3, 1, 1, 1, 1, 1, 1, 4, 5]), [6, 1, 1, 1, 1, 1, 4, 5])
        self.assertEqual(fit_shape([]), [])

    def test_sanitize(self):
        self.assertEqual(sanitize("fc1.weight", "p"), "fc1_weight")
        self.assertEqual(sanitize("_", "p"), "p")
        self.assertEqual(sanitize("0abc", "p"), "p_0abc")
        self.assertEqual(sanitize(None, "fn"), "fn")


class SynthTest(unittest.TestCase):
    def test_fresh_outputs_depend_on_same_shape_input(self):
        d = synth_def("foo_0", "inference", ["x"], [[4]], [OutSpec([4]), OutSpec([2, 2])])
        self.assertEqual(d["body"], [{"out": "r0", "k": "add", "a": "x", "b": 1},
                                     {"out": "r1", "k": "fill", "shape": [2, 2], "value": 2}])
        self.assertEqual(d["returns"], ["r0", "r1"])
        self.assertEqual(d["mode"], "inference")

    def test_alias_of_input_returns_param(self):
        d = synth_def("f", "forward", ["w", "x"], [[4, 4], [4]],
                      [OutSpec([4], ("param", 1), exact=True)])
        # views alone would read as "nothing compiled": the [0] marker says a graph ran
        self.assertEqual(d["body"], [{"out": "launch", "k": "empty", "shape": [0]}])
        self.assertEqual(d["returns"], ["x"])

    def test_view_of_input_with_other_shape(self):
        d = synth_def("f", "inference", ["x"], [[2, 3]], [OutSpec([6], ("param", 0))])
        self.assertEqual(d["body"], [{"out": "r0", "k": "view", "a": "x", "shape": [6]}, {"out": "launch", "k": "empty", "shape": [0]}])

    def test_partial_alias_is_a_strided_view(self):
        d = synth_def("f", "inference", ["x"], [[8]], [OutSpec([4], ("param", 0))])
        # x[:4] of an [8]: the same storage, the first 4 elements
        self.assertEqual(d["body"], [{"out": "r0", "k": "view", "a": "x", "shape": [4], "strides": [1]}, {"out": "launch", "k": "empty", "shape": [0]}])

    def test_output_aliasing_output_repeats_name(self):
        d = synth_def("f", "inference", ["x"], [[4]],
                      [OutSpec([4]), OutSpec([4], ("output", 0), exact=True),
                       OutSpec([2, 2], ("output", 0))])
        self.assertEqual(d["returns"], ["r0", "r0", "r2"])
        self.assertEqual(d["body"][-1], {"out": "r2", "k": "view", "a": "r0", "shape": [2, 2]})

    def test_mutation_writes_into_param(self):
        d = synth_def("f", "inference", ["buf", "x"], [[4], [4]], [OutSpec([4])], mutated=[0])
        self.assertEqual(d["body"][0], {"out": "buf", "k": "add", "a": "buf", "b": 1})

    def test_many_dims_folded(self):
        d = synth_def("f", "inference", ["x"], [[1, 2, 3, 4, 5]], [OutSpec([1, 2, 3, 4, 5])])
        self.assertEqual(d["params"], ["x"])
        self.assertEqual(d["body"], [{"out": "r0", "k": "add", "a": "x", "b": 1}])

    def test_equal_outputs_stay_distinct(self):
        """PyTorch's compiler removes `x + 0` and merges equal expressions;
        a trace run under PyTorch must keep outputs apart as the program's
        were, so every synthesised output has its own constant."""
        d = synth_def("f", "inference", ["x"], [[4]], [OutSpec([4]), OutSpec([4]), OutSpec([2])])
        bs = [st.get("b", st.get("value")) for st in d["body"]]
        self.assertEqual(len(set(bs)), 3)
        self.assertNotIn(0, bs)

    def test_param_named_like_output_is_not_clobbered(self):
        d = synth_def("f", "inference", ["r0"], [[4]], [OutSpec([3])])
        self.assertEqual(d["body"][0]["out"], "r0_1")
        self.assertEqual(d["returns"], ["r0_1"])

    def test_check_body_refuses_bad_shapes(self):
        with self.assertRaisesRegex(ValueError, "does not fit"):
            check_body(["x", "y"], {"x": [4], "y": [3]}, [{"out": "z", "k": "add", "a": "x", "b": "y"}], ["z"])
        with self.assertRaisesRegex(ValueError, "element count"):
            check_body(["x"], {"x": [4]}, [{"out": "z", "k": "view", "a": "x", "shape": [5]}], ["z"])
        with self.assertRaisesRegex(ValueError, "not defined"):
            check_body(["x"], {"x": [4]}, [], ["q"])
        with self.assertRaisesRegex(ValueError, "writes"):
            check_body(["x"], {"x": [4]}, [{"out": "x", "k": "fill", "shape": [2], "value": 1}], [])
        env = check_body(["a", "b"], {"a": [2, 3], "b": [3, 5]},
                         [{"out": "c", "k": "matmul", "a": "a", "b": "b"},
                          {"out": "s", "k": "sum", "a": "c"}], ["c", "s"])
        self.assertEqual(env["c"], [2, 5])
        self.assertEqual(env["s"], [1])


if __name__ == "__main__":
    unittest.main()
