#[=======================================================================[.rst:
CompileIQLTO
------------

Internal to ``compileiq_cmake``: the device-link layer of the
:module:`CompileIQ` module (see its *Layers*): whether a target builds
relocatable device code, whether device link-time optimization can apply to
it, and device LTO of its CUDA code only.

Provides
^^^^^^^^

``_compileiq_relocatable(<target> <out-var> [<config>])``
  ``TRUE`` when the target builds relocatable device code.
``_compileiq_device_lto_refusal(<target> <out-var> [<config>])``
  Why device LTO cannot apply to the target, empty when it can: the one
  rule of both the apply and the variant trees (``device_lto_refusal``).
``_compileiq_device_lto(TARGET <t> CONFIG <config> ARCH <arch> ...)``
  LTO IR at compile (CUDA sources only) and ``-dlto`` at the device link of
  the target or of its measured consumers.

Requires
^^^^^^^^

:module:`CompileIQCommon` (``_compileiq_conditional``,
``_compileiq_real_targets``) and :module:`CompileIQArch`
(``_compileiq_unwrap_option``), which it includes, and the project's policy
``CMP0105`` as ``compileiq_project_policies.cmake`` records it (included
here too; the first include wins).

Called by
^^^^^^^^^

:module:`CompileIQApply` and ``compileiq_variant.cmake``.
#]=======================================================================]

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/compileiq_project_policies.cmake")
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...4.4)
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQCommon.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQArch.cmake")

# _compileiq_relocatable(<target> <out-var> [<config>])
#   TRUE when <target> builds relocatable device code: CUDA_SEPARABLE_COMPILATION, or -rdc=true / -dc
#   among its compile options, its directory's, or CMAKE_CUDA_FLAGS and CMAKE_CUDA_FLAGS_<CONFIG> as the
#   target's directory sees them (<config>: the configuration built; default CMAKE_BUILD_TYPE).
function(_compileiq_relocatable target out)
  get_target_property(sep "${target}" CUDA_SEPARABLE_COMPILATION)
  if(sep)
    set(${out} TRUE PARENT_SCOPE)
    return()
  endif()
  set(config "${CMAKE_BUILD_TYPE}")
  if(ARGC GREATER 2 AND NOT "${ARGV2}" STREQUAL "")
    set(config "${ARGV2}")
  endif()
  string(TOUPPER "${config}" config)
  get_target_property(options "${target}" COMPILE_OPTIONS)
  get_target_property(dir "${target}" SOURCE_DIR)
  get_directory_property(dir_options DIRECTORY "${dir}" COMPILE_OPTIONS)
  get_directory_property(cuda_flags DIRECTORY "${dir}" DEFINITION CMAKE_CUDA_FLAGS)
  set(config_flags "")
  if(NOT config STREQUAL "")
    get_directory_property(config_flags DIRECTORY "${dir}" DEFINITION "CMAKE_CUDA_FLAGS_${config}")
  endif()
  separate_arguments(flags NATIVE_COMMAND "${cuda_flags} ${config_flags}")
  set(previous "")
  foreach(item IN LISTS options dir_options flags)
    _compileiq_unwrap_option(core "${item}")
    if(core MATCHES "^(-rdc|--relocatable-device-code)[= ](true|1)$" OR core MATCHES "^(-dc|--device-c)$"
       OR (previous MATCHES "^(-rdc|--relocatable-device-code)$" AND core MATCHES "^(true|1)$"))
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
    set(previous "${core}")
  endforeach()
  set(${out} FALSE PARENT_SCOPE)
endfunction()

