#!/usr/bin/env python3
"""What a small application does with redis-py: a rate limiter script loaded once and run by
EVALSHA, a subscriber loop, and a pipeline, the way redis-py's documentation shows them.

Usage: app.py PORT

Runs against a server on 127.0.0.1:PORT whose keys it may overwrite (it uses the "pyapp:"
prefix), prints a JSON summary and exits 0, or prints what differed to stderr and exits 1.
TestClientLibraryApps in ../../clientapps_test.go runs it against lavik-data and redis-server.
"""

import json
import sys
import threading
import time

import redis

# A fixed-window rate limiter: at most ARGV[1] calls per window of ARGV[2] seconds.
LIMITER = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then return {n, 0} end
return {n, 1}
"""


def check(what, got, want):
    if got != want:
        sys.stderr.write("%s: got %r, want %r\n" % (what, got, want))
        sys.exit(1)


def main():
    port = int(sys.argv[1])
    r = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
    r.delete("pyapp:rl", "pyapp:list", "pyapp:h")
    out = {"redis_py": redis.__version__}

    # SCRIPT LOAD, then EVALSHA (and redis-py's Script helper, which falls back to EVAL on
    # NOSCRIPT after a SCRIPT FLUSH).
    sha = r.script_load(LIMITER)
    check("SCRIPT EXISTS", r.script_exists(sha), [True])
    allowed = [r.evalsha(sha, 1, "pyapp:rl", 3, 60)[1] for _ in range(5)]
    check("rate limiter decisions", allowed, [1, 1, 1, 0, 0])
    check("the window's TTL", 0 < r.ttl("pyapp:rl") <= 60, True)
    r.script_flush()
    try:
        r.evalsha(sha, 1, "pyapp:rl", 3, 60)
        check("EVALSHA after SCRIPT FLUSH", "no error", "NoScriptError")
    except redis.exceptions.NoScriptError:
        pass
    limiter = r.register_script(LIMITER)
    check("Script after a flush", limiter(keys=["pyapp:rl"], args=[3, 60]), [6, 0])
    out["limiter"] = allowed

    # A subscriber loop in a thread; the main thread publishes.
    p = r.pubsub()
    p.subscribe("pyapp:news")
    p.psubscribe("pyapp:*:alerts")
    for _ in range(2):  # the subscribe confirmations
        p.get_message(timeout=5)
    got = []
    done = threading.Event()

    def loop():
        while not done.is_set():
            m = p.get_message(timeout=0.2)
            if m and m["type"] in ("message", "pmessage"):
                got.append((m["type"], m["channel"], m["data"]))
                if len(got) == 3:
                    done.set()

    t = threading.Thread(target=loop)
    t.start()
    check("PUBLISH news", r.publish("pyapp:news", "hello"), 1)
    check("PUBLISH alerts", r.publish("pyapp:db:alerts", "disk"), 1)
    check("PUBLISH news again", r.publish("pyapp:news", "bye"), 1)
    done.wait(10)
    done.set()
    t.join()
    check("messages", got, [("message", "pyapp:news", "hello"), ("pmessage", "pyapp:db:alerts", "disk"),
                            ("message", "pyapp:news", "bye")])
    check("PUBSUB NUMSUB", r.pubsub_numsub("pyapp:news"), [("pyapp:news", 1)])
    p.close()
    out["messages"] = len(got)

    # A pipeline without a transaction: one round trip, replies in order.
    pipe = r.pipeline(transaction=False)
    pipe.rpush("pyapp:list", "a", "b", "c").lrange("pyapp:list", 0, -1)
    pipe.hset("pyapp:h", mapping={"f1": "1", "f2": "2"}).hincrby("pyapp:h", "f1", 10).hgetall("pyapp:h")
    pipe.get("pyapp:missing")
    res = pipe.execute()
    check("pipeline", res, [3, ["a", "b", "c"], 2, 11, {"f1": "11", "f2": "2"}, None])
    out["pipeline"] = len(res)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
