"""The deferred call on new inputs: a call _fresh_call (fresh.py) checked,
whose replay was its plan's, is queued (its new input's Fact, steps,
deaths, src) and written at the next other event (_settle), at a bound,
at exit, at a fatal signal or a failure, as the steady replays are
(deferred.py). The queue's next calls take the _run wrapper's lean
fresh path (_fresh_lean_run), armed by its first (_fq_arm); the C
Runner keeps the calls it queues as entries of a compact queue
(_fastpath.c's Compact, the queue's last item), made _Queued objects when
anything else looks (_fq_sync) and written as they are. The records and
the session's state written then are what _fresh_call would have left
call by call; a new input that died within the queue is never bound: its
names, seed and counts are given, and of its binding and forgetting only
what they leave behind is done."""

import operator
import weakref

from . import torch_api
from .calls import _NO_NAMES, _REPLAYED
from .errors import _error_text
from .fastpath import A_FS, _fq_read_lines
from .facts import held_fact
from .fresh import DECLINED
from .jsonl import _STEP, _names_json
from .liveness import NO_RULE, USE_COUNT, _Probe, _refcount_rule, _tree_stats
from .names import _add_del
from .state import _ENTRY_NAME, _NO_ENTRY, _Entry

# Deferred calls on new inputs a recording holds at most (the next one
# writes them): as many as the steady replays it may hold (the lean path
# writes them from hooks._JOURNAL_BOUND on, at its every 64th call), so a
# program that dies loses no more of them (and none that returned
# Recorder.JOURNAL_MS after the journal's last writing: a slow loop's).
# Written at 32, the queue cost a new-input loop 3.6 us of its mean call
# on an H200, a quarter of what recording added: each writing some 90 us,
# and the call after it some 20 us more, what the writing left in the
# caches. Much of that is the writing's whatever its calls, paid half as
# often at 64: 0.6 to 1.8 us less a call on an H100, four sets in the
# same rounds (BENCHMARKS.md, session 26). At 256 (which the time bound
# would allow) a call counts the same instructions and misses as at 64
# (session 33), but the writing's Python, its journal's hand-over to the
# writer thread and what the call after it pays are a writing's, not a
# call's: at 200 the bound's share of a loop call is 28% less on the
# stand-in (session 44), and a GPU host's loop (some 110 us a call)
# reaches Recorder.JOURNAL_MS first, at some 180 calls, so what a killed
# program loses is bounded by the time, as before. (Below the Compact's
# 256 entries, CQ_CAP, so a queue at its bound is never made objects.)
_FQ_BOUND = 200
_ORDER = operator.itemgetter(0)
_SPEC, _STEPS = operator.attrgetter("spec"), operator.attrgetter("steps")


def _probe_alive(alive, probe):
    """Whether alive is probe's own _Probe.alive (bound to it)."""
    return getattr(alive, "__self__", None) is probe and getattr(alive, "__func__", None) is _Probe.alive


class _Queued:
    """A deferred call on a new input: what its records and bindings need
    (written by _fq_write). gone: its input died and a later deferred
    call wrote its del (it is never bound). sref: its storage's weak
    reference (a later call's check asks whether it died with the
    object). A call the lean fresh path queued (_fresh_lean_run) has no
    Fact until one is asked for: its parts are kept (ptr, cd: its data
    pointer and storage; spec, what it shares with the queue's other
    inputs), and __getattr__ makes it."""

    __slots__ = ("steps", "groups", "fact", "tmpl", "src", "inv", "oid", "wr", "gone", "name", "order",
                 "sref", "ptr", "cd", "spec")

    def __getattr__(self, name):
        # Only an unset slot comes here: a lean call's fact. Most of a
        # loop's inputs die within the queue and are never bound (the
        # writer asks only their view key), so the call itself does not
        # pay for a Fact.
        if name != "fact":
            raise AttributeError(name)
        shape, stride, dev, dtype, numel, rec = self.spec
        # The object's weak reference without a callback, as _fact takes
        # it, made now (not at the call: a weak reference made and let go
        # at every call of a loop): a dead object's is wr, as dead.
        v = self.wr()
        ref = weakref.ref(v) if v is not None else self.wr
        v = None
        self.fact = fact = held_fact(ref, self.sref, rec, shape, dev, self.cd, 0, stride, dtype, numel, self.ptr)
        return fact


