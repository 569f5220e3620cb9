// Transactions through ioredis, the way its documentation shows them.
//
// Usage: node tx.js PORT
//
// Runs against a server on 127.0.0.1:PORT whose keys it may overwrite (it uses the "js:"
// prefix), prints a JSON summary and exits 0, or prints what differed to stderr and exits 1.
// TestTransactionClientLibraries in ../../transactions_test.go runs it against lavik-data and redis-server.
"use strict";

const assert = require("node:assert/strict");
const Redis = require("ioredis");

async function main() {
  const port = Number(process.argv[2]);
  const opts = { host: "127.0.0.1", port, maxRetriesPerRequest: 0, enableOfflineQueue: true };
  const redis = new Redis(opts);
  const other = new Redis(opts);
  const out = { ioredis: require("ioredis/package.json").version };
  try {
    await redis.del("js:a", "js:w", "js:s", "js:t", "js:q");

    // multi().....exec(): one [err, result] pair per command.
    const r1 = await redis.multi().set("js:a", "1").incr("js:a").incrby("js:a", 5).get("js:a").mget("js:a", "js:missing").exec();
    assert.deepEqual(r1, [[null, "OK"], [null, 2], [null, 7], [null, "7"], [null, ["7", null]]], "multi().exec()");
    out.multi = r1;

    // multi({ pipeline: false }): MULTI goes out at once, then each command, answered QUEUED.
    assert.equal(await redis.multi({ pipeline: false }), "OK");
    assert.equal(await redis.set("js:q", "x"), "QUEUED", "a command sent at once inside MULTI");
    assert.equal(await redis.incr("js:a"), "QUEUED");
    assert.deepEqual(await redis.exec(), [[null, "OK"], [null, 8]], "EXEC of multi({ pipeline: false })");

    // WATCH, a concurrent modification, then MULTI ... EXEC: the result is null.
    await redis.set("js:w", "1");
    await redis.watch("js:w");
    assert.equal(await redis.get("js:w"), "1");
    await other.set("js:w", "2");
    const r2 = await redis.multi().set("js:w", "3").incr("js:a").exec();
    assert.equal(r2, null, "exec() after the watched key changed");
    assert.equal(await redis.get("js:w"), "2");
    assert.equal(await redis.get("js:a"), "8");
    // EXEC forgot the watched key: the next transaction runs.
    await other.set("js:w", "4");
    assert.deepEqual(await redis.multi().set("js:w", "5").exec(), [[null, "OK"]]);
    // UNWATCH too.
    await redis.watch("js:w");
    await other.set("js:w", "6");
    await redis.unwatch();
    assert.deepEqual(await redis.multi().get("js:w").exec(), [[null, "6"]]);

    // An error while EXEC runs fails that command only.
    await redis.set("js:s", "abc");
    const r3 = await redis.multi().incr("js:s").set("js:t", "x").exec();
    assert.ok(r3[0][0] instanceof Error, "the failing INCR's error");
    assert.equal(r3[0][0].message, "ERR value is not an integer or out of range");
    assert.deepEqual(r3[1], [null, "OK"]);
    assert.equal(await redis.get("js:t"), "x");
    out.execError = r3[0][0].message;

    // A command refused while queuing discards the whole transaction (EXECABORT).
    await redis.del("js:q");
    let abort = null;
    try {
      await redis.multi().set("js:q", "1").call("NOSUCHCOMMAND", "x").exec();
    } catch (e) {
      abort = e;
    }
    assert.ok(abort, "exec() of a transaction with an unknown command must reject");
    assert.equal(abort.message, "EXECABORT Transaction discarded because of previous errors.");
    assert.equal(abort.previousErrors.length, 1);
    assert.match(abort.previousErrors[0].message, /^ERR unknown command 'NOSUCHCOMMAND'/);
    assert.equal(await redis.exists("js:q"), 0, "nothing of an EXECABORT transaction applies");
    out.execAbort = abort.message;

    // DISCARD.
    await redis.multi({ pipeline: false });
    assert.equal(await redis.set("js:q", "discarded"), "QUEUED");
    assert.equal(await redis.discard(), "OK");
    assert.equal(await redis.exists("js:q"), 0);
  } finally {
    redis.disconnect();
    other.disconnect();
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
