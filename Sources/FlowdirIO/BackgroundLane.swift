#if canImport(Glibc)
import Glibc
#endif
import CFlowdirSys

/// Work done one piece at a time, in the order handed in, on a thread of
/// its own: an instance's commits while its jobs run (`InstanceStore.
/// commitInBackground`). The thread runs at normal priority. (Pieces were
/// once run at Linux's SCHED_IDLE while short jobs followed each other, to
/// take only CPU no job wanted: any other load on the machine then starved
/// them, and whoever waited for one: a 200-step run beside three busy
/// loops took 16–23 s, where it now takes 0.4 s, `Benchmarks/busy.sh`.)
final class BackgroundLane: @unchecked Sendable {
    private struct Piece {
        let work: () -> Void
    }

    // A pthread mutex for its condition variable (`Synchronization.Mutex`
    // has none). Both at fixed addresses of their own: one stored in a
    // property and passed as `&x` is an access to that property, which the
    // optimizer may widen across calls (another thread's access then traps).
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var pieces: [Piece] = []
    private var busy = false
    /// The serving thread; none once closed, or before the first piece.
    private var serving: pthread_t?
    private var closing = false

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

    func submit(_ work: @escaping () -> Void) {
        pthread_mutex_lock(mutex)
        pieces.append(Piece(work: work))
        pthread_cond_broadcast(changed)
        let needed = !closing && serving == nil
        pthread_mutex_unlock(mutex)
        if needed { startThread() }
    }

    /// Returns once every piece handed in so far is done.
    func wait() {
        pthread_mutex_lock(mutex)
        while busy || !pieces.isEmpty { pthread_cond_wait(changed, mutex) }
        pthread_mutex_unlock(mutex)
    }

    /// Finishes what is handed in and ends the thread; a later piece
    /// starts it again. From a piece (the last reference to the lane's
    /// owner let go there), the thread ends once the piece is done.
    func close() {
        pthread_mutex_lock(mutex)
        closing = true
        pthread_cond_broadcast(changed)
        let fromLane = serving.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        while !fromLane, serving != nil { pthread_cond_wait(changed, mutex) }
        if !fromLane { closing = false }
        let left = !pieces.isEmpty
        pthread_mutex_unlock(mutex)
        // Handed in meanwhile: served by a thread of its own again.
        if !fromLane, left { startThread() }
    }

    private func startThread() {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        defer { pthread_attr_destroy(&attributes) }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard serving == nil else { return }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(self)
        let made = pthread_create(&thread, &attributes, { raw in
            let lane = Unmanaged<BackgroundLane>.fromOpaque(raw!).takeRetainedValue()
            _ = pthread_setname_np(pthread_self(), "flowdir-commit")
            lane.serve()
            return nil
        }, box.toOpaque())
        if made == 0 {
            // Noted before it runs, so that `close` waits for it.
            serving = thread
        } else {
            box.release()
            // No thread: the caller does the work itself.
            while !busy, !pieces.isEmpty { run(pieces.removeFirst()) }
        }
    }

    private func serve() {
        pthread_mutex_lock(mutex)
        while true {
            // (Not a copy of the first piece: it would hold its work past `run`.)
            if !busy, !pieces.isEmpty {
                run(pieces.removeFirst())
                continue
            }
            if closing { break }
            pthread_cond_wait(changed, mutex)
        }
        serving = nil
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
