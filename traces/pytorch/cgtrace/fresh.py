"""A call like its function's last one but for new tensors at some of its
positions (a loop over a data loader's batches, a decoder's new token:
every training and decode step): the records before the tree's call made
without the general path's search (_Fresh._fresh_before), the same
records and the same session state as Recorder._before_call leaves, or
nothing at all when any of what it takes for granted does not hold; and
the _run wrapper's whole call of one new input (_Fresh._fresh_call),
queued when it can be (freshq.py)."""

import itertools
import operator
import sys

from ._pycompat import op_call
from .errors import _error_text
from .jsonl import _STEP
from .shapes import is_contiguous, numel
from .state import _ENTRY_NAME, _FACT_OF, _NO_ENTRY, _OBJ_REF_OF, _PTR_OF
from .facts import _PKG_DIR, first_outside, ptrs_of, same_ptr

# What _fresh_call answers when it took no part in the call (nothing
# changed): the _run wrapper hands the call to _on_run.
DECLINED = object()
# Calls through _fresh_call whose records a journaled trace may hold
# before writing them (the deferred replays' bound, hooks._JOURNAL_BOUND:
# a program that dies loses no more of either; nor any that returned
# Recorder.JOURNAL_MS after the journal's last writing).
_WRITE_BOUND = 32


def _write_steps(session, recs, groups, steps):
    """The steps since the function's last call and the deaths between
    them, in the order _catch_up_steps and flush_deaths give them: groups
    holds the deaths by the step they came before (a polled name's with
    no weak reference), and at -1 how many of session._dead_objs they
    are; None when nothing died."""
    if groups is None:
        if steps:
            recs.extend([_STEP] * steps)
    else:
        held = session._held_wr
        for j in range(steps + 1):
            gone = groups.get(j)
            if gone is not None:
                for wr, e in gone:
                    if wr is not None:  # (None: a polled name's)
                        held.pop(id(wr), None)
                        e.wr = None
                session._emit_dels([e for _, e in gone])
            if j < steps:
                recs.append(_STEP)
        del session._dead_objs[:groups[-1]]
    session.counts["steps"] += steps


def _polled_dead(session, inputs):
    """The polled names dead now, each (None, its entry), as _write_steps
    takes a group of deaths; None when none is, DECLINED when one of them
    is an entry of inputs (the general path names that input anew)."""
    dead = session.watch_dead(session._watch.values()) if session._watch else None
    if dead is None:
        return None
    if not set(map(id, dead)).isdisjoint(map(id, inputs)):
        return DECLINED
    return [(None, e) for e in dead]


