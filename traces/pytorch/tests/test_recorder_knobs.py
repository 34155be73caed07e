"""The recorder's reading of PyTorch's knobs (cgtrace/knobs.py): each knob
probed through its _ConfigEntry, read only when a probe moved, and the
format's settings made of them; against the stand-in's config modules."""

import sys
import types
import unittest

# (fake_torch first: it puts the recorder on sys.path)
from fake_torch import (ConfigModule, _UNSET, install_fake_torch, remove_fake_torch)

import cgtrace  # noqa: E402  (after fake_torch)
from cgtrace import encode_record  # noqa: E402


class KnobsTest(unittest.TestCase):
    """PyTorch's settings are looked at at every call through probes of
    their _ConfigEntry (an attribute in 2.11, a ContextVar later), never
    through the config module's __getattr__, yet every change is seen."""

    def setUp(self):
        self.saved = install_fake_torch()

    def tearDown(self):
        remove_fake_torch(self.saved)

    def knobs(self, contextvar):
        ind = ConfigModule("torch._inductor.config", {
            "triton.skip_cudagraph_warmup": False, "triton.cudagraph_unexpected_rerecord_limit": 128,
            "triton.cudagraph_dynamic_shape_warn_limit": 8, "triton.force_cudagraph_sync": False})
        dyn = ConfigModule("torch._dynamo.config", {"recompile_limit": 8}, contextvar=contextvar)
        return ind, dyn, cgtrace._Knobs(ind, dyn)

    def test_probes_see_every_change(self):
        for contextvar in (False, True):
            with self.subTest(contextvar=contextvar):
                ind, dyn, k = self.knobs(contextvar)
                self.assertTrue(k.changed())  # the first time
                self.assertEqual(k.read(all_knobs=False)["recompile_limit"], 8)
                self.assertFalse(k.changed())
                dyn.recompile_limit = 3
                self.assertTrue(k.changed())
                self.assertEqual(k.read(all_knobs=False)["recompile_limit"], 3)
                self.assertFalse(k.changed())
                ind.triton.skip_cudagraph_warmup = True
                self.assertTrue(k.changed())
                self.assertIs(k.read(all_knobs=False)["triton.skip_cudagraph_warmup"], True)
                # a knob the format has no key for moves only the probes of all knobs
                self.assertTrue(k.changed(all_knobs=True))
                ind.triton.force_cudagraph_sync = True
                self.assertFalse(k.changed())
                self.assertTrue(k.changed(all_knobs=True))
                self.assertFalse(k.changed(all_knobs=True))
                dyn.made_later = 1  # a knob this torch lacked (only a stand-in makes one)
                self.assertFalse(k.changed())

    def test_probes_read_no_knob(self):
        ind, dyn, k = self.knobs(False)
        self.assertEqual(k.read_per_call, [])
        k.changed()
        reads = []
        real = ConfigModule.__getattr__
        ConfigModule.__getattr__ = lambda mod, name: reads.append(name) or real(mod, name)
        try:
            for _ in range(10):
                k.changed()
                k.changed(all_knobs=True)
        finally:
            ConfigModule.__getattr__ = real
        self.assertEqual(reads, [])

    def test_probes_of_slotted_entries(self):
        """An entry class with __slots__ (no instance __dict__) is probed the
        same way: its user_override, read by getattr, never the knob."""
        class SlottedEntry:
            __slots__ = ("default", "hide", "alias", "env_value_force", "env_value_default",
                         "justknob", "user_override")

            def __init__(self, default):
                self.default, self.hide, self.alias, self.justknob = default, False, None, None
                self.env_value_force = self.env_value_default = self.user_override = _UNSET

            def get(self):
                return self.user_override

            def set(self, value):
                self.user_override = value

        ind, dyn, _ = self.knobs(False)
        dyn._config["recompile_limit"] = SlottedEntry(8)
        k = cgtrace._Knobs(ind, dyn)
        k.changed()
        reads = []
        real = ConfigModule.__getattr__
        ConfigModule.__getattr__ = lambda mod, name: reads.append(name) or real(mod, name)
        try:
            self.assertFalse(k.changed())
            dyn.recompile_limit = 2
            self.assertTrue(k.changed())
            self.assertFalse(k.changed())
        finally:
            ConfigModule.__getattr__ = real
        self.assertEqual(reads, [])
        self.assertEqual(k.read(all_knobs=False)["recompile_limit"], 2)

    def test_alias_is_probed_at_its_target(self):
        """An aliased knob (Config(alias=...), as 2.11's cache_size_limit is
        of recompile_limit) keeps no value: its probe is its target's
        entry, so a set through either name is seen, without a read."""
        for contextvar in (False, True):
            with self.subTest(contextvar=contextvar):
                dyn = ConfigModule("torch._dynamo.config", {"recompile_limit": 8}, contextvar=contextvar)
                dyn.alias("old_limit", "torch._dynamo.config.recompile_limit")
                saved = sys.modules.get("torch._dynamo.config")
                sys.modules["torch._dynamo.config"] = dyn
                try:
                    probe = cgtrace._Knobs._probe(dyn, "old_limit", lambda: self.fail("read the knob"))
                    first = probe()
                    dyn.old_limit = 3
                    self.assertEqual(dyn.recompile_limit, 3)
                    moved = probe()
                    self.assertNotEqual(moved, first)
                    dyn.recompile_limit = 5
                    self.assertNotEqual(probe(), moved)
                    # a target this torch cannot resolve: the alias is read
                    dyn.alias("lost", "torch._nowhere.config.x")
                    getter = object()
                    self.assertIs(cgtrace._Knobs._probe(dyn, "lost", getter), getter)
                finally:
                    sys.modules["torch._dynamo.config"] = saved

    def test_config_of_another_shape_is_read(self):
        """A config that is not a ConfigModule (a plain module) is probed by
        reading its knobs: a change is still seen."""
        ind = types.ModuleType("torch._inductor.config")
        ind.triton = types.SimpleNamespace(skip_cudagraph_warmup=False)
        dyn = types.ModuleType("torch._dynamo.config")
        dyn.recompile_limit = 8
        k = cgtrace._Knobs(ind, dyn)
        # (what recorder-overhead.py reports: reads at every call, of the
        # knobs it has and of those it lacks, which read None)
        self.assertLessEqual({"recompile_limit", "triton.skip_cudagraph_warmup"}, set(k.read_per_call))
        k.changed()
        self.assertFalse(k.changed())
        ind.triton.skip_cudagraph_warmup = True
        dyn.recompile_limit = 2
        self.assertTrue(k.changed())
        self.assertEqual(cgtrace.settings_from_knobs(k.read(all_knobs=False)),
                         {"warmup_runs": 0, "recompile_limit": 2})



