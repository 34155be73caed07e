"""The deferred call on new inputs: a call _fresh_call (fresh.py) checked,
whose replay was its plan's, is queued (its new input's Fact, steps,
deaths, src) and written at the next other event (_settle), at a bound,
at exit, at a fatal signal or a failure, as the steady replays are
(deferred.py). The records and the session's state written then are
what _fresh_call would have left call by call; a new input that died
within the queue is never bound: its names, seed and counts are given,
and of its binding and forgetting only what they leave behind is done."""

import operator
import weakref

from .calls import _NO_NAMES, _REPLAYED
from .deferred import _call_tail
from .errors import _error_text
from .jsonl import _STEP, _names_json
from .liveness import _tree_stats
from .names import _add_del
from .state import _ENTRY_NAME, _NO_ENTRY, _Entry

# Deferred calls on new inputs a recording holds at most (the next one
# writes them): hooks._JOURNAL_BOUND's, so a program that dies loses no
# more of them than of the steady replays.
_FQ_BOUND = 32
_ORDER = operator.itemgetter(0)


class _Queued:
    """A deferred call on a new input: what its records and bindings need
    (written by _fq_write). gone: its input died and a later deferred
    call wrote its del (it is never bound)."""

    __slots__ = ("steps", "groups", "fact", "tmpl", "src", "inv", "oid", "wr", "gone", "name", "order")


