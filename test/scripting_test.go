package test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

// Lua scripting (EVAL, SCRIPT, FUNCTION, FCALL): the same expectations hold against Redis 7.0.

func evalR(t *testing.T, c *redis.Client, body string, keys []string, args ...any) (any, error) {
	t.Helper()
	return c.Eval(context.Background(), body, keys, args...).Result()
}

// wantErrPrefix fails unless err is an error reply starting with prefix.
func wantErrPrefix(t *testing.T, err error, prefix string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("got error %v, want one starting with %q", err, prefix)
	}
}

func TestScriptingConversionRESP2(t *testing.T) {
	s := harness.Start(t)
	c := s.Client()
	ctx := context.Background()
	cases := []struct {
		body string
		want any
	}{
		{"return 1", int64(1)},
		{"return 3.99", int64(3)},
		{"return -2.5", int64(-2)},
		{"return 'hello'", "hello"},
		{"return true", int64(1)},
		{"return {1, 2, 3.7, 'a', nil, 4}", []any{int64(1), int64(2), int64(3), "a"}},
		{"return {ok='fine'}", "fine"},
		{"return redis.status_reply('good')", "good"},
		{"return {1, {2, {'x'}}}", []any{int64(1), []any{int64(2), []any{"x"}}}},
		{"return redis.call('incr', KEYS[1])", int64(1)},
		{"return redis.call('get', KEYS[1])", "1"},
		{"return redis.call('get', 'nosuchkey') == false and 1 or 0", int64(1)},
		{"return type(redis.call('get', 'nosuchkey'))", "boolean"},
		{"return redis.call('set', 'k2', 'v').ok", "OK"},
		{"redis.call('rpush', 'l', 'a', 'b'); return redis.call('lrange', 'l', 0, -1)", []any{"a", "b"}},
		{"return redis.pcall('incr', 'l').err", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"return redis.call('hgetall', 'nohash')", []any{}},
		{"return redis.sha1hex('')", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{"return redis.REDIS_VERSION:sub(1, 2)", "7."},
		{"return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}", []any{int64(0), int64(1), int64(2), int64(3)}},
		{"redis.log(redis.LOG_WARNING, 'from a script'); return 1", int64(1)},
		{"return #KEYS + #ARGV", int64(3)},
	}
	for _, tc := range cases {
		got, err := evalR(t, c, tc.body, []string{"counter"}, "a1", "a2")
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("%s: got %#v, want %#v", tc.body, got, tc.want)
		}
	}
	if _, err := evalR(t, c, "return false", nil); err != redis.Nil {
		t.Fatalf("false: %v, want nil", err)
	}
	if _, err := evalR(t, c, "return nil", nil); err != redis.Nil {
		t.Fatalf("nil: %v, want nil", err)
	}
	_, err := evalR(t, c, "return {err='MYCODE custom'}", nil)
	wantErrPrefix(t, err, "MYCODE custom")
	_, err = evalR(t, c, "return redis.error_reply('ERR mine')", nil)
	wantErrPrefix(t, err, "ERR mine")
	if v, err := c.Do(ctx, "EVAL", "return KEYS[1]..ARGV[1]", 1, "k", "v").Text(); err != nil || v != "kv" {
		t.Fatalf("KEYS/ARGV: %q %v", v, err)
	}
}

