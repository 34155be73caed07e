"""JSON writing: the format's limits, its records checked and encoded as
lines (check_record, encode_record, encode_header), and the Trace that
holds them and writes them whole or streams them. The standard library
alone."""

import itertools
import json
import os

FORMAT_VERSION = 1
# The trace format allows at most this many dimensions per shape.
MAX_DIMS = 8
# Element types the format knows, with their sizes in bytes (the engine sizes
# allocations as numel * size, as PyTorch's caching allocator sees them).
DTYPES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8,
          "int32": 4, "int8": 1, "uint8": 1, "bool": 1}
# A dtype the format lacks is written as the known one of its element size,
# which keeps every allocation's byte count (the tree's decisions and the
# allocator's block reuse depend on bytes, never on values).
_DTYPE_BY_SIZE = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}
# Tensors up to this many elements are written with their values ("init":
# "values"); larger ones as "rand" with a seed, whose values are not the
# program's: the tree's decisions do not depend on values.
SMALL_TENSOR = 64


# Fields each op may carry, in the order they are written. The checker
# rejects unknown fields, so the writer refuses them first, with the cause.
_FIELDS = {
    "def": ("op", "fn", "params", "body", "returns", "mode", "static", "graph", "src"),
    "tensor": ("op", "name", "shape", "dtype", "init", "seed", "values", "device", "src"),
    "param": ("op", "name", "shape", "dtype", "init", "seed", "values", "device", "src"),
    "call": ("op", "fn", "args", "out", "invocation", "src"),
    "eager": ("op", "out", "k", "a", "b", "shape", "dtype", "offset", "strides", "value"),
    "del": ("op", "names"),
    "step": ("op",),
    "reset": ("op", "device"),
    "skipped_backward": ("op", "device"),
    "empty_cache": ("op", "src"),
    "read": ("op", "name", "src"),
    "saved": ("op", "name", "of"),
    "expect": ("op", "action", "node", "nodes", "roots", "checkpoints",
               "recordings", "replays", "warmups", "live_blocks", "error",
               "values", "device"),
    "note": ("op", "text"),
    # A config record holds its keys flat, as the Go reader wants them,
    # in the canonical order of the header's config.
    "config": ("op", "warmup_runs", "rerecord_limit", "max_tensor_bytes", "max_total_bytes",
               "recompile_limit", "automatic_dynamic_shapes", "assume_static_by_default",
               "support_input_mutation", "skip_dynamic_graphs", "dynamic_shape_warn_limit",
               "inline_inbuilt_nn_modules", "cudagraph_or_error"),
}
_REQUIRED = {
    "def": ("fn", "params", "body", "returns"),
    "tensor": ("name", "shape", "init"),
    "param": ("name", "shape", "init"),
    "call": ("fn", "args"),
    "eager": ("out", "k"),
    "del": ("names",),
    "read": ("name",),
    "saved": ("name", "of"),
    "note": ("text",),
}
_STMT_FIELDS = ("out", "k", "a", "b", "shape", "dtype", "offset", "strides", "value")
_HEADER_FIELDS = ("cgtviz", "name", "devices", "config", "meta")
# Ops made on every call (a loop's new input each call is a tensor record),
# with fields the recorder's own code fills: checked cheaply when made, in
# full when written (a JSON encoding each as it is made costs a fresh
# input's call some 10 us).
_CHEAP_OPS = frozenset(("call", "expect", "del", "step", "read", "tensor", "param"))


# The settings a trace's config (header or `config` record) may hold, with
# their types; each mirrors one PyTorch knob (see KNOBS).
_CONFIG_KEYS = {"warmup_runs": int, "rerecord_limit": int, "max_tensor_bytes": int,
                "max_total_bytes": int, "recompile_limit": int,
                "automatic_dynamic_shapes": bool, "assume_static_by_default": bool,
                "support_input_mutation": bool, "skip_dynamic_graphs": bool,
                "dynamic_shape_warn_limit": int, "inline_inbuilt_nn_modules": bool,
                "cudagraph_or_error": bool}
_ACTIONS = ("warmup", "record", "replay", "eager")
_MODES = ("inference", "forward", "backward")


_FIELD_SETS = {op: frozenset(f) for op, f in _FIELDS.items()}
# Every step record is this one object (its line is encoded once).
_STEP = {"op": "step"}