class _FreshQueue:
    """Recorder's deferred calls on new inputs."""

    # The queue, the function its calls are of, and its call line's
    # parts around the new input's name (_fq_start).
    _fq = None
    _fq_fs = None
    _fq_line = None

    def _fq_start(self, fs, plan, tok, i, session):
        """Whether a call of fs's plan on a new input at position i may be
        deferred (the queue is empty): the trace written at the end or to
        a journal (a follower sees each call), one output, the call's line
        a template, the other inputs named by entries none of which is
        the plan's output (a recurrent state is renamed at every call) or
        polled (_fast_after polls them). What it finds holds while the
        queue does: nothing else happens meanwhile."""
        trace = self.trace
        if not self._defer or (trace.out is not None and trace.done is None) or len(plan.entries) != 1:
            return False
        if plan.fn_json is None or tok[7] not in ("in", "grad", "saved"):
            return False
        cand = tok[2]
        out = plan.entries[0]
        watch = session._watch
        for j, e in enumerate(cand):
            if j != i and (e is _NO_ENTRY or e is out or e.name in watch):
                return False
        names = list(map(_ENTRY_NAME, cand))
        names[i] = "x"
        if _names_json(names) is None:
            return False
        self._fq_fs = fs
        self._fq_line = ('{"op": "call", "fn": ' + plan.fn_json + ', "args": ["'
                         + "".join(n + '", "' for n in names[:i]),
                         "".join('", "' + n for n in names[i + 1:]) + '"], "out": ["', i, tok[7], names)
        return True

    def _fresh_deferred(self, orig_run, mgr, new_inputs, function_id, fs, plan, hot, session, got):
        """_fresh_call's call, deferred: what its write would do to the
        session is noted (_Queued), the deaths it consumes taken off
        _dead_objs, then the tree's call; a replay of the plan, as
        _fast_after checks it, with nothing dead since, is queued.
        Otherwise (or when the tree raised) the queue is written with
        this call's part before the tree's, and the call is ended as
        _fresh_call ends it."""
        c, i, fact, tmpl, groups, src, _ = got  # (no polled name dead: _fresh_call)
        got = None
        mc = hot.mark_counter
        fq = self._fq
        try:
            if not fq:
                # _settle's, as _on_run's call would do it (nothing is
                # deferred); while the queue holds nothing else is armed
                # or checked, so once is enough.
                hot.serial += 1
                hot.fid = hot.got = None
                hot.disarm()
            t = _Queued()
            t.steps = mc - c
            t.fact, t.tmpl, t.src = fact, tmpl, src
            t.inv = self._gen.generation
            v = new_inputs[i]
            t.oid = id(v)
            t.wr = weakref.ref(v, session._died)
            v = None
            t.gone = False
            t.groups = groups
            if groups is not None:
                # (A gone one stays in the maps by which the checks find
                # the queued inputs: they pass over it.)
                del session._dead_objs[:groups.pop(-1)]
                for items in groups.values():
                    for wr, x in items:
                        if type(x) is _Queued:
                            x.gone = True
                x = items = None
            hot.mark_counter = c
            self._fq_ids[t.oid] = t
            self._fq_wrs[id(t.wr)] = t
            self._fq_stor[fact.storage] = t
        except Exception as e:  # (the recorder's own failure: the call runs unrecorded, as _record_call's)
            v = None
            self._fail("before a call", e)
            return orig_run(mgr, new_inputs, function_id)
        fact = None
        tls = self.tls
        try:
            out = orig_run(mgr, new_inputs, function_id)
        except BaseException as e:
            if not hot.off:
                try:
                    ctx = self._fq_write(t)
                    session.end_call(ctx, list(tls.actions), self._node_keys(mgr), mgr.debug_checkpointing_counter,
                                     None, _error_text(e), mgr.device_index)
                except Exception as e2:
                    self._fail("after a call that raised", e2)
                self._flush()
            raise
        if hot.off:
            return out
        try:
            # What _fast_after asks of the call before its flush_dead: the
            # plan's node replayed and nothing else done, handing out the
            # plan's output object through the node's wrapper; and nothing
            # died (_flush_dead would poll). What it asks of the session
            # (the output's entry named as the plan says, over its
            # storage, polled) only at the queue's first call: nothing
            # changes it while the queue holds.
            node = tls.node
            ok = (tls.actions == _REPLAYED and node is not None and node is plan.node_ref() and type(out) is list
                  and len(out) == 1 and mgr.debug_checkpointing_counter == plan.ckpt and not session._dead_objs)
            if ok:
                w = node.outputs_weakrefs
                e = plan.entries[0]
                f = e.fact
                o = out[0]
                ok = len(w) == 1 and f.obj_ref() is o and f.probe.tree_ref is w[0]
                if ok and not fq:
                    name = plan.names[0]
                    oid = id(o)
                    ok = (session.by_obj_entry.get(oid) is e and e.name is name and not f.held and e.obj_id == oid
                          and e.wr is None and session.by_storage.get(f.storage, _NO_NAMES).get(name) is e)
                    if ok:
                        last = self._trees.get(plan.dev_key)
                        if last is None or last["checkpoints"] != plan.ckpt:
                            self._trees[plan.dev_key] = _tree_stats(mgr)
                o = e = f = w = None
            node = None
            if ok:
                fq.append(t)  # (counted when written: _fq_write)
                if len(fq) + self._unwritten > _FQ_BOUND:  # (with the calls _fresh_call wrote and holds)
                    self._fq_write()
                    self._flush()
                return out
            self._after_call(self._fq_write(t), fs, mgr, out)
        except Exception as e:
            self._fail("after a call", e)
        self._flush()
        return out

    def _fq_write(self, partial=None):
        """The deferred calls' records and bindings, in order, as
        _fresh_call would have written them one by one: each call's
        deaths and steps, its new tensor (bound, or, gone, only counted),
        its call, expect and the del of its output's last name; the
        output entry renamed once, to its last name, at the order its
        last rename would give it (nothing between these calls saw the
        names in between). partial: a call whose part before the tree's
        is written after them, its ctx returned (the tree raised, or did
        other than the queued calls' replay)."""
        q = self._fq[:]  # (in place: a failure meanwhile finds it empty)
        self._fq.clear()
        n = len(q) + (partial is not None)
        self.fresh_calls += n
        self.lean_fresh_calls += n
        self.short_calls += len(q)
        self.queued_fresh_calls += len(q)
        self._fq_ids.clear()
        self._fq_wrs.clear()
        self._fq_stor.clear()
        fs = self._fq_fs
        pre, post, i, base, names = self._fq_line
        session = self.session
        trace = self.trace
        recs = trace.records
        counts = session.counts
        plan = fs.plan
        prev = plan.names[0]
        used = session.names_used
        prefix, sfx = plan.prefix, plan.suffixes[0]
        exp = plan.exp_line() if q else None
        calls = fs.calls  # (each call's number, as _fresh_call_write counts it before the call)
        for t in q:
            self._fq_before(t, session, trace, counts, base)
            calls += 1
            out = prefix + str(calls) + sfx  # (_replay_names', for one output)
            if out in used:
                out = session._fresh(out)
            else:
                used.add(out)
            recs.append(pre + t.name + post + out + _call_tail(t.inv, t.src))
            recs.append(exp)
            session.order += 1
            recs.append('{"op": "del", "names": ["' + prev + '"]}')
            prev = out
        if q:
            # (The counts of the calls' records, once: nothing between
            # reads them.)
            k = len(q)
            fs.calls = calls
            counts["calls"] += k
            counts["tensors"] += k
            counts["replay"] += k
            counts["dels"] += k
            counts["steps"] += sum(t.steps for t in q)
            e = plan.entries[0]
            if e.in_memo:  # (each rename moves the epoch: _rename_replayed moves it once)
                session.epoch += k - 1
            session._rename_replayed(e, prev, session.order)
            plan.names = (prev,)
            args = names[:]
            args[i] = q[-1].name
            plan.set_args(args)
            tok = fs.fresh_tok
            fs.fresh_tok = (session.epoch, session.order) + tok[2:]  # (_fresh_done's)
        if partial is None:
            return None
        self._fq_before(partial, session, trace, counts, base)
        fs.calls += 1
        counts["calls"] += 1
        counts["tensors"] += 1
        counts["steps"] += partial.steps
        args = names[:]
        args[i] = partial.name
        return {"fn": fs, "args": args, "invocation": partial.inv, "src": partial.src, "def_src": None,
                "src_at": (plan.src_d, plan.src_code), "fresh": base}

    def _fq_before(self, t, session, trace, counts, base):
        """A deferred call's part before the tree's, as _fresh_call_write
        writes it: its deaths and steps, its new tensor's record (t.name)
        and binding (_bind's, by the object's id and weak reference taken
        at the call; a gone one's only as far as its forgetting leaves
        it). The counts of its steps, tensor and call are the caller's."""
        recs = trace.records
        steps = t.steps
        groups = t.groups
        if groups is None:
            if steps:
                recs.extend([_STEP] * steps)
        else:
            for j in range(steps + 1):
                gone = groups.get(j)
                if gone is not None:
                    x = gone[0][1]
                    if len(gone) == 1 and type(x) is _Queued:
                        # (A loop's last input, gone: _fq_dels' part for it;
                        # its name is _fresh's, a line as _add_del's.)
                        session.epoch += 1
                        counts["dels"] += 1
                        recs.append('{"op": "del", "names": ["' + x.name + '"]}')
                    else:
                        self._fq_dels(gone, session, trace)
                    x = None
                if j < steps:
                    recs.append(_STEP)
        name = session._fresh(base)
        session.seed += 1
        tmpl = t.tmpl
        recs.append(tmpl[0] + name + tmpl[1] + str(session.seed) + tmpl[2])
        fact = t.fact
        if fact.device:
            trace.devices = max(trace.devices, fact.device + 1)
        session.order += 1
        session.epoch += 1
        t.name, t.order = name, session.order
        if t.gone:
            # _bind then _forget: of the maps only the stale keys _bind
            # overwrote are gone (nothing else bound the object's id or
            # the view between the two).
            session.by_view.pop(fact.view_key, None)
            session.by_obj.pop(t.oid, None)
            session.by_obj_entry.pop(t.oid, None)
        else:
            e = _Entry(name, fact, "tensor", session.order)
            session.entries[name] = e
            session.by_storage.setdefault(fact.storage, {})[name] = e
            session.by_obj[t.oid] = name
            session.by_obj_entry[t.oid] = e
            e.obj_id = t.oid
            session.by_view[fact.view_key] = name
            e.wr = t.wr
            session._held_wr[id(t.wr)] = name

    def _fq_dels(self, gone, session, trace):
        """The del of the names whose objects died before a deferred call,
        as _emit_dels writes it (binding order; a named tensor's entry
        forgotten, a gone input's forgetting moving the epoch)."""
        held = session._held_wr
        dead = []
        for wr, x in gone:
            if type(x) is _Queued:
                dead.append((x.order, x.name, None))
            else:
                held.pop(id(wr), None)
                x.wr = None
                dead.append((x.order, x.name, x))
        if len(dead) > 1:
            dead.sort(key=_ORDER)
        names = [n for _, n, _ in dead]
        for _, n, x in dead:
            if x is None:
                session.epoch += 1
            else:
                session._forget(n)
        session.counts["dels"] += len(names)
        _add_del(trace, names)
