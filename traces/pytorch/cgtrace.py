"""cgtrace: record a real PyTorch program as a cgtviz trace (format v1).

    with cgtrace.record("run.cgt.jsonl"):
        ...  # code that calls torch.compile(mode="reduce-overhead") functions

    python3 -m cgtrace run script.py [args...]        # records script.cgt.jsonl
    python3 -m cgtrace run -o out.cgt.jsonl script.py  # names the file
    python3 -m cgtrace summary trace.cgt.jsonl         # what a trace recorded

It hooks PyTorch's CUDAGraph Trees manager (torch/_inductor/cudagraph_trees.py)
and writes what reached the tree: one `def` per FunctionID, one `call` per call
the tree saw, the tensors passed in, every `del` of a tensor the trace named,
every `cudagraph_mark_step_begin()` as a `step`, and after each call an
`expect` holding what PyTorch decided (warmup, record, replay or eager, the node
and its parent, the checkpoint count). Replaying the trace in cgtviz then shows
whether the engine decides as PyTorch did.

Each `call` carries its `invocation` (Dynamo's GenerationTracker.generation:
a graph break's resume function shares its frame's), tensors their dtype,
views of other tensors their storage offset and strides. The settings in
force (skip_cudagraph_warmup, the re-record and recompile limits, dynamic
shapes, input mutation) are looked at at every call (through a probe of
each knob's _ConfigEntry, read only when one moved): the header holds
them, a `config` record each change. Host reads of tree outputs
(.item(), .cpu(), .tolist(), print, numpy, `if t:`) are `read` records with
an expect of PyTorch's error. The recorder never changes the program: a
tensor it cannot hold is left out with a note, and its own failure stops the
recording with a warning (Recorder.error), never an exception in the program.
CGTRACE_READS=0 leaves Tensor's methods alone (no `read` records).

The trace is written whole when the recording ends (a temporary file
renamed over the name), unless it is followed: record(..., follow=True),
`run --follow`, CGTRACE_FOLLOW=1 or a named pipe as the path stream it as
the program runs, for `cgtviz run --follow` (one write per compiled call).

What a recorded call costs the program is measured by
tools/gpu/recorder-overhead.py: a steady replay loop's call goes through
names found by object identity, kept Facts, shared records (expects,
steps, args lists) and probes of the config (each knob's user_override
read off its _ConfigEntry: 2.11's plain attribute, whose unset default
lives on the class, or a later ContextVar; never ConfigModule.__getattr__),
and asks torch nothing about a tensor it already holds. A replay like its
function's last one (the memo's inputs, the same node handing out the same
cached outputs) takes a short path, _ReplayPlan and Recorder._fast_after:
its call and del are lines joined from a template, no record dict, Fact or
list built, and the general path's records, in its order, the result.

The module needs only the standard library until recording starts; torch is
imported then. Everything that does not touch torch (JSON writing, body
synthesis, naming and liveness bookkeeping) lives in plain classes that the
tests drive with fake tensors.
"""

import argparse
import contextvars
import functools
import itertools
import json
import math
import operator
import os
import re
import runpy
import stat
import sys
import threading
import traceback
import types
import warnings
import weakref

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

__all__ = ["record", "Recorder", "Trace", "synth_def", "check_body", "main"]


# ---------------------------------------------------------------------------
# JSON writing


