#[=======================================================================[.rst:
compileiq_cmakeConfigVersion (found through the Python environment)
-------------------------------------------------------------------

The version file beside ``compileiq_cmakeConfig.cmake`` in
``<prefix>/share/cmake/compileiq_cmake/``: the package's own version file,
which reads the Python package's ``__version__``.
#]=======================================================================]

include("${CMAKE_CURRENT_LIST_DIR}/compileiq_cmakeLocate.cmake")
if(_compileiq_real_dir STREQUAL "" OR NOT EXISTS "${_compileiq_real_dir}/compileiq_cmakeConfigVersion.cmake")
  set(PACKAGE_VERSION "")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)  # no Python package beside it: a damaged installation
  return()
endif()
include("${_compileiq_real_dir}/compileiq_cmakeConfigVersion.cmake")
