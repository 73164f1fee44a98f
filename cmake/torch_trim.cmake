# LibTorch's links that nothing calls, replaced by one empty library (docs/architecture.md, "Start-up").
# Debian's libtorch_cpu 1.13 names 22 libraries it imports no symbol from (OpenCV, FFmpeg, ZeroMQ,
# LevelDB, LMDB, ...), and they bring ~230 more (Qt, GStreamer, GDAL, codecs): loading, relocating and
# initialising them was most of every LibTorch program's start. After the engine is linked,
# cmake/unused_links.py finds them from the engine's own dependencies and writes
# ${ATTNMT_UNUSED_LINKS_DIR}: the empty library and, under each such library's name, a link to it.
# The programs name that directory in their DT_RPATH (not DT_RUNPATH: only DT_RPATH is searched for
# the dependencies of their dependencies, here libtorch_cpu's), so the loader finds the empty one
# there first and loads it once for all the names.
# -DATTNMT_TRIM_TORCH_LINKS=OFF loads everything LibTorch names, as before.
option(ATTNMT_TRIM_TORCH_LINKS "Load one empty library in place of the libraries LibTorch links but never calls" ON)
set(ATTNMT_UNUSED_LINKS_DIR "")
if(ATTNMT_TRIM_TORCH_LINKS)
  find_program(ATTNMT_PYTHON3 python3)
  find_program(ATTNMT_READELF readelf)
  find_program(ATTNMT_LDCONFIG ldconfig PATHS /sbin /usr/sbin)
  if(ATTNMT_PYTHON3 AND ATTNMT_READELF AND ATTNMT_LDCONFIG)
    set(ATTNMT_UNUSED_LINKS_DIR ${CMAKE_BINARY_DIR}/torch-unused)
    add_library(attnmt_unused SHARED cmake/unused_links_empty.cpp)
    set_target_properties(attnmt_unused PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/unused-links-stub)
    target_link_options(attnmt_unused PRIVATE -Wl,--as-needed)
    add_dependencies(attnmt-engine attnmt_unused)
    add_custom_command(TARGET attnmt-engine POST_BUILD
      COMMAND ${ATTNMT_PYTHON3} ${PROJECT_SOURCE_DIR}/cmake/unused_links.py --stub $<TARGET_FILE:attnmt_unused>
              --dir ${ATTNMT_UNUSED_LINKS_DIR} $<TARGET_FILE:attnmt-engine>
      VERBATIM)
    message(STATUS "attnmt: LibTorch's uncalled links are replaced by an empty library (${ATTNMT_UNUSED_LINKS_DIR})")
  else()
    message(STATUS "attnmt: no python3, readelf or ldconfig: every library LibTorch links is loaded")
  endif()
endif()

# attnmt_trim_torch_links(target...): the programs load the empty library in place of the uncalled
# ones. They are built after the engine, which writes the directory.
function(attnmt_trim_torch_links)
  if(NOT ATTNMT_UNUSED_LINKS_DIR)
    return()
  endif()
  foreach(target ${ARGN})
    target_link_options(${target} PRIVATE -Wl,--disable-new-dtags)
    if(NOT target STREQUAL attnmt-engine)
      set_property(TARGET ${target} APPEND PROPERTY BUILD_RPATH ${ATTNMT_UNUSED_LINKS_DIR})
      add_dependencies(${target} attnmt-engine)
    endif()
  endforeach()
endfunction()
attnmt_trim_torch_links(attnmt-engine)
# The engine's own RPATH serves the build tree and the installed layout alike, so that CMake need not
# rewrite it at install (it would add an empty entry to the build tree's, which the loader reads as
# the current directory): the directory beside it (the build tree) and the one under libdir
# (cmake/install.cmake); each layout lacks the other's, which the loader tries once.
file(RELATIVE_PATH ATTNMT_BIN_TO_LIBDIR ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
if(ATTNMT_UNUSED_LINKS_DIR)
  set_target_properties(attnmt-engine PROPERTIES BUILD_WITH_INSTALL_RPATH ON
    INSTALL_RPATH "$ORIGIN/torch-unused;$ORIGIN/${ATTNMT_BIN_TO_LIBDIR}/attnmt/torch-unused")
endif()
