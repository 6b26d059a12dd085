#if canImport(Glibc)
import Glibc
#endif
import CFlowdirSys
import FlowdirCore
import Foundation

/// One host reached with the user's own ssh: a command run there, with
/// bytes or a file as its input and its output streamed back. Several
/// calls can share one connection (a master of ssh's own connection
/// sharing, started and stopped by flowdir, never left behind).
public final class SSHCommand: Sendable {
    public let destination: String
    public let port: Int?
    /// The ssh command as git would run it (`GIT_SSH_COMMAND`, `core.sshCommand`), shell words; nil: `ssh`.
    public let sshCommand: String?
    private let master = Locked<Master?>(nil)
    let clock: FlowdirClock

    public init(destination: String, port: Int?, sshCommand: String?, clock: FlowdirClock = .system) {
        self.clock = clock
        self.destination = destination
        self.port = port
        self.sshCommand = sshCommand
    }

    deinit { endMaster() }

    public struct Result: Sendable {
        public var status: Int32
        /// stdout, when no handler took it.
        public var output: String
        public var errors: String
    }

    public typealias Input = PipedCommand.Input

    /// Runs `script` with the host's shell. `output`, when given, gets stdout in pieces as it comes.
    public func run(_ script: String, input: Input, output handler: ((UnsafeRawBufferPointer) -> Void)? = nil) async -> Result {
        var args = ["-o", "BatchMode=yes"]
        if let path = master.locked({ $0?.socket }) { args += ["-o", "ControlMaster=no", "-o", "ControlPath=\(path)"] }
        if let port { args += ["-p", String(port)] }
        args += ["--", destination, script]
        return await Self.spawn(sshCommand: sshCommand, arguments: args, input: input, output: handler)
    }

    /// Runs `body` with every call over one connection (for several
    /// transfers in a row), then closes it.
    /// Within a connection already shared (see `startSharing`), the body
    /// uses it and leaves it open for its owner.
    public func sharingOneConnection<T>(_ body: () async throws(ContentRemoteError) -> T) async throws(ContentRemoteError) -> T {
        let started = await startSharing()
        let result: T
        do { result = try await body() } catch {
            if started { await stopSharing() }
            throw error
        }
        if started { await stopSharing() }
        return result
    }

    /// The ssh command git should use to go over the shared connection
    /// (`GIT_SSH_COMMAND`): the user's own, told where the master is.
    public var sharedGitSSHCommand: String? {
        master.locked { $0?.socket }.map { (sshCommand ?? "ssh") + " -o ControlMaster=no -o ControlPath=" + Shell.quote($0) }
    }

    private struct Master: Sendable {
        let socket: String
        let process: ProcessBox
        /// The master's stdin, never written: when flowdir ends, even by
        /// kill -9, the kernel closes it, the host's `cat` sees its end, and
        /// the master's session and the master with it end too.
        let lifeline: ProcessBox.Lifeline
    }

    private final class ProcessBox: @unchecked Sendable {
        let process: Process
        init(_ p: Process) { process = p }

        /// A pipe made close-on-exec from its first moment (`pipe2`), so no
        /// other child of flowdir, spawned meanwhile by another thread,
        /// holds its write end open; the read end becomes the master's stdin.
        final class Lifeline: @unchecked Sendable {
            let reading: FileHandle
            let writing: FileHandle
            init?() {
                var fds: [Int32] = [-1, -1]
                guard pipe2(&fds, O_CLOEXEC) == 0 else { return nil }
                reading = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
                writing = FileHandle(fileDescriptor: fds[1], closeOnDealloc: true)
            }
            func cut() { try? writing.close() }
        }
    }

    /// A master connection (`ssh -M`), as flowdir's child; without one (it
    /// could not start) every call makes its own connection. Returns
    /// whether this call started it (its caller then stops it). Its own
    /// session is a `cat` of a pipe from flowdir, not `-N`: a master of
    /// `-N` outlived a flowdir killed with -9, holding its session on the host.
    @discardableResult
    public func startSharing() async -> Bool {
        guard master.locked({ $0 == nil }) else { return false }
        let dir = NSTemporaryDirectory() + "flowdir-ssh-\(getuid())"
        mkdir(dir, 0o700)
        let socket = dir + "/" + RandomID.token().prefix(16)
        var args = ["-o", "BatchMode=yes", "-M", "-o", "ControlPersist=no", "-o", "ControlPath=\(socket)"]
        if let port { args += ["-p", String(port)] }
        args += ["--", destination, "cat >/dev/null"]
        guard let lifeline = ProcessBox.Lifeline() else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", (sshCommand ?? "ssh") + " \"$@\"", "ssh"] + args
        process.standardInput = lifeline.reading
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return false }
        try? lifeline.reading.close()  // the child has it
        // Ready once its socket is there; a master that cannot connect ends.
        for _ in 0..<400 {
            if access(socket, F_OK) == 0 {
                master.locked { $0 = Master(socket: socket, process: ProcessBox(process), lifeline: lifeline) }
                return true
            }
            if !process.isRunning { break }
            try? await clock.sleep(for: .milliseconds(10))
        }
        lifeline.cut()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return false
    }

    public func stopSharing() async {
        guard let socket = master.locked({ $0?.socket }) else { return }
        // The master asked to end (`-O exit`): terminating the shell that
        // started it would leave ssh itself running, with its session on the host.
        var args = ["-o", "BatchMode=yes", "-o", "ControlPath=\(socket)", "-O", "exit"]
        if let port { args += ["-p", String(port)] }
        _ = await Self.spawn(sshCommand: sshCommand, arguments: args + ["--", destination], input: .none, output: nil)
        endMaster()
    }

    /// Ends the master's process (and with `-O exit` first, its ssh).
    func endMaster() {
        guard let m = master.locked({ m -> Master? in defer { m = nil }; return m }) else { return }
        m.lifeline.cut()
        m.process.process.terminate()
        m.process.process.waitUntilExit()
        unlink(m.socket)
    }

    /// `sh -c '<ssh command> "$@"' ssh ARGS…`: the user's ssh command is shell words, as git reads it.
    static func spawn(sshCommand: String?, arguments: [String], input: PipedCommand.Input,
                      output handler: ((UnsafeRawBufferPointer) -> Void)?) async -> Result {
        let r = await PipedCommand.run(["/bin/sh", "-c", (sshCommand ?? "ssh") + " \"$@\"", "ssh"] + arguments, input: input, output: handler)
        return Result(status: r.status, output: r.output, errors: r.errors)
    }

    /// A path for the host's shell: `~/x` as the home folder's x, the rest quoted.
    public static func quotePath(_ path: String) -> String {
        if path == "~" { return "\"$HOME\"" }
        if path.hasPrefix("~/") { return "\"$HOME\"/" + Shell.quote(String(path.dropFirst(2))) }
        return Shell.quote(path)
    }

    /// ssh's and the remote shell's words, on one line, shortened.
    static func words(_ text: String) -> String {
        let line = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: "; ")
        return line.isEmpty ? "ssh failed without saying why" : String(line.prefix(500))
    }
}
