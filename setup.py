"""Builds the optional native kernels of the lean decoder (gdg_lsp/backends/lean/qkernels.cpp).

Everything else about the package is in pyproject.toml. The extension is optional: where
it cannot be compiled (no C++ compiler, another architecture) the install goes on without
it and the decoder widens GGUF weights instead (``gdg_lsp.backends.lean.native``). It is
compiled for plain x86-64 (each kernel carries its own AVX2 / AVX512-VNNI target and is
chosen at run time), so a wheel built on one machine runs on another.
"""

import platform

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

X86 = platform.machine().lower() in ("x86_64", "amd64")


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing when the kernels cannot be compiled."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as err:  # no compiler at all
            self.warn(f"the native kernels were not built ({err}); GGUF weights will be widened")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as err:
            self.warn(f"the native kernels were not built ({err}); GGUF weights will be widened")


kernels = Extension(
    "gdg_lsp.backends.lean._qkernels",
    sources=["gdg_lsp/backends/lean/qkernels.cpp"],
    language="c++",
    # -fopenmp: the loops share torch's OpenMP threads (libgomp.so.1, already loaded by torch)
    extra_compile_args=["-O3", "-std=c++17", "-fopenmp", "-Wno-maybe-uninitialized"],
    extra_link_args=["-fopenmp"],
    optional=True,
)

setup(ext_modules=[kernels] if X86 else [], cmdclass={"build_ext": OptionalBuildExt})
