"""compileiq_cmake: find the fastest safe compiler flags for CMake targets and apply them."""

__version__ = "0.1.0"
