// The one header every generated kernel includes.
#pragma once
#include "common.h"
#include "reduce.h"
#include "atomic.h"
#include "mma.h"
