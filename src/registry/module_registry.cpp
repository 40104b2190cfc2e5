// module registry
