package content

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/wardenhq/warden/model"
)

// Node is one stored link of a conversation: the messages it adds after
// Prev. A root (Prev empty) made by compaction names the head it replaced
// in CompactedFrom, so the original conversation stays reachable.
type Node struct {
	Prev          string            `json:"prev,omitempty"`
	Messages      []model.Message   `json:"messages"`
	CompactedFrom string            `json:"compacted_from,omitempty"`
	Compaction    *model.Compaction `json:"compaction,omitempty"`
}

// Defaults of a Log.
const (
	// DefaultInlineBytes: content up to this size stays inline in nodes
	// (and in history); larger content is stored as its own object.
	DefaultInlineBytes = 1 << 10
	// DefaultCacheBytes bounds the conversations a Log keeps loaded.
	DefaultCacheBytes = 128 << 20
)

// Log appends to and loads conversations kept in a Store. It caches the
// latest loaded conversation of each turn (least recently used evicted
// first), so a turn's next model call reads only what it added. It is
// safe for concurrent use.
type Log struct {
	Store       Store
	InlineBytes int
	CacheBytes  int64

	mu    sync.Mutex
	byKey map[string]*list.Element
	lru   list.List
	bytes int64
}

type entry struct {
	turn, head string
	msgs       []model.Message
	bytes      int64
}

func (l *Log) inline() int {
	if l.InlineBytes > 0 {
		return l.InlineBytes
	}
	return DefaultInlineBytes
}

// Externalize stores a message's content when it is larger than the
// inline limit and returns the message with a preview and a reference.
// A message that already has a reference, or small content, is returned
// as is.
func (l *Log) Externalize(ctx context.Context, turn string, m model.Message) (model.Message, error) {
	if m.Ref != "" || len(m.Content) <= l.inline() {
		return m, nil
	}
	ref, err := l.PutContent(ctx, turn, []byte(m.Content))
	if err != nil {
		return m, err
	}
	m.Size = len(m.Content)
	m.Content, m.Ref = Preview(m.Content), ref
	return m, nil
}

// PutContent stores data under its content id and returns the id.
func (l *Log) PutContent(ctx context.Context, turn string, data []byte) (string, error) {
	id := ID(data)
	if err := l.Store.Put(ctx, turn, id, data); err != nil {
		return "", fmt.Errorf("store content: %w", err)
	}
	return id, nil
}

// Append stores a node adding msgs after head and returns the new head
// (head itself when msgs is empty). Large contents are stored first.
func (l *Log) Append(ctx context.Context, turn, head string, msgs []model.Message) (string, error) {
	return l.AppendResolved(ctx, turn, head, msgs, nil)
}

// AppendResolved is Append for a caller that already holds msgs with
// their content resolved (resolved[i] is msgs[i] without a reference):
// the cached conversation is extended with them instead of reading the
// referenced contents back. A nil resolved reads them when needed.
func (l *Log) AppendResolved(ctx context.Context, turn, head string, msgs, resolved []model.Message) (string, error) {
	if len(msgs) == 0 {
		return head, nil
	}
	stored := make([]model.Message, len(msgs))
	for i, m := range msgs {
		sm, err := l.Externalize(ctx, turn, m)
		if err != nil {
			return "", err
		}
		stored[i] = sm
	}
	id, err := l.putNode(ctx, turn, Node{Prev: head, Messages: stored})
	if err != nil {
		return "", err
	}
	// Extend the cached conversation when it is the one appended to.
	l.mu.Lock()
	e := l.get(turn)
	l.mu.Unlock()
	if e != nil && e.head == head {
		if resolved == nil {
			if resolved, err = l.resolveAll(ctx, turn, msgs); err != nil {
				return "", err
			}
		}
		l.put(turn, id, append(slices.Clip(e.msgs), resolved...))
	}
	return id, nil
}

// Root stores a compacted conversation as a new root that replaced from,
// and returns its head. The messages may carry references.
func (l *Log) Root(ctx context.Context, turn, from string, msgs []model.Message, c *model.Compaction) (string, error) {
	stored := make([]model.Message, len(msgs))
	for i, m := range msgs {
		sm, err := l.Externalize(ctx, turn, m)
		if err != nil {
			return "", err
		}
		stored[i] = sm
	}
	id, err := l.putNode(ctx, turn, Node{Messages: stored, CompactedFrom: from, Compaction: c})
	if err != nil {
		return "", err
	}
	resolved, err := l.resolveAll(ctx, turn, msgs)
	if err != nil {
		return "", err
	}
	l.put(turn, id, resolved)
	return id, nil
}

