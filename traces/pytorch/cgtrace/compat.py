"""Which PyTorch the recorder was made for, and what of another one it can
still record (issue 33 item 7). The recorder wraps internals of
torch/_inductor/cudagraph_trees.py as 2.11 has them; before it patches
anything, check() looks at each one (is it there, does it take the
arguments 2.11's takes) and says what the recording must do without.
A missing or changed entry point of the tree stops the recording before
anything is patched: the program runs as it would unrecorded, and the
trace says why. Free of torch: it is given the modules."""

import inspect
import re
import sys

# The versions the recorder was made for and tested on (major, minor).
MADE_FOR = ((2, 11),)
MADE_FOR_TEXT = "2.11"

# The tree manager's entry points the recorder cannot do without, with the
# parameters 2.11's take (after self): the wrappers call them so.
ENTRY_POINTS = (
    ("_run", ("new_inputs", "function_id")),
    ("run_eager", ("new_inputs", "function_id")),
    ("record_function", ("new_inputs", "function_id")),
    ("execute_node", ("node", "new_inputs")),
)
# Ones it records better with; without them the feature named goes.
OPTIONAL_METHODS = (
    ("set_to_running_backward", (), "a backward whose cudagraphs were skipped is not noted"),
)

# What later versions added that the recorder records as the tree did but
# that cgtviz does not model (2.11's rules): a note in the trace when the
# torch has it, so a difference on replay has its cause beside it.
LATER_FEATURES = (
    ("module", "mark_warmup_incomplete",
     "mark_warmup_incomplete (2.12+): a function asking for another warmup is recorded as the "
     "warmups the tree ran; cgtviz's warmup rule is 2.11's"),
    ("manager", "has_live_user_visible_output_cloning",
     "generation cloning (cudagraph_trees_generation_cloning, 2.12+): outputs cloned at a new "
     "generation are recorded as the tree left them; cgtviz does not clone"),
)

_VERSION = re.compile(r"(\d+)\.(\d+)")


def version_tuple(version):
    """(major, minor) of a version string, or None."""
    m = _VERSION.match(str(version or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def made_for(version):
    """Whether the recorder was made for this torch version."""
    return version_tuple(version) in MADE_FOR


def _params(fn):
    """The names of fn's parameters after self, or None when they cannot be
    read (a builtin, a C extension)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    names = [p.name for p in sig.parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return tuple(names[1:])


def _accepts(fn, want):
    """Whether fn (a function taking self first) takes `want` as its next
    positional parameters, by name; a signature that cannot be read is
    taken as it comes (the call will tell)."""
    try:
        params = list(inspect.signature(fn).parameters.values())[1:]
    except (TypeError, ValueError):
        return True
    for i, name in enumerate(want):
        if i >= len(params):
            return False
        p = params[i]
        if p.kind == p.VAR_POSITIONAL:
            return True  # (*args takes the rest)
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or p.name != name:
            return False
    # Any parameter after them needs no argument.
    return all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in params[len(want):])


class Compat:
    """What check() found: `fatal` (the entry points the recording cannot
    do without that this torch lacks or changed: nothing is patched),
    `degraded` (features left out, one text each) and `later` (what this
    torch has that cgtviz does not model), all texts for the trace."""

    def __init__(self, version):
        self.version = str(version)
        self.fatal = []
        self.degraded = []
        self.later = []
        self.skip = set()  # the optional internals not to wrap (their signature changed)

    def notes(self):
        """The texts the trace carries (meta.cgtrace_compat and notes)."""
        return self.fatal + self.degraded + self.later

    def meta(self):
        """meta.cgtrace_compat, or None when there is nothing to say."""
        if not (self.fatal or self.degraded or self.later):
            return None
        return {"made_for": MADE_FOR_TEXT, "torch": self.version, "fatal": list(self.fatal),
                "degraded": list(self.degraded), "later": list(self.later)}


def check(version, cgt):
    """Looks at the internals the recorder wraps in this torch's
    cudagraph_trees module (cgt) before anything is patched."""
    c = Compat(version)
    M = getattr(cgt, "CUDAGraphTreeManager", None)
    if not isinstance(M, type):
        c.fatal.append("torch._inductor.cudagraph_trees has no CUDAGraphTreeManager: nothing is recorded")
        return c
    for attr, want in ENTRY_POINTS:
        fn = M.__dict__.get(attr)
        if fn is None:
            c.fatal.append("CUDAGraphTreeManager.%s is missing: nothing is recorded" % attr)
        elif not callable(fn) or not _accepts(fn, want):
            c.fatal.append("CUDAGraphTreeManager.%s takes (%s), not (%s) as in %s: nothing is recorded"
                           % (attr, ", ".join(_params(fn) or ()), ", ".join(want), MADE_FOR_TEXT))
    for attr, want, lost in OPTIONAL_METHODS:
        fn = M.__dict__.get(attr)
        if fn is not None and not _accepts(fn, want):
            c.degraded.append("CUDAGraphTreeManager.%s has another signature: %s" % (attr, lost))
            c.skip.add(attr)
    box = getattr(cgt, "MarkStepBox", None)
    if not isinstance(getattr(box, "mark_step_counter", None), int):
        c.fatal.append("MarkStepBox.mark_step_counter is missing: nothing is recorded")
    if not hasattr(cgt, "local"):
        c.degraded.append("cudagraph_trees.local is missing: the trees' sizes are left out of the summary")
    if "reset_cudagraph_trees" in cgt.__dict__ and not _accepts_plain(cgt.reset_cudagraph_trees):
        c.degraded.append("reset_cudagraph_trees has another signature: resets are not recorded")
        c.skip.add("reset_cudagraph_trees")
    for where, name, text in LATER_FEATURES:
        if where == "module" and name in cgt.__dict__:
            c.later.append(text)
        elif where == "manager" and _manager_has(M, name):
            c.later.append(text)
    return c


def _accepts_plain(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    return all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in sig.parameters.values())


def _manager_has(M, name):
    """Whether the manager class sets `name` (an attribute its __init__
    assigns, found in its code's names, or one of the class)."""
    if name in M.__dict__:
        return True
    init = M.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    return code is not None and name in code.co_names


_SAID = [False]  # the start-up line, once per process


def say_made_for(version, stream=None):
    """The one line at a recording's start on a torch the recorder was not
    made for (once per process); nothing on one it was."""
    if made_for(version) or _SAID[0]:
        return False
    _SAID[0] = True
    try:
        (stream or sys.stderr).write(
            "cgtrace: made for torch %s; this is torch %s: it records what it can, and the trace "
            "says what it could not (meta.cgtrace_compat)\n" % (MADE_FOR_TEXT, version))
    except Exception:
        pass
    return True
