#if canImport(Glibc)
import Glibc
#endif
import CFlowdirSys
import FlowdirIO

/// A process started the way flowdir starts a job (a process group of its
/// own) but by the test, standing in for a job that a killed flowdir left.
public final class GroupLeader {
    public let pid: pid_t

    /// Starts `argv` (its first element a path) in `directory` with exactly `environment`.
    public init(_ argv: [String], directory: String, environment: [String: String] = [:]) throws {
        var attributes = posix_spawnattr_t()
        var actions = posix_spawn_file_actions_t()
        posix_spawnattr_init(&attributes)
        posix_spawn_file_actions_init(&actions)
        defer {
            posix_spawnattr_destroy(&attributes)
            posix_spawn_file_actions_destroy(&actions)
        }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawn_file_actions_addchdir_np(&actions, directory)
        // Nothing of this process's but stdin, stdout and stderr: a server
        // (giftless, cog) lives as long as the tests, and an end of another
        // child's pipe or socket it kept would hold that child's reader
        // open. Foundation's `Process` learns of a child's end from a socket
        // the child holds: kept open by a server, `waitUntilExit` never returned.
        // (glibc 2.34's posix_spawn_file_actions_addclosefrom_np, not in Swift's Glibc module: found at run time.)
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        let args: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        let env: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (args + env).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, &attributes, args, env)
        guard rc == 0 else { throw SpawnFailed(code: rc) }
        self.pid = pid
        // posix_spawn returns once the child has its new memory, before exec
        // has put the environment in it: /proc/PID/environ reads empty for
        // that moment (long on a loaded machine). Tests read it at once.
        guard !environment.isEmpty else { return }
        Eventually.blockingUntil(timeout: .seconds(10), every: .microseconds(200)) {
            let fd = open("/proc/\(pid)/environ", O_RDONLY | O_CLOEXEC)
            var byte: UInt8 = 0
            let n = fd >= 0 ? read(fd, &byte, 1) : -1
            if fd >= 0 { close(fd) }
            // Some bytes, or it cannot be read, or it has ended (a zombie's reads empty).
            return n != 0 || !ProcessTable.isAlive(pid)
        }
    }

    public struct SpawnFailed: Error { public var code: Int32 }

    private var ended = false

    /// Ends the group and reaps the leader, once: after the reap its pid
    /// may be another process's (a concurrent test's), never to be signalled.
    public func end() {
        guard !ended else { return }
        ended = true
        _ = killpg(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }

    deinit { end() }
}