def check_record(rec):
    """The cheap part of encode_record, run as a record is made: a known op,
    known and required fields. The full encoding (values, statements, NaN)
    runs when the trace is written, once per record."""
    op = rec.get("op")
    fields = _FIELD_SETS.get(op)
    if fields is None:
        raise ValueError("record has unknown op %r" % (op,))
    if not fields.issuperset(rec):
        unknown = sorted(k for k in rec if k not in fields)
        raise ValueError("%s record: unknown field(s) %s" % (op, ", ".join(unknown)))
    for k in _REQUIRED.get(op, ()):
        if k not in rec:
            raise ValueError("%s record lacks %r: %r" % (op, k, rec))


def _ordered(obj, fields, what):
    unknown = [k for k in obj if k not in fields]
    if unknown:
        raise ValueError("%s: unknown field(s) %s" % (what, ", ".join(sorted(unknown))))
    return {k: obj[k] for k in fields if k in obj}


def encode_record(rec):
    """One record as a JSON line, fields in the spec's order. Raises
    ValueError for an unknown op, an unknown field or a missing one, so a
    bad record is caught where it is made, not by the checker later."""
    op = rec.get("op")
    if op not in _FIELDS:
        raise ValueError("record has unknown op %r" % (op,))
    for k in _REQUIRED.get(op, ()):
        if k not in rec:
            raise ValueError("%s record lacks %r: %r" % (op, k, rec))
    out = _ordered(rec, _FIELDS[op], "%s record" % op)
    if op == "def":
        out["body"] = [_ordered(st, _STMT_FIELDS, "statement of def %s" % rec["fn"])
                       for st in rec["body"]]
    if op == "expect" and "action" in out and out["action"] not in _ACTIONS:
        raise ValueError("expect: unknown action %r" % out["action"])
    if op == "config":
        keys = {k: v for k, v in out.items() if k != "op"}
        if not keys:
            raise ValueError("config record sets no key: %r" % (rec,))
        _check_config(keys, "config record")
    if "src" in out:
        encode_src(out["src"])
    if op == "def" and "mode" in out and out["mode"] not in _MODES:
        raise ValueError("def %s: unknown mode %r" % (rec["fn"], out["mode"]))
    if op == "def" and "graph" in out and (not isinstance(out["graph"], str) or out["graph"] in ("", rec["fn"])):
        raise ValueError("def %s: graph must name another def: %r" % (rec["fn"], out["graph"]))
    dts = [out.get("dtype")] + [st.get("dtype") for st in out.get("body", ())]
    for dt in dts:
        if dt is not None and dt not in DTYPES:
            raise ValueError("%s record: unknown dtype %r" % (op, dt))
    return json.dumps(out, allow_nan=False)


def _check_config(cfg, what):
    if not isinstance(cfg, dict):
        raise ValueError("%s: config must be an object, not %r" % (what, cfg))
    for k, v in cfg.items():
        want = _CONFIG_KEYS.get(k)
        if want is None:
            raise ValueError("%s: unknown config key %r" % (what, k))
        if type(v) is not want or (want is int and v < 0):
            raise ValueError("%s: config %s must be a%s %s, not %r" % (
                what, k, " non-negative" if want is int else "", want.__name__, v))


_SRC_FIELDS = ("file", "line", "fn")


def encode_src(src):
    """A record's src as JSON, its fields checked and in order (the
    recorder's own are made by facts._make_src, already checked)."""
    out = _ordered(src, _SRC_FIELDS, "src")
    if type(out.get("file")) is not str or not out["file"] or type(out.get("line")) is not int or out["line"] < 1:
        raise ValueError("src must have a non-empty file and a line of 1 or more: %r" % (src,))
    return json.dumps(out, allow_nan=False)


def encode_header(header):
    if "config" in header:
        _check_config(header["config"], "header")
    return json.dumps(_ordered(header, _HEADER_FIELDS, "header"), allow_nan=False)


def _names_json(names):
    """A list of names as json.dumps writes it, built by joining, when every
    name is a str json.dumps writes as is (printable ASCII, no quote or
    backslash: the names the recorder makes); None otherwise."""
    if type(names) is not list:
        return None
    try:
        j = "".join(names)
    except TypeError:
        return None
    if not (j.isascii() and j.isprintable()) or '"' in j or "\\" in j:
        return None
    return '["' + '", "'.join(names) + '"]' if names else "[]"


_CALL_KEYS = frozenset(_FIELDS["call"])
_STEP_LINE = json.dumps(_STEP)


