// hf_tokenize.cjs TOKENIZER_JSON STRINGS_JSONL: for each line (one JSON string) prints one
// JSON object with what Hugging Face's tokenizers library gives: ids (add_special_tokens
// true), ids_no_special, decoded (skip_special_tokens false) and decoded_skip of ids.
const {Tokenizer} = require('tokenizers');
const fs = require('fs');

async function main() {
  const [tokenizerJson, stringsFile] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(tokenizerJson);
  const lines = fs.readFileSync(stringsFile, 'utf8').split('\n').filter((l) => l.length > 0);
  const out = [];
  for (const line of lines) {
    const text = JSON.parse(line);
    const ids = Array.from((await tok.encode(text, null, {addSpecialTokens: true})).getIds());
    const idsNoSpecial = Array.from((await tok.encode(text, null, {addSpecialTokens: false})).getIds());
    out.push(JSON.stringify({
      ids,
      ids_no_special: idsNoSpecial,
      decoded: await tok.decode(ids, false),
      decoded_skip: await tok.decode(ids, true),
    }));
  }
  process.stdout.write(out.join('\n') + '\n');
}

main().catch((e) => {
  process.stderr.write(`error: ${e.message}\n`);
  process.exit(1);
});