class _Fresh:
    """Recorder's short path before a call with new inputs."""

    # Tests turn it off to compare with the general path.
    _fresh_path = True
    # The _run wrapper's whole call on new inputs (_fresh_call): tests
    # turn it off to compare with _on_run's way through _fresh_before.
    _fresh_lean = True
    # True while the _run wrapper's call of _on_run (a fresh-path
    # function's, hooks.py) is in progress: _check_fresh's frame 4 is it.
    _via_run = False
    # (shape, strides) -> the elements of a contiguous tensor of that
    # shape, or -1 when the strides are not contiguous ones: a loop's new
    # inputs are of a few shapes.
    _whole = None

    def _fresh_call(self, orig_run, mgr, new_inputs, function_id, got):
        """The whole of a call on new inputs, for the _run wrapper, when the
        call is one _on_run would take through _fresh_before's short way
        (fs.fresh_tok: nothing named, renamed or forgotten since the
        function's last call, which took this path) with one new input:
        the checks of _check_fresh, narrowed to that case (and aware of
        the queued calls' inputs), then the call queued (freshq.py) when
        _fq_start finds it may be, else what _on_run and _record_call do
        with the ctx _fresh_before makes, in one frame: then its records
        are made in the call, as _fresh_before makes them, and written to
        a journaled trace once _WRITE_BOUND calls are held (and at every
        other event's flush, at exit, at SIGTERM, at a failure), as the
        deferred replays are. Returns the tree's output,
        or DECLINED, having changed nothing, for _on_run. Called with the
        recorder's lock held, from the _run wrapper's frame (the src frame
        is found by its depth from it, as _check_fresh finds it)."""
        fs = got[3]
        tok = fs.fresh_tok
        plan = fs.plan
        hot = self._hot
        session = self.session
        self._fq_sync()
        fq = self._fq
        short = True  # (nothing named, renamed or forgotten since the function's last call)
        if fq and self._fq_fs is fs:
            # A call after the queued ones, of their function: what the
            # others below look at is as the queue's first call found it
            # (only another event changes it, and writes the queue first).
            if got[0] is not function_id or got[1]() is not mgr or len(new_inputs) != len(tok[2]):
                return DECLINED
        elif (fq or not self._fresh_lean or plan is None or tok[2] is not fs.last_entries
                or len(tok[6]) != 1 or not fs.defined
                or self._pending or not session.tensor_templates or self._all_knobs_due or self._all_knobs_read
                or got[0] is not function_id or got[1]() is not mgr or len(new_inputs) != len(tok[2])):
            return DECLINED
        else:
            # Another function's call since (a training step's backward):
            # the inputs as _fresh_inputs' other way finds them, where it
            # finds the same positions new (_fresh_call_check).
            short = tok[0] == session.epoch and tok[1] == session.order
        try:
            got = self._fresh_call_check(tok, plan, mgr, new_inputs, hot, session, fq, short)
        except Exception:  # (an input or frame it cannot read: _on_run's)
            got = None
        if got is None:
            return DECLINED
        # _on_run's part, then _record_call's, with the ctx _fresh_before
        # would make; or the call deferred (freshq.py).
        tls = self.tls
        tls.depth = 1
        tls.actions = []
        tls.node = None
        # (Not short, with the same entries for the kept inputs: a name
        # forgotten or made since that none of them is, as the loop's last
        # input's del at a host read of its output.)
        if fq or ((short or got[7] is tok[2]) and not got[6] and self._fq_start(fs, plan, tok, got[1], session)):
            try:
                return self._fresh_deferred(orig_run, mgr, new_inputs, function_id, fs, plan, hot, session, got)
            finally:
                tls.depth = 0
                tls.node = None
        try:
            try:
                ctx = self._fresh_call_write(fs, tok, plan, hot, session, got, short)
            except Exception as e:
                self._fail("before a call", e)
                ctx = None
            got = None
            try:
                out = orig_run(mgr, new_inputs, function_id)
            except BaseException as e:
                if ctx is not None and not hot.off:
                    try:
                        session.end_call(ctx, list(tls.actions), self._node_keys(mgr),
                                         mgr.debug_checkpointing_counter, None, _error_text(e), mgr.device_index)
                    except Exception as e2:
                        self._fail("after a call that raised", e2)
                raise
            if ctx is not None and not hot.off:
                try:
                    self._after_call(ctx, fs, mgr, out)
                except Exception as e:
                    self._fail("after a call", e)
            return out
        finally:
            tls.depth = 0
            tls.node = None
            self._flush_or_hold()

    def _fresh_call_check(self, tok, plan, mgr, new_inputs, hot, session, fq, short):
        """_fresh_call's checks, changing nothing: None where one fails,
        else (the step counter now, the new input's position, its Fact and
        template, the deaths by the step they come before as _check_fresh
        groups them, the src, whether a polled name died, the entries
        that name the inputs by position now). Each check is one
        _check_fresh makes (and _fresh_inputs' short way), or narrower: a
        64th step, a src frame of this package past the wrapper, or a new
        tensor with no template line are left to it. fq: the queued calls
        (the manager was found the device's for the first of them).
        short: nothing was named, renamed or forgotten since the
        function's last call (else each kept input is also the object an
        entry names now, its last call's or a later one, as _fresh_inputs'
        other way finds it)."""
        if not fq:
            known = self._known_mgr.get(mgr.device_index)
            if known is None or known() is not mgr:
                return None
        # _fresh_inputs' short way: the kept positions' objects at the same
        # data pointers, the new one no tensor the trace names. (First: a
        # training step's backward, whose saved input is a new object at
        # every step, fails here, before the probes and frames are read.)
        Tensor = self.torch.Tensor
        kept = tok[3]
        if (not all(map(operator.is_, map(op_call, tok[4]), map(new_inputs.__getitem__, kept)))
                or ptrs_of(Tensor, map(new_inputs.__getitem__, kept)) != tok[5]):
            return None
        cand = tok[2]
        if not short:
            # Each kept input is the object its entry names now, as
            # _fresh_inputs' other way finds it: the last call's entry, or
            # the one that names it since (a training step's backward: the
            # activation its forward saved is the same object under the
            # name the forward's replay gave it). Its object and data
            # pointer are the ones the last call saw (checked above).
            now = list(map(session.by_obj_entry.get, map(id, map(new_inputs.__getitem__, kept))))
            if not all(map(operator.is_, now, map(cand.__getitem__, kept))):
                cand = list(cand)
                for k, e, ptr in zip(kept, now, tok[5]):
                    if e is cand[k]:
                        continue
                    ref = e.fact.obj_ref if e is not None else None
                    if ref is None or ref() is not new_inputs[k] or (e.fact.ptr is not None and e.fact.ptr != ptr):
                        return None
                    cand[k] = e
            now = None
        c = self._box.mark_step_counter
        mc = hot.mark_counter
        if (c > mc or (c == 0 and mc != 0) or c // 64 != mc // 64
                or list(map(op_call, self._knobs.probes)) != self._knobs.probe_vals):
            return None
        # The src: frame 3 is the one that called the _run wrapper (frame 2,
        # which called _fresh_call).
        f = sys._getframe(3)
        mine = self._own_file
        path = f.f_code.co_filename
        own = mine.get(path)
        if own is None:
            own = mine[path] = path.startswith(_PKG_DIR)
        if own:
            return None
        src = None
        if plan.src_code is not None:
            if plan.src_d:
                f = sys._getframe(3 + plan.src_d)  # (ValueError past the stack's top: _on_run's)
            src = plan.src_of(f) if f.f_code is plan.src_code() else None
            if src is None:
                return None
        elif not self._no_src_frame(f):
            return None
        f = None
        i = tok[6][0]
        v = new_inputs[i]
        if not isinstance(v, Tensor):
            return None
        e = session.by_obj_entry.get(id(v))
        if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is v:
            return None
        e = self._fq_ids.get(id(v))  # (a deferred call's new input, passed again)
        if e is not None and e.wr() is v:  # (a gone one's gives None)
            return None
        # The new tensor as _check_fresh sees it: the whole of a storage no
        # name is over, contiguous, at offset 0, a template's.
        fact = self._fact(v)
        v = e = None
        vk = fact.view_key
        shape = vk[2]
        whole = self._whole
        n = whole.get((shape, fact.stride))
        if n is None:
            n = numel(shape) if is_contiguous(shape, fact.stride) else -1
            if len(whole) < 256:
                whole[(shape, fact.stride)] = n
        tmpl = session._tensor_lines.get(("tensor", shape, fact.dtype, fact.device,
                                          src[1] if src is not None else None))
        entries = session.entries
        if (n < 0 or fact.offset != 0 or (fact.storage_numel is not None and fact.storage_numel > n)
                or tmpl is None or session.by_view.get(vk) in entries or vk in session._dead_cached
                or session.by_storage.get(fact.storage)):
            return None
        e = self._fq_stor.get(fact.storage)
        if e is not None and not e.gone:  # (a deferred call's input over it, bound till its del)
            return None
        # The polled names dead now, as _check_fresh finds them (none while
        # calls are queued: the queue's session has not forgotten them).
        polled = _polled_dead(session, cand)
        if polled is DECLINED or (fq and polled is not None):
            return None
        # The deaths since the last event, each an object whose storage is
        # gone, by the step before which its del comes (_check_fresh's):
        # a named tensor's (its entry), or a deferred call's new input's
        # (its _Queued).
        dead = session._dead_objs
        steps = mc - c
        groups = None if polled is None else {-1: 0, 0: polled}
        if dead:
            k = len(dead)
            if groups is None:
                groups = {}
            groups[-1] = k  # (how many were looked at: a death meanwhile is the next event's)
            held = session._held_wr
            queued = self._fq_wrs
            seen = set()
            for wr, when in dead[:k]:
                name = held.get(id(wr))
                e = entries.get(name) if name is not None else None
                if e is None:
                    e = queued.get(id(wr))
                    if e is None or e.gone or id(e) in seen:
                        continue  # (what _poll_dead_objs passes over)
                    if e.fact.alive():
                        return None
                elif e.wr is not wr or id(e) in seen:
                    continue
                elif e.kind == "out" or e.fact.alive():
                    return None
                seen.add(id(e))
                groups.setdefault(min(max(0, mc - when), steps), []).append((wr, e))
            e = None
        return c, i, fact, tmpl, groups, src, polled is not None, cand

    def _fresh_call_write(self, fs, tok, plan, hot, session, got, short):
        """What _on_run's _settle (nothing is deferred: _fresh_call
        checked) and _fresh_before write for the call _fresh_call_check
        found: the steps and deaths, the new tensor's record. Returns the
        call's ctx, as _fresh_before's."""
        c, i, fact, tmpl, groups, src, _, cand = got
        got = None
        mc = hot.mark_counter
        steps = mc - c
        hot.serial += 1
        hot.fid = hot.got = None
        hot.disarm()
        recs = self.trace.records
        counts = session.counts
        _write_steps(session, recs, groups, steps)
        hot.mark_counter = c
        names = list(map(_ENTRY_NAME, cand))
        if not short:  # (_fresh_inputs' other way: the entries anew, the token made after the call)
            fs.fresh_tok = None
            fs.last_entries = list(cand)
        base = tok[7]
        session.src = src
        try:
            names[i] = session._tensor_record(fact, "tensor", base, tmpl)
        finally:
            session.src = None
        self.fresh_calls += 1
        self.lean_fresh_calls += 1
        fs.calls += 1
        counts["calls"] += 1
        return {"fn": fs, "args": names, "invocation": self._gen.generation, "src": src,
                "def_src": None, "src_at": (plan.src_d, plan.src_code) if src is not None else None, "fresh": base}

    def _fresh_before(self, mgr, new_inputs, function_id):
        """_before_call (and _call_srcs) for a call of a defined function
        whose last call left a plan (_make_plan) and named its inputs by
        the entries fs.last_entries holds, when each input is either the
        tensor an entry names (as _name_inputs finds it) or a tensor new to
        the trace that begin_call would write from a template
        (Session._tensor_record): its own storage, whole, at offset 0,
        contiguous, no view or dead cached output of a named one, not a
        static input. What happened since the last event is only steps
        (no reset, no other manager) and deaths of named tensors whose
        storage is gone (not tree outputs), no polled name died, and no
        knob moved. Returns the call's ctx for _record_call, having
        written what begin_call writes (the deaths and steps in the order
        _catch_up_steps and flush_deaths give them, the new tensors'
        records); or None, having changed nothing: the general path
        runs."""
        try:
            got = self._check_fresh(mgr, new_inputs, function_id)
        except Exception:  # (an input or frame it cannot read: the general path's)
            got = None
        if got is None:
            return None
        fs, c, mc, names, last, fresh, facts, groups, src, at, base = got
        got = None
        session = self.session
        recs = self.trace.records
        steps = mc - c
        counts = session.counts
        _write_steps(session, recs, groups, steps)
        self._hot.mark_counter = c  # (Recorder._mark_counter)
        session.src = src
        try:
            for i, (f, tmpl) in zip(fresh, facts):
                names[i] = session._tensor_record(f, "tensor", base, tmpl)
        finally:
            session.src = None
        fs.last_entries = last
        self.fresh_calls += 1
        fs.calls += 1
        counts["calls"] += 1
        return {"fn": fs, "args": names, "invocation": self._gen.generation, "src": src,
                "def_src": None, "src_at": at, "fresh": base}

    def _fresh_inputs(self, fs, cand, new_inputs):
        """The inputs by position, as _name_inputs names them: (the args,
        None at the new tensors' positions; the entries by position,
        _NO_ENTRY there; those positions; the new tensors' name base), or
        None where an input is no tensor, or a named one whose data moved,
        or none is new, or a new one is a static input. First against the
        entries that named the last call's inputs (cand, C-level passes),
        then one by one; or, when nothing was named, renamed or forgotten
        since the function's last call through this path (fs.fresh_tok:
        the session's epoch and order then), the positions that call found
        new are the ones to look at, the others compared by their objects
        and data pointers alone."""
        session = self.session
        Tensor = self.torch.Tensor
        known = session.by_obj_entry.get
        n = len(new_inputs)
        tok = fs.fresh_tok
        if (tok is not None and tok[2] is cand and tok[0] == session.epoch and tok[1] == session.order
                and all(map(operator.is_, map(op_call, tok[4]), map(new_inputs.__getitem__, tok[3])))
                and ptrs_of(Tensor, map(new_inputs.__getitem__, tok[3])) == tok[5]):
            # (The entries of the other positions still name those objects:
            # nothing was bound or forgotten since.)
            for i in tok[6]:
                v = new_inputs[i]
                if not isinstance(v, Tensor):
                    return None
                e = known(id(v))
                if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is v:
                    return None  # (a named tensor: _name_inputs' one by one)
            v = e = None
            # (Their names as they are now: the function's own output
            # passed back, a recurrent state, was renamed by its call.)
            return list(map(_ENTRY_NAME, cand)), cand, tok[6], tok[7]
        fs.fresh_tok = None
        ptrs = ptrs_of(Tensor, new_inputs)
        if ptrs is None:
            return None  # (an input torch refuses the pointer of: _name_inputs' one by one)
        cf = list(map(_FACT_OF, cand))
        hits = list(map(operator.and_, map(operator.and_,
                                           map(operator.is_, map(known, map(id, new_inputs)), cand),
                                           map(operator.is_, map(op_call, map(_OBJ_REF_OF, cf)),
                                               new_inputs)),
                        map(operator.eq, ptrs, map(_PTR_OF, cf))))
        cf = None
        names = list(map(_ENTRY_NAME, cand))
        last = list(cand)
        fresh = []
        for i in itertools.compress(range(n), map(operator.not_, hits)):
            v = new_inputs[i]
            if not isinstance(v, Tensor):
                return None
            e = known(id(v))
            ref = e.fact.obj_ref if e is not None else None
            if ref is not None and ref() is v:
                if e.fact.ptr is not None and not same_ptr(v, e.fact.ptr):
                    return None  # (`param.data = new`: begin_call's swap)
                names[i] = e.name
                last[i] = e
            else:
                names[i] = None
                last[i] = _NO_ENTRY
                fresh.append(i)
        v = e = ref = None
        if not fresh:
            return None
        info = fs.info
        if not info.static.isdisjoint(fresh):
            return None  # (a parameter: begin_call names it after its module's path)
        base = "in"
        if info.mode == "backward":
            ph = info.placeholders
            for i in fresh:
                b = "grad" if i < len(ph) and str(ph[i]).startswith("tangents") else "saved"
                if base != "in" and b != base:
                    return None
                base = b
        return names, last, fresh, base

    def _fresh_done(self, fs, base):
        """After a call through this path whose replay took _fast_after:
        what the next one may take for granted while nothing is named,
        renamed or forgotten (_fresh_inputs)."""
        session = self.session
        cand = fs.last_entries
        tok = fs.fresh_tok
        if tok is not None and tok[2] is cand:  # (the same positions new: _fresh_inputs' short way)
            fs.fresh_tok = (session.epoch, session.order) + tok[2:]
            return
        keep = [i for i, e in enumerate(cand) if e is not _NO_ENTRY]
        fresh = tuple(i for i, e in enumerate(cand) if e is _NO_ENTRY)
        kept = [cand[i] for i in keep]
        refs = tuple(e.fact.obj_ref for e in kept)
        ptrs = [e.fact.ptr for e in kept]
        if not fresh or None in refs or None in ptrs:
            fs.fresh_tok = None
            return
        fs.fresh_tok = (session.epoch, session.order, cand, tuple(keep), refs, ptrs, fresh, base)

    def _check_fresh(self, mgr, new_inputs, function_id):
        """What _fresh_before takes for granted, looked at without changing
        anything; None where something does not hold, else (fs, the step
        counter now and at the last event, the args with None at the new
        inputs' positions, the entries by position, those positions, their
        Facts, the deaths by the step they come before (None: none; at -1,
        how many of session._dead_objs were looked at), the
        call's src and where it is, the new tensors' name base); each Fact
        with its record's template as _tensor_record would look it up."""
        got = self._fid_cache.get(id(function_id))
        if got is None or got[0] is not function_id or got[1]() is not mgr:
            return None
        fs = got[3]
        plan = fs.plan
        cand = fs.last_entries
        n = len(new_inputs)
        session = self.session
        if (plan is None or not fs.defined or cand is None or len(cand) != n
                or not session.tensor_templates or self._pending):
            return None
        # What _check_manager and _catch_up_steps would find: the device's
        # manager, no reset; the knobs as _knob_check would find them.
        known = self._known_mgr.get(mgr.device_index)
        c = self._box.mark_step_counter
        mc = self._hot.mark_counter  # (Recorder._mark_counter)
        if known is None or known() is not mgr or c > mc or (c == 0 and mc != 0):
            return None
        if self._all_knobs_due or self._all_knobs_read:
            return None
        knobs = self._knobs
        if c // 64 != mc // 64 and (c // 4096 != mc // 4096 or knobs.moved(True)):
            return None
        # (knobs.moved(), without its two frames: _check_fresh's caller
        # takes a probe that raises for the general path's.)
        if list(map(op_call, knobs.probes)) != knobs.probe_vals:
            return None
        # The src, where the plan's general calls found it (Facts._call_srcs):
        # the frame plan.src_d frames past the one that called the tree's
        # _run, of the same code, at a line they saw.
        mine = self._own_file
        if plan.src_code is None:
            # Its calls had no src (a backward autograd's engine runs in
            # its device thread: no frame of the program's above it): none
            # now either, where no frame past this package's is the
            # program's (_call_srcs' walk).
            if not self._no_src_frame(first_outside(sys._getframe(4), mine)):
                return None
            src = at = None
        else:
            f = None
            if self._via_run:
                # Frame 4 is the _run wrapper, which called _on_run itself:
                # the frame past it found without making a frame object of
                # each one between (torch's own, on a GPU: src_d of them),
                # when it is not this package's (else the walk below).
                f = sys._getframe(5)
                path = f.f_code.co_filename
                own = mine.get(path)
                if own is None:
                    own = mine[path] = path.startswith(_PKG_DIR)
                if own:
                    f = None
                elif plan.src_d:
                    f = sys._getframe(5 + plan.src_d)  # (ValueError past the stack's top: the general path's)
            if f is None:
                # (past _fresh_before, _record_call, _on_run: this package's)
                f = first_outside(sys._getframe(4), mine)
                for _ in range(plan.src_d):
                    if f is None:
                        break
                    f = f.f_back
            src = plan.src_of(f) if f is not None and f.f_code is plan.src_code() else None
            f = None
            if src is None:
                return None
            at = (plan.src_d, plan.src_code)
        got = self._fresh_inputs(fs, cand, new_inputs)
        if got is None:
            return None
        names, last, fresh, base = got
        # Each new tensor as begin_call sees it: no name over its view or
        # storage (lookup, _saved_name, _view_source), the whole of its
        # storage (_name_view), a record like one before it (a template).
        facts = []
        storages = set()
        lines = session._tensor_lines
        entries = session.entries
        whole = self._whole
        for i in fresh:
            fact = self._fact(new_inputs[i])
            vk = fact.view_key
            shape = vk[2]
            n = whole.get((shape, fact.stride))
            if n is None:
                n = numel(shape) if is_contiguous(shape, fact.stride) else -1
                if len(whole) < 256:
                    whole[(shape, fact.stride)] = n
            tmpl = lines.get(("tensor", shape, fact.dtype, fact.device, src[1] if src is not None else None), lines)
            if (n < 0 or fact.offset != 0 or (fact.storage_numel is not None and fact.storage_numel > n)
                    or tmpl is lines
                    or session.by_view.get(vk) in entries or vk in session._dead_cached
                    or session.by_storage.get(fact.storage) or fact.storage in storages):
                return None
            storages.add(fact.storage)
            facts.append((fact, tmpl))
        # The polled names dead now, none of them an input of this call
        # (the general path would name it anew), with their dels before the
        # first step (the first poll, Session.step's, finds them); the
        # named objects that died since the last event, each with its
        # storage gone (so dead as the poll finds it), by the step before
        # which _catch_up_steps writes its del (steps alone when none).
        polled = _polled_dead(session, last)
        if polled is DECLINED:
            return None
        groups = None if polled is None else {-1: 0, 0: polled}
        dead = session._dead_objs
        if dead:
            steps = mc - c
            # (Those seen now: a death a collection adds meanwhile is the
            # next event's.)
            if groups is None:
                groups = {}
            groups[-1] = len(dead)
            held = session._held_wr
            seen = set()
            for wr, when in dead[:groups[-1]]:
                name = held.get(id(wr))
                e = entries.get(name) if name is not None else None
                if e is None or e.wr is not wr or id(e) in seen:
                    continue  # (what _poll_dead_objs passes over)
                if e.kind == "out" or e.fact.alive():
                    return None
                seen.add(id(e))
                groups.setdefault(min(max(0, mc - when), steps), []).append((wr, e))
        return fs, c, mc, names, last, fresh, facts, groups, src, at, base
