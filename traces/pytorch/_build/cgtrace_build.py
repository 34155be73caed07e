"""The build backend of the cgtrace package (PEP 517, with PEP 660 editable
installs), in the standard library alone.

Why not setuptools: the machines the recorder is installed on reach no
package index (the GPU machines reach nothing; CI's venv has no `wheel`, and
setuptools before 70.1 cannot build a wheel without it). A package of
plain modules needs no more than this: a wheel is a zip of the package's
files and its .dist-info (PEP 427, PEP 376 RECORD), an editable one a .pth
naming this folder. `requires = []` in pyproject.toml, so pip's build isolation has
nothing to fetch.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "cgtrace"
VERSION = "0.2.0"
SUMMARY = "Record a PyTorch program's CUDAGraph Trees activity as a cgtviz trace"
REQUIRES_PYTHON = ">=3.9"
# torch is optional at install time: the GPU machines bring their own build.
EXTRAS = {"torch": ["torch>=2.11"]}
SCRIPTS = {"cgtrace": "cgtrace:main"}
TAG = "py3-none-any"

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # traces/pytorch
DIST_INFO = "%s-%s.dist-info" % (NAME, VERSION)


def _metadata():
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + VERSION,
             "Summary: " + SUMMARY, "Requires-Python: " + REQUIRES_PYTHON]
    for extra, reqs in sorted(EXTRAS.items()):
        lines.append("Provides-Extra: " + extra)
        for r in reqs:
            lines.append('Requires-Dist: %s; extra == "%s"' % (r, extra))
    return "\n".join(lines) + "\n\nRecords what reached PyTorch's CUDAGraph Trees as a cgtviz trace.\n"


def _dist_info_files():
    entry = "[console_scripts]\n" + "".join("%s = %s\n" % kv for kv in sorted(SCRIPTS.items()))
    wheel = "Wheel-Version: 1.0\nGenerator: cgtrace_build\nRoot-Is-Purelib: true\nTag: %s\n" % TAG
    return {"METADATA": _metadata(), "WHEEL": wheel, "entry_points.txt": entry,
            "top_level.txt": NAME + "\n"}


def _hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "sha256=%s,%d" % (digest, len(data))


def _write_wheel(wheel_directory, files):
    """files: archive name -> bytes. Written to a temporary name and renamed,
    so a failed build leaves no half wheel under the final name."""
    name = "%s-%s-%s.whl" % (NAME, VERSION, TAG)
    for k, v in _dist_info_files().items():
        files["%s/%s" % (DIST_INFO, k)] = v.encode("utf-8")
    record = "".join("%s,%s\n" % (n, _hash(d)) for n, d in files.items())
    record += "%s/RECORD,,\n" % DIST_INFO
    files["%s/RECORD" % DIST_INFO] = record.encode("utf-8")
    path = os.path.join(wheel_directory, name)
    tmp = path + ".part"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, d in files.items():
            zf.writestr(n, d)
    os.replace(tmp, path)
    return name


def _package_files():
    """The package's modules and C and C++ sources (fastpath.py builds
    _fastpath.c, cpp.py _cpp.cpp, where it runs), by their paths in an
    archive (cgtrace/x.py), in order; nothing else of its folder (no
    __pycache__)."""
    folder = os.path.join(HERE, NAME)
    return sorted("%s/%s" % (NAME, f) for f in os.listdir(folder) if f.endswith((".py", ".c", ".cpp")))


def _package():
    files = {}
    for rel in _package_files():
        with open(os.path.join(HERE, rel), "rb") as fh:
            files[rel] = fh.read()
    return files


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(d, exist_ok=True)
    for k, v in _dist_info_files().items():
        with open(os.path.join(d, k), "w", encoding="utf-8") as fh:
            fh.write(v)
    return DIST_INFO


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth line puts this folder on sys.path: edits to the package show at once.
    return _write_wheel(wheel_directory, {"__editable__.%s.pth" % NAME: (HERE + "\n").encode("utf-8")})


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, VERSION)
    name = base + ".tar.gz"
    path = os.path.join(sdist_directory, name)
    tmp = path + ".part"
    with tarfile.open(tmp, "w:gz") as tf:
        for rel in _package_files() + ["pyproject.toml", "_build/cgtrace_build.py"]:
            tf.add(os.path.join(HERE, rel), arcname="%s/%s" % (base, rel))
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        data = _metadata().encode("utf-8")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    os.replace(tmp, path)
    return name
