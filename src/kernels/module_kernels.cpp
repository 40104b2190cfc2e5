// module kernels
