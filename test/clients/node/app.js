// What a small application does with ioredis: a rate limiter script loaded once and run by
// EVALSHA (and by defineCommand), a subscriber loop, and a pipeline, the way ioredis's
// documentation shows them.
//
// Usage: node app.js PORT
//
// Runs against a server on 127.0.0.1:PORT whose keys it may overwrite (it uses the "jsapp:"
// prefix), prints a JSON summary and exits 0, or prints what differed to stderr and exits 1.
// TestClientLibraryApps in ../../clientapps_test.go runs it against lavik-data and redis-server.
"use strict";

const assert = require("node:assert/strict");
const Redis = require("ioredis");

// A fixed-window rate limiter: at most ARGV[1] calls per window of ARGV[2] seconds.
const LIMITER = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then return {n, 0} end
return {n, 1}
`;

async function main() {
  const port = Number(process.argv[2]);
  const opts = { host: "127.0.0.1", port, maxRetriesPerRequest: 0 };
  const redis = new Redis(opts);
  const sub = new Redis(opts);
  const out = { ioredis: require("ioredis/package.json").version };
  try {
    await redis.del("jsapp:rl", "jsapp:list", "jsapp:h");

    const sha = await redis.script("LOAD", LIMITER);
    assert.deepEqual(await redis.script("EXISTS", sha), [1], "SCRIPT EXISTS");
    const allowed = [];
    for (let i = 0; i < 5; i++) {
      allowed.push((await redis.evalsha(sha, 1, "jsapp:rl", 3, 60))[1]);
    }
    assert.deepEqual(allowed, [1, 1, 1, 0, 0], "rate limiter decisions");
    const ttl = await redis.ttl("jsapp:rl");
    assert.ok(ttl > 0 && ttl <= 60, `the window's TTL ${ttl}`);
    await redis.script("FLUSH");
    await assert.rejects(redis.evalsha(sha, 1, "jsapp:rl", 3, 60), /NOSCRIPT/, "EVALSHA after SCRIPT FLUSH");
    // defineCommand sends EVALSHA and falls back to EVAL on NOSCRIPT.
    redis.defineCommand("limit", { numberOfKeys: 1, lua: LIMITER });
    assert.deepEqual(await redis.limit("jsapp:rl", 3, 60), [6, 0], "defineCommand after a flush");
    out.limiter = allowed;

    // A subscriber loop: messages arrive as events on the subscribed connection.
    const got = [];
    const all = new Promise((resolve) => {
      sub.on("message", (ch, msg) => { got.push(["message", ch, msg]); if (got.length === 3) resolve(); });
      sub.on("pmessage", (pat, ch, msg) => { got.push(["pmessage", ch, msg]); if (got.length === 3) resolve(); });
    });
    assert.equal(await sub.subscribe("jsapp:news"), 1);
    assert.equal(await sub.psubscribe("jsapp:*:alerts"), 2);
    assert.equal(await redis.publish("jsapp:news", "hello"), 1);
    assert.equal(await redis.publish("jsapp:db:alerts", "disk"), 1);
    assert.equal(await redis.publish("jsapp:news", "bye"), 1);
    let timer;
    const late = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error("messages did not arrive in 10 s")), 10000); });
    await Promise.race([all, late]).finally(() => clearTimeout(timer));
    assert.deepEqual(got, [["message", "jsapp:news", "hello"], ["pmessage", "jsapp:db:alerts", "disk"], ["message", "jsapp:news", "bye"]], "messages");
    out.messages = got.length;

    // A pipeline: one round trip, [err, result] pairs in order.
    const res = await redis.pipeline()
      .rpush("jsapp:list", "a", "b", "c").lrange("jsapp:list", 0, -1)
      .hset("jsapp:h", { f1: "1", f2: "2" }).hincrby("jsapp:h", "f1", 10).hgetall("jsapp:h")
      .get("jsapp:missing")
      .exec();
    assert.deepEqual(res, [[null, 3], [null, ["a", "b", "c"]], [null, 2], [null, 11], [null, { f1: "11", f2: "2" }], [null, null]], "pipeline");
    out.pipeline = res.length;
    console.log(JSON.stringify(out));
  } finally {
    redis.disconnect();
    sub.disconnect();
  }
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