func TestScriptingConversionRESP3(t *testing.T) {
	s := harness.Start(t)
	c := s.ClientOpts(&redis.Options{Protocol: 3})
	c2 := s.Client()
	ctx := context.Background()
	c.HSet(ctx, "h", "f", "v")
	c.SAdd(ctx, "s", "m")
	c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "a"})
	// Replies of redis.call under setresp(3), seen from Lua.
	for body, want := range map[string]any{
		"redis.setresp(3); return redis.call('hgetall', 'h').map.f":                "v",
		"redis.setresp(3); return redis.call('smembers', 's').set.m and 1 or 0":    int64(1),
		"redis.setresp(3); return tostring(redis.call('zscore', 'z', 'a').double)": "1.5",
		"redis.setresp(3); return redis.call('get', 'nosuch') == nil and 1 or 0":   int64(1),
		"redis.setresp(2); return type(redis.call('hgetall', 'h'))":                "table",
		"redis.setresp(2); return redis.call('hgetall', 'h')[2]":                   "v",
		"redis.setresp(2); return tostring(redis.call('zscore', 'z', 'a'))":        "1.5",
	} {
		got, err := c2.Eval(ctx, body, nil).Result()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %#v %v, want %#v", body, got, err, want)
		}
	}
	// The script's result to a RESP3 client.
	if v, err := c.Eval(ctx, "return {map={a=1}}", nil).Result(); err != nil || !reflect.DeepEqual(v, map[any]any{"a": int64(1)}) {
		t.Fatalf("map: %#v %v", v, err)
	}
	if v, err := c.Eval(ctx, "return {double=3.5}", nil).Result(); err != nil || v != 3.5 {
		t.Fatalf("double: %#v %v", v, err)
	}
	// Booleans are RESP3 booleans only after the script's setresp(3).
	if v, err := c.Eval(ctx, "return true", nil).Result(); err != nil || v != int64(1) {
		t.Fatalf("true: %#v %v", v, err)
	}
	if v, err := c.Eval(ctx, "redis.setresp(3); return true", nil).Result(); err != nil || v != true {
		t.Fatalf("true after setresp(3): %#v %v", v, err)
	}
	if v, err := c.Eval(ctx, "redis.setresp(3); return false", nil).Result(); err != nil || v != false {
		t.Fatalf("false after setresp(3): %#v %v", v, err)
	}
	if v, err := c2.Eval(ctx, "redis.setresp(3); return false", nil).Result(); err != nil || v != int64(0) {
		t.Fatalf("false after setresp(3) to a RESP2 client: %#v %v", v, err)
	}
	if v, err := c.Eval(ctx, "return {set={x=true}}", nil).Result(); err != nil || !reflect.DeepEqual(v, []any{"x"}) {
		if m, ok := v.(map[any]struct{}); !ok || len(m) != 1 {
			t.Fatalf("set: %#v %v", v, err)
		}
	}
	// A RESP2 client gets a map as a flat array, a double as a bulk string.
	if v, err := c2.Eval(ctx, "return {map={a=1}}", nil).Result(); err != nil || !reflect.DeepEqual(v, []any{"a", int64(1)}) {
		t.Fatalf("map over RESP2: %#v %v", v, err)
	}
	if v, err := c2.Eval(ctx, "return {double=3.5}", nil).Result(); err != nil || v != "3.5" {
		t.Fatalf("double over RESP2: %#v %v", v, err)
	}
	_, err := c2.Eval(ctx, "redis.setresp(4)", nil).Result()
	wantErrPrefix(t, err, "ERR RESP version must be 2 or 3. script: ")
}

