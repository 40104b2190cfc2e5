// module runtime
