"""A program that dies mid-run keeps its trace (issue 33 item 1): the
recorder writes the trace to its path as the program runs (the journal,
Trace.journal), so a death by os._exit, SIGKILL or SIGSEGV leaves every
call recorded before it, each line whole JSON but perhaps the last.
Each test runs a program against the stand-in torch in a child process."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest

import fake_torch  # noqa: F401 (puts the recorder on sys.path)
from cgtrace.fresh import _WRITE_BOUND  # noqa: E402
from cgtrace.freshq import _FQ_BOUND  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# The program: a loop of calls of one function on a new input every 5th
# call (the general path; argv[4]: every so many calls, 1: a new input at
# every call, the fresh path's loop, whose records a journal holds up to
# its bound) and the same input otherwise (steady replays, deferred), a
# host read at call 7, then the death named by argv[2] after call argv[3].
# argv[5]: the tensors' shape (2,8 unless given: a tensor that small has
# its values recorded, which the lean fresh path leaves to the general
# path, one call at a time; 64,1024 is queued). It prints the number of
# calls made before dying. argv[6]: seconds slept before each call (a
# step's other work: a data loader's, an optimizer's), none unless given;
# argv[7] "last": before the last call only (a loop's calls queued fast,
# then one step slow). argv[8]: seconds slept after the last call, before
# the death (a wait with no call after it: a data loader's, the host's).
PROGRAM = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, %(here)r)
    import fake_torch as fake
    import cgtrace
    fake.install_fake_torch()
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    mgr = fake.CUDAGraphTreeManager()
    mgr.cache_replays = True
    fid = mgr.add(0, static=[0])
    path, how, upto = sys.argv[1], sys.argv[2], int(sys.argv[3])
    every = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    shape = [int(v) for v in sys.argv[5].split(",")] if len(sys.argv) > 5 else [2, 8]
    pause = float(sys.argv[6]) if len(sys.argv) > 6 else 0
    last_only = len(sys.argv) > 7 and sys.argv[7] == "last"
    after = float(sys.argv[8]) if len(sys.argv) > 8 else 0
    w = fake.Tensor([8, 8])
    x = fake.Tensor(shape)
    mgr.models[0] = lambda ins: [fake.Tensor(shape)]
    rec = cgtrace.record(path)
    rec.start()

    def loop(x, n):  # (in a function, as a program's loop mostly is)
        for i in range(n):
            if pause and (not last_only or i == n - 1):
                time.sleep(pause)
            cgt.mark_step_begin()
            fake._invocation()
            if i %% every == 0:
                x = fake.Tensor(shape)
            out = mgr._run([w, x], fid)
            if i == 7:
                out[0].item()

    loop(x, upto)
    if how == "fork":
        # Two forks of the recorded process, as a DataLoader's workers or
        # a multiprocessing pool's are: one ended by SIGTERM (Pool.terminate),
        # one leaving through sys.exit (its atexit); then the parent goes
        # on, and dies by SIGTERM, which writes its whole trace.
        sys.stdout.flush()
        ends = []
        for child in ("term", "exit"):
            pid = os.fork()
            if pid == 0:
                if child == "term":
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(5)
                    os._exit(9)
                sys.exit(0)
            _, status = os.waitpid(pid, 0)
            ends.append(os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
        sys.stderr.write("children: %%s\\n" %% ends)
        loop(x, 5)
        upto += 5
        how = "term"
    if after:
        time.sleep(after)
    sys.stdout.write("%%d\\n" %% upto)
    sys.stdout.flush()
    if how == "exit":
        os._exit(3)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "segv":
        import ctypes
        ctypes.string_at(0)
    if how == "term":
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    if how == "atexit":
        sys.exit(0)  # the recording never stopped
""")


