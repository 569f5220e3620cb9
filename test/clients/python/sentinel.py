#!/usr/bin/env python3
"""redis-py's Sentinel client across a failover, the way its documentation shows it.

Usage: sentinel.py MASTER-NAME PORT[,PORT...]

Finds the master through the Sentinels on 127.0.0.1:PORT..., writes through master_for(),
prints one JSON line with the master's address, then keeps writing (retrying what fails)
until the master is another one and a write there worked, or 60 s pass. Prints a last JSON
line and exits 0, or writes what went wrong to stderr and exits 1. TestMetaRedisPySentinel in
../../failover_test.go runs it against lavik-meta's Sentinel ports and kills the primary after
the first line.
"""

import json
import sys
import time

import redis
from redis.sentinel import Sentinel


def main():
    name = sys.argv[1]
    ports = [int(p) for p in sys.argv[2].split(",")]
    sentinel = Sentinel([("127.0.0.1", p) for p in ports], socket_timeout=0.5)
    host, port = sentinel.discover_master(name)
    replicas = sentinel.discover_slaves(name)
    master = sentinel.master_for(name, socket_timeout=0.5, decode_responses=True)
    master.set("py:sentinel", "before")
    if master.get("py:sentinel") != "before":
        sys.stderr.write("read back through master_for differs\n")
        sys.exit(1)
    print(json.dumps({"redis_py": redis.__version__, "master_host": host, "master_port": port,
                      "replicas": len(replicas)}), flush=True)

    deadline = time.time() + 60
    errors = 0
    writes = 0
    while time.time() < deadline:
        try:
            master.set("py:sentinel", writes)
            writes += 1
            now = sentinel.discover_master(name)
            if now[1] != port:
                master.set("py:sentinel:after", "1")
                if master.get("py:sentinel:after") != "1":
                    sys.stderr.write("read back on the new master differs\n")
                    sys.exit(1)
                print(json.dumps({"master_host": now[0], "master_port": now[1], "writes": writes,
                                  "errors": errors}), flush=True)
                return
        except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError,
                redis.ResponseError, redis.sentinel.MasterNotFoundError) as e:
            errors += 1
            time.sleep(0.05)
        time.sleep(0.005)
    sys.stderr.write("the master did not change in 60 s (%d writes, %d errors)\n" % (writes, errors))
    sys.exit(1)


if __name__ == "__main__":
    main()
