"""What the recorder puts into torch, and takes out at stop: the tree
manager's wrappers (the _run wrapper's lean path, execute_node,
record_function, run_eager, reset_cudagraph_trees,
set_to_running_backward), the host-read wrappers of Tensor's methods,
the counting of config writes, and the recorder's frames kept off
Dynamo's frame hook."""

import functools
import os
import sys
import types

from . import facts, torch_api
from ._pycompat import op_call
from .errors import _error_text
from .events import _READS_AFTER_CALL, _Events
from .fastpath import L_PLAN, L_POLLED
from .fresh import DECLINED
from .freshq import _FQ_BOUND, _Queued
from .raised import mark_seen
from .session import Session

# Deferred replays a journaled trace may hold before writing them (in
# _steady, which the lean path enters at least every 64 calls; and any
# the journal has held Recorder.JOURNAL_MS, at the next replay's end).
_JOURNAL_BOUND = 32
# A patched attribute the class did not define itself.
_ABSENT = object()
# Tensor methods through which the host reads a tensor's values (print goes
# through __repr__ or __format__, numpy's asarray through numpy, `if t:`
# through __bool__); `to` only when it moves to the host.
_READ_METHODS = ("item", "tolist", "cpu", "numpy", "__repr__", "__format__", "__bool__",
                 "__float__", "__int__", "__index__", "to")


def _to_host(args, kwargs):
    dev = kwargs.get("device", args[0] if args else None)
    if dev is None:
        return False
    if isinstance(dev, str):
        return dev.split(":")[0] == "cpu"
    return getattr(dev, "type", None) == "cpu"


def _module_codes():
    """Every code object of this package's functions and classes' methods,
    the ones nested in them included (closures, lambdas, comprehensions)."""
    seen, stack = set(), []
    pkg = __name__.rpartition(".")[0]  # (cgtrace, or the name a copy was loaded under)
    mods = [m for n, m in list(sys.modules.items()) if m is not None and (n == pkg or n.startswith(pkg + "."))]

    def add(obj, name):
        obj = getattr(obj, "__func__", obj)  # (staticmethod, classmethod)
        if isinstance(obj, property):
            for f in (obj.fget, obj.fset, obj.fdel):
                if f is not None:
                    add(f, name)
            return
        code = getattr(obj, "__code__", None)
        if isinstance(code, types.CodeType) and getattr(obj, "__module__", None) == name:
            stack.append(code)

    for mod in mods:
        name = mod.__name__
        for obj in list(vars(mod).values()):
            if isinstance(obj, type) and obj.__module__ == name:
                for member in vars(obj).values():
                    add(member, name)
            else:
                add(obj, name)
    while stack:
        code = stack.pop()
        if code in seen:
            continue
        seen.add(code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return seen


def _is_compiling(torch):
    """torch.compiler.is_compiling, or a function always False on a torch
    without it: True while Dynamo traces (where a wrapper of torch's must
    be the original alone)."""
    return getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)


