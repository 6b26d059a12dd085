#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
import Foundation

/// The built `flowdir jobserver`, on a free port, for end-to-end tests.
public final class JobServerProcess {
    public let port: Int
    public let dir: String
    /// The token clients send: its --token-file's, else the one it keeps in DIR/token.
    public let token: String
    let leader: GroupLeader

    /// - Parameter arguments: after `jobserver --port 0 --dir DIR`.
    public init(dir: String, arguments: [String] = [], port requested: Int = 0) throws {
        self.dir = dir
        try Files.makeDirectories(dir)
        let out = dir + "/server.out"
        unlink(out)
        let argv = [RepositoryPaths.flowdirExecutable, "jobserver", "--dir", dir] + arguments + (arguments.contains("--port") ? [] : ["--port", String(requested)])
        let command = "exec " + argv.map(Self.quote).joined(separator: " ") + " >" + Self.quote(out) + " 2>&1"
        leader = try GroupLeader(["/bin/sh", "-c", command], directory: dir, environment: ["PATH": "/usr/local/bin:/usr/bin:/bin"])
        var found: Int?
        Eventually.blockingUntil(timeout: .seconds(30)) {
            if let text = try? LocalFileSystem().readFile(out, limit: 1 << 20), let line = String(decoding: text, as: UTF8.self)
                .split(separator: "\n").first(where: { $0.hasPrefix("flowdir jobserver: http://127.0.0.1:") }) {
                found = Int(line.dropFirst("flowdir jobserver: http://127.0.0.1:".count).prefix { $0.isNumber })
            }
            return found != nil
        }
        guard let found else {
            leader.end()
            throw Failed(log: (try? LocalFileSystem().readFile(out, limit: 1 << 16)).map { String(decoding: $0, as: UTF8.self) } ?? "")
        }
        port = found
        let tokenFile = arguments.firstIndex(of: "--token-file").map { arguments[$0 + 1] } ?? dir + "/token"
        token = (try? LocalFileSystem().readFile(tokenFile, limit: 4096)).map { String(decoding: $0, as: UTF8.self).filter { !$0.isWhitespace } } ?? ""
    }

    public struct Failed: Error, CustomStringConvertible {
        public var log: String
        public var description: String { "the job server did not start: \(log)" }
    }

    public var url: String { "http://127.0.0.1:\(port)/v1" }

    /// Lines of its access log: `time epoch METHOD PATH STATUS`.
    public var accessLog: [String] {
        ((try? LocalFileSystem().readFile(dir + "/access.log", limit: 64 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? "")
            .split(separator: "\n").map(String.init)
    }

    public var predictionFiles: Int {
        ((try? LocalFileSystem().listDirectory(dir + "/predictions")) ?? []).filter { $0.hasSuffix(".json") }.count
    }

    /// Stops it (SIGKILL to its group), as a crash would.
    public func stop() {
        stopped = true
        leader.end()
    }

    private var stopped = false

    /// Stops it as a person does (SIGTERM), letting it stop what it runs;
    /// SIGKILL to its group if it is not gone in `timeout` seconds.
    public func terminate(timeout: Double = 60) {
        guard !stopped else { return }
        stopped = true
        kill(leader.pid, SIGTERM)
        // Exited (a zombie until reaped, so its pid is not another's yet).
        let pid = leader.pid
        Eventually.blockingUntil(timeout: .seconds(timeout)) { !ProcessTable.isAlive(pid) }
        leader.end()
    }

    /// Stopped as a person stops it: the cog servers it started go with it.
    deinit { terminate(timeout: 30) }

    static func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}

/// A real cog server (PyPI cog + coglet 0.23.1, no Docker) for a predictor folder.
public final class CogProcess {
    public let port: Int
    let leader: GroupLeader

    /// The venv `scripts/setup.sh` makes: `$FLOWDIR_COG_VENV`, else /opt/flowdir-cog.
    public static var venv: String {
        getenv("FLOWDIR_COG_VENV").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/opt/flowdir-cog"
    }

    public static var isInstalled: Bool { Files.exists(venv + "/bin/python") }

    public init(predictor directory: String, log: String) throws {
        port = try FreePort.pick()
        let command = "PORT=\(port) COG_PREDICT_TYPE_STUB=predict.py:Predictor exec python -m cog.server.http --host 127.0.0.1 >"
            + JobServerProcess.quote(log) + " 2>&1"
        // The venv's bin first: cog's worker runs `python`.
        leader = try GroupLeader(["/bin/sh", "-c", command], directory: directory,
                                 environment: ["PATH": Self.venv + "/bin:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp"])
        let port = self.port
        let ready = try Eventually.blockingUntil(timeout: .seconds(90), every: .milliseconds(200)) {
            try CommandRunner.run("/usr/bin/curl", ["-s", "-m", "2", "http://127.0.0.1:\(port)/health-check"]).stdout.contains("\"READY\"")
        }
        if ready { return }
        leader.end()
        throw JobServerProcess.Failed(log: (try? LocalFileSystem().readFile(log, limit: 1 << 16)).map { String(decoding: $0, as: UTF8.self) } ?? "")
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    public func stop() { leader.end() }

    deinit { leader.end() }
}

public enum FreePort {
    /// A port nothing listens on now (the kernel's pick, then released).
    public static func pick() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw GroupLeader.SpawnFailed(code: errno) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A real sshd on a loopback port (`scripts/sshd-local.sh`), with a client
/// key and an ssh config naming it `flowdir-test`: git reaches it with
/// `environment` (GIT_SSH_COMMAND).
public final class SSHServer: @unchecked Sendable {
    public let dir: String
    public let pid: String

    public init(dir: String) throws {
        self.dir = dir
        let r = try CommandRunner.run("/bin/bash", [RepositoryPaths.root + "/scripts/sshd-local.sh", "start", dir, String(try FreePort.pick())])
        guard r.status == 0 else { throw GitCLI.Failure(description: "sshd-local.sh failed: \(r.stderr)") }
        pid = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// What git needs to reach `flowdir-test:` through this server.
    public var environment: [String: String] { ["GIT_SSH_COMMAND": "ssh -F \(dir)/ssh_config"] }

    public func stop() { _ = try? CommandRunner.run("/bin/bash", [RepositoryPaths.root + "/scripts/sshd-local.sh", "stop", pid]) }
    deinit { stop() }
}
