package catalog

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// TopicID is a Kafka topic id (a UUID). Its text form is Kafka's:
// base64url without padding, 22 characters.
type TopicID [16]byte

// String is the id as Kafka writes it (Uuid.toString): base64url, no
// padding.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// IsZero reports whether id is Kafka's ZERO_UUID, which names no topic.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// metadataTopicID is Kafka's METADATA_TOPIC_ID (0...01), reserved for
// the __cluster_metadata topic.
var metadataTopicID = TopicID{15: 1}

// ParseTopicID parses the text form of a topic id as Kafka's
// Uuid.fromString does: base64url of 16 bytes, with or without its "=="
// padding (at most 24 characters). The zero id is refused: it names no
// topic.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	if len(s) > 24 {
		return id, fmt.Errorf("topic id %.24q... is %d characters, more than 24", s, len(s))
	}
	enc := base64.RawURLEncoding
	if len(s) == 24 && s[22:] == "==" {
		s = s[:22]
	}
	if len(s) != 22 {
		return id, fmt.Errorf("topic id %q is %d characters, want 22 (base64url of 16 bytes)", s, len(s))
	}
	n, err := enc.Decode(id[:], []byte(s))
	if err != nil || n != 16 {
		return TopicID{}, fmt.Errorf("topic id %q is not base64url of 16 bytes: %v", s, err)
	}
	if id.IsZero() {
		return id, fmt.Errorf("topic id %q is the zero id, which names no topic", s)
	}
	return id, nil
}

// newKafkaUUID makes a random id as Kafka's Uuid.randomUuid does: a
// version 4 UUID, never the zero id nor METADATA_TOPIC_ID, and never one
// whose text starts with '-' (command line tools would take it for a
// flag).
func newKafkaUUID() (TopicID, error) {
	for {
		var id TopicID
		if _, err := rand.Read(id[:]); err != nil {
			return id, err
		}
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // IETF variant
		if id.IsZero() || id == metadataTopicID || id.String()[0] == '-' {
			continue
		}
		return id, nil
	}
}
