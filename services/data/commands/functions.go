package commands

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/script"
)

// The libraries of FUNCTION: kept in the data directory's FUNCTIONS file (written whole and
// atomically on every change, through pkg/vfs), replicated as the commands that changed them,
// and handed whole to a follower by a full resync (FunctionsPayload, RestoreFunctions).
// FUNCTION DUMP's payload is the same encoding (script.EncodeLibraries), with a checksum.

// functionsFile is where the libraries' code is kept, in the data directory.
const functionsFile = "FUNCTIONS"

// maxFunctionsFile bounds what LoadFunctions reads: a larger file is not one Lavik wrote.
const maxFunctionsFile = 1 << 30

// SaveFunctions writes e's libraries to dir's FUNCTIONS file, atomically (vfs.WriteFileAtomic):
// a crash leaves the old set or the new one. The engine is held, so that two changes are
// saved in the order they were made.
func SaveFunctions(fsys vfs.FS, dir string, e *script.Engine) error {
	return vfs.WriteFileAtomic(fsys, dir, functionsFile, script.EncodeLibraries(e.LibrariesLocked()))
}

// LoadFunctions loads the libraries saved in dir (none is fine): all of them or, on an error,
// none.
func LoadFunctions(fsys vfs.FS, dir string, e *script.Engine) error {
	p := dir + "/" + functionsFile
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return err
	}
	if size > maxFunctionsFile {
		return fmt.Errorf("commands: %s is %d bytes", p, size)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	codes, err := script.DecodeLibraries(b)
	if err != nil {
		return fmt.Errorf("commands: %s: %w", p, err)
	}
	e.Lock()
	defer e.Unlock()
	if err := e.RestoreLibrariesLocked(codes, script.RestoreFlush); err != nil {
		return fmt.Errorf("commands: %s: %w", p, err)
	}
	return nil
}

// functionsChangedLocked persists the libraries and hands the command to the change stream, so
// that followers load the same libraries. It reports false, having replied with the error,
// when the libraries could not be saved. The engine is held: the stream gets the changes in
// the order they were made.
func functionsChangedLocked(c *Ctx, e *script.Engine) bool {
	if err := SaveFunctions(c.KS.FS(), c.Srv.Config().Get("dir"), e); err != nil {
		c.Err(Error("ERR lavik: the libraries changed in memory but could not be saved: " + err.Error()))
		return false
	}
	c.KS.Announce(c.Sess, c.DB(), c.Args)
	return true
}

// FunctionsPayload returns srv's libraries for a full resync (script.EncodeLibraries), nil
// where srv has no engine. It does not wait for a running script.
func FunctionsPayload(srv Server) []byte {
	if s, ok := srv.(Scripter); ok && s.Scripts() != nil {
		return s.Scripts().LibrariesPayload()
	}
	return nil
}

// RestoreFunctions replaces srv's libraries with those of payload (a full resync's; nil: none)
// and saves them in fsys's dir.
func RestoreFunctions(srv Server, fsys vfs.FS, payload []byte) error {
	s, ok := srv.(Scripter)
	if !ok || s.Scripts() == nil {
		return nil
	}
	var codes []string
	if payload != nil {
		var err error
		if codes, err = script.DecodeLibraries(payload); err != nil {
			return err
		}
	}
	e := s.Scripts()
	e.Lock()
	defer e.Unlock()
	if err := e.RestoreLibrariesLocked(codes, script.RestoreFlush); err != nil {
		return err
	}
	return SaveFunctions(fsys, srv.Config().Get("dir"), e)
}

func functionDumpCmd(c *Ctx) {
	e := c.engine()
	if e == nil {
		c.Err(errNoEngine)
		return
	}
	c.W.Bulk(e.LibrariesPayload())
}

func functionRestoreCmd(c *Ctx) {
	if len(c.Args) > 4 {
		c.Err(subSyntaxErr(c))
		return
	}
	policy := script.RestoreAppend
	if len(c.Args) == 4 {
		switch strings.ToLower(string(c.Args[3])) {
		case "append":
		case "replace":
			policy = script.RestoreReplace
		case "flush":
			policy = script.RestoreFlush
		default:
			c.Err(Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."))
			return
		}
	}
	codes, err := script.DecodeLibraries(c.Args[2])
	if err != nil {
		if errors.Is(err, script.ErrLibsCorrupt) {
			err = errors.New("ERR DUMP payload version or checksum are wrong")
		}
		c.Err(Error(err.Error()))
		return
	}
	e := c.engine()
	if e == nil {
		c.Err(errNoEngine)
		return
	}
	defer c.lockEngine(e)()
	if err := e.RestoreLibrariesLocked(codes, policy); err != nil {
		c.Err(Error(err.Error()))
		return
	}
	if functionsChangedLocked(c, e) {
		c.OK()
	}
}

// functionStatsCmd is FUNCTION STATS: the function running, and the engine's counts. While an
// EVAL script runs it answers BUSY, as Redis does.
func functionStatsCmd(c *Ctx) {
	e := c.engine()
	libs, funcs := 0, 0
	var info script.RunInfo
	running := false
	if e != nil {
		libs, funcs = e.LibraryCounts()
		info, running = e.RunningInfo()
	}
	if running && !info.Function {
		c.Err(ErrBusy) // as Redis answers while an EVAL script runs
		return
	}
	c.W.Map(2)
	c.W.BulkString("running_script")
	if !running || !info.Function {
		c.W.Null()
	} else {
		c.W.Map(3)
		c.W.BulkString("name")
		c.W.BulkString(info.Name)
		c.W.BulkString("command")
		c.W.Array(len(info.Command))
		for _, a := range info.Command {
			c.W.BulkString(a)
		}
		c.W.BulkString("duration_ms")
		c.W.Int(time.Since(info.Start).Milliseconds())
	}
	c.W.BulkString("engines")
	c.W.Map(1)
	c.W.BulkString("LUA")
	c.W.Map(2)
	c.W.BulkString("libraries_count")
	c.W.Int(int64(libs))
	c.W.BulkString("functions_count")
	c.W.Int(int64(funcs))
}

func functionKillCmd(c *Ctx) { killScript(c, true) }
func scriptKillCmd(c *Ctx)   { killScript(c, false) }

// killScript is SCRIPT KILL (function false) and FUNCTION KILL (true): each stops only its own
// kind of run, as in Redis.
func killScript(c *Ctx, function bool) {
	e := c.engine()
	if e == nil {
		c.Err(Error(script.ErrNotBusy.Error()))
		return
	}
	if err := e.Kill(function); err != nil {
		c.Err(Error(err.Error()))
		return
	}
	c.OK()
}

// BusyError is the reply to other clients' commands while e runs a script past the threshold:
// it names the KILL that stops it.
func BusyError(e *script.Engine) Error {
	if info, running := e.RunningInfo(); running && info.Function {
		return Error(script.ErrBusyFunction.Error())
	}
	return ErrBusy
}
