"""tools/gpu/gpu.sh, the GPU machine's one entry point, tested here where
there is no GPU: its syntax, every suite's dry run (which must start
nothing), the suites its page documents, what it refuses before anything
runs, and a real run of a suite whose commands are stand-ins (the steps'
summary, exit status and packed logs)."""
import os
import re
import subprocess
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.normpath(os.path.join(HERE, "..", "gpu.sh"))
README = os.path.normpath(os.path.join(HERE, "..", "README.md"))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def run(args, env=None, path_first=None):
    e = dict(os.environ, **(env or {}))
    if path_first:
        e["PATH"] = path_first + os.pathsep + e["PATH"]
    p = subprocess.run(["bash", SCRIPT] + args, capture_output=True, text=True, env=e, timeout=120)
    return p.returncode, p.stdout, p.stderr


def stand_in(folder, name, body):
    """An executable NAME in folder running the shell body."""
    path = os.path.join(folder, name)
    with open(path, "w") as fh:
        fh.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


def suites():
    code, out, err = run(["list"])
    if code != 0:
        raise AssertionError("gpu.sh list: exit %d: %s" % (code, err))
    return [line.split()[0] for line in out.splitlines() if line.strip()]


class GpuShTest(unittest.TestCase):
    def test_syntax(self):
        p = subprocess.run(["bash", "-n", SCRIPT], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_list_has_the_suites(self):
        names = suites()
        for want in ("device", "engine", "peer", "programs", "bench", "overhead", "oracle", "replay"):
            self.assertIn(want, names)
        self.assertEqual(len(names), len(set(names)), names)

    def test_readme_documents_every_suite(self):
        # The page's suite table: a row `| `name` | ...` for each suite,
        # no more, no fewer.
        with open(README) as fh:
            doc = fh.read()
        documented = re.findall(r"^\| `([a-z][a-z-]*)` \|", doc, re.M)
        self.assertEqual(sorted(documented), sorted(suites()))

    def test_dry_run_of_every_suite_starts_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            marker = os.path.join(d, "ran")
            fake = os.path.join(d, "bin")
            os.mkdir(fake)
            # Whatever a step would start first: a dry run calls none.
            for name in ("timeout", "nvidia-smi", "nvcc", "python3", "tmux", "tar"):
                stand_in(fake, name, 'echo "$0 $*" >> "%s"; exit 1' % marker)
            out_dir = os.path.join(d, "out")
            for suite in suites():
                with self.subTest(suite=suite):
                    code, out, err = run(["--dry-run", suite], env={"OUT": out_dir}, path_first=fake)
                    self.assertEqual(code, 0, err)
                    self.assertIn("== %s: " % suite, out)
                    steps = [l for l in out.splitlines() if re.match(r"^  \S+ +\d+ s  ", l)]
                    self.assertTrue(steps, "no step listed for %s:\n%s" % (suite, out))
            self.assertFalse(os.path.exists(marker), open(marker).read() if os.path.exists(marker) else "")
            self.assertFalse(os.path.exists(out_dir), "a dry run made $OUT")

    def test_the_steps_that_need_no_gpu_run_here(self):
        """A step whose command needs no GPU (the lean paths' C checks
        against their Python reference, with the stand-in torch) runs here
        as the GPU host will run it, from the repository's root: a command
        that cannot even find its tests (as `unittest FILE` could not, the
        first time on the H200) fails here, not on the GPU."""
        code, out, err = run(["--dry-run", "unchanged"])
        self.assertEqual(code, 0, err)
        line = next(l for l in out.splitlines() if re.match(r"^  fastpath +\d+ s  ", l))
        cmd = re.sub(r"^  fastpath +\d+ s  ", "", line)
        p = subprocess.run(cmd, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertRegex(p.stderr, r"Ran [1-9]\d* tests")

    def test_dry_run_of_suites_at_once(self):
        code, out, err = run(["--dry-run", "device+engine", "bench"])
        self.assertEqual(code, 0, err)
        self.assertIn("# at once: device, engine", out)
        self.assertEqual(re.findall(r"^== (\w+):", out, re.M), ["device", "engine", "bench"])

    def test_refusals(self):
        code, _, err = run([])
        self.assertEqual(code, 2)
        self.assertIn("usage:", err)
        code, _, err = run(["--dry-run", "nosuch"])
        self.assertEqual(code, 2)
        self.assertIn("unknown suite nosuch", err)
        code, _, err = run(["engine+nosuch"])
        self.assertEqual(code, 2)
        self.assertIn("unknown suite nosuch", err)

    def test_peer_refusals(self):
        # The peer suite's pieces are found before anything runs: a missing
        # test file, peer-suite or cgtviz fails here, not on the GPU.
        with tempfile.TemporaryDirectory() as d:
            test_file = os.path.join(d, "test_cudagraph_trees.py")
            open(test_file, "w").close()
            suite = os.path.join(d, "suite")
            os.mkdir(suite)
            open(os.path.join(suite, "conftest.py"), "w").close()
            exe = os.path.join(d, "cgtviz")
            with open(exe, "w") as fh:
                fh.write("#!/bin/sh\n")  # not executable
            out_dir = os.path.join(d, "out")
            cases = [
                ({"PEER_FILE": os.path.join(d, "none.py"), "PEER_SUITE": suite, "CGTVIZ": exe}, "no test file"),
                ({"PEER_FILE": test_file, "PEER_SUITE": os.path.join(d, "nosuite"), "CGTVIZ": exe}, "peer-suite not found"),
                ({"PEER_FILE": test_file, "PEER_SUITE": suite, "CGTVIZ": exe}, "is not an executable cgtviz"),
            ]
            for env, want in cases:
                env["OUT"] = out_dir
                code, _, err = run(["overhead", "peer"], env)
                self.assertEqual(code, 2, (env, err))
                self.assertIn(want, err, env)
                self.assertFalse(os.path.exists(out_dir), "refused after starting")

    def test_run_with_stand_ins(self):
        # The overhead suite runs python3 twice: with a stand-in that exits
        # as told, a real run's summary, status and logs are checked here.
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "bin")
            os.mkdir(fake)
            stand_in(fake, "python3", 'echo "medians: off 10 us/call, recording 19 us/call, added 9 us/call"; '
                     'echo "a warning" >&2; exit ${FAKE_RC:-0}')
            stand_in(fake, "nvidia-smi", "echo 'NVIDIA H200, 580.00, 143771 MiB'")
            for rc, want_code, want_line in (("0", 0, "ok   overhead: "), ("3", 1, "FAIL overhead: exit 3")):
                with self.subTest(rc=rc):
                    out_dir = os.path.join(d, "out" + rc)
                    code, out, err = run(["overhead"], {"OUT": out_dir, "FAKE_RC": rc}, path_first=fake)
                    self.assertEqual(code, want_code, out + err)
                    with open(os.path.join(out_dir, "summary.txt")) as fh:
                        summary = fh.read()
                    self.assertIn("gpu: NVIDIA H200", summary)
                    self.assertIn(want_line, summary)
                    self.assertIn("added 9 us/call", summary)
                    with tarfile.open(os.path.join(out_dir, "gpu-run.tgz")) as tf:
                        logs = {os.path.normpath(n) for n in tf.getnames()}
                    self.assertIn("overhead/overhead.log", logs)
                    self.assertIn("overhead/overhead-fresh.log", logs)
                    # Nothing but the summary and the archive: the device
                    # tool brings back 8 files at most.
                    self.assertEqual(sorted(os.listdir(out_dir)), ["gpu-run.tgz", "summary.txt"])

    def test_paired_round_with_a_stand_in_pytest(self):
        """peer-compare's paired round, its pytest a stand-in (python3 -m
        pytest IDS ... --junitxml X): every shard runs once a mode, with
        the round's hash seed and PEER_RECORD; t_rec fails only recorded
        (changed), t_order fails in both modes under seed 2 (flaky), t_env
        fails unrecorded once and passes when run again after the same
        tests (flaky: the machine's)."""
        fake_pytest = (
            "import os, sys\n"
            "a = sys.argv[3:]\n"
            "xml = a[a.index('--junitxml') + 1]\n"
            "seed, rec = os.environ['PYTHONHASHSEED'], os.environ['PEER_RECORD']\n"
            "cases = []\n"
            "for tid in [x for x in a if '::' in x]:\n"
            "    name = tid.rsplit('::', 1)[1]\n"
            "    again = '-again' in os.environ['PEER_OUT']\n"
            "    bad = ((name == 't_rec' and rec == '1') or (name == 't_order' and seed == '2')\n"
            "           or (name == 't_env' and rec == '0' and not again))\n"
            "    cases.append(\"<testcase classname='g.K' name='%s'>%s</testcase>\" % (name, '<failure/>' if bad else ''))\n"
            "open(xml, 'w').write('<testsuites><testsuite>' + ''.join(cases) + '</testsuite></testsuites>')\n"
            "print('%d passed in 0.1s' % len(cases))\n")
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "bin")
            os.mkdir(fake)
            with open(os.path.join(d, "fake_pytest.py"), "w") as fh:
                fh.write(fake_pytest)
            real = subprocess.run(["bash", "-c", "command -v python3"], capture_output=True, text=True).stdout.strip()
            stand_in(fake, "python3", 'if [ "$1" = -m ] && [ "$2" = pytest ]; then exec %s %s/fake_pytest.py "$@"; fi\n'
                     'exec %s "$@"' % (real, d, real))
            work = os.path.join(d, "w")
            os.mkdir(work)
            with open(os.path.join(work, "collected-ids.txt"), "w") as fh:
                fh.write("".join("g.py::K::%s\n" % n for n in ("t_a", "t_b", "t_rec", "t_order", "t_env", "t_c")))
            env = {"PEER_JOBS": "2", "peer_suite": d}
            logs = []
            for r in ("1", "2"):
                code, out, err = run(["__call", "peer_round_pair", work, r], env, path_first=fake)
                self.assertEqual(code, 0, out + err)
                logs.append(out)
            self.assertRegex(logs[0], r"6 tests in 2 shards \(round 1\)")
            self.assertIn("run again (same order and seed): 2 test(s) whose pair differed", logs[0])
            self.assertIn("1 changed by recording, 1 flaky", logs[0])
            # Each rerun ran its shard's tests up to the test, no further.
            for n in ("1", "2"):
                with open(os.path.join(work, "recorded-1-again", n + ".xml")) as fh:
                    ran = re.findall(r"name='(t_\w+)'", fh.read())
                self.assertIn(ran[-1], ("t_rec", "t_env"))
            for r in ("1", "2"):
                for mode in ("unrecorded", "recorded"):
                    self.assertEqual(len([f for f in os.listdir(os.path.join(work, "%s-%s" % (mode, r)))
                                          if f.endswith(".xml")]), 2)
            code, out, err = run(["__call", "peer_compare_paired", work, "1", "2"], env, path_first=fake)
            self.assertEqual(code, 1, out + err)
            self.assertIn("changed g.K::t_rec: unrecorded passed/passed, recorded failed/failed", out)
            self.assertIn("flaky   g.K::t_order: unrecorded passed/failed, recorded passed/failed", out)
            self.assertIn("flaky   g.K::t_env: unrecorded failed/failed, recorded passed/passed", out)
            self.assertIn("6 tests in 2 unrecorded and 2 recorded rounds (paired): 3 same, 1 changed by recording, 2 flaky", out)


if __name__ == "__main__":
    unittest.main()