func TestScriptingErrors(t *testing.T) {
	s := harness.Start(t)
	c := s.Client()
	ctx := context.Background()
	c.Set(ctx, "str", "v", 0)
	sha := func(body string) string { return c.ScriptLoad(ctx, body).Val() }
	for _, tc := range []struct{ body, want string }{
		{"return a", "ERR user_script:1: Script attempted to access nonexistent global variable 'a' script: " + sha("return a") + ", on @user_script:1."},
		{"x = 1", "ERR user_script:1: Attempt to modify a readonly table script: " + sha("x = 1") + ", on @user_script:1."},
		{"error('boom')", "ERR user_script:1: boom script: " + sha("error('boom')") + ", on @user_script:1."},
		{"\nreturn redis.call('nosuch')", "ERR Unknown Redis command called from script script: " + sha("\nreturn redis.call('nosuch')") + ", on @user_script:2."},
		{"return redis.call('lpush', 'str', 'x')", "WRONGTYPE Operation against a key holding the wrong kind of value script: " + sha("return redis.call('lpush', 'str', 'x')") + ", on @user_script:1."},
		{"return redis.call('get')", "ERR Wrong number of args calling Redis command from script"},
		{"return redis.call('multi')", "ERR This Redis command is not allowed from script"},
		{"return redis.call('blpop', 'q', 0)", "ERR This Redis command is not allowed from script"},
		{"return redis.call('eval', 'return 1', 0)", "ERR This Redis command is not allowed from script"},
		{"return redis.call('xread', 'BLOCK', '10', 'STREAMS', 'st', '0')", "ERR xread command is not allowed with BLOCK option from scripts"},
		{"return os.time()", "ERR user_script:1: Script attempted to access nonexistent global variable 'os'"},
		{"return dofile('/etc/passwd')", "ERR user_script:1: Script attempted to access nonexistent global variable 'dofile'"},
		{"return require('x')", "ERR user_script:1: Script attempted to access nonexistent global variable 'require'"},
		{"return io", "ERR user_script:1: Script attempted to access nonexistent global variable 'io'"},
		{"function f() end", "ERR user_script:1: Attempt to modify a readonly table"},
		{"return 1 +", "ERR Error compiling script (new function): user_script:1:"},
	} {
		_, err := evalR(t, c, tc.body, nil)
		if tc.body == "return 1 +" && !harness.IsRedis() {
			wantErrPrefix(t, err, "ERR Error compiling script (new function):")
			continue
		}
		wantErrPrefix(t, err, tc.want)
	}
	if v, err := evalR(t, c, "return redis.pcall('lpush', 'str', 'x')['err']", nil); err != nil || v != "WRONGTYPE Operation against a key holding the wrong kind of value" {
		t.Fatalf("pcall: %v %v", v, err)
	}
	_, err := c.Do(ctx, "EVAL", "return 1", -1).Result()
	wantErrPrefix(t, err, "ERR Number of keys can't be negative")
	_, err = c.Do(ctx, "EVAL", "return 1", 2, "a").Result()
	wantErrPrefix(t, err, "ERR Number of keys can't be greater than number of args")
	_, err = c.Do(ctx, "EVAL", "return 1", "x").Result()
	wantErrPrefix(t, err, "ERR value is not an integer or out of range")
	_, err = c.EvalSha(ctx, "ffffffffffffffffffffffffffffffffffffffff", nil).Result()
	if err == nil || err.Error() != "NOSCRIPT No matching script. Please use EVAL." {
		t.Fatalf("EVALSHA unknown: %v", err)
	}
	_, err = c.EvalRO(ctx, "return redis.call('set', 'a', 'b')", nil).Result()
	wantErrPrefix(t, err, "ERR Write commands are not allowed from read-only scripts.")
	if v, err := c.EvalRO(ctx, "return redis.call('get', 'str')", nil).Result(); err != nil || v != "v" {
		t.Fatalf("EVAL_RO read: %v %v", v, err)
	}
	h := c.ScriptLoad(ctx, "return redis.call('set', KEYS[1], 'x')").Val()
	_, err = c.EvalShaRO(ctx, h, []string{"k"}).Result()
	wantErrPrefix(t, err, "ERR Write commands are not allowed from read-only scripts.")
	// Nothing of a script that failed half way... is undone, as in Redis: the writes before the
	// error stay.
	_, err = evalR(t, c, "redis.call('set', 'before', '1'); error('late')", nil)
	wantErrPrefix(t, err, "ERR user_script:1: late")
	if v := c.Get(ctx, "before").Val(); v != "1" {
		t.Fatalf("write before the error: %q", v)
	}
	// The connection still works; SELECT inside a script does not change the caller's database.
	if _, err := evalR(t, c, "redis.call('select', 5); redis.call('set', 'indb5', 'x'); return 1", nil); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, "indb5").Val(); n != 0 {
		t.Fatalf("SELECT leaked out of the script")
	}
}

func TestScriptingCacheAndFlush(t *testing.T) {
	s := harness.Start(t)
	c := s.Client()
	ctx := context.Background()
	body := "return ARGV[1] .. '!'"
	sha, err := c.ScriptLoad(ctx, body).Result()
	if err != nil || sha != "6dc7bd8a1e31abbe7d83e7c3b73e58a6a4f4f2ab" && len(sha) != 40 {
		t.Fatalf("SCRIPT LOAD: %v %v", sha, err)
	}
	if v, err := c.EvalSha(ctx, strings.ToUpper(sha), nil, "hi").Result(); err != nil || v != "hi!" {
		t.Fatalf("EVALSHA: %v %v", v, err)
	}
	ex, err := c.ScriptExists(ctx, sha, "0000000000000000000000000000000000000000").Result()
	if err != nil || !reflect.DeepEqual(ex, []bool{true, false}) {
		t.Fatalf("SCRIPT EXISTS: %v %v", ex, err)
	}
	// EVAL caches too.
	c.Eval(ctx, "return 42", nil)
	if ex := c.ScriptExists(ctx, "1fa00e76656cc152ad327c13fe365858fd7be306").Val(); !ex[0] {
		t.Fatalf("EVAL did not cache its script")
	}
	if err := c.Do(ctx, "SCRIPT", "FLUSH", "ASYNC").Err(); err != nil {
		t.Fatal(err)
	}
	if ex := c.ScriptExists(ctx, sha).Val(); ex[0] {
		t.Fatalf("SCRIPT FLUSH kept the script")
	}
	_, err = c.EvalSha(ctx, sha, nil, "hi").Result()
	wantErrPrefix(t, err, "NOSCRIPT")
	err = c.Do(ctx, "SCRIPT", "FLUSH", "NOW").Err()
	wantErrPrefix(t, err, "ERR")
	err = c.Do(ctx, "SCRIPT", "KILL").Err()
	wantErrPrefix(t, err, "NOTBUSY No scripts in execution right now.")
}

