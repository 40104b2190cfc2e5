// module tokenizer
