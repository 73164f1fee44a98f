# attnmt_add_header_check(): each header of src/ compiles on its own, as the first line of a file
# (`#include "x.h"` and nothing else). Nothing else would show a header that compiles only after
# its unity-batch mates, which breaks -DATTNMT_UNITY_BUILD=OFF. Two targets, built on demand:
#   attnmt_headers_alone        the headers that reach no LibTorch header: compiled truly alone
#                               (CTest `headers` builds it; about a second of CPU per header)
#   attnmt_headers_alone_torch  the others, compiled after the precompiled <torch/torch.h>, on demand:
#                               LibTorch parsed alone costs ~30 s of CPU per file (half an hour for
#                               these), the precompiled header ~9 s (8 minutes: too long for CTest).
#                               It shows a missing project or library header, not a standard header
#                               that torch.h happens to bring
# Needs cmake/torch_free.cmake (_attnmt_includes_torch) and the attnmt_core target.
function(attnmt_add_header_check)
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*.h)
  set(alone "")
  set(after_torch "")
  foreach(header ${headers})
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR}/src ${header})
    # oneDNN's header exists only where oneDNN is installed.
    if(rel STREQUAL "runtime/dnnl_engine.h" AND NOT (DNNL_LIB AND DNNL_INCLUDE))
      continue()
    endif()
    string(MAKE_C_IDENTIFIER ${rel} id)
    set(source ${CMAKE_BINARY_DIR}/header_check/${id}.cpp)
    file(CONFIGURE OUTPUT ${source} CONTENT "#include \"${rel}\"  // and nothing before it\n")
    _attnmt_includes_torch(${header} torch)
    if(torch)
      list(APPEND after_torch ${source})
    else()
      list(APPEND alone ${source})
    endif()
  endforeach()
  if(NOT alone OR NOT after_torch)
    message(FATAL_ERROR "header_check: no headers found under ${PROJECT_SOURCE_DIR}/src")
  endif()
  # attnmt_core for the include paths and definitions (LibTorch's among them: unused by the first).
  add_library(attnmt_headers_alone OBJECT EXCLUDE_FROM_ALL ${alone})
  add_library(attnmt_headers_alone_torch OBJECT EXCLUDE_FROM_ALL ${after_torch})
  foreach(target attnmt_headers_alone attnmt_headers_alone_torch)
    target_link_libraries(${target} PRIVATE attnmt_core)
    target_compile_options(${target} PRIVATE -Wall -Wno-unused-parameter)
    set_target_properties(${target} PROPERTIES UNITY_BUILD OFF)
  endforeach()
  # -O0 where it can (nothing is generated from a lone header anyway); the other keeps the build
  # type's flags, which the precompiled header must match.
  target_compile_options(attnmt_headers_alone PRIVATE -O0)
  target_precompile_headers(attnmt_headers_alone_torch REUSE_FROM attnmt_core)
  list(LENGTH alone n_alone)
  list(LENGTH after_torch n_torch)
  message(STATUS "attnmt: header check: ${n_alone} headers alone, ${n_torch} after LibTorch's")
endfunction()
