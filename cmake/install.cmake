# What attnmt installs, for programs that build on it (docs/cpp.md):
#   <bindir>/attnmt, attnmt-engine          the program (the front execs the engine beside it)
#   <libdir>/libattnmt.so.<major>           the public C++ API, with the model and LibTorch inside
#   <libdir>/attnmt/libattnmt_spm.so        SentencePiece's module (data/spm_backend.h)
#   <includedir>/attnmt/                    the public headers: the standard library only
#   <libdir>/cmake/attnmt/                  find_package(attnmt CONFIG) -> attnmt::attnmt
#   <libdir>/pkgconfig/attnmt.pc            pkg-config --cflags --libs attnmt
#   ATTNMT_PYTHON_INSTALL_DIR/attnmt/       the Python module (Debian's dist-packages by default)
# and `cpack -G DEB` (in the build dir) packs the same as attnmt_<version>_<arch>.deb, its Depends
# computed by dpkg-shlibdeps.
include(CMakePackageConfigHelpers)

# --- libattnmt.so: src/api/ over attnmt_core. Only what the public headers declare (ATTNMT_API) is
# exported: the API's own files are compiled with hidden visibility, and the static libraries'
# symbols are made local (--exclude-libs), so a program linking it sees none of LibTorch's,
# SentencePiece's or attnmt's internals, and cannot collide with its own copies of them.
configure_file(include/attnmt/version.h.in ${CMAKE_BINARY_DIR}/generated/include/attnmt/version.h @ONLY)
file(GLOB ATTNMT_API_SOURCES CONFIGURE_DEPENDS src/api/*.cpp)
add_library(attnmt_library SHARED ${ATTNMT_API_SOURCES})
add_library(attnmt::attnmt ALIAS attnmt_library)
set_target_properties(attnmt_library PROPERTIES OUTPUT_NAME attnmt EXPORT_NAME attnmt
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_include_directories(attnmt_library PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/generated/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(attnmt_library PUBLIC cxx_std_17)
target_link_libraries(attnmt_library PRIVATE attnmt_core)
target_compile_options(attnmt_library PRIVATE -Wall -Wextra -Wno-unused-parameter)
target_link_options(attnmt_library PRIVATE -Wl,--exclude-libs,ALL -Wl,--no-undefined)
add_dependencies(attnmt_library attnmt_spm)

# --- what `cmake --install` puts where.
install(TARGETS attnmt attnmt-engine RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(ATTNMT_UNUSED_LINKS_DIR)  # the engine's empty library and its links (cmake/torch_trim.cmake)
  install(DIRECTORY ${ATTNMT_UNUSED_LINKS_DIR}/ DESTINATION ${CMAKE_INSTALL_LIBDIR}/attnmt/torch-unused)
endif()
install(TARGETS attnmt_library EXPORT attnmtTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS attnmt_spm LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/attnmt)
install(DIRECTORY include/attnmt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${CMAKE_BINARY_DIR}/generated/include/attnmt/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnmt)
install(FILES README.md docs/cpp.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The CMake package. libattnmt.so carries its dependencies itself (DT_NEEDED: LibTorch, spdlog,
# ...) and its headers include none of them, so a program finds nothing but attnmt.
set(ATTNMT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnmt)
install(EXPORT attnmtTargets NAMESPACE attnmt:: DESTINATION ${ATTNMT_CMAKE_DIR})
configure_package_config_file(cmake/attnmtConfig.cmake.in ${CMAKE_BINARY_DIR}/generated/attnmtConfig.cmake
  INSTALL_DESTINATION ${ATTNMT_CMAKE_DIR})
# The soname changes with the major version only, and so does what a program may rely on
# (docs/cpp.md, "What is stable").
write_basic_package_version_file(${CMAKE_BINARY_DIR}/generated/attnmtConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/generated/attnmtConfig.cmake ${CMAKE_BINARY_DIR}/generated/attnmtConfigVersion.cmake
  DESTINATION ${ATTNMT_CMAKE_DIR})

# pkg-config, relocatable: its prefix is found from where the .pc file is (${pcfiledir}), so the
# same file serves `cmake --install --prefix P` and the package's /usr.
file(RELATIVE_PATH ATTNMT_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/attnmt.pc.in ${CMAKE_BINARY_DIR}/generated/attnmt.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/generated/attnmt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python module, with SentencePiece's module beside it (src/python/module.cpp looks there).
if(TARGET attnmt_python)
  set(ATTNMT_PYTHON_INSTALL_DIR lib/python3/dist-packages CACHE STRING
      "Where `cmake --install` puts the Python package attnmt/, relative to the prefix (Debian's dist-packages)")
  install(TARGETS attnmt_python LIBRARY DESTINATION ${ATTNMT_PYTHON_INSTALL_DIR}/attnmt)
  install(TARGETS attnmt_spm LIBRARY DESTINATION ${ATTNMT_PYTHON_INSTALL_DIR}/attnmt)
  install(FILES python/attnmt/__init__.py DESTINATION ${ATTNMT_PYTHON_INSTALL_DIR}/attnmt)
endif()

# --- the Debian package: `cpack -G DEB` in the build dir (after the build) writes
# attnmt_<version>_<arch>.deb. Its Depends are what dpkg-shlibdeps finds the programs and
# libraries link (Debian: dpkg-dev), plus the CPython the module was built for, which no ELF
# names (an extension module does not link libpython).
set(CPACK_PACKAGE_NAME attnmt)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR attnmt)
set(CPACK_PACKAGE_CONTACT "attnmt maintainers <attnmt@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "RNN encoder-decoder machine translation with pluggable attention")
set(CPACK_PACKAGE_DESCRIPTION "attnmt trains and runs RNN-attention translation models: the attnmt program, \
the libattnmt C++ library with its headers, CMake package and pkg-config file, and the Python module.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(TARGET attnmt_python)
  math(EXPR next_minor "${Python3_VERSION_MINOR} + 1")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "python3 (>= ${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}~), python3 (<< ${Python3_VERSION_MAJOR}.${next_minor})")
endif()
set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
