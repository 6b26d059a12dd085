import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// flowdir's shared ssh connection (docs/storage.md) never outlives it,
/// even when it is killed with -9 in the middle of a transfer.
@Suite(.tags(.large, .sshd), Component.sshd.needed) struct SSHConnectionTests {
    /// ssh processes started for this test's connections (their ControlPath is under `dir`).
    static func sshOf(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { pid in
            guard Int32(pid) != nil, let cmd = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")) else { return false }
            let args = cmd.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return args.contains("-M") && args.contains { $0.contains(dir) }
        }
    }

    @Test func aSyncKilledMidUploadLeavesNoConnectionBehind() throws {
        let i = try LargeOutputsTests.Instance(size: 64 << 20)
        let ssh = try SSHServer(dir: i.dir.path + "/ssh")
        defer { ssh.stop() }
        i.env.merge(ssh.environment) { $1 }
        let tmp = i.dir.path + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        i.env["TMPDIR"] = tmp
        #expect(try i.flowdir(["run", i.inst]).status == 0)
        let hub = i.dir.path + "/hub.git"
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        _ = try i.git(["remote", "add", "origin", "flowdir-test:" + hub])

        let sync = Process()
        sync.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
        sync.arguments = ["sync", i.inst]
        sync.environment = ProcessInfo.processInfo.environment.merging(i.env) { $1 }
        sync.standardOutput = FileHandle.nullDevice
        sync.standardError = FileHandle.nullDevice
        try sync.run()
        // Killed once the master is up and the content is on its way (or the sync is over).
        let partial = hub + "/lfs/tmp"
        Eventually.blockingUntil(every: .milliseconds(5)) {
            !sync.isRunning || !((try? FileManager.default.contentsOfDirectory(atPath: partial))?.isEmpty ?? true)
        }
        let killedMidway = sync.isRunning
        kill(sync.processIdentifier, SIGKILL)
        sync.waitUntilExit()
        // Generous: it only guards against a hang. The master ends once its lifeline is cut.
        Eventually.blockingUntil(timeout: .seconds(30), every: .milliseconds(50)) { Self.sshOf(tmp).isEmpty }
        #expect(Self.sshOf(tmp).isEmpty, "ssh masters left: \(Self.sshOf(tmp))")
        #expect(killedMidway, "the sync ended before it could be killed midway")
    }
}