def _read_lines(name, src):
    """A host read's record and its expect (it did not raise), as
    Session.read makes them, as lines: name a tree output's, which needs
    no escaping (the call lines that gave it hold it as it is), src
    (_src_of's) or None. A read queued behind a deferred call
    (Recorder._queue_read), written with it."""
    if src is None:
        return '{"op": "read", "name": "' + name + '"}\n{"op": "expect", "error": null}'
    return '{"op": "read", "name": "' + name + '", "src": ' + src[1] + '}\n{"op": "expect", "error": null}'


class _LineEncoder:
    """encode_record for the records a trace holds, with what repeats
    encoded once: a record object the trace holds many times (a steady
    loop's expect, every step) by its identity, a call's args list (shared
    by a loop's calls) and function name likewise. A call, del or read
    whose fields are exactly the ones the session makes, of the types it
    makes, is joined from those pieces, which is the line json.dumps would
    write; anything else goes through encode_record, whose checks and
    errors stay the writer's. Lives for one writing (ids of the records it
    holds stay unique while the trace holds them)."""

    def __init__(self, keep=False):
        self.by_id = {}  # id(record or list) -> its JSON (keep: (it, its JSON))
        self.fn = {}  # function name -> its JSON
        # keep: the encoder outlives the records it saw (a streamed trace
        # keeps none), so it holds each object it keyed by id, whose id no
        # other object can then take.
        self.keep = keep

    def _cached(self, obj):
        got = self.by_id.get(id(obj))
        if got is None or not self.keep:
            return got
        return got[1] if got[0] is obj else None

    def _cache(self, obj, text):
        self.by_id[id(obj)] = (obj, text) if self.keep else text

    def line(self, r):
        if r is _STEP:
            return _STEP_LINE
        if type(r) is str:  # a line made whole where it was recorded (Recorder._fast_after)
            return r
        op = r.get("op")
        if op == "call":
            got = self._call(r)
            if got is not None:
                return got
        elif op == "del" and len(r) == 2:
            names = r.get("names")
            j = _names_json(names)
            if j is not None:
                return '{"op": "del", "names": ' + j + "}"
        elif op == "read" and len(r) == 2:
            name = r.get("name")
            if type(name) is str:
                j = _names_json([name])
                if j is not None:
                    return '{"op": "read", "name": ' + j[1:-1] + "}"
        elif op == "expect":
            got = self._cached(r)
            if got is None:
                got = encode_record(r)
                self._cache(r, got)
            return got
        return encode_record(r)

    def _call(self, r):
        if not _CALL_KEYS.issuperset(r):
            return None
        fn, args = r.get("fn"), r.get("args")
        if type(fn) is not str or args is None:
            return None
        fj = self.fn.get(fn)
        if fj is None:
            fj = _names_json([fn])
            if fj is None:
                return None
            fj = self.fn[fn] = fj[1:-1]
        aj = self._cached(args)
        if aj is None:
            aj = _names_json(args)
            if aj is None:
                return None
            self._cache(args, aj)
        parts = ['{"op": "call", "fn": ', fj, ', "args": ', aj]
        if "out" in r:
            oj = _names_json(r["out"])
            if oj is None:
                return None
            parts += [', "out": ', oj]
        if "invocation" in r:
            inv = r["invocation"]
            if type(inv) is not int:
                return None
            parts += [', "invocation": ', str(inv)]
        if "src" in r:
            src = r["src"]
            sj = self._cached(src)
            if sj is None:
                if type(src) is not dict:
                    return None
                sj = encode_src(src)
                self._cache(src, sj)
            parts += [', "src": ', sj]
        parts.append("}")
        return "".join(parts)


def _not_def(r):
    return type(r) is not dict or r.get("op") != "def"


def _write_all(fd, data):
    """os.write until all of data is written (a write may take part)."""
    n = os.write(fd, data)
    if n == len(data):
        return
    view = memoryview(data)[n:]
    while view:
        view = view[os.write(fd, view):]


