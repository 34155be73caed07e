"""The torch reads the lean paths make at a call (a new input's layout,
dtype, shape, strides, offset, device, storage, size and data pointer;
the kept inputs' data pointers; a storage's weak reference), through
libtorch's C++ API: _cpp.cpp, built against the installed torch the
first time a machine records, into CGTRACE_CACHE, then loaded from
there. Where it cannot be had (no C++ compiler, no torch headers,
the stand-in torch of the tests, CGTRACE_CPP=0), the lean paths read
through torch's Python bindings as before; the trace is the same either
way (tools/gpu/cpp-check.py holds each function to torch's own reads).

Why: each of those reads through torch's bindings runs torch's binding
code, 3.5 to 6 us a read with the caches as a real program's call
leaves them, about twenty at a new-input call (BENCHMARKS.md, session
17); here each is a field of the tensor's TensorImpl or StorageImpl.

The build takes tens of seconds (torch's headers), so a recording that
finds none starts it in another process and goes on without it; the
next recording on the machine has it. A build that fails leaves its
messages (failed_path) and is not started again by a recording, only
by one at once: CGTRACE_CPP=wait (the GPU tools, a benchmark) or
`python3 -m cgtrace build`, which build it before anything else.
"""

import os
import subprocess
import sys
import time

from . import fastpath, torch_api
from .jsonl import write_whole

API = 3
# Whether a recording uses the module when CGTRACE_CPP is not set: on
# since a GPU run held it to torch's reads (tools/gpu/cpp-check.py) and
# every real program's trace with it to the general path's
# (deferred-same.py with CGTRACE_CPP=1; docs/gpu-runs/2026-12-05-h200.md,
# runs 10 to 13). CGTRACE_CPP=0 turns it off, CGTRACE_CPP=wait builds it
# before the recording starts.
DEFAULT = "1"
_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cpp.cpp")
_NAME = "_cgtrace_cpp"
_loaded = {}
# How load()'s why begins when a build runs in the background, started by
# this recording or another process's (say_building tells it by them).
_BUILDING = ("building ", "another process is building ")


def module_path(torch):
    """Where the build for this torch and interpreter is: named by the
    hash of _cpp.cpp, of this Python and of the torch it is built
    against (its version and where it is installed)."""
    where = os.path.dirname(os.path.abspath(getattr(torch, "__file__", "") or ""))
    return fastpath._cached_path(_NAME, _SRC, (str(getattr(torch, "__version__", "")) + where).encode())


