// The one header every generated kernel includes.
#pragma once
#include "common.h"
#include "reduce.h"
#include "atomic.h"
#include "async.h"
#include "mma.h"
#include "warp_mma.h"
#include "wgmma.h"
#include "tma.h"
#include "ldst.h"
#include "random.h"
#include "pdl.h"
