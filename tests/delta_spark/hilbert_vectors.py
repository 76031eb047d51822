"""delta-spark's own Hilbert indices, as test vectors for
``tests/spark/write/test_hilbert.py``: 200 random points for each of 2, 3 and
4 dimensions, each with the index delta-spark's ``HilbertIndex`` state tables
give it (``translateNPointToDKey``, what its ``hilbert_index`` expression
computes), asked of the delta-spark jar through ``jshell``.

    python -m tests.delta_spark.hilbert_vectors   # rewrites tests/spark/write/hilbert_delta_spark.json
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.jar_cache import jars

VECTORS = Path(__file__).resolve().parents[1] / "spark" / "write" / "hilbert_delta_spark.json"
#: Bits per coordinate for each number of dimensions (indices fit a long).
BITS = {2: 6, 3: 4, 4: 3}
POINTS = 200

_SCRIPT = """
import org.apache.spark.sql.delta.expressions.*;
var rng = new java.util.Random(25);
var out = new StringBuilder();
for (int n : new int[] {%(dimensions)s}) {
  int bits = new int[] {%(bits)s}[n - 2];
  var p2d = HilbertIndex.getStateGenerator(n).generateStateList().getNPointToDKeyStateMap();
  for (int t = 0; t < %(points)d; t++) {
    int[] p = new int[n];
    for (int j = 0; j < n; j++) p[j] = rng.nextInt(1 << bits);
    out.append("VECTOR " + bits + " " + java.util.Arrays.toString(p) + " " + p2d.translateNPointToDKey(p, bits) + "\\n");
  }
}
System.out.print(out);
/exit
"""


def delta_spark_vectors() -> list[tuple[int, list[int], int]]:
    """(bits, point, delta-spark's index) for the points above; needs ``jshell`` and the test jars."""
    jshell = shutil.which("jshell")
    if jshell is None:
        raise RuntimeError("jshell (a JDK) is needed to ask delta-spark for its Hilbert indices")
    pyspark_jars = Path(__import__("pyspark").__file__).parent / "jars"
    classpath = [*jars("delta-spark"), *map(str, pyspark_jars.glob("scala-library-*.jar"))]
    script = _SCRIPT % {
        "dimensions": ", ".join(map(str, BITS)),
        "bits": ", ".join(str(BITS[n]) for n in sorted(BITS)),
        "points": POINTS,
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vectors.jsh"
        path.write_text(script)
        done = subprocess.run(
            [jshell, "--class-path", ":".join(classpath), str(path)],
            capture_output=True, text=True, timeout=300, check=True,
        )  # fmt: skip
    vectors = []
    for line in done.stdout.splitlines():
        if line.startswith("VECTOR "):
            _tag, bits, rest = line.split(" ", 2)
            point, index = rest.rsplit(" ", 1)
            vectors.append((int(bits), json.loads(point), int(index)))
    if len(vectors) != POINTS * len(BITS):
        raise RuntimeError(f"jshell printed {len(vectors)} vectors:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return vectors


def main() -> int:
    VECTORS.write_text(json.dumps(delta_spark_vectors()) + "\n")
    print(f"wrote {VECTORS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
