/*
 * cl_dmabridge.h: dmabridge's own OpenCL extension.
 *
 *   cl_dmabridge_dma_buf_export (version 1.0.0)
 *
 * Exports a USM or SVM allocation (cl_intel_unified_shared_memory,
 * clSVMAlloc) or a buffer object as a Linux dma-buf file descriptor, which
 * other drivers import without a copy (V4L2 V4L2_MEMORY_DMABUF, DRM PRIME,
 * EGL/Vulkan external memory, another process over SCM_RIGHTS), and asks
 * whether, how large and at which offset an export would be.
 *
 * The entry points are reached through
 * clGetExtensionFunctionAddressForPlatform(platform, "<name>") only (they
 * carry the vendor suffix DMABRIDGE, not the KHR ICD suffix); the *_fn
 * typedefs below give their types.
 *
 * Availability. dmabridge makes the dma-buf with /dev/udmabuf (Linux
 * CONFIG_UDMABUF). The platform and every device list
 * "cl_dmabridge_dma_buf_export" in CL_PLATFORM_EXTENSIONS /
 * CL_DEVICE_EXTENSIONS (and the *_WITH_VERSION queries) only where
 * /dev/udmabuf can be opened by the process. Where it cannot, the entry
 * points still resolve: the info queries answer CL_DMA_BUF_EXPORTABLE_DMABRIDGE
 * = CL_FALSE and the exports fail with CL_INVALID_OPERATION.
 *
 * Semantics.
 * - The dma-buf spans the whole pages the allocation or buffer covers. A
 *   small USM/SVM allocation can share its page with neighbouring
 *   allocations made before the export, whose bytes are then visible
 *   through the dma-buf too: allocate whole pages (a size and alignment
 *   that are multiples of the page size) to export exactly one allocation.
 *   CL_DMA_BUF_OFFSET_DMABRIDGE says where the byte asked about lies in it,
 *   CL_DMA_BUF_SIZE_DMABRIDGE how large it is (also lseek(fd, 0, SEEK_END)).
 * - The fd is the caller's: it is opened O_RDWR | O_CLOEXEC, and the caller
 *   closes it (or hands it on). Each call makes a new dma-buf.
 * - The dma-buf maps the same pages as the allocation: what the host or a
 *   kernel writes through the allocation is seen through the dma-buf and
 *   the other way round (bracket CPU access through an mmap of the fd with
 *   DMA_BUF_IOCTL_SYNC, as for any dma-buf). Commands that write the memory
 *   must have completed (clFinish / their event) before an importer reads.
 * - The dma-buf may outlive the allocation or buffer: after clMemFreeINTEL /
 *   clSVMFree / the last clReleaseMemObject its pages stay with the dma-buf
 *   (with their last contents) and are never handed to a later allocation.
 * - A buffer is exported with its contents made current in its host pages
 *   first. Sub-buffers (they share the parent's pages: export the parent)
 *   and CL_MEM_USE_HOST_PTR buffers (the pages are the application's) are
 *   not exported.
 * - udmabuf limits one dma-buf to its size_limit_mb module parameter
 *   (64 MiB by default): larger exports fail with CL_OUT_OF_RESOURCES, and
 *   CL_DMA_BUF_EXPORTABLE_DMABRIDGE answers CL_FALSE for them.
 *
 * Errors (besides the usual handle errors: CL_INVALID_CONTEXT for a bad
 * context, CL_INVALID_MEM_OBJECT for a bad memobj):
 *   CL_INVALID_VALUE      ptr is in no USM/SVM allocation of context; fd is
 *                         NULL; unknown param_name; param_value_size smaller
 *                         than the answer while param_value is not NULL.
 *   CL_INVALID_PROPERTY   a property is given (none is defined in 1.0.0:
 *                         properties is NULL or points to a 0).
 *   CL_INVALID_MEM_OBJECT memobj is a sub-buffer or a CL_MEM_USE_HOST_PTR
 *                         buffer.
 *   CL_INVALID_OPERATION  exports are not available here (no /dev/udmabuf),
 *                         or the allocation lives in a device's own memory
 *                         (a PCI BAR), which is not memfd pages.
 *   CL_OUT_OF_RESOURCES   udmabuf refused (above its size limit, out of fds).
 * A failed export writes nothing to *fd and changes nothing.
 *
 * The enum values are dmabridge's (not registered with Khronos).
 */