class _Journal:
    """The journal's file as Trace.flush writes it: text, through no
    buffer of Python's (os.write), so what was flushed is the kernel's
    once written: a SIGKILL, a segfault or os._exit loses none of it.
    writer (the C module's JournalWriter on fd, or None): a batch written
    with handover is given to its thread, which writes it while the
    program runs on (a queue's bound: its 40 KB not copied into the page
    cache by the call that reached it); every other write waits for the
    batches handed over, then writes in place, so the file's order is the
    batches' and a write that returns is in the file."""

    def __init__(self, fd, writer=None):
        self.fd = fd
        self.writer = writer
        self.handed = 0  # batches handed to the writer

    def write(self, text):
        """Writes text whole, after the batches handed over (or raises);
        returns its size in bytes."""
        data = text.encode("utf-8")
        if self.handed:
            self.writer.wait()  # (OSError: a batch handed over failed; this one not written)
        _write_all(self.fd, data)
        return len(data)

    def hand(self, lines):
        """Hands lines to the writer thread, each to be written with a
        newline (ASCII, as a trace's are but a note's or a path's: their
        characters written in place by the thread, neither joined nor
        encoded here), once it wrote the batch handed before (one in its
        hands at most: JournalWriter.put waits); returns their size in
        bytes. Raises the OSError of a batch handed over before that
        failed."""
        w = self.writer
        n = w.put(tuple(lines))
        if n is None:
            n = w.put(("\n".join(lines) + "\n").encode("utf-8"))
        self.handed += 1
        return n

    def written(self):
        """How many batches handed over the file holds whole."""
        return self.handed if self.writer is None else self.writer.written

    def wait(self):
        """Returns once every batch handed over is written (OSError: one
        failed)."""
        if self.writer is not None:
            self.writer.wait()

    def flush(self):
        pass

    def close(self):
        w, self.writer = self.writer, None
        fd, self.fd = self.fd, None
        try:
            if w is not None:
                w.close()
        finally:
            if fd is not None:
                os.close(fd)


