"""The recorder's own trouble, told without raising into the program: a
warning (_warn), where it happened (_where), the text of PyTorch's error
an expect matches (_error_text), a tensor the format cannot hold
(_Unsupported)."""

import os
import sys
import traceback
import warnings

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
    # PyTorch's overwritten error names, after "Stack trace:", the line of
    # the compiled model's own code that made the output (its FX node's):
    # no trace holds that line, and cgtviz writes its own there (the
    # call's src), so the expectation is the part before it.
    cut = first.find(" Stack trace:")
    if cut > 0:
        first = first[:cut]
    return first[:200]
