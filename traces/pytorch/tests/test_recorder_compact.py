"""The compact queue (_fastpath.c's Compact): the lean fresh path's queued
calls kept as entries in C, made the _Queued objects they stand for only
when anything else looks (freshq._fq_sync). Each loop here is recorded
three ways, on a fresh stand-in each time: by default (the compact
queue), with CGTRACE_COMPACT=0 (a _Queued a call) and with
CGTRACE_DEFER=0 (the general path, the reference), and the three traces
must be the same line for line; each loop reaches one of the ways the
entries become objects (the queue's bound, a host read, two deaths at
once, an input passed again, a storage shared, a tree call that raises,
more calls than the array holds)."""

import os
import sys
import unittest
from types import SimpleNamespace
from unittest import mock

# (fake_torch first: it puts the recorder on sys.path)
from fake_torch import (each_way, FakeTorchTest, Storage, Tensor, _invocation, two_functions)

import cgtrace  # noqa: E402  (after fake_torch)
from cgtrace import fastpath  # noqa: E402
from cgtrace.state import _Entry  # noqa: E402


def _c_module():
    mod, why = fastpath.load()
    return mod if mod is not None and hasattr(mod, "Compact") else None


class CompactQueueTest(FakeTorchTest):

    def setUp(self):
        super().setUp()
        if _c_module() is None:
            self.skipTest("the C module is not built here")
        if os.environ.get("CGTRACE_COMPACT") == "0" or os.environ.get("CGTRACE_DEFER") == "0":
            self.skipTest("the compact queue turned off")

    def three_ways(self, body, calls=150, at_start=None, at_end=None):
        """body(mgr, f, g, w, i, keep) run for i in range(calls) inside a
        recording, three ways (module docstring); each way's trace lines
        and fresh-path calls. keep: a dict the body may hold tensors in
        across calls. self.seen: what the default recording's loop saw of
        the queue after each call. at_start(rec): before the loop;
        at_end(rec): after the recording, each way."""
        seen = []

        def loop(path):
            cgt, mgr, f, g = two_functions()
            w = Tensor([8, 8])
            keep = {}
            with cgtrace.record(path) as rec:
                if at_start is not None:
                    at_start(rec)
                for i in range(calls):
                    cgt.mark_step_begin()
                    _invocation()
                    body(mgr, f, g, w, i, keep)
                    if os.environ.get("CGTRACE_COMPACT") is None and os.environ.get("CGTRACE_DEFER") is None:
                        fq = rec._fq
                        seen.append((type(fq[-1]).__name__ if fq else None, len(fq),
                                          len(fq[-1]) if fq and type(fq[-1]).__name__ == "Compact" else 0,
                                          len(rec._fq_ids)))
                keep.clear()
            self.assertIsNone(rec.error)
            if at_end is not None:
                at_end(rec)
            with open(path) as fh:
                return rec.fresh_calls, fh.read().split("\n")[1:]

        got = each_way(self, loop, ({}, {"CGTRACE_COMPACT": "0"}, {"CGTRACE_DEFER": "0"}))
        self.seen = seen
        (took, default), (took0, nocompact), (took_general, general) = got
        self.assertGreater(took, calls // 2)
        self.assertEqual(took, took0)
        self.assertEqual(took_general, 0)
        self.assertEqual(len(default), len(general))
        for n, (a, b, c) in enumerate(zip(default, nocompact, general)):
            self.assertEqual(a, c, "line %d: the compact queue's, then the general path's" % n)
            self.assertEqual(b, c, "line %d: CGTRACE_COMPACT=0's, then the general path's" % n)
        return default

    def assert_compact_held(self, least):
        """Some call of the default recording left the queue as the
        Compact alone (its entries not objects, the maps empty but for a
        call kept from the last writing), holding at least `least`."""
        held = [n for kind, length, n, ids in self.seen if kind == "Compact" and length <= 2 and ids <= 1]
        self.assertTrue(held and max(held) >= least, self.seen[:80])

    def test_a_new_input_each_call_past_two_bounds(self):
        def body(mgr, f, g, w, i, keep):
            x = Tensor([16, 8])
            keep["y"], = mgr._run([w, x], f)

        self.three_ways(body)
        self.assert_compact_held(40)
        # (past the bound, the call kept from the writing is an object
        # before the Compact: the list is [kept, Compact])
        self.assertTrue(any(kind == "Compact" and length == 2 for kind, length, _, _ in self.seen))

    def test_a_host_read_every_fifth_call(self):
        def body(mgr, f, g, w, i, keep):
            x = Tensor([16, 8])
            keep["y"], = mgr._run([w, x], f)
            if i % 5 == 4:
                keep["y"].item()

        self.three_ways(body)
        self.assert_compact_held(3)

    def test_inputs_alive_two_calls_and_two_deaths_at_once(self):
        def body(mgr, f, g, w, i, keep):
            # (each input held one call more, so its death is the queue's
            # second last entry's; every 7th call drops two at once)
            x = Tensor([16, 8])
            keep["y"], = mgr._run([w, x], f)
            if i % 7 == 6:
                keep.clear()
            else:
                keep.pop(i - 2, None)
                keep[i] = x

        self.three_ways(body)
        self.assert_compact_held(4)

    def test_an_input_passed_again_and_a_storage_shared(self):
        def body(mgr, f, g, w, i, keep):
            x = keep.pop("x", None)
            if x is None or i % 9 not in (3, 6):
                x = Tensor([16, 8])
            elif i % 9 == 6:
                x = Tensor([16, 8], storage=x.untyped_storage())  # (the last input's storage, alive)
            keep["y"], = mgr._run([w, x], f)
            keep["x"] = x

        self.three_ways(body)
        self.assert_compact_held(2)

    def test_a_tree_call_that_raises_an_input_dying_in_it_and_another_function_between(self):
        def body(mgr, f, g, w, i, keep):
            if i % 31 == 30:
                mgr.fail.add(0)
                try:
                    mgr._run([w, Tensor([16, 8])], f)
                except RuntimeError:
                    pass
                mgr.fail.discard(0)
            elif i % 23 == 22:
                x = Tensor([16, 8])
                keep["z"], = mgr._run([w, x], g)
            elif i % 11 == 10:
                # (the input's only reference the list the tree empties:
                # it dies inside the tree's call, which the check after
                # the call sees, the pending call made an object)
                keep["y"], = mgr._run([w, Tensor([16, 8])], f)
            else:
                x = Tensor([16, 8])
                keep["y"], = mgr._run([w, x], f)

        self.three_ways(body)
        self.assert_compact_held(5)

    def test_names_a_loop_makes_taken_by_other_bases(self):
        # (tensors named as the loop's inputs will be, in_40 and in_41,
        # and one named as an output of the loop's will be, made by
        # Session._fresh for bases of their own (a module's parameter
        # named so): the writer passes over them as the general path
        # does, and takes in_proj and in_x_2 for none of its names)
        def at_start(rec):
            for base in ("in_40", "in_41", "in_proj", "in_x_2", "body_0_c90_0"):
                rec.session._fresh(base)

        def body(mgr, f, g, w, i, keep):
            x = Tensor([16, 8])
            keep["y"], = mgr._run([w, x], f)

        lines = self.three_ways(body, at_start=at_start)
        self.assert_compact_held(40)
        made = [ln for ln in lines if '"op": "tensor"' in ln]
        self.assertTrue(any('"in_42"' in ln for ln in made))
        self.assertFalse(any('"in_40"' in ln or '"in_41"' in ln for ln in made))
        self.assertTrue(any('"out": ["body_0_c90_0_1"]' in ln for ln in lines))

    def test_stale_keys_of_a_queued_input_go_as_the_general_path_leaves_them(self):
        # (keys of the session's maps a dead tensor left, planted for the
        # id and the view of a new input before its call, three times, one
        # of them past a bound: the general path's _bind overwrites them
        # and its _forget takes them, and the writer pops what the lean
        # call's check found; the maps of every way end alike, none of the
        # planted names left)
        recs = []
        planted = []

        def at_start(rec):
            recs.append(rec)

        def body(mgr, f, g, w, i, keep):
            x = Tensor([16, 8])
            if i in (10, 11, 70):
                session = recs[-1].session
                ghost = "ghost_%d" % i
                dead = SimpleNamespace(obj_ref=None)
                session.by_obj[id(x)] = ghost
                session.by_obj_entry[id(x)] = _Entry(ghost, dead, "tensor", 0)
                if i != 11:  # (the id's keys alone once)
                    vk = (x.untyped_storage()._cdata, 0, tuple(x.shape), tuple(x.stride()))
                    session.by_view[vk] = ghost
                planted.append(ghost)
            keep["y"], = mgr._run([w, x], f)

        maps = []

        def ends(rec):
            s = rec.session
            maps.append((sorted(s.by_obj.values()), sorted(e.name for e in s.by_obj_entry.values()),
                         sorted(s.by_view.values())))

        self.three_ways(body, at_start=at_start, at_end=ends)
        self.assert_compact_held(40)
        self.assertEqual(len(planted), 9)
        self.assertEqual(len(maps), 3)
        default, nocompact, general = maps
        self.assertEqual(default, general)
        self.assertEqual(nocompact, general)
        self.assertFalse([n for names in general for n in names if n.startswith("ghost_")], general)

    def test_an_input_whose_storage_key_is_no_address(self):
        # (a storage whose key is a negative int, as no address is: the
        # entry keeps keys as words, so its call is declined to the path
        # that keeps the int; the storage shared by the next call's input
        # and a host read between, which make the queue's objects, see it
        # as the general path does)
        def odd_storage(nbytes):
            st = Storage(nbytes)
            del Storage._live[st._cdata]
            st._cdata = -st._cdata
            Storage._live[st._cdata] = st
            return st

        def body(mgr, f, g, w, i, keep):
            if i % 10 == 7:
                x = Tensor([16, 8], storage=odd_storage(16 * 8 * 4))
            elif i % 10 == 8:
                x = Tensor([16, 8], storage=keep["x"].untyped_storage())
            else:
                x = Tensor([16, 8])
            keep["y"], = mgr._run([w, x], f)
            if i % 10 == 7:
                keep["y"].item()
            keep["x"] = x

        self.three_ways(body)
        self.assert_compact_held(5)

    def test_a_weight_replaced_at_its_own_address_and_pointer(self):
        # (the kept input's KeptSet, by address: every 20th call the weight
        # dies and a new one at the same data pointer (torch's caching
        # allocator hands a new parameter the dead one's block; here the
        # pointer is set, the stand-in's being its storage's address,
        # which the recorder's own objects may take between two ways) is
        # made where the stand-in's allocator most often puts it, at the
        # dead tensor's address: its death must decline the call, as the
        # weak reference's check did, or the trace would call the new
        # weight by the old one's name. Another function's call every 7th
        # call arms the queue again, on the same KeptSet while the weight
        # lives.)
        same_place, sets = [], []
        data_ptr = Tensor.data_ptr

        def fixed_ptr(t):
            return getattr(t, "fixed_ptr", None) or data_ptr(t)

        def body(mgr, f, g, w, i, keep):
            if i % 20 == 19:
                old = keep.pop("w")
                where, ptr = id(old), old.data_ptr()
                del old
                keep["w"] = Tensor([8, 8])
                keep["w"].fixed_ptr = ptr
                same_place.append(where == id(keep["w"]))
            wt = keep.setdefault("w", Tensor([8, 8]))
            x = Tensor([16, 8])
            keep["y"], = mgr._run([wt, x], f)
            if i % 7 == 6:
                keep["z"], = mgr._run([w, Tensor([16, 8])], g)
            if os.environ.get("CGTRACE_COMPACT") is None and os.environ.get("CGTRACE_DEFER") is None:
                memo = rec_of[-1]._kept_memo
                sets.append(memo[3] if memo is not None else None)

        rec_of = []
        with mock.patch.object(Tensor, "data_ptr", fixed_ptr):
            self.three_ways(body, calls=160, at_start=rec_of.append)
        if os.environ.get("PYTHONMALLOC") != "malloc":  # (ASan's quarantine hands no freed block out again)
            self.assertTrue(any(same_place), "no new weight took the dead one's address")
        made = [k for k in sets if k is not None]
        self.assertTrue(made and type(made[0]).__name__ == "KeptSet", sets[:20])
        # (a KeptSet a weight, not one an arming: some 27 armings, 9 weights)
        self.assertLessEqual(len(set(map(id, made))), 160 // 20 + 2)

    def test_more_calls_queued_than_the_array_holds(self):
        # (a bound past the Compact's 256 entries: the 257th call makes the
        # 256 before it objects, and the queue goes on)
        from cgtrace import hooks
        with mock.patch.object(hooks, "_FQ_BOUND", 400):
            def body(mgr, f, g, w, i, keep):
                x = Tensor([16, 8])
                keep["y"], = mgr._run([w, x], f)

            self.three_ways(body, calls=330)
        self.assert_compact_held(200)
        self.assertTrue(any(kind == "Compact" and length > 200 for kind, length, _, _ in self.seen))


if __name__ == "__main__":
    unittest.main()
