"""moto's S3 server, with conditional PUTs made atomic as S3's are.

moto checks ``If-None-Match: *`` and then writes, with no lock between the
two, so under load two concurrent creates of one key can both succeed and the
second overwrites the first. Real S3 lets exactly one win, and the commit
protocol relies on that. The fixtures start moto through this script:
``python tests/moto_s3_server.py -H 127.0.0.1 -p PORT``.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

# Run as a script, its folder comes first on sys.path, and tests/requests would shadow the requests package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from moto.s3.responses import S3Response  # noqa: E402
from moto.server import main  # noqa: E402

_lock = threading.Lock()
_put_object = S3Response.put_object


def _atomic_put_object(self: S3Response):  # type: ignore[no-untyped-def]
    with _lock:
        return _put_object(self)


S3Response.put_object = _atomic_put_object  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
