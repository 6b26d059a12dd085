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
    /// The serving threads, by kind; none once closed.
    private var serving: [(thread: pthread_t, yielding: Bool)] = []
    private var closing = false
    /// Set once a thread could not be made: any thread then takes any piece.
    private var anyThreadTakesAll = false

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
        let needed = !closing && !serving.contains { $0.yielding == yielding }
        pthread_mutex_unlock(mutex)
        if needed { startThread(yielding: yielding) }
    }

    /// Returns once every piece handed in so far is done.
    func wait() {
        pthread_mutex_lock(mutex)
        while busy || !pieces.isEmpty { pthread_cond_wait(changed, mutex) }
        pthread_mutex_unlock(mutex)
    }

    /// Finishes what is handed in and ends the threads; a later piece
    /// starts them again. From a piece (the last reference to the lane's
    /// owner let go there), that thread ends once the piece is done.
    func close() {
        pthread_mutex_lock(mutex)
        closing = true
        pthread_cond_broadcast(changed)
        let fromLane = serving.contains { pthread_equal($0.thread, pthread_self()) != 0 }
        while serving.count > (fromLane ? 1 : 0) { pthread_cond_wait(changed, mutex) }
        if !fromLane { closing = false }
        let left = (normal: pieces.contains { !$0.yielding }, yielding: pieces.contains { $0.yielding })
        pthread_mutex_unlock(mutex)
        // Handed in meanwhile: served by threads of their own again.
        guard !fromLane else { return }
        if left.normal { startThread(yielding: false) }
        if left.yielding { startThread(yielding: true) }
    }

    /// Whether the calling thread yields to every other (SCHED_IDLE).
    static var callerYields: Bool { sched_getscheduler(0) == schedIdle }

    private static let schedIdle: Int32 = 5  // SCHED_IDLE, not in Swift's Glibc module

    private func startThread(yielding: Bool) {
        final class Start {
            let lane: BackgroundLane, yielding: Bool
            init(_ lane: BackgroundLane, _ yielding: Bool) { self.lane = lane; self.yielding = yielding }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        defer { pthread_attr_destroy(&attributes) }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard !serving.contains(where: { $0.yielding == yielding }) else { return }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Start(self, yielding))
        let made = pthread_create(&thread, &attributes, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            _ = pthread_setname_np(pthread_self(), start.yielding ? "flowdir-commit~" : "flowdir-commit")
            if start.yielding {
                var none = sched_param()
                _ = sched_setscheduler(0, BackgroundLane.schedIdle, &none)  // refused: it runs as any thread does
            }
            start.lane.serve(yielding: start.yielding)
            return nil
        }, box.toOpaque())
        if made == 0 {
            // Counted before it runs, so that `close` waits for it.
            serving.append((thread, yielding))
        } else {
            box.release()
            anyThreadTakesAll = true
            pthread_cond_broadcast(changed)
            // No thread at all: the caller does the work itself.
            if serving.isEmpty { while !busy, !pieces.isEmpty { run(pieces.removeFirst()) } }
        }
    }

    private func serve(yielding: Bool) {
        pthread_mutex_lock(mutex)
        while true {
            // (Not a copy of the first piece: it would hold its work past `run`.)
            if !busy, let kind = pieces.first?.yielding, kind == yielding || anyThreadTakesAll {
                run(pieces.removeFirst())
                continue
            }
            if closing, !pieces.contains(where: { $0.yielding == yielding || anyThreadTakesAll }) { break }
            pthread_cond_wait(changed, mutex)
        }
        serving.removeAll { pthread_equal($0.thread, pthread_self()) != 0 }
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    /// Runs `piece` with the mutex let go meanwhile; called, and returns,
    /// with it held. The piece, and what it holds, goes before `busy` is
    /// cleared: a waiter then finds the lane's owner let go of here too.
    private func run(_ piece: consuming Piece) {
        busy = true
        pthread_mutex_unlock(mutex)
        do {
            let work = (consume piece).work
            work()
        }
        pthread_mutex_lock(mutex)
        busy = false
        pthread_cond_broadcast(changed)
    }
}
