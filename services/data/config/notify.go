package config

import "github.com/lavikdb/lavik/services/data/pubsub"

// notifyCheck validates notify-keyspace-events as Redis does and normalises it: Redis's
// display form ("AKE" for "KEA", "" for ""), with "n" added at the end when A hides it, since
// Redis 7.0 still publishes the "new" events then (notifyShow drops it again for CONFIG GET).
func notifyCheck(v string) (string, error) {
	f, err := pubsub.ParseNotify(v)
	if err != nil {
		return "", err
	}
	s := f.String()
	if f&pubsub.All == pubsub.All && f&pubsub.NewKey != 0 {
		s += "n"
	}
	return s, nil
}

// notifyShow is the form CONFIG GET shows, Redis 7.0's keyspaceEventsFlagsToString: the n of
// a value with A is not shown.
func notifyShow(v string) string {
	f, err := pubsub.ParseNotify(v)
	if err != nil {
		return v
	}
	return f.String()
}
