"""The deferred steady replay: a replay like its function's last one is
queued by the _run wrapper (hooks.py) and written at the next other event
(_settle), in one pass; a queued call that turned out otherwise goes back
to the general path (_steady_other, _steady_fallback, _steady_raised)."""

import itertools
import operator

from .errors import _error_text
from .jsonl import _STEP, _STEP_LINE, _read_lines
from .liveness import USE_COUNT, _refcount_rule

# A step's line and its line end: the steps before a deferred call, in
# the same element of the records as its call (fastpath's writers).
_STEP_LINES = _STEP_LINE + "\n"


class _Deferred:
    """Recorder's deferred replays."""

    def _settle(self):
        """Before every event but a deferred replay: the deferred replays'
        records are written, and each plan is checked again before its
        next deferral (this event may change what it holds)."""
        hot = self._hot
        hot.serial += 1  # (Recorder._serial, without its property's two calls)
        hot.fid = hot.got = None
        hot.disarm()
        if self._pending:
            try:
                self._write_pending()
            except Exception as e:
                self._fail("writing the deferred replays", e)
        if self._fq:
            try:
                self._fq_write()
            except Exception as e:
                self._fail("writing the deferred calls on new inputs", e)

    def _write_pending(self):
        """The records of the deferred replays, in order, as _fast_after
        writes them one by one: the steps before each, its call (output
        names of its call number), its expect, the del of the names its
        outputs had. An output entry is renamed once, to its last name,
        with the order its last rename would give it (nothing between two
        of these replays saw the names in between). A run of one plan's
        replays is written in one pass (_write_run)."""
        pend = self._pending[:]  # (in place: the _run wrapper holds its append)
        self._pending.clear()
        reads = self._pending_reads
        if reads:
            self._pending_reads = {}
        session = self.session
        renamed = {}  # id(entry) -> (entry, its last name, its order then)
        # The host reads queued behind a replay (_queue_read) are written
        # after it, naming its output as that replay left it, as
        # Session.read names it after _settle: a run's by replay_run, in
        # its pass; _write_one's after each.
        start = 0
        for plan, run in itertools.groupby(pend, key=operator.itemgetter(0)):
            run = list(run)
            n = len(run)
            mine = None
            if reads:
                mine = {i - start: [src for src, _ in reads[i]] for i in range(start, start + n) if i in reads}
            if len(plan.entries) != 1 or not self._write_run(plan, run, renamed, mine):
                recs = self.trace.records
                for j, tok in enumerate(run):
                    self._write_one(plan, tok, renamed)
                    got = reads.get(start + j) if reads else None
                    if got is not None:
                        for src, e in got:
                            recs.append(_read_lines(renamed[id(e)][1] if id(e) in renamed else e.name, src))
                        session.counts["reads"] += len(got)
            start += n
        # Renamed in the order of their last renames, which is where each
        # lands in the session's ordered maps when renamed one by one.
        for e, n, order in sorted(renamed.values(), key=operator.itemgetter(2)):
            session._rename_replayed(e, n, order)

    def _write_run(self, plan, run, renamed, reads=None):
        """_write_one for a run of replays of one plan of one output, whose
        names no tensor took: the records in one pass (replay_run), with
        the host reads queued behind them (reads: {index in run: [each
        one's src]}). Returns False, having written nothing, otherwise."""
        session = self.session
        fs = plan.fs
        # The run's records as one element of lines (each call's steps,
        # call, expect and del: fastpath.replay_run, in C where it is
        # built): the writer passes a line made whole as it is.
        got = self._checks.replay_run(run, fs.calls + 1, session.names_used, plan.prefix, plan.suffixes[0],
                                      plan.names[0], plan.head, plan.call_end(), reads)
        if got is None:  # (a name _fresh made: output names are not kept)
            return False
        text, prev, steps = got
        fs.calls += len(run)
        self.trace.records.append(text)
        counts = session.counts
        if reads:
            counts["reads"] += sum(map(len, reads.values()))
        counts["steps"] += steps
        counts["calls"] += len(run)
        counts["replay"] += len(run)
        counts["dels"] += len(run)
        self.short_calls += len(run)
        session.order += len(run)
        renamed[id(plan.entries[0])] = (plan.entries[0], prev, session.order)
        plan.names = (prev,)
        return True

    def _write_one(self, plan, tok, renamed):
        """One deferred replay's records (its steps, call, expect, del)."""
        _, steps, inv, src = tok
        session = self.session
        used = session.names_used
        counts = session.counts
        recs = self.trace.records
        plan.fs.calls += 1
        calls = plan.fs.calls
        counts["calls"] += 1
        self.short_calls += 1
        if steps:
            counts["steps"] += steps
            recs.extend([_STEP] * steps)
        outs = session._replay_names(plan, calls)
        recs.append(plan.head + '", "'.join(outs) + _call_tail(inv, src))
        counts["replay"] += 1
        recs.append(plan.exp_line())
        entries = plan.entries
        if len(entries) == 1:
            gone = plan.names
        else:  # (in binding order, as _emit_dels and _fast_after have it)
            now = [renamed.get(id(e)) or (e, e.name, e.order) for e in entries]
            gone = [n for _, n in sorted((o, n) for _, n, o in now)]
        for e, n in zip(entries, outs):
            session.order += 1
            renamed[id(e)] = (e, n, session.order)
        counts["dels"] += len(gone)
        recs.append('{"op": "del", "names": ["' + '", "'.join(gone) + '"]}')
        plan.names = tuple(outs)

    def _write_steps(self, n):
        """n steps, raw: a deferred call's steps, after its checks found no
        name dead (Session.step would poll again, and find what died in
        the call)."""
        if n:
            self.session.counts["steps"] += n
            self.trace.records.extend([_STEP] * n)

    def _steady_holds(self, fs, plan, got, mgr):
        """Whether the session holds what a deferred replay of plan takes
        for granted (checked once a serial: only another event changes
        it): the names the plan gives its outputs are theirs, over their
        storages, polled through the tree's wrapper, in no function's memo
        of inputs (a rename would move the memo's epoch); the function's
        memo is of this epoch and of the plan's args, as are its last args;
        the manager is the device's, the FunctionID the cache's (got); the
        plan's line is a template; nothing is followed (a follower sees
        each call as it lands)."""
        session = self.session
        memo = fs.memo
        if (plan.partial or self.follow or plan.head is None or plan.call_end() is None or memo is None
                or memo[2] != session.epoch
                or memo[3] is not plan.args or fs.last_args is not plan.args
                or got[1]() is not mgr):
            return False
        known = self._known_mgr.get(mgr.device_index)
        if known is None or known() is not mgr:
            return False
        last = self._trees.get(plan.dev_key)
        if last is None or last["checkpoints"] != plan.ckpt:
            return False
        watch = session._watch
        if not plan.arg_set().isdisjoint(watch):
            return False
        for e, name in zip(plan.entries, plan.names):  # (a mixed plan's input entry: held, no tree wrapper)
            f = e.fact
            same = session.by_storage.get(f.storage)
            if (e.name is not name or session.entries.get(name) is not e or f.held
                    or e.wr is not None or e.in_memo or e.obj_id is None
                    or session.by_obj_entry.get(e.obj_id) is not e or same is None
                    or same.get(name) is not e or watch.get(name) is not e
                    or f.probe is None or f.probe.tree_ref is None or f.obj_ref is None):
                return False
        plan.nin, plan.in_refs = len(memo[0]), memo[0]
        plan.in_ptrs, plan.in_idx = list(memo[4]), list(range(len(memo[0])))
        # (every input kept, at its own position: the function keeps the
        # KeptSet, its plan being made again at every other function's call)
        fs.kept_memo = ks = self._kept_set(fs.kept_memo, memo[0], plan.in_idx, plan.in_ptrs)
        plan.in_set = memo[0] if ks is None else ks[3]
        plan.nout = len(plan.entries)
        plan.out_refs = tuple(e.fact.obj_ref for e in plan.entries)
        plan.wrappers = list(e.fact.probe.tree_ref for e in plan.entries)
        plan.polled = plan.out_refs if self._polled_by_outputs(plan, watch) else None
        plan.uses = plan.polled is not None and USE_COUNT in map(_refcount_rule, plan.wrappers)
        # The count of config writes now stands for the knobs' values the
        # general path last read: only if no probe moved since.
        knobs = self._knobs
        if knobs.moved():
            return False
        plan.fs = fs
        plan.cfg = self._hot.cfg if knobs.homes is not None else None
        plan.serial = self._serial
        self._hot.fid, self._hot.got = got[0], got
        return True

    def _polled_by_outputs(self, plan, watch):
        """Whether a deferred replay may poll only plan's outputs, by their
        refcounts: each output's wrapper judges it as 2.11's tree does
        (_refcount_rule), and every other polled name is alive while one
        of those outputs is: a name over the storage of one, judged by its
        storage (no tree wrapper with a refcount check: such a wrapper
        never gets one back), as the recorded output of a node is once the
        program let its object go and the node's cached output holds the
        storage; or judged by the wrapper of one of the outputs (the
        recording's output, its object dropped, where torch 2.11's node
        gives its replays' cached output the same wrapper), which the
        wrapper's check says alive while that output's count does, as the
        lean path reads it (else every polled name asked at every call:
        two frames of _Probe.alive and torch's wrapper each)."""
        wrappers = plan.wrappers
        if not all(map(_refcount_rule, wrappers)):  # (NO_RULE is 0)
            return False
        mine = {id(e) for e in plan.entries}
        kept = {e.fact.storage for e in plan.entries}
        for e in watch.values():
            if id(e) in mine:
                continue
            p = e.fact.probe
            if (p is None or e.fact.storage not in kept or e.fact.alive != p.alive
                    or (p.tree_ref is not None and p.tree_ref.extra_ref_check is not None
                        and not any(p.tree_ref is w for w in wrappers))):
                return False
        return True

    def _steady_ctx(self, plan, inv, src):
        """What Session.begin_known_call gives a call of plan's function on
        its args (no name died before it: the _run wrapper checked), for a
        call the _run wrapper let run that is not to be deferred."""
        fs = plan.fs
        fs.calls += 1
        self.session.counts["calls"] += 1
        return {"fn": fs, "args": plan.args, "invocation": inv, "src": src,
                "src_at": (plan.src_d, plan.src_code) if src is not None else None}

    def _steady_raised(self, plan, steps, inv, mgr, err, src):
        """A deferred call raised: the queue, its steps, then the call with
        its error, as _record_call writes a call that raised."""
        tls, hot = self.tls, self._hot
        try:
            if hot.steady:  # (what the tree did, as the general path notes it)
                self._general_noting()
            if self._off:
                return
            self._settle()
            self._write_steps(steps)
            ctx = self._steady_ctx(plan, inv, src)
            self.session.end_call(ctx, list(tls.actions), self._node_keys(mgr),
                                  mgr.debug_checkpointing_counter, None, _error_text(err),
                                  mgr.device_index)
        except Exception as e:
            self._fail("after a call that raised", e)
        finally:
            hot.steady = hot.other = False
            hot.node = tls.node = None
            tls.depth = 0

    def _steady_other(self, plan, steps, inv, mgr, out, node, src):
        """A call the steady path let run that was not its plan's deferred
        replay: what the tree did, as the general path notes it, then the
        call written as the general path writes it (_steady_fallback)."""
        tls, hot = self.tls, self._hot
        if hot.other:  # (noted so from the tree's second action: _general_noting)
            tls.depth = 0
            hot.other = False
        else:
            tls.actions = ["replay"] if node is not None else []
            tls.node = node
        try:
            self._steady_fallback(plan, steps, inv, mgr, out, src)
        finally:
            tls.node = None

    def _steady_fallback(self, plan, steps, inv, mgr, out, src):
        """A deferred call that was not its plan's replay (the tree recorded
        again, or handed out other objects, or an input died in it): the
        queue, its steps, then the call as the general path writes it."""
        self._settle()
        self._write_steps(steps)
        ctx = self._steady_ctx(plan, inv, src)
        fs = plan.fs
        fs.plan = None
        self._general_after(ctx, mgr, out)
        self._make_plan(ctx, fs, mgr, out)


def _call_tail(inv, src):
    """A template call line's end, after its last output name: the
    invocation and the src (dict, JSON) when there are."""
    if src is None:
        return '"]}' if inv is None else '"], "invocation": %d}' % inv
    if inv is None:
        return '"], "src": ' + src[1] + "}"
    return '"], "invocation": %d, "src": %s}' % (inv, src[1])
