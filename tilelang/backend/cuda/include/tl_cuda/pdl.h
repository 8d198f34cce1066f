// T.pdl_trigger / T.pdl_sync: programmatic dependent launch (griddepcontrol, sm_90+).
// trigger: this block's work that the next kernel depends on is done, it may start;
// sync: wait until the kernels this one depends on have completed and flushed.
// Without a launch that opts into the overlap, or before sm_90, both do nothing.
#pragma once
#include "common.h"

namespace tl {

TL_DEVICE int pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  return 0;
}

TL_DEVICE int pdl_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  return 0;
}

}  // namespace tl