func TestScriptingLibraries(t *testing.T) {
	s := harness.Start(t)
	c := s.Client()
	for body, want := range map[string]any{
		"return cjson.encode({})":                                                                  "{}",
		"return cjson.encode({a=1})":                                                               `{"a":1}`,
		"return cjson.encode({1,2,'x',true,false})":                                                `[1,2,"x",true,false]`,
		"return cjson.encode({1.5, 1e20, 0.1, -3, 'a/b'})":                                         `[1.5,1e+20,0.1,-3,"a\/b"]`,
		"return cjson.encode(cjson.decode('[1,null,\"x\",{\"a\":[]}]'))":                           `[1,null,"x",{"a":{}}]`,
		"return cjson.decode('{\"a\":{\"b\":[10,20]}}').a.b[2]":                                    int64(20),
		"return cjson.decode('[null]')[1] == cjson.null and 1 or 0":                                int64(1),
		"return cjson.encode(cjson.decode('\"\\\\u00e9\\\\n\"'))":                                  `"é\n"`,
		"return bit.tohex(65535)":                                                                  "0000ffff",
		"return bit.tohex(-1, -4)":                                                                 "FFFF",
		"return {bit.band(12, 10), bit.bor(12, 10), bit.bxor(12, 10), bit.bnot(0)}":                []any{int64(8), int64(14), int64(6), int64(-1)},
		"return {bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-16, 2), bit.tobit(2^32 + 5)}": []any{int64(-2147483648), int64(15), int64(-4), int64(5)},
		"return struct.pack('>I2', 258)":                                                           "\x01\x02",
		"return struct.pack('<i4', -2)":                                                            "\xfe\xff\xff\xff",
		"return {struct.unpack('>I2I2', '\\1\\2\\0\\3')}":                                          []any{int64(258), int64(3), int64(5)},
		"return struct.size('>iIhd')":                                                              int64(18),
		"return {struct.unpack('<i4c3s', struct.pack('<i4c3s', 7, 'abc', 'zt'))}":                  []any{int64(7), "abc", "zt", int64(11)},
		"return cmsgpack.pack({1,2,3})":                                                            "\x93\x01\x02\x03",
		"return cmsgpack.pack('hi', -1, 300, true, 1.5)":                                           "\xa2hi\xff\xcd\x01\x2c\xc3\xca\x3f\xc0\x00\x00",
		"local t = cmsgpack.unpack(cmsgpack.pack({a={1,2},b='x'})); return {t.a[2], t.b}":          []any{int64(2), "x"},
		"return {cmsgpack.unpack(cmsgpack.pack(1, 'two', 3))}":                                     []any{int64(1), "two", int64(3)},
		"return math.random(1, 1000) >= 1 and 1 or 0":                                              int64(1),
	} {
		got, err := evalR(t, c, body, nil)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v %v, want %#v", body, got, err, want)
		}
	}
}

// TestScriptingRandomDeterministic checks math.random's sequence: on a fresh server, Redis 7's
// first math.random(1, 1000) is always 397.
func TestScriptingRandomDeterministic(t *testing.T) {
	s := harness.Start(t)
	c := s.Client()
	got, err := evalR(t, c, "return {math.random(1, 1000), math.random(1, 1000)}", nil)
	if err != nil || !reflect.DeepEqual(got, []any{int64(397), int64(841)}) {
		t.Fatalf("math.random on a fresh server: %v %v", got, err)
	}
}