def _compact(q):
    """The compact queue standing as q's last item (_fastpath.c's Compact,
    while it holds calls), or None."""
    return q[-1] if q and type(q[-1]) is not _Queued else None


class _FreshQueue:
    """Recorder's deferred calls on new inputs."""

    # The lean fresh path (_fresh_lean_run): tests turn it off to compare
    # with _fresh_call's way to the queue.
    _fresh_armed = True
    # The queue, the function its calls are of, and its call line's
    # parts around the new input's name (_fq_start).
    _fq = None
    _fq_fs = None
    _fq_line = None
    # What the lean fresh path's checks read (fresh_queue's ctx), made
    # with it (_fresh_lean_run): the C Runner's too.
    _fq_ctx = None
    # The kept inputs' KeptSet and what it was made of (_kept_set's
    # memo); the C++ module's ptrs_are for it, where the _run wrapper
    # reads the pointers through that module (hooks).
    _kept_memo = None
    _ptrs_are = None

    def _fq_start(self, fs, plan, tok, i, session):
        """Whether a call of fs's plan on a new input at position i may be
        deferred (the queue is empty): the trace written at the end or to
        a journal (a follower sees each call), one output, the call's line
        a template, the other inputs named by entries none of which is
        the plan's output (a recurrent state is renamed at every call) or
        polled (_fast_after polls them). What it finds holds while the
        queue does: nothing else happens meanwhile."""
        trace = self.trace
        if (not self._defer or (trace.out is not None and trace.done is None) or len(plan.entries) != 1
                or plan.mixed):
            return False
        if plan.fn_json is None or plan.call_end() is None or tok[7] not in ("in", "grad", "saved"):
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
        c, i, fact, tmpl, groups, src, _, _ = got  # (no polled name dead, the short way: _fresh_call)
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
            t.sref = fact.probe.sref
            t.spec = None
            t.inv = self._gen.generation
            v = new_inputs[i]
            t.oid = id(v)
            t.wr = weakref.ref(v, session._died)
            # What the lean path armed at this call compares (_fq_arm):
            # the new input's parts torch alone knows, while it is here.
            raw = (type(v), v.dtype, v.untyped_storage().nbytes()) if hot.fql is None else None
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
            self._fq_raised(t, mgr, e)
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
                if len(fq) + self._hot.unwritten > _FQ_BOUND:  # (with the calls _fresh_call wrote and holds)
                    self._fq_write(keep_last=True)
                    self._flush(settle=False, handover=True)
                elif hot.journal_due():
                    self._flush()  # (the journal's calls waited long enough: Recorder.JOURNAL_MS)
                elif raw is not None:
                    self._fq_arm(function_id, mgr, fs, plan, t, raw, hot, session)
                return out
            self._after_call(self._fq_write(t), fs, mgr, out)
        except Exception as e:
            self._fail("after a call", e)
        self._flush()
        return out

    def _fq_arm(self, function_id, mgr, fs, plan, t, raw, hot, session):
        """Arms the _run wrapper's lean fresh path (_fresh_lean_run) for
        the queue's next calls, after its first (or a later one while it
        is not armed) joined it: what _fresh_call_check and
        _fresh_deferred find the same for every call of the queue (only
        another event changes it, and that writes the queue and disarms
        it), in one tuple, with what the next call's new input must
        match to be one of the same template, src and storage size as
        t's. A queue of one output whose entry has a tree probe."""
        e = plan.entries[0]
        probe = e.fact.probe
        tok = fs.fresh_tok
        got = self._fid_cache.get(id(function_id))
        if (not self._fresh_armed or probe is None or plan.src_code is None or plan.src_code() is None
                or tok is None or got is None or got[0] is not function_id or got[1]() is not mgr):
            return
        fact = t.fact
        cls, dt, nbytes = raw
        # (Lists: torch's C check of the pointers takes nothing else, and
        # reads them by position.)
        kept = list(tok[3])
        full = [None] * len(tok[2])
        for j, p in zip(kept, tok[5]):
            full[j] = p
        c = hot.mark_counter
        shape = tuple(fact.shape)
        spec = (shape, fact.stride, fact.device, fact.dtype, fact.storage_numel, self)
        # The polled names, each (its object's weak reference where it is
        # a cached output its tree's wrapper judges by refcount, else
        # None; whether that check counts c10's reference too; its
        # probe's alive): the count is looked at in place, as the steady
        # path's are, and only a count that does not say alive for sure,
        # or a name without one, asks the probe (the tree).
        # Where its alive is its probe's (_Probe.alive), two more ways
        # without that frame at every call: a name no tree wrapper judges
        # is alive while its object is (uses None: an output of the
        # warmup's, say); and a name judged by the queue's output's tree
        # wrapper (an earlier output over the same storage: the
        # recording's, whose object the program dropped) is alive while
        # the storage is in use, which the count of the cached output the
        # queue hands out says for sure as it says it for that output
        # (the wrapper's check reads that object's count), whatever its
        # own object: else a call of torch's wrapper at every call.
        out_ref = e.fact.obj_ref
        w = probe.tree_ref
        out_rule = _refcount_rule(w) if w is not None and out_ref is not None else NO_RULE
        polled = []
        for x in session._watch.values():
            f = x.fact
            p = f.probe
            if p is not None and _probe_alive(f.alive, p):
                if p.tree_ref is None:
                    polled.append((p.wr, None, f.alive))
                    continue
                if p.tree_ref is w and out_rule:
                    polled.append((out_ref, out_rule == USE_COUNT, f.alive))
                    continue
            rule = (_refcount_rule(p.tree_ref) if p is not None and p.tree_ref is not None
                    and f.obj_ref is not None else NO_RULE)
            polled.append((f.obj_ref if rule else None, rule == USE_COUNT, f.alive))
        p = w = None
        self._kept_memo = ks = self._kept_set(self._kept_memo, tok[4], tok[3], tok[5])
        hot.fql = (function_id, fs, plan, t.tmpl, t.src, got[1], c - (c & 63),
                   len(tok[2]), kept, tok[4] if ks is None else ks[3], tok[5], full, tok[6][0], cls, dt, shape,
                   fact.stride,
                   fact.device, nbytes, plan.src_d, plan.src_code, plan.src_lasti,
                   tuple(polled), plan.node_ref, plan.ckpt, e.fact.obj_ref, probe.tree_ref, spec)

    def _kept_set(self, got, refs, idx, ptrs):
        """What the lean paths compare a call's kept inputs with (refs,
        their weak references; idx, their positions; ptrs, their data
        pointers), as a memo (refs, idx, ptrs, a KeptSet of them) to keep
        where the C checks have a KeptSet (_fastpath.c: their addresses,
        each death noted by a callback, so a call reads none of the weak
        references: a model's parameters, hundreds a call), else None:
        the weak references are compared. got, the memo kept from before,
        is answered again while it holds the same weak references (by
        identity: the general path makes its lists again after another
        event, of the same references, torch's weak reference to an
        object without a callback being one object) at the same positions
        and pointers, and none of its objects died: a queue armed again at
        every training step, a steady plan made again at every other
        function's call, makes no weak references again. A KeptSet it
        could not make (an input no tensor, or that takes no weak
        reference) or of an input already dead is not kept."""
        if (got is not None and not got[3].dead and (got[0] is refs or (len(got[0]) == len(refs)
                and all(map(operator.is_, got[0], refs)))) and got[1] == idx and got[2] == ptrs):
            return got
        make = getattr(self._checks, "KeptSet", None)
        if make is None:
            return None
        try:
            ks = make(refs, idx, ptrs, self._ptrs_are)
        except (TypeError, ValueError, OverflowError):
            return None  # (the weak references, as the Python check takes them: it says why not)
        return None if ks.dead else (refs, idx, ptrs, ks)

    def _fresh_lean_run(self, torch, orig_run, box, ptrs_equal, data_ptr):
        """The _run wrapper's lean fresh path: a call of the armed queue's
        function (hot.fql, _fq_arm) taken whole when it is what
        _fresh_call would queue, looked at as cheaply as it can be (a
        real program's call finds the recorder's objects and lines out of
        the caches, so each line costs; BENCHMARKS.md, session 14). Each
        check is _fresh_call_check's, or _fresh_deferred's after the
        tree's call, made against what the arming found for the queue
        (the same template, src, sizes, kept inputs, watched names); a
        call that differs in any of it goes to _fresh_call, which looks
        at everything, before anything changed. The new input's Fact is
        made when first asked for (_Queued.__getattr__). Returns the
        tree's output, or DECLINED having changed nothing."""
        rec = self
        hot = self._hot
        session = self.session
        knobs = self._knobs
        checks = self._checks
        # The new input's reads through libtorch's C++ API where cpp.py
        # built them (the storage's weak reference made of the tensor then;
        # ptrs_equal and data_ptr are the _run wrapper's, chosen alike).
        rd = self._cpp
        sweak, of_tensor = torch_api.storage_ref_maker(checks, torch, rd)
        new_input = rd.new_input if of_tensor else None

        fresh_queue = checks.fresh_queue
        # What fresh_queue reads and fills (fastpath.py); fresh_input's maps.
        maps = (getattr(torch, "strided", None), session.by_obj_entry, session.by_view, session.entries,
                session._dead_cached, session.by_storage, self._fq_ids, self._fq_stor, new_input)
        # (versioned: every write of the format's knobs through their
        # modules' __setattr__ and __delattr__ is counted and disarms the
        # queue, so the probes are read every 64th call, as _steady reads
        # them, for a write past those only.)
        ctx = (hot, box, knobs, self._own_file, maps, session.entries, session._dead_objs, session._held_wr,
               session._died, self._fq_ids, self._fq_wrs, self._fq_stor, ptrs_equal, data_ptr, sweak, _Queued,
               self._gen, self, DECLINED, knobs.homes is not None)

        def fresh_run(mgr, new_inputs, function_id, a, hot=hot, tls=self.tls, ctx=ctx, fresh_queue=fresh_queue,
                      dead_objs=session._dead_objs, fq=self._fq, fresh_after=checks.fresh_after,
                      orig_run=orig_run, len=len, bound=_FQ_BOUND):
            # (The C Runner does the same without this frame: hooks.py,
            # _fastpath.c's runner_fresh. The uncommon ends are methods
            # both call: _fq_call_raised, _fq_bound, _fq_other.)
            # The call checked and queued (fastpath.fresh_queue: its
            # part before the tree's call, for the checked case), or
            # declined having changed nothing, or (None) the recorder's
            # own failure there, which lets the call run unrecorded, as
            # _fresh_deferred's.
            t = fresh_queue(ctx, a, mgr, new_inputs)
            if t is DECLINED:
                return DECLINED
            if t is None:
                return orig_run(mgr, new_inputs, function_id)
            a = hot.fql  # (armed again past a 64th step: fresh_queue)
            # What the tree does is noted in hot, as in a steady call
            # (execute_node notes its one replay; anything more switches
            # to the general path's noting, _general_noting), and its
            # re-entering _run passes through (the _run wrapper).
            hot.steady = True
            try:
                out = orig_run(mgr, new_inputs, function_id)
            except BaseException as err:
                rec._fq_call_raised(t, mgr, err)
                raise
            hot.steady = False
            node = hot.node
            hot.node = None
            other = hot.other
            hot.other = False
            clean = False  # (the thread's depth and node as this call found them)
            try:
                if hot.off:
                    return out
                try:
                    # _fresh_deferred's check after the call, the
                    # session's part of it made at the queue's first.
                    if fresh_after(a, node, other, out, mgr, dead_objs):
                        node = None
                        # (This call began at depth 0, where node is None;
                        # only the general path's noting, which sets other,
                        # or _fq_other moves them: the finally's writes to
                        # the thread-local, a module lookup each, skipped.)
                        clean = other is False
                        fq.append(t)
                        if len(fq) + hot.unwritten > bound:
                            rec._fq_bound(a)
                        elif hot.journal_due():
                            rec._fq_due(a)  # (Recorder.JOURNAL_MS)
                        return out
                except Exception as err:
                    rec._fail("after a call", err)
                    rec._flush()
                    return out
                rec._fq_other(t, a, mgr, out, node, other)
                return out
            finally:
                if not clean:
                    tls.depth = 0
                    tls.node = None

        self._fq_ctx = ctx
        return fresh_run

    def _fq_call_raised(self, t, mgr, err):
        """The lean fresh path's (fresh_run's) queued call whose tree call
        raised err: what the tree did noted as the general path notes it,
        and the call written with its error (_fq_raised)."""
        hot, tls = self._hot, self.tls
        if hot.steady:
            self._general_noting()
        hot.steady = hot.other = False
        hot.node = None
        try:
            self._fq_raised(t, mgr, err)
        finally:
            tls.depth = 0
            tls.node = None

    def _fq_bound(self, a):
        """The lean fresh path's queue at its bound: written, its last call
        kept queued, and armed again with a (only the queue's own writing
        happened, which leaves what the arming found as it was: the output
        renamed in place; the last call still queued, its input unbound).
        The recorder's own failure is _fail's."""
        hot = self._hot
        try:
            self._fq_write(keep_last=True)
            self._flush(settle=False, handover=True)
            if not hot.off:
                hot.serial += 1
                hot.fid = hot.got = None
                hot.disarm()
                hot.fql = a
        except Exception as err:
            self._fail("after a call", err)
            self._flush()

    def _fq_due(self, a):
        """The lean fresh path's queue when the journal's time has come
        (Recorder.JOURNAL_MS) before its bound in calls: written as at the
        bound, its last call kept queued and the path armed again with a
        (_fq_bound). Written whole and disarmed instead (_flush), the next
        call would take _fresh_call's path to arm it again, in a loop
        whose calls come more than JOURNAL_MS / _FQ_BOUND apart (a
        training or decode step of a millisecond) at every JOURNAL_MS:
        on an H100 with the time bound every tenth call, 14 to 21 us a
        call more (BENCHMARKS.md, session 36). The kept call is the one that just ended, within
        the last JOURNAL_MS, which a fast loop may lose, and the journal's
        clock writes it if no call comes (Recorder._held_past_due). With
        deferred replays held too, whose writing may change what the
        arming found, all is written and the path disarmed, as before."""
        if self._pending:
            self._flush()
        else:
            self._fq_bound(a)

    def _fq_other(self, t, a, mgr, out, node, other):
        """The lean fresh path's call whose tree did other than the queued
        calls' replay: what the tree did, as the general path notes it
        (_steady_other's), and the call written as _fresh_deferred writes
        one it does not queue."""
        tls = self.tls
        try:
            if not other:
                tls.actions = ["replay"] if node is not None else []
                tls.node = node
            node = None
            tls.depth = 1
            self._after_call(self._fq_write(t), a[A_FS], mgr, out)
        except Exception as err:
            self._fail("after a call", err)
        self._flush()

    def _fq_raised(self, t, mgr, err):
        """A queued call's tree call raised: the queue written with the
        call's part before it, and the call ended with its error, as
        _record_call ends one."""
        if self._hot.off:
            return
        try:
            ctx = self._fq_write(t)
            self.session.end_call(ctx, list(self.tls.actions), self._node_keys(mgr), mgr.debug_checkpointing_counter,
                                  None, _error_text(err), mgr.device_index)
        except Exception as e2:
            self._fail("after a call that raised", e2)
        self._flush()

    def _fq_calls(self):
        """The calls the queue holds: its list's items, the compact
        queue's entries counted for the one that stands for them (its
        last item, _fastpath.c's Compact)."""
        fq = self._fq
        cq = _compact(fq)
        return len(fq) if cq is None else len(fq) - 1 + len(cq)

    def _fq_sync(self):
        """The lean path's compact queue (_fastpath.c's Compact, the
        queue's last item while it holds calls) made the _Queued objects
        it stands for, in the queue and the maps: before anything but the
        lean call looks at either."""
        cq = _compact(self._fq)
        if cq is not None:
            cq.sync()

    def _fq_write(self, partial=None, keep_last=False):
        """The deferred calls' records and bindings, in order, as
        _fresh_call would have written them one by one: each call's
        deaths and steps, its new tensor (bound, or, gone, only counted),
        its call, expect and the del of its output's last name; the
        output entry renamed once, to its last name, at the order its
        last rename would give it (nothing between these calls saw the
        names in between). partial: a call whose part before the tree's
        is written after them, its ctx returned (the tree raised, or did
        other than the queued calls' replay). keep_last: the queue's
        bound reached, its last call stays queued, as the next queue's
        first: its input, alive, is not bound now to be forgotten when it
        dies at the next call (which would take both calls through
        _fq_before and _fq_dels, in Python), and the records are the
        same, in the same order, the split being between two calls."""
        fq = self._fq
        # The compact queue (_fastpath.c's Compact, the list's last item
        # while it holds calls): its entries written as they are (fq_run),
        # not made objects, but the call kept queued at the bound.
        cq = _compact(fq)
        if cq is not None and keep_last and partial is None and self._fq_calls() > 1:
            fq.append(cq.take_last())
        q = fq[:]  # (in place: a failure meanwhile finds it empty)
        fq.clear()
        self._hot.fql = None  # (what the lean path compares holds for this queue only)
        held = q.pop() if keep_last and partial is None and len(q) > 1 else None
        cq = _compact(q)
        objs = q[:-1] if cq is not None else q
        nq = len(objs) + (len(cq) if cq is not None else 0)
        steps = sum(map(_STEPS, objs)) + (cq.steps() if cq is not None else 0)
        n = nq + (partial is not None)
        self.fresh_calls += n
        self.lean_fresh_calls += n
        self.short_calls += nq
        self.queued_fresh_calls += nq
        self.lean_queued_calls += nq - list(map(_SPEC, objs)).count(None)  # (C-level passes: no frame a call)
        objs = None
        self._fq_ids.clear()
        self._fq_wrs.clear()
        self._fq_stor.clear()
        if held is not None:
            # (Still queued: found by the checks as the queue's others
            # are, in the maps they fill, fresh_queue's or _fresh_deferred's.)
            self.kept_queued += 1
            self._fq.append(held)
            self._fq_ids[held.oid] = held
            self._fq_wrs[id(held.wr)] = held
            self._fq_stor[held.fact.storage if held.spec is None else held.cd] = held
        fs = self._fq_fs
        pre, post, i, base, names = self._fq_line
        session = self.session
        trace = self.trace
        counts = session.counts
        plan = fs.plan
        # The calls in order: a run of the common call (a lean call's
        # input that died within the queue, its deaths none or one such
        # input's) written by fq_run (fastpath.py: in C where it is
        # built), the session's counters in st; any other by _fq_before
        # and fq_tail. st: [order, epoch, seed, dels, calls (each call's
        # number, as _fresh_call_write counts it before the call), the
        # output's name before].
        st = [session.order, session.epoch, session.seed, 0, fs.calls, plan.names[0]]
        w = (session._fresh_next, session.names_used, base, trace.records, session.by_view, session.by_obj,
             session.by_obj_entry, trace, pre, post, plan.prefix, plan.suffixes[0], plan.call_end(), session, _Queued)
        fq_run, fq_tail = self._checks.fq_run, self._checks.fq_tail
        # The host reads queued behind a call (_queue_read) after its
        # records, naming its output by the name the call gave it (st's
        # last), as Session.read would have had the queue been written at
        # the read: fq_run's in its pass, _fq_reads_write's after a call
        # fq_tail writes.
        reads = self._fq_reads
        if reads:
            self._fq_reads = {}  # (taken whole: a failure meanwhile leaves no stale key)
            if held is not None and id(held) in reads:
                self._fq_reads[id(held)] = reads.pop(id(held))
        k, n = 0, len(q)
        while True:
            k0 = k
            k = fq_run(q, k, st, w, reads)
            if reads:
                for j in range(k0, k):
                    got = reads.pop(id(q[j]), None)
                    if got is not None:
                        counts["reads"] += len(got)
            if k >= n:
                break
            t = q[k]
            if type(t) is not _Queued:
                # (a compact entry fq_run could not write: the rest of them
                # made the objects they stand for, written one by one)
                q[k:k + 1] = t.rest()
                n = len(q)
                continue
            k += 1
            session.order, session.epoch, session.seed = st[0], st[1], st[2]
            self._fq_before(t, session, trace, counts, base)
            st[0], st[1], st[2] = session.order, session.epoch, session.seed
            fq_tail(t, "", st, w)
            got = reads.pop(id(t), None) if reads else None
            if got is not None:
                self._fq_reads_write(got, st, session, trace)
        order, epoch, seed, dels, calls, prev = st
        session.order, session.epoch, session.seed = order, epoch, seed
        last = q[-1] if q else None
        if held is not None and type(last) is _Queued:
            # (The kept call's deaths hold the call before it, written now,
            # whose own deaths would hold the one before it, and so on back
            # through every queue: written, they are let go. A compact
            # entry's hold a stand-in, which holds none.)
            last.groups = None
        counts["dels"] += dels
        if nq:
            # (The counts of the calls' records, once: nothing between
            # reads them.)
            k = nq
            fs.calls = calls
            counts["calls"] += k
            counts["tensors"] += k
            counts["replay"] += k
            counts["dels"] += k
            counts["steps"] += steps
            e = plan.entries[0]
            if e.in_memo:  # (each rename moves the epoch: _rename_replayed moves it once)
                session.epoch += k - 1
            session._rename_replayed(e, prev, session.order)
            plan.names = (prev,)
            args = names[:]
            args[i] = last.name if type(last) is _Queued else last.last_name
            plan.set_args_at(args, i, pre, post)
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

    def _fq_reads_write(self, srcs, st, session, trace):
        """The records of the host reads queued behind a call fq_tail wrote
        (fq_run writes the others' in its pass), after its own, as
        fastpath._fq_read_lines makes them; the deaths before one that
        are more than one queued input's, as _fq_dels writes them. st:
        _fq_write's counters."""
        recs = trace.records
        for src, gone in srcs:
            if gone is not None and len(gone) > 1:
                session.order, session.epoch, session.seed = st[0], st[1], st[2]
                self._fq_dels(gone, session, trace)
                st[0], st[1], st[2] = session.order, session.epoch, session.seed
                gone = None
            recs.append(_fq_read_lines([(src, gone)], st)[1:])  # (its lines, without the first line end)
        session.counts["reads"] += len(srcs)

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
        spec = t.spec
        if spec is None:
            fact = t.fact
            dev, vk = fact.device, fact.view_key
        else:  # (a lean call's: no Fact made for an input that is never bound)
            dev, vk = spec[2], (t.cd, 0, spec[0], spec[1])
        if dev:
            trace.devices = max(trace.devices, dev + 1)
        session.order += 1
        session.epoch += 1
        t.name, t.order = name, session.order
        if t.gone:
            # _bind then _forget: of the maps only the stale keys _bind
            # overwrote are gone (nothing else bound the object's id or
            # the view between the two).
            session.by_view.pop(vk, None)
            session.by_obj.pop(t.oid, None)
            session.by_obj_entry.pop(t.oid, None)
        else:
            fact = t.fact
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
