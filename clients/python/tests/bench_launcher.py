"""The tensorsocket launcher script the benchmarks' tests hand to their benchmark, or the test skipped saying why."""
import unittest


def launcher_or_skip(test: unittest.TestCase) -> str:
    """This checkout's (or the installed package's) launcher script; skips ``test`` where there is none."""
    from tensorsocket_client.directory import launcher_command
    found = launcher_command()
    if found is None or len(found[0]) != 1:
        test.skipTest("no tensorsocket launcher script (build the command line first)")
    return found[0][0]
