#[=======================================================================[.rst:
compileiq_cmakeLocate
---------------------

Internal to the package files that ``pip`` installs into
``<prefix>/share/cmake/compileiq_cmake/`` (the wheel's data, beside the
``compileiq-cmake`` script in ``<prefix>/bin``): ``find_package`` searches
``<prefix>`` for each ``<prefix>/bin`` on ``PATH``, so an activated virtual
environment (or a ``pip install --user`` whose ``~/.local/bin`` is on
``PATH``) finds ``compileiq_cmake`` with no ``-Dcompileiq_cmake_DIR``.  Sets
``_compileiq_real_dir`` to the Python package's own CMake directory,
``<prefix>/lib/pythonX.Y/site-packages/compileiq_cmake/cmake`` (the newest
Python's where several have it), or to "" where none has it.
#]=======================================================================]

cmake_path(GET CMAKE_CURRENT_LIST_DIR PARENT_PATH _compileiq_share)  # <prefix>/share/cmake
cmake_path(GET _compileiq_share PARENT_PATH _compileiq_share)  # <prefix>/share
cmake_path(GET _compileiq_share PARENT_PATH _compileiq_prefix)  # <prefix>
file(GLOB _compileiq_real_dirs LIST_DIRECTORIES true
  "${_compileiq_prefix}/lib/python3*/site-packages/compileiq_cmake/cmake"
  "${_compileiq_prefix}/lib/python3*/dist-packages/compileiq_cmake/cmake"
  "${_compileiq_prefix}/Lib/site-packages/compileiq_cmake/cmake")
list(FILTER _compileiq_real_dirs INCLUDE REGEX "/compileiq_cmake/cmake$")
list(SORT _compileiq_real_dirs COMPARE NATURAL)
set(_compileiq_real_dir "")
if(_compileiq_real_dirs)
  list(GET _compileiq_real_dirs -1 _compileiq_real_dir)
endif()
unset(_compileiq_real_dirs)
unset(_compileiq_share)
