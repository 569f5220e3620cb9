package config

import "github.com/lavikdb/lavik/services/data/pubsub"

// notifyCheck validates notify-keyspace-events as Redis does and normalises it to the form
// CONFIG GET shows ("AKE" for "KEA", "" for "").
func notifyCheck(v string) (string, error) {
	f, err := pubsub.ParseNotify(v)
	if err != nil {
		return "", err
	}
	return f.String(), nil
}
