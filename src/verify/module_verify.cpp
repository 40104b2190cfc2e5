// module verify