func TestScriptingAtomicCounter(t *testing.T) {
	s := harness.Start(t)
	ctx := context.Background()
	// Read, compute, write: without atomicity, concurrent runs would lose increments.
	body := "local v = tonumber(redis.call('get', KEYS[1]) or '0'); redis.call('set', KEYS[1], v + 1); " +
		"redis.call('rpush', KEYS[2], v + 1); return v + 1"
	const clients, each = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		c := s.Client()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				if err := c.Eval(ctx, body, []string{"ctr", "log"}).Err(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := s.Client()
	if v := c.Get(ctx, "ctr").Val(); v != fmt.Sprint(clients*each) {
		t.Fatalf("counter %s, want %d", v, clients*each)
	}
	// Every value was handed out exactly once, in order.
	vals := c.LRange(ctx, "log", 0, -1).Val()
	for i, v := range vals {
		if v != fmt.Sprint(i+1) {
			t.Fatalf("log[%d] = %s", i, v)
		}
	}
}

func TestScriptingBusyAndKill(t *testing.T) {
	s := harness.Start(t)
	ctx := context.Background()
	c := s.Client()
	if err := c.ConfigSet(ctx, "busy-reply-threshold", "200").Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "k", "v", 0)
	runner := s.Client()
	done := make(chan error, 1)
	go func() {
		done <- runner.Eval(ctx, "local i = 0 while true do i = i + 1 end", nil).Err()
	}()
	other := s.Client()
	// Once the script is busy, others get BUSY.
	harness.Eventually(t, 5*time.Second, "BUSY", func() bool {
		err := other.Get(ctx, "k").Err()
		return err != nil && strings.HasPrefix(err.Error(), "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
	})
	if err := other.Do(ctx, "SCRIPT", "KILL").Err(); err != nil {
		t.Fatalf("SCRIPT KILL: %v", err)
	}
	select {
	case err := <-done:
		wantErrPrefix(t, err, "ERR Script killed by user with SCRIPT KILL...")
	case <-time.After(5 * time.Second):
		t.Fatal("the killed script did not end")
	}
	if v, err := other.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after the kill: %v %v", v, err)
	}

	// A script that wrote cannot be killed.
	go func() {
		done <- runner.Eval(ctx, "redis.call('set', 'w', '1') local t = redis.call('time')[1] + 0 "+
			"while redis.call('time')[1] + 0 < t + 2 do end return 1", nil).Err()
	}()
	harness.Eventually(t, 5*time.Second, "UNKILLABLE", func() bool {
		err := other.Do(ctx, "SCRIPT", "KILL").Err()
		return err != nil && strings.HasPrefix(err.Error(), "UNKILLABLE Sorry the script already executed write commands against the dataset.")
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the unkillable script: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the unkillable script did not end")
	}
	if v := other.Get(ctx, "w").Val(); v != "1" {
		t.Fatalf("its write: %q", v)
	}
}

// TestScriptingWaitBeforeThreshold: before busy-reply-threshold, other clients wait for the
// script and then get their answers.
func TestScriptingWaitBeforeThreshold(t *testing.T) {
	s := harness.Start(t)
	ctx := context.Background()
	c := s.Client()
	c.Set(ctx, "k", "v", 0)
	runner := s.Client()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		done <- runner.Eval(ctx, "local t = redis.call('time')[1] + 0 while redis.call('time')[1] + 0 < t + 1 do end "+
			"redis.call('set', 'k', 'after') return 1", nil).Err()
	}()
	<-started
	time.Sleep(50 * time.Millisecond) // let the script start (if it has not, GET sees "v" and the test says so)
	v, err := c.Get(ctx, "k").Result()
	if err != nil {
		t.Fatalf("GET while the script runs under the threshold: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v != "after" {
		t.Skipf("the GET ran before the script started (%q); nothing was checked", v)
	}
}

func TestScriptingFunctions(t *testing.T) {
	s := harness.Start(t)
	ctx := context.Background()
	c := s.Client()
	lib := "#!lua name=mylib\n" +
		"redis.register_function('incrby2', function(keys, args) return redis.call('incrby', keys[1], 2) end)\n" +
		"redis.register_function{function_name='peek', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}}\n" +
		"redis.register_function{function_name='badro', callback=function(keys, args) return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}\n" +
		"redis.register_function('fail', function(keys, args) return error('x') end)\n"
	if v, err := c.FunctionLoad(ctx, lib).Result(); err != nil || v != "mylib" {
		t.Fatalf("FUNCTION LOAD: %v %v", v, err)
	}
	err := c.FunctionLoad(ctx, lib).Err()
	wantErrPrefix(t, err, "ERR Library 'mylib' already exists")
	if err := c.FunctionLoadReplace(ctx, lib).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD REPLACE: %v", err)
	}
	for _, tc := range []struct{ code, want string }{
		{"return 1", "ERR Missing library metadata"},
		{"#!lua name=x\nlocal a = 1", "ERR No functions registered"},
		{"#!lua name=x\nredis.register_function('incrby2', function() return 1 end)", "ERR Function incrby2 already exists"},
	} {
		wantErrPrefix(t, c.FunctionLoad(ctx, tc.code).Err(), tc.want)
	}
	if v, err := c.FCall(ctx, "incrby2", []string{"n"}).Int(); err != nil || v != 2 {
		t.Fatalf("FCALL: %v %v", v, err)
	}
	if v, err := c.FCallRO(ctx, "peek", []string{"n"}).Text(); err != nil || v != "2" {
		t.Fatalf("FCALL_RO: %v %v", v, err)
	}
	wantErrPrefix(t, c.FCallRO(ctx, "incrby2", []string{"n"}).Err(), "ERR Can not execute a script with write flag using *_ro command.")
	wantErrPrefix(t, c.FCall(ctx, "badro", []string{"n"}).Err(), "ERR Write commands are not allowed from read-only scripts. script: badro, on @user_function:4.")
	wantErrPrefix(t, c.FCall(ctx, "fail", nil).Err(), "ERR user_function:5: x script: fail, on @user_function:5.")
	wantErrPrefix(t, c.FCall(ctx, "nosuch", nil).Err(), "ERR Function not found")
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "my*", WithCode: true}).Result()
	if err != nil || len(libs) != 1 || libs[0].Name != "mylib" || libs[0].Code != lib || len(libs[0].Functions) != 4 {
		t.Fatalf("FUNCTION LIST: %+v %v", libs, err)
	}
	var peek redis.Function
	for _, f := range libs[0].Functions {
		if f.Name == "peek" {
			peek = f
		}
	}
	if !reflect.DeepEqual(peek.Flags, []string{"no-writes"}) {
		t.Fatalf("peek's flags: %+v", peek)
	}
	if n := len(c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "zz*"}).Val()); n != 0 {
		t.Fatalf("FUNCTION LIST LIBRARYNAME zz*: %d libraries", n)
	}
	// Functions survive a restart and a kill -9.
	if !harness.IsRedis() {
		s.Restart()
		c = s.Client()
		if v, err := c.FCall(ctx, "incrby2", []string{"n"}).Int(); err != nil || v != 4 {
			t.Fatalf("FCALL after a restart: %v %v", v, err)
		}
		s.KillRestart()
		c = s.Client()
		if v, err := c.FCallRO(ctx, "peek", []string{"n"}).Text(); err != nil || v != "4" {
			t.Fatalf("FCALL_RO after kill -9: %v %v", v, err)
		}
	}
	wantErrPrefix(t, c.FunctionDelete(ctx, "nosuch").Err(), "ERR Library not found")
	if err := c.FunctionDelete(ctx, "mylib").Err(); err != nil {
		t.Fatal(err)
	}
	wantErrPrefix(t, c.FCall(ctx, "incrby2", []string{"n"}).Err(), "ERR Function not found")
	c.FunctionLoad(ctx, lib)
	if err := c.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n := len(c.FunctionList(ctx, redis.FunctionListQuery{}).Val()); n != 0 {
		t.Fatalf("after FUNCTION FLUSH: %d libraries", n)
	}
}

