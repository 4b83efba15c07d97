#[=======================================================================[.rst:
compileiq_apply
---------------

Apply the tuned flags of ``compileiq.toml`` to a project that does not use
``compileiq_cmake`` itself:

.. code-block:: console

  $ cmake -S src -B build \
      -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=<cmake-dir>/compileiq_apply.cmake

where ``<cmake-dir>`` is the directory of this file.  CMake includes it at the first
``project()`` call; at the end of the top-level directory, when all targets
exist, the flags file is applied exactly as ``compileiq_tune()`` does it, and
the cache variables ``COMPILEIQ_APPLY``, ``COMPILEIQ_TUNE`` and
``COMPILEIQ_FLAGS_FILE`` of the :module:`CompileIQ` module have the same
meaning.  A ``find_package(compileiq_cmake)`` in the project does not apply
the flags a second time.
#]=======================================================================]

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/compileiq_cmakeConfig.cmake")
_compileiq_schedule_apply()