#ifndef CL_DMABRIDGE_H
#define CL_DMABRIDGE_H

#include <CL/cl.h>

#ifdef __cplusplus
extern "C" {
#endif

#define cl_dmabridge_dma_buf_export 1
#define CL_DMABRIDGE_DMA_BUF_EXPORT_EXTENSION_NAME "cl_dmabridge_dma_buf_export"
#define CL_DMABRIDGE_DMA_BUF_EXPORT_EXTENSION_VERSION CL_MAKE_VERSION(1, 0, 0)

/* Zero-terminated (name, value) list; no property is defined yet. */
typedef cl_properties cl_dma_buf_export_properties_dmabridge;
typedef cl_uint cl_dma_buf_info_dmabridge;

/* cl_dma_buf_info_dmabridge */
/* cl_bool: can it be exported here, now? */
#define CL_DMA_BUF_EXPORTABLE_DMABRIDGE 0x4F10
/* size_t: bytes of the dma-buf an export makes (whole pages). */
#define CL_DMA_BUF_SIZE_DMABRIDGE 0x4F11
/* size_t: offset in that dma-buf of the byte ptr points to (0 for a buffer). */
#define CL_DMA_BUF_OFFSET_DMABRIDGE 0x4F12
/* size_t, images only: bytes from one row of pixels to the next in the
 * dma-buf (CL_IMAGE_ROW_PITCH); CL_INVALID_MEM_OBJECT for a buffer. */
#define CL_DMA_BUF_ROW_PITCH_DMABRIDGE 0x4F13
/* size_t, images only: bytes from one slice (3D slice, array layer or 1D
 * array element) to the next; 0 for 1D and 2D images. */
#define CL_DMA_BUF_SLICE_PITCH_DMABRIDGE 0x4F14

/* Exports the pages of the USM or SVM allocation of context that ptr points
 * into (any byte of it) as a dma-buf; *fd receives its descriptor. */
typedef cl_int(CL_API_CALL *clGetMemAllocDmaBufFdDMABRIDGE_fn)(
    cl_context context, const void *ptr,
    const cl_dma_buf_export_properties_dmabridge *properties, int *fd);

/* Exports the host pages of buffer memobj as a dma-buf. */
typedef cl_int(CL_API_CALL *clGetMemObjectDmaBufFdDMABRIDGE_fn)(
    cl_mem memobj, const cl_dma_buf_export_properties_dmabridge *properties,
    int *fd);

/* clGetMemAllocInfoINTEL-style query of the allocation ptr points into
 * (a ptr in a device's own memory: CL_DMA_BUF_EXPORTABLE_DMABRIDGE is
 * CL_FALSE, the other queries CL_INVALID_OPERATION). */
typedef cl_int(CL_API_CALL *clGetMemAllocDmaBufInfoDMABRIDGE_fn)(
    cl_context context, const void *ptr, cl_dma_buf_info_dmabridge param_name,
    size_t param_value_size, void *param_value, size_t *param_value_size_ret);

/* clGetMemObjectInfo-style query of buffer memobj. */
typedef cl_int(CL_API_CALL *clGetMemObjectDmaBufInfoDMABRIDGE_fn)(
    cl_mem memobj, cl_dma_buf_info_dmabridge param_name,
    size_t param_value_size, void *param_value, size_t *param_value_size_ret);

#ifdef __cplusplus
}
#endif

#endif /* CL_DMABRIDGE_H */
