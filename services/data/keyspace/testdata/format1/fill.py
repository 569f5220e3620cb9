import redis, sys
r = redis.Redis(port=int(sys.argv[1]))
# plain strings in several databases, overwritten several times (dead records)
for i in range(2000):
    r.set(f"k:{i}", f"v0:{i}")
for i in range(0, 2000, 2):
    r.set(f"k:{i}", f"v1:{i}:" + "x" * (i % 300))
for i in range(0, 2000, 5):
    r.delete(f"k:{i}")
r.set("", "empty-key")
r.set("ttl:far", "lives", exat=4102444800)   # 2100-01-01
r.set("ttl:persisted", "p", ex=100000)
r.persist("ttl:persisted")
r.set("ttl:past", "gone", px=1)
r.incr("counter"); r.incrby("counter", 41)
r.append("appended", "abc"); r.append("appended", "def")
big = bytes((i * 7 + 3) % 251 for i in range(200 * 1024))
for n in range(6):
    r.set("big", big[n:] + big[:n])
r.set("big", big)
r.setrange("big", 100000, b"EDITED")    # in-place edit of a chunked value
r.set("big2", big[:70000])
r.rename("big2", "big2:renamed")
r2 = redis.Redis(port=int(sys.argv[1]), db=3)
for i in range(100):
    r2.set(f"db3:{i}", f"three:{i}")
r5 = redis.Redis(port=int(sys.argv[1]), db=5)
for i in range(100):
    r5.set(f"db5:{i}", f"five:{i}")
r5.flushdb()
r5.set("db5:after", "after-flush")
print("ok", r.dbsize())