func (l *Log) putNode(ctx context.Context, turn string, n Node) (string, error) {
	data, err := json.Marshal(n)
	if err != nil {
		return "", fmt.Errorf("encode conversation node: %w", err)
	}
	id, err := l.PutContent(ctx, turn, data)
	if err != nil {
		return "", err
	}
	if err := l.Store.Put(ctx, turn, HeadName, []byte(id)); err != nil {
		return "", fmt.Errorf("store head: %w", err)
	}
	return id, nil
}

// Node reads one stored node.
func (l *Log) Node(ctx context.Context, turn, id string) (Node, error) {
	var n Node
	data, err := l.Store.Get(ctx, turn, id)
	if err != nil {
		return n, missing(turn, id, err)
	}
	if err := json.Unmarshal(data, &n); err != nil {
		return n, fmt.Errorf("conversation node %s of turn %q: %w", id, turn, err)
	}
	return n, nil
}

// Head reads the turn's latest head ("" when the turn has none).
func (l *Log) Head(ctx context.Context, turn string) (string, error) {
	data, err := l.Store.Get(ctx, turn, HeadName)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// Load returns the conversation ending at head with every reference
// resolved into its content.
func (l *Log) Load(ctx context.Context, turn, head string) ([]model.Message, error) {
	if head == "" {
		return nil, nil
	}
	l.mu.Lock()
	e := l.get(turn)
	l.mu.Unlock()
	if e != nil && e.head == head {
		return slices.Clip(e.msgs), nil
	}
	nodes, err := l.Chain(ctx, turn, head)
	if err != nil {
		return nil, err
	}
	var msgs []model.Message
	for _, n := range nodes {
		r, err := l.resolveAll(ctx, turn, n.Messages)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, r...)
	}
	l.put(turn, head, msgs)
	return slices.Clip(msgs), nil
}

// Chain returns the nodes from the root to head, in order.
func (l *Log) Chain(ctx context.Context, turn, head string) ([]Node, error) {
	var nodes []Node
	for id := head; id != ""; {
		n, err := l.Node(ctx, turn, id)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
		id = n.Prev
	}
	slices.Reverse(nodes)
	return nodes, nil
}

// Resolve returns m with its referenced content loaded (and no reference).
func (l *Log) Resolve(ctx context.Context, turn string, m model.Message) (model.Message, error) {
	if m.Ref == "" {
		return m, nil
	}
	data, err := l.Store.Get(ctx, turn, m.Ref)
	if err != nil {
		return m, missing(turn, m.Ref, err)
	}
	m.Content, m.Ref, m.Size = string(data), "", 0
	return m, nil
}

func (l *Log) resolveAll(ctx context.Context, turn string, msgs []model.Message) ([]model.Message, error) {
	out := make([]model.Message, len(msgs))
	for i, m := range msgs {
		r, err := l.Resolve(ctx, turn, m)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// MissingError says which content a turn references but the store lacks.
type MissingError struct {
	Turn, ID string
	Err      error
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("conversation content missing: turn %q references object %s, which the content store cannot provide: %v", e.Turn, e.ID, e.Err)
}

func (e *MissingError) Unwrap() error { return e.Err }

func missing(turn, id string, err error) error {
	return &MissingError{Turn: turn, ID: id, Err: err}
}

// Cache upkeep; callers hold no lock except where noted.

func (l *Log) get(turn string) *entry {
	if el, ok := l.byKey[turn]; ok {
		l.lru.MoveToFront(el)
		return el.Value.(*entry)
	}
	return nil
}

func size(msgs []model.Message) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(len(m.Content)) + 64
		for _, c := range m.ToolCalls {
			n += int64(len(c.Input)) + 32
		}
	}
	return n
}

func (l *Log) put(turn, head string, msgs []model.Message) {
	limit := l.CacheBytes
	if limit == 0 {
		limit = DefaultCacheBytes
	}
	e := &entry{turn: turn, head: head, msgs: msgs, bytes: size(msgs)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey == nil {
		l.byKey = map[string]*list.Element{}
	}
	if el, ok := l.byKey[turn]; ok {
		l.bytes -= el.Value.(*entry).bytes
		l.lru.Remove(el)
		delete(l.byKey, turn)
	}
	if limit < 0 || e.bytes > limit {
		return
	}
	l.byKey[turn] = l.lru.PushFront(e)
	l.bytes += e.bytes
	for l.bytes > limit {
		back := l.lru.Back()
		old := back.Value.(*entry)
		l.lru.Remove(back)
		delete(l.byKey, old.turn)
		l.bytes -= old.bytes
	}
}

// Forget drops a turn's cached conversation.
func (l *Log) Forget(turn string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.byKey[turn]; ok {
		l.bytes -= el.Value.(*entry).bytes
		l.lru.Remove(el)
		delete(l.byKey, turn)
	}
}
