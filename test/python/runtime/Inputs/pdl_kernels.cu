// Programmatic dependent launch kernels (sm_90: griddepcontrol).
// Regenerate: nvcc -ptx -arch=sm_90 pdl_kernels.cu -o pdl_kernels.ptx

// Primary: writes x, then lets the dependent grid start early.
extern "C" __global__ void pdl_primary(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// Dependent: may start before the primary ends; waits for the primary's memory to be visible
// before reading it.
extern "C" __global__ void pdl_secondary(float* x, int n) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
