#if canImport(Glibc)
import Glibc
#endif

/// A small lock for state shared with callbacks from other threads.
/// The pthread object lives at a fixed address of its own: one stored in
/// a Swift property and passed as `&m` is an access to that property, which
/// the optimizer may widen across calls (an access to it from code run in
/// between then traps as a conflict).
final class Mutex: @unchecked Sendable {
    private let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(m, nil) }
    deinit {
        pthread_mutex_destroy(m)
        m.deallocate()
    }
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(m)
        defer { pthread_mutex_unlock(m) }
        return try body()
    }
}

/// A value shared between threads, behind a lock.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = Mutex()
    private var value: Value
    public init(_ value: Value) { self.value = value }
    public func locked<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.locked { try body(&value) }
    }
}
