"""The recorder's events besides a call: the tree's actions noted, the
steps caught up, resets, a backward without cudagraphs, host reads, the
knobs looked at, and the recorder's own failure (_fail)."""

import sys
import weakref

from .errors import _warn, _where
from .fastpath import A_PLAN
from .knobs import _MAPPED_KNOBS, settings_from_knobs

# Host reads one deferred call may hold behind it (_queue_read): a loop
# that reads more between two calls writes what is deferred at its next.
_READS_AFTER_CALL = 8


class _Events:
    """Recorder's handlers of what happens between and around calls."""

    def _in_call(self):
        """Whether this thread is inside a tree call: the general path's
        (tls.depth), or the steady path's (hot.steady, in the thread holding
        the lock)."""
        return getattr(self.tls, "depth", 0) > 0 or (self._hot.steady and self.lock._is_owned())

    def _general_noting(self):
        """A call the steady path let run (hot.steady, replays noted in
        _Hot) did more than one replay: from here its actions are noted as
        the general path notes them (depth 1), from what the tree did so
        far."""
        tls, hot = self.tls, self._hot
        tls.actions = ["replay"] if hot.node is not None else []
        tls.node = hot.node
        tls.depth = 1
        hot.other = True
        hot.steady = False

    def _note_action(self, mgr, action, node):
        tls = self.tls
        if self._hot.steady and self.lock._is_owned():
            self._general_noting()
        if tls.depth <= 0:
            return
        if action is not None:
            tls.actions.append(action)
        if node is not None:
            tls.node = node

    def _catch_up_steps(self):
        """The steps since the last event: each decrement of
        `MarkStepBox.mark_step_counter` is one (mark_step_begin, or a direct
        change). Each is written after the deaths the session heard of
        before it (the counter at each death says when), and the polled
        names found dead before the first. Every 64th step all knobs are
        due to be looked at (_knob_check), for the notes."""
        c = self._box.mark_step_counter
        mc = self._mark_counter
        if c > mc:  # reset_cudagraph_trees set it back to 0
            self.session.note("mark_step counter reset to %d (reset_cudagraph_trees)" % c)
        else:
            for i in range(mc - c):
                self.session.step(upto=mc - i)
            if c // 64 != mc // 64:
                self._all_knobs_due = True
            if c // 4096 != mc // 4096:
                self._all_knobs_read = True
        self._mark_counter = c

    def _between_calls(self, stage, write):
        """An event between tree calls: what is queued written first
        (_settle), then write()'s records; the recorder's own failure
        there is _fail's (stage: where)."""
        with self.lock:
            self._settle()
            try:
                write()
            except Exception as e:
                self._fail(stage, e)

    def _on_reset(self):
        """reset_cudagraph_trees() ran (torch._dynamo.reset() calls it): every
        tree is gone and the mark-step counter is back to 0."""
        if not self._off:
            self._between_calls("at a reset", self._trees_reset)

    def _trees_reset(self):
        """Every tree is gone (reset_cudagraph_trees): a reset record, no
        manager known, the mark-step counter as the reset left it (0)."""
        self.session.reset()
        self._known_mgr.clear()
        self._mark_counter = self._box.mark_step_counter

    def _on_skipped_backward(self, mgr):
        if self._off or self._in_call():
            return

        def write():
            self._check_manager(mgr)
            self.session.skipped_backward(mgr.device_index)

        self._between_calls("at a backward without cudagraphs", write)

    def _on_empty_cache(self, frame):
        """torch.cuda.empty_cache() returned, outside a tree call (the tree's
        own, as torch.cuda.graph empties the cache at every recording, is
        the engine's to model): an empty_cache record, its src the line
        that called it, frame's: the program's, or a library's own (the
        tree manager's first torch.cuda.graph, made when a function is
        compiled, empties the cache too), which the user must not take
        for a line of theirs."""
        if self._off or self._in_call():
            return
        # (_src_of gives None for a frame without a line; a failure in it
        # is the recorder's, as _between_calls takes write's)
        self._between_calls("at torch.cuda.empty_cache()",
                            lambda: self.session.empty_cache(self._src_of(frame.f_code, frame.f_lineno)))

    def _on_plain_cudagraph(self):
        """A compiled graph's first run made its CUDA graph outside the
        trees (compile_fx's cudagraphify_impl: triton.cudagraph_trees
        off). cgtviz models the trees only: the graph's calls are not
        recorded, and a note at this point of the trace says so (stop
        warns once, with the count)."""
        if self._off:
            return

        def write():
            self.plain_cudagraphs += 1
            self.session.note(
                "compiled graph %d of this program made its CUDA graph outside CUDAGraph Trees "
                "(torch._inductor.config.triton.cudagraph_trees is False): cgtviz models the trees only, "
                "so its calls are not in this trace" % self.plain_cudagraphs)

        self._between_calls("at a CUDA graph outside the trees", write)

    def _check_manager(self, mgr):
        """A reset the wrapper did not see: the mark-step counter back at 0
        (only reset_cudagraph_trees does that), or a new tree manager on the
        device (its container let the old one go when the last of its
        compiled functions died)."""
        if self._box.mark_step_counter == 0 and self._mark_counter != 0:
            self._trees_reset()
        dev = mgr.device_index
        last = self._known_mgr.get(dev)
        if last is None or last() is not mgr:
            if last is not None:
                self.session.reset(dev)
            self._known_mgr[dev] = weakref.ref(mgr)


    def _on_read(self, name, error, frame=None):
        """A read of name (error: PyTorch's, or None), its src the first of
        the program's frames from frame out (default: the caller's)."""
        if self._off:
            return
        try:
            with self.lock:
                self._settle()
                self._catch_up_steps()
                self.session.read(name, error, self._read_src(frame if frame is not None else sys._getframe(1)))
                # (A journal holds it as _fresh_call holds a call: a training
                # loop's read of its loss at every step wrote the step's
                # records at once, a write a step.)
                self._flush_or_hold()
        except Exception as e:
            self._fail("recording a read", e)

    def _read_src(self, frame):
        """A host read's src: the first of the program's frames from frame
        out (_src_of's, or None)."""
        got = self._frames_outside(frame, 1)
        return self._src_of(got[0][0].f_code, got[0][0].f_lineno) if got else None

    def _read_named(self, t):
        """The name a host read of tensor t reads now (Session.read_target),
        or None: the read wrapper's lookup, asked again once the deferred
        calls are written, which may rename the tree's outputs."""
        return self.session.read_target(t, lambda: t.untyped_storage()._cdata)

    def _read_lean(self, target):
        """Whether a host read of the tree output named target (the read
        wrapper's, hooks.py), made while calls are deferred, may be queued
        behind the last of them (_queue_read) rather than write them all
        first (_settle), which disarms the lean paths: the read is of that
        call's output (one the tree handed out, or a view of its storage):
        the lean fresh path's queue's one output (with no replay deferred
        besides), or an output of the last deferred steady replay's plan
        (with no call on a new input queued). A loop that reads its loss
        or token at every step would otherwise take the slower way that
        arms the path again at every call (BENCHMARKS.md, session 37)."""
        e = self.session.entries.get(target)
        if e is None:
            return False
        if self._fq:
            a = self._hot.fql
            return a is not None and not self._pending and e is a[A_PLAN].entries[0]
        pend = self._pending
        return bool(pend) and e in pend[-1][0].entries  # (by identity: _Entry has no __eq__)

    def _queue_read(self, target, retarget, frame):
        """The host read of target _read_lean let through, done without an
        error: queued behind the last deferred call when what happened
        since that call is only what such a read's records may follow: no
        step, no polled name dead, and no death but, behind a call on a
        new input, queued inputs' (the loop's input, let go as the call
        returned: their del is written before the read, and the next call
        finds none). Its src is the first of the program's frames from
        frame out, as _on_read finds it. The deferred calls' writing
        writes it after that call's records, the output named as that
        call named it (_fq_write, _write_pending), as Session.read names
        it after _settle. Otherwise it is recorded as any read is (what is
        deferred written, then _on_read, the output named again by
        retarget())."""
        session = self.session
        try:
            # (_read_lean again: the read's own method ran since, and what it
            # called may have reached the tree.)
            if (self._read_lean(target) and self._box.mark_step_counter == self._hot.mark_counter
                    and not (session._watch and session.watch_dead(session._watch.values()) is not None)):
                dead = session._dead_objs
                n = len(dead)
                if self._fq:
                    self._fq_sync()
                    reads, k = self._fq_reads, id(self._fq[-1])
                    gone = self._queued_deaths(dead, n) if n else None
                else:
                    reads, k = self._pending_reads, len(self._pending) - 1
                    gone = None
                if (gone is not None or not n) and len(reads.get(k, ())) < _READS_AFTER_CALL:
                    if gone is not None:
                        del dead[:n]
                        for _, x in gone:
                            x.gone = True
                    # (Behind a call on a new input: its src and deaths; behind
                    # a steady replay, its src and the output's entry.)
                    reads.setdefault(k, []).append((self._read_src(frame),
                                                    gone if self._fq else session.entries[target]))
                    self.lean_reads += 1
                    return
            self._settle()
            target = retarget()
        except Exception as e:
            self._fail("recording a read", e)
            return
        if target is not None:
            self._on_read(target, None, frame)

    def _queued_deaths(self, dead, n):
        """The first n deaths of dead as [(weak reference, its queued
        call)] where each is a queued input's not gone yet (their del may
        come before a read queued behind the calls); else None."""
        self._fq_sync()
        wrs = self._fq_wrs
        gone = []
        for wr, _ in dead[:n]:
            x = wrs.get(id(wr))
            if x is None or x.gone or x.wr is not wr:
                return None
            gone.append((wr, x))
        return gone

    def _on_knobs(self, raw):
        """PyTorch's settings changed since the last call: a `config` record
        with the format's settings that changed, a note for the other knobs."""
        cfg = settings_from_knobs(raw)
        changes = {k: v for k, v in cfg.items() if self._cfg.get(k) != v}
        if changes:
            self.session.config(changes)
        mapped = _MAPPED_KNOBS
        for k in sorted(set(raw) | set(self._raw)):
            if k not in mapped and raw.get(k) != self._raw.get(k):
                self.session.note("torch config %s changed to %r" % (k, raw.get(k)))
        self._raw, self._cfg = raw, cfg


    def _knob_check(self, fs):
        """The knobs with a format key at every call (through their probes:
        read only when one moved); all of them (the others are noted only)
        at a function's first call (fs None) and after every 64th step,
        read when a probe moved or, every 4096 steps, whatever the probes
        say (a change a probe could miss)."""
        knobs = self._knobs
        due, self._all_knobs_due = self._all_knobs_due, False
        force, self._all_knobs_read = self._all_knobs_read, False
        if fs is None or (due and (knobs.changed(all_knobs=True) or force)):
            raw = knobs.read()
        elif knobs.changed():
            raw = knobs.read(all_knobs=False)
        else:
            return
        if raw is not self._raw and raw != self._raw:
            self._on_knobs(raw)


    def _fail(self, stage, e):
        """The recorder's own error: warn once, note it in the trace, and stop
        recording (the program goes on, unrecorded from here)."""
        if self._off:
            return
        if self._pending:  # (what was deferred before the failure is the trace's)
            try:
                self._write_pending()
            except Exception:
                pass
        if self._fq:
            try:
                self._fq_write()
            except Exception:
                pass
        self._off = True
        self._hot.disarm()
        self.error = "%s: %s: %s%s" % (stage, type(e).__name__, e, _where(e))
        try:
            self.session.note("cgtrace stopped recording here: %s" % self.error)
            if self.trace.done is not None:  # (journaled: a later crash keeps the note)
                self.trace.flush()
        except Exception:
            pass
        _warn("cgtrace: recording stopped (%s); the program continues unrecorded" % self.error)