class SettingsTest(unittest.TestCase):
    def test_settings_from_knobs(self):
        cases = [
            ({}, {}),
            ({"triton.skip_cudagraph_warmup": True}, {"warmup_runs": 0}),
            ({"triton.skip_cudagraph_warmup": False, "triton.cudagraph_unexpected_rerecord_limit": 5,
              "inline_inbuilt_nn_modules": False},
             {"warmup_runs": 1, "rerecord_limit": 5, "inline_inbuilt_nn_modules": False}),
            ({"triton.cudagraph_unexpected_rerecord_limit": 5, "inline_inbuilt_nn_modules": True},
             {"rerecord_limit": cgtrace.UNBOUNDED, "inline_inbuilt_nn_modules": True}),
            ({"cache_size_limit": 4}, {"recompile_limit": 4}),
            ({"recompile_limit": 2, "cache_size_limit": 4}, {"recompile_limit": 2}),
            ({"triton.cudagraph_support_input_mutation": False, "automatic_dynamic_shapes": False,
              "assume_static_by_default": True},
             {"support_input_mutation": False, "automatic_dynamic_shapes": False,
              "assume_static_by_default": True}),
            ({"recompile_limit": True, "automatic_dynamic_shapes": 1}, {}),  # wrong types: left out
        ]
        for raw, want in cases:
            self.assertEqual(cgtrace.settings_from_knobs(raw), want, raw)

    def test_config_record_checked(self):
        self.assertEqual('{"op": "config", "warmup_runs": 0}',
                         encode_record({"op": "config", "warmup_runs": 0}))
        for bad in ({"warmup": 0}, {"warmup_runs": -1}, {"support_input_mutation": 1}, {}):
            with self.assertRaises(ValueError):
                encode_record(dict({"op": "config"}, **bad))
        with self.assertRaises(ValueError):
            cgtrace.encode_header({"cgtviz": 1, "name": "x", "config": {"rerecord_limit": "8"}})

if __name__ == "__main__":
    unittest.main()
