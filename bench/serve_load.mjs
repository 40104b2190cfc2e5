// bench/serve_load.mjs: load generator for `llmport serve` (Node >= 18, no packages).
// For each concurrency level C, C clients each stream one greedy completion of a
// PROMPT_TOKENS-token prompt (token ids) and N_GEN generated tokens (ignoring EOS is not
// possible through the API; the synthetic models rarely stop early and the counts are
// taken from what arrived). Reports aggregate generated tokens/s, mean and p99 time to first
// token and inter-token latency, as one JSON object per level.
// Usage: node bench/serve_load.mjs BASE_URL [levels=1,4,8,16] [prompt_tokens=128] [n_gen=128]
const [base, levelsArg = "1,4,8,16", promptArg = "128", genArg = "128"] = process.argv.slice(2);
const levels = levelsArg.split(",").map(Number);
const nPrompt = Number(promptArg), nGen = Number(genArg);

function pct(xs, p) {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

async function one(client) {
  const prompt = Array.from({ length: nPrompt }, (_, i) => 10 + ((i * 7 + client * 13) % 500));
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ prompt, max_tokens: nGen, temperature: 0, stream: true }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const times = [];
  let buf = "";
  const dec = new TextDecoder();
  for await (const part of res.body) {
    buf += dec.decode(part, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!ev.startsWith("data: ") || ev === "data: [DONE]") continue;
      const j = JSON.parse(ev.slice(6));
      if (j.choices?.length && j.choices[0].finish_reason === null) times.push(performance.now());
    }
  }
  return { t0, times };
}

for (const c of levels) {
  const start = performance.now();
  const runs = await Promise.all(Array.from({ length: c }, (_, k) => one(k)));
  const wall = (performance.now() - start) / 1000;
  const ttft = runs.map((r) => (r.times[0] - r.t0) / 1000);
  const itl = runs.flatMap((r) => r.times.slice(1).map((t, i) => (t - r.times[i]) / 1000));
  const tokens = runs.reduce((a, r) => a + r.times.length, 0);
  // Decode phase while all C decode: from the last first token to the first last token.
  const lastFirst = Math.max(...runs.map((r) => r.times[0]));
  const firstLast = Math.min(...runs.map((r) => r.times[r.times.length - 1]));
  let decodeTokens = 0;
  for (const r of runs) decodeTokens += r.times.filter((t) => t > lastFirst && t <= firstLast).length;
  const decodeTps = firstLast > lastFirst ? decodeTokens / ((firstLast - lastFirst) / 1000) : null;
  console.log(JSON.stringify({
    clients: c, prompt_tokens: nPrompt, generated_tokens: tokens, wall_s: +wall.toFixed(3),
    aggregate_tokens_per_s: +(tokens / wall).toFixed(2),
    decode_phase_tokens_per_s: decodeTps && +decodeTps.toFixed(2),
    ttft_mean_s: +mean(ttft).toFixed(4), ttft_p99_s: +pct(ttft, 99).toFixed(4),
    itl_mean_s: +mean(itl).toFixed(4), itl_p99_s: +pct(itl, 99).toFixed(4),
  }));
}
