"""The wheel's launcher (tensorsocket_bundle) on a bundle laid out in a temporary folder: which Java it chooses,
how it reads a runtime's version, and what it says of missing, cut and altered files."""

import hashlib
import os
import stat
import subprocess
import tempfile
import unittest
from pathlib import Path

import tensorsocket_bundle as bundle


def make_bundle(root: Path) -> Path:
    home = root / "tensorsocket_bundle"
    java = home / "java" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    (home / "java" / "release").write_text('JAVA_VERSION="25.0.3"\n')
    (home / "lib").mkdir()
    (home / "lib" / "tensorsocket-cli.jar").write_bytes(b"jar bytes" * 100)
    lines = []
    for p in sorted(home.rglob("*")):
        if p.is_file():
            lines.append("%d %s %s\n" % (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest(),
                                         p.relative_to(home).as_posix()))
    (home / "FILES").write_text("".join(lines))
    return home


def fake_jdk(root: Path, version: str) -> Path:
    jdk = root / ("jdk-" + version)
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text("#!/bin/sh\n")
    (jdk / "bin" / "java").chmod(0o755)
    (jdk / "release").write_text('IMPLEMENTOR="x"\nJAVA_VERSION="%s"\n' % version)
    return jdk


class BundleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        self.home = make_bundle(self.root)

    def tearDown(self):
        self.tmp.cleanup()

    def test_java_version_reads_the_release_file_of_old_and_new_numbering(self):
        self.assertEqual(25, bundle.java_version(fake_jdk(self.root, "25.0.3")))
        self.assertEqual(26, bundle.java_version(fake_jdk(self.root, "26-ea")))
        self.assertEqual(8, bundle.java_version(fake_jdk(self.root, "1.8.0_412")))
        self.assertIsNone(bundle.java_version(self.root / "nothing-here"))

    def test_a_java_home_of_25_or_newer_wins_and_an_older_one_is_passed_over_with_a_warning(self):
        warnings = []
        new = fake_jdk(self.root, "25.0.1")
        java, why = bundle.choose_java({"JAVA_HOME": str(new)}, self.home, warnings.append)
        self.assertEqual((str(new / "bin" / "java"), "chosen by JAVA_HOME"), (java, why))
        self.assertEqual([], warnings)
        old = fake_jdk(self.root, "17.0.15")
        java, why = bundle.choose_java({"JAVA_HOME": str(old)}, self.home, warnings.append)
        self.assertEqual(str(self.home / "java" / "bin" / "java"), java)
        self.assertEqual("bundled with the tensorsocket wheel", why)
        self.assertIn("JAVA_HOME=%s holds Java 17; the producer needs 25 or newer" % old, warnings[0])
        java, _ = bundle.choose_java({}, self.home, warnings.append)
        self.assertEqual(str(self.home / "java" / "bin" / "java"), java)
        self.assertEqual(1, len(warnings), "no JAVA_HOME: nothing to warn about")

    def test_the_command_runs_the_cli_on_the_bundled_jars_and_says_why_that_java(self):
        cmd = bundle.command(["serve", "--name", "x"], {}, self.home)
        self.assertEqual(str(self.home / "java" / "bin" / "java"), cmd[0])
        self.assertIn("-Dtensorsocket.runtime=bundled with the tensorsocket wheel", cmd)
        self.assertEqual(["-cp", str(self.home / "lib" / "tensorsocket-cli.jar"), bundle.MAIN_CLASS, "serve", "--name",
                          "x"], cmd[-6:])
        self.assertFalse(any(a.startswith("-XX:AOTCache") for a in cmd), "no cache in this bundle")
        self.assertIn("--enable-native-access=ALL-UNNAMED", cmd)
        cmd = bundle.command([], {"TENSORSOCKET_JAVA_OPTS": "-Xmx1g -Dfoo=1"}, self.home)
        self.assertIn("-Xmx1g", cmd)
        self.assertIn("-Dfoo=1", cmd)

    def test_the_bundled_runtime_starts_from_its_cache_after_the_jars_get_their_recorded_time_back(self):
        lib = self.home / "lib"
        (lib / "picocli.jar").write_bytes(b"p")
        (lib / "tensorsocket.aot").write_bytes(b"cache")
        cmd = bundle.command([], {}, self.home)
        self.assertIn("-XX:AOTCache=%s" % (lib / "tensorsocket.aot"), cmd)
        # the class path the cache was trained with: every jar, in name order
        self.assertEqual(os.pathsep.join([str(lib / "picocli.jar"), str(lib / "tensorsocket-cli.jar")]),
                         cmd[cmd.index("-cp") + 1])
        for jar in lib.glob("*.jar"):
            self.assertEqual(bundle.AOT_STAMP, int(jar.stat().st_mtime), jar)
        # a bundle with a class-path jar passes that one jar, whose manifest lists the others in one order
        (lib / "tensorsocket-classpath.jar").write_bytes(b"manifest")
        cmd = bundle.command([], {}, self.home)
        self.assertEqual(str(lib / "tensorsocket-classpath.jar"), cmd[cmd.index("-cp") + 1])
        (lib / "tensorsocket-classpath.jar").unlink()
        # a jar changed after the times were set back keeps its new time: the cache is no longer used
        jar = lib / "picocli.jar"
        jar.write_bytes(b"q")
        self.assertFalse(any(a.startswith("-XX:AOTCache") for a in bundle.command([], {}, self.home)))
        # a runtime chosen by JAVA_HOME is not the one the cache was made by, and TENSORSOCKET_NO_AOT declines it
        other = fake_jdk(self.root, "25")
        self.assertFalse(any(a.startswith("-XX:AOTCache")
                             for a in bundle.command([], {"JAVA_HOME": str(other)}, self.home)))
        self.assertFalse(any(a.startswith("-XX:AOTCache")
                             for a in bundle.command([], {"TENSORSOCKET_NO_AOT": "1"}, self.home)))

    def test_a_missing_or_cut_file_fails_naming_it_and_how_to_reinstall(self):
        self.assertEqual(3, bundle.verify(self.home, hashes=True))
        jar = self.home / "lib" / "tensorsocket-cli.jar"
        jar.write_bytes(b"cut")
        with self.assertRaises(bundle.BundleError) as e:
            bundle.command([], {}, self.home)
        self.assertIn("lib/tensorsocket-cli.jar has 3 bytes, not 900", str(e.exception))
        self.assertIn("pip install --force-reinstall", str(e.exception))
        jar.unlink()
        with self.assertRaises(bundle.BundleError) as e:
            bundle.verify(self.home)
        self.assertIn("lib/tensorsocket-cli.jar is missing", str(e.exception))

    def test_other_bytes_of_the_same_size_are_found_by_the_hash_check_only(self):
        jar = self.home / "lib" / "tensorsocket-cli.jar"
        jar.write_bytes(b"JAR BYTES" * 100)
        bundle.verify(self.home)  # sizes agree
        with self.assertRaises(bundle.BundleError) as e:
            bundle.verify(self.home, hashes=True)
        self.assertIn("lib/tensorsocket-cli.jar has other bytes than the wheel's", str(e.exception))

    def test_a_java_that_lost_its_execute_bit_is_damage_and_with_java_home_only_the_jars_count(self):
        java = self.home / "java" / "bin" / "java"
        java.chmod(java.stat().st_mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
        if os.access(str(java), os.X_OK):
            self.skipTest("running as a user who may execute anything")
        with self.assertRaises(bundle.BundleError) as e:
            bundle.command([], {}, self.home)
        self.assertIn("java/bin/java is not executable", str(e.exception))
        new = fake_jdk(self.root, "25")
        self.assertEqual(str(new / "bin" / "java"), bundle.command([], {"JAVA_HOME": str(new)}, self.home)[0])

    def test_an_unreadable_list_of_files_is_damage_too(self):
        (self.home / "FILES").write_text("not a line of sizes and hashes\n")
        with self.assertRaises(bundle.BundleError) as e:
            bundle.verify(self.home)
        self.assertIn("its list of files (FILES) cannot be read", str(e.exception))

    def test_a_source_install_carries_no_bundle(self):
        self.assertTrue(bundle.present(self.home))
        self.assertFalse(bundle.present(self.root / "elsewhere"))


if __name__ == "__main__":
    unittest.main()


SCRIPT = Path(__file__).resolve().parents[3] / "bin" / "copy-tuning"


class CopyTuningTest(unittest.TestCase):
    """The C library's non-temporal threshold: lowered to three quarters of the L3 cache where glibc (here a script
    printing what ``ld.so --list-tunables`` prints) states more, never raised, never over the user's setting; and
    bin/copy-tuning, which bin/tensorsocket runs, deciding the same in every case."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        self.l3 = self.root / "size"
        self.l3.write_text("32768K\n")

    def tearDown(self):
        self.tmp.cleanup()

    def loader(self, threshold):
        script = self.root / "ld.so"
        script.write_text("#!/bin/sh\necho 'glibc.cpu.x86_rep_movsb_threshold: 0x840 (min: 0x100, max: 0xffff)'\n"
                          "echo 'glibc.cpu.x86_non_temporal_threshold: %s (min: 0x4040, max: 0xfffffff)'\n" % threshold)
        script.chmod(0o755)
        return script

    def decide(self, l3=None, loader=None):
        """What the client's rule decides, after checking that bin/copy-tuning prints the same."""
        args = [str(a) for a in (l3, loader) if a is not None]
        given = {k: v for k, v in (("l3_size", l3), ("loader", loader)) if v is not None}
        ours = bundle.copy_tuning({}, **given)
        if SCRIPT.is_file():
            shell = subprocess.run(["bash", str(SCRIPT)] + args, capture_output=True, text=True, timeout=60)
            self.assertEqual(0, shell.returncode, shell.stderr)
            self.assertEqual(ours or "", shell.stdout.strip(), "bin/copy-tuning %s" % " ".join(args))
        return ours

    def test_a_threshold_above_three_quarters_of_the_l3_is_lowered_to_that(self):
        self.assertEqual("glibc.cpu.x86_non_temporal_threshold=25165824", self.decide(self.l3, self.loader("0xc000000")))

    def test_a_threshold_at_or_below_it_is_kept(self):
        self.assertIsNone(self.decide(self.l3, self.loader("0x1800000")))
        self.assertIsNone(self.decide(self.l3, self.loader("0x300000")))

    def test_no_cache_size_no_loader_or_no_such_tunable_changes_nothing(self):
        self.assertIsNone(self.decide(self.root / "absent", self.loader("0xc000000")))
        self.assertIsNone(self.decide(self.l3, self.root / "absent"))
        self.assertIsNone(self.decide(self.l3, self.loader("")))

    def test_this_machine_is_decided_alike(self):
        self.decide()

    def test_the_users_setting_wins_even_an_empty_one(self):
        self.assertIsNone(bundle.copy_tuning({"GLIBC_TUNABLES": ""}, self.l3, self.loader("0xc000000")))
        self.assertEqual("x=1", bundle.environment({"GLIBC_TUNABLES": "x=1"})["GLIBC_TUNABLES"])

    def test_the_producers_environment_carries_it(self):
        self.assertEqual(bundle.copy_tuning({}), bundle.environment({"PATH": os.environ.get("PATH", "")}).get("GLIBC_TUNABLES"))


class LauncherOrderTest(unittest.TestCase):
    """Which tensorsocket the client starts: TENSORSOCKET_LAUNCHER, then one on PATH, then the bundle; asked of
    copies of the two packages outside this checkout (whose bin/tensorsocket would come before the bundle)."""

    PROBE = ("import json, tensorsocket_bundle as b; from tensorsocket_client.directory import launcher_command\n"
             "found = launcher_command()\n"
             "print(json.dumps(None if found is None else [found[0], found[1] is not None]))")

    def test_an_explicit_launcher_then_one_on_path_then_the_bundle(self):
        import json
        import shutil
        import subprocess
        import sys
        with tempfile.TemporaryDirectory() as tmp:
            site = Path(tmp) / "site"
            for package in ("tensorsocket_client", "tensorsocket_bundle"):
                shutil.copytree(Path(__file__).resolve().parents[1] / package, site / package,
                                ignore=shutil.ignore_patterns("__pycache__"))
            on_path = Path(tmp) / "bin"
            on_path.mkdir()
            (on_path / "tensorsocket").write_text("#!/bin/sh\n")
            (on_path / "tensorsocket").chmod(0o755)

            def probe(**env):
                base = {"PYTHONPATH": str(site), "PATH": str(Path(tmp) / "empty"), "HOME": tmp}
                out = subprocess.run([sys.executable, "-c", self.PROBE], env=dict(base, **env), capture_output=True,
                                     text=True, timeout=60, cwd=tmp)
                self.assertEqual(0, out.returncode, out.stderr)
                return json.loads(out.stdout)

            self.assertIsNone(probe(), "a source install without the bundle finds none")
            make_bundle(site)  # the copy now carries a (fake) runtime and its FILES
            argv, named = probe()
            self.assertEqual(str(site / "tensorsocket_bundle" / "java" / "bin" / "java"), argv[0], "neither set: the bundle")
            self.assertTrue(named, "the bundle's producer gets TENSORSOCKET_LAUNCHER for its messages")
            self.assertEqual([[str(on_path / "tensorsocket")], False], probe(PATH=str(on_path)))
            self.assertEqual([["/opt/ts/bin/tensorsocket"], False],
                             probe(PATH=str(on_path), TENSORSOCKET_LAUNCHER="/opt/ts/bin/tensorsocket"))
