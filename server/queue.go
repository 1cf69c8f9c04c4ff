package server

import (
	"sync"
	"unsafe"
)

// pooledQueueCap is the capacity of the outbound queues sessions share
// through queuePool: more than the frames one flush usually carries, so a
// busy subscriber's queue seldom grows past it, and 1 KiB of outItems.
const pooledQueueCap = 16

// queuePool holds empty outbound queues of pooledQueueCap, each as a
// pointer to its first item, so that putting one back does not allocate.
// A session takes one when something is queued for it and gives it back
// when the writer has taken and written it, or when the session goes idle:
// an idle session holds no queue, and one that is written to often does
// not grow a new queue after every write.
var queuePool sync.Pool

// newQueue returns an empty queue, from the pool when it holds one.
func newQueue() []outItem {
	if p, _ := queuePool.Get().(*outItem); p != nil {
		return unsafe.Slice(p, pooledQueueCap)[:0]
	}
	return make([]outItem, 0, pooledQueueCap)
}

// recycleQueue gives q back to the pool. Every item of q, up to its
// capacity, must be zero (cleared after use, or never used), and nothing
// else may hold q: the next session to take it writes into it.
func recycleQueue(q []outItem) {
	if cap(q) != pooledQueueCap {
		return
	}
	queuePool.Put(unsafe.SliceData(q))
}
