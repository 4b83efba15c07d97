#[=======================================================================[.rst:
compileiq_cmakeConfig
---------------------

Package configuration file of ``compileiq_cmake``.  Load it with:

.. code-block:: cmake

  find_package(compileiq_cmake 0.1 REQUIRED)

It provides the ``compileiq_tune()`` command of the :module:`CompileIQ`
module (see ``CompileIQ.cmake`` beside this file) and finds the Python
interpreter that runs the ``compileiq_cmake`` Python package.

Cache Variables
^^^^^^^^^^^^^^^

``COMPILEIQ_PYTHON``
  The Python interpreter (3.11 or newer) that can run
  ``python -m compileiq_cmake``.  Set it to pick another one.  When unset:

  * installed with the Python package (this file lies in
    ``<prefix>/lib/pythonX.Y/site-packages/compileiq_cmake/cmake``): the
    interpreter of that prefix, ``<prefix>/bin/python3``;
  * in a source checkout (this file lies in ``<repo>/cmake``):
    ``find_package(Python3 3.11 COMPONENTS Interpreter)``, and the package is
    imported from ``<repo>`` through ``PYTHONPATH``.

  If no interpreter is found, configuring still succeeds; the first command
  that needs Python then stops with an error.
#]=======================================================================]

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/compileiq_project_policies.cmake")
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...4.4)

# Find the interpreter for this layout.  Results: <out_python> (may be empty)
# and <out_path>, the PYTHONPATH the package needs (empty when installed).
function(_compileiq_find_python out_python out_path)
  set(dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  cmake_path(GET dir PARENT_PATH pkg)         # .../compileiq_cmake
  cmake_path(GET pkg PARENT_PATH site)        # .../site-packages or <repo>'s parent
  cmake_path(GET site FILENAME site_name)
  set(python "")
  set(path "")
  if(site_name MATCHES "^(site|dist)-packages$")
    # <prefix>/lib/pythonX.Y/site-packages/compileiq_cmake/cmake
    cmake_path(GET site PARENT_PATH pyver_dir)
    cmake_path(GET pyver_dir PARENT_PATH lib_dir)
    cmake_path(GET lib_dir PARENT_PATH prefix)
    cmake_path(GET pyver_dir FILENAME pyver)
    foreach(candidate IN ITEMS "${prefix}/bin/python3" "${lib_dir}/Scripts/python.exe")
      if(EXISTS "${candidate}" AND NOT IS_DIRECTORY "${candidate}")
        set(python "${candidate}")
        break()
      endif()
    endforeach()
    if(NOT python)
      # e.g. a --user or --target install: any interpreter of that version,
      # told where the package lies.
      set(version "3.11")
      if(pyver MATCHES "^python([0-9]+\\.[0-9]+)$")
        set(version "${CMAKE_MATCH_1}")
      endif()
      find_package(Python3 ${version} QUIET COMPONENTS Interpreter)
      set(python "${Python3_EXECUTABLE}")
      set(path "${site}")
    endif()
  else()
    # Source checkout: <repo>/cmake, package in <repo>/compileiq_cmake.
    find_package(Python3 3.11 QUIET COMPONENTS Interpreter)
    set(python "${Python3_EXECUTABLE}")
    set(path "${pkg}")
  endif()
  set(${out_python} "${python}" PARENT_SCOPE)
  set(${out_path} "${path}" PARENT_SCOPE)
endfunction()

_compileiq_find_python(_compileiq_python _compileiq_pythonpath)
if(NOT COMPILEIQ_PYTHON AND _compileiq_python)
  set(COMPILEIQ_PYTHON "${_compileiq_python}" CACHE FILEPATH
    "Python interpreter (3.11+) that runs the compileiq_cmake package." FORCE)
endif()
set(COMPILEIQ_PYTHON "" CACHE FILEPATH
  "Python interpreter (3.11+) that runs the compileiq_cmake package.")
set(COMPILEIQ_PYTHONPATH "${_compileiq_pythonpath}" CACHE INTERNAL
  "PYTHONPATH under which COMPILEIQ_PYTHON imports compileiq_cmake.")
unset(_compileiq_python)
unset(_compileiq_pythonpath)

# _compileiq_python_command(<out-var>), the command line that runs the package with these two
# variables, is in CompileIQCommon.cmake (included by CompileIQ.cmake).

include("${CMAKE_CURRENT_LIST_DIR}/CompileIQ.cmake")

cmake_policy(POP)
