# cmake --install build --prefix P (docs/install.md):
#   P/include/edgellm/*.h                     the public headers
#   P/lib/libedgellm.so.V (+ SONAME link)     llama.cpp and ggml linked in, their symbols hidden
#   P/lib/libedgellm.a                        one archive: edgellm + llama.cpp's static libraries
#   P/lib/cmake/edgellm/                      find_package(edgellm): edgellm::edgellm (shared),
#                                             edgellm::edgellm_static
#   P/lib/pkgconfig/edgellm.pc                pkg-config; edgellm-static.pc for the archive
#   P/bin/edgellm                             the CLI
#   P/share/edgellm/                          the default model and the synth vocabulary
#   P/share/doc/edgellm/                      README, CHANGELOG, llama.cpp's license
# Every installed path is relative to P: the CMake package and edgellm.pc find P from where
# they are, so an install can be moved.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/edgellm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS edgellm_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${EDGELLM_FAT_ARCHIVE} DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(EDGELLM_BUILD_CLI)
  install(TARGETS edgellm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES ${CMAKE_SOURCE_DIR}/assets/edgellm-tiny-F32.gguf
              ${LLAMA_DIR}/models/ggml-vocab-qwen2.gguf
        DESTINATION ${CMAKE_INSTALL_DATADIR}/edgellm)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${LLAMA_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME LICENSE.llama.cpp)

# What a static link needs beyond libedgellm.a: the system libraries of llama.cpp's CPU backend
# (OpenMP) and of training's OpenBLAS, when this build has them.
set(EDGELLM_STATIC_DEPS "OpenSSL::Crypto;CURL::libcurl;SQLite::SQLite3;Threads::Threads")
set(EDGELLM_PC_LIBS_PRIVATE "-lpthread")
set(EDGELLM_FIND_OPENMP "")
if(GGML_OPENMP_ENABLED)
  list(APPEND EDGELLM_STATIC_DEPS "OpenMP::OpenMP_CXX")
  set(EDGELLM_FIND_OPENMP "find_dependency(OpenMP)")
  string(APPEND EDGELLM_PC_LIBS_PRIVATE " -lgomp")
endif()
foreach(lib ${EDGELLM_OPENBLAS_LIBS})
  list(APPEND EDGELLM_STATIC_DEPS "${lib}")
  get_filename_component(_dir ${lib} DIRECTORY)
  string(APPEND EDGELLM_PC_LIBS_PRIVATE " -L${_dir} -lopenblas")
endforeach()
list(APPEND EDGELLM_STATIC_DEPS ${CMAKE_DL_LIBS} m)
string(APPEND EDGELLM_PC_LIBS_PRIVATE " -ldl -lm")

set(EDGELLM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/edgellm)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/edgellmConfig.cmake.in
  ${CMAKE_BINARY_DIR}/dist/edgellmConfig.cmake
  INSTALL_DESTINATION ${EDGELLM_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
# 0.x: a minor release may change the C++ ABI, so only the same minor version is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/dist/edgellmConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/dist/edgellmConfig.cmake
              ${CMAKE_BINARY_DIR}/dist/edgellmConfigVersion.cmake
        DESTINATION ${EDGELLM_CMAKE_DIR})

# edgellm.pc finds its prefix from its own folder (${pcfiledir}), like the CMake package.
file(RELATIVE_PATH EDGELLM_PC_PREFIX_REL /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" EDGELLM_PC_PREFIX_REL "${EDGELLM_PC_PREFIX_REL}")
foreach(pc edgellm edgellm-static)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/${pc}.pc.in ${CMAKE_BINARY_DIR}/dist/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/dist/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
