package events

import (
	"sync"
	"sync/atomic"
)

// Sink receives events. Emit must not block for long: it runs on the path
// of a tool call.
type Sink interface {
	Emit(Event) error
}

// Bus delivers events to the subscribers of this process (the gateway
// forwards them to its clients). Delivery never blocks the emitter: a
// subscriber that falls behind its buffer loses events, and counts them.
type Bus struct {
	mu   sync.RWMutex
	subs map[*Subscription]struct{}
}

// NewBus returns a bus without subscribers.
func NewBus() *Bus { return &Bus{subs: map[*Subscription]struct{}{}} }

// Subscription is one subscriber's stream.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	bus     *Bus
	dropped atomic.Int64
	once    sync.Once
}

// Subscribe returns a subscription with room for buffer undelivered events.
func (b *Bus) Subscribe(buffer int) *Subscription {
	c := make(chan Event, buffer)
	s := &Subscription{C: c, c: c, bus: b}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Dropped is how many events this subscriber lost to a full buffer.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Close ends the subscription and closes its channel.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.bus.mu.Lock()
		delete(s.bus.subs, s)
		s.bus.mu.Unlock()
		close(s.c)
	})
}

// Emit delivers e to every subscriber that has room.
func (b *Bus) Emit(e Event) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for s := range b.subs {
		select {
		case s.c <- e:
		default:
			s.dropped.Add(1)
		}
	}
	return nil
}