class Trace:
    """A trace being built: the header's parts, the defs (written first, as
    they run nothing and a body is only known after the function's first
    call returned) and the records in program order.

    Streamed (stream(): a trace followed as it is written, by `cgtviz run
    --follow` or through a named pipe) it holds no records: the header is
    written at once, each def just before the call that needs it, and the
    records as they come, flushed by flush() (the recorder flushes after
    each call and host read)."""

    def __init__(self, name, meta=None, config=None, strict=True):
        self.name = name
        self.meta = dict(meta or {})
        self.config = dict(config or {})
        self.devices = 1
        self.defs = {}  # fn name -> def record, in first-call order
        self.records = []
        # Check every record's fields as it is made (the tests); the
        # recorder leaves the per-call ones to the writer.
        self.strict = strict
        self.out = None  # the streamed trace's file
        self._enc = None
        # Journaled (journal()): the lines of the records but defs that
        # the journal's file does not hold, in order, for the whole file
        # written at the end (None: not journaled). Where the journal's
        # path is known, the lines it holds are read back from it then
        # (up to journal_end, its size after its last whole batch), not
        # kept here: a long recording's memory does not grow with its
        # trace; only a batch whose write failed is kept.
        self.done = None
        self.journal_path = None
        self.journal_end = 0
        self._defs_flushed = 0  # defs in self.defs when the journal last flushed
        # Where the journal's records begin (past its header), and the
        # byte spans of the def lines it holds (start, end), which the
        # whole file leaves out where the journal has them; None: not
        # known (a batch's size not its lines' sum), the file searched.
        self.journal_head = 0
        self._def_spans = []
        # The batch last handed to the journal's writer thread, while not
        # known written (the one before it was, or put would have raised):
        # (its number, its size, its lines kept for the whole file or
        # None), so that if it failed it is in the whole file still
        # (_unhanded).
        self._handed = None

    def stream(self, fh):
        """Writes the header to fh now, then the records made so far, and
        every record from here on at each flush()."""
        self._enc = _LineEncoder(keep=True)
        fh.write(encode_header(self.header()) + "\n")
        self.out = fh
        self.flush()
        fh.flush()

    def journal(self, fd, header, path=None, writer=None):
        """Writes the records to the file descriptor fd as they are flushed
        (flush()), each batch in one os.write, so that a program that dies
        however it dies (SIGKILL, SIGSEGV, os._exit, the OOM killer) leaves
        a trace up to its last flush: `header` (the journal's header
        record) now, each def just before the call that needs it. The
        whole file written at the end (write()), which replaces the
        journal, reads the records' lines back from path, fd's file
        (without it they are kept in memory as they are written).
        writer: _Journal's, for flush(handover=True)."""
        self._enc = _LineEncoder(keep=True)
        self.done = []
        head = (encode_header(header) + "\n").encode("utf-8")
        _write_all(fd, head)
        self.journal_path = path
        self.journal_end = self.journal_head = len(head)
        self.out = _Journal(fd, writer)
        self.flush()

    def flush(self, handover=False):
        """Writes the records made since the last flush to the streamed file.
        handover (a journal: the bound of the recorder's queue reached in
        a loop at full speed): the batch is given to the journal's writer
        thread where it has one."""
        if self.out is None or not self.records:
            return
        recs, self.records = self.records, []
        lines = self._lines(self._enc, recs)
        if self.done is None:
            self.out.write("\n".join(lines) + "\n")
            self.out.flush()
            return
        if self._defs_flushed == len(self.defs):
            keep = lines
        else:  # (a def in the batch: the whole file has it among the defs)
            self._defs_flushed = len(self.defs)
            keep = list(itertools.compress(lines, map(_not_def, recs)))
        if self.journal_path is None or self.done:
            # (No file to read them back from, or one that failed a write
            # before: kept first, so a failed write loses no record of the
            # whole file.)
            self.done.extend(keep)
            keep = None
        handover = handover and self.out.writer is not None
        try:
            n = self.out.hand(lines) if handover else self.out.write("\n".join(lines) + "\n")
        except BaseException:
            self._unhanded()
            if keep is not None:  # (the file holds the batches before this one whole: journal_end)
                self.done.extend(keep)
            raise
        if keep is not None:
            if keep is not lines and self._def_spans is not None:
                # (the batch's defs: where their lines are, for the whole
                # file to leave out without searching the journal for them)
                spans, size = _def_spans(self.journal_end, lines, recs)
                if size == n:
                    self._def_spans.extend(spans)
                else:
                    self._def_spans = None
            self.journal_end += n
        # (written in place after it, or handed after it: the batch before
        # is in the file)
        self._handed = (self.out.handed, n if keep is not None else 0, keep) if handover else None
        self.out.flush()

    def _unhanded(self):
        """After a write failed: the batch last handed to the journal's
        writer thread, if the file does not hold it whole, out of
        journal_end and kept for the whole file, before the batch that met
        the failure."""
        handed, self._handed = self._handed, None
        if handed is None or handed[0] <= self.out.written():
            return
        _, n, keep = handed
        self.journal_end -= n
        if keep is not None:
            self.done.extend(keep)

    def drain(self):
        """Waits for the journal's writer thread to write what it was
        handed (a failed write: that batch kept for the whole file, and
        the OSError raised)."""
        out = self.out
        if out is None or self._handed is None:
            return
        try:
            out.wait()
        except BaseException:
            self._unhanded()
            raise
        self._handed = None

    def add(self, rec):
        # Refuse a bad record now, with its cause. The records made on every
        # call (call, expect, del, step, read), whose fields are fixed by the
        # code that makes them, are checked when written: a JSON encoding
        # per record would cost more than the call it records.
        if rec["op"] not in _CHEAP_OPS:
            encode_record(rec)
        elif self.strict:
            check_record(rec)
        self.records.append(rec)

    def set_def(self, rec):
        encode_record(rec)
        self.defs[rec["fn"]] = rec
        if self.out is not None:
            self.records.append(rec)  # streamed: before the call that needs it

    def header(self):
        h = {"cgtviz": FORMAT_VERSION, "name": self.name, "devices": self.devices}
        if self.config:
            h["config"] = self.config
        h["meta"] = self.meta
        return h

    def lines(self):
        return b"".join(self._whole()).decode("utf-8").split("\n")[:-1]

    def _whole(self):
        """The whole file, in pieces of whole lines (bytes): the header,
        the defs, the records (journaled: the journal's bytes as its file
        holds them, but its header and defs, read back a block at a time,
        then the lines it does not hold, but their defs)."""
        head = [encode_header(self.header())] + [encode_record(d) for d in self.defs.values()]
        if self.done is None:
            yield _text(head + self._lines(_LineEncoder(), self.records))
            return
        yield _text(head)
        if self.journal_path is not None:
            if self._def_spans is None:
                yield from _journal_blocks(self.journal_path, self.journal_end)
            else:
                yield from _journal_ranges(self.journal_path, self.journal_head, self.journal_end, self._def_spans)
        rest = self.done + self._lines(self._enc, [r for r in self.records if _not_def(r)])
        if rest:
            yield _text(rest)

    @classmethod
    def _lines(cls, enc, records):
        """The records' lines. A line made whole where it was recorded, and
        a step, are taken as they are (_LineEncoder.line's first answers,
        without its two calls): most of a long recording's records."""
        line = cls._line
        return [r if type(r) is str else _STEP_LINE if r is _STEP else line(enc, r) for r in records]

    @staticmethod
    def _line(enc, r):
        try:
            return enc.line(r)
        except (ValueError, TypeError) as e:
            # One record the encoder refuses costs that record, not the
            # file: a note in its place says what was lost.
            return encode_record({"op": "note", "text": "cgtrace dropped a %s record: %s"
                                  % (r.get("op"), str(e)[:200])})

    def write(self, path):
        """Writes the file whole, through a temporary one, so an interrupted
        write never leaves half a trace under the final name (nor the
        temporary one behind). A journaled trace's lines are copied from
        its journal as they are read, which may be path itself."""
        write_whole(path, self._whole())  # (a journal's bytes copied as they are: none decoded again)