def build_command(torch, out):
    """The compiler's command that builds _cpp.cpp into out against
    torch (its headers, its libraries, its C++ ABI). Raises OSError
    when there is no C++ compiler, or torch has no headers."""
    import sysconfig
    cxx = fastpath._compiler("CXX", ("c++", "g++", "clang++"), "C++")
    incs = torch_api.cpp_include_paths()
    if not any(os.path.exists(os.path.join(p, "torch", "csrc", "autograd", "python_variable.h")) for p in incs):
        raise OSError("torch %s has no C++ headers" % torch.__version__)
    lib = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "lib")
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    cmd = cxx + ["-O2", "-std=c++17", "-shared", "-fPIC", "-w", "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi]
    cmd += ["-I" + p for p in incs] + ["-I" + sysconfig.get_paths()["include"], _SRC, "-o", out,
                                       "-L" + lib, "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python",
                                       "-Wl,-rpath," + lib]
    if sys.platform == "darwin":
        cmd[1:1] = ["-undefined", "dynamic_lookup"]
    return cmd


def self_check(m, torch, t=None):
    """Raises ImportError unless m reads what torch's bindings read of t
    (default: a small CPU tensor, an offset view with strides of its
    own): a build that does not match the torch it is loaded into (its
    ABI, its structures) is never used. Once a process, at load."""
    if t is None:
        t = torch.ones(2, 4)[:, 1:]
    st = t.untyped_storage()
    want = (tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.layout is torch.strided, t.get_device(),
            st._cdata, st.nbytes(), t.data_ptr())
    got = tuple(m.facts(t))
    if got != want:
        raise ImportError("%s reads %r of a tensor torch reads as %r" % (getattr(m, "__file__", m), got, want))


def build(torch, so, background):
    """Builds _cpp.cpp into so, whole or not at all (the compiler
    writes a temporary file, renamed into place): at once (raising
    RuntimeError with the compiler's message when it fails), or started
    in another process that outlives this one (the Popen of the shell
    that started it, ended; None when another process is building it
    already). A build that fails leaves the compiler's messages in
    so + ".failed" (failed_path), and no recording starts another until
    one at once (`python3 -m cgtrace build`, CGTRACE_CPP=wait) has taken
    it away: a compiler that cannot build against this torch would
    otherwise run beside every recording."""
    os.makedirs(os.path.dirname(so), exist_ok=True)
    mark = so + ".building"
    failed = failed_path(so)
    if background:
        # One build at a time on a machine (a suite's processes start
        # together): a marker made exclusively, taken away when the build
        # ends; one older than the build's limit is a killed build's.
        try:
            if time.time() - os.path.getmtime(mark) < 600:
                return None
            os.unlink(mark)
        except OSError:
            pass
        try:
            os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            return None
    tmp = fastpath._temp_beside(so)
    started = False
    try:
        cmd = build_command(torch, tmp)
        if background:
            # (a shell, so that the rename follows the compiler's success
            # in that process, whether or not this one is still running;
            # started in the background of a shell that ends at once, so
            # that this process has no child left to wait for)
            # (the compiler's messages kept while it runs, renamed to the
            # .failed file, whole, when it fails)
            script = ('tmp=$0 so=$1; shift; { if { if command -v timeout >/dev/null; then timeout 600 "$@"; '
                      'else "$@"; fi; } >"$so.log" 2>&1; then mv -f "$tmp" "$so"; rm -f "$so.log"; '
                      'else mv -f "$so.log" "$so.failed"; fi; rm -f "$tmp" "$so.building"; } &')
            p = subprocess.Popen(["/bin/sh", "-c", script, tmp, so] + cmd, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            started = True
            p.wait()
            return p
        if os.path.exists(failed):  # (a build at once tries again)
            os.unlink(failed)
        try:
            fastpath._compile(cmd, tmp, so, 600)
        except Exception as e:
            _write_whole(failed, "%s: %s\n" % (type(e).__name__, e))
            raise
    finally:
        if not started:
            for f in (tmp,) + ((mark,) if background else ()):
                if os.path.exists(f):
                    os.unlink(f)
    return None


def failed_path(so):
    """Where a failed build of so leaves the compiler's messages."""
    return so + ".failed"


def _write_whole(path, text):
    """path holds text, whole or not at all (a file that cannot be written
    is left as it was)."""
    try:
        write_whole(path, [text.encode("utf-8")])
    except OSError:
        pass


def load(torch):
    """(reads, why): the built module for this torch, or None and why
    not (a build started in the background says so). Once a process."""
    if "got" in _loaded:
        return _loaded["got"]
    got = _load(torch)
    _loaded["got"] = got
    return got


def say_building(why, stream=None):
    """The one line, once a process, when load() started a build in the
    background (why says so): a compiler runs beside the program for tens
    of seconds, once a machine and torch, and the user is told so and how
    to go without. Returns whether it said it."""
    if why is None or not why.startswith(_BUILDING) or _loaded.get("said"):
        return False
    _loaded["said"] = True
    try:
        (stream or sys.stderr).write(
            "cgtrace: %s; CGTRACE_CPP=0 goes without, `python3 -m cgtrace build` builds it at once\n" % why)
    except Exception:  # (a closed stderr: the program's, never the recorder's error)
        pass
    return True


def use(got):
    """load() answers got ((module or None, why)) from here on: the tests'
    stand-in reads, a tool timing the bindings' reads."""
    _loaded["got"] = got


def _load(torch):
    mode = os.environ.get("CGTRACE_CPP", DEFAULT)
    if mode == "0":
        return None, "CGTRACE_CPP=0" if "CGTRACE_CPP" in os.environ else "off unless CGTRACE_CPP=1"
    if sys.platform == "win32":
        return None, "not built on Windows"
    try:
        so = module_path(torch)
        if not os.path.exists(so) and mode == "wait":
            build(torch, so, background=False)
        elif not os.path.exists(so):
            name = os.path.basename(so)
            if os.path.exists(failed_path(so)):
                return None, ("the last build of %s failed (its messages: %s); `python3 -m cgtrace build` "
                              "tries again" % (name, failed_path(so)))
            p = build(torch, so, background=True)
            return None, "%s%s in the background for torch %s (used from the next recording)" % (
                _BUILDING[p is None], name, torch.__version__)
        m = fastpath._import_built(_NAME, so, API)
        self_check(m, torch)
        return m, None
    except Exception as e:  # (no compiler, no headers, a failed build: torch's bindings)
        return None, "%s: %s" % (type(e).__name__, e)
