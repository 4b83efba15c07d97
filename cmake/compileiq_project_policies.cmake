#[=======================================================================[.rst:
compileiq_project_policies
--------------------------

Internal to ``compileiq_cmake``: included first by each entry module (:module:`CompileIQ`,
``compileiq_cmakeConfig.cmake``, ``compileiq_variant.cmake``), before they set their own policies, it
records the including project's policy settings that decide how a tuned entry can be applied:

* ``CMP0105`` (global property ``_compileiq_project_cmp0105``): whether CMake passes link options to the
  device link step, where device LTO's ``-dlto`` must go (``_compileiq_device_lto_refusal``, ``CompileIQLTO.cmake``,
  which includes this file too).

The first include wins: the project's settings at its first ``project()`` (top-level includes) or
``find_package(compileiq_cmake)``.
#]=======================================================================]

get_property(_compileiq_known GLOBAL PROPERTY _compileiq_project_cmp0105 SET)
if(NOT _compileiq_known)
  cmake_policy(GET CMP0105 _compileiq_cmp0105)
  set_property(GLOBAL PROPERTY _compileiq_project_cmp0105 "${_compileiq_cmp0105}")
  unset(_compileiq_cmp0105)
endif()
unset(_compileiq_known)
