// module model
