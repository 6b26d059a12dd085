#if canImport(Glibc)
import Glibc
#endif
import CFlowdirSys

/// Work done one piece at a time, in the order handed in, on threads of
/// its own: an instance's commits while its jobs run (`InstanceStore.
/// commitInBackground`). A piece marked `yielding` runs on a thread with
/// Linux's SCHED_IDLE policy, which any other runnable thread preempts:
/// while short jobs follow each other, their bookkeeping takes only CPU
/// that no job wants, as databases run background compaction (measured:
/// a 1,000-step run of `touch` 4–10% sooner, `Benchmarks/ab.py`). Others
/// run on a thread of normal priority. An unprivileged thread can never
/// leave SCHED_IDLE, so each kind has its own thread, made on first use.
final class BackgroundLane: @unchecked Sendable {
    private struct Piece {
        let yielding: Bool
        let work: () -> Void
    }

    // At fixed addresses of their own (see `Mutex`).
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var pieces: [Piece] = []
    private var busy = false
    private var started: (normal: Bool, yielding: Bool) = (false, false)
    private var closing = false
    private var threads: [pthread_t] = []

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
    }

    deinit {
        close()
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
    }

    func submit(yielding: Bool, _ work: @escaping () -> Void) {
        pthread_mutex_lock(mutex)
        pieces.append(Piece(yielding: yielding, work: work))
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
        submitStart(yielding: yielding)
    }

    /// Returns once every piece handed in so far is done.
    func wait() {
        pthread_mutex_lock(mutex)
        while busy || !pieces.isEmpty { pthread_cond_wait(changed, mutex) }
        pthread_mutex_unlock(mutex)
    }

    /// Finishes what is handed in, then ends the threads; a later piece starts them again.
    func close() {
        pthread_mutex_lock(mutex)
        closing = true
        pthread_cond_broadcast(changed)
        let ending = threads
        threads = []
        pthread_mutex_unlock(mutex)
        for t in ending where pthread_equal(t, pthread_self()) == 0 { pthread_join(t, nil) }
        pthread_mutex_lock(mutex)
        closing = false
        started = (false, false)
        // Handed in meanwhile: served by threads of its own again.
        let left = (normal: pieces.contains { !$0.yielding }, yielding: pieces.contains { $0.yielding })
        pthread_mutex_unlock(mutex)
        if left.normal { submitStart(yielding: false) }
        if left.yielding { submitStart(yielding: true) }
    }

    private func submitStart(yielding: Bool) {
        pthread_mutex_lock(mutex)
        let start = yielding ? !started.yielding : !started.normal
        if yielding { started.yielding = true } else { started.normal = true }
        pthread_mutex_unlock(mutex)
        if start { startThread(yielding: yielding) }
    }

    /// Whether the calling thread yields to every other (SCHED_IDLE).
    static var callerYields: Bool { sched_getscheduler(0) == schedIdle }

    private static let schedIdle: Int32 = 5  // SCHED_IDLE, not in Swift's Glibc module

    private func startThread(yielding: Bool) {
        final class Start {
            let lane: BackgroundLane, yielding: Bool
            init(_ lane: BackgroundLane, _ yielding: Bool) { self.lane = lane; self.yielding = yielding }
        }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Start(self, yielding))
        let made = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            _ = pthread_setname_np(pthread_self(), start.yielding ? "flowdir-commit~" : "flowdir-commit")
            if start.yielding {
                var none = sched_param()
                _ = sched_setscheduler(0, BackgroundLane.schedIdle, &none)  // refused: it runs as any thread does
            }
            start.lane.serve(yielding: start.yielding)
            return nil
        }, box.toOpaque())
        pthread_mutex_lock(mutex)
        var alone = false
        if made == 0 {
            threads.append(thread)
        } else {
            // No thread to be had: any thread takes any piece from now on,
            // and with none at all the caller does the work.
            box.release()
            anyThreadTakesAll = true
            if yielding { started.yielding = false } else { started.normal = false }
            alone = threads.isEmpty
            pthread_cond_broadcast(changed)
        }
        pthread_mutex_unlock(mutex)
        if alone { drainHere() }
    }

    /// Set once a thread could not be made.
    private var anyThreadTakesAll = false

    private func serve(yielding: Bool) {
        pthread_mutex_lock(mutex)
        while true {
            if !busy, let next = pieces.first, next.yielding == yielding || anyThreadTakesAll {
                pieces.removeFirst()
                busy = true
                pthread_mutex_unlock(mutex)
                next.work()
                pthread_mutex_lock(mutex)
                busy = false
                pthread_cond_broadcast(changed)
                continue
            }
            if closing, !pieces.contains(where: { $0.yielding == yielding || anyThreadTakesAll }) { break }
            pthread_cond_wait(changed, mutex)
        }
        pthread_mutex_unlock(mutex)
    }

    /// No thread at all: the caller does the work itself.
    private func drainHere() {
        pthread_mutex_lock(mutex)
        while !busy, !pieces.isEmpty {
            let next = pieces.removeFirst()
            busy = true
            pthread_mutex_unlock(mutex)
            next.work()
            pthread_mutex_lock(mutex)
            busy = false
            pthread_cond_broadcast(changed)
        }
        pthread_mutex_unlock(mutex)
    }
}
