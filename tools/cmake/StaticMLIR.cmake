# Finds MLIR/LLVM 19 and makes every imported MLIR target link LLVM's static component
# libraries instead of the 129 MB libLLVM.so, so `kiln` runs on a host without LLVM installed.
# (Debian's MLIR targets name `LLVM`, the shared library, in INTERFACE_LINK_LIBRARIES even when
# LLVM_LINK_LLVM_DYLIB is off.) Must be included from the directory that calls find_package.
set(ZLIB_USE_STATIC_LIBS ON)
if(NOT MLIR_DIR)
  set(MLIR_DIR /usr/lib/llvm-19/lib/cmake/mlir)
endif()
find_package(MLIR REQUIRED CONFIG)
list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
include(TableGen)
include(AddLLVM)
include(AddMLIR)

llvm_map_components_to_libnames(KILN_LLVM_STATIC_LIBS Support Demangle)

# LLVMSupport's interface names libz3.so and the shared zstd; neither is used by what we call.
get_target_property(_support_iface LLVMSupport INTERFACE_LINK_LIBRARIES)
list(FILTER _support_iface EXCLUDE REGEX "z3|zstd")
set_target_properties(LLVMSupport PROPERTIES INTERFACE_LINK_LIBRARIES "${_support_iface}")

foreach(_t IN LISTS MLIR_EXPORTED_TARGETS)
  if(NOT TARGET ${_t})
    continue()
  endif()
  get_target_property(_type ${_t} TYPE)
  if(NOT _type STREQUAL "STATIC_LIBRARY")
    continue()
  endif()
  get_target_property(_iface ${_t} INTERFACE_LINK_LIBRARIES)
  if(_iface)
    list(TRANSFORM _iface REPLACE "^LLVM$" "${KILN_LLVM_STATIC_LIBS}")
    set_target_properties(${_t} PROPERTIES INTERFACE_LINK_LIBRARIES "${_iface}")
  endif()
endforeach()

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
set(MLIR_TABLEGEN_EXE /usr/lib/llvm-19/bin/mlir-tblgen)
