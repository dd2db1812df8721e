// Probe: payload bandwidth of a producer->consumer ring in distributed shared memory (clusters of 2).
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ uint32_t saddr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint32_t mapa(uint32_t a, uint32_t rank) {
  uint32_t r; asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank)); return r; }
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ void wait_parity(uint32_t bar, uint32_t parity) {
  asm volatile("{\n.reg .pred p;\nW_%=:\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n@!p bra W_%=;\n}"
               :: "r"(bar), "r"(parity) : "memory"); }
__device__ __forceinline__ void remote_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(bar) : "memory"); }
__device__ __forceinline__ void remote_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory"); }

// mode 0: threads st.async into the consumer's ring; 1: bulk copy from a local staging ring;
// 2: threads st.shared::cluster then a release arrive
template <int MODE>
__global__ void __cluster_dims__(2, 1, 1) ring(int payload, int depth, int iters, unsigned long long* out, int* smid) {
  extern __shared__ __align__(1024) uint8_t smem[];
  uint64_t* full = (uint64_t*)smem;
  uint64_t* empty = full + 16;
  uint8_t* buf = smem + 1024;
  uint32_t rank; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  int tid = threadIdx.x, nt = blockDim.x;
  if (tid == 0) {
    for (int d = 0; d < depth; ++d) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(saddr(&full[d])));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(saddr(&empty[d])));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    int s; asm("mov.u32 %0, %%smid;" : "=r"(s)); smid[blockIdx.x] = s;
  }
  cluster_sync();
  int words = payload / 16;
  unsigned long long acc = 0;
  if (rank == 0) {
    uint32_t rfull = mapa(saddr(full), 1), rbuf = mapa(saddr(buf), 1);
    for (int i = 0; i < iters; ++i) {
      int slot = i % depth, round = i / depth;
      if (round > 0) wait_parity(saddr(&empty[slot]), (round - 1) & 1);
      uint32_t fb = rfull + slot * 8, dst = rbuf + slot * payload;
      if (MODE == 0) {
        if (tid == 0) remote_expect(fb, payload);
        for (int w = tid; w < words; w += nt)
          asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];"
                       :: "r"(dst + w * 16), "r"(i), "r"(w), "r"(i ^ w), "r"(7), "r"(fb) : "memory");
      } else if (MODE == 1) {
        uint4* st = (uint4*)(buf + slot * payload);
        for (int w = tid; w < words; w += nt) st[w] = make_uint4(i, w, i ^ w, 7);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (tid == 0) {
          remote_expect(fb, payload);
          asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                       :: "r"(dst), "r"(saddr(st)), "r"(payload), "r"(fb) : "memory");
        }
      } else {
        for (int w = tid; w < words; w += nt)
          asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};"
                       :: "r"(dst + w * 16), "r"(i), "r"(w), "r"(i ^ w), "r"(7) : "memory");
        __syncthreads();
        if (tid == 0) remote_arrive(fb);
      }
    }
  } else {
    uint32_t rempty = mapa(saddr(empty), 0);
    for (int i = 0; i < iters; ++i) {
      int slot = i % depth, round = i / depth;
      wait_parity(saddr(&full[slot]), round & 1);
      const uint4* src = (const uint4*)(buf + slot * payload);
      for (int w = tid; w < words; w += nt) { uint4 v = src[w]; acc += (unsigned long long)v.x + v.y + v.z + v.w; }
      __syncthreads();
      if (tid == 0) remote_arrive(rempty + slot * 8);
    }
  }
  cluster_sync();
  atomicAdd(out, acc);
}

template <int MODE>
double run(int clusters, int threads, int payload, int depth, int iters, int smem, bool check, int* colocated) {
  auto k = ring<MODE>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  unsigned long long* out; int* smid;
  CK(cudaMalloc(&out, 8)); CK(cudaMalloc(&smid, 4 * 2 * clusters));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  CK(cudaMemset(out, 0, 8));
  k<<<2 * clusters, threads, smem>>>(payload, depth, 4, out, smid);  // warm
  CK(cudaDeviceSynchronize());
  CK(cudaMemset(out, 0, 8));
  std::vector<float> ts;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(a);
    k<<<2 * clusters, threads, smem>>>(payload, depth, iters, out, smid);
    cudaEventRecord(b);
    CK(cudaEventSynchronize(b)); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms);
  }
  CK(cudaGetLastError());
  unsigned long long got; CK(cudaMemcpy(&got, out, 8, cudaMemcpyDeviceToHost));
  unsigned long long want = 0; int words = payload / 16;
  for (int i = 0; i < iters; ++i) for (int w = 0; w < words; ++w) want += (unsigned long long)i + w + (unsigned)(i ^ w) + 7;
  want *= (unsigned long long)clusters * 5;
  std::vector<int> sm(2 * clusters); CK(cudaMemcpy(sm.data(), smid, 4 * 2 * clusters, cudaMemcpyDeviceToHost));
  int same = 0; for (int c = 0; c < clusters; ++c) same += sm[2 * c] == sm[2 * c + 1];
  *colocated = same;
  if (got != want) printf("  CHECKSUM MISMATCH got %llu want %llu\n", got, want);
  std::sort(ts.begin(), ts.end());
  cudaFree(out); cudaFree(smid);
  return (double)clusters * iters * payload / (ts[2] * 1e-3) / 1e12;
}

int main() {
  // the 1 GiB device-to-device copy rate (bytes copied per second)
  size_t n = 1ull << 30; void *x, *y; CK(cudaMalloc(&x, n)); CK(cudaMalloc(&y, n));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ts;
  for (int r = 0; r < 7; ++r) { cudaEventRecord(a); CK(cudaMemcpy(y, x, n, cudaMemcpyDeviceToDevice)); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms); }
  std::sort(ts.begin(), ts.end());
  double copy = n / (ts[3] * 1e-3) / 1e12;
  printf("copy 1 GiB: %.3f TB/s (bytes copied per second)\n", copy);
  cudaFree(x); cudaFree(y);
  const char* names[] = {"st.async", "bulk", "st.cluster+arrive"};
  for (int payload : {16 << 10, 32 << 10, 64 << 10}) {
    for (int depth : {2, 3, 4}) {
      for (int perSM : {1, 2}) {
        int ring_bytes = depth * payload + 1024;
        int limit = perSM == 1 ? 227 * 1024 : 113 * 1024;
        if (ring_bytes > limit) continue;
        int smem = perSM == 1 ? std::max(ring_bytes, 120 * 1024) : std::max(ring_bytes, 100 * 1024);
        int clusters = perSM == 1 ? 66 : 132;
        long long iters = std::max(64LL, (long long)(4LL << 30) / ((long long)clusters * payload));
        for (int threads : {256, 512}) {
          for (int mode = 0; mode < 3; ++mode) {
            int co = 0; double bw;
            if (mode == 0) bw = run<0>(clusters, threads, payload, depth, iters, smem, true, &co);
            else if (mode == 1) bw = run<1>(clusters, threads, payload, depth, iters, smem, true, &co);
            else bw = run<2>(clusters, threads, payload, depth, iters, smem, true, &co);
            printf("payload %2d KB depth %d ctas/SM %d threads %d %-18s clusters %3d (same SM %3d): %.3f TB/s = %.2fx copy\n",
                   payload >> 10, depth, perSM, threads, names[mode], clusters, co, bw, bw / copy);
          }
        }
      }
    }
  }
  return 0;
}
