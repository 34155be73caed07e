"""A compiled call through the general path: the inputs named before the
tree's call (_before_call), the call run between the recorder's parts
(_record_call), and after it the outputs and PyTorch's decision written
(_general_after), or the last replay's records again (_fast_after), and
the plan a next replay may take (_make_plan)."""

import itertools
import operator
import weakref

from ._pycompat import op_call
from .deferred import _call_tail
from .errors import _error_text
from .facts import ptrs_of, same_ptr
from .jsonl import _names_json
from .liveness import _tree_stats
from .state import (_ENTRY_NAME, _FACT_OF, _NAME_OR_NONE, _NO_ENTRY, _OBJ_REF_OF, _PTR_OF, _ReplayPlan)

# tls.actions of a call that replayed one node and did nothing else.
_REPLAYED = ["replay"]
_NO_NAMES = {}  # (never written: what by_storage.get gives for a storage it lacks)


def _handed_out_as_is(e, o, w):
    """Whether output o, which the tree does not wrap (w None), is the
    object entry e names (not a call's output: a static input, as a
    training forward hands out a weight it saves for the backward) in the
    way _general_after keeps e's Fact for it: held, no tree wrapper."""
    f = e.fact
    return w is None and f.held and f.probe is not None and f.probe.tree_ref is None and f.obj_ref() is o