class CrashTest(unittest.TestCase):
    def run_program(self, how, upto, every=5, shape=(2, 8), env_extra=None, pause=0, pause_at="each", after=0):
        with tempfile.TemporaryDirectory() as d:
            prog = os.path.join(d, "prog.py")
            with open(prog, "w") as fh:
                fh.write(PROGRAM % {"here": HERE})
            path = os.path.join(d, "t.cgt.jsonl")
            env = dict(os.environ)
            env.pop("CGTRACE_JOURNAL", None)
            env["PYTHONFAULTHANDLER"] = ""  # no traceback dump to read around
            # (The bounds in calls only, unless a test says otherwise: a
            # loaded machine's slow calls would reach Recorder.JOURNAL_MS.)
            env["CGTRACE_JOURNAL_MS"] = "600000"
            env.update(env_extra or {})
            # (The journal's writer thread writes a bound's batch as the
            # program runs on: a death meanwhile loses it too, check's slack.)
            self.thread = env.get("CGTRACE_JOURNAL_THREAD", "1") != "0"
            p = subprocess.run([sys.executable, prog, path, how, str(upto), str(every), ",".join(map(str, shape)),
                                str(pause), pause_at, str(after)], capture_output=True, text=True, timeout=60,
                               env=env)
            self.assertEqual(p.stdout.strip(), str(upto + 5 * (how == "fork")), p.stderr)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        return p, text

    def check(self, text, upto, whole, every=5):
        """Every full line is JSON, the header first; the calls recorded are
        the ones made (up to the journal's bound of steady replays, or of
        calls on new inputs, not yet written when the recording did not
        end). Returns the records."""
        lines = text.split("\n")
        last = lines.pop()  # after the final newline: "" unless cut mid-line
        self.assertEqual(last, "", "the journal writes whole lines")
        recs = [json.loads(x) for x in lines]
        self.assertIn("cgtviz", recs[0])
        calls = [r for r in recs[1:] if r.get("op") == "call"]
        expects = [r for r in recs[1:] if r.get("op") == "expect"]
        reads = [r for r in recs[1:] if r.get("op") == "read"]
        # (The 8th call's read: written with that call, which a queue of
        # calls on new inputs may hold, the read queued behind it.)
        self.assertEqual(len(reads), 1 if len(calls) >= 8 else 0)
        self.assertEqual(len(expects), len(calls) + len(reads), "each call's expect is written with it")
        if whole:
            self.assertEqual(len(calls), upto)
        elif every == 1:
            # Calls on new inputs: at most the bound's held unwritten (the
            # lean queue's, freshq._FQ_BOUND; _fresh_call's own,
            # fresh._WRITE_BOUND, is smaller), the last call's records at
            # the least.
            self.assertGreaterEqual(len(calls), upto - self.held_at_most())
            self.assertLessEqual(len(calls), upto)
        else:
            # The last general call (a new input, every 5th) and everything
            # before it: steady replays after it may wait for the bound.
            general = upto - 1 - (upto - 1) % 5
            self.assertGreaterEqual(len(calls), general + 1)
            self.assertLessEqual(len(calls), upto)
        self.assertEqual(sum(1 for r in recs if r.get("op") == "def"), 1)
        return recs

    def held_at_most(self):
        """The calls on new inputs a death may lose: the bound's held, and
        with the journal's writer thread the batch it was handed at the
        last bound (the bound's and the call kept queued) if it had not
        written it yet."""
        bound = max(_FQ_BOUND, _WRITE_BOUND)
        return 2 * bound + 1 if self.thread else bound

    def test_os_exit_keeps_the_calls(self):
        p, text = self.run_program("exit", 23)
        self.assertEqual(p.returncode, 3)
        recs = self.check(text, 23, whole=False)
        self.assertTrue(recs[0]["meta"].get("journal"), "the journal's header says the recording did not end")

    def test_sigkill_keeps_the_calls(self):
        p, text = self.run_program("kill", 31)
        self.assertEqual(p.returncode, -signal.SIGKILL)
        self.check(text, 31, whole=False)

    def test_sigsegv_keeps_the_calls(self):
        p, text = self.run_program("segv", 16)
        self.assertEqual(p.returncode, -signal.SIGSEGV)
        self.check(text, 16, whole=False)

    def test_many_steady_replays_are_written_within_the_bound(self):
        # 200 calls: the deferred replays are written at least every 64.
        p, text = self.run_program("kill", 200)
        recs = self.check(text, 200, whole=False)
        calls = sum(1 for r in recs if r.get("op") == "call")
        self.assertGreaterEqual(calls, 200 - (129 if self.thread else 64))

    def test_new_inputs_killed_keeps_the_calls_within_the_bound(self):
        # A new input at every call, large (the lean fresh path's queue,
        # written every _FQ_BOUND + 1 calls): SIGKILL and a segfault keep
        # every call but the ones queued since its last writing, never
        # more than the bound; killed at points of its cycle where it is
        # full, it holds as many as the bound (the 8th call's host read
        # queued with them, Recorder._queue_read: the cycle from the queue's
        # first call, the 4th).
        # The same with the journal's writer thread (by default) and
        # without (CGTRACE_JOURNAL_THREAD=0: the bound alone).
        for thread in ("1", "0"):
            held = []
            for how, sig, upto in (("kill", signal.SIGKILL, 150), ("segv", signal.SIGSEGV, 150),
                                   ("kill", signal.SIGKILL, _FQ_BOUND + 4),
                                   ("segv", signal.SIGSEGV, 2 * _FQ_BOUND + 4)):
                p, text = self.run_program(how, upto, every=1, shape=(64, 1024),
                                           env_extra={"CGTRACE_JOURNAL_THREAD": thread})
                self.assertEqual(p.returncode, -sig)
                recs = self.check(text, upto, whole=False, every=1)
                held.append(upto - sum(1 for r in recs if r.get("op") == "call"))
            self.assertGreater(min(held), 0, "the calls were queued")
            self.assertGreaterEqual(max(held), _FQ_BOUND - 1, held)
        # A small one has its values recorded, which the queue leaves to
        # the general path: every call written as it returns.
        p, text = self.run_program("kill", 150, every=1)
        self.check(text, 150, whole=True, every=1)

    def test_calls_further_apart_than_journal_ms_are_all_kept(self):
        # A step's other work between two calls (here a sleep of 60 ms,
        # past Recorder.JOURNAL_MS's 20, its default): every call that
        # returned is written as it ends, whatever it waited in (the lean
        # queue of new inputs, the deferred replays of one input, the
        # general path's), so SIGKILL and a segfault lose none.
        # Without the time bound these lose up to a bound of calls.
        for how, sig, every, shape in (("kill", signal.SIGKILL, 1, (64, 1024)), ("segv", signal.SIGSEGV, 1, (64, 1024)),
                                       ("kill", signal.SIGKILL, 5, (2, 8))):
            with self.subTest(how=how, every=every):
                p, text = self.run_program(how, 14, every=every, shape=shape, pause=0.06,
                                           env_extra={"CGTRACE_JOURNAL_MS": ""})  # (not a number: the default)
                self.assertEqual(p.returncode, -sig)
                self.check(text, 14, whole=True, every=every)

    def test_a_slow_call_after_fast_ones_writes_them_all(self):
        # Calls queued at full speed by the lean paths (C: armed, each call
        # in the Runner; and with CGTRACE_FAST=0 their Python), then one
        # that comes 60 ms later, past JOURNAL_MS (set to 20 here): at its
        # end every call is written, the queue's (a new input each call)
        # and the deferred replays' (the same input after the first).
        # The calls are fewer than either bound in calls: without the
        # time bound all but the first few would be lost.
        for every, fast in ((1, "1"), (1000, "1"), (1, "0"), (1000, "0")):
            with self.subTest(every=every, fast=fast):
                p, text = self.run_program("kill", 40, every=every, shape=(64, 1024), pause=0.06, pause_at="last",
                                           env_extra={"CGTRACE_JOURNAL_MS": "20", "CGTRACE_FAST": fast})
                self.assertEqual(p.returncode, -signal.SIGKILL)
                self.check(text, 40, whole=True, every=every)

    def test_the_last_calls_are_written_when_no_call_follows(self):
        # Calls at full speed, held by the lean paths (the queue of new
        # inputs, the deferred replays; C, and with CGTRACE_FAST=0 their
        # Python), then 300 ms with no call (a data loader's wait) before
        # SIGKILL: no call comes to write them past JOURNAL_MS, so the
        # journal's clock does (Recorder._ticking). Without it the calls
        # since the last writing are lost.
        for every, fast in ((1, "1"), (1000, "1"), (1, "0"), (1000, "0")):
            with self.subTest(every=every, fast=fast):
                p, text = self.run_program("kill", 40, every=every, shape=(64, 1024), after=0.3,
                                           env_extra={"CGTRACE_JOURNAL_MS": "20", "CGTRACE_FAST": fast})
                self.assertEqual(p.returncode, -signal.SIGKILL)
                self.check(text, 40, whole=True, every=every)

    def test_journal_ms_zero_writes_every_call_as_it_ends(self):
        # CGTRACE_JOURNAL_MS=0: at full speed too, in each buffer: the
        # lean queue's (every=1, large), _fresh_call's (every=1, small,
        # values recorded: the general path's), the deferred replays'.
        # CGTRACE_FAST=0: the lean paths' Python (their reference), not C.
        for every, shape, upto, fast in ((1, (64, 1024), 150, "1"), (5, (2, 8), 200, "1"), (1, (64, 1024), 150, "0"),
                                         (5, (2, 8), 200, "0")):
            with self.subTest(every=every, fast=fast):
                p, text = self.run_program("kill", upto, every=every, shape=shape,
                                           env_extra={"CGTRACE_JOURNAL_MS": "0", "CGTRACE_FAST": fast})
                self.assertEqual(p.returncode, -signal.SIGKILL)
                self.check(text, upto, whole=True, every=every)

    def test_journal_ms_from_the_environment(self):
        from unittest import mock
        from cgtrace import recorder
        for v, ns in ((None, recorder.JOURNAL_MS * 10**6), ("5", 5 * 10**6), ("0", 0), ("0.5", 500000),
                      ("", recorder.JOURNAL_MS * 10**6), ("soon", recorder.JOURNAL_MS * 10**6),
                      ("-1", recorder.JOURNAL_MS * 10**6), ("nan", recorder.JOURNAL_MS * 10**6)):
            env = {} if v is None else {"CGTRACE_JOURNAL_MS": v}
            with self.subTest(v=v), mock.patch.dict(os.environ, env):
                if v is None:
                    os.environ.pop("CGTRACE_JOURNAL_MS", None)
                self.assertEqual(recorder._journal_ns(), ns)

    def test_new_inputs_sigterm_and_exit_write_every_call(self):
        # (The queue's calls too: written at the signal, and at exit.)
        p, text = self.run_program("term", 150, every=1, shape=(64, 1024))
        self.assertEqual(p.returncode, -signal.SIGTERM)
        self.check(text, 150, whole=True, every=1)
        p, text = self.run_program("atexit", 150, every=1, shape=(64, 1024))
        self.assertEqual(p.returncode, 0)
        self.check(text, 150, whole=True, every=1)

    def test_forked_children_write_nothing(self):
        # The parent's queue holds calls not yet written when it forks: a
        # child's copy of them must not reach the parent's trace, at the
        # child's SIGTERM nor at its exit (whose stop would write a whole
        # trace of the child's copy over the parent's file).
        for every, shape in ((1, (64, 1024)), (5, (2, 8))):
            p, text = self.run_program("fork", 40, every=every, shape=shape)
            self.assertEqual(p.returncode, -signal.SIGTERM, p.stderr)
            self.assertIn("children: [%d, 0]" % signal.SIGTERM, p.stderr)
            self.check(text, 45, whole=True, every=every)
        # Followed (the trace streamed through a Python file, flushed at
        # each call, no exit guards): nothing of the forks reaches the
        # stream either, should the stream come to hold calls unwritten.
        p, text = self.run_program("fork", 40, every=1, shape=(64, 1024), env_extra={"CGTRACE_FOLLOW": "1"})
        self.assertEqual(p.returncode, -signal.SIGTERM, p.stderr)
        self.check(text, 45, whole=True, every=1)

    def test_sigterm_writes_what_was_recorded_and_still_dies(self):
        p, text = self.run_program("term", 23)
        self.assertEqual(p.returncode, -signal.SIGTERM, "the program dies of the signal, as unrecorded")
        self.check(text, 23, whole=True)

    def test_exit_without_stop_writes_the_whole_trace(self):
        p, text = self.run_program("atexit", 12)
        self.assertEqual(p.returncode, 0)
        recs = self.check(text, 12, whole=True)
        meta = recs[0]["meta"]
        self.assertNotIn("journal", meta, "the recording ended at exit: the whole trace replaced the journal")
        self.assertEqual(meta["recorded"]["calls"], 12)

    def test_normal_end_is_the_whole_trace(self):
        # The journal replaced by the trace written whole (as without one).
        sys.path.insert(0, HERE)
        import fake_torch as fake
        import cgtrace
        saved = fake.install_fake_torch()
        try:
            fake.MarkStepBox.mark_step_counter = 0
            cgt = sys.modules["torch._inductor.cudagraph_trees"]
            with tempfile.TemporaryDirectory() as d:
                texts = []
                for journal in ("1", "0"):
                    os.environ["CGTRACE_JOURNAL"] = journal
                    mgr = fake.CUDAGraphTreeManager()
                    fid = mgr.add(0)
                    path = os.path.join(d, "t%s.cgt.jsonl" % journal)
                    try:
                        with cgtrace.record(path, name="t"):
                            x = fake.Tensor([2])
                            for _ in range(6):
                                cgt.mark_step_begin()
                                mgr._run([x], fid)
                    finally:
                        os.environ.pop("CGTRACE_JOURNAL", None)
                    with open(path) as fh:
                        texts.append(fh.read())
                self.assertEqual(texts[0], texts[1])
                self.assertNotIn('"journal"', texts[0])
        finally:
            fake.remove_fake_torch(saved)

    def test_a_program_that_changes_its_directory_gets_its_trace_where_it_named_it(self):
        # A relative path, and a chdir while recorded: the whole trace is
        # written over the journal (which it reads back), not beside the
        # new directory.
        sys.path.insert(0, HERE)
        import fake_torch as fake
        import cgtrace
        saved = fake.install_fake_torch()
        here = os.getcwd()
        try:
            fake.MarkStepBox.mark_step_counter = 0
            cgt = sys.modules["torch._inductor.cudagraph_trees"]
            with tempfile.TemporaryDirectory() as d:
                os.makedirs(os.path.join(d, "a"))
                os.makedirs(os.path.join(d, "b"))
                os.chdir(os.path.join(d, "a"))
                mgr = fake.CUDAGraphTreeManager()
                fid = mgr.add(0)
                with cgtrace.record("t.cgt.jsonl", name="t") as rec:
                    x = fake.Tensor([2])
                    for i in range(40):
                        cgt.mark_step_begin()
                        mgr._run([x], fid)
                        if i == 20:
                            os.chdir(os.path.join(d, "b"))
                self.assertIsNone(rec.error)
                self.assertEqual(os.listdir(os.path.join(d, "b")), [])
                self.assertEqual(os.listdir(os.path.join(d, "a")), ["t.cgt.jsonl"])
                with open(os.path.join(d, "a", "t.cgt.jsonl")) as fh:
                    recs = [json.loads(line) for line in fh]
                self.assertNotIn("journal", recs[0]["meta"])
                self.assertEqual(sum(r.get("op") == "call" for r in recs), 40)
        finally:
            os.chdir(here)
            fake.remove_fake_torch(saved)


