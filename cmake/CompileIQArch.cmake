#[=======================================================================[.rst:
CompileIQArch
-------------

Internal to ``compileiq_cmake``: the CUDA architecture layer of the
:module:`CompileIQ` module (see its *Layers*): which compile options name a
CUDA architecture, and which architectures a target builds.  It calls no
other layer.

Provides
^^^^^^^^

``_compileiq_unwrap_option(<out-var> <item>)``
  A compile option item as nvcc sees it (unwrapped from
  ``$<$<COMPILE_LANGUAGE:CUDA>:...>`` and ``SHELL:``).
``_compileiq_arch_option(<out-name> <out-rest> <item>)``
  Whether an item is an architecture option (``-arch``, ``-gencode``, ...).
``_compileiq_flag_archs(<out-archs> <out-options> <item>...)``
  The architectures (``90``, ``90a``, ``all``, ...) and the options that
  name them among a list of options.
``_compileiq_strip_arch_options(<var>)``
  The list in ``<var>`` without its architecture options.
``_compileiq_cuda_archs(<target> <out-archs> <out-from>)``
  The architectures a target builds (``CUDA_ARCHITECTURES``, else the
  architecture options of its compile line) and where they came from.

Requires
^^^^^^^^

CMake 3.24 and no other layer.

Called by
^^^^^^^^^

:module:`CompileIQRecords`, :module:`CompileIQLTO`, :module:`CompileIQApply`
and ``compileiq_variant.cmake``.  The first four are pure list helpers,
usable in script mode (``cmake -P``).
#]=======================================================================]

include_guard(GLOBAL)
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...4.4)

# _compileiq_unwrap_option(<out-var> <item>)
#   A compile option item as nvcc sees it: unwrapped from
#   $<$<COMPILE_LANGUAGE:CUDA>:...>, $<$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>:...>
#   and SHELL:.
function(_compileiq_unwrap_option out item)
  set(core "${item}")
  if(core MATCHES "^\\$<\\$<COMPILE_LANG[A-Z_]*:CUDA[^>]*>:(.*)$")
    set(core "${CMAKE_MATCH_1}")
    string(REGEX REPLACE ">$" "" core "${core}")
  endif()
  string(REGEX REPLACE "^SHELL:[ \t]*" "" core "${core}")
  set(${out} "${core}" PARENT_SCOPE)
endfunction()

# _compileiq_arch_option(<out-name> <out-rest> <item>)
#   Whether a compile option item is a CUDA architecture option, as nvcc
#   sees it (_compileiq_unwrap_option): <out-name> is the
#   option (-arch, --gpu-architecture, -gencode, --generate-code, -code,
#   --gpu-code) or empty, <out-rest> what follows it in the same item
#   ("=sm_90", " sm_90"; empty when the value is the next item).
function(_compileiq_arch_option out_name out_rest item)
  _compileiq_unwrap_option(core "${item}")
  set(name "")
  set(rest "")
  if(core MATCHES "^(-arch|--gpu-architecture|-gencode|--generate-code|-code|--gpu-code)([= \t].*)?$")
    set(name "${CMAKE_MATCH_1}")
    set(rest "${CMAKE_MATCH_2}")
  endif()
  set(${out_name} "${name}" PARENT_SCOPE)
  set(${out_rest} "${rest}" PARENT_SCOPE)
endfunction()

# _compileiq_flag_archs(<out-archs> <out-options> <item>...)
#   The CUDA architectures named by architecture options among <item>s
#   (-arch, --gpu-architecture, -gencode, --generate-code, -code, --gpu-code,
#   with '=' or as two items, also inside $<$<COMPILE_LANGUAGE:CUDA>:...>):
#   numbers such as 90 or 90a, or all/all-major/native; and the options.
function(_compileiq_flag_archs out_archs out_options)
  set(archs "")
  set(options "")
  set(take_next "")
  foreach(item IN LISTS ARGN)
    if(take_next)  # the value of an option written as two items
      _compileiq_unwrap_option(value "${item}")
      set(option "${take_next} ${value}")
      set(take_next "")
    else()
      _compileiq_arch_option(name rest "${item}")
      if(name STREQUAL "")
        continue()
      elseif(rest STREQUAL "")
        set(take_next "${name}")
        continue()
      endif()
      string(SUBSTRING "${rest}" 1 -1 value)
      set(option "${name}${rest}")
    endif()
    list(APPEND options "${option}")
    if(value MATCHES "^(native|all|all-major)$")
      list(APPEND archs "${value}")
    endif()
    string(REGEX MATCHALL "(sm|compute|lto)_[0-9]+[a-z]?" found "${value}")
    foreach(f IN LISTS found)
      string(REGEX REPLACE "^[a-z]+_" "" f "${f}")
      list(APPEND archs "${f}")
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES archs)
  set(${out_archs} "${archs}" PARENT_SCOPE)
  set(${out_options} "${options}" PARENT_SCOPE)
