// Drives `llmport serve` with the official openai package: a chat completion, the same
// streamed (deltas concatenate to the same text), a 401 with a wrong key, a 400 (n = 2).
// Usage: node chat_client.mjs BASE_URL API_KEY. Prints one JSON line of results; exit 0
// when every check passed, 1 otherwise (the failing check on stderr).
import OpenAI from "openai";
import assert from "node:assert/strict";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
const messages = [{ role: "user", content: "Hello, who are you?" }];

try {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);

  const c = await client.chat.completions.create({ model: "x", messages, temperature: 0, max_tokens: 12 });
  assert.equal(c.object, "chat.completion");
  assert.equal(c.choices.length, 1);
  assert.equal(c.choices[0].message.role, "assistant");
  assert.equal(typeof c.choices[0].message.content, "string");
  assert.ok(["stop", "length"].includes(c.choices[0].finish_reason));
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);

  const stream = await client.chat.completions.create({
    model: "x", messages, temperature: 0, max_tokens: 12, stream: true,
    stream_options: { include_usage: true },
  });
  let text = "", finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices.length === 0) continue;
    text += chunk.choices[0].delta.content ?? "";
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(text, c.choices[0].message.content);
  assert.equal(finish, c.choices[0].finish_reason);
  assert.deepEqual(usage, c.usage);

  let status401 = 0;
  try {
    await new OpenAI({ baseURL, apiKey: "wrong", maxRetries: 0 }).chat.completions.create({ model: "x", messages });
  } catch (e) {
    assert.ok(e instanceof OpenAI.AuthenticationError, String(e));
    status401 = e.status;
  }
  assert.equal(status401, 401);

  let status400 = 0, param = null;
  try {
    await client.chat.completions.create({ model: "x", messages, n: 2 });
  } catch (e) {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    status400 = e.status;
    param = e.param;
  }
  assert.equal(status400, 400);
  assert.equal(param, "n");

  console.log(JSON.stringify({ content: c.choices[0].message.content, finish: c.choices[0].finish_reason,
                               usage: c.usage, chunks, status401, status400 }));
} catch (e) {
  console.error(e);
  process.exit(1);
}
