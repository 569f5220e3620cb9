package config

import (
	"fmt"
	"strconv"
	"strings"
)

// OutputLimit is one client class's client-output-buffer-limit: a client whose unwritten
// replies exceed Hard bytes, or Soft bytes for SoftSeconds on end, is disconnected; 0 is no
// limit.
type OutputLimit struct {
	Hard, Soft  int64
	SoftSeconds int64
}

// The client classes of client-output-buffer-limit, in the order CONFIG GET lists them.
const (
	ClassNormal = iota
	ClassReplica
	ClassPubSub
	numClasses
)

var classNames = [numClasses]string{"normal", "slave", "pubsub"}

func classOf(name string) (int, bool) {
	switch strings.ToLower(name) {
	case "normal":
		return ClassNormal, true
	case "slave", "replica":
		return ClassReplica, true
	case "pubsub":
		return ClassPubSub, true
	}
	return 0, false
}

// parseOutputLimits parses "class hard soft seconds ..." into the classes it names.
func parseOutputLimits(v string) (limits [numClasses]OutputLimit, given [numClasses]bool, err error) {
	f := strings.Fields(v)
	if len(f) == 0 || len(f)%4 != 0 {
		return limits, given, fmt.Errorf("wrong number of arguments in buffer limit configuration")
	}
	for i := 0; i < len(f); i += 4 {
		class, ok := classOf(f[i])
		if !ok {
			return limits, given, fmt.Errorf("invalid client class specified in buffer limit configuration")
		}
		hard, err1 := ParseMemory(f[i+1])
		soft, err2 := ParseMemory(f[i+2])
		secs, err3 := strconv.ParseInt(f[i+3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || secs < 0 {
			return limits, given, fmt.Errorf("error in hard, soft or soft_seconds setting in buffer limit configuration")
		}
		limits[class], given[class] = OutputLimit{Hard: hard, Soft: soft, SoftSeconds: secs}, true
	}
	return limits, given, nil
}

func formatOutputLimits(limits [numClasses]OutputLimit, given [numClasses]bool) string {
	var parts []string
	for class, l := range limits {
		if given[class] {
			parts = append(parts, fmt.Sprintf("%s %d %d %d", classNames[class], l.Hard, l.Soft, l.SoftSeconds))
		}
	}
	return strings.Join(parts, " ")
}

// obufCheck normalises a client-output-buffer-limit value: the classes given, sizes in bytes.
func obufCheck(v string) (string, error) {
	limits, given, err := parseOutputLimits(v)
	if err != nil {
		return "", err
	}
	return formatOutputLimits(limits, given), nil
}

// obufMerge applies the classes of v over old, as Redis's CONFIG SET does.
func obufMerge(old, v string) string {
	limits, given, _ := parseOutputLimits(old)
	newLimits, newGiven, _ := parseOutputLimits(v)
	for class := range limits {
		if newGiven[class] {
			limits[class], given[class] = newLimits[class], true
		}
	}
	return formatOutputLimits(limits, given)
}

// OutputLimits returns the client-output-buffer-limit of every class.
func (c *Config) OutputLimits() [numClasses]OutputLimit {
	limits, _, _ := parseOutputLimits(c.Get("client-output-buffer-limit"))
	return limits
}