# Fields each op may carry, in the order they are written. The checker
# rejects unknown fields, so the writer refuses them first, with the cause.
_FIELDS = {
    "def": ("op", "fn", "params", "body", "returns", "mode", "static"),
    "tensor": ("op", "name", "shape", "dtype", "init", "seed", "values", "device"),
    "param": ("op", "name", "shape", "dtype", "init", "seed", "values", "device"),
    "call": ("op", "fn", "args", "out", "invocation"),
    "eager": ("op", "out", "k", "a", "b", "shape", "dtype", "offset", "strides", "value"),
    "del": ("op", "names"),
    "step": ("op",),
    "reset": ("op", "device"),
    "skipped_backward": ("op", "device"),
    "read": ("op", "name"),
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
_ENTRY_NAME = operator.attrgetter("name")
_FACT_OF = operator.attrgetter("fact")
_OBJ_REF_OF = operator.attrgetter("obj_ref")
_PTR_OF = operator.attrgetter("ptr")
# An input position no entry named (_FnState.last_entries): it names no
# object (its reference gives None), so it matches no input.
_NO_ENTRY = types.SimpleNamespace(name=None, fact=types.SimpleNamespace(obj_ref=lambda: None, ptr=None))
_NAME_OR_NONE = (str, type(None))


def _fact_positions(facts):
    """The positions of the Facts among names (str) and Nones, in order, by
    C-level passes (a model's inputs are mostly named parameters)."""
    return list(itertools.compress(range(len(facts)),
                                   map(operator.not_, map(isinstance, facts, itertools.repeat(_NAME_OR_NONE)))))


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
    if op == "def" and "mode" in out and out["mode"] not in _MODES:
        raise ValueError("def %s: unknown mode %r" % (rec["fn"], out["mode"]))
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
        parts.append("}")
        return "".join(parts)


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

    def stream(self, fh):
        """Writes the header to fh now, then the records made so far, and
        every record from here on at each flush()."""
        self._enc = _LineEncoder(keep=True)
        fh.write(encode_header(self.header()) + "\n")
        self.out = fh
        self.flush()
        fh.flush()

    def flush(self):
        """Writes the records made since the last flush to the streamed file."""
        if self.out is None or not self.records:
            return
        recs, self.records = self.records, []
        self.out.write("\n".join(self._lines(self._enc, recs)) + "\n")
        self.out.flush()

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
        out = [encode_header(self.header())]
        out.extend(encode_record(d) for d in self.defs.values())
        out.extend(self._lines(_LineEncoder(), self.records))
        return out

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
        write never leaves half a trace under the final name."""
        text = "\n".join(self.lines()) + "\n"
        tmp = "%s.tmp%d" % (path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)


# ---------------------------------------------------------------------------
# Shapes and function bodies


_NOT_NAME = re.compile(r"[^A-Za-z0-9_]+")


def sanitize(name, fallback):
    """A trace name made of letters, digits and '_' (never '_' alone, which
    the format reserves for "bind nothing"), from any Python-side name."""
    s = _NOT_NAME.sub("_", str(name or "")).strip("_")
    if not s:
        s = fallback
    if s[0].isdigit():
        s = fallback + "_" + s
    return s


def numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def fit_shape(shape):
    """The shape as the format can hold it: at most MAX_DIMS dimensions.
    Extra leading dimensions are folded into one, which keeps the element
    count (so memory sizes, and views between tensors, stay right)."""
    shape = [int(d) for d in shape]
    if len(shape) <= MAX_DIMS:
        return shape
    extra = len(shape) - MAX_DIMS + 1
    return [numel(shape[:extra])] + shape[extra:]


def contiguous_strides(shape):
    out, acc = [], 1
    for d in reversed(list(shape)):
        out.append(acc)
        acc *= max(int(d), 1)
    return tuple(reversed(out))


def is_contiguous(shape, stride):
    """Row-major contiguity as PyTorch judges it: strides of size-1 dims do
    not matter."""
    acc = 1
    for d, st in zip(reversed(list(shape)), reversed(list(stride))):
        if d != 1 and st != acc:
            return False
        acc *= d
    return True


def extent(shape, offset, stride):
    """Elements of the storage a view reaches: offset + sum((size-1)*stride) + 1
    (just offset for an empty view), the bound the checker holds it to."""
    if any(int(d) == 0 for d in shape):
        return int(offset)
    return int(offset) + sum((int(d) - 1) * int(st) for d, st in zip(shape, stride)) + 1


def view_fields(shape, offset, stride, whole=False):
    """The `view` statement's optional offset/strides for a view of this
    shape, offset (in elements of the storage) and strides: none for a
    contiguous view at offset 0 of the whole base (whole: a plain
    reshape, same element count); a part of the base always says its
    strides, since only a plain view keeps the element count. A shape
    folded past MAX_DIMS cannot carry strides: {} (the caller decides)."""
    shape = list(shape)
    if len(shape) > MAX_DIMS or stride is None:
        return {}
    out = {}
    if offset:
        out["offset"] = int(offset)
    if not is_contiguous(shape, stride):
        out["strides"] = [int(x) for x in stride]
    elif offset or not whole:
        out["strides"] = [int(x) for x in contiguous_strides(shape)]
    return out


def dtype_name(dtype, itemsize=None):
    """The format's name of a torch dtype (torch.bfloat16 -> "bfloat16"); a
    dtype the format lacks maps to the known one of its element size, or
    None when there is none (complex128, 16-byte types)."""
    name = str(dtype)
    if name.startswith("torch."):
        name = name[len("torch."):]
    if name in DTYPES:
        return name
    if itemsize is None:
        return None
    return _DTYPE_BY_SIZE.get(int(itemsize))


_ELEMENTWISE2 = ("add", "sub", "mul", "div", "max", "min")
_ELEMENTWISE1 = ("neg", "relu", "exp", "sqrt", "tanh", "abs")


def check_body(params, shapes, body, returns):
    """Checks a def body against the format's rules and returns the shape of
    every name; raises ValueError naming the statement otherwise. `shapes`
    maps each param to its shape. Kept beside synth_def so a synthesised
    body that the checker would refuse never reaches a file."""
    env = {p: list(shapes[p]) for p in params}
    for p in params:
        if len(env[p]) > MAX_DIMS:
            raise ValueError("param %s has %d dims" % (p, len(env[p])))
    for i, st in enumerate(body):
        k, out = st.get("k"), st.get("out")
        where = "statement %d (%s -> %s)" % (i, k, out)
        if not out or out == "_":
            raise ValueError("%s: needs an out name" % where)
        a = st.get("a")
        if a is not None and a not in env:
            raise ValueError("%s: %s is not defined" % (where, a))
        if k in _ELEMENTWISE2:
            b = st.get("b")
            if isinstance(b, str):
                if b not in env:
                    raise ValueError("%s: %s is not defined" % (where, b))
                if env[b] != env[a] and env[b] != [1]:
                    raise ValueError("%s: b shape %s does not fit a %s" % (where, env[b], env[a]))
            elif not isinstance(b, (int, float)) or isinstance(b, bool):
                raise ValueError("%s: b must be a name or a number" % where)
            shape = env[a]
        elif k in _ELEMENTWISE1 or k == "copy":
            shape = env[a]
        elif k == "sum":
            shape = [1]
        elif k == "matmul":
            b = st.get("b")
            if len(env[a]) != 2 or not isinstance(b, str) or len(env[b]) != 2 or env[a][1] != env[b][0]:
                raise ValueError("%s: matmul shapes do not fit" % where)
            shape = [env[a][0], env[b][1]]
        elif k == "view":
            shape = list(st.get("shape", env[a]))
            strides = st.get("strides")
            if strides is not None:
                if len(strides) != len(shape) or any(int(x) < 0 for x in strides):
                    raise ValueError("%s: strides %s do not fit shape %s" % (where, strides, shape))
            elif "offset" not in st and numel(shape) != numel(env[a]):
                raise ValueError("%s: view of %s to %s changes the element count" % (where, env[a], shape))
            if int(st.get("offset", 0)) < 0:
                raise ValueError("%s: negative offset" % where)
        elif k in ("fill", "empty"):
            shape = list(st["shape"])
            if k == "fill" and not isinstance(st.get("value"), (int, float)):
                raise ValueError("%s: fill needs a value" % where)
        else:
            raise ValueError("%s: unknown kernel" % where)
        if len(shape) > MAX_DIMS or any(d < 0 for d in shape):
            raise ValueError("%s: bad shape %s" % (where, shape))
        if out in params and shape != env[out]:
            raise ValueError("%s: writes %s into param %s of shape %s" % (where, shape, out, env[out]))
        env[out] = shape
    for r in returns:
        if r not in env:
            raise ValueError("returns %s, which is not defined" % r)
    return env


class OutSpec:
    """One tensor output of a function, as the first call showed it.

    alias is None (a new tensor), ("param", j) when it shares storage with
    tensor input j, or ("output", k) when it shares storage with output k of
    the same call; exact is True when it is the very same view (same shape,
    offset and strides), so the format's "returns names the param / repeats
    the name" says it exactly. offset and stride are the output's own
    (elements of its storage), for an alias that is a slice."""

    __slots__ = ("shape", "alias", "exact", "dtype", "offset", "stride", "storage_numel")

    def __init__(self, shape, alias=None, exact=False, dtype="float32", offset=0, stride=None,
                 storage_numel=None):
        self.shape = list(shape)
        # Elements of the storage under the output (None: unknown, taken as
        # the output's own); more than the output covers when it is a part
        # of a larger buffer (x[0] of a graph-made x) that later outputs share.
        self.storage_numel = storage_numel
        self.alias = alias
        self.exact = exact
        self.dtype = dtype or "float32"
        self.offset = offset
        self.stride = tuple(stride) if stride is not None else contiguous_strides(shape)

    def __repr__(self):
        return "OutSpec(%r, alias=%r, exact=%r)" % (self.shape, self.alias, self.exact)


def synth_def(fn, mode, params, param_shapes, outs, mutated=(), param_dtypes=None,
              param_views=None):
    """A def record whose body makes outputs of the observed shapes from the
    inputs. Inductor's kernels cannot be reproduced, and the tree's decisions
    depend only on which tensors exist, alias and die, so each output gets
    one small statement: an alias where PyTorch's output aliased an input or
    another output, otherwise `add` of an input of the same shape and a
    constant (a data dependency, as the real kernel has) or a `fill` of the
    shape.
    Mutated inputs get an in-place statement, which is what makes the engine
    (like PyTorch) decline graphs when the mutated input is not static.
    param_dtypes gives each param's dtype (default float32); param_views each
    param's (offset, strides) at the first call, to tell a reshape from a
    slice."""
    shapes = {p: fit_shape(s) for p, s in zip(params, param_shapes)}
    dtypes = {p: (param_dtypes[i] if param_dtypes else "float32") or "float32"
              for i, p in enumerate(params)}
    views = {p: (param_views[i] if param_views else (0, contiguous_strides(shapes[p])))
             for i, p in enumerate(params)}
    taken = set(params)
    body = []

    def fresh(base):
        name, n = base, 0
        while name in taken:
            n += 1
            name = "%s_%d" % (base, n)
        taken.add(name)
        return name

    for j in mutated:
        if 0 <= j < len(params):
            p = params[j]
            body.append({"out": p, "k": "add", "a": p, "b": 1})
    returns = []
    for i, o in enumerate(outs):
        shape = fit_shape(o.shape)
        src = None
        if o.alias is not None:
            kind, idx = o.alias
            if kind == "param" and 0 <= idx < len(params):
                src = params[idx]
            elif kind == "output" and 0 <= idx < len(returns):
                src = returns[idx]
        if src is not None:
            if o.exact and shapes[src] == shape:
                returns.append(src)
                continue
            name = fresh("r%d" % i)
            st = {"out": name, "k": "view", "a": src, "shape": shape}
            s_off, s_stride = views[src]
            plain = (not o.offset and is_contiguous(o.shape, o.stride) and not s_off
                     and is_contiguous(shapes[src], s_stride) and numel(shapes[src]) == numel(shape))
            if not plain:
                # A slice, a chunk, a transpose: the same storage at the
                # output's own offset and strides (absolute, in elements).
                fields = view_fields(o.shape, o.offset, o.stride)
                st.update(fields)
                if not fields:
                    st = None  # folded past MAX_DIMS: cannot be written as a view
            if st is not None:
                if o.dtype != dtypes[src]:
                    st["dtype"] = o.dtype  # a reinterpreting view (x.view(torch.int32))
                body.append(st)
                shapes[name], dtypes[name] = shape, o.dtype
                views[name] = (o.offset, tuple(o.stride)) if len(o.shape) <= MAX_DIMS else (0, contiguous_strides(shape))
                returns.append(name)
                continue
            taken.discard(name)
        name = fresh("r%d" % i)
        sn = o.storage_numel
        if sn and len(o.shape) <= MAX_DIMS and (
                sn != numel(o.shape) or o.offset or not is_contiguous(o.shape, o.stride)):
            # The output is a part of a buffer the graph made: the buffer
            # first, whole, then the output as its view, so that outputs
            # sharing the buffer (x[0], x[1]) fit in it as they do in PyTorch.
            base = fresh("buf%d" % i)
            bst = {"out": base, "k": "fill", "shape": [int(sn)], "value": i + 1}
            if o.dtype != "float32":
                bst["dtype"] = o.dtype
            st = {"out": name, "k": "view", "a": base, "shape": shape}
            st.update(view_fields(o.shape, o.offset, o.stride))
            body.extend((bst, st))
            shapes[base], dtypes[base] = [int(sn)], o.dtype
            views[base] = (0, contiguous_strides([int(sn)]))
            shapes[name], dtypes[name] = shape, o.dtype
            views[name] = (o.offset, tuple(o.stride))
            returns.append(name)
            continue
        same = next((p for p in params if shapes[p] == shape and dtypes[p] == o.dtype), None)
        if same is None:
            same = next((p for p in params if shapes[p] == shape), None)
        # A different constant per output: PyTorch's compiler drops `x + 0`
        # (the output would alias x) and merges equal expressions (two
        # outputs would share one buffer), and either changes liveness when
        # the trace is run under PyTorch itself.
        if same is not None:
            st = {"out": name, "k": "add", "a": same, "b": i + 1}
            if dtypes[same] != o.dtype:
                st["dtype"] = o.dtype
        else:
            st = {"out": name, "k": "fill", "shape": shape, "value": i + 1}
            if o.dtype != "float32":
                st["dtype"] = o.dtype
        body.append(st)
        shapes[name], dtypes[name] = shape, o.dtype
        views[name] = (0, contiguous_strides(shape))
        returns.append(name)
    if all(st["k"] == "view" for st in body):
        # Every output aliases an input, yet the function reached PyTorch's
        # tree (cudagraphify'd directly, as PyTorch's own tests do): a body
        # of views alone reads as "Dynamo compiled nothing" (it runs as
        # plain Python, in cgtviz as in PyTorch). An empty [0] tensor says
        # "a graph runs here" and allocates nothing (a 0-byte request takes
        # no block, in PyTorch's allocator as in cgtviz's).
        body.append({"out": fresh("launch"), "k": "empty", "shape": [0]})
    rec = {"op": "def", "fn": fn, "params": list(params), "body": body,
           "returns": returns, "mode": mode}
    check_body(rec["params"], {p: shapes[p] for p in params}, body, returns)
    return rec


# ---------------------------------------------------------------------------
# The recording session, free of torch


class Fact:
    """What the recorder learnt about one input or output tensor, without
    holding it: a weak reference to the object, a liveness probe mirroring
    the tree's own (storage alive, the tree's cached reference discounted),
    and the keys that say when two Python objects are the same tensor."""

    __slots__ = ("shape", "device", "obj_ref", "storage", "offset", "stride",
                 "alive", "read_values", "probe", "dtype", "storage_numel", "base", "held",
                 "view_key", "ptr")

    def __init__(self, shape, device, obj_ref, storage, offset, stride, alive,
                 read_values=None, dtype="float32", storage_numel=None, base=None):
        self.shape = list(shape)
        self.device = device
        self.obj_ref = obj_ref  # callable -> the object or None
        self.storage = storage  # identity of the storage (int)
        self.offset = offset
        self.stride = tuple(stride)
        self.alive = alive  # callable -> bool
        self.read_values = read_values  # callable -> list[float] or None
        self.probe = None  # the torch side's liveness probe, if any
        self.dtype = dtype or "float32"
        # Elements of this dtype the storage holds (None: unknown, taken to
        # be exactly what the view reaches).
        self.storage_numel = storage_numel
        # callable -> the Fact of the tensor this one is a view of (PyTorch's
        # tensor._base), or None.
        self.base = base
        # True when alive() is True for as long as obj_ref() is not None (the
        # torch side's probes without a tree wrapper): such names are not
        # polled until their object dies.
        self.held = False
        # The tensor's data_ptr() when the Fact was made (None: unknown): an
        # object whose data pointer moved (`param.data = new`) is a new
        # tensor under the same Python object.
        self.ptr = None
        # What says two objects are one view of one storage; a Fact is never
        # changed once made, so it is built once (the hot path asks it for
        # every output at least three times).
        self.view_key = (storage, offset, tuple(self.shape), self.stride)


class FnInfo:
    """A FunctionID as the tree manager knows it."""

    __slots__ = ("key", "base", "mode", "static", "mutated", "placeholders", "device")

    def __init__(self, key, base, mode, static=(), mutated=(), placeholders=(), device=0):
        self.key = key
        self.base = base
        self.mode = mode
        self.static = set(static)
        self.mutated = tuple(mutated)
        self.placeholders = list(placeholders)
        self.device = device


class _Entry:
    __slots__ = ("name", "fact", "kind", "order", "obj_id", "wr", "in_memo")

    def __init__(self, name, fact, kind, order):
        self.name, self.fact, self.kind, self.order = name, fact, kind, order
        self.in_memo = False  # an input of some function's memo (Recorder._before_call)
        self.obj_id = None  # id() of the object by_obj maps to this name
        self.wr = None  # the weakref whose callback says the object died (held facts)


class _FnState:
    __slots__ = ("name", "info", "params", "shapes", "dtypes", "views", "defined", "calls",
                 "out_pos", "out_dense", "warned_extra", "last_args", "memo", "tensor_idx", "plan",
                 "last_entries")

    def __init__(self, name, info):
        self.name, self.info = name, info
        self.out_pos = []  # output positions the def returns (tensors at the first call)
        self.out_dense = False  # out_pos is every position of the first call's outputs
        self.warned_extra = False
        self.params, self.shapes = None, None
        self.tensor_idx = None  # the input index of each param (tensor inputs only)
        self.dtypes, self.views = None, None
        self.defined = False
        self.calls = 0
        self.last_args = None  # the args list of the last call begin_known_call made
        # The torch side's memo of the last call's inputs, when all were
        # named tensors: (their weak references, their entries).
        self.memo = None
        # The torch side's _ReplayPlan: what the last call, a replay, left
        # behind, for the next one to take the short path (or None).
        self.plan = None
        # The torch side's entries that named the last call's inputs through
        # Recorder._before_call's general path, by position (_NO_ENTRY where
        # none did): where the next call looks first (or None).
        self.last_entries = None


class _ReplayPlan:
    """What a steady replay of a function leaves for the next call of it
    (Recorder._fast_after): the node it replayed, PyTorch's decision about
    it (its expect record, shared), and the entries of its outputs (the
    node's cached tensors, renamed at every replay), with the names they
    have now. The next call takes the short path only when all of it
    still holds; otherwise the general one runs, as if there were no plan.

    `head` is the call line up to its first output name ('{"op": "call",
    "fn": ..., "args": [...], "out": ["'), made once, when the function's
    name and the args are names json.dumps writes as they are (None
    otherwise: the call is then a record like any other)."""

    __slots__ = ("node_ref", "node_keys", "ckpt", "dev", "ekey", "expect", "entries", "names",
                 "prefix", "suffixes", "fn_json", "args", "argset", "head", "dev_key", "serial",
                 "nin", "in_refs", "in_ptrs", "in_idx", "nout", "out_refs", "wrappers", "polled",
                 "fs", "uses", "cfg", "expect_line")

    def __init__(self, node, node_keys, ckpt, dev, ekey, expect, entries, names, fn, args):
        self.node_ref = weakref.ref(node)  # weak: a plan never keeps a graph alive
        self.node_keys, self.ckpt, self.dev = node_keys, ckpt, dev
        self.dev_key = str(dev)  # Recorder._trees' key
        self.ekey, self.expect = ekey, expect
        self.expect_line = None  # its line, once a deferred replay wrote it (exp_line)
        self.entries = entries  # tuple of _Entry, by output position
        self.names = names  # tuple of their names after the last call
        self.prefix = fn + "_c"
        self.suffixes = tuple("_%d" % i for i in range(len(entries)))
        fj = _names_json([fn])
        self.fn_json = fj[1:-1] if fj is not None else None  # None: the names are no template's
        self.args = self.head = None
        # Recorder._serial when the plan was last found to hold for a
        # deferred replay (Recorder._steady_holds); None: not yet. The
        # rest is what it found, for the deferred call to compare: the
        # memo's inputs (count, weak references, data pointers), the
        # outputs' (count, weak references, the tree's wrappers), and the
        # wrappers of the polled names when they are the outputs' alone.
        self.serial = None
        self.nin = self.in_refs = self.in_ptrs = self.in_idx = None
        self.nout = self.out_refs = self.wrappers = self.polled = None
        self.fs = None  # the function's _FnState
        # Whether a polled output's tree check counts c10's own reference
        # (2.11's: _refcount_rule's USE_COUNT): the poll reads _use_count().
        self.uses = False
        self.cfg = None  # the count of config writes (Recorder._count_config_writes) it was checked at
        self.set_args(args)

    def exp_line(self):
        """The expect record's line, encoded once for all the deferred
        replays of the plan (the record itself if the encoder refuses it:
        the writer drops it then, with a note, as it drops any record)."""
        if self.expect_line is None:
            try:
                self.expect_line = encode_record(self.expect)
            except (ValueError, TypeError):
                self.expect_line = self.expect
        return self.expect_line

    def set_args(self, args):
        """The call line's head for this args list (a loop's calls share one)."""
        self.args = args
        self.argset = frozenset(args)
        aj = _names_json(args) if self.fn_json is not None else None
        self.head = (None if aj is None else
                     '{"op": "call", "fn": ' + self.fn_json + ', "args": ' + aj + ', "out": ["')


def _known_name(e, obj):
    """e's name when e (an entry found by id) is bound to this very object."""
    if e is None:
        return None
    ref = e.fact.obj_ref
    return e.name if ref is not None and ref() is obj else None


class Session:
    """Turns tree events into trace records. The torch side (Recorder) gives
    it Facts; it owns names, liveness bookkeeping and record order:

      dels of names that died, new tensors for unseen inputs, the call,
      its expect, then dels of names a call made redundant.

    A name dies when its Fact's probe says so (the torch side mirrors the
    tree's own liveness checks); deaths are polled at every event, so each
    `del` lands before the first record that could see it."""

    def __init__(self, trace):
        self.trace = trace
        self.entries = {}  # name -> _Entry, live names only
        self.by_obj = {}  # id(obj) -> name
        self.by_obj_entry = {}  # id(obj) -> entry (what by_obj names), for the hot path
        self.by_storage = {}  # storage identity -> {name: entry} of the live names over it
        self.by_view = {}  # view key -> name
        self.fns = {}  # FnInfo.key -> _FnState
        self.out_storage = {}  # storage identity -> a live name of a tree output over it
        self._watch = {}  # name -> entry, for names polled at every event
        # id(weakref) -> name, for names alive while their object is. Keyed
        # by id: a weakref hashes and compares as its live object does, and
        # two names of one tensor (a parameter a forward returns) would
        # make the dict compare tensors with ==, which raises in torch.
        self._held_wr = {}
        # (weakref, clock() then) of the objects that died since the last
        # poll: the clock, the torch side's step counter, says which step
        # each death came after (steps are written late: _catch_up_steps).
        self._dead_objs = []
        self.clock = None  # callable -> the step counter now; None: 0
        # view key -> the entry of a replay's cached output that died to the
        # tree (its last Python reference went) while autograd may keep it
        # for a backward: a later input that is that very object is written
        # as a `saved` record of it (_saved_name).
        self._dead_cached = {}
        self._argset = None  # (an args list, the set of its names), for _flush_dead
        self.fn_names = set()
        self.names_used = set()
        self._fresh_next = {}  # base -> the suffix _fresh tries first
        self._expects = {}
        self._swapped = []  # names whose object took other data (lookup), to del after its new record  # (action, node, checkpoints, device) -> its expect record
        self.order = 0
        # Moves whenever a name is bound or unbound, or an entry a memo of
        # inputs holds is renamed: a memo made at the same epoch is true.
        self.epoch = 0
        self.seed = 0
        self.counts = {"calls": 0, "warmup": 0, "record": 0, "replay": 0, "eager": 0,
                       "errors": 0, "steps": 0, "dels": 0, "tensors": 0, "params": 0, "reads": 0}

    # -- names

    def _fresh(self, base):
        # The first of base, base_1, base_2, ... not taken. Names are never
        # given back, so the search resumes where the last one for this base
        # ended: a loop's fresh input per call ("in", "in_1", ...) costs one
        # probe, not one per earlier call.
        n = self._fresh_next.get(base, 0)
        name = "%s_%d" % (base, n) if n else base
        while name in self.names_used:
            n += 1
            name = "%s_%d" % (base, n)
        self.names_used.add(name)
        self._fresh_next[base] = n + 1
        return name

    def _replay_names(self, plan, calls):
        """The names of a replay's outputs as end_call gives them (function,
        call number, position), each taken (_fresh only when a tensor has
        it already), for a _ReplayPlan's outputs."""
        used = self.names_used
        cs = str(calls)
        outs = []
        for sfx in plan.suffixes:
            n = plan.prefix + cs + sfx
            if n in used:
                n = self._fresh(n)
            else:
                used.add(n)
            outs.append(n)
        return outs

    def _bind(self, name, fact, kind, takeover=True):
        """Names a tensor. With takeover, later lookups of this object and
        view find this name; without, the name is a passing alias and the
        older name keeps representing the tensor."""
        self.order += 1
        self.epoch += 1
        e = _Entry(name, fact, kind, self.order)
        self.entries[name] = e
        self.by_storage.setdefault(fact.storage, {})[name] = e
        if kind == "out":
            self.out_storage.setdefault(fact.storage, name)
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if takeover:
            if obj is not None:
                self.by_obj[id(obj)] = name
                self.by_obj_entry[id(obj)] = e
                e.obj_id = id(obj)
            self.by_view[fact.view_key] = name
        if fact.held and obj is not None:
            # Alive for sure while its object is: polled only once a
            # weakref callback says the object died.
            e.wr = weakref.ref(obj, self._died)
            self._held_wr[id(e.wr)] = name
        else:
            self._watch[name] = e
        return e

    def _died(self, wr):
        # Runs wherever the object dies (inside PyTorch, in the GC): only
        # notes it, and when; the next event polls the name.
        self._dead_objs.append((wr, self.clock() if self.clock is not None else 0))

    def _forget(self, name):
        e = self.entries.pop(name)
        self.epoch += 1
        same = self.by_storage.get(e.fact.storage)
        if same is not None:
            same.pop(name, None)
            if not same:
                del self.by_storage[e.fact.storage]
        self._watch.pop(name, None)
        if e.wr is not None:
            self._held_wr.pop(id(e.wr), None)
        k = e.fact.view_key
        if self.by_view.get(k) == name:
            del self.by_view[k]
        if self.out_storage.get(e.fact.storage) == name:
            del self.out_storage[e.fact.storage]
            if same:
                other = next((o.name for o in same.values() if o.kind == "out"), None)
                if other is not None:
                    self.out_storage[e.fact.storage] = other
        if e.obj_id is not None and self.by_obj.get(e.obj_id) == name:
            del self.by_obj[e.obj_id]
            del self.by_obj_entry[e.obj_id]

    def lookup(self, fact):
        """The live name that holds this tensor, if any: the same Python
        object, or another object over the same view of the same storage
        (autograd unpacks saved tensors into new objects)."""
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if obj is not None:
            name = self.by_obj.get(id(obj))
            if name is not None:
                e = self.entries.get(name)
                if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj:
                    if e.fact.storage == fact.storage and e.fact.offset == fact.offset:
                        return name
                    # `param.data = new`: the object holds other data now.
                    # The name's tensor is gone (the object no longer holds
                    # its storage); the object gets a new record, and the
                    # old name's del comes after it (begin_call): the new
                    # data was made while the old still lived, so it has
                    # another address, as in PyTorch.
                    self._forget(name)
                    self._swapped.append(name)
        name = self.by_view.get(fact.view_key)
        if name is not None and name in self.entries:
            return name
        return None

    def _swaps(self, fact):
        """Whether fact's object is a named one that now holds other data
        (`param.data = new`): what lookup turns into a new record."""
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if obj is None:
            return False
        e = self.by_obj_entry.get(id(obj))
        if e is None or e.fact.obj_ref is None or e.fact.obj_ref() is not obj:
            return False
        return e.fact.storage != fact.storage or e.fact.offset != fact.offset

    def _saved_name(self, fact):
        """A name for an input that is a replay's cached output the tree
        already counts dead: autograd kept it (a forward's saved tensor) and
        hands it to the backward now. Written as a `saved` record of the
        dead name, judged alive as the tree judges that output."""
        e = self._dead_cached.get(fact.view_key)
        if e is None:
            return None
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if obj is None or e.fact.obj_ref is None or e.fact.obj_ref() is not obj:
            return None  # another tensor over memory the dead one had
        name = self._fresh("saved")
        self.trace.add({"op": "saved", "name": name, "of": e.name})
        if fact.probe is not None and e.fact.probe is not None:
            fact.probe.tree_ref = e.fact.probe.tree_ref
            fact.held = False
        self._bind(name, fact, "out")
        return name

    def _view_source(self, fact):
        """A live name that can stand for the storage a new input views: a
        tensor over the same storage, at offset 0, contiguous, of the same
        dtype, reaching at least as far as the view does (the largest such
        one). Returns (name, plain), plain when the input is a mere reshape
        of it (same element count, offset 0, contiguous)."""
        same = self.by_storage.get(fact.storage)
        if not same:
            return None
        need = extent(fact.shape, fact.offset, fact.stride)
        best = None
        for e in list(same.values()):
            f = e.fact
            if f.offset != 0 or f.dtype != fact.dtype:
                continue
            if not is_contiguous(f.shape, f.stride) or not e.fact.alive():
                continue
            n = numel(f.shape)
            if n < need:
                continue
            if best is None or n > best[1]:
                best = (e.name, n)
        if best is None:
            return None
        plain = (fact.offset == 0 and is_contiguous(fact.shape, fact.stride)
                 and numel(fact.shape) == best[1])
        return best[0], plain

    def _eager_view(self, fact, src, plain):
        name = self._fresh("view")
        rec = {"op": "eager", "out": name, "k": "view", "a": src, "shape": fit_shape(fact.shape)}
        if not plain:
            fields = view_fields(fact.shape, fact.offset, fact.stride)
            if not fields:  # folded past MAX_DIMS: not a view the format can say
                return None
            rec.update(fields)
        src_dtype = self.entries[src].fact.dtype
        if fact.dtype != src_dtype:
            rec["dtype"] = fact.dtype
        self.trace.add(rec)
        self._bind(name, fact, "view")
        return name

    def _name_view(self, fact):
        """Names an input that is a view of storage the trace may not hold
        yet: an eager `view` of a named tensor over it; else of its base
        (tensor._base, named now); else of a tensor standing for the whole
        storage, which lives as long as the storage does. Returns None for a
        tensor that is its storage's sole, plain occupant."""
        got = self._view_source(fact)
        if got is not None:
            return self._eager_view(fact, got[0], got[1])
        whole = fact.storage_numel
        covers = (fact.offset == 0 and is_contiguous(fact.shape, fact.stride)
                  and (whole is None or whole <= numel(fact.shape)))
        if covers:
            return None
        base = None
        if fact.base is not None:
            try:
                base = fact.base()
            except Exception:
                base = None
        # Only a base the format can hold as a plain tensor (contiguous, at
        # offset 0, of the view's dtype) is named; otherwise the storage is.
        if (base is not None and base.storage == fact.storage and base.view_key != fact.view_key
                and base.offset == 0 and is_contiguous(base.shape, base.stride)
                and base.dtype == fact.dtype):
            if self.lookup(base) is None and self._name_view(base) is None:
                self._tensor_record(base, "tensor", "base")
            got = self._view_source(fact)
            if got is not None:
                return self._eager_view(fact, got[0], got[1])
        if whole is None or whole < extent(fact.shape, fact.offset, fact.stride):
            return None
        # The storage itself: alive while the storage is (a view keeps it).
        stor = Fact([whole], fact.device, None, fact.storage, 0, (1,),
                    fact.probe.storage_alive if fact.probe is not None else fact.alive,
                    None, fact.dtype, whole, None)
        whole_name = self._tensor_record(stor, "tensor", "storage")
        return self._eager_view(fact, whole_name, False)

    # -- liveness

    def _flush_dead(self, names):
        if self._dead_objs:
            self._poll_dead_objs()
        watch = self._watch
        if not watch:
            return
        if len(watch) < len(names):
            # Fewer polled names than arguments (a model's parameters are
            # held, not polled): the polled ones among the arguments, found
            # from the smaller side. (The dels come out in binding order
            # either way.)
            got = self._argset
            if got is not None and got[0] is names:  # a loop's calls share one args list
                args = got[1]
            else:
                args = set(names)
                self._argset = (names, args)
            if args.isdisjoint(watch):  # (a steady loop: only its outputs are polled)
                return
            names = [n for n in watch if n in args]
        dead = None
        for n in names:
            e = watch.get(n)
            if e is not None and not e.fact.alive():
                if dead is None:
                    dead = [e]
                elif e not in dead:
                    dead.append(e)
        if dead is not None:
            self._emit_dels(dead)

    def _emit_dels(self, dead):
        """One `del` for the dead entries, in binding order, names forgotten."""
        if not dead:
            return
        dead.sort(key=lambda e: e.order)
        names = [e.name for e in dead]
        for e in dead:
            if e.kind == "out" and _cached_output(e.fact):
                self._dead_cached[e.fact.view_key] = e
        for n in names:
            self._forget(n)
        self.counts["dels"] += len(names)
        self.trace.add({"op": "del", "names": names})

    def _poll_dead_objs(self, upto=None):
        """Names whose object died since the last event join the polled ones
        (their storage may live on: autograd's unpacked copies, views);
        with upto, only those that died while the step counter was at upto
        or above (before the step that took it below)."""
        later = []
        while self._dead_objs:
            wr, at = self._dead_objs.pop()
            if upto is not None and at < upto:
                later.append((wr, at))
                continue
            name = self._held_wr.pop(id(wr), None)
            e = self.entries.get(name) if name is not None else None
            if e is not None and e.wr is wr:
                e.wr = None
                self._watch[name] = e
        self._dead_objs.extend(later)

    def flush_deaths(self, upto=None):
        """Emits one `del` for every named tensor that died since the last
        event (with upto, of the objects whose death the session heard of,
        those that died before the step counter went below upto), in
        binding order, so a replay drops them where PyTorch did."""
        if self._dead_objs:
            self._poll_dead_objs(upto)
        if not self._watch:
            return  # nothing is polled: every named object is alive
        dead = None
        for e in self._watch.values():
            if not e.fact.alive():
                if dead is None:
                    dead = [e]
                else:
                    dead.append(e)
        if dead is not None:
            self._emit_dels(dead)

    # -- events

    def known(self, obj):
        """The live name bound to this very object, or None."""
        return _known_name(self.by_obj_entry.get(id(obj)), obj)

    def read_target(self, obj, storage):
        """The name a host read of `obj` reads, when it is a tree output or a
        view of one (None otherwise: reading an eager tensor never fails).
        `storage` is a callable giving obj's storage identity, asked only
        when some tree output lives."""
        if not self.out_storage:
            return None
        name = self.by_obj.get(id(obj))
        if name is not None:
            e = self.entries.get(name)
            if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj:
                return name if e.fact.storage in self.out_storage else None
        return self.out_storage.get(storage())

    def read(self, name, error=None):
        """A host read (.item(), .cpu(), print) of a named tree output, and
        whether PyTorch raised (an output a later replay overwrote)."""
        self.flush_deaths()
        if name not in self.entries:
            return
        self.counts["reads"] += 1
        self.trace.add({"op": "read", "name": name})
        if error is not None:
            self.counts["errors"] += 1
        self.trace.add({"op": "expect", "error": error})

    def reset(self, device=None):
        """The trees were dropped: every device's (device None:
        reset_cudagraph_trees, from torch._dynamo.reset()) or one device's
        (its manager ended with its last compiled function)."""
        self._device_record("reset", device)

    def skipped_backward(self, device):
        """A compiled backward ran without CUDA graphs (its manager's
        set_to_running_backward): no backward is pending any more. Device 0
        is the format's default."""
        self._device_record("skipped_backward", device or None)

    def _device_record(self, op, device):
        self.flush_deaths()
        rec = {"op": op}
        if device is not None:
            rec["device"] = device
        self.trace.add(rec)

    def step(self, upto=None):
        """A step (mark_step), after the deaths before it: with upto, the
        step counter's value before this step (see flush_deaths)."""
        self.flush_deaths(upto)
        self.counts["steps"] += 1
        self.trace.add(_STEP)  # records are never changed once added: one is enough

    def note(self, text):
        self.trace.add({"op": "note", "text": text})

    def config(self, changes):
        """Settings that changed since the last config the trace holds (a
        test patching torch._inductor.config mid-program), in force from
        here on."""
        rec = {"op": "config"}
        rec.update(changes)
        self.trace.add(rec)

    def _fn(self, info):
        st = self.fns.get(info.key)
        if st is None:
            name = sanitize(info.base, "fn")
            name = "%s_%s" % (name, info.key[-1]) if isinstance(info.key, tuple) else "%s_%s" % (name, info.key)
            base, n = name, 0
            while name in self.fn_names:
                n += 1
                name = "%s_%d" % (base, n)
            self.fn_names.add(name)
            st = _FnState(name, info)
            self.fns[info.key] = st
        return st

    def fn_name(self, key):
        st = self.fns.get(key)
        return st.name if st is not None else None

    def _tensor_record(self, fact, op, base):
        name = self._fresh(base)
        shape = fit_shape(fact.shape)
        rec = {"op": op, "name": name, "shape": shape}
        if fact.dtype != "float32":
            rec["dtype"] = fact.dtype
        values = None
        # Values only for float32: the format computes no other dtype.
        if numel(shape) <= SMALL_TENSOR and fact.read_values is not None and fact.dtype == "float32":
            try:
                values = fact.read_values()
            except Exception:  # e.g. an overwritten cudagraph output: values unreadable
                values = None
            if values is not None and (len(values) != numel(shape)
                                       or not all(math.isfinite(v) for v in values)):
                values = None
        if values is not None:
            rec["init"] = "values"
            # Whole numbers as ints (1, not 1.0): the form cgtviz fmt writes.
            rec["values"] = [int(v) if float(v).is_integer() else v for v in values]
        else:
            self.seed += 1
            rec["init"] = "rand"
            rec["seed"] = self.seed
        if fact.device:
            rec["device"] = fact.device
            self.trace.devices = max(self.trace.devices, fact.device + 1)
        self.trace.add(rec)
        self.counts["params" if op == "param" else "tensors"] += 1
        self._bind(name, fact, op)
        return name

    def begin_call(self, info, inputs, param_names=None, invocation=None):
        """Records everything before a call: deaths, the tensors it reads
        that the trace has not named yet. `inputs` holds a Fact per tensor
        input and None for the rest (SymInts, generators), by input index.
        `param_names` maps an input index to a preferred name (a module's
        parameter path). `invocation` is Dynamo's generation counter when
        the call ran (calls with equal values are one top-level compiled
        invocation). Returns the call's context for end_call."""
        self.flush_deaths()
        fs = self._fn(info)
        args, param_list, shapes, pdtypes, pviews = [], [], [], [], []
        self._swapped = []
        ph = info.placeholders
        # A parameter whose data the program replaced (`param.data = new`)
        # is written first: the replacement ran before the call's
        # expression made its new inputs (the usual `p.data = ...;
        # f(torch.rand(...))`), and the allocator hands out memory in that
        # order (a new input can take the old data's block).
        # (The positions of the Facts: the inputs new to the trace, few
        # among a model's named parameters.)
        order = _fact_positions(inputs)
        if any(self._swaps(inputs[i]) for i in order):
            order.sort(key=lambda i: not self._swaps(inputs[i]))
        named = {}
        for idx in order:
            fact = inputs[idx]
            name = self.lookup(fact)
            if name is None:
                name = self._saved_name(fact)
            if name is None:
                name = self._name_view(fact)
            if name is None:
                hint = (param_names or {}).get(idx)
                if idx in info.static:
                    name = self._tensor_record(fact, "param", sanitize(hint, "param") if hint else "param")
                else:
                    ph_name = ph[idx] if idx < len(ph) else ""
                    if info.mode == "backward":
                        base = "grad" if str(ph_name).startswith("tangents") else "saved"
                    else:
                        base = "in"
                    name = self._tensor_record(fact, "tensor", base)
            named[idx] = name
            if self._swapped:
                self.counts["dels"] += len(self._swapped)
                self.trace.add({"op": "del", "names": self._swapped})
                self._swapped = []
        if fs.params is not None:
            # (A str: the torch side found its name, Recorder._before_call.)
            args = list(inputs)
            for idx in order:
                args[idx] = named[idx]
            if None in args:
                args = [a for a in args if a is not None]
        else:
            # The function's first call: its def's parameters too.
            for idx, fact in enumerate(inputs):
                if fact is None:
                    continue
                if isinstance(fact, str):
                    args.append(fact)
                    continue
                args.append(named[idx])
                pname = sanitize(ph[idx], "x") if idx < len(ph) and ph[idx] else "x%d" % idx
                param_list.append(pname)
                shapes.append(fit_shape(fact.shape))
                pdtypes.append(fact.dtype)
                pviews.append((fact.offset, tuple(fact.stride)))
        if fs.params is None:
            # Local names of the def: unique, and apart from the r<i> outputs.
            seen, uniq = set(), []
            for p in param_list:
                q, n = p, 0
                while q in seen or re.fullmatch(r"r\d+(_\d+)?", q):
                    n += 1
                    q = "%s_%d" % (p, n)
                seen.add(q)
                uniq.append(q)
            fs.params, fs.shapes = uniq, shapes
            fs.tensor_idx = [i for i, f in enumerate(inputs) if f is not None]
            fs.dtypes, fs.views = pdtypes, pviews
            fs.info = info
        fs.calls += 1
        self.counts["calls"] += 1
        if fs.defined:  # _define, which reads the inputs' Facts, has run
            return {"fn": fs, "args": args, "invocation": invocation}
        tensor_idx = [i for i, f in enumerate(inputs) if f is not None]
        return {"fn": fs, "args": args, "tensor_idx": tensor_idx, "inputs": list(inputs),
                "invocation": invocation}

    def begin_known_call(self, fs, args, invocation=None):
        """begin_call for a defined function (fs) whose every tensor input
        the torch side found by its name (args, in input order): what is
        left of begin_call then is deaths and counts. The steady loop's
        path."""
        self.flush_deaths()
        fs.calls += 1
        self.counts["calls"] += 1
        # The same names as the function's last call (a loop's): that call's
        # list, shared (records are never changed), so the trace holds, and
        # the writer encodes, one list for all of them.
        last = fs.last_args
        if last is args:
            pass
        elif last is not None and last == args:
            args = last
        else:
            fs.last_args = args
        return {"fn": fs, "args": args, "invocation": invocation}

    def end_call(self, ctx, actions, node=None, checkpoints=None, outputs=None,
                 error=None, device=0):
        """Records the call and PyTorch's decision about it. `outputs` holds,
        by output position, a Fact per tensor output and None for anything
        else (a SymInt, None, a tensor left out); it is None when the call
        raised. `node` is (fn key, parent fn key or None) for record and
        replay.

        The def returns the positions that held tensors at the function's
        first call; a later call binds each of them (`_` where it holds no
        tensor this time), so `out` always has one name per returned value."""
        fs = ctx["fn"]
        if outputs is not None and not fs.defined:
            fs.out_pos = [i for i, f in enumerate(outputs) if f is not None]
            fs.out_dense = len(fs.out_pos) == len(outputs)
            self._define(fs, ctx, [outputs[i] for i in fs.out_pos])
        if outputs is not None and not (fs.out_dense and len(outputs) == len(fs.out_pos)):
            # (Every position held a tensor at the first call and the count is
            # the same: outputs is already what the def returns.)
            extra = [i for i, f in enumerate(outputs) if f is not None and i not in fs.out_pos]
            if extra and not fs.warned_extra:
                fs.warned_extra = True
                self.note("%s returned tensors at positions %s, which its first call did not: "
                          "they are not in the trace" % (fs.name, extra))
            outputs = [outputs[i] if i < len(outputs) else None for i in fs.out_pos]
        call = {"op": "call", "fn": fs.name, "args": ctx["args"]}
        outs = []
        if outputs:
            # An output's name is unique by its making (function, call,
            # position): _fresh, which would give the same name, is asked
            # only when the name is taken (by a tensor named so).
            used = self.names_used
            calls = fs.calls
            for i, f in enumerate(outputs):
                if f is None:
                    outs.append("_")
                    continue
                n = "%s_c%d_%d" % (fs.name, calls, i)
                if n in used:
                    n = self._fresh(n)
                else:
                    used.add(n)
                outs.append(n)
            call["out"] = outs
        inv = ctx["invocation"]
        if inv is not None:
            call["invocation"] = int(inv)
        trace = self.trace
        trace.add(call)
        action = actions[-1] if actions else "eager"
        self.counts[action] += 1
        # A steady replay expects the same as the one before it: one record
        # object per distinct expect, shared (records are never changed
        # once added), built once.
        ekey = (action, node, checkpoints, device) if error is None else None
        exp = self._expects.get(ekey) if ekey is not None else None
        if exp is not None:
            trace.add(exp)
            if self._watch or self._dead_objs:
                self._flush_dead(ctx["args"])
            if outputs:
                self._bind_outputs(outs, outputs)
            return
        exp = {"op": "expect", "action": action}
        if node is not None and action in ("record", "replay"):
            fn = self.fn_name(node[0])
            parent = self.fn_name(node[1]) if node[1] is not None else None
            # A node of a function this trace never defined (recorded before
            # recording began) cannot be named: leave the check out.
            if fn is not None and (node[1] is None or parent is not None):
                exp["node"] = {"fn": fn, "parent_fn": parent}
        if checkpoints is not None:
            exp["checkpoints"] = checkpoints
        if error is not None:
            self.counts["errors"] += 1
            exp["error"] = error
        if device:
            exp["device"] = device
        if ekey is not None and (node is None or "node" in exp):
            # (A node left unnamed may be named later, once its function is.)
            self._expects[ekey] = exp
        self.trace.add(exp)
        # Inputs that died inside the call (the tree clears its input list,
        # autograd frees saved tensors in a backward): deleted right after
        # the call's expect, before anything else happens, so no later
        # record sees them alive and no output is mistaken for them.
        self._flush_dead(ctx["args"])
        self._bind_outputs(outs, outputs)

    def _bind_outputs(self, outs, outputs):
        if not outputs:
            return
        # Bind outputs. A name whose object comes back again (a replay hands
        # out the same cached tensor object every time) is retired, since the
        # program's variable now holds the new binding. An output that is a
        # tensor the program already names otherwise (a parameter a forward
        # returns for autograd to save, an input returned as is) stays
        # represented by that name: its output name is dropped at once, or it
        # would live as long as the parameter.
        drop = []
        renamed = []  # (order, name) of names retired by _rename
        start = self.order  # entries up to this one were bound before this call's outputs
        entries = self.entries
        by_obj_entry = self.by_obj_entry
        for name, f in zip(outs, outputs):
            if f is None:
                continue
            ref = f.obj_ref
            obj = ref() if ref is not None else None
            # lookup(f), with the entry it finds: the object's own name, else
            # the name over its view.
            e = by_obj_entry.get(id(obj)) if obj is not None else None
            if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj:
                old, same_obj = e.name, True
            else:
                old = self.by_view.get(f.view_key)
                e = entries.get(old) if old is not None else None
                if e is None:
                    old = None
                else:
                    same_obj = obj is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj
            takeover = True
            if old is not None and old not in drop:
                if e.kind == "out":
                    if same_obj:
                        order = e.order
                        if e.fact is f and order <= start and self._rename(e, name, obj):
                            renamed.append((order, old))
                            continue
                        drop.append(old)
                elif (same_obj or e.fact.view_key == f.view_key) and e.fact.alive():
                    takeover = False
                    drop.append(name)
            self._bind(name, f, "out", takeover)
        if renamed:
            if len(renamed) == 1 and not drop:  # a steady replay's one output
                names = [renamed[0][1]]
            else:
                gone = sorted(renamed + [(self.entries[n].order, n) for n in drop])
                names = [n for _, n in gone]
                drop.sort(key=lambda n: self.entries[n].order)
        elif drop:
            drop.sort(key=lambda n: self.entries[n].order)
            names = drop
        else:
            return
        for n in drop:
            self._forget(n)
        self.counts["dels"] += len(names)
        self.trace.add({"op": "del", "names": names})

    def _rename(self, e, name, obj):
        """Binds `name` to the tensor of output entry e, whose name retires:
        what _bind(name, e.fact, "out") then _forget(e.name) leave behind,
        done in place (no new entry, Fact or weak reference). It is a
        replay's cached output handed out again, found with its Fact. The
        storage's other names keep their places; the new name goes last,
        as _bind puts it, and the storage's output name, if it was e's,
        becomes the first output name left over it, as _forget picks it.
        Returns False, changing nothing, when e is not where it should be."""
        st = e.fact.storage
        same = self.by_storage.get(st)
        old = e.name
        if same is None or same.get(old) is not e:
            return False
        if e.in_memo:
            self.epoch += 1
        self.order += 1
        e.order = self.order
        del self.entries[old]
        self.entries[name] = e
        del same[old]
        same[name] = e
        self._rename_out_storage(st, old, name, same)
        oid = id(obj)
        if e.obj_id is not None and e.obj_id != oid and self.by_obj.get(e.obj_id) == old:
            del self.by_obj[e.obj_id]
            del self.by_obj_entry[e.obj_id]
        self.by_obj[oid] = name
        self.by_obj_entry[oid] = e
        e.obj_id = oid
        self.by_view[e.fact.view_key] = name
        e.name = name
        if e.fact.held:
            if e.wr is None:
                self._watch.pop(old, None)
                e.wr = weakref.ref(obj, self._died)
            self._held_wr[id(e.wr)] = name
        else:
            if e.wr is not None:
                self._held_wr.pop(id(e.wr), None)
                e.wr = None
            self._watch.pop(old, None)
            self._watch[name] = e
        return True

    def _rename_out_storage(self, st, old, name, same):
        """The output name that stands for storage st, after old was renamed
        name: the new name where old stood (or nothing did), among the
        storage's names (same) an output's."""
        if self.out_storage.get(st, old) == old:
            if len(same) == 1:
                self.out_storage[st] = name
            else:
                self.out_storage[st] = next(o.name for o in same.values() if o.kind == "out")

    def _rename_replayed(self, e, name, order=None):
        """_rename for the output entry of a replay the recorder's short path
        checked (Recorder._fast_after): the same object as the entry's, over
        the same storage, named there, polled (not held), so of _rename
        only what changes is done. With order, the entry takes that order
        (the last of a deferred run's renames, Recorder._write_pending,
        which counted the others) instead of the next one."""
        old = e.name
        if e.in_memo:
            self.epoch += 1
        if order is None:
            self.order += 1
            order = self.order
        e.order = order
        entries = self.entries
        del entries[old]
        entries[name] = e
        st = e.fact.storage
        same = self.by_storage[st]
        del same[old]
        same[name] = e
        self._rename_out_storage(st, old, name, same)
        self.by_obj[e.obj_id] = name
        self.by_view[e.fact.view_key] = name
        e.name = name
        watch = self._watch
        watch.pop(old, None)
        watch[name] = e

    def _define(self, fs, ctx, outputs):
        ins = ctx["inputs"]
        tidx = ctx["tensor_idx"]
        pos = {i: k for k, i in enumerate(tidx)}
        specs = []
        for i, f in enumerate(outputs):
            alias, exact = None, False
            for j in tidx:
                # An input that died during the call cannot be aliased, and its
                # storage's address may already be another's: check it lives.
                if ins[j].storage == f.storage and ins[j].alive():
                    alias = ("param", pos[j])
                    exact = ins[j].view_key == f.view_key
                    break
            if alias is None:
                for k in range(i):
                    g = outputs[k]
                    if g.storage == f.storage:
                        alias = ("output", k)
                        exact = g.view_key == f.view_key
                        break
            specs.append(OutSpec(f.shape, alias, exact, f.dtype, f.offset, f.stride,
                                 f.storage_numel))
        mutated = [pos[j] for j in fs.info.mutated if j in pos]
        rec = synth_def(fs.name, fs.info.mode, fs.params, fs.shapes, specs, mutated,
                        fs.dtypes, fs.views)
        # The graph's static inputs (static_input_idxs), by def position: in
        # a backward its saved tensors are, whatever made them.
        rec["static"] = sorted(pos[j] for j in fs.info.static if j in pos)
        self.trace.set_def(rec)
        fs.defined = True

    def finish(self):
        """Emits the deaths seen at the end, and a def for every function
        whose calls all raised before it returned outputs (with no results,
        as nothing more was observed)."""
        self.flush_deaths()
        for fs in self.fns.values():
            if not fs.defined and fs.params is not None:
                # What the tree knew of the function: the inputs it mutates
                # (a call that raised on them, as cudagraph_or_error makes
                # it, still needs them) and its static inputs.
                pos = {i: k for k, i in enumerate(fs.tensor_idx or ())}
                mutated = [pos[j] for j in fs.info.mutated if j in pos]
                rec = synth_def(fs.name, fs.info.mode, fs.params, fs.shapes, [], mutated)
                rec["static"] = sorted(pos[j] for j in fs.info.static if j in pos)
                self.trace.set_def(rec)
                fs.defined = True


# ---------------------------------------------------------------------------
# The torch side


_MODE_NAMES = {"FORWARD": "forward", "BACKWARD": "backward", "INFERENCE": "inference"}

# PyTorch's knobs that CUDAGraph Trees and Dynamo's recompilation read, as
# (which config module, dotted name). All of them are read at every call
# (tests patch them mid-program); the ones the format has a key for become
# settings (settings_from_knobs), the rest are kept in the header's meta and
# their changes noted.
KNOBS = (
    ("inductor", "triton.skip_cudagraph_warmup"),
    ("inductor", "triton.cudagraph_unexpected_rerecord_limit"),
    ("inductor", "triton.cudagraph_support_input_mutation"),
    ("dynamo", "inline_inbuilt_nn_modules"),
    ("dynamo", "recompile_limit"),
    ("dynamo", "cache_size_limit"),  # the name of recompile_limit before 2.7
    ("dynamo", "automatic_dynamic_shapes"),
    ("dynamo", "assume_static_by_default"),
    ("inductor", "triton.cudagraph_skip_dynamic_graphs"),
    ("inductor", "triton.cudagraph_dynamic_shape_warn_limit"),
    ("inductor", "triton.cudagraph_capture_sizes"),
    ("inductor", "triton.force_cudagraph_sync"),
    ("inductor", "triton.cudagraph_trees"),
    ("inductor", "graph_partition"),
    ("inductor", "triton.cudagraph_or_error"),
)
# What the format's rerecord_limit is when PyTorch bounds nothing: 2.11's
# exceed_rerecord_limit returns False while inline_inbuilt_nn_modules is on.
UNBOUNDED = 2 ** 31 - 1


def settings_from_knobs(raw):
    """The format's settings from PyTorch's knob values (a dict keyed like
    KNOBS' names, missing knobs absent): each key mirrors one knob.

      warmup_runs               0 with triton.skip_cudagraph_warmup, else 1
      rerecord_limit            triton.cudagraph_unexpected_rerecord_limit, or
                                UNBOUNDED while dynamo inline_inbuilt_nn_modules
                                is on (2.11 ignores the limit then)
      support_input_mutation    triton.cudagraph_support_input_mutation
      recompile_limit           dynamo recompile_limit (cache_size_limit)
      automatic_dynamic_shapes  dynamo automatic_dynamic_shapes
      assume_static_by_default  dynamo assume_static_by_default
      skip_dynamic_graphs       triton.cudagraph_skip_dynamic_graphs
      dynamic_shape_warn_limit  triton.cudagraph_dynamic_shape_warn_limit (None: 0, never warn)
      cudagraph_or_error        triton.cudagraph_or_error
    """
    out = {}
    skip = raw.get("triton.skip_cudagraph_warmup")
    if skip is not None:
        out["warmup_runs"] = 0 if skip else 1
    limit = raw.get("triton.cudagraph_unexpected_rerecord_limit")
    inline = raw.get("inline_inbuilt_nn_modules")
    if isinstance(inline, bool):
        # Also half of rerecord_if_static_inputs_change (with
        # support_input_mutation): whether a moved parameter re-records.
        out["inline_inbuilt_nn_modules"] = inline
    if inline is True:
        out["rerecord_limit"] = UNBOUNDED
    elif isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
        out["rerecord_limit"] = min(limit, UNBOUNDED)
    rl = raw.get("recompile_limit", raw.get("cache_size_limit"))
    if isinstance(rl, int) and not isinstance(rl, bool) and rl >= 0:
        out["recompile_limit"] = min(rl, UNBOUNDED)
    for key, knob in (("support_input_mutation", "triton.cudagraph_support_input_mutation"),
                      ("automatic_dynamic_shapes", "automatic_dynamic_shapes"),
                      ("assume_static_by_default", "assume_static_by_default"),
                      ("skip_dynamic_graphs", "triton.cudagraph_skip_dynamic_graphs"),
                      ("cudagraph_or_error", "triton.cudagraph_or_error")):
        v = raw.get(knob)
        if isinstance(v, bool):
            out[key] = v
    if "triton.cudagraph_dynamic_shape_warn_limit" in raw:
        w = raw["triton.cudagraph_dynamic_shape_warn_limit"]
        if w is None:
            out["dynamic_shape_warn_limit"] = 0
        elif isinstance(w, int) and not isinstance(w, bool) and w >= 0:
            out["dynamic_shape_warn_limit"] = min(w, UNBOUNDED)
    return out


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return repr(v)


_MISSING = object()
_MAPPED_KNOBS = frozenset(("triton.skip_cudagraph_warmup", "triton.cudagraph_unexpected_rerecord_limit",
                           "triton.cudagraph_support_input_mutation", "inline_inbuilt_nn_modules",
                           "recompile_limit", "cache_size_limit", "automatic_dynamic_shapes",
                           "assume_static_by_default", "triton.cudagraph_skip_dynamic_graphs",
                           "triton.cudagraph_dynamic_shape_warn_limit", "triton.cudagraph_or_error"))


class _Knobs:
    """Reads KNOBS from torch's config modules, cheaply: one bound getter per
    knob, found once (a ConfigModule answers the dotted name directly, which
    skips the sub-config proxy)."""

    def __init__(self, inductor_config, dynamo_config):
        mods = {"inductor": inductor_config, "dynamo": dynamo_config}
        self.getters = []
        for which, name in KNOBS:
            mod = mods.get(which)
            if mod is None:
                continue
            if name == "cache_size_limit" and any(n == "recompile_limit" for n, _ in self.getters):
                continue  # the old name: reading it would warn (deprecated) for nothing
            g = self._getter(mod, name)
            if g is not None:
                self.getters.append((name, g))
        self.mapped = [(n, g) for n, g in self.getters if n in _MAPPED_KNOBS]
        self.mapped_g = [g for _, g in self.mapped]
        self.mapped_vals = None  # the mapped knobs' values at the last reading, in order
        self.last = None
        owner = {name: mods[which] for which, name in KNOBS if mods.get(which) is not None}
        homes = {}  # knob -> the module whose entry its probe reads
        probe = {n: self._probe(owner[n], n, g, homes) for n, g in self.getters}
        self.probes = [probe[n] for n, _ in self.mapped]
        # Where the format's knobs live, when every one of their probes reads
        # an entry of a ConfigModule (else None): every way to set a knob
        # (setattr, config.patch, mock.patch's set and delattr) passes
        # through its module's __setattr__ or __delattr__, which the
        # recorder counts (Recorder._count_config_writes), so a steady
        # replay compares one count instead of reading every probe.
        self.homes = ({homes[n] for n, _ in self.mapped}
                      if all(n in homes for n, _ in self.mapped) else None)
        # The format's knobs whose probe is a read of the knob (an alias
        # without a loaded target, an implied knob, a config of another
        # shape): each costs a ConfigModule.__getattr__ at every call.
        # tools/gpu/recorder-overhead.py reports them.
        self.read_per_call = [n for n, g in self.mapped if probe[n] is g]
        self.all_probes = [probe[n] for n, _ in self.getters]
        # The probes' answers at the last changed(), for the mapped knobs and
        # for all of them.
        self.probe_vals = self.all_probe_vals = None

    @staticmethod
    def _probe(mod, name, getter, homes=None):
        """A callable whose answer changes whenever the knob's value can: on
        a ConfigModule the user_override of the knob's _ConfigEntry (an
        attribute in 2.11, a ContextVar later), which every way of setting
        a knob writes (setattr, config.patch, mock.patch's delattr); a read
        of it skips the module's failed lookup and __getattr__, which cost
        microseconds a knob. The value itself is read by getter, as before,
        only when a probe moved. An alias, a knob another one implies, or a
        module of another shape is probed by reading the knob."""
        try:
            cfg = vars(mod).get("_config")
            entry = cfg.get(name) if isinstance(cfg, dict) else None
            implied = vars(mod).get("_implications") or ()
            if entry is None and isinstance(cfg, dict):
                # A knob this torch lacks: it reads None until made (which
                # only a stand-in does, through __setattr__), and reading it
                # raises inside.
                if homes is not None:
                    homes[name] = mod
                return functools.partial(operator.contains, cfg, name)
            if entry is None or name in implied:
                return getter
            home = mod
            alias = getattr(entry, "alias", None)
            if alias is not None:
                # An alias keeps no value of its own: a set writes its
                # target (_set_alias_val), whose entry is probed instead.
                entry = _Knobs._alias_entry(alias)
                if entry is None:
                    return getter
                home = sys.modules.get(alias.rpartition(".")[0])
            # 2.11: a dataclass field whose default (_UNSET_SENTINEL) is the
            # class's attribute until the knob is first set, when the
            # instance gets its own; getattr sees both (and a slot).
            u = getattr(entry, "user_override")
        except Exception:  # not torch's ConfigModule as this recorder knows it
            return getter
        if isinstance(u, contextvars.ContextVar):
            return u.get
        if homes is not None and isinstance(home, types.ModuleType) and isinstance(vars(home).get("_config"), dict):
            homes[name] = home
        return functools.partial(getattr, entry, "user_override")

    @staticmethod
    def _alias_entry(alias):
        """The _ConfigEntry an alias ("torch._dynamo.config.x") names, if
        its module is a loaded ConfigModule holding a plain entry for it;
        else None (the alias is then probed by reading it)."""
        mod_name, _, key = alias.rpartition(".")
        mod = sys.modules.get(mod_name)
        cfg = vars(mod).get("_config") if mod is not None else None
        entry = cfg.get(key) if isinstance(cfg, dict) else None
        if entry is None or getattr(entry, "alias", None) is not None:
            return None
        if key in (vars(mod).get("_implications") or ()):
            return None
        return entry

    def changed(self, all_knobs=False):
        """Whether one of the format's knobs (all_knobs: any knob) may have
        changed since the last changed() asked the same (always True the
        first time). The probes are read, never the knobs: the cost of an
        unchanged config at every call."""
        vals = self._probe_vals(all_knobs)
        if vals is None:  # a probe that cannot be read: the knobs say
            return True
        if all_knobs:
            if vals == self.all_probe_vals:
                return False
            self.all_probe_vals = vals
            return True
        if vals == self.probe_vals:
            return False
        self.probe_vals = vals
        return True

    def moved(self, all_knobs=False):
        """What changed() would answer, without changing what the next
        changed() answers: the recorder's deferred replay asks it, and a
        call it leaves to the general path asks changed() again."""
        vals = self._probe_vals(all_knobs)
        return vals is None or vals != (self.all_probe_vals if all_knobs else self.probe_vals)

    def _probe_vals(self, all_knobs):
        """The probes' answers now (None when one cannot be read); map
        runs them without a Python frame of its own."""
        try:
            return list(map(operator.call, self.all_probes if all_knobs else self.probes))
        except Exception:
            return None

    @staticmethod
    def _getter(mod, name):
        try:
            if getattr(mod, name, _MISSING) is not _MISSING:
                return functools.partial(getattr, mod, name, None)  # no Python frame per read
        except Exception:
            pass
        parts = name.split(".")

        def walk(m=mod, parts=parts):
            for p in parts:
                m = getattr(m, p, None)
                if m is None:
                    return None
            return m
        try:
            if walk() is None and len(parts) > 1:
                # Absent from this torch: skip it rather than read None forever.
                return None
        except Exception:
            return None
        return walk

    def read(self, all_knobs=True):
        """The knobs' values. Without all_knobs only those the format has a
        key for are read, the others are taken from the last reading; when
        none changed, the last reading itself is returned (the same object:
        the caller's `is` test is the whole cost of an unchanged config)."""
        if not all_knobs and self.last is not None:
            try:
                vals = [g() for g in self.mapped_g]
            except Exception:
                vals = None
            if vals is not None and vals == self.mapped_vals:
                return self.last
        out = {}
        for name, g in self.getters if all_knobs else self.mapped:
            try:
                out[name] = g()
            except Exception:  # a knob that cannot be read is treated as absent
                pass
        if not all_knobs and self.last is not None:
            for name, _ in self.getters:
                if name not in _MAPPED_KNOBS and name in self.last:
                    out[name] = self.last[name]
        self.last = out
        self.mapped_vals = [out.get(n, _MISSING) for n, _ in self.mapped]
        return out
# tls.actions of a call that replayed one node and did nothing else.
_REPLAYED = ["replay"]
_NO_NAMES = {}  # (never written: what by_storage.get gives for a storage it lacks)
_ACTIVE = {"recorder": None}
_ABSENT = object()  # a patched attribute the class did not define itself
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


class _Hot:
    """The recorder's state that the _run wrapper's steady path reads at
    every call, in one small object of slots (the Recorder's attributes of
    the same names read and write it): in the middle of torch's call each
    object the path touches is a cache miss, and an instance dict's lookup
    is several. `node` and `other` are what the tree did in a call the
    steady path let run (execute_node's node; anything else), and `steady`
    says one is running (in the thread holding the recorder's lock)."""
    __slots__ = ("off", "serial", "mark_counter", "node", "other", "steady", "cfg", "left", "fid", "got",
                 "armed", "lfid", "lean", "rec")

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
        self.steady = False
        self.cfg = 0  # writes to the format's knobs' config modules (Recorder._count_config_writes)
        self.left = 0  # steady calls left before the knobs' probes are read (_steady)
        self.off = False
        self.serial = 0
        self.mark_counter = 0
        self.node = None
        self.other = False

    def disarm(self):
        """Every function's lean path off until _steady arms it again."""
        self.armed.clear()
        self.lfid = self.lean = None


def _hot_attr(name):
    return property(lambda self: getattr(self._hot, name),
                    lambda self, v: setattr(self._hot, name, v))


class Recorder:
    """Records the CUDAGraph Trees activity of the code run while it is
    active. Use `with record(path):`; it patches the tree manager's entry
    points (the class's `_run`, `run_eager`, `record_function`,
    `execute_node`) and restores them on exit, then writes the trace.

    Steps (`cudagraph_mark_step_begin`) are not wrapped: each one moves
    `MarkStepBox.mark_step_counter` down by one, and the next event writes
    the steps since the last (`_catch_up_steps`). Nothing can see a step
    before the next call or host read does, and a call costs less without
    a wrapper around every step."""

    # A steady replay (the same node as the function's last call, on the
    # same inputs, handing out the same cached outputs) is deferred: the
    # _run wrapper checks it and queues it, and its records are written
    # when anything else happens (_settle). Tests turn it off to compare.
    _defer = True
    # The general path names a call's inputs by the entries that named the
    # last call's first (_before_call): tests turn it off to compare.
    _by_last_entries = True

    # (In _Hot: see there.)
    _off = _hot_attr("off")
    _serial = _hot_attr("serial")
    _mark_counter = _hot_attr("mark_counter")

    def __init__(self, path, name=None, meta=None, follow=None):
        self.path = path
        # Streamed as it is made (Trace.stream) for a follower: asked for,
        # or CGTRACE_FOLLOW=1, or the path is a named pipe.
        if follow is None:
            follow = os.environ.get("CGTRACE_FOLLOW") == "1" or _is_fifo(path)
        self.follow = bool(follow)
        self.trace = Trace(name or os.path.basename(path), meta=meta, strict=False)
        self.session = Session(self.trace)
        self.lock = threading.RLock()
        # CGTRACE_DEFER=0: every call through the general path, to hold the
        # deferred path's traces against (tools/gpu/deferred-same.py).
        if os.environ.get("CGTRACE_DEFER") == "0":
            self._defer = False
        self._hot = _Hot()
        self._hot.rec = self
        self.tls = _CallState()
        self._saved = {}
        self._mgr_serial = {}
        self._param_names = {}  # id(param) -> module path, filled lazily
        self._gen = None  # torch._dynamo.mutation_guard.GenerationTracker, at start
        self._off = False  # set by the recorder's own failure: calls pass through
        self.error = None  # that failure, as text
        self._skipped = set()  # kinds of tensors left out (noted once each)
        self._trees = {}  # device -> {nodes, roots, checkpoints} after the last call
        self._fid_cache = {}  # id(FunctionID) -> (it, the manager's weakref, FnInfo, _FnState)
        self._node_key_cache = {}  # id(node) -> (weakrefs to node and its manager, _node_keys)
        self._known_mgr = {}  # device -> weakref to the tree manager its last call ran in
        # Calls that took the short path (_fast_after, or deferred): what
        # tools/gpu/recorder-overhead.py reports, to show the path is taken.
        self.short_calls = 0
        self.armings = 0  # times _steady armed the _run wrapper's lean path
        # Deferred replays (the _run wrapper's steady path): one
        # (plan, the steps before it, its invocation) per call, written
        # (and numbered, and counted) by _write_pending before anything
        # else is.
        self._pending = []
        # Moves at every event but a deferred replay (_settle): a plan
        # checked at this serial still holds as far as the session goes.
        self._serial = 0
        # Every knob is to be looked at (due) or read (read) at the next call
        # (_catch_up_steps, _knob_check).
        self._all_knobs_due = self._all_knobs_read = False

    # -- install / remove

    def start(self):
        if _ACTIVE["recorder"] is not None:
            raise RuntimeError("cgtrace: a recording is already active (%s)" % _ACTIVE["recorder"].path)
        import torch
        from torch._inductor import cudagraph_trees as cgt
        from torch._inductor import config as inductor_config

        from torch._dynamo.mutation_guard import GenerationTracker

        self.torch, self.cgt = torch, cgt
        self._gen = GenerationTracker
        self._strided = torch.strided
        self._dtypes = {}  # torch dtype -> the format's name
        # The settings first: nothing is patched yet if reading them fails.
        try:
            from torch._dynamo import config as dynamo_config
        except ImportError:
            dynamo_config = None
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
        M = cgt.CUDAGraphTreeManager
        for attr in ("_run", "run_eager", "record_function", "execute_node"):
            if attr not in M.__dict__:
                raise RuntimeError("cgtrace: this torch (%s) has no CUDAGraphTreeManager.%s; "
                                   "cgtrace follows torch 2.11" % (torch.__version__, attr))
            self._saved[(M, attr)] = M.__dict__[attr]
        if "set_to_running_backward" in M.__dict__:
            self._saved[(M, "set_to_running_backward")] = M.__dict__["set_to_running_backward"]
        if "reset_cudagraph_trees" in cgt.__dict__:
            self._saved[(cgt, "reset_cudagraph_trees")] = cgt.reset_cudagraph_trees
        rec = self

        orig_run = self._saved[(M, "_run")]
        knobs = self._knobs
        is_, call = operator.is_, operator.call

        # What the steady path reads at every call is bound as defaults:
        # locals of its frame, where closure cells would be objects of
        # their own to reach (the tree calls _run(new_inputs, function_id)).
        # Only what a steady replay reads: each default is touched at every
        # call (the frame holds it), read or not.
        # Two parts: _run, the lean path every steady replay takes, and
        # _steady, which finds and checks the function's plan (once a
        # serial, and every 64th call or step) and arms _run for it.
        def _run(mgr, new_inputs, function_id, probed=False, hot=self._hot, armed=self._hot.armed.get,
                 acquire=self.lock.acquire, owned=self.lock._is_owned,
                 release=self.lock.release, orig_run=orig_run, box=cgt.MarkStepBox, gen=self._gen,
                 dead_objs=self.session._dead_objs, pend=self._pending.append,
                 ptrs_equal=getattr(getattr(torch, "_C", None), "_tensors_data_ptrs_at_indices_equal", None),
                 map=map, id=id, all=all, is_=is_, call=call, refcount=sys.getrefcount):
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
                    return _steady(mgr, new_inputs, function_id)
                fid, plan, mref, low, nin, in_refs, in_ptrs, in_idx, polled, uses, node_ref, nout, ckpt, out_refs, \
                    wrappers = lean
                c = box.mark_step_counter
                mc = hot.mark_counter
                left = hot.left
                try:
                    # Armed for this function, no 64th step since the
                    # arming (c: one down a step, below low past a 64th)
                    # and the knobs' probes read within 64 calls (left; or
                    # at this call, probed, when their writes are not
                    # counted): _steady looks at the knobs then; the same
                    # manager; the memo's objects (by their weak
                    # references: a tuple of their ids costs three times
                    # as much in place) at the same data pointers; nothing
                    # died.
                    ok = (function_id is fid and low <= c <= mc
                          and (left > 0 or probed) and mref() is mgr
                          and len(new_inputs) == nin and all(map(is_, map(call, in_refs), new_inputs))
                          and (ptrs_equal(new_inputs, in_ptrs, in_idx) if ptrs_equal is not None
                               else list(map(hot.rec.torch.Tensor.data_ptr, new_inputs)) == in_ptrs)
                          and not dead_objs)
                    if ok:
                        # What flush_deaths would find: no polled name died.
                        # When the plan's outputs are polled with names their
                        # storages keep alive (_steady_holds), each output is
                        # alive while something besides the tree's cache
                        # holds it (the tree's own test, _refcount_rule: the
                        # count is one more here, for o; with uses, one more
                        # again while c10 holds it too): one held only there
                        # goes to the general path, which asks the tree.
                        # Otherwise every polled name is asked. (The polled
                        # names are the ones _steady_holds saw: only another
                        # event changes them.)
                        if polled is not None:
                            for r in polled:
                                o = r()
                                n = 0 if o is None else refcount(o)
                                if n <= 3 or (n == 4 and uses and o._use_count() > 1):
                                    ok = False
                                    break
                            o = r = None
                        else:
                            for e in hot.rec.session._watch.values():
                                if not e.fact.alive():
                                    ok = False
                                    break
                            e = None
                except Exception as e:
                    hot.rec._fail("before a call", e)
                    ok = False
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
                    hot.rec._steady_raised(plan, mc - c, inv, mgr, err)
                    raise
                hot.steady = False
                node = hot.node
                hot.node = None
                try:
                    # What _fast_after asks of the tree: the plan's node
                    # replayed, and nothing else done, handing out the plan's
                    # objects through the plan's wrappers, no checkpoint
                    # taken, nothing died.
                    if (not hot.other and node is node_ref() and type(out) is list and len(out) == nout
                            and mgr.debug_checkpointing_counter == ckpt and not dead_objs
                            and all(map(is_, map(call, out_refs), out)) and node.outputs_weakrefs == wrappers):
                        pend((plan, mc - c, inv))
                    else:
                        hot.rec._steady_other(plan, mc - c, inv, mgr, out, node)
                except Exception as e:
                    hot.rec._fail("after a call", e)
                return out
            finally:
                release()

        def _steady(mgr, new_inputs, function_id, orig_run=orig_run, fid_get=self._fid_cache.get,
                    box=cgt.MarkStepBox, lock=self.lock, owned=self.lock._is_owned, tls=self.tls,
                    hot=self._hot, defer=self._defer, knobs=knobs, probes=knobs.probes,
                    versioned=knobs.homes is not None, call=call, rec=rec):
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
                got = hot.got if function_id is hot.fid else fid_get(id(function_id))
                plan = got[3].plan if got is not None else None
                if plan is None or not defer:
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
                                                         plan.in_refs, plan.in_ptrs, plan.in_idx, plan.polled,
                                                         plan.uses, plan.node_ref, plan.nout, plan.ckpt,
                                                         plan.out_refs, plan.wrappers)
                hot.lfid = function_id
                return _run(mgr, new_inputs, function_id, True)

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
        reads = self._install_reads(torch.Tensor) if os.environ.get("CGTRACE_READS", "1") != "0" else None
        self._skip_frames(reads)
        M._run = _run
        M.run_eager = run_eager
        M.record_function = record_function
        M.execute_node = execute_node
        _ACTIVE["recorder"] = self
        self._box = cgt.MarkStepBox
        self._mark_counter = cgt.MarkStepBox.mark_step_counter
        self.session.clock = functools.partial(getattr, cgt.MarkStepBox, "mark_step_counter")

        meta = self.trace.meta
        meta.setdefault("source", "cgtrace")
        meta["torch"] = torch.__version__
        if torch.cuda.is_available():
            meta["gpu"] = torch.cuda.get_device_name(0)
        existing = [d for d, c in getattr(cgt.local, "tree_manager_containers", {}).items()
                    if getattr(c, "tree_manager", None) is not None
                    and getattr(c.tree_manager, "ids_to_funcs", None)]
        if existing:
            self.session.note("recording started after the tree on device(s) %s already held "
                              "functions: their warmups are not in this trace" % existing)
        if self.follow:
            self._open_stream(torch)
        return self

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

    def _flush(self):
        """Writes what the last event recorded to a streamed trace (once per
        call or host read, not per record: a follower sees whole events)."""
        if self.trace.out is not None:
            self._settle()
            try:
                self.trace.flush()
            except Exception as e:
                self._stream_failed(e)

    def _stream_failed(self, e):
        fh, self.trace.out = self.trace.out, None
        try:
            if fh is not None:
                fh.close()
        except Exception:
            pass
        self._fail("writing the trace to %s" % self.path, e)

    def stop(self):
        """Puts PyTorch's functions back and writes the trace. A failure to
        finish or write is the recorder's: warned about and kept in
        self.error, never raised into the program."""
        for (owner, attr), val in self._saved.items():
            if val is _ABSENT:
                try:
                    delattr(owner, attr)
                except AttributeError:
                    pass
            else:
                setattr(owner, attr, val)
        self._saved.clear()
        _ACTIVE["recorder"] = None
        with self.lock:
            self._settle()
            try:
                if not self._off:
                    self._catch_up_steps()
                    if self._all_knobs_due:
                        self._knob_check(None)
                self.session.finish()
                self._summarise(self.torch, self.cgt)
            except Exception as e:
                self._fail("finishing the trace", e)
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
        self.stop()
        return False

    # -- hooks

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

    def _on_reset(self):
        """reset_cudagraph_trees() ran (torch._dynamo.reset() calls it): every
        tree is gone and the mark-step counter is back to 0."""
        if self._off:
            return
        with self.lock:
            self._settle()
            try:
                self._trees_reset()
            except Exception as e:
                self._fail("at a reset", e)

    def _trees_reset(self):
        """Every tree is gone (reset_cudagraph_trees): a reset record, no
        manager known, the mark-step counter as the reset left it (0)."""
        self.session.reset()
        self._known_mgr.clear()
        self._mark_counter = self._box.mark_step_counter

    def _on_skipped_backward(self, mgr):
        if self._off or self._in_call():
            return
        with self.lock:
            self._settle()
            try:
                self._check_manager(mgr)
                self.session.skipped_backward(mgr.device_index)
            except Exception as e:
                self._fail("at a backward without cudagraphs", e)

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

    def _install_reads(self, T):
        """Wraps the Tensor methods through which the host reads values, so a
        read of a tree output becomes a `read` record (and its error, if
        PyTorch raised one, an expect). A read made by PyTorch inside a tree
        call, or by the recorder itself, or nested in another read (print
        calls item()), is not one. Returns the wrappers' code (one for all of
        them), or None when no method was wrapped."""
        rec = self
        # Dynamo traces Python methods of Tensor: inside a compiled function
        # the wrapper must read as the original method and nothing else
        # (tracing the recorder's state would add guards and graph breaks,
        # and so change the program's graphs). is_compiling() is True while
        # Dynamo traces and constant-folds the branch away.
        compiler = getattr(self.torch, "compiler", None)
        is_compiling = getattr(compiler, "is_compiling", None) or (lambda: False)
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
                if rec._off or getattr(rec.tls, "busy", False) or rec._in_call():
                    return _orig(t, *args, **kwargs)
                # Under the lock from the name to the record: a compiled
                # call in another thread, deferred or not, renames the
                # tree's outputs it hands out again, and would otherwise
                # land between the read's name and its record.
                with rec.lock:
                    try:
                        target = rec.session.read_target(t, lambda: t.untyped_storage()._cdata)
                        if target is not None and rec._pending:
                            # The deferred replays renamed the tree's outputs:
                            # named as they stand once written.
                            rec._settle()
                            target = rec.session.read_target(t, lambda: t.untyped_storage()._cdata)
                    except Exception:
                        target = None
                    if target is not None:
                        rec.tls.busy = True
                        try:
                            out = _orig(t, *args, **kwargs)
                        except BaseException as e:
                            rec._on_read(target, _error_text(e))
                            raise
                        finally:
                            rec.tls.busy = False
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
        this module, and all it calls, is never handed to it: the recorder's
        own work. Dynamo still inlines the wrappers when it traces user code
        (where the read wrapper's guard folds it away): the strategies are
        the frame hook's, not the tracer's. tools/gpu/graphs-unchanged.py
        checks on the GPU that each program's graphs, graph breaks and
        converted frames are the ones it has unrecorded."""
        try:
            from torch._C._dynamo.eval_frame import set_code_exec_strategy
            from torch._dynamo.types import FrameAction, FrameExecStrategy
        except ImportError:
            self.session.note("this torch cannot keep Dynamo's frame hook off the recorder's wrappers: "
                              "host reads run from compiled code (after a graph break) may be missing")
            return
        entry = FrameExecStrategy(FrameAction.SKIP, FrameAction.DEFAULT)
        skip = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
        for code in _module_codes():
            set_code_exec_strategy(code, entry if code is wrapper else skip)

    def _on_read(self, name, error):
        if self._off:
            return
        try:
            with self.lock:
                self._settle()
                self._catch_up_steps()
                self.session.read(name, error)
                if self.follow:
                    self._flush()
        except Exception as e:
            self._fail("recording a read", e)

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

    def _settle(self):
        """Before every event but a deferred replay: the deferred replays'
        records are written, and each plan is checked again before its
        next deferral (this event may change what it holds)."""
        self._serial += 1
        hot = self._hot
        hot.fid = hot.got = None
        hot.disarm()
        if self._pending:
            try:
                self._write_pending()
            except Exception as e:
                self._fail("writing the deferred replays", e)

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
        session = self.session
        renamed = {}  # id(entry) -> (entry, its last name, its order then)
        for plan, run in itertools.groupby(pend, key=operator.itemgetter(0)):
            run = list(run)
            if len(plan.entries) != 1 or not self._write_run(plan, run, renamed):
                for tok in run:
                    self._write_one(plan, tok, renamed)
        # Renamed in the order of their last renames, which is where each
        # lands in the session's ordered maps when renamed one by one.
        for e, n, order in sorted(renamed.values(), key=operator.itemgetter(2)):
            session._rename_replayed(e, n, order)

    def _write_run(self, plan, run, renamed):
        """_write_one for a run of replays of one plan of one output, whose
        names no tensor took: the names, then the records, by
        comprehension. Returns False, having written nothing, otherwise."""
        session = self.session
        used = session.names_used
        fs = plan.fs
        pre, sfx = plan.prefix, plan.suffixes[0]
        names = [pre + str(k) + sfx for k in range(fs.calls + 1, fs.calls + 1 + len(run))]
        if not used.isdisjoint(names):
            return False
        used.update(names)
        fs.calls += len(run)
        recs = self.trace.records
        head, exp = plan.head, plan.exp_line()
        prev = plan.names[0]
        for (_, steps, inv), n in zip(run, names):
            if steps:
                recs.extend([_STEP] * steps)
            recs.append(head + n + ('"]}' if inv is None else '"], "invocation": %d}' % inv))
            recs.append(exp)
            recs.append('{"op": "del", "names": ["' + prev + '"]}')
            prev = n
        counts = session.counts
        counts["steps"] += sum(map(operator.itemgetter(1), run))
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
        _, steps, inv = tok
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
        recs.append(plan.head + '", "'.join(outs) + ('"]}' if inv is None else '"], "invocation": %d}' % inv))
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
        if (self.follow or plan.head is None or memo is None or memo[2] != session.epoch
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
        if not plan.argset.isdisjoint(watch):
            return False
        for e, name in zip(plan.entries, plan.names):
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
        storage."""
        if not all(map(_refcount_rule, plan.wrappers)):  # (NO_RULE is 0)
            return False
        mine = {id(e) for e in plan.entries}
        kept = {e.fact.storage for e in plan.entries}
        for e in watch.values():
            if id(e) in mine:
                continue
            p = e.fact.probe
            if (p is None or e.fact.storage not in kept or e.fact.alive != p.alive
                    or (p.tree_ref is not None and p.tree_ref.extra_ref_check is not None)):
                return False
        return True

    def _steady_ctx(self, plan, inv):
        """What Session.begin_known_call gives a call of plan's function on
        its args (no name died before it: the _run wrapper checked), for a
        call the _run wrapper let run that is not to be deferred."""
        fs = plan.fs
        fs.calls += 1
        self.session.counts["calls"] += 1
        return {"fn": fs, "args": plan.args, "invocation": inv}

    def _steady_raised(self, plan, steps, inv, mgr, err):
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
            ctx = self._steady_ctx(plan, inv)
            self.session.end_call(ctx, list(tls.actions), self._node_keys(mgr),
                                  mgr.debug_checkpointing_counter, None, _error_text(err),
                                  mgr.device_index)
        except Exception as e:
            self._fail("after a call that raised", e)
        finally:
            hot.steady = hot.other = False
            hot.node = tls.node = None
            tls.depth = 0

    def _steady_other(self, plan, steps, inv, mgr, out, node):
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
            self._steady_fallback(plan, steps, inv, mgr, out)
        finally:
            tls.node = None

    def _steady_fallback(self, plan, steps, inv, mgr, out):
        """A deferred call that was not its plan's replay (the tree recorded
        again, or handed out other objects, or an input died in it): the
        queue, its steps, then the call as the general path writes it."""
        self._settle()
        self._write_steps(steps)
        ctx = self._steady_ctx(plan, inv)
        fs = plan.fs
        fs.plan = None
        self._general_after(ctx, mgr, out)
        self._make_plan(ctx, fs, mgr, out)

    def _fn_key(self, mgr, function_id):
        serial = self._mgr_serial.get(id(mgr))
        if serial is None or serial[1]() is not mgr:
            serial = (len(self._mgr_serial), weakref.ref(mgr))
            self._mgr_serial[id(mgr)] = serial
        return (serial[0], mgr.device_index, function_id.id)

    def _on_run(self, orig, mgr, new_inputs, function_id):
        tls = self.tls
        if self._off or getattr(tls, "depth", 0) > 0:
            # _run re-entering itself (the roots restart) is one call; a
            # recording stopped by its own error only passes calls through.
            return orig(mgr, new_inputs, function_id)
        with self.lock:
            self._settle()
            tls.depth = 1
            tls.actions = []
            tls.node = None
            try:
                return self._record_call(orig, mgr, new_inputs, function_id)
            finally:
                tls.depth = 0
                tls.node = None
                if self.follow:
                    self._flush()

    def _record_call(self, orig, mgr, new_inputs, function_id):
        """Runs the tree's call between the recorder's before and after
        parts. Whatever the recorder raises is its own failure (_fail): the
        program's call runs exactly once and its result or exception is
        the program's, untouched. (tls.actions, a new list per call, is
        left as the call made it: only a call reads it, after its own.)"""
        try:
            ctx = self._before_call(mgr, new_inputs, function_id)
        except Exception as e:
            self._fail("before a call", e)
            ctx = None
        try:
            out = orig(mgr, new_inputs, function_id)
        except BaseException as e:
            if ctx is not None and not self._off:
                try:
                    self.session.end_call(ctx, list(self.tls.actions), self._node_keys(mgr),
                                          mgr.debug_checkpointing_counter, None,
                                          _error_text(e), mgr.device_index)
                except Exception as e2:
                    self._fail("after a call that raised", e2)
            raise
        if ctx is not None and not self._off:
            try:
                fs = ctx["fn"]
                plan = fs.plan
                if plan is None or not self._fast_after(ctx, fs, plan, mgr, out):
                    fs.plan = None
                    self._general_after(ctx, mgr, out)
                    self._make_plan(ctx, fs, mgr, out)
            except Exception as e:
                self._fail("after a call", e)
        return out

    def _before_call(self, mgr, new_inputs, function_id):
        # The steady call first: a defined function called through the same
        # manager, no step missed (then _check_manager and the catch-up
        # have nothing to do), its last call's inputs (the memo, below).
        # What is left of the general path is the knobs, the deaths and the
        # counts; anything else falls through to it, which then finds
        # nothing more to do for what was done here.
        got = self._fid_cache.get(id(function_id))
        caught = False  # the manager checked, the steps and knobs caught up, the memo not the inputs
        if got is not None and got[0] is function_id and got[1]() is mgr:
            fs = got[3]
            memo = fs.memo
            known = self._known_mgr.get(mgr.device_index)
            c = self._box.mark_step_counter
            # (What _check_manager would find nothing to do for: the
            # device's manager, no reset to 0.)
            if (memo is not None and known is not None and known() is mgr
                    and (c != 0 or self._mark_counter == 0)):
                if c != self._mark_counter:
                    self._catch_up_steps()
                self._knob_check(fs)
                session = self.session
                if (memo[2] == session.epoch and len(new_inputs) == len(memo[0])
                        and all(map(operator.is_, map(operator.call, memo[0]), new_inputs))
                        and tuple(map(self.torch.Tensor.data_ptr, new_inputs)) == memo[4]):
                    # Session.begin_known_call, inline, for the memo's args
                    # (the list the memo's call shared, or equal to it).
                    session.flush_deaths()
                    fs.calls += 1
                    session.counts["calls"] += 1
                    args = memo[3]
                    last = fs.last_args
                    if last is not args:
                        if last is not None and last == args:
                            args = last
                        else:
                            fs.last_args = args
                    return {"fn": fs, "args": args, "invocation": self._gen.generation}
                # A loop's new input, say: what follows would check the
                # manager, catch up, find the function and look at the
                # knobs again, with nothing run since to change them, and
                # compare the memo again.
                caught = True
        Tensor = self.torch.Tensor
        if caught:
            info, fs = got[2], got[3]
        else:
            self._check_manager(mgr)
            if self._box.mark_step_counter != self._mark_counter:
                self._catch_up_steps()
            # The function's state by the FunctionID object's identity (the
            # tree passes the same one at every call), weakly held, so no
            # key is built and hashed per call.
            got = self._fid_cache.get(id(function_id))
            if got is not None and got[0] is function_id and got[1]() is mgr:
                info, fs = got[2], got[3]
            else:
                info, fs = self._fn_info(mgr, function_id)
                if fs is not None:
                    # The FunctionID itself, held: torch 2.11's is a frozen
                    # dataclass with slots, which no weak reference can
                    # point at, and it holds an int, so holding it keeps
                    # nothing else alive (and its id() is not given to
                    # another meanwhile). The manager weakly: a strong
                    # reference would keep its graphs and pool alive.
                    self._fid_cache[id(function_id)] = (function_id, weakref.ref(mgr), info, fs)
            self._knob_check(fs)
        # A comprehension leaves no loop variable holding the last input
        # alive through the call (that would change what dies in it). Once
        # the function is defined, an input the trace names by its object (a
        # parameter, a tensor passed again) needs no Fact: its name is enough.
        fresh = True  # some input is new to the trace (a Fact, not a name)
        if fs is not None and fs.defined:
            known = self.session.by_obj_entry.get
            # The steadiest case: the inputs are the last call's tensors, in
            # order (fs.memo: their weak references, the entries that named
            # them, the session's epoch then, their names), and no name was
            # bound, unbound or (one of these) renamed since (the epoch is
            # the same): then they have the same names. Checked by map,
            # without a Python step per input (a model's parameters are
            # hundreds of inputs): each reference still gives its input.
            memo = fs.memo
            # The data pointers too (one C-level pass): `param.data = new`
            # keeps the object and moves its data, which is a new tensor.
            if (not caught and memo is not None and memo[2] == self.session.epoch
                    and len(new_inputs) == len(memo[0])
                    and all(map(operator.is_, map(operator.call, memo[0]), new_inputs))
                    and tuple(map(Tensor.data_ptr, new_inputs)) == memo[4]):
                return self.session.begin_known_call(fs, memo[3], self._gen.generation)
            # Each input the trace names by its object keeps that name; the
            # others get a Fact. By position, first against the entries that
            # named the last call's inputs (fs.last_entries), in C-level
            # passes: a loop over a data loader's batches calls with the
            # same parameters (hundreds, in a real model) and one new input.
            # Then one by one, for every position those did not name.
            n = len(new_inputs)
            facts = ptrs = None
            cand = fs.last_entries if self._by_last_entries else None
            if cand is not None and len(cand) == n:
                try:
                    ptrs = list(map(Tensor.data_ptr, new_inputs))
                    cf = list(map(_FACT_OF, cand))
                    hits = list(map(operator.and_, map(operator.and_,
                                                       map(operator.is_, map(known, map(id, new_inputs)), cand),
                                                       map(operator.is_, map(operator.call, map(_OBJ_REF_OF, cf)),
                                                           new_inputs)),
                                    map(operator.eq, ptrs, map(_PTR_OF, cf))))
                except Exception:  # (an input that is no tensor, or has no storage: one by one)
                    hits = ptrs = None
                cf = None
                if hits is not None:
                    todo = list(itertools.compress(range(n), map(operator.not_, hits)))
                    facts = list(map(_ENTRY_NAME, cand))
                    for i in todo:
                        facts[i] = None
            if facts is None:
                facts = [None] * n
                todo = range(n)
                cand = None
            last = list(cand) if cand is not None else [_NO_ENTRY] * n
            fresh = False
            tensors = True  # every input is a tensor
            left_out = False  # a tensor the format cannot hold
            for i in todo:
                v = new_inputs[i]
                if isinstance(v, Tensor):
                    e = known(id(v))
                    ref = e.fact.obj_ref if e is not None else None
                    if ref is not None and ref() is v and (e.fact.ptr is None or v.data_ptr() == e.fact.ptr):
                        facts[i] = e.name
                        last[i] = e
                    else:
                        facts[i] = self._fact_or_none(v)
                        fresh = fresh or facts[i] is not None
                        left_out = left_out or facts[i] is None
                        last[i] = _NO_ENTRY
                else:
                    tensors = False
            fs.last_entries = last
            # No loop variable keeps the last input alive through the call
            # (that would change what dies in it).
            v = e = ref = None
            if not fresh and not left_out:
                # The steady case: every tensor input is one the trace names
                # by its object (a parameter, a tensor passed again). When
                # all of them are tensors, they are the memo the next call
                # compares first.
                ctx = self.session.begin_known_call(fs, [f for f in facts if f is not None],
                                                    self._gen.generation)
                fs.memo = None
                if tensors and n:
                    for e in last:
                        e.in_memo = True
                    fs.memo = (tuple(e.fact.obj_ref for e in last), tuple(last), self.session.epoch, ctx["args"],
                               tuple(ptrs) if ptrs is not None else tuple(map(Tensor.data_ptr, new_inputs)))
                    e = None
                return ctx
            if not fresh:
                # Every tensor input has its name (one the format cannot hold
                # was left out): nothing to name, no hints.
                return self.session.begin_known_call(fs, [f for f in facts if f is not None],
                                                     self._gen.generation)
        else:
            facts = [self._fact_or_none(v) if isinstance(v, Tensor) else None for v in new_inputs]
        # Dynamo bumps GenerationTracker.generation once per top-level
        # torch.compile'd frame invocation (OptimizeContext's on_enter ->
        # install_generation_tagging_init); resume functions after a graph
        # break run inside that invocation and see the same value, which is
        # what CUDAGraph Trees' get_curr_generation() falls back to.
        hints = None
        if fresh and not all(map(isinstance, facts, itertools.repeat(_NAME_OR_NONE))):
            hints = self._param_hints(new_inputs, info, facts)  # only tensors new to the trace need one
        ctx = self.session.begin_call(info, facts, hints,
                                      invocation=self._gen.generation)
        del facts
        return ctx

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

    def _fast_after(self, ctx, fs, plan, mgr, out):
        """_general_after for a call that replayed the node of the plan, as
        the last call of its function did, handing out the same cached
        output objects, which the trace names as the plan says: it writes
        the same records in the same order (the call, its expect, the dels
        of dead inputs, the del of the outputs' last names) and leaves the
        same state, without building Facts, dicts or lists it does not
        keep. Returns False, having changed nothing, when any of that does
        not hold.

        What it need not check: the manager and so the device (the caller
        found fs through the FunctionID's cache entry for this manager);
        that the node is not None (a replay noted one); plan.expect (the
        session's _expects never drops or replaces one)."""
        tls = self.tls
        node = tls.node
        entries = plan.entries
        if (tls.actions != _REPLAYED or node is not plan.node_ref() or type(out) is not list
                or len(out) != len(entries) or mgr.debug_checkpointing_counter != plan.ckpt):
            return False
        wrappers = node.outputs_weakrefs  # (the node the plan was made from has them)
        if len(wrappers) != len(out):
            return False
        session = self.session
        by_obj_entry = session.by_obj_entry
        by_storage = session.by_storage
        # What _general_after asks of each output before it keeps the
        # output's Fact, and _bind_outputs before it renames its entry.
        for o, e, name, w in zip(out, entries, plan.names, wrappers):
            f = e.fact
            oid = id(o)
            if (by_obj_entry.get(oid) is not e or e.name is not name or f.obj_ref() is not o
                    or f.probe.tree_ref is not w or f.held or e.obj_id != oid or e.wr is not None
                    or by_storage.get(f.storage, _NO_NAMES).get(name) is not e):
                return False
        o = e = f = w = None  # no loop variable keeps an output alive past the call
        # end_call, from here on, for these outputs.
        outs = session._replay_names(plan, fs.calls)
        inv = ctx["invocation"]
        recs = self.trace.records
        args = ctx["args"]
        if args is not plan.args:
            plan.set_args(args)
        head = plan.head
        if head is not None:
            recs.append(head + '", "'.join(outs) + ('"]}' if inv is None else '"], "invocation": %d}' % inv))
        else:
            call = {"op": "call", "fn": fs.name, "args": args, "out": outs}
            if inv is not None:
                call["invocation"] = int(inv)
            recs.append(call)
        counts = session.counts
        counts["replay"] += 1
        recs.append(plan.expect)
        if session._dead_objs or not plan.argset.isdisjoint(session._watch):
            # (Otherwise _flush_dead has nothing to poll: no argument is.)
            epoch = session.epoch
            session._flush_dead(args)
            if session.epoch != epoch:
                # An input died in the call and was forgotten: the general
                # binding decides (the plan's entries may be among them).
                session._bind_outputs(outs, [e.fact for e in entries])
                self._tree_after(mgr, _REPLAYED, plan.ckpt)
                fs.plan = None
                return True
        gone = plan.names
        if len(entries) == 1:
            session._rename_replayed(entries[0], outs[0])
        else:
            gone = [n for _, n in sorted((e.order, e.name) for e in entries)]
            for e, n in zip(entries, outs):
                session._rename_replayed(e, n)
            e = None
        counts["dels"] += len(gone)
        if plan.fn_json is not None:  # (the names were made from it: the template writes them)
            recs.append('{"op": "del", "names": ["' + '", "'.join(gone) + '"]}')
        else:
            recs.append({"op": "del", "names": list(gone)})
        plan.names = tuple(outs)
        self.short_calls += 1
        last = self._trees.get(plan.dev_key)
        if last is None or last["checkpoints"] != plan.ckpt:
            self._trees[plan.dev_key] = _tree_stats(mgr)
        return True

    def _tree_after(self, mgr, actions, ckpt):
        # Kept per call (the manager is gone by the time recording stops when
        # the program's compiled functions died first), but walked only when
        # the tree can have changed: a replay or warmup adds no graph node.
        dev = str(mgr.device_index)
        last = self._trees.get(dev)
        if "record" in actions or last is None or last["checkpoints"] != ckpt:
            self._trees[dev] = _tree_stats(mgr)

    def _make_plan(self, ctx, fs, mgr, out):
        """After a replay through the general path: the plan that lets the
        function's next call, if it is the same replay, take _fast_after."""
        tls = self.tls
        node = tls.node
        if (node is None or tls.actions != _REPLAYED or not fs.defined or not fs.out_dense
                or type(out) is not list or len(out) != len(fs.out_pos) or not out):
            return
        wrappers = getattr(node, "outputs_weakrefs", None)
        if wrappers is None or len(wrappers) != len(out):
            return
        session = self.session
        keys = self._node_keys(mgr)
        ckpt = mgr.debug_checkpointing_counter
        ekey = (tls.actions[-1], keys, ckpt, mgr.device_index)
        exp = session._expects.get(ekey)
        if exp is None:
            return
        entries, names = [], []
        for o, w in zip(out, wrappers):
            e = session.by_obj_entry.get(id(o))
            if (e is None or e.kind != "out" or e.fact.probe is None or e.fact.obj_ref() is not o
                    or e.fact.probe.tree_ref is not w or w is None or e.fact.held or e in entries):
                return
            entries.append(e)
            names.append(e.name)
        o = e = None
        if _names_json(names) is None:
            return
        try:
            fs.plan = _ReplayPlan(node, keys, ckpt, mgr.device_index, ekey, exp, tuple(entries),
                                  tuple(names), fs.name, ctx["args"])
        except TypeError:  # a node without weak references: no plan
            fs.plan = None

    def _general_after(self, ctx, mgr, out):
        Tensor = self.torch.Tensor
        # The tree hands back a list; a model called directly (cudagraphify)
        # may return one tensor, which the tree takes as a single output.
        if out is None:
            seq = ()
        elif isinstance(out, Tensor) or not isinstance(out, (list, tuple)):
            seq = (out,)
        else:
            seq = out
        outs = []
        node = self.tls.node
        wrappers = getattr(node, "outputs_weakrefs", None) if node is not None else None
        if wrappers is not None and len(wrappers) != len(seq):
            wrappers = None
        known = self.session.by_obj_entry.get
        for i, o in enumerate(seq):
            if not isinstance(o, Tensor):
                outs.append(None)
                continue
            # The tree's own weakref for this output (aligned with the
            # outputs of a recorded or replayed node), for liveness.
            want = wrappers[i] if wrappers is not None else None
            # A tensor the trace names by this very object (a replay's cached
            # output, handed out again; an input returned as is) keeps its
            # Fact, which a new one would equal: the same object over the
            # same storage, judged by the same probe. PyTorch itself hands
            # the cached object out unchecked.
            e = known(id(o))
            f = e.fact if e is not None else None
            if (f is not None and f.probe is not None and f.obj_ref() is o
                    and f.probe.tree_ref is want and f.held is (want is None)):
                outs.append(f)
                continue
            f = self._fact_or_none(o)
            if f is not None and want is not None:
                f.probe.tree_ref = want
                f.held = False  # the tree's wrapper decides: polled at every event
            outs.append(f)
        e = f = o = None  # no loop variable keeps an output alive past the call
        actions = self.tls.actions
        ckpt = mgr.debug_checkpointing_counter
        # (end_call only reads actions; _on_run gives each call a new list.)
        self.session.end_call(ctx, actions, self._node_keys(mgr), ckpt, outs, None,
                              mgr.device_index)
        self._tree_after(mgr, actions, ckpt)

    def _fact_or_none(self, t):
        """The Fact of a tensor, or None (with one note per kind) for one
        the format cannot hold: it is left out of the trace, never an error
        in the program."""
        try:
            return self._fact(t)
        except Exception as e:
            kind = str(e) if isinstance(e, _Unsupported) else "%s (%s)" % (type(t).__name__, type(e).__name__)
            if kind not in self._skipped:
                self._skipped.add(kind)
                self.session.note("cgtrace left out a tensor it cannot record: %s" % kind)
            return None

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
        self._off = True
        self._hot.disarm()
        self.error = "%s: %s: %s%s" % (stage, type(e).__name__, e, _where(e))
        try:
            self.session.note("cgtrace stopped recording here: %s" % self.error)
        except Exception:
            pass
        _warn("cgtrace: recording stopped (%s); the program continues unrecorded" % self.error)

    def _node_keys(self, mgr):
        node = self.tls.node
        if node is None:
            return None
        # A node's function and parent never change: looked up once per node
        # (by id, with a weak reference saying the id is still that node's).
        # Both by weak reference: a strong one to the manager would keep its
        # graphs and private pool alive after the program (or
        # torch._dynamo.reset()) let go of them, and the program would see
        # cudagraph segments that PyTorch alone would have freed.
        got = self._node_key_cache.get(id(node))
        if got is not None and got[0]() is node and got[1]() is mgr:
            return got[2]
        parent = node.parent
        pkey = self._fn_key(mgr, parent.wrapped_function.id) if parent is not None else None
        keys = (self._fn_key(mgr, node.wrapped_function.id), pkey)
        try:
            self._node_key_cache[id(node)] = (weakref.ref(node), weakref.ref(mgr), keys)
        except TypeError:  # a node without weak references: not cached
            pass
        return keys

    def _fn_info(self, mgr, function_id):
        """(FnInfo, the session's state of it or None before its first call)."""
        key = self._fn_key(mgr, function_id)
        st = self.session.fns.get(key)
        if st is not None:
            return st.info, st
        wrapped = mgr.ids_to_funcs[function_id]
        mode = mgr.id_to_mode.get(function_id)
        mode = _MODE_NAMES.get(getattr(mode, "name", ""), "inference")
        placeholders = [getattr(p, "name", "") or "" for p in (getattr(wrapped, "placeholders", None) or ())]
        base = self._base_name(mgr, function_id, mode)
        return FnInfo(key, base, mode, wrapped.static_input_idxs,
                      getattr(wrapped, "mutated_input_idxs", ()) or (), placeholders,
                      mgr.device_index), None

    def _base_name(self, mgr, function_id, mode):
        """The compiled function's name. A forward or inference graph runs
        inside the user's function frame (Dynamo runs the transformed code in
        it), so the first frame up the stack outside torch names it; a module's
        forward is named after its class. A backward is named after the
        forward compiled with it (same compile id)."""
        if mode == "backward":
            cid = getattr(mgr, "id_to_compile_id", {}).get(function_id)
            for other, ocid in getattr(mgr, "id_to_compile_id", {}).items():
                if other != function_id and ocid == cid and cid is not None:
                    st = self.session.fns.get(self._fn_key(mgr, other))
                    if st is not None:
                        return st.info.base + "_bwd"
            return "backward"
        f = sys._getframe(1)
        while f is not None:
            path = f.f_code.co_filename
            if not self._is_library_file(path):
                name = f.f_code.co_name
                self_obj = None
                if name in ("forward", "__call__") and f.f_code.co_varnames[:1] == ("self",):
                    # Only `self` is read: a frame's f_locals snapshot holds
                    # references, and tensors must die when the program lets go.
                    try:
                        self_obj = f.f_locals.get("self")
                    except Exception:
                        self_obj = None
                if self_obj is not None:
                    self._learn_params(self_obj)
                    return type(self_obj).__name__
                if name.startswith("<"):
                    return "fn"
                return name
            f = f.f_back
        return "fn"

    def _library_roots(self):
        """Folders whose frames are PyTorch's, not the program's: torch
        itself, the standard library, this file, and inductor's cache, where
        the generated output code lives (with graph partitions its `call`
        is what calls the tree)."""
        roots = [os.path.dirname(self.torch.__file__), os.path.dirname(os.__file__),
                 os.path.abspath(__file__)]
        env = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        if env:
            roots.append(env)
        try:
            from torch._inductor.runtime.cache_dir_utils import cache_dir
            roots.append(cache_dir())
        except Exception:  # an older layout: the marker below still applies
            pass
        return [os.path.abspath(r) for r in roots]

    def _is_library_file(self, path):
        if path.startswith("<"):  # generated code: <eval_with_key>, <string>
            return True
        if "torchinductor_" in path:  # the default cache: /tmp/torchinductor_USER
            return True
        if getattr(self, "_roots", None) is None:
            self._roots = self._library_roots()
        path = os.path.abspath(path)
        return any(path == r or path.startswith(r + os.sep) for r in self._roots)

    def _learn_params(self, obj):
        """Module paths of the parameters and buffers of a module the compiled
        function belongs to, to name `param` records after them."""
        nn = self.torch.nn
        if not isinstance(obj, nn.Module):
            return
        for n, p in list(obj.named_parameters()) + list(obj.named_buffers()):
            self._param_names.setdefault(id(p), (weakref.ref(p), n))

    def _param_hints(self, inputs, info, facts):
        """Module paths for the static inputs new to the trace (a Fact in
        facts; a name there is the input's already), by input index."""
        hints = {}
        static = info.static
        for idx in _fact_positions(facts):  # (facts is by input position)
            if idx in static:
                v = inputs[idx]
                got = self._param_names.get(id(v))
                if got is not None and got[0]() is v:
                    hints[idx] = got[1]
        return hints

    def _fact(self, t):
        """A Fact for tensor t, holding no strong reference to it. Raises
        _Unsupported for a tensor the format cannot hold. On every call's
        outputs: it asks torch only what it needs (no device object, the
        dtype's name cached)."""
        if t.layout is not self._strided:
            raise _Unsupported("layout %s" % (t.layout,))
        if not t.is_cuda:
            raise _Unsupported("%s tensor" % t.device.type)
        dt = t.dtype
        dtype = self._dtypes.get(dt)
        if dtype is None:
            dtype = dtype_name(dt, t.element_size())
            if dtype is None:
                raise _Unsupported("dtype %s" % (dt,))
            self._dtypes[dt] = dtype
        stor = t.untyped_storage()
        probe = _Probe(weakref.ref(t), _StorageWeakRef(stor), self.tls)
        itemsize = DTYPES[dtype]
        fact = Fact(t.shape, t.get_device(), probe.wr, stor._cdata, t.storage_offset(), t.stride(),
                    probe.alive, probe.read_values, dtype, stor.nbytes() // itemsize, probe.base)
        probe.fact = self._fact
        fact.probe = probe
        fact.ptr = t.data_ptr()
        fact.held = True
        return fact

    def _summarise(self, torch, cgt):
        s = self.session.counts
        meta = self.trace.meta
        summary = dict(s)
        trees = dict(self._trees)
        for dev, c in getattr(cgt.local, "tree_manager_containers", {}).items():
            m = getattr(c, "tree_manager", None)
            if m is not None and m.roots is not None:
                trees[str(dev)] = _tree_stats(m)
        summary["trees"] = trees
        meta["recorded"] = summary
        meta["approximations"] = _APPROXIMATIONS


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


def _warn(msg):
    """A RuntimeWarning about the recorder. Under -W error (pytest's
    filterwarnings = error) warnings.warn raises: then the message goes to
    stderr instead, since the recorder's trouble is never the program's
    exception."""
    try:
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
    except Exception:
        try:
            sys.stderr.write(msg + "\n")
        except Exception:
            pass


class _Unsupported(Exception):
    """A tensor the format cannot hold (sparse, meta, CPU, a subclass without
    a storage, a dtype of no known size): left out of the trace, with a note."""


class _Probe:
    """Whether a named tensor is alive, as the tree would judge it.

    An output of a replay that PyTorch caches (the same tensor object handed
    out on every replay) is held by the tree itself, so neither the object nor
    its storage ever dies on its own. PyTorch judges it through the
    StorageWeakRefWrapper it keeps in node.outputs_weakrefs, whose extra check
    discounts the tree's own references; that wrapper is asked directly
    (holding no reference to the tensor meanwhile), so the recorder's view
    cannot drift from the one the tree's decisions use. Everything else is
    alive while its object is, or, once the object is gone (autograd unpacks
    saved tensors into other objects), while its storage is."""

    __slots__ = ("wr", "sref", "tree_ref", "tls", "fact")

    def __init__(self, wr, sref, tls=None):
        self.wr, self.sref, self.tree_ref = wr, sref, None
        self.tls = tls
        self.fact = None  # the recorder's _fact, for base()

    def read_values(self):
        """The values of a small tensor, read as the recorder's own read (not
        the program's: no `read` record)."""
        obj = self.wr()
        if obj is None or obj.numel() > SMALL_TENSOR:
            return None
        tls = self.tls
        busy = getattr(tls, "busy", False)
        tls.busy = True
        try:
            return [float(x) for x in obj.detach().reshape(-1).float().cpu().tolist()]
        finally:
            tls.busy = busy

    def base(self):
        """The Fact of the tensor this one is a view of (tensor._base)."""
        obj = self.wr()
        b = getattr(obj, "_base", None) if obj is not None else None
        return self.fact(b) if b is not None and self.fact is not None else None

    def storage_alive(self):
        return not self.sref.expired()

    def alive(self):
        w = self.tree_ref
        if w is not None and w.extra_ref_check is not None:
            # Alive for sure while something besides the tree's cache holds
            # the cached output, by the tree's own test (_refcount_rule): the
            # count here is one more, for o, and with USE_COUNT one more
            # again while c10 holds it too. Otherwise the tree is asked
            # (torch's Python: a few microseconds at every poll of every
            # event).
            rule = _refcount_rule(w)
            if rule:
                o = self.wr()
                if o is not None:
                    n = sys.getrefcount(o)
                    if n > 4 or (n == 4 and not (rule == USE_COUNT and o._use_count() > 1)):
                        return True
                o = None
            return not w.expired()
        if self.wr() is not None:
            return True
        return not self.sref.expired()


_RULES = {}  # code object of a tree's extra_ref_check -> its _refcount_rule

# What _refcount_rule finds a tree's check of a cached output to be.
NO_RULE = 0  # another shape: the deferred replay's poll asks the tree
REFCOUNT = 1  # dead once its refcount is 2 (torch before 2.11)
USE_COUNT = 2  # dead once its refcount is 2, or 3 while c10 holds the tensor too (2.11)


def _refcount_rule(w):
    """How the tree's wrapper w of a cached output judges it dead, read
    from its check's code (its small int constants, and the names it
    reads). CUDAGraphNode's check_refcount takes sys.getrefcount of the
    tree's own list entry, one more than the holders it has:
      - REFCOUNT: `get_output_refcount(i) == 2`, dead when the tree's list
        holds it alone;
      - USE_COUNT (2.11): that, or `== 3` when the tensor's
        `_use_count() > 1` (c10 holds it too, with one Python reference).
    Either way sys.getrefcount(obj_ref()) is the count the tree sees, plus
    one for the local holding it: a count past the dead one is alive for
    sure without torch's Python (the deferred replay's poll). A check of
    another shape is NO_RULE, asked of the tree as before."""
    check = getattr(w, "extra_ref_check", None)
    fn = getattr(check, "func", check)
    code = getattr(fn, "__code__", None)
    if code is None:
        return NO_RULE
    rule = _RULES.get(code)
    if rule is None:
        consts = {c for c in code.co_consts if type(c) is int}
        if consts == {2}:
            rule = REFCOUNT
        elif consts == {1, 2, 3} and "_use_count" in code.co_names:
            rule = USE_COUNT
        else:
            rule = NO_RULE
        _RULES[code] = rule
    return rule


def _cached_output(fact):
    """Whether fact is judged by a tree wrapper that discounts the tree's
    own reference: a replay's cached output (the same object every replay),
    which the tree counts dead once the program lets go of it, even while
    autograd still holds it."""
    p = fact.probe
    w = p.tree_ref if p is not None else None
    return w is not None and getattr(w, "extra_ref_check", None) is not None


def _tree_stats(mgr):
    """Graph nodes, roots and checkpoints of one tree manager."""
    roots = [n for ns in (mgr.roots or {}).values() for n in ns]
    count, stack = 0, list(roots)
    while stack:
        n = stack.pop()
        count += 1
        stack.extend(c for cs in n.children.values() for c in cs)
    return {"nodes": count, "roots": len(roots), "checkpoints": mgr.debug_checkpointing_counter}


def _StorageWeakRef(stor):
    """torch.multiprocessing.reductions.StorageWeakRef, imported once."""
    global _StorageWeakRef
    from torch.multiprocessing.reductions import StorageWeakRef
    _StorageWeakRef = StorageWeakRef
    return StorageWeakRef(stor)


# Frames of the recorder's own failure kept in its warning and in
# meta.recorder_error: enough to find the line on a GPU run's log alone.
_WHERE_FRAMES = 4


def _where(e):
    """' (at FILE:LINE in FUNC <- ...)' for the innermost frames of e's
    traceback, innermost first; '' when it has none."""
    try:
        frames = traceback.extract_tb(e.__traceback__)[-_WHERE_FRAMES:]
    except Exception:
        return ""
    if not frames:
        return ""
    return " (at %s)" % " <- ".join("%s:%d in %s" % (os.path.basename(f.filename), f.lineno, f.name)
                                     for f in reversed(frames))


def _error_text(e):
    """The part of a raised error an expect can match: its first line,
    without the stack trace PyTorch appends."""
    text = str(e).strip().splitlines()
    first = text[0].strip() if text else type(e).__name__
    return first[:200]


def _module_codes():
    """Every code object of this module's functions and classes' methods,
    the ones nested in them included (closures, lambdas, comprehensions)."""
    seen, stack = set(), []

    def add(obj):
        obj = getattr(obj, "__func__", obj)  # (staticmethod, classmethod)
        if isinstance(obj, property):
            for f in (obj.fget, obj.fset, obj.fdel):
                if f is not None:
                    add(f)
            return
        code = getattr(obj, "__code__", None)
        if isinstance(code, types.CodeType) and getattr(obj, "__module__", None) == __name__:
            stack.append(code)

    for obj in list(globals().values()):  # (this module's, run as __main__ too)
        if isinstance(obj, type) and obj.__module__ == __name__:
            for member in vars(obj).values():
                add(member)
        else:
            add(obj)
    while stack:
        code = stack.pop()
        if code in seen:
            continue
        seen.add(code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return seen


def record(path, name=None, meta=None, follow=None):
    """`with cgtrace.record("run.cgt.jsonl"):` records the CUDAGraph Trees
    activity of the code inside into that file (written on exit, also when
    the code raised). With follow (default: CGTRACE_FOLLOW=1, or a path
    that is a named pipe) the file is written as the program runs, one
    flush per compiled call or host read, for `cgtviz run --follow` or
    `cgtviz -follow`; the counts then end the file as a note instead of
    heading it."""
    return Recorder(path, name=name, meta=meta, follow=follow)


# ---------------------------------------------------------------------------
# Command line


def summarise_file(path):
    """Counts of a trace's records and of PyTorch's decisions in its
    expects; needs no torch."""
    counts = {"defs": 0, "calls": 0, "steps": 0, "dels": 0, "tensors": 0, "params": 0,
              "warmup": 0, "record": 0, "replay": 0, "eager": 0, "errors": 0}
    checkpoints = 0
    header = None
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            if header is None:
                header = rec
                continue
            op = rec.get("op")
            key = {"def": "defs", "call": "calls", "step": "steps", "tensor": "tensors",
                   "param": "params"}.get(op)
            if key:
                counts[key] += 1
            if op == "del":
                counts["dels"] += len(rec["names"])
            if op == "expect":
                if "action" in rec:
                    counts[rec["action"]] += 1
                if rec.get("error") is not None:
                    counts["errors"] += 1
                checkpoints = max(checkpoints, rec.get("checkpoints", 0))
    counts["checkpoints"] = checkpoints
    return {"name": (header or {}).get("name"), "counts": counts}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m cgtrace",
                                description="Record a PyTorch program's CUDAGraph Trees activity as a cgtviz trace.")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a script and record it")
    r.add_argument("-o", "--output", help="trace file (default: SCRIPT.cgt.jsonl in the current directory)")
    r.add_argument("--name", help="the trace's title (default: the script's file name)")
    r.add_argument("--follow", action="store_true",
                   help="write the trace as the program runs, for cgtviz run --follow (also CGTRACE_FOLLOW=1; "
                        "a named pipe always is)")
    r.add_argument("script")
    r.add_argument("args", nargs=argparse.REMAINDER)
    s = sub.add_parser("summary", help="print what a recorded trace holds")
    s.add_argument("traces", nargs="+")
    a = p.parse_args(argv)
    if a.cmd == "summary":
        for t in a.traces:
            print(json.dumps(dict(summarise_file(t), file=t)))
        return 0
    script = a.script
    if not os.path.exists(script):
        print("cgtrace: no such script: %s" % script, file=sys.stderr)
        return 2
    out = a.output or os.path.splitext(os.path.basename(script))[0] + ".cgt.jsonl"
    name = a.name or os.path.basename(script)
    sys.argv = [script] + list(a.args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    rec = record(out, name=name, meta={"source": "cgtrace", "script": os.path.basename(script),
                                       "argv": list(a.args)}, follow=a.follow or None)
    status = 0
    with rec:
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    print("cgtrace: wrote %s (%d calls)" % (out, rec.session.counts["calls"]), file=sys.stderr)
    return status


if __name__ == "__main__":
    # Run as `python3 -m cgtrace`: hand over to the importable module, so a
    # script that imports cgtrace itself shares the one active recorder.
    import cgtrace as _self
    sys.exit(_self.main())