def write_whole(path, pieces):
    """path holds the bytes of pieces, whole or not at all: written to a
    temporary file beside it, renamed over it once whole, removed if the
    writing raised (which is raised again)."""
    tmp = "%s.tmp%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as fh:
            for data in pieces:
                fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# Where a def's line begins (encode_record writes "op" first), which the
# whole file has among the defs, not where the journal wrote it.
_DEF_HEAD = b'{"op": "def",'


def _text(lines):
    """Lines as the file's bytes, each ended."""
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _def_spans(at, lines, recs):
    """([(start, end)] of the def records' lines among lines, a batch
    written at byte at, each line and its line end; the batch's size)."""
    spans, start = [], at
    for line, r in zip(lines, recs):
        size = (len(line) if line.isascii() else len(line.encode("utf-8"))) + 1
        if not _not_def(r):
            spans.append((at, at + size))
        at += size
    return spans, at - start


def _journal_ranges(path, start, end, cuts, block=1 << 20):
    """The journal's bytes from start (past its header) to end (its last
    whole batch) but the spans of cuts (its defs' lines, in order), read a
    block at a time and handed on as read: no search of them for defs,
    no copy to cut them into lines (the pieces end where a block or a
    cut does). Raises OSError when the file holds fewer bytes than end."""
    with open(path, "rb", buffering=0) as fh:
        at = start
        for a, b in [c for c in cuts if c[0] < end] + [(end, end)]:
            if a > at:
                fh.seek(at)
                left = a - at
                while left > 0:
                    data = fh.read(min(block, left))
                    if not data:
                        raise OSError("the journal %s holds %d bytes of the %d written to it"
                                      % (path, a - left, end))
                    left -= len(data)
                    yield data
            at = max(at, b)


def _journal_blocks(path, end, block=1 << 20):
    """The journal's file up to byte end (its last whole batch) but its
    header and defs, in pieces of whole lines, read a block at a time,
    the defs found by searching each (_journal_ranges, where the spans of
    their lines are known, searches nothing).
    Raises OSError when the file holds fewer bytes than that (moved or
    cut by another program: the whole trace would miss records)."""
    with open(path, "rb") as fh:
        left, rest, first = end, b"", True
        while left > 0:
            data = fh.read(min(block, left))
            if not data:
                raise OSError("the journal %s holds %d bytes of the %d written to it" % (path, end - left, end))
            left -= len(data)
            data = rest + data
            cut = data.rfind(b"\n") + 1  # (whole lines: the rest waits for the next block)
            data, rest = data[:cut], data[cut:]
            if first and data:
                first = False
                data = data[data.index(b"\n") + 1:]  # (the journal's header)
            data = _without_defs(data)
            if data:
                yield data


def _without_defs(data):
    """Whole lines of a journal, but its defs' lines (a few in a file: each
    cut out, the rest kept as it is)."""
    at = 0 if data.startswith(_DEF_HEAD) else data.find(b"\n" + _DEF_HEAD) + 1
    if at == 0 and not data.startswith(_DEF_HEAD):
        return data
    keep = []
    start = 0
    while True:
        keep.append(data[start:at])
        start = data.index(b"\n", at) + 1  # (past the def's line)
        nxt = data.find(b"\n" + _DEF_HEAD, start - 1)
        if nxt < 0:
            keep.append(data[start:])
            return b"".join(keep)
        at = nxt + 1