class JournalClockTest(fake_torch.FakeTorchTest):
    """Recorder._journal_tick, the journal's clock's one look, each of its
    decisions made to happen here rather than left to the thread's timing
    (the thread itself is set 600 s apart, so it never looks meanwhile):
    held calls past their time written, not before their time, not while
    another thread holds the recorder's lock (a call in progress), not
    when nothing is held; after its writing the next call written as it
    ends; the thread started with the journal and gone after stop()."""

    def calls_written(self, path):
        with open(path, encoding="utf-8") as fh:
            return sum(1 for line in fh if line.startswith('{"op": "call"'))

    def test_journal_tick(self):
        import threading
        import time
        from unittest import mock
        import cgtrace
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr = fake_torch.CUDAGraphTreeManager()
        mgr.cache_replays = True
        fid = mgr.add(0, static=[0])
        mgr.models[0] = lambda ins: [fake_torch.Tensor([64, 1024])]
        w = fake_torch.Tensor([1024, 1024])
        path = os.path.join(self.dir.name, "t.cgt.jsonl")
        with mock.patch.dict(os.environ, {"CGTRACE_JOURNAL_MS": "600000"}):
            rec = cgtrace.record(path)
            rec.start()
        try:
            self.assertTrue(rec._ticker.is_alive())

            def calls(n):  # (a function's loop, each input and output held to the next call: the lean paths')
                for _ in range(n):
                    cgt.mark_step_begin()
                    fake_torch._invocation()
                    x = fake_torch.Tensor([64, 1024])
                    out = mgr._run([w, x], fid)  # noqa: F841
            calls(12)
            self.assertTrue(rec._fq or rec._pending or rec._hot.unwritten, "the loop's calls are held")
            before = self.calls_written(path)
            self.assertLess(before, 12)
            rec._hot.due = time.monotonic_ns() + 10**12  # (their time not come)
            self.assertFalse(rec._journal_tick())
            rec._hot.due = 0  # (come)
            held, go = threading.Event(), threading.Event()

            def hold():  # (a call in progress on another thread)
                with rec.lock:
                    held.set()
                    go.wait(10)
            t = threading.Thread(target=hold)
            t.start()
            held.wait(10)
            try:
                self.assertFalse(rec._journal_tick())
            finally:
                go.set()
                t.join(10)
            self.assertEqual(self.calls_written(path), before)
            self.assertTrue(rec._journal_tick())
            self.assertEqual(self.calls_written(path), 12)
            self.assertFalse(rec._fq or rec._pending or rec._hot.unwritten)
            # The clock wrote: no call came for JOURNAL_MS, so the next one
            # is written as it ends (not held JOURNAL_MS from the clock's
            # writing, lost if the program dies right after it).
            self.assertEqual(rec._hot.due, 0)
            calls(1)
            self.assertEqual(self.calls_written(path), 13)
            rec._hot.due = 0
            self.assertFalse(rec._journal_tick())  # (nothing held)
            ticker = rec._ticker
        finally:
            rec.stop()
        self.assertIsNone(rec.error)
        self.assertIsNone(rec._ticker)
        self.assertFalse(ticker.is_alive())
        self.assertEqual(self.calls_written(path), 13)

    def test_no_clock_when_every_call_is_written(self):
        from unittest import mock
        import cgtrace
        with mock.patch.dict(os.environ, {"CGTRACE_JOURNAL_MS": "0"}):
            rec = cgtrace.record(os.path.join(self.dir.name, "t.cgt.jsonl"))
            rec.start()
        try:
            self.assertIsNone(rec._ticker)
        finally:
            rec.stop()


if __name__ == "__main__":
    unittest.main()
