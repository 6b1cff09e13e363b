// Package fifo is a first-in first-out queue on a growable ring.
package fifo

// Queue is a FIFO of T. The zero value is an empty queue. It is not safe
// for concurrent use.
type Queue[T any] struct {
	buf        []T // len is zero or a power of two
	head, size int
}

// Len returns the number of items queued.
func (q *Queue[T]) Len() int { return q.size }

// Push adds x at the tail.
func (q *Queue[T]) Push(x T) {
	if q.size == len(q.buf) {
		buf := make([]T, max(2*len(q.buf), 4))
		for i := range q.size {
			buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.size)&(len(q.buf)-1)] = x
	q.size++
}

// Pop removes and returns the head; ok is false when the queue is empty.
func (q *Queue[T]) Pop() (x T, ok bool) {
	if q.size == 0 {
		return x, false
	}
	var zero T
	x, q.buf[q.head] = q.buf[q.head], zero
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.size--
	return x, true
}

// Peek returns the head without removing it; ok is false when empty.
func (q *Queue[T]) Peek() (x T, ok bool) {
	if q.size == 0 {
		return x, false
	}
	return q.buf[q.head], true
}

// Clear empties the queue, keeping its storage.
func (q *Queue[T]) Clear() {
	clear(q.buf)
	q.head, q.size = 0, 0
}

// At returns a pointer to the i-th item from the head (0 is the head),
// valid until the next Push. i must be in [0, Len()).
func (q *Queue[T]) At(i int) *T {
	if i < 0 || i >= q.size {
		panic("fifo: index out of range")
	}
	return &q.buf[(q.head+i)&(len(q.buf)-1)]
}