# _compileiq_device_lto_refusal(<target> <out-var> [<config>])
#   Why device LTO cannot apply to <target>, or "" when it can: device LTO acts at CMake's device link step,
#   which CMake runs for a target built with CUDA_SEPARABLE_COMPILATION (-rdc=true in the flags alone gets
#   none), and -dlto reaches it as a link option, which CMake passes to the device link only under policy
#   CMP0105 NEW (the project's, as its top-level directory sets it: cmake_minimum_required >= 3.18, or
#   -DCMAKE_POLICY_DEFAULT_CMP0105=NEW). The one rule: the apply refuses an entry by it, and a variant
#   tree writes it into compileiq_variant_info.txt (device_lto_refusal=), where the tune reads whether to
#   offer device LTO.
function(_compileiq_device_lto_refusal target out)
  get_target_property(sep "${target}" CUDA_SEPARABLE_COMPILATION)
  get_property(cmp0105 GLOBAL PROPERTY _compileiq_project_cmp0105)
  set(why "")
  if(sep AND NOT cmp0105 STREQUAL "NEW")
    set(why "CMake passes no link options to the device link, where device LTO acts, under the project's "
      "policy CMP0105 (not NEW: its cmake_minimum_required is older than 3.18): configure with "
      "-DCMAKE_POLICY_DEFAULT_CMP0105=NEW to let it")
  elseif(NOT sep)
    _compileiq_relocatable("${target}" relocatable ${ARGN})
    if(relocatable)
      set(why "${target} builds relocatable device code through -rdc=true in its flags, not with "
        "CUDA_SEPARABLE_COMPILATION, under which CMake runs the device link where device LTO acts: "
        "set CUDA_SEPARABLE_COMPILATION ON")
    else()
      set(why "${target} does not build relocatable device code (CUDA_SEPARABLE_COMPILATION or -rdc=true)")
    endif()
  endif()
  string(JOIN "" why ${why})
  set(${out} "${why}" PARENT_SCOPE)
endfunction()

# _compileiq_device_lto(TARGET <t> CONFIG <config or empty> ARCH <arch> [DEVICE_LINK <consumer>...]
#                       OUT_FORWARDED <var> OUT_AT <var> [FLAGS <flag>...])
#   Device link-time optimization of the CUDA code of <t> only; the host languages are untouched.
#   CMake's INTERPROCEDURAL_OPTIMIZATION has no per-language switch: it would also compile the target's C
#   and C++ files with host LTO (-flto=auto -fno-fat-lto-objects), whose link fails where the host
#   compiler has no LTO plugin, and credit device LTO with host LTO's effect. So the options are set here:
#   * at compile, for CUDA sources only, LTO IR of the tuned architecture
#     (--generate-code=arch=compute_<arch>,code=lto_<arch>) beside the code CMake's architectures already
#     give: an object holds both, a device link with -dlto uses the IR (the linked code is the same as
#     from IR-only objects: docs/benchmarks/more-speed.md), one without uses the machine code;
#   * at the device link, -dlto and the <flag>s that act there (-Xptxas options and -maxrregcount: under
#     device LTO the code is generated at the link, and nvcc 13 drops compile-step -Xptxas for it); they
#     are returned in <OUT_FORWARDED>.
#   An executable or shared library does its own device link. A STATIC or OBJECT library's device code is
#   linked by its consumers: only the DEVICE_LINK consumers (those the tune measured through) get -dlto;
#   every other consumer links the library's machine code, without device LTO. <OUT_AT>: the targets whose
#   device link got -dlto.
function(_compileiq_device_lto)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;CONFIG;ARCH;OUT_FORWARDED;OUT_AT" "DEVICE_LINK;FLAGS")
  set(target "${arg_TARGET}")
  set(condition "")
  set(compile_condition "$<COMPILE_LANGUAGE:CUDA>")
  if(NOT "${arg_CONFIG}" STREQUAL "")
    set(condition "$<CONFIG:${arg_CONFIG}>")
    set(compile_condition "$<AND:${compile_condition},${condition}>")
  endif()
  _compileiq_conditional(ir "${compile_condition}" "--generate-code=arch=compute_${arg_ARCH},code=lto_${arg_ARCH}")
  target_compile_options("${target}" PRIVATE ${ir})
  set(forwarded "")
  foreach(flag IN LISTS arg_FLAGS)
    if(flag MATCHES "^(-Xptxas=|-maxrregcount=)")
      list(APPEND forwarded "${flag}")
    endif()
  endforeach()
  get_target_property(type "${target}" TYPE)
  set(at "${target}")
  if(type MATCHES "^(STATIC|OBJECT)_LIBRARY$")
    _compileiq_real_targets(at ${arg_DEVICE_LINK})
  endif()
  _compileiq_conditional(options "${condition}" -dlto ${forwarded})
  list(TRANSFORM options PREPEND "$<DEVICE_LINK:")
  list(TRANSFORM options APPEND ">")
  foreach(linker IN LISTS at)
    target_link_options("${linker}" PRIVATE ${options})
  endforeach()
  set(${arg_OUT_FORWARDED} "${forwarded}" PARENT_SCOPE)
  set(${arg_OUT_AT} "${at}" PARENT_SCOPE)
endfunction()

cmake_policy(POP)
