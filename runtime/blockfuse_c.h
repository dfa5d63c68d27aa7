/* The C surface of libblockfuse_runtime.so, for callers in other languages (python/blockfuse calls it
 * through ctypes). A kernel is opened for a workload key and a strategy: the dispatcher picks it (tuning
 * record > variant data > heuristic, runtime/dispatch.h) and it is loaded from the prebuilt folder or the
 * kernel cache, or generated into the cache (runtime/kernel_cache.h). bf_run runs it on the caller's
 * memory: device pointers on CUDA, wrapped as Halide buffers without a copy, launched in the primary
 * context of the caller's device on the caller's stream (the CUDA runtime's, so PyTorch's, context).
 *
 * Tensors are given in Halide's order, innermost dimension first, strides in elements: an NHWC
 * activation is (c, x, y, n); a layer's weights (k, cg, kx, ky), i.e. a dense (ky, kx, cg, k) array; a
 * bias (k), f32. bf_describe lists every tensor a kernel takes, in the order bf_run takes them, with its
 * dtype and extents.
 *
 * Errors: a call that fails returns non-zero (NULL for pointers) and bf_last_error() says why in one
 * line (per thread). Codes: 2 bad input (a key, a tensor that does not fit), 1 a kernel that could not
 * be made, loaded or run. */
#ifndef BLOCKFUSE_C_H
#define BLOCKFUSE_C_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { BF_F32 = 0, BF_F16 = 1, BF_BF16 = 2 };

typedef struct bf_tensor {
    void *data;         /* device pointer (cuda) or host pointer (cpu), 16-byte aligned */
    int32_t dtype;      /* BF_F32, BF_F16, BF_BF16 */
    int32_t dims;       /* 1 to 4 */
    int64_t extents[4]; /* innermost first */
    int64_t strides[4]; /* in elements; strides[0] must be 1 */
} bf_tensor;

/* The reason the last failing call on this thread failed. */
const char *bf_last_error(void);
/* JSON: Halide version, source hash, commit, kernel cache, prebuilt and generator folders, the CUDA
 * device (or why there is none), the tuning record files. */
const char *bf_info(void);
/* The canonical form of a workload key, or NULL (bad key: bf_last_error names the field). */
const char *bf_canonical(const char *key);

/* Opens the kernel of `key` for `strategy` ("" or NULL: the default, the fastest tuning record's,
 * else the family's first) on `device` ("cuda" or "cpu"). load = 0 only dispatches (nothing is built:
 * what a cache fill would make); load = 1 loads or generates the kernel. NULL on failure. */
void *bf_open(const char *key, const char *strategy, const char *device, int load, int *code);
/* JSON of an opened kernel: key, family, strategy, strategies, source, kernel, knobs, why, origin, and
 * tensors [{name, dtype, extents}] in bf_run's order. Valid until bf_close. */
const char *bf_describe(void *handle);
/* Runs the kernel (bf_open with load = 1) on `count` tensors; on CUDA in the primary context of
 * `device_ordinal` on `stream` (a CUstream, NULL: the default stream), asynchronously as any launch. */
int bf_run(void *handle, const bf_tensor *tensors, int count, int device_ordinal, void *stream);
/* The device memory one call of the kernel allocates for itself (a layer-by-layer block's hidden
 * activations, a split-K partial sum), in bytes, with room for 256-byte alignment: measured on the
 * handle's first bf_run on CUDA (that call allocates it from the driver and synchronizes), 0 on the CPU,
 * -1 before the first run. */
int64_t bf_workspace_bytes(void *handle);
/* bf_run with the call's own device allocations taken from `workspace` (device memory of at least
 * bf_workspace_bytes, e.g. a tensor of the caller's allocator): the call then allocates and frees no
 * device memory, so it can be captured in a CUDA graph, and the workspace is the caller's to reuse once
 * the call's work on `stream` is done. workspace NULL: bf_run. Code 2 if the kernel has not run yet or
 * the workspace is smaller than it needs. */
int bf_run_with_workspace(void *handle, const bf_tensor *tensors, int count, int device_ordinal, void *stream,
                          void *workspace, uint64_t workspace_bytes);
void bf_close(void *handle);

#ifdef __cplusplus
}
#endif
#endif