func TestScriptingReplication(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("uses Lavik's replication helpers")
	}
	_, _, pc, fc := replPair(t)
	ctx := context.Background()
	body := "redis.call('set', KEYS[1], ARGV[1]); redis.call('rpush', KEYS[2], math.random(1, 1000)); " +
		"redis.call('select', 3); redis.call('set', 'in3', 'x'); return 1"
	for i := 0; i < 20; i++ {
		if err := pc.Eval(ctx, body, []string{fmt.Sprint("k", i), "rnd"}, i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := pc.FunctionLoad(ctx, "#!lua name=rl\nredis.register_function('f', function(k, a) return redis.call('incr', k[1]) end)").Err(); err != nil {
		t.Fatal(err)
	}
	if err := pc.FCall(ctx, "f", []string{"viaf"}).Err(); err != nil {
		t.Fatal(err)
	}
	waitInSync(t, pc, fc)
	assertSameData(t, pc, fc, 4)
	if v := fc.LRange(ctx, "rnd", 0, -1).Val(); len(v) != 20 {
		t.Fatalf("follower's list: %v", v)
	}
	if libs := fc.FunctionList(ctx, redis.FunctionListQuery{}).Val(); len(libs) != 1 || libs[0].Name != "rl" {
		t.Fatalf("follower's libraries: %+v", libs)
	}
	// A follower refuses a script's writes.
	err := fc.Eval(ctx, "return redis.call('set', 'x', 1)", nil).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Fatalf("write script on a follower: %v", err)
	}
	var re redis.Error
	_ = errors.As(err, &re)
}

