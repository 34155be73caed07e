"""The Recorder: its state, start and stop, and the trace's output
(written whole, or streamed for a follower). What it does at each event
is in its mixins: hooks.py (what it installs), calls.py (a call's general
path), fresh.py (a call on new inputs, before it, and the _run wrapper's
whole call of it), freshq.py (that call, queued), deferred.py (the
steady replay, queued), events.py (everything else), facts.py (what it asks
torch)."""

import atexit
import functools
import json
import os
import signal
import stat
import threading
import time

from . import compat, cpp, fastpath, torch_api
from .calls import _Calls
from .deferred import _Deferred
from .errors import _warn
from .events import _Events
from .facts import _Facts
from .fresh import _WRITE_BOUND, _Fresh
from .freshq import _FreshQueue
from .hooks import _ABSENT, _Hooks
from .jsonl import SMALL_TENSOR, Trace, _Journal
from .knobs import _jsonable, _Knobs, settings_from_knobs
from .liveness import _tree_stats
from .raised import _Raised
from .session import Session

# The recording in progress: one at a time, as the tree's wrappers are one.
_ACTIVE = {"recorder": None}
# How long a call a journaled trace buffers (a deferred replay, a queued
# call on a new input, one of _fresh_call's) may wait before it is
# written, in ms: a call that ends this long after the journal's last
# writing writes it and every call buffered with it, whatever the
# bounds in calls (hooks._JOURNAL_BOUND, freshq._FQ_BOUND,
# fresh._WRITE_BOUND). So a program whose calls are further apart (a
# training step, a decode step of a large model) loses none that
# returned when it dies, and a fast loop loses at most its last JOURNAL_MS
# of calls. CGTRACE_JOURNAL_MS sets it (0: every call written as it ends).
# A call whose time passes with no call after it to write it (the
# program's last before a long wait, or before it was killed in one) is
# written by the journal's clock (Recorder._ticking), a thread that looks
# every JOURNAL_MS.
JOURNAL_MS = 20


def _journal_ns():
    """JOURNAL_MS, or CGTRACE_JOURNAL_MS where it is a number >= 0, in ns."""
    v = os.environ.get("CGTRACE_JOURNAL_MS")
    try:
        ms = float(v) if v is not None else JOURNAL_MS
    except ValueError:
        ms = JOURNAL_MS
    if not ms >= 0:  # (nan, negative)
        ms = JOURNAL_MS
    return int(ms * 1e6)


def _after_fork_in_child():
    """(os.register_at_fork) A process forked while a recording runs (a
    DataLoader's worker, a multiprocessing pool's process, os.fork) holds
    a copy of the recording, its file descriptor and its records not yet
    written: left alone, its exit, a SIGTERM (a DataLoader ends a worker
    that way) or a flush would write that copy into the parent's trace
    (Recorder._forked)."""
    rec = _ACTIVE["recorder"]
    if rec is not None:
        rec._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Hot:
    """The recorder's state that the _run wrapper's steady path reads at
    every call, in one small object of slots (the Recorder's attributes of
    the same names read and write it): in the middle of torch's call each
    object the path touches is a cache miss, and an instance dict's lookup
    is several. `node` and `other` are what the tree did in a call the
    steady path let run (execute_node's node; anything else), and `steady`
    says one is running (in the thread holding the recorder's lock)."""
    # (In the order a lean call reads them: the slots every such call
    # reads first, together, so that they share as few cache lines as
    # they can; the object is 16-byte aligned, so the first eight, 64
    # bytes, span at most two.)
    __slots__ = ("steady", "lfid", "fql", "off", "mark_counter", "left", "node", "other", "due", "unwritten",
                 "lean", "serial", "cfg", "fid", "got", "armed", "rec")

    def __init__(self):
        # The FunctionID whose plan was last found to hold, and its cache
        # entry (Recorder._fid_cache): the next call of it needs no lookup.
        # Cleared at every other event (_settle), as the plan may change.
        self.fid = self.got = None
        # What the _run wrapper's lean path compares (_steady arms it), by
        # id(FunctionID): the FunctionID, its plan, the manager's weak
        # reference, the first mark-step count of the 64 the arming saw,
        # and the plan's fields it reads. Emptied at every other event
        # (_settle), at every counted config write, at a failure.
        self.armed = {}
        # The last function armed and its tuple (also in armed): a loop of
        # one function finds it without hashing.
        self.lfid = self.lean = None
        self.rec = None  # the Recorder: what the lean path calls when it leaves
        # The queue of calls on new inputs armed for the _run wrapper's
        # lean fresh path (freshq._FreshQueue._fq_arm: its FunctionID
        # first), or None: set when a call joins the queue, cleared when
        # the queue is written (and at every other event, which writes
        # it, and at a counted config write).
        self.fql = None
        self.steady = False
        self.cfg = 0  # writes to the format's knobs' config modules (Recorder._count_config_writes)
        self.left = 0  # steady calls left before the knobs' probes are read (_steady)
        self.off = False
        self.serial = 0
        self.mark_counter = 0
        self.node = None
        self.other = False
        # When the journal's buffered calls are due (time.monotonic_ns):
        # a lean path that buffers a call past it writes them all
        # (Recorder._flush sets it JOURNAL_MS on from each writing), so a
        # program that dies loses no call that ended that long after the
        # last writing. None: no journal (nothing buffered is due).
        self.due = None
        # Calls through _fresh_call whose records a journaled trace holds
        # unwritten (fresh._WRITE_BOUND): 0 at every flush. Here, not on
        # the Recorder, so that the lean fresh path's C reads it at its
        # offset at every call: an attribute of the Recorder is looked up
        # in its class first (the type cache, and where torch's code
        # evicted its entry, each of the class's ten bases' dicts).
        self.unwritten = 0

    def journal_due(self):
        """Whether the journal's buffered calls are due (due has passed)."""
        return self.due is not None and time.monotonic_ns() >= self.due

    def disarm(self):
        """Every function's lean path off until _steady arms it again, and
        the queue's (until its next call joins it)."""
        self.armed.clear()
        self.lfid = self.lean = None
        self.fql = None


