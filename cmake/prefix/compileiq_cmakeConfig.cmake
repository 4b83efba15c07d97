#[=======================================================================[.rst:
compileiq_cmakeConfig (found through the Python environment)
------------------------------------------------------------

Installed by ``pip install compileiq-cmake`` into
``<prefix>/share/cmake/compileiq_cmake/`` (see ``compileiq_cmakeLocate.cmake``
beside it): loads the package's own configuration file, which lies with the
Python package, so that ``find_package(compileiq_cmake CONFIG)`` works as soon
as the Python environment's ``bin`` directory is on ``PATH``.
#]=======================================================================]

include("${CMAKE_CURRENT_LIST_DIR}/compileiq_cmakeLocate.cmake")
if(_compileiq_real_dir STREQUAL "" OR NOT EXISTS "${_compileiq_real_dir}/compileiq_cmakeConfig.cmake")
  # cmake-lint: disable=C0103
  set(compileiq_cmake_FOUND FALSE)  # the names find_package reads
  set(compileiq_cmake_NOT_FOUND_MESSAGE "${CMAKE_CURRENT_LIST_DIR} was installed with compileiq-cmake, but \
no Python package compileiq_cmake lies under ${_compileiq_prefix}: reinstall it (pip install compileiq-cmake)")
  return()
endif()
include("${_compileiq_real_dir}/compileiq_cmakeConfig.cmake")
