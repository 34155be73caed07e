"""JSON writing (cgtrace/jsonl.py): records checked and encoded as the
format has them, the line encoder's shared lines, and a Trace's file."""

import json
import os
import sys
import tempfile
import unittest
from unittest import mock

# CGTRACE_TEST_INSTALLED=1 tests the installed package (tests/venv_check.sh)
# instead of the folder beside these tests.
if os.environ.get("CGTRACE_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cgtrace  # noqa: E402
from cgtrace import OutSpec, Trace, encode_record, fastpath, synth_def  # noqa: E402


class EncodeTest(unittest.TestCase):
    def test_fields_in_spec_order(self):
        line = encode_record({"out": ["a"], "args": ["x"], "fn": "foo", "op": "call"})
        self.assertEqual(line, '{"op": "call", "fn": "foo", "args": ["x"], "out": ["a"]}')

    def test_unknown_field_refused(self):
        with self.assertRaisesRegex(ValueError, "unknown field.*colour"):
            encode_record({"op": "step", "colour": "red"})

    def test_unknown_op_refused(self):
        with self.assertRaisesRegex(ValueError, "unknown op"):
            encode_record({"op": "jump"})

    def test_missing_field_refused(self):
        with self.assertRaisesRegex(ValueError, "lacks 'names'"):
            encode_record({"op": "del"})

    def test_nan_refused(self):
        with self.assertRaises(ValueError):
            encode_record({"op": "tensor", "name": "t", "shape": [1], "init": "values",
                           "values": [float("nan")]})

    def test_bad_statement_field_refused(self):
        with self.assertRaisesRegex(ValueError, "statement of def f"):
            encode_record({"op": "def", "fn": "f", "params": [], "returns": [],
                           "body": [{"out": "a", "k": "fill", "shape": [1], "value": 0, "stride": [1]}]})

    def test_unknown_dtype_refused(self):
        for rec in ({"op": "tensor", "name": "t", "shape": [1], "init": "zeros", "dtype": "complex64"},
                    {"op": "def", "fn": "f", "params": [], "returns": [],
                     "body": [{"out": "a", "k": "fill", "shape": [1], "value": 0, "dtype": "f"}]}):
            with self.assertRaisesRegex(ValueError, "unknown dtype"):
                encode_record(rec)

    def test_header_and_defs_first(self):
        t = Trace("demo", meta={"source": "cgtrace", "torch": "2.11.0"})
        t.add({"op": "step"})
        t.set_def(synth_def("f_0", "inference", ["x"], [[4]], [OutSpec([4])]))
        lines = [json.loads(x) for x in t.lines()]
        self.assertEqual(lines[0], {"cgtviz": 1, "name": "demo", "devices": 1,
                                    "meta": {"source": "cgtrace", "torch": "2.11.0"}})
        self.assertEqual([x.get("op") for x in lines[1:]], ["def", "step"])

    def test_unchecked_record_refused_at_write_costs_only_itself(self):
        """The recorder's trace checks per-call records when written: one the
        encoder refuses becomes a note saying so; the rest of the file stands."""
        t = Trace("w", strict=False)
        t.add({"op": "step"})
        t.add({"op": "call", "fn": "f", "args": [], "bogus": 1})
        t.add({"op": "step"})
        lines = [json.loads(x) for x in t.lines()]
        self.assertEqual([x.get("op") for x in lines[1:]], ["step", "note", "step"])
        self.assertIn("unknown field(s) bogus", lines[2]["text"])
        with self.assertRaisesRegex(ValueError, "unknown field"):
            Trace("strict").add({"op": "call", "fn": "f", "args": [], "bogus": 1})

    def test_write_is_whole(self):
        t = Trace("w")
        t.add({"op": "note", "text": "hi"})
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.cgt.jsonl")
            t.write(p)
            self.assertEqual(os.listdir(d), ["x.cgt.jsonl"])
            with open(p) as fh:
                self.assertEqual(len(fh.read().splitlines()), 2)


class JournalTest(unittest.TestCase):
    """A journaled trace keeps no line its journal's file holds: the whole
    file written at the end reads them back from it (issue 33: a long
    recording's memory does not grow with its trace), and is the file
    the same records make without a journal."""

    def records(self, t, n, handover=False, before=None):
        """n steps' records into t, flushed after each while it has a
        file (a failed write ends it, as the recorder's _stream_failed
        does), with a def met at the second. handover: each flush's batch
        handed to the journal's writer thread, but every seventh's;
        before(i): called before step i's flush."""
        for i in range(n):
            if i == 1:
                t.set_def(synth_def("f_0", "inference", ["x"], [[4]], [OutSpec([4])]))
            t.add({"op": "step"})
            t.add({"op": "note", "text": "step %d \u00e9" % i})  # (a line of other than ASCII)
            t.add({"op": "del", "names": ["a%d" % i, "b"]})
            if before is not None:
                before(i)
            if t.out is not None:
                try:
                    t.flush(handover and i % 7 != 6)
                except OSError:
                    t.out = None

    def journaled(self, d, n, path=True, fail_at=None):
        """A trace journaled into d (path: the journal's path given;
        fail_at: the journal's write of that flush raises after writing
        part of its batch), n steps' records in it. Returns (trace,
        the journal's path)."""
        p = os.path.join(d, "j.cgt.jsonl")
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        t = Trace("j")
        t.journal(fd, {"cgtviz": 1, "name": "j", "devices": 1, "meta": {"journal": "unended"}},
                  p if path else None)
        if fail_at is not None:
            real, calls = t.out.write, []

            def write(text):
                calls.append(text)
                if len(calls) == fail_at:
                    os.write(fd, text.encode("utf-8")[:7])  # (part of the batch, then the failure)
                    raise OSError(28, "No space left on device")
                return real(text)
            t.out.write = write
        self.records(t, n)
        t.out = None
        os.close(fd)
        return t, p

    def threaded(self, d, n, full_from=None):
        """A trace journaled into d through the C module's writer thread,
        n steps' records in it, most flushes handed over; full_from: from
        that step's flush on, the journal's file descriptor is /dev/full's
        (every write fails with ENOSPC), the batches before it written.
        Returns (trace, the journal's path, the writer)."""
        checks, why = fastpath.load()
        if not hasattr(checks, "JournalWriter"):
            self.skipTest("no C module's JournalWriter: %s" % why)
        p = os.path.join(d, "j.cgt.jsonl")
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        w = checks.JournalWriter(fd)
        t = Trace("j")
        t.journal(fd, {"cgtviz": 1, "name": "j", "devices": 1, "meta": {"journal": "unended"}}, p, w)

        def before(i):
            if i == full_from:
                t.drain()
                full = os.open("/dev/full", os.O_WRONLY)
                os.dup2(full, fd)
                os.close(full)
        self.records(t, n, handover=True, before=before)
        try:
            t.drain()
        except OSError:
            pass
        t.out = None
        w.close() if full_from is None else None
        os.close(fd)
        return t, p, w

    def test_the_writer_thread_writes_the_same_file(self):
        # Batches handed to the thread and written in place, interleaved:
        # the file holds them in order, nothing kept in memory, and the
        # whole file is the plain one.
        with tempfile.TemporaryDirectory() as d:
            t, p, w = self.threaded(d, 50)
            self.assertEqual(t.done, [])
            self.assertGreater(w.written, 30)
            self.assertEqual(w.pending, 0)
            self.assertEqual(t.journal_end, os.path.getsize(p))
            self.assertEqual(t.lines(), self.plain(50))
            t.write(p)
            with open(p, encoding="utf-8") as fh:
                self.assertEqual(fh.read().splitlines(), self.plain(50))

    @unittest.skipUnless(os.path.exists("/dev/full"), "no /dev/full")
    def test_a_failed_write_of_the_thread_keeps_every_batch(self):
        # From step 20 the thread's writes fail: the batches it was handed
        # and could not write leave journal_end and are kept, in order,
        # before the one that met the failure; the file the whole trace is
        # written from is still every record, whichever call saw the
        # failure first (the next put, a write in place, or the drain).
        with tempfile.TemporaryDirectory() as d:
            for at in (22, 27, 3):  # (27: a write in place meets it first)
                t, p, w = self.threaded(d, 40, full_from=at)
                self.assertEqual(t.journal_end, os.path.getsize(p), at)
                self.assertTrue(t.done, at)
                self.assertEqual(t.lines(), self.plain(40), at)
                if at % 7 != 6:
                    with self.assertRaises(OSError):
                        w.wait()
                t.write(p)
                with open(p, encoding="utf-8") as fh:
                    self.assertEqual(fh.read().splitlines(), self.plain(40), at)

    def test_one_batch_in_the_threads_hands_at_most(self):
        # The thread stuck in a write (a pipe no one reads yet, a batch
        # larger than it holds): handing over the next batch waits until
        # the stuck one is written, so that a death loses one batch at
        # most, however late the thread runs.
        import threading
        import time
        import cgtrace.jsonl as J
        checks, why = fastpath.load()
        if not hasattr(checks, "JournalWriter"):
            self.skipTest("no C module's JournalWriter: %s" % why)
        r, wfd = os.pipe()
        got = []

        def reader():
            time.sleep(0.3)
            while True:
                b = os.read(r, 1 << 20)
                if not b:
                    break
                got.append(b)
        t = threading.Thread(target=reader)
        t.start()
        j = J._Journal(wfd, checks.JournalWriter(wfd))
        try:
            j.hand(["a" * (4 << 20)])
            start = time.monotonic()
            j.hand(["b"])
            written, waited = j.writer.written, time.monotonic() - start
        finally:
            j.close()  # (the batches written, the pipe's end closed: the reader ends)
            t.join()
            os.close(r)
        self.assertGreaterEqual(written, 1)
        self.assertGreater(waited, 0.2)
        self.assertEqual(b"".join(got), b"a" * (4 << 20) + b"\nb\n")

    def test_journal_writer_alone(self):
        checks, why = fastpath.load()
        if not hasattr(checks, "JournalWriter"):
            self.skipTest("no C module's JournalWriter: %s" % why)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "w")
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            w = checks.JournalWriter(fd)
            want = [("%d " % i).encode() * (i * 97 % 5000) for i in range(300)]  # (more than its 64 held)
            for b in want:
                self.assertEqual(w.put(b), len(b))
            # Lines (ASCII str, each written with a newline): one, and more
            # than its writes take at once (32 a write)
            for lines in (("a" * 70000,), tuple("line %d" % i for i in range(100)), ("", "x")):
                b = "".join(x + "\n" for x in lines).encode()
                self.assertEqual(w.put(lines), len(b))
                want.append(b)
            self.assertIsNone(w.put(("a", "\u00e9")))  # (not ASCII: nothing put, the caller encodes)
            w.wait()
            self.assertEqual((w.written, w.pending), (303, 0))
            for bad in ("text", ("a", b"b"), ["a"]):
                with self.assertRaises(TypeError):
                    w.put(bad)
            w.close()
            with self.assertRaises(ValueError):
                w.put(b"x")
            os.close(fd)
            with open(p, "rb") as fh:
                self.assertEqual(fh.read(), b"".join(want))
            if os.path.exists("/dev/full"):
                fd = os.open("/dev/full", os.O_WRONLY)
                w = checks.JournalWriter(fd)
                w.put(b"abc")
                with self.assertRaises(OSError) as e:
                    w.wait()
                self.assertEqual(e.exception.errno, 28)
                with self.assertRaises(OSError):
                    w.put(b"d")
                self.assertEqual(w.written, 0)
                del w  # (its thread ended, nothing left held)
                os.close(fd)

    def plain(self, n):
        t = Trace("j")
        self.records(t, n)
        return t.lines()

    def test_lines_are_read_back_from_the_journal(self):
        with tempfile.TemporaryDirectory() as d:
            t, p = self.journaled(d, 50)
            self.assertEqual(t.done, [])  # (nothing kept: the file holds it)
            self.assertEqual(t.lines(), self.plain(50))
            with open(p, encoding="utf-8") as fh:
                self.assertEqual(fh.read().count("\n"), 1 + 1 + 150)  # (the journal: its header, a def, the records)
            t.write(p)  # (over the journal it reads)
            with open(p, encoding="utf-8") as fh:
                self.assertEqual(fh.read().splitlines(), self.plain(50))
            self.assertEqual(os.listdir(d), ["j.cgt.jsonl"])

    def test_lines_across_blocks(self):
        import cgtrace.jsonl as J
        with tempfile.TemporaryDirectory() as d:
            t, p = self.journaled(d, 20)
            want = self.plain(20)
            for block in (1, 7, 64, 1 << 20):
                got = b"".join(J._journal_blocks(p, t.journal_end, block)).decode("utf-8").split("\n")[:-1]
                self.assertEqual(got, want[2:], block)  # (but the header and the def)

    def test_defs_cut_out_of_whole_lines(self):
        import cgtrace.jsonl as J
        d = encode_record(synth_def("f_0", "inference", ["x"], [[4]], [OutSpec([4])])).encode()
        for data in (b"", b"a\n", d + b"\n", d + b"\na\n", b"a\n" + d + b"\n",
                     b"a\n" + d + b"\nb\n" + d + b"\n" + d + b"\nc\n", d + b"\n" + d + b"\n"):
            want = b"".join(x + b"\n" for x in data.split(b"\n")[:-1] if not x.startswith(b'{"op": "def",'))
            self.assertEqual(J._without_defs(data), want, data)

    def test_defs_left_out_by_their_spans(self):
        # The whole file leaves the journal's defs out where it wrote them
        # (their byte spans, counted at each batch that had one: a
        # non-ASCII line before them, a def alone, two in one batch, one
        # in the last batch), searching the journal for none; where a
        # span is not known the search gives the same file.
        import cgtrace.jsonl as J

        def fill(t):
            for i in range(12):
                for k in {2: (0,), 5: (1, 2), 11: (3,)}.get(i, ()):
                    t.set_def(synth_def("f_%d" % k, "inference", ["x"], [[4]], [OutSpec([4])]))
                t.add({"op": "note", "text": "step %d \u00e9" % i})
                t.add({"op": "step"})
                if t.out is not None:
                    t.flush(i % 3 == 0)

        plain = Trace("j")
        fill(plain)
        want = plain.lines()
        checks, _ = fastpath.load()
        for writer in (None, getattr(checks, "JournalWriter", None)):
            with tempfile.TemporaryDirectory() as d, self.subTest(writer=writer is not None):
                p = os.path.join(d, "j.cgt.jsonl")
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
                t = Trace("j")
                t.journal(fd, {"cgtviz": 1, "name": "j", "devices": 1, "meta": {}}, p,
                          writer(fd) if writer is not None else None)
                fill(t)
                t.drain()
                self.assertEqual(len(t._def_spans), 4)
                with open(p, "rb") as fh:
                    data = fh.read()
                self.assertEqual([data[a:b].startswith(b'{"op": "def",') and data[b - 1:b] == b"\n"
                                  for a, b in t._def_spans], [True] * 4)
                with mock.patch.object(J, "_journal_blocks", side_effect=AssertionError("searched")):
                    self.assertEqual(t.lines(), want)
                t._def_spans = None  # (not known: searched)
                self.assertEqual(t.lines(), want)
                t.out.close()

    def test_without_a_path_the_lines_are_kept(self):
        with tempfile.TemporaryDirectory() as d:
            t, _ = self.journaled(d, 10, path=False)
            self.assertEqual(len(t.done), 30)
            self.assertEqual(t.lines(), self.plain(10))

    def test_a_failed_write_keeps_its_batch_and_what_follows(self):
        # The journal's file holds the batches before the failed one whole,
        # and a piece of it; the whole file is still every record.
        with tempfile.TemporaryDirectory() as d:
            t, p = self.journaled(d, 30, fail_at=12)
            self.assertEqual(len(t.done), 3)  # (the failed batch's lines; the rest are records)
            self.assertLess(t.journal_end, os.path.getsize(p))
            self.assertEqual(t.lines(), self.plain(30))
            t.write(p)
            with open(p, encoding="utf-8") as fh:
                self.assertEqual(fh.read().splitlines(), self.plain(30))

    def test_a_journal_cut_by_another_program_is_an_error_and_leaves_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            t, p = self.journaled(d, 10)
            os.truncate(p, t.journal_end // 2)
            with self.assertRaisesRegex(OSError, "holds %d bytes of the %d written" % (t.journal_end // 2,
                                                                                     t.journal_end)):
                t.write(p)
            self.assertEqual(os.listdir(d), ["j.cgt.jsonl"])  # (no temporary file left)


class LineEncoderTest(unittest.TestCase):
    """The writer's joined lines are encode_record's, byte for byte, and
    what encode_record refuses the writer refuses."""

    def same(self, rec, enc=None):
        enc = enc or cgtrace._LineEncoder()
        try:
            want = cgtrace.encode_record(rec)
        except (ValueError, TypeError) as e:
            with self.assertRaises(type(e)):
                enc.line(rec)
            return
        self.assertEqual(enc.line(rec), want)
        self.assertEqual(enc.line(rec), want)  # again, from what it keeps

    def test_records_as_encode_record_writes_them(self):
        names = ["in", "x_1", "", "a\"b", "back\\slash", "caf\u00e9", "tab\there", "del\x7f", "\u2028"]
        args = ["param", "in"]
        recs = [
            cgtrace._STEP, {"op": "step"},
            {"op": "call", "fn": "f_0", "args": args, "out": ["f_0_c1_0", "_"], "invocation": 3},
            {"op": "call", "fn": "f_0", "args": args},
            {"op": "call", "fn": "f_0", "args": [], "out": []},
            {"op": "call", "fn": "f_0", "args": args, "invocation": True},
            {"op": "call", "fn": "f_0", "args": args, "invocation": 2 ** 70},
            {"op": "call", "fn": "f_0", "args": args, "invocation": 1.5},
            {"op": "call", "fn": "f_0", "args": ("a", "b")},
            {"op": "call", "fn": "f_0", "args": [1, None]},
            {"op": "call", "fn": 7, "args": args},
            {"op": "call", "fn": "f_0"},
            {"op": "call", "fn": "f_0", "args": args, "bogus": 1},
            {"op": "call", "args": args, "fn": "f_0", "out": ["y"]},  # another key order
            {"op": "del", "names": ["a", "b"]}, {"op": "del", "names": []}, {"op": "del"},
            {"op": "del", "names": ["a"], "extra": 1}, {"op": "del", "names": "ab"},
            {"op": "read", "name": "y"}, {"op": "read", "name": 3}, {"op": "read"},
            {"op": "expect", "action": "replay", "node": {"fn": "f_0", "parent_fn": None}, "checkpoints": 0},
            {"op": "expect", "action": "bogus"}, {"op": "expect", "error": None},
            {"op": "note", "text": "n"}, {"op": "nope"},
        ]
        for n in names:
            recs += [{"op": "call", "fn": n, "args": [n], "out": [n]}, {"op": "del", "names": [n, "a"]},
                     {"op": "read", "name": n}]
        for r in recs:
            with self.subTest(rec=r):
                self.same(r)
        # one encoder across all of them, as a trace's writing has it
        enc = cgtrace._LineEncoder()
        for r in recs + recs:
            with self.subTest(rec=r, shared=True):
                self.same(r, enc)

    def test_trace_lines_unchanged(self):
        t = Trace("t", strict=False)
        exp = {"op": "expect", "action": "replay", "checkpoints": 0}
        args = ["in"]
        for i in range(3):
            t.add(cgtrace._STEP)
            t.add({"op": "call", "fn": "f", "args": args, "out": ["y%d" % i], "invocation": i})
            t.add(exp)
            t.add({"op": "del", "names": ["y%d" % i]})
        t.add({"op": "call", "fn": "f", "args": args, "oops": 1})
        lines = t.lines()
        want = [cgtrace.encode_header(t.header())]
        for r in t.records[:-1]:
            want.append(cgtrace.encode_record(r))
        self.assertEqual(lines[:-1], want)
        self.assertIn("cgtrace dropped a call record", lines[-1])

    def test_del_line_is_the_records_line(self):
        # A del the session adds as its line (names._add_del) is the line
        # the record's dict is written as; names that need escaping, and
        # a trace that checks its records, keep the dict.
        from cgtrace.names import _add_del
        for names in (["in"], ["in_1", "step_fresh_0_c3_0"], ["a b", "x.y[0]"], ['q"uote'], ["back\\slash"],
                      ["caf\u00e9"], ["tab\there"], []):
            for strict in (False, True):
                t = Trace("x", strict=strict)
                _add_del(t, list(names))
                self.assertEqual(t.lines()[1:], [encode_record({"op": "del", "names": names})], (names, strict))
                self.assertEqual(type(t.records[0]) is str, not strict and all(
                    n.isascii() and n.isprintable() and '"' not in n and "\\" not in n for n in names))


if __name__ == "__main__":
    unittest.main()