def _hot_attr(name):
    return property(lambda self: getattr(self._hot, name),
                    lambda self, v: setattr(self._hot, name, v))


_APPROXIMATIONS = (
    "bodies are synthesised (one statement per output: alias, add of an input, or fill), "
    "not inductor's kernels; tensors appear at their first use by a compiled call (a parameter whose data was replaced before the call's other new inputs); "
    "values of tensors over %d elements, and of any dtype but float32, are not reproduced "
    "(rand); tensors dying inside a call (saved activations in a backward, inputs the tree "
    "let go of) are deleted right after its expect; view offsets are absolute, in elements "
    "of the base's storage; a tensor the format cannot hold (sparse, CPU, meta, a subclass "
    "without storage) is left out with a note" % SMALL_TENSOR)


class _CallState(threading.local):
    """The recorder's per-thread state of the call in progress: its depth
    (a call re-entering the tree's _run is the same call), what the tree
    did in it (actions) and the node it ran, and whether the recorder's
    own read is in progress (busy). Class defaults: read without getattr."""
    depth = 0
    actions = None
    node = None
    busy = False


def _is_fifo(path):
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


class Recorder(_Hooks, _Calls, _Fresh, _FreshQueue, _Deferred, _Events, _Facts, _Raised):
    """Records the CUDAGraph Trees activity of the code run while it is
    active. Use `with record(path):`; it patches the tree manager's entry
    points (the class's `_run`, `run_eager`, `record_function`,
    `execute_node`) and restores them on exit, then writes the trace.

    Steps (`cudagraph_mark_step_begin`) are not wrapped: each one moves
    `MarkStepBox.mark_step_counter` down by one, and the next event writes
    the steps since the last (`_catch_up_steps`). Nothing can see a step
    before the next call or host read does, and a call costs less without
    a wrapper around every step.

    This class holds the state, start and stop; its mixins the work:
    _Hooks (hooks.py) what is patched in, _Calls (calls.py) a call's
    general path, _Fresh (fresh.py) a call on new inputs before the
    tree's call (and the _run wrapper's whole call of it), _FreshQueue
    (freshq.py) that call queued, _Deferred (deferred.py) the steady
    replay, _Events (events.py) every other event, _Facts (facts.py)
    torch's answers."""

    # A steady replay (the same node as the function's last call, on the
    # same inputs, handing out the same cached outputs) is deferred: the
    # _run wrapper checks it and queues it, and its records are written
    # when anything else happens (_settle). Tests turn it off to compare.
    _defer = True
    # The general path names a call's inputs by the entries that named the
    # last call's first (_before_call): tests turn it off to compare.
    _by_last_entries = True
    # A replay like its function's last takes _fast_after after the tree's
    # call (or the general path's _general_after and _make_plan):
    # CGTRACE_DEFER=0 and tests turn it off to compare.
    _fast = True

    # (In _Hot: see there.)
    _off = _hot_attr("off")
    _serial = _hot_attr("serial")
    _mark_counter = _hot_attr("mark_counter")

    def __init__(self, path, name=None, meta=None, follow=None):
        # (Absolute: a program that changes its directory while recorded
        # finds its trace where it named it, whole, over its journal.)
        self.path = os.path.abspath(path)
        # Streamed as it is made (Trace.stream) for a follower: asked for,
        # or CGTRACE_FOLLOW=1, or the path is a named pipe.
        if follow is None:
            follow = os.environ.get("CGTRACE_FOLLOW") == "1" or _is_fifo(path)
        self.follow = bool(follow)
        self.trace = Trace(name or os.path.basename(path), meta=meta, strict=False)
        self.session = Session(self.trace)
        # The lean paths' checks: the C module fastpath.load() built, or
        # its Python reference, and why (None: the C module).
        self._checks, self.fast_why = fastpath.load()
        # The recorder's lock: the C module's RLock (threading.RLock's, one
        # the Runner takes and lets go in place) where it is built.
        self.lock = getattr(self._checks, "RLock", threading.RLock)()
        # CGTRACE_DEFER=0: every call through the general path, to hold the
        # deferred path's traces against (tools/gpu/deferred-same.py), the
        # fresh path's (fresh.py) and the short way after a replay's
        # (_fast_after, the rebound replays among them): none is taken.
        if os.environ.get("CGTRACE_DEFER") == "0":
            self._defer = False
            self._fresh_path = False
            self._fast = False
        self._hot = _Hot()
        self._hot.rec = self
        self._journal_ns = _journal_ns()
        # The journal's clock (_ticking), while a journal is written.
        self._ticker = None
        # The lean paths' torch reads through libtorch's C++ API, and why
        # not (cpp.py): found at start, with torch.
        self._cpp, self.cpp_why = None, "not started"
        self.tls = _CallState()
        self._saved = {}
        self._mgr_serial = {}
        self._param_names = {}  # id(param) -> module path, filled lazily
        self._gen = None  # torch._dynamo.mutation_guard.GenerationTracker, at start
        self._off = False  # set by the recorder's own failure: calls pass through
        self._forked_child = False  # this process is a fork of the recorded one (_forked)
        self.error = None  # that failure, as text
        self._skipped = set()  # kinds of tensors left out (noted once each)
        self._trees = {}  # device -> {nodes, roots, checkpoints} after the last call
        self._fid_cache = {}  # id(FunctionID) -> (it, the manager's weakref, FnInfo, _FnState)
        self._node_key_cache = {}  # id(node) -> (weakrefs to node and its manager, _node_keys)
        self._known_mgr = {}  # device -> weakref to the tree manager its last call ran in
        # Compiled graphs whose CUDA graph was made outside the trees
        # (triton.cudagraph_trees off: _on_plain_cudagraph), not recorded.
        self.plain_cudagraphs = 0
        # Calls that took the short path (_fast_after, or deferred): what
        # tools/gpu/recorder-overhead.py reports, to show the path is taken.
        self.short_calls = 0
        self.fresh_calls = 0  # calls whose new inputs took _fresh_before (or _fresh_call)
        self.lean_fresh_calls = 0  # of those, the calls _fresh_call took whole
        self.queued_fresh_calls = 0  # of those, the calls it deferred (freshq.py)
        self.lean_queued_calls = 0  # of those, the calls the lean fresh path took (freshq._fresh_lean_run)
        self.lean_reads = 0  # host reads queued behind a deferred call (events._queue_read)
        self.kept_queued = 0  # the queue's bound writes that left its last call queued (freshq._fq_write)
        self.rebound_calls = 0  # replays whose outputs, all dead since, _fast_after bound again (rebound)
        self._whole = {}  # (_Fresh._whole)
        self.armings = 0  # times _steady armed the _run wrapper's lean path
        # Deferred replays (the _run wrapper's steady path): one
        # (plan, the steps before it, its invocation) per call, written
        # (and numbered, and counted) by _write_pending before anything
        # else is.
        self._pending = []
        # Deferred calls on new inputs (freshq.py), and by what the checks
        # of the next one find their new inputs: id(object), id(its weak
        # reference), storage -> the _Queued (a gone one stays: the checks
        # pass over it). Counted (short_calls, fresh_calls) when written.
        self._fq = []
        self._fq_ids, self._fq_wrs, self._fq_stor = {}, {}, {}
        # Host reads of the last deferred call's output, queued behind it
        # (_queue_read), written after its records: id(the _Queued) ->
        # [(src, the queued inputs dead before the read)] (_fq_write);
        # the deferred replay's index -> [(src, the output's entry)]
        # (_write_pending).
        self._fq_reads, self._pending_reads = {}, {}
        # Moves at every event but a deferred replay (_settle): a plan
        # checked at this serial still holds as far as the session goes.
        self._serial = 0
        # Every knob is to be looked at (due) or read (read) at the next call
        # (_catch_up_steps, _knob_check).
        self._all_knobs_due = self._all_knobs_read = False
        self._signals = {}  # signal -> the handler before the journal's (_exit_guards)
        self._compat = None  # what compat.check found of this torch, at start
        # The caches of what the Python stack says are keyed by file name
        # and line, never by code object, and a plan keeps its src frame's
        # code by weak reference: Dynamo frees a compiled frame's globals
        # (its compiled graph, and the graph's parameters and their grads,
        # in the tree's pool) when the frame's transformed code object
        # dies, so a recorder holding that code would keep them alive
        # (issue 33 item 2: the peer suite's tearDown found the pool's
        # block of a grad after torch._dynamo.reset()).
        self._lib_file = {}  # file name -> whether it is the library's (_frames_outside)
        self._src_cache = {}  # (file name, line, function name) -> (src dict, its JSON) or None (_src_of)
        self._own_file = {}  # file name -> whether it is this package's (_call_srcs)


    def start(self):
        """Patches PyTorch's tree manager, and Tensor's read methods, in
        phases: the settings read (_read_settings), the tree's entry
        points saved (_save_entry_points) and wrapped (_install_tree), the
        recording made active, then the header's facts (_begin)."""
        if _ACTIVE["recorder"] is not None:
            raise RuntimeError("cgtrace: a recording is already active (%s)" % _ACTIVE["recorder"].path)
        torch, cgt, inductor_config, generation_tracker, dynamo_config = torch_api.load()
        self.torch, self.cgt = torch, cgt
        self._gen = generation_tracker
        self._strided = getattr(torch, "strided", None)
        self._dtypes = {}  # torch dtype -> the format's name
        # What of this torch the recorder can wrap, looked at before
        # anything is patched (compat.py): a torch it was not made for is
        # said so once, on stderr, and what it lacks is in the trace.
        version = getattr(torch, "__version__", "unknown")
        found = compat.check(version, cgt)
        compat.say_made_for(version)
        self._compat = found
        if found.meta() is not None:
            self.trace.meta["cgtrace_compat"] = found.meta()
            for text in found.notes():
                self.session.note("cgtrace on torch %s: %s" % (version, text))
        if found.fatal:
            return self._start_off(torch, cgt, "this torch (%s) is not one cgtrace can record: %s"
                                   % (version, "; ".join(found.fatal)))
        try:
            # The settings first: nothing is patched yet if reading them fails.
            self._read_settings(inductor_config, dynamo_config)
            self._cpp, self.cpp_why = cpp.load(torch)
            # (A build started in the background is said on stderr, once:
            # a compiler runs beside the program. The trace is the same
            # either way, and says nothing of it.)
            cpp.say_building(self.cpp_why)
            # The step clock and the weak-reference callback before the hooks
            # that bind them (the lean fresh path takes Session._died then).
            self.session.clock = functools.partial(getattr, cgt.MarkStepBox, "mark_step_counter")
            died = getattr(self._checks, "Died", None)
            if died is not None:
                # Session._died in C: no Python frame at each death of a
                # tensor the recorder watches (every new input of a loop),
                # and the clock's counter read there, not called.
                self.session._died = died(self.session._dead_objs, self.session.clock, cgt.MarkStepBox,
                                          "mark_step_counter")
            # The polled names' scan at every event, in C where it was built.
            self.session.watch_dead = getattr(self._checks, "watch_dead", self.session.watch_dead)
            # A name's binding and unbinding too (a training step's hundreds
            # of outputs), their maps made again with the _died above.
            self.session._bind_all = getattr(self._checks, "bind_all", self.session._bind_all)
            self.session._forget_all = getattr(self._checks, "forget_all", self.session._forget_all)
            self.session._name_maps()
            M = self._save_entry_points(torch, cgt)
            self._install_tree(torch, cgt, M)
        except Exception as e:
            # Something of this torch the checks did not foresee: whatever
            # was patched is put back, and the program runs unrecorded.
            self._unpatch()
            return self._start_off(torch, cgt, "starting the recording on torch %s: %s: %s"
                                   % (version, type(e).__name__, e))
        _ACTIVE["recorder"] = self
        self._box = cgt.MarkStepBox
        self._mark_counter = cgt.MarkStepBox.mark_step_counter
        self._begin(torch, cgt)
        return self

    def _start_off(self, torch, cgt, why):
        """A recording that cannot start: nothing patched, the program runs
        as unrecorded, and the trace written at stop holds the header's
        facts and why (meta.recorder_error, a note), never an exception
        in the program."""
        self._off = True
        self.error = why
        meta = self.trace.meta
        meta.setdefault("source", "cgtrace")
        meta["torch"] = getattr(torch, "__version__", "unknown")
        self.session.note("cgtrace recorded nothing: %s" % why)
        _warn("cgtrace: %s; the program runs unrecorded" % why)
        self._mark_counter = getattr(getattr(cgt, "MarkStepBox", None), "mark_step_counter", 0)
        return self

    def _unpatch(self):
        """Puts back what start patched (the tree's entry points, Tensor's
        read methods, the sys.monitoring tool id)."""
        self._unwatch_raises()
        if self._uses_cpp:
            self._uses_cpp = False
            self._checks.use_cpp(None, None)
        for (owner, attr), val in self._saved.items():
            if val is _ABSENT:
                try:
                    delattr(owner, attr)
                except AttributeError:
                    pass
            else:
                setattr(owner, attr, val)
        self._saved.clear()

    def _read_settings(self, inductor_config, dynamo_config):
        """PyTorch's knobs: their probes set up, their writes counted, their
        values read into the header's config and meta."""
        self._knobs = _Knobs(inductor_config, dynamo_config)
        self._count_config_writes(self._knobs.homes)
        raw = self._knobs.read()
        self._raw = raw
        self._cfg = settings_from_knobs(raw)
        # The probes' answers for what was just read: a change from here on
        # moves one.
        self._knobs.changed()
        self._knobs.changed(all_knobs=True)
        self.trace.config = dict(self._cfg)
        meta = self.trace.meta
        meta["torch_config"] = {k: _jsonable(v) for k, v in sorted(raw.items())}

    def _begin(self, torch, cgt):
        """The header's facts of the run (torch, the GPU), a note when the
        tree already held functions, and the stream opened when followed."""
        meta = self.trace.meta
        meta.setdefault("source", "cgtrace")
        meta["torch"] = torch.__version__
        if torch.cuda.is_available():
            meta["gpu"] = torch.cuda.get_device_name(0)
        existing = [d for d, c in getattr(getattr(cgt, "local", None), "tree_manager_containers", {}).items()
                    if getattr(c, "tree_manager", None) is not None
                    and getattr(c.tree_manager, "ids_to_funcs", None)]
        if existing:
            self.session.note("recording started after the tree on device(s) %s already held "
                              "functions: their warmups are not in this trace" % existing)
        if self.follow:
            self._open_stream(torch)
        elif os.environ.get("CGTRACE_JOURNAL", "1") != "0":
            self._open_journal(torch)

    def _open_journal(self, torch):
        """The trace written to its path as the program runs (Trace.journal,
        at every flush: _flush), so that a program that dies leaves what
        was recorded up to then; rewritten whole at stop. Its header is
        the streamed trace's (every device the program can use, the
        approximations, `streamed`, and `journal`, which says the program
        did not reach the recording's end); the final header is the one
        written today. A file that cannot be opened is no journal: the
        trace is written at the end, as it always was."""
        try:
            n = torch.cuda.device_count() if torch.cuda.is_available() else 1
        except Exception:
            n = 1
        header = self.trace.header()
        header["devices"] = max(1, min(int(n), 64))
        header["meta"] = dict(self.trace.meta, approximations=_APPROXIMATIONS, streamed=True,
                              journal="written as the program ran; the recording did not end "
                                      "(the program died): the trace holds what was recorded "
                                      "up to its last line")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        except OSError:
            return
        try:
            self.trace.journal(fd, header, self.path, self._journal_writer(fd))
            self._set_due()
        except Exception as e:
            try:
                os.close(fd)
            except OSError:
                pass
            self.trace.out = self.trace.done = None
            _warn("cgtrace: cannot write the trace to %s as the program runs (%s); "
                  "it is written at the end" % (self.path, e))
            return
        self._exit_guards()

    def _exit_guards(self):
        """What writes the journal's last records when the program leaves
        without stopping the recording: at exit (atexit: a script that
        started a recording and never stopped it), and at SIGTERM or SIGHUP
        when the program left them to their default (death): the records
        flushed, then the signal's default action, as without the recorder.
        A program killed otherwise (SIGKILL, a segfault, os._exit) keeps
        what the journal holds: each call's records are written when it
        returns (a call the fast paths hold, at most JOURNAL_MS later, and
        within their bounds in calls)."""
        atexit.register(self._at_exit)
        self._start_ticking()
        self._signals = {}
        if threading.current_thread() is not threading.main_thread():
            return
        for name in ("SIGTERM", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is None:
                continue
            try:
                if signal.getsignal(sig) is signal.SIG_DFL:
                    signal.signal(sig, self._on_fatal)
                    self._signals[sig] = signal.SIG_DFL
            except (ValueError, OSError):
                pass

    def _on_fatal(self, sig, frame):
        # A signal lands between two bytecodes of the main thread: inside
        # the recorder's own work (its lock held here) the records are
        # half made, and the journal keeps what its last flush wrote.
        try:
            if _ACTIVE["recorder"] is self and not self.lock._is_owned():
                with self.lock:
                    self._flush()
        except Exception:
            pass
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)

    def _at_exit(self):
        if _ACTIVE["recorder"] is self:
            self.stop()

    def _start_ticking(self):
        """The journal's clock (_ticking) started, unless every call is
        written as it ends (JOURNAL_MS 0)."""
        if self._journal_ns <= 0:
            return
        self._tick_stop = stop = threading.Event()
        self._ticker = threading.Thread(target=self._ticking, args=(stop, self._journal_ns / 1e9),
                                        name="cgtrace-journal", daemon=True)
        self._ticker.start()

    def _stop_ticking(self):
        """The journal's clock stopped, and waited for: it takes the lock
        only when free and holds it for one writing."""
        ticker, self._ticker = self._ticker, None
        if ticker is None:
            return
        self._tick_stop.set()
        if ticker is not threading.current_thread():
            ticker.join(5)

    def _ticking(self, stop, period):
        """The journal's clock: every period (JOURNAL_MS) until stopped,
        _journal_tick. A call the fast paths hold is written by the next
        call that ends past its time; the last call before the program
        waits (a data loader, a sleep, a host's work) has none, and a
        SIGKILL in that wait would lose it."""
        while not stop.wait(period):
            try:
                self._journal_tick()
            except Exception as e:  # (never the program's: noted, and the clock stops)
                if self.lock.acquire(False):  # (never waited for: stop() joins this thread)
                    try:
                        self._fail("writing the journal between calls", e)
                    finally:
                        self.lock.release()
                return

    def _journal_tick(self):
        """What the calls the fast paths hold (the deferred replays, the
        queued calls on new inputs, _fresh_call's records) need when their
        time (hot.due) has passed and no call came to write them: the
        journal written, as a call past due writes it (_flush), under the
        recorder's lock taken only if free (a call that holds it writes
        them itself, at its end). True when it wrote. Between calls, as a
        SIGTERM's flush (_on_fatal): what each held call records was made
        at the call."""
        if not self._held_past_due() or not self.lock.acquire(False):
            return False
        try:
            # (again, under the lock: a call or stop() may have come between)
            if _ACTIVE["recorder"] is not self or not self._held_past_due():
                return False
            self._flush(idle=True)
            return True
        finally:
            self.lock.release()

    def _held_past_due(self):
        """Whether calls are held (deferred replays, queued calls, records
        of _fresh_call's not yet written) and their time has passed."""
        return bool(self._pending or self._fq or self._hot.unwritten) and self._hot.journal_due()

    def _drop_exit_guards(self):
        self._stop_ticking()
        atexit.unregister(self._at_exit)
        for sig, old in getattr(self, "_signals", {}).items():
            try:
                if signal.getsignal(sig) == self._on_fatal:
                    signal.signal(sig, old)
            except (ValueError, OSError):
                pass
        self._signals = {}

    def _open_stream(self, torch):
        """Starts the streamed trace: the header now (with every device the
        program can use, and the approximations, since it is written before
        anything is recorded). A file that cannot be opened is warned
        about and the trace written whole at the end instead."""
        try:
            n = torch.cuda.device_count() if torch.cuda.is_available() else 1
        except Exception:
            n = 1
        self.trace.devices = max(1, min(int(n), 64))
        self.trace.meta["approximations"] = _APPROXIMATIONS
        self.trace.meta["streamed"] = True
        try:
            fh = open(self.path, "w", encoding="utf-8")
        except OSError as e:
            self.trace.meta.pop("streamed", None)
            _warn("cgtrace: cannot stream the trace to %s (%s); it is written at the end" % (self.path, e))
            return
        try:
            self.trace.stream(fh)
        except Exception as e:
            self._stream_failed(e)

    def _flush(self, settle=True, idle=False, handover=False):
        """Writes what the last event recorded to a streamed trace (once per
        call or host read, not per record: a follower sees whole events).
        settle False: the deferred calls stay deferred (the queue's bound
        write, which leaves its last call queued). idle: the journal's
        clock writes, no call having come for JOURNAL_MS (_set_due).
        handover: a queue's bound in calls reached (a loop at full speed):
        the journal's batch given to its writer thread (_journal_writer),
        written while the program runs on; every other write (a slow
        loop's call, the clock's) is in the file when this returns."""
        if self.trace.out is not None:
            if settle and (self._pending or self._fq):
                # (A call's own flush finds none: _on_run settled before it,
                # and nothing is deferred while it holds the lock.)
                self._settle()
            self._hot.unwritten = 0
            try:
                self.trace.flush(handover)
            except Exception as e:
                self._stream_failed(e)
            self._set_due(idle)

    def _flush_or_hold(self):
        """After an event _fresh_call or a host read recorded: a followed
        stream written at once; a journal's records held, up to
        fresh._WRITE_BOUND events or Recorder.JOURNAL_MS, then written
        (_flush)."""
        trace = self.trace
        if trace.out is not None:
            if trace.done is None or self._hot.unwritten >= _WRITE_BOUND or self._hot.journal_due():
                self._flush()
            else:
                self._hot.unwritten += 1

    def _set_due(self, idle=False):
        """hot.due JOURNAL_MS from now, after a writing of the journal; None
        where no journal is written (none opened, a followed stream, which
        writes each call, or one stopped or ended). idle (the journal's
        clock wrote: no call came for JOURNAL_MS): now, so the next call
        is written as it ends, as a slow loop's are, not held JOURNAL_MS
        from the clock's writing, which a program dying right after that
        call, its last, would lose (in a fast loop a call's end, not the
        clock, almost always writes first)."""
        t = self.trace
        if t.out is None or t.done is None:
            self._hot.due = None
        else:
            self._hot.due = 0 if idle else time.monotonic_ns() + self._journal_ns

    def _stream_failed(self, e):
        if self.trace.done is not None:
            # The journal only: the records are kept, and written whole at
            # the end as without one.
            fh, self.trace.out = self.trace.out, None
            try:
                fh.close()
            except Exception:
                pass
            _warn("cgtrace: stopped writing the trace to %s as the program runs (%s: %s); "
                  "it is written at the end" % (self.path, type(e).__name__, e))
            return
        fh, self.trace.out = self.trace.out, None
        try:
            if fh is not None:
                fh.close()
        except Exception:
            pass
        self._fail("writing the trace to %s" % self.path, e)

    def _forked(self):
        """This process is a fork of the recorded one. The trace is the
        parent's: the child writes nothing to it, ever, and runs
        unrecorded (torch's functions put back, the exit guards dropped,
        the trace's file pointed at /dev/null in this process only, so
        that even a buffered file's last flush at exit goes nowhere).
        Nothing here takes the recorder's lock: another thread of the
        parent may have held it at the fork, and it is no one's here."""
        _ACTIVE["recorder"] = None
        self._forked_child = True
        self._off = True
        trace = self.trace
        out, trace.out, trace.done = trace.out, None, None
        trace.records = []
        try:
            if out is not None:
                # (the journal's descriptor, or the followed stream's file's)
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, out.fd if isinstance(out, _Journal) else out.fileno(), inheritable=False)
                os.close(null)
        except (OSError, ValueError, AttributeError):
            pass
        try:
            self._unpatch()
            self._drop_exit_guards()
        except Exception:
            pass

    def stop(self):
        """Puts PyTorch's functions back and writes the trace. A failure to
        finish or write is the recorder's: warned about and kept in
        self.error, never raised into the program. In a forked child
        (_forked) there is nothing to stop or write."""
        if self._forked_child:
            return
        self._unpatch()
        if _ACTIVE["recorder"] is self:
            _ACTIVE["recorder"] = None
        self._drop_exit_guards()
        with self.lock:
            self._settle()
            try:
                if not self._off:
                    self._catch_up_steps()
                    if self._all_knobs_due:
                        self._knob_check(None)
                    if self.session.counts["calls"] == 0 and not self.plain_cudagraphs:
                        self._say_no_calls()
                self.session.finish()
                self._summarise(self.torch, self.cgt)
            except Exception as e:
                self._fail("finishing the trace", e)
            if self.trace.done is not None:
                self._end_journal()
            if self.trace.out is not None:
                self._end_stream()
                return
            if self.follow and self.error and "streamed" in self.trace.meta:
                return  # the stream broke: what it wrote is the trace, the warning said why
            try:
                if self.error:
                    self.trace.meta["recorder_error"] = self.error
                self.trace.write(self.path)
            except Exception as e:
                self.error = self.error or "writing %s: %s: %s" % (self.path, type(e).__name__, e)
                _warn("cgtrace: could not write the trace: %s" % self.error)

    def _say_no_calls(self):
        """A recording in which no compiled call reached the trees: most
        often a program compiled with torch.compile's default mode, which
        makes no CUDA graphs. Said in the trace (cgtviz run shows a trace
        without calls by its notes) and on stderr, where an empty trace
        would say nothing."""
        text = ("cgtrace: no compiled call reached CUDAGraph Trees while recording: the trees run only for graphs "
                "torch.compile made with mode=\"reduce-overhead\" or \"max-autotune\" (or options="
                "{\"triton.cudagraphs\": True}); its default mode makes no CUDA graphs")
        self.session.note(text)
        _warn(text)

    def _journal_writer(self, fd):
        """The C module's writer thread for the journal's file descriptor
        (jsonl._Journal: the queues' bound batches written by it, while
        the program runs on), or None: no C module, a platform without
        it, or CGTRACE_JOURNAL_THREAD=0 (every batch written in place by
        the call that made it, as before)."""
        make = getattr(self._checks, "JournalWriter", None)
        if make is None or os.environ.get("CGTRACE_JOURNAL_THREAD", "1") == "0":
            return None
        return make(fd)

    def _end_journal(self):
        """The journal's last records written and its file closed: the whole
        trace, written next, replaces it (and if that write fails, the
        journal is the trace)."""
        trace = self.trace
        try:
            trace.flush()
        except Exception:
            pass
        try:
            trace.drain()  # (what the writer thread holds in the file before it is read back)
        except Exception:
            pass
        fh, trace.out = trace.out, None
        self._set_due()  # (None: the journal is closed)
        try:
            fh.close()
        except Exception:
            pass

    def _end_stream(self):
        """The streamed trace's end: what the header would have held at the
        end (the counts, the recorder's error) as notes, then the file is
        closed."""
        trace = self.trace
        try:
            if self.error:
                self.session.note("cgtrace recorder_error: %s" % self.error)
            self.session.note("cgtrace recorded: %s" % json.dumps(trace.meta.get("recorded", {}),
                                                                  sort_keys=True))
            trace.flush()
            fh, trace.out = trace.out, None
            fh.close()
        except Exception as e:
            trace.out = None
            self.error = self.error or "writing %s: %s: %s" % (self.path, type(e).__name__, e)
            _warn("cgtrace: could not write the trace: %s" % self.error)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if exc[1] is not None and not self._forked_child:
            self._on_uncaught(exc[1])  # (an overwritten error the program did not catch: raised.py)
        self.stop()
        return False


    def _summarise(self, torch, cgt):
        s = self.session.counts
        meta = self.trace.meta
        summary = dict(s)
        trees = dict(self._trees)
        for dev, c in getattr(getattr(cgt, "local", None), "tree_manager_containers", {}).items():
            m = getattr(c, "tree_manager", None)
            if m is not None and m.roots is not None:
                trees[str(dev)] = _tree_stats(m)
        summary["trees"] = trees
        if self.plain_cudagraphs:
            summary["cudagraphs_outside_trees"] = self.plain_cudagraphs
            _warn("cgtrace: %d compiled graph%s made CUDA graphs outside CUDAGraph Trees "
                  "(torch._inductor.config.triton.cudagraph_trees is False): cgtviz models the trees only, "
                  "so their calls are not in the trace; leave cudagraph_trees on to record them"
                  % (self.plain_cudagraphs, "" if self.plain_cudagraphs == 1 else "s"))
        meta["recorded"] = summary
        meta["approximations"] = _APPROXIMATIONS


def record(path, name=None, meta=None, follow=None):
    """`with cgtrace.record("run.cgt.jsonl"):` records the CUDAGraph Trees
    activity of the code inside into that file (written on exit, also when
    the code raised). With follow (default: CGTRACE_FOLLOW=1, or a path
    that is a named pipe) the file is written as the program runs, one
    flush per compiled call or host read, for `cgtviz run --follow` or
    `cgtviz -follow`; the counts then end the file as a note instead of
    heading it."""
    return Recorder(path, name=name, meta=meta, follow=follow)
