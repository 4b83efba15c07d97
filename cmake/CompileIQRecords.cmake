#[=======================================================================[.rst:
CompileIQRecords
----------------

Internal to ``compileiq_cmake``: the records layer of the
:module:`CompileIQ` module (see its *Layers*): the identities an entry of
the flags file is recorded with (sha256 of the sources and of the compile
flags), compared by the apply and written by the variant trees, and the
check records ``compileiq-cmake check`` reads.

Provides
^^^^^^^^

``_compileiq_sources_sha256(<target> <out-var> [<header>...])``
  The sha256 of a target's source files and the given headers (the rule of
  ``sources_sha256``; the Python side's ``project/depscan.sources_sha256``
  hashes the same lines the same way).
``_compileiq_source_lines(<target> <out-var>)``
  The ``<path>\t<sha256>`` lines of its source files.
``_compileiq_flags_sha256(<target> <lang> <config> <out-var>)``
  The sha256 of ``CMAKE_<LANG>_FLAGS`` and ``CMAKE_<LANG>_FLAGS_<CONFIG>``
  as the target's directory sees them, CUDA architecture options left out.
``_compileiq_check_record(<target> <arch> <status> <text>)``
  One line ``<target>\t<arch>\t<status>\t<text>`` appended to
  ``COMPILEIQ_CHECK_FILE`` when that variable names a file.

Requires
^^^^^^^^

:module:`CompileIQArch` (``_compileiq_strip_arch_options``), which it
includes.

Called by
^^^^^^^^^

:module:`CompileIQApply` and ``compileiq_variant.cmake``.
#]=======================================================================]

include_guard(GLOBAL)
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...4.4)
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQArch.cmake")

# _compileiq_sources_sha256(<target> <out-var> [<header>...])
#   The identity of the sources a target is built from: the sha256 over the
#   lines "<path relative to the top-level source dir><TAB><sha256 of the
#   file>" of its existing source files (SOURCES; generator expressions and
#   files in the build tree left out) and of the <header>s (paths relative
#   to the top-level source dir: the headers the tune found the target's
#   compiles include; "missing" for one that is gone), sorted.  The tool
#   reads the source lines from its variant trees (_compileiq_source_lines)
#   and hashes them with the headers' the same way, so the two always agree.
function(_compileiq_sources_sha256 target out)
  _compileiq_source_lines("${target}" lines)
  foreach(rel IN LISTS ARGN)
    cmake_path(ABSOLUTE_PATH rel BASE_DIRECTORY "${CMAKE_SOURCE_DIR}" NORMALIZE OUTPUT_VARIABLE abs)
    if(EXISTS "${abs}" AND NOT IS_DIRECTORY "${abs}")
      file(SHA256 "${abs}" digest)
    else()
      set(digest "missing")
    endif()
    list(APPEND lines "${rel}\t${digest}")
  endforeach()
  list(SORT lines)
  list(JOIN lines "\n" text)
  string(SHA256 digest "${text}")
  set(${out} "${digest}" PARENT_SCOPE)
endfunction()

# _compileiq_source_lines(<target> <out-var>): the source files' lines of _compileiq_sources_sha256.
function(_compileiq_source_lines target out)
  get_target_property(sources "${target}" SOURCES)
  get_target_property(dir "${target}" SOURCE_DIR)
  set(lines "")
  foreach(src IN LISTS sources)
    if(src MATCHES "\\$<")
      continue()
    endif()
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${dir}" NORMALIZE OUTPUT_VARIABLE abs)
    cmake_path(IS_PREFIX CMAKE_BINARY_DIR "${abs}" NORMALIZE in_build_tree)
    if(in_build_tree OR NOT EXISTS "${abs}" OR IS_DIRECTORY "${abs}")
      continue()
    endif()
    file(SHA256 "${abs}" digest)
    cmake_path(RELATIVE_PATH abs BASE_DIRECTORY "${CMAKE_SOURCE_DIR}" OUTPUT_VARIABLE rel)
    list(APPEND lines "${rel}\t${digest}")
  endforeach()
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# _compileiq_flags_sha256(<target> <lang> <config> <out-var>)
#   The identity of the compile flags a configure gives <target> from outside its own code: the sha256
#   of CMAKE_<LANG>_FLAGS and CMAKE_<LANG>_FLAGS_<CONFIG> as the target's directory sees them (cache or
#   directory values; CUDA architecture options left out: the variant trees set the architecture).  The
#   tune records it from its variant tree (compileiq_variant.cmake) and the apply compares it: one rule.
function(_compileiq_flags_sha256 target lang config out)
  get_target_property(dir "${target}" SOURCE_DIR)
  string(TOUPPER "${config}" config)
  set(text "")
  foreach(var IN ITEMS "CMAKE_${lang}_FLAGS" "CMAKE_${lang}_FLAGS_${config}")
    get_directory_property(value DIRECTORY "${dir}" DEFINITION "${var}")
    separate_arguments(args UNIX_COMMAND "${value}")
    if(lang STREQUAL "CUDA")
      _compileiq_strip_arch_options(args)
    endif()
    list(JOIN args " " kept)
    string(APPEND text "${var}=${kept}\n")
  endforeach()
  string(SHA256 digest "${text}")
  set(${out} "${digest}" PARENT_SCOPE)
endfunction()

# compileiq-cmake check: with COMPILEIQ_CHECK_FILE set, each entry's outcome as one line
# "<target>\t<arch>\t<applied|ignored|stale>\t<why>" (the apply's own decision, read by check.py).
function(_compileiq_check_record target arch status text)
  if(DEFINED COMPILEIQ_CHECK_FILE AND NOT "${COMPILEIQ_CHECK_FILE}" STREQUAL "")
    file(APPEND "${COMPILEIQ_CHECK_FILE}" "${target}\t${arch}\t${status}\t${text}\n")
  endif()
endfunction()

cmake_policy(POP)
