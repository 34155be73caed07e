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

The trace is written to its path as the program runs (the journal: one
os.write per compiled call or host read; the calls the fast paths hold,
and the host reads of their output between them, at most 20 ms after
they returned, CGTRACE_JOURNAL_MS, by the next call
or else by the journal's clock thread, and at least every 64 calls: a
batch that bound makes handed to a writer thread of the C module's,
which writes it while the program runs on;
CGTRACE_JOURNAL_THREAD=0 writes it in place), so
a program that crashes or is killed leaves what was recorded;
it is written whole over the journal when the recording ends (a temporary
file renamed over the name; CGTRACE_JOURNAL=0: only then). A followed
recording (record(..., follow=True), `run --follow`, CGTRACE_FOLLOW=1 or a
named pipe as the path) streams it for `cgtviz run --follow` instead (one
write per compiled call). Calls, defs, tensors and reads carry the user's
source line (`src`). On a torch other than 2.11 the recorder says so once
and records what it can (compat.py), never raising into the program.

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
list built, and the general path's records, in its order, the result. A
call like its function's last one but for new tensors (a data loader's
batch, a decoder's token) is named before the call by _Fresh._fresh_before
(fresh.py) without the general path's search, when all the search would
find is steps, deaths of named tensors and tensors new to the trace that a
template writes; anything else takes the general path.

The package needs only the standard library until recording starts; torch
is imported then, by torch_api.py alone (the one module that imports it).
Its modules, torch-free first (the tests drive them with fake tensors):

    jsonl.py      JSON writing: the format's records, checked and encoded; Trace
    shapes.py     shapes, strides and views; function bodies (synth_def)
    session.py    the recording session: each event's records, in order,
                  with its mixins names.py (names, renames, deaths) and
                  state.py (Fact, FnInfo: what it keeps of tensors, functions)
    liveness.py   a tensor's liveness as the tree judges it (_Probe)
    knobs.py      PyTorch's settings and their cheap reading (_Knobs)
    errors.py     the recorder's own trouble, told without raising
    compat.py     the torch it was made for; what of another it can wrap
    torch_api.py  every import of torch
    recorder.py   Recorder (start, stop, the trace's output) and record(),
                  with its mixins: hooks.py (what it patches into torch),
                  calls.py (a call's general path), fresh.py (a call on new
                  inputs, before it), deferred.py (the steady
                  replay), events.py (steps, resets, reads, knobs, failure),
                  facts.py (what it asks torch about tensors and functions)
    cli.py        the command line (__main__.py: python3 -m cgtrace)

Every name below is the package's as it was the one module's: importable
from cgtrace. Each lives in its module, so patch it there (a test that
swaps cgtrace.X swaps only the package's reference).
"""

# The public names, and the private ones the tests reach for.
from .cli import main, summarise_file  # noqa: F401
from .hooks import _READ_METHODS, _to_host  # noqa: F401
from .jsonl import (_STEP, DTYPES, FORMAT_VERSION, MAX_DIMS, SMALL_TENSOR, Trace, _LineEncoder,  # noqa: F401
                    check_record, encode_header, encode_record)
from .knobs import KNOBS, UNBOUNDED, _Knobs, settings_from_knobs  # noqa: F401
from .liveness import NO_RULE, REFCOUNT, USE_COUNT, _Probe, _refcount_rule  # noqa: F401
from .recorder import Recorder, record  # noqa: F401
from .session import Session  # noqa: F401
from .state import _FACT_OF, Fact, FnInfo  # noqa: F401
from .shapes import (OutSpec, check_body, contiguous_strides, dtype_name, extent, fit_shape,  # noqa: F401
                     is_contiguous, numel, sanitize, synth_def, view_fields)

__all__ = ["record", "Recorder", "Trace", "synth_def", "check_body", "main"]
