# One generator, many AOT variants: blockfuse_add_kernel() wraps add_halide_library and records
# each variant in a registry (kernel_registry.inc) that the runtime dispatches on, so the knob
# values exist in exactly one place: the call below.
#
# blockfuse_add_kernel(NAME <name> GENERATOR <gen> DEVICE cpu|cuda|opencl DTYPE f32|f16|bf16
#                      FAMILY <family> [PARAMS k=v ...] [LOAD k=v ...])
# PARAMS go to the generator and the registry; LOAD knobs only to the registry: they act when the
# runtime loads the kernel (max_registers=N: CUDA JIT register cap, runtime/kernel_registry.h).
set(BLOCKFUSE_CUDA_TARGET "host-cuda-cuda_capability_80" CACHE STRING "Halide target for CUDA kernels")
set(BLOCKFUSE_OPENCL_TARGET "host-opencl" CACHE STRING "Halide target for OpenCL (PoCL) kernels")
option(BLOCKFUSE_EMIT_STMT "Also write .stmt / PTX assembly for every kernel (reading codegen)" OFF)

set_property(GLOBAL PROPERTY BLOCKFUSE_KERNELS "")
set_property(GLOBAL PROPERTY BLOCKFUSE_REGISTRY_LINES "")

function(_blockfuse_halide_type out dtype)
    if (dtype STREQUAL "f32")
        set(${out} float32 PARENT_SCOPE)
    elseif (dtype STREQUAL "f16")
        set(${out} float16 PARENT_SCOPE)
    elseif (dtype STREQUAL "bf16")
        set(${out} bfloat16 PARENT_SCOPE)
    else ()
        message(FATAL_ERROR "blockfuse_add_kernel: unknown DTYPE '${dtype}'")
    endif ()
endfunction()

function(blockfuse_add_kernel)
    cmake_parse_arguments(ARG "" "NAME;GENERATOR;DEVICE;DTYPE;FAMILY" "PARAMS;TYPED;LOAD" ${ARGN})
    _blockfuse_halide_type(htype "${ARG_DTYPE}")
    if (ARG_DEVICE STREQUAL "cpu")
        set(target "host")
    elseif (ARG_DEVICE STREQUAL "cuda")
        set(target "${BLOCKFUSE_CUDA_TARGET}")
    elseif (ARG_DEVICE STREQUAL "opencl")
        set(target "${BLOCKFUSE_OPENCL_TARGET}")
    else ()
        message(FATAL_ERROR "blockfuse_add_kernel: unknown DEVICE '${ARG_DEVICE}'")
    endif ()
    # Inputs/outputs whose storage type follows DTYPE (the generator declares them void-typed).
    set(type_params "")
    foreach (io IN LISTS ARG_TYPED)
        list(APPEND type_params "${io}.type=${htype}")
    endforeach ()
    set(extra "")
    if (BLOCKFUSE_EMIT_STMT)
        list(APPEND extra STMT ${ARG_NAME}_stmt ASSEMBLY ${ARG_NAME}_asm)
    endif ()
    add_halide_library(${ARG_NAME} FROM ${ARG_GENERATOR}.generator
                       GENERATOR ${ARG_GENERATOR}
                       FUNCTION_NAME bf_${ARG_NAME}
                       TARGETS ${target}
                       USE_RUNTIME blockfuse_halide_runtime
                       PARAMS ${type_params} ${ARG_PARAMS}
                       ${extra})
    set_property(GLOBAL APPEND PROPERTY BLOCKFUSE_KERNELS ${ARG_NAME})
    string(REPLACE ";" " " knobs "${ARG_PARAMS};${ARG_LOAD}")
    string(STRIP "${knobs}" knobs)
    set_property(GLOBAL APPEND PROPERTY BLOCKFUSE_REGISTRY_LINES
                 "BF_KERNEL(${ARG_FAMILY}, bf_${ARG_NAME}, \"${ARG_NAME}\", \"${ARG_DEVICE}\", \"${ARG_DTYPE}\", \"${knobs}\")")
endfunction()

# Writes the registry include and an interface library that links every kernel.
function(blockfuse_finish_kernels)
    get_property(kernels GLOBAL PROPERTY BLOCKFUSE_KERNELS)
    get_property(lines GLOBAL PROPERTY BLOCKFUSE_REGISTRY_LINES)
    set(includes "")
    foreach (k IN LISTS kernels)
        string(APPEND includes "#include \"${k}.h\"\n")
    endforeach ()
    list(JOIN lines "\n" body)
    file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/generated/kernel_registry_includes.inc CONTENT "${includes}")
    file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/generated/kernel_registry.inc CONTENT "${body}\n")
    add_library(blockfuse_kernels INTERFACE)
    target_link_libraries(blockfuse_kernels INTERFACE ${kernels})
    target_include_directories(blockfuse_kernels INTERFACE ${CMAKE_BINARY_DIR}/generated)
endfunction()
