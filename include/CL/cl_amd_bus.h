/*
 * cl_amd_bus.h: the types and tokens of cl_amd_bus_addressable_memory as
 * AMD's CL/cl_ext.h defines them (Khronos' headers lack them), for
 * applications of dmabridge.
 *
 * Argument order: clEnqueueMakeBuffersResidentAMD takes
 * blocking_make_resident before bus_addresses, as AMD's header does (the
 * extension text's section 5.4.4 has them the other way round).
 *
 * The entry points are reached through
 * clGetExtensionFunctionAddressForPlatform(platform, "<name>"); the *_fn
 * typedefs below give their types. dmabridge lists
 * "cl_amd_bus_addressable_memory" in CL_PLATFORM_EXTENSIONS and
 * CL_DEVICE_EXTENSIONS only where buffers can be made resident (a device
 * bound to vfio-pci gives the platform an IOMMU domain); elsewhere the
 * entry points answer their error codes, and making a buffer resident is
 * CL_OUT_OF_HOST_MEMORY.
 *
 * dmabridge's choices where the text leaves room:
 * - Markers only increase and never wrap: clEnqueueWriteSignalAMD writes a
 *   32-bit marker (offset a multiple of 4) and refuses one not above the
 *   last value written to the buffer (CL_INVALID_VALUE), compared as
 *   unsigned 32-bit numbers.
 * - clEnqueueWaitSignalAMD waits until <value> is written, i.e. until the
 *   marker is at least <value>: marker >= value, unsigned, no wrap-around
 *   (a later marker means the value was passed). A signal page starts at 0:
 *   a wait for 0 is over at once, a wait for any other value holds the
 *   queue until a device writes it (or more), or until the queue is
 *   released (the command then ends with CL_INVALID_COMMAND_QUEUE).
 * - The residency is made by the clEnqueueMakeBuffersResidentAMD call
 *   itself: bus_addresses are filled when it returns, blocking or not.
 * - Sub-buffers of either kind of buffer are CL_INVALID_MEM_OBJECT; an
 *   external physical buffer is write-only (reads, maps, copies from it and
 *   built-in kernels reading it are CL_INVALID_OPERATION).
 * - An external physical buffer whose bytes a live buffer on the same
 *   surface address, or a device allocation of a dmabridge BAR device on
 *   that BAR, already uses is CL_OUT_OF_RESOURCES.
 * - Bus addresses in a BAR of a PCI function dmabridge itself drives (an
 *   edu DMA engine, or a BAR device's function outside its memory BAR) are
 *   CL_MEM_OBJECT_ALLOCATION_FAILURE: they hold registers, which a buffer
 *   write or a marker must not reach.
 * - The remote memory is an external physical buffer's storage on every
 *   device of the context, the BAR device included: commands on any queue
 *   write it (by DMA peer-to-peer or by the CPU), never a copy of it, so
 *   a marker written after them follows data that is in the remote memory.
 * - Once the PCI function behind an external physical buffer is removed or
 *   unbound, every command on the buffer (on any queue, the CPU device's
 *   included) and every clEnqueueWriteSignalAMD on it end with
 *   CL_DEVICE_NOT_AVAILABLE (a blocking call returns it); the reason, naming
 *   the function, is logged.
 * - Bus addresses of a released buffer are unmapped and not handed to the
 *   next resident buffers (until 64 later releases or the IOVA space runs
 *   out), so a device still using them faults instead of writing them.
 */
#ifndef CL_AMD_BUS_H
#define CL_AMD_BUS_H

#include <CL/cl.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CL_MEM_BUS_ADDRESSABLE_AMD (1ull << 30)
#define CL_MEM_EXTERNAL_PHYSICAL_AMD (1ull << 31)

#define CL_COMMAND_WAIT_SIGNAL_AMD 0x4080
#define CL_COMMAND_WRITE_SIGNAL_AMD 0x4081
#define CL_COMMAND_MAKE_BUFFERS_RESIDENT_AMD 0x4082

typedef struct _cl_bus_address_amd {
    cl_ulong surface_bus_address;
    cl_ulong marker_bus_address;
} cl_bus_address_amd;

typedef cl_int(CL_API_CALL *clEnqueueWaitSignalAMD_fn)(cl_command_queue command_queue, cl_mem mem_object,
                                                       cl_uint value, cl_uint num_events,
                                                       const cl_event *event_wait_list, cl_event *event);

typedef cl_int(CL_API_CALL *clEnqueueWriteSignalAMD_fn)(cl_command_queue command_queue, cl_mem mem_object,
                                                        cl_uint value, cl_ulong offset, cl_uint num_events,
                                                        const cl_event *event_wait_list, cl_event *event);

typedef cl_int(CL_API_CALL *clEnqueueMakeBuffersResidentAMD_fn)(cl_command_queue command_queue,
                                                                cl_uint num_mem_objects, cl_mem *mem_objects,
                                                                cl_bool blocking_make_resident,
                                                                cl_bus_address_amd *bus_addresses,
                                                                cl_uint num_events, const cl_event *event_wait_list,
                                                                cl_event *event);

#ifdef __cplusplus
}
#endif

#endif