endfunction()

# _compileiq_strip_arch_options(<var>)
#   Removes CUDA architecture options (-arch, -gencode, --generate-code, ... in either spelling) from
#   the list in <var>.
function(_compileiq_strip_arch_options var)
  set(kept "")
  set(skip_next FALSE)
  foreach(item IN LISTS ${var})
    if(skip_next)
      set(skip_next FALSE)
      continue()
    endif()
    _compileiq_arch_option(name rest "${item}")
    if(NOT name STREQUAL "")
      if(rest STREQUAL "")
        set(skip_next TRUE)  # -arch sm_70 as two items
      endif()
      continue()
    endif()
    list(APPEND kept "${item}")
  endforeach()
  set(${var} "${kept}" PARENT_SCOPE)
endfunction()

# _compileiq_cuda_archs(<target> <out-archs> <out-from>)
#   The CUDA architectures a target builds, without -real/-virtual: its
#   CUDA_ARCHITECTURES, else (empty or OFF, e.g. under CMP0104 OLD) the
#   architecture options of its compile line: CMAKE_CUDA_FLAGS and
#   CMAKE_CUDA_FLAGS_<CONFIG> of its directory, the directory's and the
#   target's COMPILE_OPTIONS.  <out-from> says where they came from.
function(_compileiq_cuda_archs target out out_from)
  get_target_property(archs "${target}" CUDA_ARCHITECTURES)
  set(from "CUDA_ARCHITECTURES")
  if(NOT archs)
    set(archs "${CMAKE_CUDA_ARCHITECTURES}")
    set(from "CMAKE_CUDA_ARCHITECTURES")
  endif()
  if(archs STREQUAL "native" AND CMAKE_CUDA_ARCHITECTURES_NATIVE)
    set(archs "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")
  endif()
  if(NOT archs)  # empty or OFF: the project passes the architecture itself
    get_target_property(dir "${target}" SOURCE_DIR)
    set(items "")
    set(where "")
    set(configs "")
    if(CMAKE_BUILD_TYPE)
      string(TOUPPER "_${CMAKE_BUILD_TYPE}" configs)
    endif()
    foreach(suffix IN ITEMS "" ${configs})
      get_directory_property(flags DIRECTORY "${dir}" DEFINITION "CMAKE_CUDA_FLAGS${suffix}")
      if(flags STREQUAL "")  # not set in the directory: the cache entry (-DCMAKE_CUDA_FLAGS=...)
        set(flags "$CACHE{CMAKE_CUDA_FLAGS${suffix}}")
      endif()
      separate_arguments(flags UNIX_COMMAND "${flags}")
      _compileiq_flag_archs(found opts ${flags})
      if(found)
        list(APPEND items ${flags})
        list(JOIN opts " " opts)
        list(APPEND where "${opts} in CMAKE_CUDA_FLAGS${suffix}")
      endif()
    endforeach()
    get_directory_property(directory_opts DIRECTORY "${dir}" COMPILE_OPTIONS)
    get_target_property(target_opts "${target}" COMPILE_OPTIONS)
    foreach(kind IN ITEMS directory target)
      if(${kind}_opts)
        _compileiq_flag_archs(found opts ${${kind}_opts})
        if(found)
          list(APPEND items ${${kind}_opts})
          list(JOIN opts " " opts)
          list(APPEND where "${opts} in the ${kind}'s COMPILE_OPTIONS")
        endif()
      endif()
    endforeach()
    _compileiq_flag_archs(archs opts ${items})
    list(JOIN where "; " from)
    if(NOT archs)
      set(from "no CUDA_ARCHITECTURES and no architecture option: nvcc's default architecture")
    endif()
  endif()
  list(TRANSFORM archs REPLACE "-(real|virtual)$" "")
  list(REMOVE_DUPLICATES archs)
  set(${out} "${archs}" PARENT_SCOPE)
  set(${out_from} "${from}" PARENT_SCOPE)
endfunction()

cmake_policy(POP)
