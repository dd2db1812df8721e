// Kernels for test/python/runtime/test_runtime_gpu.py.
// Regenerate: nvcc -ptx -arch=sm_80 runtime_kernels.cu -o runtime_kernels.ptx
// extern "C" keeps the PTX entry names unmangled.

// extern "C" keeps the name unmangled for cuModuleGetGlobal. (Whole-program PTX declares it
// `.global` without `.visible`; the CUDA runtime looks such variables up the same way.)
extern "C" {
__device__ int launch_counter;
}

extern "C" __global__ void add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

// One argument of every scalar kind the launcher packs: out = x * a + b + offset.
extern "C" __global__ void axpb(float* out, const float* x, float a, double b, long long n,
                                int offset) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (float)((double)(x[i] * a) + b) + (float)offset;
}

// Stages each block's elements in the last blockDim.x floats of dynamic shared memory, so a
// launch with more than 48 KiB touches memory beyond the default limit.
extern "C" __global__ void smem_plus_one(float* x, int n, int smem_floats) {
    extern __shared__ float staged[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float* slot = &staged[smem_floats - blockDim.x + threadIdx.x];
    *slot = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) x[i] = *slot + 1.0f;
}

extern "C" __global__ void bump_counter() {
    if (threadIdx.x == 0) atomicAdd(&launch_counter, 1);
}

extern "C" __global__ void trap_now(int* unused) {
    if (threadIdx.x == 0 && unused == nullptr) __trap();
}

// A spin-wait with a bounded number of polls that traps when it gives up, like tilesync's
// debug-build waits.
extern "C" __global__ void spin_wait_or_trap(const volatile int* flag, int max_polls) {
    if (threadIdx.x == 0) {
        int polls = 0;
        while (*flag == 0) {
            if (++polls > max_polls) __trap();
            __nanosleep(100);
        }
    }
    __syncthreads();
}

// Semaphore i gets `posts` posts (release: fence, then atomic add).
extern "C" __global__ void post_all(int* sem, int n, int posts) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        for (int p = 0; p < posts; ++p) {
            __threadfence();
            atomicAdd(&sem[i], 1);
        }
    }
}

// ready[i] = 1 when semaphore i has reached `expected` (what a wait of that epoch checks).
extern "C" __global__ void check_ready(const volatile int* sem, int expected, int* ready, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) ready[i] = sem[i] >= expected ? 1 : 0;
}