class _Calls:
    """Recorder's general path of a call."""

    def _on_run(self, orig, mgr, new_inputs, function_id):
        tls = self.tls
        if self._hot.off or getattr(tls, "depth", 0) > 0:  # (hot.off: Recorder._off, without its property)
            # _run re-entering itself (the roots restart) is one call; a
            # recording stopped by its own error only passes calls through.
            return orig(mgr, new_inputs, function_id)
        with self.lock:
            self._settle()
            tls.depth = 1
            tls.actions = []
            tls.node = None
            try:
                return self._record_call(orig, mgr, new_inputs, function_id)
            finally:
                tls.depth = 0
                tls.node = None
                if self.trace.out is not None:
                    self._flush()

    def _record_call(self, orig, mgr, new_inputs, function_id):
        """Runs the tree's call between the recorder's before and after
        parts. Whatever the recorder raises is its own failure (_fail): the
        program's call runs exactly once and its result or exception is
        the program's, untouched. (tls.actions, a new list per call, is
        left as the call made it: only a call reads it, after its own.)"""
        try:
            # A call on new tensors, its function's last one's otherwise
            # (fresh.py); else the general path.
            ctx = self._fresh_before(mgr, new_inputs, function_id) if self._fresh_path else None
        except Exception as e:
            self._fail("before a call", e)
            ctx = False
        if ctx is None:
            ctx = self._general_before(mgr, new_inputs, function_id)
        elif ctx is False:
            ctx = None
        try:
            out = orig(mgr, new_inputs, function_id)
        except BaseException as e:
            if ctx is not None and not self._hot.off:
                try:
                    self.session.end_call(ctx, list(self.tls.actions), self._node_keys(mgr),
                                          mgr.debug_checkpointing_counter, None,
                                          _error_text(e), mgr.device_index)
                except Exception as e2:
                    self._fail("after a call that raised", e2)
            raise
        if ctx is not None and not self._hot.off:
            try:
                self._after_call(ctx, ctx["fn"], mgr, out)
            except Exception as e:
                self._fail("after a call", e)
        return out

    def _after_call(self, ctx, fs, mgr, out):
        """The recorder's part after the tree's call of fs's function,
        whichever path took it before: the short one when the call is the
        plan's replay (_fast_after), else the general one and a new plan."""
        plan = fs.plan
        if plan is None or not self._fast or not self._fast_after(ctx, fs, plan, mgr, out):
            fs.plan = None
            fs.fresh_tok = None
            self._general_after(ctx, mgr, out)
            self._make_plan(ctx, fs, mgr, out)
        elif "fresh" in ctx:
            self._fresh_done(fs, ctx["fresh"])
        else:
            # (Set only while the function's calls take the fresh path:
            # the _run wrapper arms no steady replay then.)
            fs.fresh_tok = None

    def _general_before(self, mgr, new_inputs, function_id):
        """The general path's part before the tree's call: the call's src
        and _before_call. Returns its ctx, or None (the recorder failed)."""
        try:
            # Where in the program the call came from (its src, and its
            # function's def's): the tensors new to the trace are met there.
            backward = getattr(mgr.id_to_mode.get(function_id), "name", "") == "BACKWARD"
            src, def_src, at = self._call_srcs("backward" if backward else None)
            self.session.src = src
            ctx = self._before_call(mgr, new_inputs, function_id)
            self.session.src = None
            if ctx is not None:
                ctx["src"], ctx["def_src"], ctx["src_at"] = src, def_src, at
        except Exception as e:
            self.session.src = None
            self._fail("before a call", e)
            ctx = None
        return ctx

    def _before_call(self, mgr, new_inputs, function_id):
        # The steady call first: a defined function called through the same
        # manager, no step missed (then _check_manager and the catch-up
        # have nothing to do), its last call's inputs (the memo, below).
        # What is left of the general path is the knobs, the deaths and the
        # counts; anything else falls through to it, which then finds
        # nothing more to do for what was done here.
        got = self._fid_cache.get(id(function_id))
        caught = False  # the manager checked, the steps and knobs caught up, the memo not the inputs
        if got is not None and got[0] is function_id and got[1]() is mgr:
            fs = got[3]
            memo = fs.memo
            known = self._known_mgr.get(mgr.device_index)
            c = self._box.mark_step_counter
            # (What _check_manager would find nothing to do for: the
            # device's manager, no reset to 0.)
            if (memo is not None and known is not None and known() is mgr
                    and (c != 0 or self._mark_counter == 0)):
                if c != self._mark_counter:
                    self._catch_up_steps()
                self._knob_check(fs)
                session = self.session
                if (memo[2] == session.epoch and len(new_inputs) == len(memo[0])
                        and all(map(operator.is_, map(op_call, memo[0]), new_inputs))
                        and ptrs_of(self.torch.Tensor, new_inputs) == memo[4]):
                    # Session.begin_known_call, inline, for the memo's args
                    # (the list the memo's call shared, or equal to it).
                    session.flush_deaths()
                    fs.calls += 1
                    session.counts["calls"] += 1
                    args = memo[3]
                    last = fs.last_args
                    if last is not args:
                        if last is not None and last == args:
                            args = last
                        else:
                            fs.last_args = args
                    return {"fn": fs, "args": args, "invocation": self._gen.generation}
                # A loop's new input, say: what follows would check the
                # manager, catch up, find the function and look at the
                # knobs again, with nothing run since to change them, and
                # compare the memo again.
                caught = True
        if caught:
            info, fs = got[2], got[3]
        else:
            info, fs = self._find_fn(mgr, function_id)
        # A comprehension leaves no loop variable holding the last input
        # alive through the call (that would change what dies in it). Once
        # the function is defined, an input the trace names by its object (a
        # parameter, a tensor passed again) needs no Fact: its name is enough.
        if fs is not None and fs.defined:
            ctx, facts = self._name_inputs(fs, new_inputs, caught)
            if ctx is not None:
                return ctx
        else:
            Tensor = self.torch.Tensor
            facts = [self._fact_or_none(v) if isinstance(v, Tensor) else None for v in new_inputs]
        # Some input is new to the trace (a Fact, not a name): the static
        # ones get their module paths as hints. Dynamo bumps GenerationTracker.generation once per top-level
        # torch.compile'd frame invocation (OptimizeContext's on_enter ->
        # install_generation_tagging_init); resume functions after a graph
        # break run inside that invocation and see the same value, which is
        # what CUDAGraph Trees' get_curr_generation() falls back to.
        hints = None
        if not all(map(isinstance, facts, itertools.repeat(_NAME_OR_NONE))):
            hints = self._param_hints(new_inputs, info, facts)  # only tensors new to the trace need one
        ctx = self.session.begin_call(info, facts, hints,
                                      invocation=self._gen.generation)
        del facts
        return ctx

    def _find_fn(self, mgr, function_id):
        """The manager checked, the steps caught up, the function's
        (FnInfo, state or None) found, the knobs looked at: what a call
        that the steady start of _before_call did not take needs first."""
        self._check_manager(mgr)
        if self._box.mark_step_counter != self._mark_counter:
            self._catch_up_steps()
        # The function's state by the FunctionID object's identity (the
        # tree passes the same one at every call), weakly held, so no
        # key is built and hashed per call.
        got = self._fid_cache.get(id(function_id))
        if got is not None and got[0] is function_id and got[1]() is mgr:
            info, fs = got[2], got[3]
        else:
            info, fs = self._fn_info(mgr, function_id)
            if fs is not None:
                # The FunctionID itself, held: torch 2.11's is a frozen
                # dataclass with slots, which no weak reference can
                # point at, and it holds an int, so holding it keeps
                # nothing else alive (and its id() is not given to
                # another meanwhile). The manager weakly: a strong
                # reference would keep its graphs and pool alive.
                self._fid_cache[id(function_id)] = (function_id, weakref.ref(mgr), info, fs)
        self._knob_check(fs)
        return info, fs

    def _name_inputs(self, fs, new_inputs, caught):
        """The inputs of a call of a defined function, named: (the call's
        ctx, None) when every tensor input has a name the trace gave it
        (a steady call: the memo is set for the next), else (None, facts
        by position: a name, a Fact for a tensor new to the trace, or
        None). caught: the memo was compared already (_before_call)."""
        Tensor = self.torch.Tensor
        known = self.session.by_obj_entry.get
        # The steadiest case: the inputs are the last call's tensors, in
        # order (fs.memo: their weak references, the entries that named
        # them, the session's epoch then, their names), and no name was
        # bound, unbound or (one of these) renamed since (the epoch is
        # the same): then they have the same names. Checked by map,
        # without a Python step per input (a model's parameters are
        # hundreds of inputs): each reference still gives its input.
        memo = fs.memo
        # The data pointers too (one C-level pass): `param.data = new`
        # keeps the object and moves its data, which is a new tensor.
        if (not caught and memo is not None and memo[2] == self.session.epoch
                and len(new_inputs) == len(memo[0])
                and all(map(operator.is_, map(op_call, memo[0]), new_inputs))
                and ptrs_of(Tensor, new_inputs) == memo[4]):
            return self.session.begin_known_call(fs, memo[3], self._gen.generation), None
        # Each input the trace names by its object keeps that name; the
        # others get a Fact. By position, first against the entries that
        # named the last call's inputs (fs.last_entries), in C-level
        # passes: a loop over a data loader's batches calls with the
        # same parameters (hundreds, in a real model) and one new input.
        # Then one by one, for every position those did not name.
        n = len(new_inputs)
        facts = ptrs = None
        cand = fs.last_entries if self._by_last_entries else None
        if cand is not None and len(cand) == n:
            try:
                ptrs = list(map(Tensor.data_ptr, new_inputs))
                cf = list(map(_FACT_OF, cand))
                hits = list(map(operator.and_, map(operator.and_,
                                                   map(operator.is_, map(known, map(id, new_inputs)), cand),
                                                   map(operator.is_, map(op_call, map(_OBJ_REF_OF, cf)),
                                                       new_inputs)),
                                map(operator.eq, ptrs, map(_PTR_OF, cf))))
            except Exception:  # (an input that is no tensor, or has no storage: one by one)
                hits = ptrs = None
            cf = None
            if hits is not None:
                todo = list(itertools.compress(range(n), map(operator.not_, hits)))
                facts = list(map(_ENTRY_NAME, cand))
                for i in todo:
                    facts[i] = None
        if facts is None:
            facts = [None] * n
            todo = range(n)
            cand = None
        last = list(cand) if cand is not None else [_NO_ENTRY] * n
        fresh = False
        tensors = True  # every input is a tensor
        left_out = False  # a tensor the format cannot hold
        for i in todo:
            v = new_inputs[i]
            if isinstance(v, Tensor):
                e = known(id(v))
                ref = e.fact.obj_ref if e is not None else None
                if ref is not None and ref() is v and (e.fact.ptr is None or same_ptr(v, e.fact.ptr)):
                    facts[i] = e.name
                    last[i] = e
                else:
                    facts[i] = self._fact_or_none(v)
                    fresh = fresh or facts[i] is not None
                    left_out = left_out or facts[i] is None
                    last[i] = _NO_ENTRY
            else:
                tensors = False
        fs.last_entries = last
        # No loop variable keeps the last input alive through the call
        # (that would change what dies in it).
        v = e = ref = None
        if not fresh and not left_out:
            # The steady case: every tensor input is one the trace names
            # by its object (a parameter, a tensor passed again). When
            # all of them are tensors, they are the memo the next call
            # compares first.
            ctx = self.session.begin_known_call(fs, [f for f in facts if f is not None],
                                                self._gen.generation)
            fs.memo = None
            if ptrs is None and tensors and n:
                ptrs = ptrs_of(Tensor, new_inputs)  # (None: one refused, no memo)
            if tensors and n and ptrs is not None:
                for e in last:
                    e.in_memo = True
                fs.memo = (tuple(e.fact.obj_ref for e in last), tuple(last), self.session.epoch, ctx["args"], ptrs)
                e = None
            return ctx, None
        if not fresh:
            # Every tensor input has its name (one the format cannot hold
            # was left out): nothing to name, no hints.
            return self.session.begin_known_call(fs, [f for f in facts if f is not None],
                                                 self._gen.generation), None
        return None, facts

    def _fast_after(self, ctx, fs, plan, mgr, out):
        """_general_after for a call that replayed the node of the plan, as
        the last call of its function did, handing out the same cached
        output objects, which the trace names as the plan says: it writes
        the same records in the same order (the call, its expect, the dels
        of dead inputs, the del of the outputs' last names) and leaves the
        same state, without building Facts, dicts or lists it does not
        keep. Or, the same replay handing out objects some of whose names
        died since (a backward's gradients the program let go, a forward's
        saved activations: rebound), what _general_after and end_call
        write and bind for them, the plan's Facts bound again, and the
        plan made of them as _make_plan would make it; the same for a
        mixed plan's replay (plan.mixed: some outputs static inputs handed
        out as is, whose output names _bind_outputs binds and drops). A
        partial plan's replay (no entries) it never takes. Returns False,
        having changed nothing, when any of that does not hold.

        What it need not check: the manager and so the device (the caller
        found fs through the FunctionID's cache entry for this manager);
        that the node is not None (a replay noted one); plan.expect (the
        session's _expects never drops or replaces one)."""
        tls = self.tls
        node = tls.node
        entries = plan.entries
        if (tls.actions != _REPLAYED or node is not plan.node_ref() or type(out) is not list
                or len(out) != len(entries) or mgr.debug_checkpointing_counter != plan.ckpt):
            return False
        wrappers = node.outputs_weakrefs  # (the node the plan was made from has them)
        if len(wrappers) != len(out):
            return False
        session = self.session
        by_obj_entry = session.by_obj_entry
        by_storage = session.by_storage
        live = session.entries
        # What _general_after asks of each output before it keeps the
        # output's Fact, and _bind_outputs before it renames its entry.
        # Or, for some of them (rebound), that its entry was forgotten
        # since (it died: a backward's gradients the program let go, a
        # forward's saved activations once its backward ran) and nothing
        # else names the object or its view: then _general_after would
        # make a Fact equal to the plan's (the same object over the same
        # storage and data, judged by the same tree wrapper) and end_call
        # bind it anew; the plan's Fact is bound instead, the live outputs
        # renamed as end_call renames them, and the plan keeps the entries.
        rebound = False
        live_too = False  # (some outputs renamed, not only rebound)
        through = False  # (some outputs a static input handed out as is)
        for o, e, name, w in zip(out, entries, plan.names, wrappers):
            f = e.fact
            oid = id(o)
            if e.kind != "out":
                # A static input handed out as is (a plan.mixed one's):
                # _general_after keeps the Fact of the name its object has
                # (the parameter's), and _bind_outputs binds the output's
                # name to it and drops it at once.
                if (not _handed_out_as_is(e, o, w) or by_obj_entry.get(oid) is not e
                        or live.get(e.name) is not e):
                    return False
                through = True
                continue
            if f.obj_ref() is not o or f.probe.tree_ref is not w or f.held:
                return False
            now = by_obj_entry.get(oid)
            if (now is e and e.name is name and e.obj_id == oid and e.wr is None
                    and by_storage.get(f.storage, _NO_NAMES).get(name) is e):
                live_too = True
                continue
            if (now is None and live.get(name) is None and live.get(session.by_view.get(f.view_key)) is None
                    and f.ptr is not None and o.data_ptr() == f.ptr):
                rebound = True
                continue
            return False
        o = e = f = w = now = None  # no loop variable keeps an output alive past the call
        # end_call, from here on, for these outputs.
        outs = session._replay_names(plan, fs.calls)
        inv = ctx["invocation"]
        recs = self.trace.records
        args = ctx["args"]
        if args is not plan.args:
            plan.set_args(args)
        head = plan.head
        src = ctx.get("src")
        plan.see_src(ctx.get("src_at"), src)
        if head is not None:
            recs.append(head + '", "'.join(outs) + _call_tail(inv, src))
        else:
            call = {"op": "call", "fn": fs.name, "args": args, "out": outs}
            if inv is not None:
                call["invocation"] = int(inv)
            if src is not None:
                call["src"] = src[0]
            recs.append(call)
        counts = session.counts
        counts["replay"] += 1
        recs.append(plan.exp_line())  # (its line, as the deferred replays write it)
        if rebound or through:
            # end_call's rest for a known expect: the deaths, then the
            # outputs bound (the rebound ones anew: nothing names them; the
            # live ones renamed), as the general path's call leaves them;
            # then what _make_plan would make of them (the same node,
            # expect and outputs' Facts: the plan, with the entries and
            # names now).
            if session._watch or session._dead_objs:
                session._flush_dead(args)
            if not live_too and not through and len(set(map(id, out))) == len(out):
                # Every output rebound (a training step's, each of whose
                # names died since): what _bind_outputs does for objects
                # nothing names (the deaths since only forgot names),
                # each bound anew, none dropped or renamed.
                session._bind_many(outs, [e.fact for e in entries], "out")
            else:
                session._bind_outputs(outs, [e.fact for e in entries])
            now = tuple(map(by_obj_entry.get, map(id, out)))
            if all(e is f if f.kind != "out" else e is not None and e.kind == "out" and e.fact is f.fact
                   for e, f in zip(now, entries)):
                plan.entries = now
                plan.names = tuple(outs)
            else:  # (bound otherwise than by object: _make_plan would make no plan)
                fs.plan = None
            now = None
            self.short_calls += 1
            self.rebound_calls += 1
            self._tree_after(mgr, _REPLAYED, plan.ckpt)
            return True
        if session._dead_objs or not plan.arg_set().isdisjoint(session._watch):
            # (Otherwise _flush_dead has nothing to poll: no argument is.)
            epoch = session.epoch
            session._flush_dead(args)
            if session.epoch != epoch:
                # An input died in the call and was forgotten: the general
                # binding decides (the plan's entries may be among them).
                session._bind_outputs(outs, [e.fact for e in entries])
                self._tree_after(mgr, _REPLAYED, plan.ckpt)
                fs.plan = None
                if "fresh" in ctx:
                    # A loop whose new input only the tree's list held:
                    # the plan its next call's fresh path needs, as the
                    # general path's call would make it (else every other
                    # call is the general path's).
                    self._make_plan(ctx, fs, mgr, out)
                return True
        gone = plan.names
        if len(entries) == 1:
            session._rename_replayed(entries[0], outs[0])
        else:
            gone = [n for _, n in sorted((e.order, e.name) for e in entries)]
            for e, n in zip(entries, outs):
                session._rename_replayed(e, n)
            e = None
        counts["dels"] += len(gone)
        if plan.fn_json is not None:  # (the names were made from it: the template writes them)
            recs.append('{"op": "del", "names": ["' + '", "'.join(gone) + '"]}')
        else:
            recs.append({"op": "del", "names": list(gone)})
        plan.names = tuple(outs)
        self.short_calls += 1
        last = self._trees.get(plan.dev_key)
        if last is None or last["checkpoints"] != plan.ckpt:
            self._trees[plan.dev_key] = _tree_stats(mgr)
        return True

    def _tree_after(self, mgr, actions, ckpt):
        # Kept per call (the manager is gone by the time recording stops when
        # the program's compiled functions died first), but walked only when
        # the tree can have changed: a replay or warmup adds no graph node.
        dev = str(mgr.device_index)
        last = self._trees.get(dev)
        if "record" in actions or last is None or last["checkpoints"] != ckpt:
            self._trees[dev] = _tree_stats(mgr)

    def _make_plan(self, ctx, fs, mgr, out):
        """After a replay through the general path: the plan that lets the
        function's next call, if it is the same replay, take _fast_after
        (mixed, where some outputs are static inputs handed out as is);
        or, where an output is neither a cached output the tree wraps nor
        such an input, a partial plan (state._ReplayPlan.partial), which
        only the fresh path's checks before a call use."""
        tls = self.tls
        node = tls.node
        if (node is None or tls.actions != _REPLAYED or not fs.defined or not fs.out_dense
                or type(out) is not list or len(out) != len(fs.out_pos) or not out):
            return
        wrappers = getattr(node, "outputs_weakrefs", None)
        if wrappers is None or len(wrappers) != len(out):
            return
        session = self.session
        keys = self._node_keys(mgr)
        ckpt = mgr.debug_checkpointing_counter
        ekey = (tls.actions[-1], keys, ckpt, mgr.device_index)
        exp = session._expects.get(ekey)
        if exp is None:
            return
        entries, names = [], []
        for o, w in zip(out, wrappers):
            e = session.by_obj_entry.get(id(o))
            if e is None or e in entries:
                ok = False
            elif e.kind != "out":
                ok = _handed_out_as_is(e, o, w)  # (a mixed plan's)
            else:
                f = e.fact
                ok = f.probe is not None and f.obj_ref() is o and f.probe.tree_ref is w and w is not None and not f.held
            if not ok:
                # (An output the tree does not wrap, or named otherwise: a
                # partial plan, which keeps where the calls come from.)
                entries, names = [], []
                break
            entries.append(e)
            names.append(e.name)
        o = e = f = None
        if _names_json(names) is None:
            return
        try:
            fs.plan = _ReplayPlan(node, keys, ckpt, mgr.device_index, ekey, exp, tuple(entries),
                                  tuple(names), fs.name, ctx["args"])
        except TypeError:  # a node without weak references: no plan
            fs.plan = None
            return
        fs.plan.see_src(ctx.get("src_at"), ctx.get("src"))

    def _general_after(self, ctx, mgr, out):
        Tensor = self.torch.Tensor
        # The tree hands back a list; a model called directly (cudagraphify)
        # may return one tensor, which the tree takes as a single output.
        if out is None:
            seq = ()
        elif isinstance(out, Tensor) or not isinstance(out, (list, tuple)):
            seq = (out,)
        else:
            seq = out
        outs = []
        node = self.tls.node
        wrappers = getattr(node, "outputs_weakrefs", None) if node is not None else None
        if wrappers is not None and len(wrappers) != len(seq):
            wrappers = None
        known = self.session.by_obj_entry.get
        for i, o in enumerate(seq):
            if not isinstance(o, Tensor):
                outs.append(None)
                continue
            # The tree's own weakref for this output (aligned with the
            # outputs of a recorded or replayed node), for liveness.
            want = wrappers[i] if wrappers is not None else None
            # A tensor the trace names by this very object (a replay's cached
            # output, handed out again; an input returned as is) keeps its
            # Fact, which a new one would equal: the same object over the
            # same storage, judged by the same probe. PyTorch itself hands
            # the cached object out unchecked.
            e = known(id(o))
            f = e.fact if e is not None else None
            if (f is not None and f.probe is not None and f.obj_ref() is o
                    and f.probe.tree_ref is want and f.held is (want is None)):
                outs.append(f)
                continue
            f = self._fact_or_none(o)
            if f is not None and want is not None:
                f.probe.tree_ref = want
                f.held = False  # the tree's wrapper decides: polled at every event
            outs.append(f)
        e = f = o = None  # no loop variable keeps an output alive past the call
        actions = self.tls.actions
        ckpt = mgr.debug_checkpointing_counter
        # (end_call only reads actions; _on_run gives each call a new list.)
        self.session.end_call(ctx, actions, self._node_keys(mgr), ckpt, outs, None,
                              mgr.device_index)
        self._tree_after(mgr, actions, ckpt)
