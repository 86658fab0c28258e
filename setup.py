"""Build of the optional C extension; all metadata lives in pyproject.toml.

``optional=True``: without a working C compiler (``CC=false``) the install still succeeds,
without ``aiobench.engines._native``, and aiobench runs on its Python engine.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "aiobench.engines._native",
            ["aiobench/engines/_native.c"],
            optional=True,
            extra_compile_args=["-std=gnu11", "-Wextra", "-Wno-unused-parameter"],
        ),
        # The latency recorders' folding (without it, numpy folds them).
        Extension(
            "aiobench.stats._hdrfold",
            ["aiobench/stats/_hdrfold.c"],
            optional=True,
            extra_compile_args=["-std=gnu11", "-Wextra", "-Wno-unused-parameter"],
        ),
        # Netbench's data path (--netbench): optional likewise.
        Extension(
            "aiobench.engines.net._netnative",
            ["aiobench/engines/net/_netnative.c"],
            optional=True,
            extra_compile_args=["-std=gnu11", "-Wextra", "-Wno-unused-parameter"],
        ),
        # The S3 engine's request loop for small objects: optional likewise (without it the
        # S3 engine makes every request on the event loop).
        Extension(
            "aiobench.engines.s3._s3native",
            ["aiobench/engines/s3/_s3native.c"],
            optional=True,
            extra_compile_args=["-std=gnu11", "-Wextra", "-Wno-unused-parameter"],
        ),
    ]
)
