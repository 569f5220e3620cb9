#!/usr/bin/env python3
"""Transactions through redis-py, the way its documentation shows them.

Usage: tx.py PORT

Runs against a server on 127.0.0.1:PORT whose keys it may overwrite (it uses the "py:"
prefix), prints a JSON summary and exits 0, or prints what differed to stderr and exits 1.
TestTransactionClientLibraries in ../../transactions_test.go runs it against lavik-data and
redis-server.
"""

import json
import sys

import redis


def check(what, got, want):
    if got != want:
        sys.stderr.write("%s: got %r, want %r\n" % (what, got, want))
        sys.exit(1)


def main():
    port = int(sys.argv[1])
    r = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
    other = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
    r.delete("py:a", "py:w", "py:s", "py:t", "py:u", "py:q")
    out = {"redis_py": redis.__version__}

    # pipeline(transaction=True): MULTI ... EXEC in one round trip.
    with r.pipeline(transaction=True) as pipe:
        pipe.set("py:a", "1").incr("py:a").incrby("py:a", 5).get("py:a").mget("py:a", "py:missing")
        res = pipe.execute()
    check("pipeline(transaction=True)", res, [True, 2, 7, "7", ["7", None]])
    out["pipeline"] = res

    # r.transaction(func, *watches): WATCH, read, MULTI, write, EXEC, retried on WatchError.
    # The first attempt is spoiled by another client's write after the read.
    r.set("py:w", "5")
    attempts = []

    def double(pipe):
        v = int(pipe.get("py:w"))
        attempts.append(v)
        if len(attempts) == 1:
            other.incr("py:w")
        pipe.multi()
        pipe.set("py:w", v * 2)

    res = r.transaction(double, "py:w")
    check("transaction() attempts", attempts, [5, 6])
    check("transaction() result", res, [True])
    check("GET after transaction()", r.get("py:w"), "12")
    out["watch_attempts"] = attempts

    # The same by hand: WATCH, then EXEC of a changed key raises WatchError.
    with r.pipeline() as pipe:
        pipe.watch("py:w")
        pipe.get("py:w")
        other.set("py:w", "other")
        pipe.multi()
        pipe.set("py:w", "mine")
        try:
            pipe.execute()
            check("EXEC after a watched key changed", "ran", "WatchError")
        except redis.WatchError:
            pass
    check("GET after the aborted EXEC", r.get("py:w"), "other")

    # An error while EXEC runs fails that command only.
    r.set("py:s", "abc")
    with r.pipeline(transaction=True) as pipe:
        pipe.set("py:t", "1").incr("py:s").set("py:u", "2")
        res = pipe.execute(raise_on_error=False)
    check("EXEC with a failing INCR: replies", [res[0], res[2]], [True, True])
    check("EXEC with a failing INCR: error type", type(res[1]), redis.ResponseError)
    check("EXEC with a failing INCR: error", str(res[1]), "value is not an integer or out of range")
    check("keys after it", r.mget("py:t", "py:u", "py:s"), ["1", "2", "abc"])
    with r.pipeline(transaction=True) as pipe:
        pipe.incr("py:s").set("py:q", "x")
        try:
            pipe.execute()
            check("execute() with a failing INCR", "no exception", "ResponseError")
        except redis.ResponseError as e:
            out["exec_error"] = str(e)
    check("SET after the failing INCR", r.get("py:q"), "x")

    # A command refused while queuing discards the whole transaction (EXECABORT): redis-py
    # raises the refusal.
    r.delete("py:q")
    with r.pipeline(transaction=True) as pipe:
        pipe.set("py:q", "1").execute_command("NOSUCHCOMMAND", "x").set("py:t", "9")
        try:
            pipe.execute()
            check("execute() with an unknown command", "no exception", "ResponseError")
        except redis.ResponseError as e:
            out["queue_error"] = str(e)
            if "unknown command" not in str(e):
                check("execute() with an unknown command: error", str(e), "unknown command ...")
    check("keys after EXECABORT", [r.exists("py:q"), r.get("py:t")], [0, "1"])

    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
