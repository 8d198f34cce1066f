// T.pdl_trigger / T.pdl_sync: programmatic dependent launch (griddepcontrol, sm_90+),
// spelled as the CUDA device runtime's cudaTriggerProgrammaticLaunchCompletion /
// cudaGridDependencySynchronize (the published TileLang's spelling).
// trigger: this block's work that the next kernel depends on is done, it may start;
// sync: wait until the kernels this one depends on have completed and flushed.
// Without a launch that opts into the overlap both do nothing; before sm_90 (no
// griddepcontrol) they are empty functions of the same names.
#pragma once
#include "common.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// the runtime header includes crt/host_defines.h directly, which warns unless the
// including header says it is one of CUDA's own (what cuda_runtime.h does too)
#if !defined(__CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__)
#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__
#define TL_PDL_UNDEF_INTERNAL_HEADERS
#endif
#include <cuda_device_runtime_api.h>
#if defined(TL_PDL_UNDEF_INTERNAL_HEADERS)
#undef __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__
#undef TL_PDL_UNDEF_INTERNAL_HEADERS
#endif
#else
static __device__ __forceinline__ void cudaTriggerProgrammaticLaunchCompletion() {}
static __device__ __forceinline__ void cudaGridDependencySynchronize() {}
#endif
