#if canImport(Glibc)
import Glibc
#endif

/// Makes this (test) process a child subreaper: orphans of its children
/// (an sshd it starts, that daemon's sessions' jobs) come to it and, never
/// waited for, stay zombies. That is a host whose init reaps no orphans,
/// and what a whole test run is once a job-server test has made itself a
/// subreaper (`CogServer`): ssh tests that need it ask for it, so it is
/// the same whatever ran before them. Set once, for the process's life.
public enum Subreaper {
    public static let become: Void = {
        // `prctl` is variadic in C: called through a pointer with the arguments it takes here.
        typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prctl") else { return }
        _ = unsafeBitCast(symbol, to: Prctl.self)(36 /* PR_SET_CHILD_SUBREAPER */, 1, 0, 0, 0)
    }()
}
