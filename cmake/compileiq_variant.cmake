#[=======================================================================[.rst:
compileiq_variant
-----------------

Internal to ``compileiq_cmake``: turns a build tree of the tuned project into
a *variant tree*, where one target gets one trial's flags.  The tool
configures such trees with:

.. code-block:: console

  $ cmake -S <src> -B <tree> \
      -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=<cmake-dir>/compileiq_variant.cmake \
      -DCOMPILEIQ_VARIANT_FRAGMENT=<tree>/compileiq_trial_flags.cmake

The fragment, rendered from ``templates/variant_flags.cmake.j2``, sets
``COMPILEIQ_VARIANT_TARGET``, ``COMPILEIQ_VARIANT_LANGUAGE`` (``CUDA``,
``CXX`` or ``C``), ``COMPILEIQ_VARIANT_CUDA_ARCH`` (e.g. ``90``; empty for
host targets) and ``COMPILEIQ_VARIANT_FLAGS`` (one flag per list item), ``COMPILEIQ_VARIANT_DEVICE_LTO``
(``ON``: device link-time optimization as the apply does it), ``COMPILEIQ_VARIANT_DEVICE_LINK`` (a
static or object library's consumers whose device link gets ``-dlto``: the benchmark's) and
``COMPILEIQ_VARIANT_SOURCES`` with
``COMPILEIQ_VARIANT_SOURCE_FLAGS_<i>`` (per-file flags, paths relative to the top-level source directory) and
``COMPILEIQ_VARIANT_FLAGS_FILE`` (a CUDA target's file of target-wide trial flags; empty: none) and
``COMPILEIQ_VARIANT_SOURCE_FILES`` with ``COMPILEIQ_VARIANT_SOURCE_FLAGS_FILE_<i>`` (a CUDA source file whose
own trial flags are in that file).

At the end of the top-level directory this module:

* includes the fragment, so that rewriting it re-runs CMake at the next build;
* when ``COMPILEIQ_VARIANT_CUDA_ARCH`` is set, sets ``CUDA_ARCHITECTURES`` of
  every compiled target to ``<arch>-real`` and removes hand-written
  ``-arch``, ``--gpu-architecture``, ``-gencode``, ``--generate-code``,
  ``-code`` and ``--gpu-code`` options from the targets' ``COMPILE_OPTIONS``
  and ``INTERFACE_COMPILE_OPTIONS`` (also inside
  ``$<$<COMPILE_LANGUAGE:CUDA>:...>``) and from ``CMAKE_CUDA_FLAGS`` and
  ``CMAKE_CUDA_FLAGS_<CONFIG>`` (in every directory that sets them, through
  :command:`variable_watch`);
* with ``COMPILEIQ_VARIANT_FLAGS_FILE``, adds ``--options-file=<file>`` to the CUDA compiles of the target
  (where its flags go) and makes each of its sources depend on the file (``OBJECT_DEPENDS``): a trial that
  only rewrites the file compiles them again without CMake running again; likewise
  ``--options-file=<file>`` for each of ``COMPILEIQ_VARIANT_SOURCE_FILES``, scoped to the target as
  per-file flags are, after the target's options (a trial that rewrites it compiles that file again);
* adds the flags to the target as ``$<$<COMPILE_LANGUAGE:LANG>:flag>``, turns on device LTO of its
  CUDA code (``_compileiq_device_lto``, the apply's own function: LTO IR beside the machine code at
  compile, ``-dlto`` at the device link, host languages untouched) and sets the per-file flags, scoped to
  the target (``_compileiq_source_options``, also the apply's);
* writes, for each target named in ``COMPILEIQ_VARIANT_RECORD`` (a suite's targets), the same decisions
  in ``compileiq_variant_records/<target>.txt`` (with ``flags_sha256_<LANG>`` for CUDA, CXX and C) and its
  source lines in ``compileiq_variant_records/<target>.sources``, before any target is changed: one
  configure of a suite's tree serves every target of the suite;
* writes ``compileiq_variant_info.txt`` in the top-level build directory
  (the apply's own decisions for the target: see *Files Read by the Tool* in
  :module:`CompileIQ`) and ``compileiq_variant_sources.txt`` (the
  source lines of ``sources_sha256``, to which the tool adds the headers).

Tuned flags from ``compileiq.toml`` are never applied in a variant tree.
#]=======================================================================]

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/compileiq_project_policies.cmake")
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...4.4)

include("${CMAKE_CURRENT_LIST_DIR}/CompileIQ.cmake")

if(NOT EXISTS "${COMPILEIQ_VARIANT_FRAGMENT}")
  message(FATAL_ERROR "compileiq: COMPILEIQ_VARIANT_FRAGMENT='${COMPILEIQ_VARIANT_FRAGMENT}' "
    "does not name an existing trial flags fragment.")
endif()
# A variant tree measures exactly the trial's flags.
set_property(GLOBAL PROPERTY _compileiq_apply_scheduled TRUE)

# CUDA architecture options removed from a command-line string such as CMAKE_CUDA_FLAGS
# (_compileiq_strip_arch_options, CompileIQArch.cmake).
function(_compileiq_strip_arch_string var)
  separate_arguments(args UNIX_COMMAND "${${var}}")
  set(before "${args}")
  _compileiq_strip_arch_options(args)
  if(NOT args STREQUAL before)
    list(JOIN args " " flags)
    set(${var} "${flags}" PARENT_SCOPE)
  endif()
endfunction()

# Strip CMAKE_CUDA_FLAGS and CMAKE_CUDA_FLAGS_<CONFIG> in the calling scope.
macro(_compileiq_strip_cuda_flag_vars)
  foreach(_compileiq_v IN ITEMS "" _DEBUG _RELEASE _RELWITHDEBINFO _MINSIZEREL)
    _compileiq_strip_arch_string(CMAKE_CUDA_FLAGS${_compileiq_v})
  endforeach()
  unset(_compileiq_v)
endmacro()

# variable_watch() callback: runs in the scope that set the variable, so
# hand-written architectures are stripped in subdirectories too.
macro(_compileiq_watch_cuda_flags var access)
  if("${access}" MATCHES "MODIFIED_ACCESS$")
    _compileiq_strip_arch_string(${var})
  endif()
endmacro()

# The apply's decisions for one more target of the project, before this tree changes any target
# (compileiq_variant_records/<target>.txt and .sources: a suite's trees, configured once, serve each of
# its targets in turn without another configure). The flags hash for each language: the record does not
# know which language the tool will tune.
# The configuration a variant tree builds: CMAKE_BUILD_TYPE, else the first of CMAKE_CONFIGURATION_TYPES.
function(_compileiq_variant_config out)
  set(config "${CMAKE_BUILD_TYPE}")
  if(config STREQUAL "" AND CMAKE_CONFIGURATION_TYPES)
    list(GET CMAKE_CONFIGURATION_TYPES 0 config)
  endif()
  set(${out} "${config}" PARENT_SCOPE)
endfunction()

# The relocatable=, cuda_archs= and cuda_archs_every= lines of a target's decisions: the apply's own
# (_compileiq_relocatable, _compileiq_cuda_archs), before this tree forces its architecture; cuda_archs
# only with <with_archs> (a CUDA target, or one whose language is not known yet).
function(_compileiq_variant_decided target config with_archs out)
  _compileiq_relocatable("${target}" relocatable "${config}")
  if(relocatable)
    set(relocatable 1)
  else()
    set(relocatable 0)
  endif()
  set(cuda_archs "")
  set(every 0)
  if(with_archs)
    _compileiq_cuda_archs("${target}" cuda_archs archs_from)
    if(cuda_archs MATCHES "^all(-major)?$")
      set(every 1)
    endif()
    list(JOIN cuda_archs "," cuda_archs)
  endif()
  set(${out} "relocatable=${relocatable}\ncuda_archs=${cuda_archs}\ncuda_archs_every=${every}\n" PARENT_SCOPE)
endfunction()

# _compileiq_variant_record(<name> <config>): what the variant decided for target <name>, written for the tool
function(_compileiq_variant_record name config)
  _compileiq_real_target(target "${name}")
  if(NOT target)
    return()  # the tool names the targets that do not exist (File API)
  endif()
  set(dir "${CMAKE_BINARY_DIR}/compileiq_variant_records")
  set(text "target=${target}\nconfig=${config}\n")
  foreach(lang IN ITEMS CUDA CXX C)
    _compileiq_flags_sha256("${target}" "${lang}" "${config}" sha)
    string(APPEND text "flags_sha256_${lang}=${sha}\n")
  endforeach()
  _compileiq_variant_decided("${target}" "${config}" TRUE decided)
  _compileiq_device_lto_refusal("${target}" lto_refusal "${config}")
  string(APPEND text "${decided}device_lto_refusal=${lto_refusal}\n")
  file(WRITE "${dir}/${name}.txt" "${text}")
  _compileiq_source_lines("${target}" source_lines)
  list(JOIN source_lines "\n" source_lines)
  file(WRITE "${dir}/${name}.sources" "${source_lines}\n")
endfunction()

# _compileiq_variant_apply(): the trial's flags (COMPILEIQ_VARIANT_FRAGMENT) on the variant tree's targets
function(_compileiq_variant_apply)
  include("${COMPILEIQ_VARIANT_FRAGMENT}")
  _compileiq_variant_config(config)
  if(COMPILEIQ_VARIANT_RECORD)
    foreach(name IN LISTS COMPILEIQ_VARIANT_RECORD)
      _compileiq_variant_record("${name}" "${config}")
    endforeach()
  endif()
  set(arch "${COMPILEIQ_VARIANT_CUDA_ARCH}")
  _compileiq_real_target(target "${COMPILEIQ_VARIANT_TARGET}")
  if(NOT target)
    # Not fatal: the driver reads the File API reply and names the targets that do exist.
    message(WARNING "compileiq: target '${COMPILEIQ_VARIANT_TARGET}' is not defined by this project")
    return()
  endif()
  _compileiq_flags_sha256("${target}" "${COMPILEIQ_VARIANT_LANGUAGE}" "${config}" flags_sha256)
  # the apply's own decisions, before this tree sets <arch>-real; the architectures of a CUDA target (or of
  # the tool's first configure, whose language is not known yet)
  set(with_archs FALSE)
  if(COMPILEIQ_VARIANT_LANGUAGE MATCHES "^(CUDA|)$")
    set(with_archs TRUE)
  endif()
  _compileiq_variant_decided("${target}" "${config}" ${with_archs} decided)
  file(WRITE "${CMAKE_BINARY_DIR}/compileiq_variant_info.txt"
    "target=${target}\nlanguage=${COMPILEIQ_VARIANT_LANGUAGE}\narch=${arch}\n"
    "config=${config}\nflags_sha256=${flags_sha256}\n${decided}")
  _compileiq_source_lines("${target}" source_lines)
  list(JOIN source_lines "\n" source_lines)
  file(WRITE "${CMAKE_BINARY_DIR}/compileiq_variant_sources.txt" "${source_lines}\n")

  if(NOT arch STREQUAL "")
    # Every target of the project.
    _compileiq_all_targets(targets)
    foreach(t IN LISTS targets)
      get_target_property(type "${t}" TYPE)
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        # Also for targets without CUDA sources: device linking uses it.
        set_property(TARGET "${t}" PROPERTY CUDA_ARCHITECTURES "${arch}-real")
        set(props COMPILE_OPTIONS INTERFACE_COMPILE_OPTIONS)
      else()
        set(props INTERFACE_COMPILE_OPTIONS)
      endif()
      foreach(prop IN LISTS props)
        get_property(opts TARGET "${t}" PROPERTY ${prop})
        set(before "${opts}")
        _compileiq_strip_arch_options(opts)
        if(NOT opts STREQUAL before)
          set_property(TARGET "${t}" PROPERTY ${prop} "${opts}")
        endif()
      endforeach()
    endforeach()
  endif()

  _compileiq_add_flags("${target}" "${COMPILEIQ_VARIANT_LANGUAGE}" "" ${COMPILEIQ_VARIANT_FLAGS})
  if(NOT COMPILEIQ_VARIANT_FLAGS_FILE STREQUAL "" AND COMPILEIQ_VARIANT_LANGUAGE STREQUAL "CUDA")
    _compileiq_variant_flags_file("${target}" "${COMPILEIQ_VARIANT_FLAGS_FILE}")
  endif()
  # The apply's own decision, read by the tune: device LTO is offered only where the apply accepts it.
  _compileiq_device_lto_refusal("${target}" lto_refusal "${config}")
  file(APPEND "${CMAKE_BINARY_DIR}/compileiq_variant_info.txt" "device_lto_refusal=${lto_refusal}\n")
  if(COMPILEIQ_VARIANT_DEVICE_LTO)
    if(NOT lto_refusal STREQUAL "")
      message(FATAL_ERROR "compileiq: device LTO was asked for ${target}, but ${lto_refusal}")
    endif()
    get_target_property(type "${target}" TYPE)
    if(type MATCHES "^(STATIC|OBJECT)_LIBRARY$" AND NOT COMPILEIQ_VARIANT_DEVICE_LINK)
      message(FATAL_ERROR "compileiq: device LTO was asked for ${target}, a ${type}, but no consumer to "
        "device-link it was named (COMPILEIQ_VARIANT_DEVICE_LINK)")
    endif()
    _compileiq_device_lto(TARGET "${target}" CONFIG "" ARCH "${arch}" DEVICE_LINK ${COMPILEIQ_VARIANT_DEVICE_LINK}
      OUT_FORWARDED forwarded OUT_AT linked FLAGS ${COMPILEIQ_VARIANT_FLAGS})
  endif()
  set(i 0)
  foreach(src IN LISTS COMPILEIQ_VARIANT_SOURCE_FILES)
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${CMAKE_SOURCE_DIR}" NORMALIZE OUTPUT_VARIABLE path)
    _compileiq_variant_source_flags_file("${target}" "${path}" "${COMPILEIQ_VARIANT_SOURCE_FLAGS_FILE_${i}}")
    math(EXPR i "${i} + 1")
  endforeach()
  set(i 0)
  foreach(src IN LISTS COMPILEIQ_VARIANT_SOURCES)
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${CMAKE_SOURCE_DIR}" NORMALIZE OUTPUT_VARIABLE path)
    _compileiq_source_options("${target}" "${path}" "" ${COMPILEIQ_VARIANT_SOURCE_FLAGS_${i}})
    math(EXPR i "${i} + 1")
  endforeach()
endfunction()

# The trial's target-wide flags as a file nvcc reads at each compile of the target's CUDA sources
# (--options-file, after the target's own options, where the fragment's flags would be): each of the
# target's sources depends on the file (OBJECT_DEPENDS), so a trial that rewrites it compiles them again
# without CMake running again.
function(_compileiq_variant_flags_file target file)
  if(NOT EXISTS "${file}")
    file(WRITE "${file}" "")
  endif()
  target_compile_options("${target}" PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:--options-file=${file}>")
  _compileiq_cuda_sources_depend("${target}" "${file}")
endfunction()

# One CUDA source file's own trial flags as a file nvcc reads at its compile (--options-file, after the
# target's options, scoped to the target as per-file flags are); the source depends on the file, so a trial that
# rewrites it compiles that source again without CMake running again.
function(_compileiq_variant_source_flags_file target path file)
  if(NOT EXISTS "${file}")
    file(WRITE "${file}" "")
  endif()
  _compileiq_source_options("${target}" "${path}" "$<COMPILE_LANGUAGE:CUDA>" "--options-file=${file}")
  set_property(SOURCE "${path}" TARGET_DIRECTORY "${target}" APPEND PROPERTY OBJECT_DEPENDS "${file}")
endfunction()

# Read the architecture now, to strip it from the CUDA flags as early as here
# (the cache value, via the top-level directory) and whenever they are set.
function(_compileiq_variant_arch out)
  include("${COMPILEIQ_VARIANT_FRAGMENT}")
  set(${out} "${COMPILEIQ_VARIANT_CUDA_ARCH}" PARENT_SCOPE)
endfunction()
_compileiq_variant_arch(_compileiq_arch)
if(NOT _compileiq_arch STREQUAL "")
  _compileiq_strip_cuda_flag_vars()
  foreach(_compileiq_v IN ITEMS "" _DEBUG _RELEASE _RELWITHDEBINFO _MINSIZEREL)
    variable_watch(CMAKE_CUDA_FLAGS${_compileiq_v} _compileiq_watch_cuda_flags)
  endforeach()
  unset(_compileiq_v)
  # Once more at the end, for flags that only come from the cache.
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _compileiq_strip_cuda_flag_vars)
endif()
unset(_compileiq_arch)

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _compileiq_variant_apply)

cmake_policy(POP)