class _Hooks:
    """Recorder's wrappers: what start patches into torch (the tree's entry
    points, Tensor's read methods, the config modules' writes), each
    original kept in _saved for stop to put back."""

    # Whether start gave the C module the C++ module's FNS (fastpath's
    # use_cpp), which _unpatch takes back.
    _uses_cpp = False

    def _save_entry_points(self, torch, cgt):
        """The tree manager's entry points the recorder wraps, kept to be
        put back at stop; a torch without one is refused. Returns the
        manager's class."""
        M = cgt.CUDAGraphTreeManager
        for attr in ("_run", "run_eager", "record_function", "execute_node"):
            if attr not in M.__dict__:
                raise RuntimeError("cgtrace: this torch (%s) has no CUDAGraphTreeManager.%s; "
                                   "cgtrace follows torch 2.11" % (torch.__version__, attr))
            self._saved[(M, attr)] = M.__dict__[attr]
        skip = self._compat.skip if self._compat is not None else ()
        if "set_to_running_backward" in M.__dict__ and "set_to_running_backward" not in skip:
            self._saved[(M, "set_to_running_backward")] = M.__dict__["set_to_running_backward"]
        if "reset_cudagraph_trees" in cgt.__dict__ and "reset_cudagraph_trees" not in skip:
            self._saved[(cgt, "reset_cudagraph_trees")] = cgt.reset_cudagraph_trees
        return M

    def _install_tree(self, torch, cgt, M):
        """The tree's wrappers made and set, with the read wrappers between
        (the order start always had)."""
        _run = self._lean_run(torch, cgt, self._saved[(M, "_run")])
        execute_node, record_function, run_eager = self._tree_wrappers(M)
        self._wrap_reset_and_backward(cgt, M)
        self._wrap_plain_cudagraphs()
        self._wrap_empty_cache(torch)
        reads = None
        if os.environ.get("CGTRACE_READS", "1") != "0":
            reads = self._install_reads(torch.Tensor, cgt.MarkStepBox)
        if reads is not None:
            # (the errors an eager op raises on an overwritten output:
            # raised.py; its failure is noted, the recording goes on)
            try:
                self._watch_raises()
            except Exception as e:
                self._unwatch_raises()
                self.session.note("cgtrace: an overwritten output's error raised by an eager op is not recorded: "
                                  "%s: %s" % (type(e).__name__, e))
        self._skip_frames(reads)
        M._run = _run
        M.run_eager = run_eager
        M.record_function = record_function
        M.execute_node = execute_node

    def _lean_run(self, torch, cgt, orig_run):
        """The _run wrapper, with _steady, the part that arms it."""
        rec = self
        knobs = self._knobs
        call = op_call

        # What the steady path reads at every call is bound as defaults:
        # locals of its frame, where closure cells would be objects of
        # their own to reach (the tree calls _run(new_inputs, function_id)).
        # Only what a steady replay reads: each default is touched at every
        # call (the frame holds it), read or not.
        # Two parts: _run, the lean path every steady replay takes, and
        # _steady, which finds and checks the function's plan (once a
        # serial, and every 64th call or step) and arms _run for it.
        ptrs_equal = getattr(getattr(torch, "_C", None), "_tensors_data_ptrs_at_indices_equal", None)
        data_ptr = getattr(getattr(torch, "Tensor", None), "data_ptr", None)
        if self._cpp is not None and ptrs_equal is not None:
            # The same two through libtorch's C++ API (cpp.py): the kept
            # inputs' pointers without torch's binding code.
            ptrs_equal, data_ptr = self._cpp.ptrs_equal, self._cpp.data_ptr
            # (and ptrs_equal's loop as a C function, for _fastpath.c's
            # KeptSet: freshq._kept_set)
            self._ptrs_are = getattr(self._cpp, "PTRS_ARE", None)
            # (and an output's use count, asked at every call whose
            # outputs the tree polls, and a new input's reads, through the
            # module's FNS: _unpatch stops it; the C module knows the
            # module's new_input, which the lean fresh path's maps name)
            use_cpp = getattr(self._checks, "use_cpp", None)
            fns = getattr(self._cpp, "FNS", None)
            if use_cpp is not None and fns is not None and isinstance(getattr(torch, "Tensor", None), type):
                use_cpp(fns, torch.Tensor, self._cpp.new_input)
                self._uses_cpp = True
        # The checks, in C where it could be built (fastpath.py says why
        # not otherwise: Recorder.fast_why).
        checks = self._checks
        fresh_run = self._fresh_lean_run(torch, orig_run, cgt.MarkStepBox, ptrs_equal, data_ptr)

        def watch_alive(rec=rec):
            # Every polled name alive, asked of each (a steady replay of a
            # plan that polls names besides its outputs: rare).
            for e in rec.session._watch.values():
                if not e.fact.alive():
                    return False
            return True

        def _run(mgr, new_inputs, function_id, probed=False, hot=self._hot, armed=self._hot.armed.get,
                 acquire=self.lock.acquire, owned=self.lock._is_owned,
                 release=self.lock.release, orig_run=orig_run, box=cgt.MarkStepBox, gen=self._gen,
                 dead_objs=self.session._dead_objs, pend=self._pending.append,
                 ptrs_equal=ptrs_equal, data_ptr=data_ptr, fresh_run=fresh_run,
                 steady_ok=checks.steady_ok, steady_after=checks.steady_after, frame_src=checks.frame_src,
                 watch_alive=watch_alive):
            # The steady replay, deferred (Recorder._defer): a defined
            # function whose last call, a replay, left a plan (_make_plan),
            # called again on the same inputs, nothing having died or
            # changed since. _steady checked once a serial (_steady_holds)
            # what only another event can change, and armed this path for
            # the function (hot.armed: what it compares, in one tuple by
            # the FunctionID's id, each function its own: a training step
            # alternates several; emptied at every other event, _settle,
            # and at every counted config write). What the program or the tree can
            # change between two calls is checked here, by identity and
            # C-level passes, touching as few objects and lines of code as
            # it can: in the middle of torch's call each is a cache miss.
            # The call is queued, written at the next other event
            # (_settle); anything else goes back to _steady, or from it
            # (probed) to the general path (_on_run). The lock is taken
            # without waiting: a call while another thread holds it takes
            # _steady, which waits.
            if hot.steady:
                # A call re-entering the tree's _run inside a steady call:
                # 2.11's _run, finding no child to replay at a new
                # generation, ends the path and calls run() again (so
                # every replay of a root function passes here twice). In
                # this thread it is part of the steady call (execute_node
                # notes what it does); another thread's waits in _steady.
                if owned():
                    return orig_run(mgr, new_inputs, function_id)
                return _steady(mgr, new_inputs, function_id)
            if not acquire(False):
                return _steady(mgr, new_inputs, function_id)
            try:
                lean = hot.lean if function_id is hot.lfid else armed(id(function_id))
                if lean is None:
                    # Not armed. Two calls need none of _steady's checks
                    # (what it would do with them, without its frame and
                    # second taking of the lock): 2.11's _run re-entering
                    # itself inside a general call (tls.depth), passed
                    # through; and a call of a function whose calls take
                    # the fresh path (fs.fresh_tok: a loop over new
                    # inputs), which _steady hands to _on_run at once
                    # (_on_run settles and writes what is queued).
                    rec = hot.rec
                    if rec.tls.depth:
                        return orig_run(mgr, new_inputs, function_id)
                    fl = hot.fql
                    if fl is not None and fl[0] is function_id and not hot.off:
                        # A call of the function whose calls on new inputs
                        # are queued: the lean fresh path (freshq.py),
                        # else _fresh_call's, which looks at everything.
                        out = fresh_run(mgr, new_inputs, function_id, fl)
                        if out is not DECLINED:
                            return out
                    got = rec._fid_cache.get(id(function_id))
                    if got is not None and got[3].fresh_tok is not None and not hot.off:
                        # The call whole, in one frame, when it is one
                        # of one new input the fresh path takes (fresh.py;
                        # queued, freshq.py).
                        out = rec._fresh_call(orig_run, mgr, new_inputs, function_id, got)
                        if out is not DECLINED:  # (a global: only this branch reads it)
                            return out
                        rec._via_run = True  # (the lock held: no other thread's call between)
                        try:
                            return rec._on_run(orig_run, mgr, new_inputs, function_id)
                        finally:
                            rec._via_run = False
                    return _steady(mgr, new_inputs, function_id)
                c = box.mark_step_counter
                mc = hot.mark_counter
                left = hot.left
                try:
                    # Armed for this function, no 64th step since the
                    # arming and the knobs' probes read within 64 calls,
                    # the same manager, the memo's objects at the same
                    # data pointers, nothing died, each polled output
                    # alive by its refcount (fastpath.steady_ok). When the
                    # plan polls other names, every one is asked. (The
                    # polled names are the ones _steady_holds saw: only
                    # another event changes them.)
                    ok = steady_ok(lean, function_id, mgr, new_inputs, c, mc, left, probed, dead_objs, ptrs_equal,
                                   data_ptr)
                    if ok and lean[L_POLLED] is None:
                        ok = watch_alive()
                except Exception as e:
                    hot.rec._fail("before a call", e)
                    ok = False
                plan = lean[L_PLAN]
                src = None
                if ok and plan.src_code is not None:
                    # The call's src, where its general calls found it
                    # (plan.src_d frames past the tree's frame that called
                    # _run: one up from here, three when _steady armed
                    # this call): a frame of the same code there, at a
                    # line whose src a general call saw; else the general
                    # path finds it.
                    try:
                        src = frame_src(plan.src_d + (3 if probed else 1), plan.src_code, plan)
                    except Exception as e:
                        hot.rec._fail("before a call", e)
                    ok = src is not None
                if not ok:
                    if probed:
                        return hot.rec._on_run(orig_run, mgr, new_inputs, function_id)
                    return _steady(mgr, new_inputs, function_id)
                hot.left = left - 1
                hot.mark_counter = c
                inv = gen.generation
                hot.steady = True  # (what the tree does is noted in hot: execute_node)
                try:
                    out = orig_run(mgr, new_inputs, function_id)
                except BaseException as err:
                    hot.rec._steady_raised(plan, mc - c, inv, mgr, err, src)
                    raise
                hot.steady = False
                node = hot.node
                hot.node = None
                try:
                    # What _fast_after asks of the tree: the plan's node
                    # replayed, and nothing else done, handing out the plan's
                    # objects through the plan's wrappers, no checkpoint
                    # taken, nothing died.
                    if steady_after(lean, out, node, hot.other, mgr, dead_objs):
                        pend((plan, mc - c, inv, src))
                        if hot.journal_due():
                            # (the journal's calls waited long enough:
                            # Recorder.JOURNAL_MS; written, disarmed)
                            hot.rec._flush()
                    else:
                        hot.rec._steady_other(plan, mc - c, inv, mgr, out, node, src)
                except Exception as e:
                    hot.rec._fail("after a call", e)
                return out
            finally:
                release()

        def _steady(mgr, new_inputs, function_id, orig_run=orig_run, fid_get=self._fid_cache.get,
                    box=cgt.MarkStepBox, lock=self.lock, owned=self.lock._is_owned, tls=self.tls,
                    hot=self._hot, defer=self._defer, knobs=knobs, probes=knobs.probes,
                    versioned=knobs.homes is not None, call=call, rec=rec, pending=self._pending,
                    bound=_JOURNAL_BOUND, trace=self.trace):
            # The tree's call when _run is not armed for it: the function's
            # plan found (by the FunctionID's identity) and checked, and
            # _run armed for it and handed the call; or the general path.
            # c: one down a step since the last event (back up, at 0, is a
            # reset: the general path's). Every 64th step the knobs are
            # looked at, and every 4096th read, as the general path would
            # (_knob_check). The knobs: no write to their modules since the
            # plan was checked (versioned), and within every 64 calls their
            # probes too (hot.left: a write past __setattr__ is seen so);
            # or their probes at every call (hot.left stays 0).
            if hot.off or tls.depth or (hot.steady and owned()):
                # _run re-entering itself, in this thread (the tree's call
                # in progress: a general one, tls.depth; a steady one is
                # passed through by _run itself, and this test only keeps
                # _steady right for any other caller); a recording
                # stopped: passed through.
                return orig_run(mgr, new_inputs, function_id)
            with lock:
                if rec._fq:
                    # Deferred calls on new inputs: written first (the plan
                    # is checked against the session as they leave it).
                    rec._settle()
                if len(pending) >= bound and trace.out is not None:
                    # A journaled trace's deferred replays written (every
                    # 64 calls at most: the lean path comes here at least
                    # that often): a program that dies loses no more.
                    # (Handed to the journal's writer thread: a loop at
                    # full speed's.)
                    rec._flush(handover=True)
                got = hot.got if function_id is hot.fid else fid_get(id(function_id))
                plan = got[3].plan if got is not None else None
                # (A function whose last call took the fresh path, a loop
                # over new inputs: no steady replay to arm; _on_run's.)
                if plan is None or not defer or got[3].fresh_tok is not None:
                    return rec._on_run(orig_run, mgr, new_inputs, function_id)
                c = box.mark_step_counter
                mc = hot.mark_counter
                try:
                    # (probed: every probe read, the format's knobs' among them.)
                    probed = c // 64 != mc // 64
                    due = hot.left <= 0 or not versioned
                    ok = ((plan.serial == hot.serial or rec._steady_holds(got[3], plan, got, mgr))
                          and got[0] is function_id and got[1]() is mgr and c <= mc
                          and (not probed or (c // 4096 == mc // 4096 and not knobs.moved(True)))
                          and (hot.cfg == plan.cfg if versioned else True)
                          and (not due or probed or list(map(call, probes)) == knobs.probe_vals))
                except Exception as e:
                    rec._fail("before a call", e)
                    ok = False
                if not ok:
                    return rec._on_run(orig_run, mgr, new_inputs, function_id)
                if versioned and (due or probed):
                    hot.left = 64
                rec.armings += 1
                # (c - (c & 63): the first count of c's 64 steps, as c // 64 has it.)
                hot.armed[id(function_id)] = hot.lean = (function_id, plan, got[1], c - (c & 63), plan.nin,
                                                         plan.in_set, plan.in_ptrs, plan.in_idx, plan.polled,
                                                         plan.uses, plan.node_ref, plan.nout, plan.ckpt,
                                                         plan.out_refs, plan.wrappers)
                hot.lfid = function_id
                return _run(mgr, new_inputs, function_id, True)

        runner = getattr(checks, "Runner", None)
        if runner is None:
            return _run

        # The _run above in C (_fastpath.c's Runner: the same steps, each
        # Python function it calls called from this frame, as from
        # _run's, so every frame depth the recorder counts from its _run
        # holds): a steady replay runs none of the recorder's bytecodes
        # but this frame's few.
        # The lean fresh path's queued calls as entries in C, made the
        # _Queued objects only when anything else looks (_fastpath.c's
        # Compact, freshq._fq_sync); CGTRACE_COMPACT=0: a _Queued a call.
        compact = None
        if os.environ.get("CGTRACE_COMPACT") != "0" and hasattr(checks, "Compact"):
            compact = checks.Compact(self._fq, self._fq_ids, self._fq_wrs, self._fq_stor, _Queued)
        body = runner(hot=self._hot, armed=self._hot.armed, acquire=self.lock.acquire, owned=self.lock._is_owned,
                      release=self.lock.release, orig_run=orig_run, box=cgt.MarkStepBox, gen=self._gen,
                      dead_objs=self.session._dead_objs, pend=self._pending.append, ptrs_equal=ptrs_equal,
                      data_ptr=data_ptr, steady=_steady, rec=rec, declined=DECLINED,
                      watch_alive=watch_alive, lock=self.lock, fresh_ctx=self._fq_ctx, fq=self._fq, tls=self.tls,
                      fq_bound=_FQ_BOUND, compact=compact)

        def _run(mgr, new_inputs, function_id, probed=False, body=body):  # noqa: F811 (the C one replaces it)
            return body(mgr, new_inputs, function_id, probed)

        return _run

    def _tree_wrappers(self, M):
        """The execute_node, record_function and run_eager wrappers, which
        note what the tree did in a call."""
        rec = self
        orig_exec = self._saved[(M, "execute_node")]

        def execute_node(mgr, node, new_inputs, tls=self.tls, hot=self._hot, orig_exec=orig_exec, rec=rec):
            # Noted before running, so a replay that raises still says what
            # ran (_note_action, inline: every replay passes here). A call
            # the steady path let run notes its one replay in hot. (hot.steady
            # is this thread's: the steady call holds the lock, and no other
            # thread reaches the tree meanwhile.)
            if hot.steady:
                if hot.node is None:
                    hot.node = node
                    return orig_exec(mgr, node, new_inputs)
                rec._general_noting()
            if tls.depth:
                tls.actions.append("replay")
                tls.node = node
            return orig_exec(mgr, node, new_inputs)

        noter = getattr(self._checks, "Noter", None)
        if noter is not None:
            # The same in C (_fastpath.c's Noter): no Python frame at each
            # replay, a new-input loop's every call among them; the Python
            # above takes a call of any other shape.
            execute_node = noter(self._hot, self.tls, orig_exec, rec, execute_node)

        orig_record = self._saved[(M, "record_function")]

        def record_function(mgr, new_inputs, function_id):
            rec._note_action(mgr, "record", None)
            out = orig_record(mgr, new_inputs, function_id)
            rec._note_action(mgr, None, mgr.current_node)  # the node it made
            return out

        orig_warm = self._saved[(M, "run_eager")]

        def run_eager(mgr, new_inputs, function_id):
            rec._note_action(mgr, "warmup", None)
            return orig_warm(mgr, new_inputs, function_id)

        return execute_node, record_function, run_eager

    def _wrap_reset_and_backward(self, cgt, M):
        """reset_cudagraph_trees and set_to_running_backward, wrapped where
        this torch has them."""
        rec = self
        orig_reset = self._saved.get((cgt, "reset_cudagraph_trees"))

        def reset_cudagraph_trees(*args, **kwargs):
            try:
                return orig_reset(*args, **kwargs)
            finally:
                rec._on_reset()

        if orig_reset is not None:
            cgt.reset_cudagraph_trees = reset_cudagraph_trees
        orig_back = self._saved.get((M, "set_to_running_backward"))

        def set_to_running_backward(mgr, *args, **kwargs):
            # Called by a compiled backward whose cudagraphs were skipped
            # (compile_fx), before it runs eagerly outside the tree.
            rec._on_skipped_backward(mgr)
            return orig_back(mgr, *args, **kwargs)

        if orig_back is not None:
            M.set_to_running_backward = set_to_running_backward

    def _wrap_empty_cache(self, torch):
        """torch.cuda.empty_cache wrapped (in torch.cuda and torch.cuda.memory,
        where the program looks it up at its call): the cached segments it
        gives back change the allocator's state the trace replays, so a
        call that returned is an empty_cache record (_on_empty_cache). A
        name the program took before the recording started is not seen."""
        cuda = getattr(torch, "cuda", None)
        orig = getattr(cuda, "empty_cache", None)
        if not callable(orig):
            return
        rec = self
        # (Dynamo tracing a compiled function that calls it inlines this
        # wrapper: there it must be the original and nothing else, as the
        # read wrappers are; is_compiling() folds to True while it traces.)
        is_compiling = _is_compiling(torch)

        def empty_cache(*args, **kwargs):
            out = orig(*args, **kwargs)
            if not is_compiling():
                rec._on_empty_cache(sys._getframe(1))
            return out

        empty_cache.__wrapped__ = orig
        for owner in (cuda, getattr(cuda, "memory", None)):
            # (modules only: what _saved keys and puts back)
            if isinstance(owner, types.ModuleType) and getattr(owner, "empty_cache", None) is orig:
                self._saved[(owner, "empty_cache")] = orig
                setattr(owner, "empty_cache", empty_cache)

    def _wrap_plain_cudagraphs(self):
        """compile_fx's cudagraphs outside the trees wrapped to be counted:
        with torch._inductor.config.triton.cudagraph_trees off, a compiled
        graph's first run makes its graph through compile_fx's
        cudagraphify_impl (looked up there at each graph), never through
        the tree manager. cgtviz models the trees only, so such a
        program's calls are not recorded; without this its trace would
        hold no calls and say nothing of why (_on_plain_cudagraph)."""
        cfx = torch_api.compile_fx_module()
        orig = getattr(cfx, "__dict__", {}).get("cudagraphify_impl")
        if not callable(orig):
            return
        rec = self

        def cudagraphify_impl(*args, **kwargs):
            rec._on_plain_cudagraph()
            return orig(*args, **kwargs)

        cudagraphify_impl.__wrapped__ = orig
        self._saved[(cfx, "cudagraphify_impl")] = orig
        cfx.cudagraphify_impl = cudagraphify_impl

    def _install_reads(self, T, box):
        """Wraps the Tensor methods through which the host reads values, so a
        read of a tree output becomes a `read` record (and its error, if
        PyTorch raised one, an expect). A read made by PyTorch inside a tree
        call, or by the recorder itself, or nested in another read (print
        calls item()), is not one. Returns the wrappers' code (one for all of
        them), or None when no method was wrapped. box: the tree's MarkStepBox
        (the step counter a queued read compares)."""
        rec = self
        # Dynamo traces Python methods of Tensor: inside a compiled function
        # the wrapper must read as the original method and nothing else
        # (tracing the recorder's state would add guards and graph breaks,
        # and so change the program's graphs). is_compiling() is True while
        # Dynamo traces and constant-folds the branch away.
        is_compiling = _is_compiling(self.torch)
        hot = self._hot  # (Recorder._off is a property: a frame at every read)
        read_run, read_ctx = self._read_c(box) or (None, None)
        code = None
        for name in _READ_METHODS:
            orig = getattr(T, name, None)
            if orig is None:
                continue
            self._saved[(T, name)] = T.__dict__.get(name, _ABSENT)

            def wrapper(t, *args, _orig=orig, _name=name, **kwargs):
                if is_compiling():
                    return _orig(t, *args, **kwargs)
                if _name == "to" and not _to_host(args, kwargs):
                    return _orig(t, *args, **kwargs)
                if read_run is not None:  # (the same in C: _fastpath.c's read_run)
                    return read_run(read_ctx, t, _orig, args, kwargs)
                if hot.off or getattr(rec.tls, "busy", False) or rec._in_call():  # (hot.off: Recorder._off's)
                    return _orig(t, *args, **kwargs)
                # Under the lock from the name to the record: a compiled
                # call in another thread, deferred or not, renames the
                # tree's outputs it hands out again, and would otherwise
                # land between the read's name and its record.
                def named():  # (the name the read reads now, or None)
                    return rec._read_named(t)

                with rec.lock:
                    lean = False
                    try:
                        target = named()
                        if target is not None and (rec._pending or rec._fq):
                            # A read of the last deferred call's output
                            # queued behind it (_read_lean); else the
                            # deferred calls renamed the tree's outputs:
                            # named as they stand once written.
                            lean = rec._read_lean(target)
                            if not lean:
                                rec._settle()
                                target = named()
                    except Exception:
                        target = None
                    if target is not None:
                        rec.tls.busy = True
                        try:
                            out = _orig(t, *args, **kwargs)
                        except BaseException as e:
                            if lean:  # (recorded as any read is: the queue written first)
                                try:
                                    rec._settle()
                                    target = named()
                                except Exception:
                                    target = None
                            if target is not None:
                                rec._on_read(target, _error_text(e))
                                mark_seen(e)  # (recorded: not again as it unwinds, raised.py)
                            raise
                        finally:
                            rec.tls.busy = False
                        if lean:
                            rec._queue_read(target, named, sys._getframe())
                        else:
                            rec._on_read(target, None)
                        return out
                # (Not a tree output's: read without the lock, which a
                # compiled call in another thread may want meanwhile.)
                return _orig(t, *args, **kwargs)

            wrapper.__name__ = getattr(orig, "__name__", name)
            wrapper.__qualname__ = "Tensor." + wrapper.__name__
            wrapper.__doc__ = getattr(orig, "__doc__", None)
            setattr(T, name, wrapper)
            code = wrapper.__code__
        return code

    def _read_c(self, box):
        """(the C module's read_run, its ctx) for the read wrappers, or None:
        the wrapper's body below in C (_fastpath.c), which queues a read
        of the last deferred call's output without the recorder's Python
        (thirteen frames a read: a loop reading its loss at every step ran
        them at every step). None where the C module is not built, or
        where the recorder's methods it mirrors (_read_lean, _queue_read,
        _queued_deaths, _read_src, _frames_outside, _in_call,
        Session.read_target) are not these (a test that replaces one):
        the Python body runs them. The C reads the Recorder's _fq_reads,
        _pending_reads and lean_reads in its __dict__ (vars: no class
        attribute of those names)."""
        read_run = getattr(self._checks, "read_run", None)
        mirrored = [(getattr(type(self), n), getattr(_Events, n))
                    for n in ("_read_lean", "_queue_read", "_queued_deaths", "_read_src", "_in_call")]
        mirrored += [(type(self)._frames_outside, facts._Facts._frames_outside),
                     (type(self.session).read_target, Session.read_target)]
        if read_run is None or any(a is not b for a, b in mirrored) \
                or any(hasattr(type(self), n) for n in ("_fq_reads", "_pending_reads", "lean_reads")) \
                or type(self.lock) is not getattr(self._checks, "RLock", None):
            return None
        s = self.session
        ctx = (self, self._hot, self.tls, self.lock, box, s.entries, s.by_obj, s.out_storage, s._watch,
               s._dead_objs, self._fq, self._pending, self._fq_wrs, self._lib_file, facts._DYNAMO_CODES,
               self._src_cache, facts.dynamo_frame, _error_text, mark_seen, functools.partial, _READS_AFTER_CALL,
               vars(self))
        return read_run, ctx

    def _skip_frames(self, wrapper):
        """Keeps the recorder's frames off Dynamo's frame hook, which is set
        while compiled code runs and converts every Python frame started
        there (the `bool()` a graph break leaves, an `.item()` between two
        graphs, a weak reference's callback, a knob set by eager code the
        compiled code calls). A read wrapper converted is compiled with
        is_compiling() True and its read lost (6 of graph_break's 12 reads
        were lost so), and any recorder frame converted is a frame more
        than the program has unrecorded.

        The read wrappers a program enters (wrapper: their code) are
        never converted themselves, and what they call is handed to the
        hook as it is unrecorded (the original method's own frames: a
        tensor's __repr__ in torch and what it calls). Every other code of
        this package, and all it calls, is never handed to it: the recorder's
        own work. Dynamo still inlines the wrappers when it traces user code
        (where the read wrapper's guard folds it away): the strategies are
        the frame hook's, not the tracer's. tools/gpu/graphs-unchanged.py
        checks on the GPU that each program's graphs, graph breaks and
        converted frames are the ones it has unrecorded."""
        try:
            set_code_exec_strategy, FrameAction, FrameExecStrategy = torch_api.frame_strategies()
        except ImportError:
            self.session.note("this torch cannot keep Dynamo's frame hook off the recorder's wrappers: "
                              "host reads run from compiled code (after a graph break) may be missing")
            return
        entry = FrameExecStrategy(FrameAction.SKIP, FrameAction.DEFAULT)
        skip = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
        for code in _module_codes():
            set_code_exec_strategy(code, entry if code is wrapper else skip)


    def _count_config_writes(self, homes):
        """Counts every set and delete of a knob of the modules in homes
        (hot.cfg), through their classes' __setattr__ and __delattr__, put
        back at stop: a steady replay compares the count with its plan's.
        The module's own bookkeeping (its _bypass_keys: the config's hash)
        is not a knob."""
        if not homes:
            return
        hot = self._hot
        for cls in {type(m) for m in homes}:
            for attr in ("__setattr__", "__delattr__"):
                orig = getattr(cls, attr)
                self._saved[(cls, attr)] = cls.__dict__.get(attr, _ABSENT)

                def counted(mod, name, *value, _orig=orig):
                    if name not in getattr(mod, "_bypass_keys", ()):
                        hot.cfg += 1
                        hot.disarm()  # (_steady compares the count)
                    return _orig(mod, name, *value)

                counted.__name__ = attr
                setattr(cls, attr, counted)
