#if canImport(Glibc)
import Glibc
#endif

/// Work on a thread of its own, whose result is waited for with `value()`:
/// for reads that overlap at start-up. Not on Dispatch's pool: a pool
/// thread waiting for work queued to the same pool waits until the pool
/// grows, which it does only after about a second (measured: the first job
/// of a run started 1 s late).
final class Background<Value>: ThreadBody, @unchecked Sendable {
    private var thread = pthread_t()
    private var result: Value?
    private var work: (() -> Value)?
    private var joined = false

    init(_ work: @escaping () -> Value) {
        self.work = work
        super.init()
        let box = Unmanaged.passRetained(self as ThreadBody)
        if pthread_create(&thread, nil, { raw in
            Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, box.toOpaque()) != 0 {
            // No thread to be had: do it here, now.
            box.release()
            run()
            joined = true
        }
    }

    override func run() {
        result = work?()
        work = nil
    }

    /// Waits for the work to end (once) and returns what it made.
    func value() -> Value {
        if !joined {
            pthread_join(thread, nil)
            joined = true
        }
        return result!
    }

    /// Dropped unasked (a caller that threw): the thread holds the last
    /// reference, so this runs on it once the work is done; nobody joins it.
    deinit {
        if !joined { pthread_detach(thread) }
    }
}

/// What a thread started from C runs (a C function cannot capture a generic type).
class ThreadBody {
    func run() {}
}
