"""Compiling and running generated kernels: the compile pool and on-disk cache, runners that
allocate, launch and time them on the GPU, and the hold kernel of the timing loops."""
