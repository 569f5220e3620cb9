package script

import (
	"errors"
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Functions (FUNCTION LOAD, FCALL): a library is Lua code starting with "#!lua name=<lib>"
// whose top level registers functions with redis.register_function; FCALL runs one with
// (keys, args). Libraries live in the same Lua state as scripts; their code is what the
// command layer persists and replicates.

// Library is a loaded library.
type Library struct {
	Name  string
	Code  string
	Funcs []*Function // in registration order
}

// Function is one registered function.
type Function struct {
	Name  string
	Desc  string
	Flags []string
	Lib   *Library
	fn    *lua.LFunction
}

// NoWrites reports whether the function declared no-writes (FCALL_RO may run it; it may not
// write).
func (f *Function) NoWrites() bool {
	for _, fl := range f.Flags {
		if fl == "no-writes" {
			return true
		}
	}
	return false
}

// Script is the function as a runnable script.
func (f *Function) Script() *Script {
	return &Script{fn: f.fn, Name: f.Name, Flags: f.Flags, Library: f.Lib}
}

type libraries struct {
	libs    map[string]*Library
	funcs   map[string]*Function
	loading *Library // the library whose code runs now (register_function)
}

var knownFlags = map[string]bool{"no-writes": true, "allow-oom": true, "allow-stale": true, "no-cluster": true, "allow-cross-slot-keys": true}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// LoadLibraryLocked loads a library's code (FUNCTION LOAD): it returns the library's name. With
// replace, a library of the same name is replaced; else it is an error. The engine is held.
func (e *Engine) LoadLibraryLocked(code string, replace bool) (string, error) {
	first, rest, _ := strings.Cut(code, "\n")
	if !strings.HasPrefix(first, "#!") {
		return "", errors.New("ERR Missing library metadata")
	}
	parts := strings.Fields(first[2:])
	if len(parts) == 0 {
		return "", errors.New("ERR Missing library metadata")
	}
	if parts[0] != "lua" {
		return "", errors.New("ERR Engine '" + parts[0] + "' not found")
	}
	name := ""
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k != "name" {
			return "", errors.New("ERR Invalid metadata value given: " + p)
		}
		name = v
	}
	if name == "" {
		return "", errors.New("ERR Library name was not given")
	}
	if !validName(name) {
		return "", errors.New("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	old := e.lib.libs[name]
	if old != nil && !replace {
		return "", errors.New("ERR Library '" + name + "' already exists")
	}
	// The shebang line stays a line, so that errors name the code's own line numbers.
	fn, err := e.L.Load(strings.NewReader("\n"+rest), "user_function")
	if err != nil {
		return "", errors.New("ERR Error compiling function: " + compileMsg(err))
	}
	fn.Env = e.env
	lib := &Library{Name: name, Code: code}
	e.lib.loading = lib
	e.L.Push(fn)
	err = e.L.PCall(0, 0, nil)
	e.lib.loading = nil
	if err != nil {
		var ae *lua.ApiError
		msg := err.Error()
		if errors.As(err, &ae) && ae.Object != nil {
			msg = ae.Object.String()
			if t, ok := ae.Object.(*lua.LTable); ok {
				msg = lua.LVAsString(t.RawGetString("err"))
			}
		}
		msg = strings.TrimPrefix(msg, "ERR ")
		return "", errors.New("ERR Error registering functions: " + msg)
	}
	if len(lib.Funcs) == 0 {
		return "", errors.New("ERR No functions registered")
	}
	for _, f := range lib.Funcs {
		if other, ok := e.lib.funcs[f.Name]; ok && other.Lib != old {
			return "", errors.New("ERR Function " + f.Name + " already exists")
		}
	}
	if old != nil {
		for _, f := range old.Funcs {
			delete(e.lib.funcs, f.Name)
		}
	}
	e.lib.libs[name] = lib
	for _, f := range lib.Funcs {
		e.lib.funcs[f.Name] = f
	}
	e.librariesChangedLocked()
	return name, nil
}

// registerFunction is redis.register_function, allowed only while a library loads.
func (e *Engine) registerFunction(L *lua.LState) int {
	lib := e.lib.loading
	if lib == nil {
		L.RaiseError("redis.register_function can only be called on FUNCTION LOAD command")
	}
	f := &Function{Lib: lib}
	var cb lua.LValue
	if t, ok := L.Get(1).(*lua.LTable); ok && L.GetTop() == 1 {
		var bad string
		t.ForEach(func(k, v lua.LValue) {
			switch lua.LVAsString(k) {
			case "function_name":
				f.Name = lua.LVAsString(v)
			case "callback":
				cb = v
			case "description":
				f.Desc = lua.LVAsString(v)
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					bad = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				ft.ForEach(func(_, fl lua.LValue) { f.Flags = append(f.Flags, lua.LVAsString(fl)) })
			default:
				bad = "unknown argument given to redis.register_function"
			}
		})
		if bad != "" {
			L.RaiseError("%s", bad)
		}
	} else {
		if L.GetTop() != 2 {
			L.RaiseError("wrong number of arguments to redis.register_function")
		}
		f.Name, cb = lua.LVAsString(L.Get(1)), L.Get(2)
	}
	fn, ok := cb.(*lua.LFunction)
	if !ok {
		L.RaiseError("callback argument given to redis.register_function must be a function")
	}
	if !validName(f.Name) {
		L.RaiseError("Function names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	for _, fl := range f.Flags {
		if !knownFlags[fl] {
			L.RaiseError("unknown flag given")
		}
	}
	for _, g := range lib.Funcs {
		if g.Name == f.Name {
			L.RaiseError("Function already exists in the library")
		}
	}
	f.fn = fn
	lib.Funcs = append(lib.Funcs, f)
	return 0
}

// FunctionLocked finds a function by name (nil: none). The engine is held.
func (e *Engine) FunctionLocked(name string) *Function { return e.lib.funcs[name] }

// Libraries returns the loaded libraries sorted by name.
func (e *Engine) Libraries() []*Library {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.LibrariesLocked()
}

// LibrariesLocked is Libraries with the engine held.
func (e *Engine) LibrariesLocked() []*Library {
	out := make([]*Library, 0, len(e.lib.libs))
	for _, l := range e.lib.libs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DeleteLibraryLocked removes a library (FUNCTION DELETE).
func (e *Engine) DeleteLibraryLocked(name string) error {
	lib := e.lib.libs[name]
	if lib == nil {
		return errors.New("ERR Library not found")
	}
	for _, f := range lib.Funcs {
		delete(e.lib.funcs, f.Name)
	}
	delete(e.lib.libs, name)
	e.librariesChangedLocked()
	return nil
}

// FlushLibrariesLocked removes every library (FUNCTION FLUSH).
func (e *Engine) FlushLibrariesLocked() {
	e.lib.libs = map[string]*Library{}
	e.lib.funcs = map[string]*Function{}
	e.librariesChangedLocked()
}

// libsView is what the libraries are as of their last change, for the readers that must not
// wait for the engine.
type libsView struct {
	payload     []byte
	libs, funcs int
}

// librariesChangedLocked publishes the libraries for LibrariesPayload and LibraryCounts.
func (e *Engine) librariesChangedLocked() {
	libs := e.LibrariesLocked()
	v := &libsView{payload: EncodeLibraries(libs), libs: len(libs)}
	for _, l := range libs {
		v.funcs += len(l.Funcs)
	}
	e.libsView.Store(v)
}

// LibrariesPayload returns the libraries as EncodeLibraries encodes them, as of the last change,
// without waiting for the engine: a full resync takes it while it holds the keyspace's locks,
// which a running script, holding the engine, may be waiting for.
func (e *Engine) LibrariesPayload() []byte {
	if v := e.libsView.Load(); v != nil {
		return v.payload
	}
	return EncodeLibraries(nil)
}

// LibraryCounts returns how many libraries and functions there are, without waiting for the
// engine (FUNCTION STATS runs while a script is busy).
func (e *Engine) LibraryCounts() (libs, funcs int) {
	if v := e.libsView.Load(); v != nil {
		return v.libs, v.funcs
	}
	return 0, 0
}
