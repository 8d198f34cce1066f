// A CPU stand-in for <hip/hip_runtime.h>: runs the HIP backend's generated kernels on the
// host, one std::thread per GPU thread, blocks one after another. Wavefront collectives
// (__shfl_xor, MFMA) exchange through per-wave slots between two wave barriers; MFMA is
// computed by the ISA's definition (each element of A, B and D found at the lane and item
// AMD's matrix instruction calculator gives), independent of tilelang/layout/mfma.py.
#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(n)

struct tl_dim3 { unsigned x = 0, y = 0, z = 0; };
// HIP's integer vector types (hip_vector_types.h) that copies move bits through
struct alignas(8) uint2 { unsigned int x, y; };
struct alignas(16) uint4 { unsigned int x, y, z, w; };
inline thread_local tl_dim3 threadIdx, blockIdx;
inline tl_dim3 blockDim, gridDim;

struct tl_emu_block {
  std::unique_ptr<std::barrier<>> block;
  std::vector<std::unique_ptr<std::barrier<>>> waves;
  std::vector<std::vector<unsigned char>> slots;   // per wave: 64 lanes x 256 bytes
};
inline tl_emu_block tl_emu;
inline std::mutex tl_emu_atomic;

inline int tl_emu_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline void __syncthreads() { tl_emu.block->arrive_and_wait(); }
inline unsigned char* tl_emu_slot(int lane) { return &tl_emu.slots[tl_emu_tid() / 64][lane * 256]; }
inline void tl_emu_wave_sync() { tl_emu.waves[tl_emu_tid() / 64]->arrive_and_wait(); }

template <typename T> T __shfl_xor(T v, int mask, int width = 64) {
  int lane = tl_emu_tid() % 64;
  std::memcpy(tl_emu_slot(lane), &v, sizeof(T));
  tl_emu_wave_sync();
  int src = (lane & ~(width - 1)) | ((lane ^ mask) & (width - 1));
  T r;
  std::memcpy(&r, tl_emu_slot(src), sizeof(T));
  tl_emu_wave_sync();
  return r;
}

inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
using std::isinf;
using std::isfinite;

template <typename T> T atomicAdd(T* p, T v) { std::lock_guard<std::mutex> g(tl_emu_atomic); T o = *p; *p = o + v; return o; }
template <typename T> T atomicMax(T* p, T v) { std::lock_guard<std::mutex> g(tl_emu_atomic); T o = *p; *p = o < v ? v : o; return o; }
template <typename T> T atomicMin(T* p, T v) { std::lock_guard<std::mutex> g(tl_emu_atomic); T o = *p; *p = v < o ? v : o; return o; }
inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
  std::lock_guard<std::mutex> g(tl_emu_atomic); unsigned o = *p; if (o == cmp) *p = v; return o;
}

// MFMA by definition ---------------------------------------------------------------------
// operand element (i or j, k) of an M-row instruction with R items per lane: lane i + M*(k/R), item k%R
// D[i][j]: 32x32: lane j + 32*((i/4)%2), item 4*(i/8) + i%4;  16x16: lane j + 16*(i/4), item i%4
template <int M, int K, int R, typename AV, typename CV, typename Elem>
CV tl_emu_mfma(AV a, AV b, CV c, Elem elem) {
  constexpr int N = M, CR = M * N / 64;
  int lane = tl_emu_tid() % 64;
  unsigned char* s = tl_emu_slot(lane);
  std::memcpy(s, &a, sizeof(AV));
  std::memcpy(s + 64, &b, sizeof(AV));
  std::memcpy(s + 128, &c, sizeof(CV));
  tl_emu_wave_sync();
  CV d;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int dl = M == 32 ? j + 32 * ((i / 4) % 2) : j + 16 * (i / 4);
      int dr = M == 32 ? 4 * (i / 8) + i % 4 : i % 4;
      if (dl != lane) continue;
      float acc = c[dr];
      for (int k = 0; k < K; ++k) {
        const unsigned char* sa = tl_emu_slot(i + M * (k / R));
        const unsigned char* sb = tl_emu_slot(j + N * (k / R)) + 64;
        acc += elem(sa, k % R) * elem(sb, k % R);
      }
      d[dr] = acc;
    }
  tl_emu_wave_sync();
  (void)CR;
  return d;
}
inline float tl_emu_f16(const unsigned char* p, int r) { _Float16 h; std::memcpy(&h, p + 2 * r, 2); return (float)h; }
inline float tl_emu_bf16(const unsigned char* p, int r) {
  uint16_t b; std::memcpy(&b, p + 2 * r, 2); return __uint_as_float((unsigned)b << 16);
}
float tl_emu_fp8(const unsigned char* p, int r);   // defined after tl_hip.h's FNUZ type

#define __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, x, y, z) tl_emu_mfma<32, 8, 4>(a, b, c, tl_emu_f16)
#define __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, x, y, z) tl_emu_mfma<16, 16, 4>(a, b, c, tl_emu_f16)
#define __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, c, x, y, z) tl_emu_mfma<32, 8, 4>(a, b, c, tl_emu_bf16)
#define __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, x, y, z) tl_emu_mfma<16, 16, 4>(a, b, c, tl_emu_bf16)
#define __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8(a, b, c, x, y, z) tl_emu_mfma<32, 16, 8>(a, b, c, tl_emu_fp8)
#define __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(a, b, c, x, y, z) tl_emu_mfma<16, 32, 8>(a, b, c, tl_emu_fp8)

// a launch: blocks in order, each with its threads ---------------------------------------
inline void tl_emu_launch(unsigned gx, unsigned gy, unsigned gz, unsigned tx, const std::function<void()>& fn) {
  blockDim = {tx, 1, 1};
  gridDim = {gx, gy, gz};
  int waves = (tx + 63) / 64;
  for (unsigned bz = 0; bz < gz; ++bz)
    for (unsigned by = 0; by < gy; ++by)
      for (unsigned bx = 0; bx < gx; ++bx) {
        tl_emu.block = std::make_unique<std::barrier<>>(tx);
        tl_emu.waves.clear();
        tl_emu.slots.assign(waves, std::vector<unsigned char>(64 * 256));
        for (int w = 0; w < waves; ++w)
          tl_emu.waves.push_back(std::make_unique<std::barrier<>>(std::min<int>(64, tx - 64 * w)));
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < tx; ++t)
          ts.emplace_back([=, &fn] { threadIdx = {t, 0, 0}; blockIdx = {bx, by, bz}; fn(); });
        for (auto& t : ts) t.join();
      }
}