// TestScriptingWakesBlocked: a script's writes serve the clients blocked on the keys it wrote,
// right after it, whether or not it declared them, in the database it selected, and even when
// it failed after writing (its writes stand).
func TestScriptingWakesBlocked(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "BLPopServedByEvalLPush", func(t *testing.T, k checker) {
		r := blockOn(t, s, k, 1, "BLPOP", "q", "0")
		// The key is not among KEYS: the script's write is what counts.
		k.eq(1, "EVAL", "return redis.call('lpush', 'q', 'x')", "0")
		r.expectRead([]any{"q", "x"}, "BLPOP q 0 after a script's LPUSH")
		waitBlocked(t, k, 0)
		checkList(t, k, "q", nil)
	})

	subtest(t, c, "BLMoveServedByFCall", func(t *testing.T, k checker) {
		k.str("FUNCTION", "LOAD", "REPLACE", "#!lua name=wakelib\nredis.register_function('push', function(keys, args) return redis.call('rpush', keys[1], args[1]) end)")
		r := blockOn(t, s, k, 1, "BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
		k.eq(1, "FCALL", "push", "1", "src", "v")
		r.expectRead("v", "BLMOVE after FCALL's RPUSH")
		checkList(t, k, "dst", []string{"v"})
		k.ok("FUNCTION", "FLUSH")
	})

	subtest(t, c, "BZPopMinServedByScriptInOtherDB", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(txOK, "SELECT", "3")
		r.send("BZPOPMIN", "z", "0")
		r.waitBlocked(k, 1, []string{"BZPOPMIN", "z", "0"})
		// Written in database 0, it serves nobody; written in 3, after the script's SELECT, it does.
		k.eq(1, "EVAL", "return redis.call('zadd', 'z', 1, 'zero')", "0")
		r.noReplyYet(100*time.Millisecond, "BZPOPMIN in db 3 after a ZADD in db 0")
		k.eq(1, "EVAL", "redis.call('select', 3) return redis.call('zadd', 'z', 2, 'three')", "0")
		r.expectRead([]any{"z", "three", "2"}, "BZPOPMIN after a script's ZADD in its database")
	})

	subtest(t, c, "ServedByFailedScript", func(t *testing.T, k checker) {
		r := blockOn(t, s, k, 1, "BLPOP", "q", "0")
		k.err("ERR user failure", "EVAL", "redis.call('lpush', 'q', 'y') return redis.error_reply('ERR user failure')", "0")
		r.expectRead([]any{"q", "y"}, "BLPOP q 0 after a failed script's LPUSH")
	})

	subtest(t, c, "XReadBlockServedByScriptXAdd", func(t *testing.T, k checker) {
		k.str("XADD", "s", "1-1", "a", "1")
		r := dialRESP(t, s)
		r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
		waitBlocked(t, k, 1)
		k.str("EVAL", "return redis.call('xadd', 's', '2-1', 'b', '2')", "0")
		if got := r.read(); !reflect.DeepEqual(got, []any{[]any{"s", ents(ent("2-1", "b", "2"))}}) {
			t.Fatalf("XREAD BLOCK after a script's XADD: %s", short(got))
		}
	})

	subtest(t, c, "ServedByScriptInsideExec", func(t *testing.T, k checker) {
		r := blockOn(t, s, k, 1, "BLPOP", "q", "0")
		tx := dialRESP(t, s)
		got := tx.txRun([]string{"EVAL", "return redis.call('rpush', 'q', 'm')", "0"})
		if !reflect.DeepEqual(got, []any{int64(1)}) {
			t.Fatalf("EXEC of EVAL: %s", short(got))
		}
		r.expectRead([]any{"q", "m"}, "BLPOP q 0 after EXEC of a script's RPUSH")
	})
}
