// module chat
