import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Commands at the edges of the file system: a root that is not there,
/// links (to an instance, in a loop), a `new` killed half-way, `delete` of
/// a link.
@Suite(.tags(.large), Tier.notQuick) struct RobustCommandTests {
    func setUp() throws -> (TemporaryDirectory, [String: String]) { try CommandFixture.onePicker() }

    @Test func lsOfAMissingRootFails() throws {
        let (dir, env) = try setUp()
        let r = try CommandRunner.flowdir(["ls", dir.path + "/nope"], in: dir.path, environment: env)
        #expect(r.status == 2)
        #expect(r.stderr.contains("nope is not a folder (it does not exist)"), "\(r.stderr)")
    }

    @Test func linksAreListedOnceAndLoopsNotWalked() throws {
        let (dir, env) = try setUp()
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "root/a"], in: dir.path, environment: env).status == 0)
        let fm = FileManager.default
        try fm.createSymbolicLink(atPath: dir.path + "/root/link-to-a", withDestinationPath: dir.path + "/root/a")
        try fm.createDirectory(atPath: dir.path + "/root/deep", withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: dir.path + "/root/deep/loop", withDestinationPath: dir.path + "/root")
        let r = try CommandRunner.flowdir(["ls", "root"], in: dir.path, environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").count == 2, "one instance, once: \(r.stdout)")
    }

    @Test func aNewKilledHalfWayLeavesNothingForLong() throws {
        let (dir, env) = try setUp()
        let fm = FileManager.default
        try fm.createDirectory(atPath: dir.path + "/root", withIntermediateDirectories: true)
        let dead = dir.path + "/root/.inst.creating-999999-abcd1234"
        let alive = dir.path + "/root/.inst.creating-\(getpid())-abcd1234"
        for d in [dead, alive] { try fm.createDirectory(atPath: d + "/nodes", withIntermediateDirectories: true) }
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "root/inst"], in: dir.path, environment: env).status == 0)
        #expect(!fm.fileExists(atPath: dead), "its creator is gone")
        #expect(fm.fileExists(atPath: alive), "its creator may still be at work")
        let ls = try CommandRunner.flowdir(["ls", "root"], in: dir.path, environment: env)
        #expect(ls.stdout.split(separator: "\n").count == 2, "\(ls.stdout)")
    }

    @Test func deleteOfALinkDeletesNothingAndSaysWhatTo() throws {
        let (dir, env) = try setUp()
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "real"], in: dir.path, environment: env).status == 0)
        try FileManager.default.createSymbolicLink(atPath: dir.path + "/link", withDestinationPath: dir.path + "/real")
        let r = try CommandRunner.flowdir(["delete", "link", "--yes"], in: dir.path, environment: env)
        #expect(r.status == 1)
        #expect(r.stderr.contains("is a symbolic link to the instance at \(dir.path)/real; nothing was deleted"), "\(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.path + "/real/instance.yaml"))
        #expect(try CommandRunner.flowdir(["delete", "real", "--yes"], in: dir.path, environment: env).status == 0)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/real"))
    }

    /// FLOWDIR_CONFIG=/dev/null is no config (every default), as git's
    /// GIT_CONFIG_GLOBAL=/dev/null is; a folder is named as not a file.
    @Test func configAtDevNullOrAFolder() throws {
        let (dir, env) = try setUp()
        var e = env
        e["FLOWDIR_CONFIG"] = "/dev/null"
        #expect(try CommandRunner.flowdir(["ls", "."], in: dir.path, environment: e).status == 0)
        e["FLOWDIR_CONFIG"] = dir.path
        let r = try CommandRunner.flowdir(["ls", "."], in: dir.path, environment: e)
        #expect(r.status == 1 && r.stderr.contains("which is not a regular file"), "\(r.stderr)")
    }
}
