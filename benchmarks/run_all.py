"""Run every ``benchmarks/bench_*.py`` and print their tables.

Each benchmark is its own program (its own process, so one's imports and
caches do not colour another's timings) that prints a markdown table and
writes its JSON results to ``benchmarks/results/``. Arguments after the
runner's own are passed to every benchmark, e.g. ``--quick``.

    python benchmarks/run_all.py [--only NAME]... [--quick] [...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover(only: list[str] | None = None) -> list[Path]:
    """The benchmark scripts, by name; ``only`` keeps those whose name contains one of its words."""
    scripts = sorted(HERE.glob("bench_*.py"))
    if only:
        scripts = [s for s in scripts if any(word in s.stem for word in only)]
    return scripts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every benchmarks/bench_*.py.")
    parser.add_argument("--only", action="append", help="run only benchmarks whose name contains this")
    args, passthrough = parser.parse_known_args(argv)
    scripts = discover(args.only)
    if not scripts:
        print("no benchmarks found", file=sys.stderr)
        return 1
    failed = []
    for script in scripts:
        print(f"# {script.stem}\n", flush=True)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(script), *passthrough], cwd=HERE.parent)
        took = time.perf_counter() - start
        status = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
        print(f"\n_{script.name}: {status} in {took:.0f} s_\n", flush=True)
        if proc.returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
